package stats

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// TextOptions select what WriteText prints.
type TextOptions struct {
	// PerRank adds one function table per rank.
	PerRank bool
	// Top limits each function table to this many rows (0: all).
	Top int
}

// WriteText prints the profile as aligned tables: the aggregate over all
// ranks, a per-rank summary, and with PerRank a table per rank.
func WriteText(w io.Writer, p *Profile, o TextOptions) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "Application time (MPI_Init to MPI_Finalize, longest rank): %s; time in MPI: %.1f%% over %d ranks\n\n",
		Duration(p.AppNs), p.MPIPercent(), len(p.Ranks))
	fmt.Fprintf(w, "All ranks:\n")
	funcTable(tw, p.All, o.Top)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(p.InitFinalize) > 0 {
		fmt.Fprintf(w, "\nMPI_Init and MPI_Finalize (MPI start-up and shut-down, with the recorder's clock synchronisation; not in the time in MPI):\n")
		funcTable(tw, p.InitFinalize, 0)
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nPer rank:\n")
	fmt.Fprintln(tw, "rank\tapp time\tMPI time\tMPI %\tcalls\t")
	for _, r := range p.Ranks {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.1f\t%d\t\n", r.Rank, Duration(r.AppNs), Duration(r.MPINs), r.MPIPercent(), r.Calls)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := unfinishedTable(w, tw, p); err != nil {
		return err
	}
	if o.PerRank {
		for _, r := range p.Ranks {
			fmt.Fprintf(w, "\nRank %d:\n", r.Rank)
			funcTable(tw, r.Funcs, o.Top)
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// unfinishedTable lists the calls that never returned, when there are
// some: a run that hung or was stopped says where each rank was.
func unfinishedTable(w io.Writer, tw *tabwriter.Writer, p *Profile) error {
	n := 0
	for _, r := range p.Ranks {
		n += len(r.Unfinished)
	}
	if n == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nUnfinished calls: the run did not end normally; these calls began and never returned (the rank hung in them,\nor was stopped). Their time counts in the rank's app and MPI time, not in the function tables:\n")
	fmt.Fprintln(tw, "rank\tthread\tfunction\tbegan at\twaited at least\t")
	for _, r := range p.Ranks {
		for _, u := range r.Unfinished {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t\n", u.Rank, u.Thread, u.Name, Duration(u.StartNs), Duration(u.WaitedNs))
		}
	}
	return tw.Flush()
}

func funcTable(tw *tabwriter.Writer, fs []*Func, top int) {
	fmt.Fprintln(tw, "function\tcalls\ttotal\tmean\tmin\tmax\tsent\treceived\t")
	for i, f := range fs {
		if top > 0 && i == top {
			fmt.Fprintf(tw, "(%d more)\t\t\t\t\t\t\t\t\n", len(fs)-top)
			break
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", f.Name, f.Calls, Duration(f.TotalNs),
			Duration(int64(f.MeanNs()+0.5)), Duration(f.MinNs), Duration(f.MaxNs), Bytes(f.Sent), Bytes(f.Received))
	}
}

// Ranks formats sorted ranks with runs of consecutive ones as ranges,
// separated by sep: "0-3,5" (sep ",").
func Ranks(ranks []int, sep string) string {
	var b strings.Builder
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(sep)
		}
		fmt.Fprint(&b, ranks[i])
		if j > i {
			fmt.Fprintf(&b, "-%d", ranks[j])
		}
		i = j + 1
	}
	return b.String()
}

// Duration formats nanoseconds with a unit chosen for readability.
func Duration(ns int64) string {
	switch a := abs(ns); {
	case a >= 10_000_000_000:
		return fmt.Sprintf("%.1f s", float64(ns)/1e9)
	case a >= 1_000_000_000:
		return fmt.Sprintf("%.3f s", float64(ns)/1e9)
	case a >= 1_000_000:
		return fmt.Sprintf("%.3f ms", float64(ns)/1e6)
	case a >= 1_000:
		return fmt.Sprintf("%.3f us", float64(ns)/1e3)
	}
	return fmt.Sprintf("%d ns", ns)
}

// Bytes formats a byte count; 0 prints as "-".
func Bytes(n uint64) string {
	switch {
	case n == 0:
		return "-"
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return strings.TrimSpace(fmt.Sprintf("%d B", n))
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
