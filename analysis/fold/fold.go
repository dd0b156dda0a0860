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
// Memory: 4 bytes per step for the next-occurrence links and 8 for the
// prefix hashes, and 128 KiB of powers of the hash's base, besides the
// caller's sequence and the nodes returned. The result depends only on
// the sequence.
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
	seq           []uint32
	next          []int32  // next position with the same symbol, -1 if none
	h             []uint64 // h[i]: hash of seq[:i]
	pw            []uint64 // pw[k]: base^k, for the lengths most compared
}

// powTable is the number of powers of base a finder keeps: the candidate
// periods and the short runs compared; longer lengths, compared only while
// galloping over a long run, are computed.
const powTable = 1 << 14

// direct is the length up to which two stretches are compared symbol by
// symbol rather than by their hashes: most candidates differ within a few
// steps, and the comparison then costs no power of base.
const direct = 8

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
// bytes per step of the longest sequence): a caller that folds one
// sequence in several ways allocates them once.
type Finder struct {
	f finder
}

// FindWithin is the package's FindWithin.
func (fd *Finder) FindWithin(seq []uint32, limit int) ([]Node, bool) {
	n := len(seq)
	if n == 0 {
		return nil, true
	}
	f := &fd.f
	f.leaves, f.limit, f.seq = 0, limit, seq
	f.next = grow(f.next, n)
	f.h = grow(f.h, n+1)
	if len(f.pw) < min(n+1, powTable) {
		f.pw = make([]uint64, min(n+1, powTable))
		f.pw[0] = 1
		for k := 1; k < len(f.pw); k++ {
			f.pw[k] = f.pw[k-1] * base
		}
	}
	f.link()
	f.h[0] = 0
	for i, s := range seq {
		f.h[i+1] = f.h[i]*base + uint64(s) + 1
	}
	nodes := f.fold(0, n)
	f.seq = nil
	if f.over() {
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

// link fills next: the symbols are small integers (one per kind of step),
// so a table indexed by symbol finds each's last position, unless one is
// too large for a table the size of the sequence.
func (f *finder) link() {
	maxSym := uint32(0)
	for _, s := range f.seq {
		maxSym = max(maxSym, s)
	}
	if int64(maxSym) < int64(len(f.seq))+1024 {
		last := make([]int32, int(maxSym)+1)
		for i := range last {
			last[i] = -1
		}
		for i := len(f.seq) - 1; i >= 0; i-- {
			s := f.seq[i]
			f.next[i], last[s] = last[s], int32(i)
		}
		return
	}
	last := make(map[uint32]int32)
	for i := len(f.seq) - 1; i >= 0; i-- {
		j, ok := last[f.seq[i]]
		if !ok {
			j = -1
		}
		f.next[i] = j
		last[f.seq[i]] = int32(i)
	}
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
	for d := range min(k, direct) {
		if f.seq[a+d] != f.seq[b+d] {
			return false
		}
	}
	if k <= direct {
		return true
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
		bestP, bestM := 0, 1
		tries := 0
		for j := int(f.next[i]); j >= 0 && tries < MaxCandidates; j = int(f.next[j]) {
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
