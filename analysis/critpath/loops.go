package critpath

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/mpitrace/mpitrace/analysis/internal/textout"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// Segment is a computation hop of the path as a time interval on its
// rank's clock.
type Segment struct {
	Rank       int
	Start, End int64
}

// segmentVisitor returns a pass over a path's steps that calls yield for
// every computation hop with a positive measured time, in path order, with
// its interval on its rank's clock: it ends where the call it leads into
// starts on that rank (reconstruct.ReplayEdge.End). It adds to *unplaced
// the time of the computation hops whose interval it cannot place: they
// are not yielded.
func segmentVisitor(yield func(Segment), unplaced *float64) (visit func(*reconstruct.ReplayStep)) {
	first := true
	return func(st *reconstruct.ReplayStep) {
		if first {
			first = false
			return
		}
		e := &st.In
		switch {
		case e.Kind == taskgraph.Message || e.Weight <= 0:
		case e.End == 0:
			*unplaced += float64(e.Weight)
		default:
			yield(Segment{Rank: e.Rank, Start: e.End - e.Weight, End: e.End})
		}
	}
}

// LoopSummary is how much of the path's computation ran inside
// instrumented loops.
type LoopSummary struct {
	// InLoops is the path's computation time inside any loop, and its
	// shares of the path's length and of its computation.
	InLoops          float64 `json:"in_loops_ns"`
	Share            float64 `json:"share"`
	ComputationShare float64 `json:"computation_share"`
	// Unplaced is computation time the analysis could not place in time:
	// counted in no loop.
	Unplaced float64 `json:"unplaced_ns,omitempty"`
	// Partial: nested loops are recorded only inside sampled iterations
	// of their parent, so their figures are lower bounds.
	Partial bool        `json:"nested_partial"`
	Loops   []LoopShare `json:"loops"`
}

// LoopShare is the path's computation inside one loop (inclusive of the
// loops nested in it).
type LoopShare struct {
	Loop             string  `json:"loop"` // file:line:col
	Depth            int     `json:"depth"`
	Parent           string  `json:"parent,omitempty"`
	Ns               float64 `json:"ns"`
	Share            float64 `json:"share"`             // of the path's length
	ComputationShare float64 `json:"computation_share"` // of its computation
}

// loops is the path's computation inside the loops (ReportOptions.Loops)
// of an attribution, the loops by time on the path, most first (then by
// name).
func (a *attribution) loops(sum *Summary, spans Spans) *LoopSummary {
	ls := &LoopSummary{Partial: spans.Partial(), Loops: []LoopShare{}, InLoops: float64(a.in), Unplaced: a.unplaced}
	ls.Share, ls.ComputationShare = sum.shares(ls.InLoops)
	for loop, ns := range a.byKey {
		x := LoopShare{Loop: loop, Ns: float64(ns)}
		x.Depth, x.Parent = spans.Describe(loop)
		x.Share, x.ComputationShare = sum.shares(x.Ns)
		ls.Loops = append(ls.Loops, x)
	}
	slices.SortFunc(ls.Loops, func(a, b LoopShare) int {
		return cmp.Or(cmp.Compare(b.Ns, a.Ns), cmp.Compare(a.Loop, b.Loop))
	})
	return ls
}

// WriteText writes the loop summary: a headline naming the loop that
// holds most of the path, then one line per loop.
func (ls *LoopSummary) WriteText(w io.Writer, unit Unit) error {
	t := func(ns float64) string { return fmt.Sprintf("%.3f %s", ns/float64(unit), unit) }
	ew := &textout.ErrWriter{W: w}
	writeInLine(ew, "instrumented loops", ls.InLoops, ls.Share, ls.ComputationShare, t)
	if len(ls.Loops) > 0 {
		chain := headline(len(ls.Loops), func(i int) (string, string, int, float64) {
			x := &ls.Loops[i]
			return x.Loop, x.Parent, x.Depth, x.Ns
		})
		for i, c := range chain {
			x := &ls.Loops[c]
			if i == 0 {
				fmt.Fprintf(ew, "%.0f%% of the path is in %s", 100*x.Share, x.Loop)
			} else {
				fmt.Fprintf(ew, ", %.0f%% in its nested loop %s", 100*x.Share, x.Loop)
			}
		}
		fmt.Fprintln(ew)
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "loop\tdepth\ttime\tshare\tof computation\t\n")
		for _, x := range ls.Loops {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%5.1f%%\t%5.1f%%\t\n", x.Loop, x.Depth, t(x.Ns), 100*x.Share, 100*x.ComputationShare)
		}
		tw.Flush()
	}
	writeUnplaced(ew, ls.Unplaced, "loop", t)
	if ls.Partial {
		fmt.Fprintf(ew, "(nested loops are recorded only inside sampled iterations of their parent: their times are lower bounds)\n")
	}
	return ew.Err
}
