package fold

// The fold as it was before it compared stretches step by step: links
// to each symbol's next occurrence and polynomial prefix hashes of the
// whole sequence (12 bytes a step). Kept as the reference the exact fold
// must agree with (TestFindMatchesHashed) wherever the hashes do not
// collide.

// refBase is the hash's base, modulo 2^64.
const refBase = 0x9E3779B97F4A7C15

type refFinder struct {
	// leaves counts the leaves of the nodes made so far (Leaves of the
	// result); past limit (when not negative) the search gives up.
	leaves, limit int
	n             int      // the sequence's length
	seq           []uint32 // the sequence, known up to c
	// c is the length of the prefix of seq known, linked and hashed: the
	// fold asks for more as it goes (ensure), so that a fold given up
	// early does not read, link nor hash the rest.
	c    int
	src  refSource // fills seq beyond c; nil when the caller gave all of seq
	next []int32   // next position with the same symbol; -1 if none before c
	h    []uint64  // h[i]: hash of seq[:i], for i <= c
	pw   []uint64  // pw[k]: refBase^k, for the lengths most compared
	// last[s] (lastBig for the symbols too large for a table) is the last
	// position before c of symbol s, -1 if none: the link to fill when s
	// occurs again.
	last    []int32
	lastBig map[uint32]int32
	buf     []uint32 // the Finder's copy of a Source's sequence
}

// refPowTable is the number of powers of refBase a refFinder keeps: the candidate
// periods and the short runs compared; longer lengths, compared only while
// galloping over a long run, are computed.
const refPowTable = 1 << 14

// refDirect is the length up to which two stretches are compared symbol by
// symbol rather than by their hashes: most candidates differ within a few
// steps, and the comparison then costs no power of refBase.
const refDirect = 8

// refFirstChunk is the length of the sequence's first stretch read, linked
// and hashed; each later one doubles what is known (a variable for the
// tests).
var refFirstChunk = 1 << 12

func refFindWithin(seq []uint32, limit int) ([]Node, bool) {
	var src refSource
	n := len(seq)
	if src != nil {
		n = src.Len()
	}
	if n == 0 {
		return nil, true
	}
	f := &refFinder{}
	f.leaves, f.limit, f.n, f.src, f.c = 0, limit, n, src, 0
	if src != nil {
		// Grown as it is filled: a fold given up early touches little.
		f.seq = f.buf[:0]
	} else {
		f.seq = seq
	}
	f.next = refGrow(f.next, n)
	f.h = refGrow(f.h, n+1)
	if len(f.pw) < min(n+1, refPowTable) {
		f.pw = make([]uint64, min(n+1, refPowTable))
		f.pw[0] = 1
		for k := 1; k < len(f.pw); k++ {
			f.pw[k] = f.pw[k-1] * refBase
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
func refGrow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// over reports whether the fold drew more leaves than its limit.
func (f *refFinder) over() bool { return f.limit >= 0 && f.leaves > f.limit }

// ensure makes the first x symbols known, linked and hashed: at least
// twice what was, so that the stretches are few.
func (f *refFinder) ensure(x int) {
	if x <= f.c {
		return
	}
	to := min(f.n, max(x, 2*f.c, refFirstChunk))
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
		h = h*refBase + uint64(s) + 1
		f.h[from+i+1] = h
	}
	f.c = to
}

// link fills the links into and from seq[from:to]: the symbols are small
// integers (one per kind of step), so a table indexed by symbol finds each
// one's last position, unless one is too large for a table the size of the
// sequence.
func (f *refFinder) link(from, to int) {
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
func (f *refFinder) growLast(s uint32) bool {
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

// pow returns refBase^k modulo 2^64.
func refPow(k int) uint64 {
	r, b := uint64(1), uint64(refBase)
	for ; k > 0; k >>= 1 {
		if k&1 != 0 {
			r *= b
		}
		b *= b
	}
	return r
}

// hash returns the hash of seq[i:i+k].
func (f *refFinder) hash(i, k int, pk uint64) uint64 { return f.h[i+k] - f.h[i]*pk }

// same reports whether seq[a:a+k] and seq[b:b+k] are equal (up to refDirect
// symbols, compared one by one) and hash alike.
func (f *refFinder) same(a, b, k int) bool {
	// a < b: what b needs is known, a's is. Read only what is compared
	// (most candidates differ within a few steps).
	kd := min(k, refDirect)
	if b+kd > f.c {
		f.ensure(b + kd)
	}
	for d := range kd {
		if f.seq[a+d] != f.seq[b+d] {
			return false
		}
	}
	if k <= refDirect {
		return true
	}
	if b+k > f.c {
		f.ensure(b + k)
	}
	var pk uint64
	if k < len(f.pw) {
		pk = f.pw[k]
	} else {
		pk = refPow(k)
	}
	return f.hash(a, k, pk) == f.hash(b, k, pk)
}

// repeats returns how many times seq[i:i+p] repeats back to back from i
// within [i, hi), as the hashes say: the largest m with seq[i:i+(m-1)p] ==
// seq[i+p:i+mp].
func (f *refFinder) repeats(i, p, hi int) int {
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
func (f *refFinder) more(i, j, hi int) bool {
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
func (f *refFinder) verify(i, p, m int) int {
	end := i + p*m
	for j := i + p; j < end; j++ {
		if f.seq[j] != f.seq[j-p] {
			return (j - i) / p
		}
	}
	return m
}

func (f *refFinder) fold(lo, hi int) []Node {
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

// refSource is what Source was when the fold took Last by position.
type refSource interface {
	Len() int
	Fill(dst []uint32, from int)
	Last(i int) int
}
