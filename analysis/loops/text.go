package loops

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mpitrace/mpitrace/analysis/stats"
)

// TextOptions select what WriteText prints.
type TextOptions struct {
	// ByRank adds the loop table of every rank.
	ByRank bool
}

// WriteText prints the report as aligned tables: every loop over all
// ranks, the run-wide estimates of nested loops, the counters, and with
// ByRank a table per rank.
func WriteText(w io.Writer, rep *Report, o TextOptions) error {
	s := "s"
	if rep.Ranks == 1 {
		s = ""
	}
	fmt.Fprintf(w, "Loops: %d in %d rank%s", len(rep.Loops), rep.Ranks, s)
	if rep.Chance != "" {
		fmt.Fprintf(w, "; chance %s", rep.Chance)
	}
	if rep.Seed != "" {
		fmt.Fprintf(w, ", seed %s", rep.Seed)
	}
	if len(rep.Counters) > 0 {
		fmt.Fprintf(w, "; counters %s", strings.Join(rep.Counters, ", "))
	} else if len(rep.Loops) > 0 {
		fmt.Fprintf(w, "; no counters (clock only)")
	}
	fmt.Fprintln(w)
	if rep.Skipped > 0 || rep.Open > 0 {
		fmt.Fprintf(w, "Unbalanced loop events: %d skipped, %d executions still open at the end (not counted)\n", rep.Skipped, rep.Open)
	}
	if len(rep.Loops) == 0 {
		_, err := fmt.Fprintln(w, "No instrumented loops: build the program with 'mpitrace cc', or mark loops with recorder/c/mpitrace.h.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	setWidths(rep.Loops)
	fmt.Fprintln(w)
	loopTable(tw, rep.Loops, -1)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "estimated = mean time per sampled iteration × iterations; est/meas near 1 and the measured time")
	fmt.Fprintln(w, "inside the 95% interval say the samples represent the loop.")

	var nested []*Loop
	for _, l := range rep.Loops {
		if l.RunWide != nil {
			nested = append(nested, l)
		}
	}
	if len(nested) > 0 {
		fmt.Fprintln(w, "\nNested loops are recorded only inside sampled iterations of their parent; run-wide estimates")
		fmt.Fprintln(w, "by inverse-probability weighting (each recorded parent iteration stands for 1/inclusion):")
		fmt.Fprintf(tw, "%s\tparent\tinclusion\texecutions\titerations\ttime\t95%% CI\t\n", head(rep.Loops))
		for _, l := range nested {
			r := l.RunWide
			fmt.Fprintf(tw, "%s\t%s\t%.4g\t%.0f\t%.0f\t%s\t%s\t\n", indent(l), *l.Parent, r.Inclusion, r.Executions, r.Iterations,
				stats.Duration(int64(math.Round(r.TimeNs))), ci(r.CI95))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(rep.Counters) > 0 {
		fmt.Fprintln(w, "\nCounters per sampled iteration (mean):")
		fmt.Fprintf(tw, "%s\t%s\t\n", head(rep.Loops), strings.Join(rep.Counters, "\t"))
		for _, l := range rep.Loops {
			fmt.Fprintf(tw, "%s\t", indent(l))
			for i := range rep.Counters {
				v := "-"
				if i < len(l.Counters) {
					v = fmt.Sprintf("%.4g", l.Counters[i].Mean)
				}
				fmt.Fprintf(tw, "%s\t", v)
			}
			fmt.Fprintln(tw)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if o.ByRank {
		ranks := map[int]bool{}
		var order []int
		for _, l := range rep.Loops {
			for _, r := range l.PerRank {
				if !ranks[r.Rank] {
					ranks[r.Rank] = true
					order = append(order, r.Rank)
				}
			}
		}
		slices.Sort(order)
		for _, r := range order {
			fmt.Fprintf(w, "\nRank %d:\n", r)
			loopTable(tw, rep.Loops, r)
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// loopTable writes the main table of the loops, over all ranks (rank < 0)
// or on one rank.
func loopTable(tw *tabwriter.Writer, loops []*Loop, rank int) {
	fmt.Fprintln(tw, head(loops)+"\texecutions\titerations\tsampled\tmean/iter\tp50\tp95\testimated\t95% CI\tmeasured\test/meas\tin CI\t")
	for _, l := range loops {
		f := &l.Figures
		if rank >= 0 {
			f = nil
			for i := range l.PerRank {
				if l.PerRank[i].Rank == rank {
					f = &l.PerRank[i].Figures
				}
			}
			if f == nil {
				continue
			}
		}
		mean, p50, p95, est := "-", "-", "-", "-"
		if f.Time != nil {
			mean, p50, p95 = dur(f.Time.Mean), dur(f.Time.P50), dur(f.Time.P95)
			if f.Iterations > 0 {
				est = dur(f.Estimated)
			}
		}
		quality, in := "-", "-"
		if f.Quality > 0 {
			quality = fmt.Sprintf("%.3f", f.Quality)
		}
		if f.InCI != nil {
			in = map[bool]string{true: "yes", false: "no"}[*f.InCI]
		}
		iters := fmt.Sprint(f.Iterations)
		if f.Uncounted > 0 && f.Uncounted == f.Executions {
			iters = "uncounted"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", indent(l), f.Executions, iters, f.Sampled,
			mean, p50, p95, est, ci(f.CI95), stats.Duration(f.Measured), quality, in)
	}
}

func dur(ns float64) string { return stats.Duration(int64(math.Round(ns))) }

func ci(c *[2]float64) string {
	if c == nil {
		return "-"
	}
	return dur(max(c[0], 0)) + " .. " + dur(c[1])
}

// indent is the loop's location, indented by its depth and padded to the
// width of the longest (the tables align right; this column reads left).
func indent(l *Loop) string {
	s := strings.Repeat("  ", l.Depth) + l.Location
	return s + strings.Repeat(" ", max(l.width-len(s), 0))
}

// setWidths records in every loop the width of the loop column.
func setWidths(loops []*Loop) {
	w := len("loop")
	for _, l := range loops {
		w = max(w, 2*l.Depth+len(l.Location))
	}
	for _, l := range loops {
		l.width = w
	}
}

// head is the loop column's heading.
func head(loops []*Loop) string {
	if len(loops) == 0 {
		return "loop"
	}
	return "loop" + strings.Repeat(" ", max(loops[0].width-len("loop"), 0))
}
