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

// Spans are where some things ran on each rank's clock, by key: the
// loops package's Spans (a key is a loop), the regions package's (a key
// is a region, kernel, deep copy or section in its calling context).
type Spans interface {
	// Overlap calls add, for every key that ran on rank during
	// [start, end), with the time of the interval it covered (each key
	// counted once however many of its executions, threads or nested
	// copies cover the same instant), and with key "" for the time
	// covered by any key.
	Overlap(rank int, start, end int64, add func(key string, ns int64))
	// Describe says how deep a key is (the least depth it was seen at)
	// and names its parent ("" at the top, or for more than one).
	Describe(key string) (depth int, parent string)
	// Partial reports whether some keys were recorded only in part
	// (nested loops, seen only under sampled parent iterations).
	Partial() bool
}

// attribution is the path's computation inside the spans of some keys.
type attribution struct {
	in       int64            // inside any key
	byKey    map[string]int64 // inside each key (inclusive of the keys nested in it)
	unplaced float64          // computation that could not be placed in time
}

// attribute intersects the path's computation with spans.
func attribute(p *Path, spans Spans) attribution {
	a := attribution{byKey: map[string]int64{}}
	a.unplaced = p.Segments(func(s Segment) bool {
		spans.Overlap(s.Rank, s.Start, s.End, func(key string, ns int64) {
			if key == "" {
				a.in += ns
			} else {
				a.byKey[key] += ns
			}
		})
		return true
	})
	return a
}

// shares are ns as fractions of the path's length and of its computation.
func (sum *Summary) shares(ns float64) (share, computation float64) {
	if sum.Length > 0 {
		share = ns / sum.Length
	}
	if sum.Computation > 0 {
		computation = ns / sum.Computation
	}
	return share, computation
}

// headline picks, of n items (most time first), the one that holds the
// most of the path, the outermost of equals, then goes down its nest
// while one nested item holds at least half of its parent's time: the
// innermost such item is the code to look at. item describes item i.
func headline(n int, item func(i int) (key, parent string, depth int, ns float64)) []int {
	if n == 0 {
		return nil
	}
	top := 0
	_, _, topDepth, topNs := item(0)
	for i := 1; i < n; i++ {
		if _, _, d, ns := item(i); ns == topNs && d < topDepth {
			top, topDepth = i, d
		}
	}
	chain := []int{top}
	for cur := top; ; {
		curKey, _, _, curNs := item(cur)
		in, inNs := -1, 0.0
		for i := range n {
			if key, parent, _, ns := item(i); parent == curKey && key != curKey && (in < 0 || ns > inNs) {
				in, inNs = i, ns
			}
		}
		if in < 0 || inNs < curNs/2 {
			return chain
		}
		chain = append(chain, in)
		cur = in
	}
}

// writeInLine writes the first line of an attribution: the path's time
// inside what.
func writeInLine(w io.Writer, what string, ns, share, computation float64, t func(float64) string) {
	fmt.Fprintf(w, "\nin %s: %s, %.1f%% of the path (%.1f%% of its computation)\n", what, t(ns), 100*share, 100*computation)
}

// writeUnplaced says what computation counts in nothing.
func writeUnplaced(w io.Writer, unplaced float64, what string, t func(float64) string) {
	if unplaced > 0 {
		fmt.Fprintf(w, "(%s of computation between collectives could not be placed in time and counts in no %s)\n", t(unplaced), what)
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
func AttributeLoops(p *Path, sum *Summary, spans Spans) *LoopSummary {
	a := attribute(p, spans)
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
