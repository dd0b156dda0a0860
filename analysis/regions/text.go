package regions

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/mpitrace/mpitrace/analysis/internal/textout"
	"github.com/mpitrace/mpitrace/analysis/stats"
)

// TextOptions select what WriteText prints.
type TextOptions struct {
	// ByRank adds the tree's figures on every rank.
	ByRank bool
}

// NoRegions is what WriteText says of a trace without region events.
const NoRegions = "No regions, kernels or allocations recorded: record a Kokkos program with 'mpitrace record --kokkos', or mark regions with mpitrace_region_push/mpitrace_region_pop (recorder/c/mpitrace.h)."

// WriteText prints the report: a headline, the tree of nodes with their
// figures over all ranks, the memory spaces, the metadata, profile events,
// DualViews, and with ByRank the tree on every rank.
func WriteText(w io.Writer, rep *Report, o TextOptions) error {
	ew := &textout.ErrWriter{W: w}
	kinds := map[string]int{}
	total := 0
	rep.Walk(func(n *Node) { kinds[n.Kind]++; total++ })
	fmt.Fprintf(ew, "Regions and kernels: %d in %d rank%s", total, rep.Ranks, plural(rep.Ranks))
	var parts []string
	for _, k := range []string{KindRegion, KindFor, KindReduce, KindScan, KindFence, KindKernel, KindCopy, KindSection} {
		if kinds[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", kinds[k], kindPlural(k, kinds[k])))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(ew, " (%s)", strings.Join(parts, ", "))
	}
	if len(rep.Devices) > 0 {
		var ds []string
		for _, d := range rep.Devices {
			ds = append(ds, fmt.Sprintf("%s %d", d.Name, d.Count))
		}
		fmt.Fprintf(ew, "; kernels by device: %s", strings.Join(ds, ", "))
	}
	fmt.Fprintln(ew)
	if c := rep.Counts; c != (Counts{}) {
		fmt.Fprintf(ew, "Unbalanced region events: %d ends made by the recorder (unwound), %d pops without a region, %d ends with nothing open (skipped), %d closed by an outer end, %d still open at their thread's end (closed there)\n",
			c.Unwound, c.Unmatched, c.Skipped, c.Crossed, c.Unclosed)
	}
	if rep.Empty() {
		fmt.Fprintln(ew, NoRegions)
		return ew.Err
	}
	path := rep.CriticalPath != nil && rep.CriticalPath.Computed
	switch {
	case path:
		fmt.Fprintln(ew, "* the critical path's computation runs inside the node (mpitrace critpath says how much)")
	case rep.CriticalPath != nil && rep.CriticalPath.Note != "":
		fmt.Fprintf(ew, "No critical path: %s\n", rep.CriticalPath.Note)
	}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(rep.Nodes) > 0 {
		width := setWidths(rep)
		fmt.Fprintln(ew)
		nodeTable(tw, rep, width, path, -1)
		tw.Flush()
		fmt.Fprintln(ew, "total: inclusive time summed over ranks; mean, min, max: of the ranks' totals over all ranks (0 for a rank")
		fmt.Fprintln(ew, "that did not run it); imbalance = max / mean; self: total less the nested nodes'; MPI: MPI calls inside.")
	}
	if len(rep.Memory) > 0 {
		fmt.Fprintln(ew, "\nMemory (high water: the most bytes live at once on a rank, allocations less deallocations):")
		col := leftColumn("space", len(rep.Memory), func(i int) string { return shown(rep.Memory[i].Space) })
		fmt.Fprintf(tw, "  %s\tallocations\tfrees\tallocated\tmax high water\tmax rank\tmean high water\t\n", col("space"))
		for _, s := range rep.Memory {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%s\t%d\t%s\t\n", col(shown(s.Space)), s.Allocations, s.Frees, stats.Bytes(s.Allocated),
				byteCount(float64(s.HighWaterMax)), s.MaxRank, byteCount(s.HighWaterMean))
		}
		tw.Flush()
	}
	if len(rep.Meta) > 0 {
		fmt.Fprintln(ew, "\nMetadata:")
		for _, mk := range rep.Meta {
			for _, v := range mk.Values {
				fmt.Fprintf(ew, "  %s = %s", shown(mk.Key), shown(v.Value))
				if len(mk.Values) > 1 || len(v.ranks) != rep.Ranks {
					fmt.Fprintf(ew, " (ranks %s)", v.Ranks)
				}
				fmt.Fprintln(ew)
			}
		}
	}
	if len(rep.Marks) > 0 {
		fmt.Fprintln(ew, "\nProfile events:")
		col := leftColumn("", len(rep.Marks), func(i int) string { return shown(rep.Marks[i].Name) })
		for _, m := range rep.Marks {
			fmt.Fprintf(tw, "  %s\t%d\t\n", col(shown(m.Name)), m.Count)
		}
		tw.Flush()
	}
	if len(rep.DualViews) > 0 {
		fmt.Fprintln(ew, "\nDual views:")
		col := leftColumn("view", len(rep.DualViews), func(i int) string { return shown(rep.DualViews[i].Name) })
		fmt.Fprintf(tw, "  %s\tsync host\tsync device\tmodify host\tmodify device\t\n", col("view"))
		for _, d := range rep.DualViews {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t\n", col(shown(d.Name)), d.SyncHost, d.SyncDevice, d.ModifyHost, d.ModifyDevice)
		}
		tw.Flush()
	}
	if o.ByRank && len(rep.Nodes) > 0 {
		width := setWidths(rep)
		for _, r := range ranksOf(rep) {
			fmt.Fprintf(ew, "\nRank %d:\n", r)
			nodeTable(tw, rep, width, false, r)
			tw.Flush()
		}
	}
	return ew.Err
}

// nodeTable writes the tree over all ranks (rank < 0) or on one rank.
func nodeTable(tw *tabwriter.Writer, rep *Report, width int, path bool, rank int) {
	mark := func(n *Node) string {
		if path && n.OnCriticalPath {
			return "*"
		}
		return ""
	}
	if rank < 0 {
		fmt.Fprintf(tw, "\t%s\tkind\tcalls\ttotal\tmean/rank\tmin/rank\tmax/rank\tmax rank\timbalance\tself\tMPI\t\n", pad("node", width))
		rep.Walk(func(n *Node) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%.2f\t%s\t%s\t\n", mark(n), pad(indent(n), width), n.Kind, n.Calls,
				stats.Duration(n.TotalNs), dur(n.MeanNs), stats.Duration(n.MinNs), stats.Duration(n.MaxNs), n.MaxRank, n.Imbalance,
				stats.Duration(n.SelfNs), stats.Duration(n.MPINs))
		})
		return
	}
	fmt.Fprintf(tw, "\t%s\tkind\tcalls\ttotal\tself\tMPI\t\n", pad("node", width))
	rep.Walk(func(n *Node) {
		for _, x := range n.PerRank {
			if x.Rank == rank {
				fmt.Fprintf(tw, "\t%s\t%s\t%d\t%s\t%s\t%s\t\n", pad(indent(n), width), n.Kind, x.Calls,
					stats.Duration(x.TotalNs), stats.Duration(x.SelfNs), stats.Duration(x.MPINs))
			}
		}
	})
}

// ranksOf returns the ranks that ran some node, in order.
func ranksOf(rep *Report) []int {
	seen := map[int]bool{}
	var ranks []int
	rep.Walk(func(n *Node) {
		for _, x := range n.PerRank {
			if !seen[x.Rank] {
				seen[x.Rank] = true
				ranks = append(ranks, x.Rank)
			}
		}
	})
	slices.Sort(ranks)
	return ranks
}

func indent(n *Node) string { return strings.Repeat("  ", n.Depth) + shown(n.Name) }

// maxShown is the most characters of a name the tables print.
const maxShown = 80

// shown is a name as the tables print it: a control character escaped (a
// newline would split the row), and a name longer than maxShown characters
// cut with "…" (--json has every name whole).
func shown(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0 {
		q := strconv.Quote(s)
		s = q[1 : len(q)-1]
	}
	if utf8.RuneCountInString(s) > maxShown {
		s = string([]rune(s)[:maxShown-1]) + "…"
	}
	return s
}

// pad pads s to width characters (the table aligns right; the node column
// reads left).
func pad(s string, width int) string {
	return s + strings.Repeat(" ", max(width-utf8.RuneCountInString(s), 0))
}

// leftColumn returns a function padding a cell to the width of the
// widest of head and the n cells cell(i) (the tables align right; a
// column of names reads left).
func leftColumn(head string, n int, cell func(i int) string) func(string) string {
	w := utf8.RuneCountInString(head)
	for i := range n {
		w = max(w, utf8.RuneCountInString(cell(i)))
	}
	return func(s string) string { return pad(s, w) }
}

// setWidths returns the width of the node column.
func setWidths(rep *Report) int {
	w := len("node")
	rep.Walk(func(n *Node) { w = max(w, utf8.RuneCountInString(indent(n))) })
	return w
}

func dur(ns float64) string { return stats.Duration(int64(math.Round(ns))) }

func byteCount(n float64) string {
	if n <= 0 {
		return "-"
	}
	return stats.Bytes(uint64(math.Round(n)))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// kindPlural names n nodes of a kind in the headline: "3 regions",
// "2 parallel_for", "1 deep copy".
func kindPlural(kind string, n int) string {
	switch kind {
	case KindFor, KindReduce, KindScan:
		return "parallel_" + kind
	case KindCopy:
		if n == 1 {
			return "deep copy"
		}
		return "deep copies"
	}
	if n == 1 {
		return kind
	}
	return kind + "s"
}
