package critpath

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/mpitrace/mpitrace/analysis/internal/textout"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// Segment is a computation hop of the path as a time interval on its
// rank's clock.
type Segment struct {
	Rank       int
	Start, End int64
}

// Segments calls yield for every computation hop of p with a positive
// measured time, in path order, with its interval on its rank's clock.
// It returns the time of the computation hops whose interval it cannot
// place (between two collectives, whose per-rank times the graph does
// not keep): they are not yielded.
func (p *Path) Segments(yield func(Segment) bool) (unplaced float64) {
	g := p.g
	for i := 0; i+1 < p.NumVertices(); i++ {
		e := p.p.Edge(i)
		if e.Kind == taskgraph.Message || e.Weight <= 0 {
			continue
		}
		from, to := p.p.Node(i), p.p.Node(i+1)
		s := Segment{Rank: e.Rank}
		switch {
		case g.Kind(to) == taskgraph.KindOp && g.Rank(to) == e.Rank:
			s.End = g.Node(to).Start
			s.Start = s.End - e.Weight
		case g.Kind(from) == taskgraph.KindOp && g.Rank(from) == e.Rank:
			s.Start = g.Node(from).End
			s.End = s.Start + e.Weight
		case from == taskgraph.Init:
			s.Start, _, _ = g.RankSpan(e.Rank)
			s.End = s.Start + e.Weight
		case to == taskgraph.Finalize:
			_, s.End, _ = g.RankSpan(e.Rank)
			s.Start = s.End - e.Weight
		default:
			unplaced += float64(e.Weight)
			continue
		}
		if !yield(s) {
			break
		}
	}
	return unplaced
}

// LoopSpans are where a trace's instrumented loops ran: the loops
// package's Spans.
type LoopSpans interface {
	// Overlap calls add, for every loop that ran on rank during
	// [start, end), with the time of the interval it covered (each loop
	// counted once however many of its executions, threads or nested
	// copies cover the same instant), and with loop "" for the time
	// covered by any loop.
	Overlap(rank int, start, end int64, add func(loop string, ns int64))
	// Describe says how deep a loop is (the least depth it was seen at)
	// and names its parent ("" for a top-level loop or more than one).
	Describe(loop string) (depth int, parent string)
	// Partial reports whether some loops were recorded only in part
	// (nested loops, seen only under sampled parent iterations).
	Partial() bool
}

// LoopSummary is how much of the path's computation ran inside
// instrumented loops.
type LoopSummary struct {
	// InLoops is the path's computation time inside any loop, and its
	// shares of the path's length and of its computation.
	InLoops          float64 `json:"in_loops_ns"`
	Share            float64 `json:"share"`
	ComputationShare float64 `json:"computation_share"`
	// Unplaced is computation time the analysis could not place in time
	// (between two collectives): counted in no loop.
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

// AttributeLoops intersects the path's computation with the loops' spans.
// Loops are listed by time on the path, most first (then by name).
func AttributeLoops(p *Path, sum *Summary, spans LoopSpans) *LoopSummary {
	ls := &LoopSummary{Partial: spans.Partial(), Loops: []LoopShare{}}
	byLoop := map[string]int64{}
	var any int64
	ls.Unplaced = p.Segments(func(s Segment) bool {
		spans.Overlap(s.Rank, s.Start, s.End, func(loop string, ns int64) {
			if loop == "" {
				any += ns
			} else {
				byLoop[loop] += ns
			}
		})
		return true
	})
	ls.InLoops = float64(any)
	share := func(ns float64) (float64, float64) {
		var a, b float64
		if sum.Length > 0 {
			a = ns / sum.Length
		}
		if sum.Computation > 0 {
			b = ns / sum.Computation
		}
		return a, b
	}
	ls.Share, ls.ComputationShare = share(ls.InLoops)
	for loop, ns := range byLoop {
		x := LoopShare{Loop: loop, Ns: float64(ns)}
		x.Depth, x.Parent = spans.Describe(loop)
		x.Share, x.ComputationShare = share(x.Ns)
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
	fmt.Fprintf(ew, "\nin instrumented loops: %s, %.1f%% of the path (%.1f%% of its computation)\n",
		t(ls.InLoops), 100*ls.Share, 100*ls.ComputationShare)
	if len(ls.Loops) > 0 {
		top := ls.Loops[0]
		for _, x := range ls.Loops { // the outermost of the loops that hold the most
			if x.Ns == top.Ns && x.Depth < top.Depth {
				top = x
			}
		}
		// Then down the nest, while one nested loop holds most of it: the
		// innermost such loop is the code to look at.
		fmt.Fprintf(ew, "%.0f%% of the path is in %s", 100*top.Share, top.Loop)
		for cur := top; ; {
			var in *LoopShare
			for i := range ls.Loops {
				if x := &ls.Loops[i]; x.Parent == cur.Loop && x.Loop != cur.Loop && (in == nil || x.Ns > in.Ns) {
					in = x
				}
			}
			if in == nil || in.Ns < cur.Ns/2 {
				break
			}
			fmt.Fprintf(ew, ", %.0f%% in its nested loop %s", 100*in.Share, in.Loop)
			cur = *in
		}
		fmt.Fprintln(ew)
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "loop\tdepth\ttime\tshare\tof computation\t\n")
		for _, x := range ls.Loops {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%5.1f%%\t%5.1f%%\t\n", x.Loop, x.Depth, t(x.Ns), 100*x.Share, 100*x.ComputationShare)
		}
		tw.Flush()
	}
	if ls.Unplaced > 0 {
		fmt.Fprintf(ew, "(%s of computation between collectives could not be placed in time and counts in no loop)\n", t(ls.Unplaced))
	}
	if ls.Partial {
		fmt.Fprintf(ew, "(nested loops are recorded only inside sampled iterations of their parent: their times are lower bounds)\n")
	}
	return ew.Err
}
