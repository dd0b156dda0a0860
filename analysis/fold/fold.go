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
// left). For each candidate p, a polynomial hash of every prefix (modulo
// 2^64) compares seq[i:i+p] with seq[i+p:i+2p] in O(1), and a
// galloping then binary search finds in O(log n) how many times the body
// repeats from i. The candidate covering the most steps wins (on a tie the
// shortest body); its repeat count is then checked step by step, so a hash
// collision never folds unequal steps. A run of count ≥ 2 becomes a Node
// whose body, the first repetition, is folded the same way (nested loops);
// otherwise the step at i is a leaf (joining the leaves just before it in
// one Node) and the scan moves on by one.
//
// Every step is compared directly at most once per nesting level, and each
// position tried costs at most MaxCandidates hash comparisons and a binary
// search, so the time is O(n · MaxCandidates · log n) in the worst case and
// close to linear for iterative programs (the scan jumps over whole runs).
// Stretches of up to 8 steps are compared symbol by symbol (most
// candidates differ within a few steps), longer ones by their hashes.
//
// The links and hashes are made as the scan needs them, in stretches that
// double what is known: a fold given up early (FindWithin) makes them for
// little more than what it read, and a Source makes the sequence itself
// only as far (its Last tells when a symbol no longer occurs, which would
// otherwise take reading on to half of what is left).
//
// Memory: 4 bytes per step for the next-occurrence links and 8 for the
// prefix hashes, 4 for the symbols a Source gave, and 128 KiB of powers of
// the hash's base, besides the caller's sequence and the nodes returned.
// The result depends only on the sequence.
package fold

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

// base of the polynomial hash, modulo 2^64: an odd constant, fixed so that
// the result is deterministic. Hashes modulo 2^64 collide on some
// sequences (Thue-Morse ones): a collision only costs a candidate, since
// the chosen run is checked step by step.
const base = 0x9E3779B97F4A7C15

type finder struct {
	// leaves counts the leaves of the nodes made so far (Leaves of the
	// result); past limit (when not negative) the search gives up.
	leaves, limit int
	n             int      // the sequence's length
	seq           []uint32 // the sequence, known up to c
	// c is the length of the prefix of seq known, linked and hashed: the
	// fold asks for more as it goes (ensure), so that a fold given up
	// early does not read, link nor hash the rest.
	c    int
	src  Source   // fills seq beyond c; nil when the caller gave all of seq
	next []int32  // next position with the same symbol; -1 if none before c
	h    []uint64 // h[i]: hash of seq[:i], for i <= c
	pw   []uint64 // pw[k]: base^k, for the lengths most compared
	// last[s] (lastBig for the symbols too large for a table) is the last
	// position before c of symbol s, -1 if none: the link to fill when s
	// occurs again.
	last    []int32
	lastBig map[uint32]int32
	buf     []uint32 // the Finder's copy of a Source's sequence
}

// powTable is the number of powers of base a finder keeps: the candidate
// periods and the short runs compared; longer lengths, compared only while
// galloping over a long run, are computed.
const powTable = 1 << 14

// direct is the length up to which two stretches are compared symbol by
// symbol rather than by their hashes: most candidates differ within a few
// steps, and the comparison then costs no power of base.
const direct = 8

// firstChunk is the length of the sequence's first stretch read, linked
// and hashed; each later one doubles what is known (a variable for the
// tests).
var firstChunk = 1 << 12

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

// A Finder folds sequences one after another, reusing its work arrays (12
// bytes per step of the longest sequence, 16 for a Source's): a caller
// that folds one sequence in several ways allocates them once.
type Finder struct {
	f finder
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
	// Last returns a position after which the symbol at position i
	// (already filled) does not occur; Len()-1 when not known. The fold
	// uses it to stop reading when a symbol no longer occurs.
	Last(i int) int
}

// FindWithin is the package's FindWithin.
func (fd *Finder) FindWithin(seq []uint32, limit int) ([]Node, bool) {
	return fd.find(seq, nil, limit)
}

// FindSource is FindWithin on the sequence src gives, read as far as the
// fold needs: all of it when it does not give up.
func (fd *Finder) FindSource(src Source, limit int) ([]Node, bool) {
	return fd.find(nil, src, limit)
}

func (fd *Finder) find(seq []uint32, src Source, limit int) ([]Node, bool) {
	n := len(seq)
	if src != nil {
		n = src.Len()
	}
	if n == 0 {
		return nil, true
	}
	f := &fd.f
	f.leaves, f.limit, f.n, f.src, f.c = 0, limit, n, src, 0
	if src != nil {
		// Grown as it is filled: a fold given up early touches little.
		f.seq = f.buf[:0]
	} else {
		f.seq = seq
	}
	f.next = grow(f.next, n)
	f.h = grow(f.h, n+1)
	if len(f.pw) < min(n+1, powTable) {
		f.pw = make([]uint64, min(n+1, powTable))
		f.pw[0] = 1
		for k := 1; k < len(f.pw); k++ {
			f.pw[k] = f.pw[k-1] * base
		}
	}
	for i := range f.last {
		f.last[i] = -1
	}
	f.lastBig = nil
	f.h[0] = 0
	nodes := f.fold(0, n)
	ok := !f.over()
	if ok {
		f.ensure(n) // a Source is read to its end (the fold covers it)
	}
	if src != nil {
		f.buf = f.seq[:0]
	}
	f.seq, f.src = nil, nil
	if !ok {
		return nil, false
	}
	return nodes, true
}

// grow returns s with length n, reusing its array when it is large enough;
// the caller overwrites every element.
func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// over reports whether the fold drew more leaves than its limit.
func (f *finder) over() bool { return f.limit >= 0 && f.leaves > f.limit }

// ensure makes the first x symbols known, linked and hashed: at least
// twice what was, so that the stretches are few.
func (f *finder) ensure(x int) {
	if x <= f.c {
		return
	}
	to := min(f.n, max(x, 2*f.c, firstChunk))
	from := f.c
	if f.src != nil {
		if cap(f.seq) < to {
			s := make([]uint32, from, min(f.n, max(to, 2*cap(f.seq))))
			copy(s, f.seq)
			f.seq = s
		}
		f.seq = f.seq[:to]
		f.src.Fill(f.seq[from:to], from)
	}
	f.link(from, to)
	h := f.h[from]
	for i, s := range f.seq[from:to] {
		h = h*base + uint64(s) + 1
		f.h[from+i+1] = h
	}
	f.c = to
}

// link fills the links into and from seq[from:to]: the symbols are small
// integers (one per kind of step), so a table indexed by symbol finds each
// one's last position, unless one is too large for a table the size of the
// sequence.
func (f *finder) link(from, to int) {
	next := f.next[:to]
	for i := from; i < to; i++ {
		s := f.seq[i]
		next[i] = -1
		if int(s) >= len(f.last) && !f.growLast(s) {
			j, ok := f.lastBig[s]
			if ok {
				next[j] = int32(i)
			}
			f.lastBig[s] = int32(i)
			continue
		}
		if j := f.last[s]; j >= 0 {
			next[j] = int32(i)
		}
		f.last[s] = int32(i)
	}
}

// growLast grows the table last to hold symbol s, false when s is too
// large for a table the size of the sequence (lastBig holds it). The
// table never grows past that size, so that a symbol kept in lastBig is
// always looked up there.
func (f *finder) growLast(s uint32) bool {
	limit := int64(f.n) + 1024
	if int64(s) >= limit {
		if f.lastBig == nil {
			f.lastBig = make(map[uint32]int32)
		}
		return false
	}
	k := len(f.last)
	grown := min(max(int64(s)+1, 2*int64(k)), limit)
	f.last = append(f.last, make([]int32, int(grown)-k)...)
	for i := k; i < len(f.last); i++ {
		f.last[i] = -1
	}
	return true
}

// pow returns base^k modulo 2^64.
func pow(k int) uint64 {
	r, b := uint64(1), uint64(base)
	for ; k > 0; k >>= 1 {
		if k&1 != 0 {
			r *= b
		}
		b *= b
	}
	return r
}

// hash returns the hash of seq[i:i+k].
func (f *finder) hash(i, k int, pk uint64) uint64 { return f.h[i+k] - f.h[i]*pk }

// same reports whether seq[a:a+k] and seq[b:b+k] are equal (up to direct
// symbols, compared one by one) and hash alike.
func (f *finder) same(a, b, k int) bool {
	// a < b: what b needs is known, a's is. Read only what is compared
	// (most candidates differ within a few steps).
	kd := min(k, direct)
	if b+kd > f.c {
		f.ensure(b + kd)
	}
	for d := range kd {
		if f.seq[a+d] != f.seq[b+d] {
			return false
		}
	}
	if k <= direct {
		return true
	}
	if b+k > f.c {
		f.ensure(b + k)
	}
	var pk uint64
	if k < len(f.pw) {
		pk = f.pw[k]
	} else {
		pk = pow(k)
	}
	return f.hash(a, k, pk) == f.hash(b, k, pk)
}

// repeats returns how many times seq[i:i+p] repeats back to back from i
// within [i, hi), as the hashes say: the largest m with seq[i:i+(m-1)p] ==
// seq[i+p:i+mp].
func (f *finder) repeats(i, p, hi int) int {
	maxM := (hi - i) / p
	ok := func(m int) bool { return f.same(i, i+p, (m-1)*p) }
	lo, up := 1, 2 // ok(lo) holds; find the first failing up
	for up <= maxM && ok(up) {
		lo, up = up, up*2
	}
	if up > maxM {
		if ok(maxM) {
			return maxM
		}
		up = maxM
	}
	for up-lo > 1 {
		mid := (lo + up) / 2
		if ok(mid) {
			lo = mid
		} else {
			up = mid
		}
	}
	return lo
}

// more reports whether the symbol at j may occur again as a candidate
// for position i (fold), reading on until it does or cannot.
func (f *finder) more(i, j, hi int) bool {
	for f.next[j] < 0 {
		// The next occurrence, if any, is at c or after: too far, or
		// not there at all, or to be read.
		if f.c >= f.n || 2*(f.c-i) > hi-i || f.src != nil && f.src.Last(j) < f.c {
			return false
		}
		f.ensure(f.c + 1)
	}
	return true
}

// verify returns how many times seq[i:i+p] really repeats from i, at most
// m, comparing step by step.
func (f *finder) verify(i, p, m int) int {
	end := i + p*m
	for j := i + p; j < end; j++ {
		if f.seq[j] != f.seq[j-p] {
			return (j - i) / p
		}
	}
	return m
}

func (f *finder) fold(lo, hi int) []Node {
	var out []Node
	for i := lo; i < hi; {
		if i >= f.c {
			f.ensure(i + 1)
		}
		bestP, bestM := 0, 1
		tries := 0
		for j := i; tries < MaxCandidates; {
			if f.next[j] < 0 && !f.more(i, j, hi) {
				break
			}
			j = int(f.next[j])
			p := j - i
			if 2*p > hi-i {
				break
			}
			tries++
			if !f.same(i, j, p) {
				continue
			}
			if m := f.repeats(i, p, hi); m*p > bestM*bestP {
				bestP, bestM = p, m
			}
		}
		if bestM >= 2 {
			bestM = f.verify(i, bestP, bestM)
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
