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
// Memory: 4 bytes per step for the next-occurrence links and 8 for the
// prefix hashes, besides the caller's sequence and the nodes returned. The result depends only on
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
	seq  []uint32
	next []int32  // next position with the same symbol, -1 if none
	h    []uint64 // h[i]: hash of seq[:i]
}

// Find folds seq (see the package documentation). The nodes returned cover
// seq from 0 to len(seq) in order.
func Find(seq []uint32) []Node {
	n := len(seq)
	if n == 0 {
		return nil
	}
	f := &finder{seq: seq, next: make([]int32, n), h: make([]uint64, n+1)}
	last := make(map[uint32]int32)
	for i := n - 1; i >= 0; i-- {
		j, ok := last[seq[i]]
		if !ok {
			j = -1
		}
		f.next[i] = j
		last[seq[i]] = int32(i)
	}
	for i, s := range seq {
		f.h[i+1] = f.h[i]*base + uint64(s) + 1
	}
	return f.fold(0, n)
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

// same reports whether seq[a:a+k] and seq[b:b+k] hash alike.
func (f *finder) same(a, b, k int) bool {
	pk := pow(k)
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
			i++
			continue
		}
		out = append(out, Node{Start: i, Period: bestP, Count: bestM, Body: f.fold(i, i+bestP)})
		i += bestP * bestM
	}
	return out
}
