// Package fold finds repetition in a sequence: the loops of an iterative
// program seen as the steps of its critical path. Find turns a sequence of
// symbols (small integers, one per step, equal for steps with equal
// signatures) into a tree of runs: a run is a body of steps repeated Count
// times back to back, its body itself folded, so that a path of n
// iterations of a k-step body, with any prologue and epilogue, becomes a
// handful of nodes. critpath folds the critical path with it (its summary's
// "the path is 200 iterations of a 6-step body" line and the folded DOT).
//
// # The algorithm
//
// Greedy tandem-repeat compression, from left to right. At position i the
// candidate periods are the distances from i to the next occurrences of the
// symbol at i (at most MaxCandidates of them, and at most half of what is
// left). For each candidate p the stretch from i is compared step by step
// with the stretch p steps on, up to the first difference: if they agree
// over at least p steps the body seq[i:i+p] repeats, as many times as the
// agreement covers. The candidate covering the most steps wins (on a tie
// the shortest body). A run of count ≥ 2 becomes a Node whose body, the
// first repetition, is folded the same way (nested loops); otherwise the
// step at i is a leaf (joining the leaves just before it in one Node) and
// the scan moves on by one.
//
// A candidate that is a multiple kq of a shorter one q found to repeat is
// not compared again: where the stretch has period q it has period kq, and
// its agreement ends exactly (k-1)q steps before q's. So on a path of
// iterations the steps of the run are compared once, not once per
// candidate, and most other candidates differ within a few steps: the time
// is close to linear for iterative programs (the scan jumps over whole
// runs), and at most MaxCandidates comparisons per position tried
// otherwise.
//
// The fold holds nothing per step but the sequence itself: the caller's
// slice, or what a Source gave, kept in 1, 2 or 4 bytes a step as the
// largest symbol needs. The next occurrences are found by scanning the
// sequence; the last occurrence of each symbol (a table of the slice's
// symbols, or the Source's Last) stops a scan for a symbol that does not
// occur again. A Source is read as the fold needs it, in stretches that
// double what is known, so that a fold given up early (FindWithin) reads
// little more than what it folded. The result depends only on which
// symbols are equal.
package fold

import (
	"bytes"
	"math"
)

// MaxCandidates bounds the periods tried at one position: a body in which
// the step at its start occurs more often than this is not found from that
// position (it may be from a later one, as a rotated body).
const MaxCandidates = 64

// Node is a stretch of the sequence: leaves (Period steps that do not
// repeat, each drawn on its own; Count 1, no Body) or a run, Body repeated
// Count ≥ 2 times. A run covers [Start, Start+Period*Count); its Body
// folds the first repetition, [Start, Start+Period). Consecutive leaves
// are one Node, so that a sequence without repetition costs one Node.
type Node struct {
	Start  int
	Period int // steps in one repetition (1 for a leaf)
	Count  int
	Body   []Node
}

// Len returns the number of steps the node covers.
func (n *Node) Len() int { return n.Period * n.Count }

// End returns the position after the node's last step.
func (n *Node) End() int { return n.Start + n.Len() }

// IsRun reports whether the node is a run (not a single step).
func (n *Node) IsRun() bool { return n.Body != nil }

// Leaves returns the number of leaves in nodes and their bodies: the
// vertices of a picture that draws each body once.
func Leaves(nodes []Node) int {
	k := 0
	for i := range nodes {
		if nodes[i].IsRun() {
			k += Leaves(nodes[i].Body)
		} else {
			k += nodes[i].Period
		}
	}
	return k
}

// Symbol is the type of a sequence's steps: the fold compares them only
// for equality, so a caller whose symbols are few keeps them small.
type Symbol interface {
	~uint8 | ~uint16 | ~uint32
}

// firstChunk is the length of a Source's first stretch read; each later
// one doubles what is known (a variable for the tests).
var firstChunk = 1 << 12

// fillChunk is the most symbols asked of a Source at once: they are
// copied from there into the sequence kept, in its width.
const fillChunk = 1 << 14

// lastTable is the length from which the fold of a slice tables each
// symbol's last position (one pass over it) rather than scanning on to
// half of what is left for a symbol that does not occur again.
const lastTable = 1 << 16

// Find folds seq (see the package documentation). The nodes returned cover
// seq from 0 to len(seq) in order.
func Find(seq []uint32) []Node {
	nodes, _ := FindWithin(seq, -1)
	return nodes
}

// FindWithin is Find giving up, with false, as soon as the fold would draw
// more than limit leaves (Leaves of the result): a caller that only wants
// a fold of at most limit leaves need not finish folding a sequence that
// does not repeat. A negative limit is no limit.
func FindWithin(seq []uint32, limit int) ([]Node, bool) {
	var fd Finder
	return fd.FindWithin(seq, limit)
}

// A Finder folds sequences one after another, reusing its buffers (a
// Source's sequence, 1 to 4 bytes a step read): a caller that folds one
// path in several ways allocates them once.
type Finder struct {
	buf8  []uint8
	buf16 []uint16
	buf32 []uint32
	chunk []uint32
	last  []int32 // a slice's table of last positions (lastTable)
}

// A Source gives a sequence to fold as the fold reads it: a fold given up
// early reads only the start of it (see FindWithin), so a caller whose
// symbols cost something to compute computes only those.
type Source interface {
	// Len returns the sequence's length.
	Len() int
	// Fill writes the symbols from position from on into dst. The fold
	// asks for the sequence in order: from 0, each call from where the
	// last ended.
	Fill(dst []uint32, from int)
	// Last returns a position after which symbol sym (already filled)
	// does not occur; Len()-1 when not known. The fold uses it to stop
	// reading when a symbol no longer occurs.
	Last(sym uint32) int
}

// FindWithin is the package's FindWithin.
func (fd *Finder) FindWithin(seq []uint32, limit int) ([]Node, bool) {
	return FindSlice(fd, seq, limit)
}

// FindSlice is fd.FindWithin on a sequence of any Symbol type, folded in
// place.
func FindSlice[T Symbol](fd *Finder, seq []T, limit int) ([]Node, bool) {
	if len(seq) == 0 {
		return nil, true
	}
	f := &finder[T]{limit: limit, n: len(seq), seq: seq, c: len(seq)}
	f.init()
	if len(seq) >= lastTable {
		f.last = lastPositions(fd, seq)
	}
	nodes := f.fold(0, len(seq))
	if f.over() {
		return nil, false
	}
	return nodes, true
}

// lastPositions returns, for a sequence of uint8 or uint16, each symbol's
// last position (-1 for none), nil for wider symbols.
func lastPositions[T Symbol](fd *Finder, seq []T) []int32 {
	var k int
	switch any(seq).(type) {
	case []uint8:
		k = 1 << 8
	case []uint16:
		k = 1 << 16
	default:
		return nil
	}
	last := grow(fd.last, k)
	fd.last = last
	for i := range last {
		last[i] = -1
	}
	for i, s := range seq {
		last[s] = int32(i)
	}
	return last
}

// FindSource is FindWithin on the sequence src gives, read as far as the
// fold needs: all of it when it does not give up.
func (fd *Finder) FindSource(src Source, limit int) ([]Node, bool) {
	n := src.Len()
	if n == 0 {
		return nil, true
	}
	if len(fd.chunk) < fillChunk {
		fd.chunk = make([]uint32, fillChunk)
	}
	// The symbols are kept in a byte each until one needs more; the fold
	// then starts again over what was read, in the width needed.
	nodes, ok, more := findSource(fd, src, n, fd.buf8[:0], limit, &fd.buf8)
	if more == nil {
		return nodes, ok
	}
	if maxOf(more.rest) <= math.MaxUint16 {
		seq := widen(fd.buf16[:0], fd.buf8[:more.c], more.rest)
		if nodes, ok, more = findSource(fd, src, n, seq, limit, &fd.buf16); more == nil {
			return nodes, ok
		}
		fd.buf32 = widen(fd.buf32[:0], fd.buf16[:more.c], more.rest)
	} else {
		fd.buf32 = widen(fd.buf32[:0], fd.buf8[:more.c], more.rest)
	}
	nodes, ok, _ = findSource(fd, src, n, fd.buf32, limit, &fd.buf32)
	return nodes, ok
}

// widening is what stops the fold of a Source when a symbol is too wide
// for the sequence kept: the c symbols read before the stretch that has
// it, and that stretch.
type widening struct {
	c    int
	rest []uint32
}

// findSource folds src's sequence kept as []T, starting from the symbols
// seq already read; buf receives the sequence kept, for reuse. A symbol
// too wide for T stops it with what it read (widening).
func findSource[T Symbol](fd *Finder, src Source, n int, seq []T, limit int, buf *[]T) (nodes []Node, ok bool, more *widening) {
	f := &finder[T]{limit: limit, n: n, seq: seq, c: len(seq), src: src, chunk: fd.chunk}
	f.init()
	defer func() {
		*buf = f.seq[:0]
		if r := recover(); r != nil {
			w, isW := r.(*widening)
			if !isW {
				panic(r)
			}
			nodes, ok, more = nil, false, w
		}
	}()
	nodes = f.fold(0, n)
	if f.over() {
		return nil, false, nil
	}
	f.ensure(n) // a Source is read to its end (the fold covers it)
	return nodes, true, nil
}

// widen returns dst holding seq then rest, each symbol in dst's type.
func widen[T, U Symbol](dst []U, seq []T, rest []uint32) []U {
	for _, s := range seq {
		dst = append(dst, U(s))
	}
	for _, s := range rest {
		dst = append(dst, U(s))
	}
	return dst
}

func maxOf(s []uint32) uint32 {
	var m uint32
	for _, x := range s {
		m = max(m, x)
	}
	return m
}

// grow returns s with length n, reusing its array when it is large enough;
// the caller overwrites every element.
func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

type finder[T Symbol] struct {
	// leaves counts the leaves of the nodes made so far (Leaves of the
	// result); past limit (when not negative) the search gives up.
	leaves, limit int
	n             int // the sequence's length
	seq           []T // the sequence, known up to c
	// c is the length of the prefix of seq known: a Source's is read as
	// the fold goes (ensure), so that a fold given up early does not read
	// the rest.
	c     int
	src   Source   // fills seq beyond c; nil when the caller gave all of seq
	chunk []uint32 // what src fills, before it is copied into seq
	last  []int32  // each symbol's last position, for a slice; nil if not tabled
	// index is bytes.IndexByte when T is uint8, nil otherwise.
	index func([]T, T) int
}

// init sets what depends on T alone.
func (f *finder[T]) init() {
	f.index, _ = any(bytes.IndexByte).(func([]T, T) int)
}

// over reports whether the fold drew more leaves than its limit.
func (f *finder[T]) over() bool { return f.limit >= 0 && f.leaves > f.limit }

// ensure makes the first x symbols known: at least twice what was, so
// that the stretches are few.
func (f *finder[T]) ensure(x int) {
	if x <= f.c {
		return
	}
	to := min(f.n, max(x, 2*f.c, firstChunk))
	if cap(f.seq) < to {
		s := make([]T, f.c, min(f.n, max(to, 2*cap(f.seq))))
		copy(s, f.seq)
		f.seq = s
	}
	top := uint32(^T(0))
	for f.c < to {
		k := min(to-f.c, len(f.chunk))
		ch := f.chunk[:k]
		f.src.Fill(ch, f.c)
		for _, s := range ch {
			if s > top {
				panic(&widening{c: f.c, rest: append([]uint32(nil), ch...)})
			}
		}
		for _, s := range ch {
			f.seq = append(f.seq, T(s))
		}
		f.c += k
	}
}

// lastOf returns a position after which the symbol at i does not occur.
func (f *finder[T]) lastOf(i int) int {
	if f.src != nil {
		return f.src.Last(uint32(f.seq[i]))
	}
	if f.last != nil {
		return int(f.last[f.seq[i]])
	}
	return f.n - 1
}

// next returns the next position after j, up to to, of the symbol at i,
// reading what it scans; -1 when there is none.
func (f *finder[T]) next(i, j, to int) int {
	s := f.seq[i]
	for j++; j <= to; {
		if j >= f.c {
			f.ensure(j + 1)
		}
		end := min(to+1, f.c)
		if f.index != nil {
			if k := f.index(f.seq[j:end], s); k >= 0 {
				return j + k
			}
			j = end
			continue
		}
		for ; j < end; j++ {
			if f.seq[j] == s {
				return j
			}
		}
	}
	return -1
}

// agree returns the length of the agreement of the stretches from a and
// from b (a < b), up to most: the first d at which seq[a+d] != seq[b+d],
// or most.
func (f *finder[T]) agree(a, b, most int) int {
	d := 0
	for d < most {
		if b+d >= f.c {
			f.ensure(b + d + 1)
		}
		end := min(most, f.c-b)
		x, y := f.seq[a:a+end], f.seq[b:b+end]
		for ; d < end; d++ {
			if x[d] != y[d] {
				return d
			}
		}
	}
	return most
}

func (f *finder[T]) fold(lo, hi int) []Node {
	var out []Node
	for i := lo; i < hi; {
		if i >= f.c {
			f.ensure(i + 1)
		}
		bestP, bestM := 0, 1
		// The candidates are the occurrences of seq[i] up to half of
		// what is left, and before the symbol's last.
		to := min(i+(hi-i)/2, f.lastOf(i))
		// q is the shortest candidate that repeats, seq agreeing with
		// itself q steps on over aq steps from i, up to the end of the
		// stretch when qEnd.
		q, aq, qEnd := 0, 0, false
		for j, tries := i, 0; tries < MaxCandidates; tries++ {
			if j = f.next(i, j, to); j < 0 {
				break
			}
			p := j - i
			most := hi - j // the agreement from i with i+p stays within hi
			var a int
			switch {
			case q > 0 && p%q == 0 && aq >= p-q:
				// Period q over [i, i+q+aq): period p up to p-q steps
				// before q's agreement ends, and not one step more.
				if qEnd {
					a = most
				} else {
					a = aq - (p - q)
				}
			default:
				a = f.agree(i, j, most)
			}
			if a < p {
				continue // seq[i:i+p] != seq[j:j+p]
			}
			if q == 0 {
				q, aq, qEnd = p, a, a == most
			}
			// The body repeats m times from i: (m-1)p steps agree.
			if m := 1 + a/p; m*p > bestM*bestP {
				bestP, bestM = p, m
			}
		}
		if bestM < 2 {
			if k := len(out) - 1; k >= 0 && !out[k].IsRun() {
				out[k].Period++
			} else {
				out = append(out, Node{Start: i, Period: 1, Count: 1})
			}
			if f.leaves++; f.over() {
				return nil
			}
			i++
			continue
		}
		body := f.fold(i, i+bestP)
		if f.over() {
			return nil
		}
		out = append(out, Node{Start: i, Period: bestP, Count: bestM, Body: body})
		i += bestP * bestM
	}
	return out
}
