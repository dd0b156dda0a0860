package critpath

import (
	"fmt"
	"io"

	"github.com/mpitrace/mpitrace/reconstruct"
)

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

// newAttribution returns a pass over a path's steps (visit sees each in
// order) that intersects its computation with spans.
func newAttribution(spans Spans) (*attribution, func(*reconstruct.ReplayStep)) {
	a := &attribution{byKey: map[string]int64{}}
	return a, segmentVisitor(func(s Segment) {
		spans.Overlap(s.Rank, s.Start, s.End, func(key string, ns int64) {
			if key == "" {
				a.in += ns
			} else {
				a.byKey[key] += ns
			}
		})
	}, &a.unplaced)
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
