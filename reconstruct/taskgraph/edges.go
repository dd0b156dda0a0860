package taskgraph

import (
	"cmp"
	"iter"
	"slices"
	"sort"
)

// A position on a rank's chain.
type pos struct {
	k uint8
	i uint32 // operation local index (posOp) or index in the rank's blk list (posPart)
}

const (
	posInit uint8 = iota + 1
	posOp
	posPart
	posFin
)

// partAt returns the index in d.blk of the first blocking participation
// whose at is at least x.
func (g *Graph) partAt(d *rankData, x uint32) int {
	return sort.Search(len(d.blk), func(j int) bool { return g.parts[d.blk[j]].at >= x })
}

// mayHavePart reports whether a blocking collective may sit at slot x of
// the rank, before its operation x: false lets slot and before skip the
// search of d.blk for most operations.
func (g *Graph) mayHavePart(d *rankData, x uint32) bool {
	if int(x) >= d.n() {
		return len(d.blk) > 0
	}
	i := uint32(d.base-firstOp) + x
	return g.partBits[i>>6]&(1<<(i&63)) != 0
}

// slot returns the first chain element at slot x: the first blocking
// collective before operation x, else operation x, else Finalize.
func (g *Graph) slot(d *rankData, x uint32) pos {
	if g.mayHavePart(d, x) {
		if j := g.partAt(d, x); j < len(d.blk) && g.parts[d.blk[j]].at == x {
			return pos{posPart, uint32(j)}
		}
	}
	if int(x) < d.n() {
		return pos{posOp, x}
	}
	return pos{k: posFin}
}

// before returns the chain element just before slot x: the last blocking
// collective before operation x, else operation x-1, else Init.
func (g *Graph) before(d *rankData, x uint32) pos {
	if g.mayHavePart(d, x) {
		if j := g.partAt(d, x+1) - 1; j >= 0 && g.parts[d.blk[j]].at == x {
			return pos{posPart, uint32(j)}
		}
	}
	if x > 0 {
		return pos{posOp, x - 1}
	}
	return pos{k: posInit}
}

func (g *Graph) next(d *rankData, p pos) pos {
	switch p.k {
	case posInit:
		return g.slot(d, 0)
	case posOp:
		return g.slot(d, p.i+1)
	case posPart:
		at := g.parts[d.blk[p.i]].at
		if j := p.i + 1; int(j) < len(d.blk) && g.parts[d.blk[j]].at == at {
			return pos{posPart, j}
		}
		if int(at) < d.n() {
			return pos{posOp, at}
		}
	}
	return pos{k: posFin}
}

func (g *Graph) prev(d *rankData, p pos) pos {
	switch p.k {
	case posOp:
		return g.before(d, p.i)
	case posPart:
		at := g.parts[d.blk[p.i]].at
		if p.i > 0 && g.parts[d.blk[p.i-1]].at == at {
			return pos{posPart, p.i - 1}
		}
		if at > 0 {
			return pos{posOp, at - 1}
		}
		return pos{k: posInit}
	case posFin:
		return g.before(d, uint32(d.n()))
	}
	return pos{k: posInit}
}

func (g *Graph) nodeAt(d *rankData, p pos) NodeID {
	switch p.k {
	case posInit:
		return Init
	case posOp:
		return d.base + NodeID(p.i)
	case posPart:
		return g.collBase + NodeID(g.parts[d.blk[p.i]].coll)
	}
	return Finalize
}

// chainKind is the kind of the chain edge from a to b.
func chainKind(a, b uint8) EdgeKind {
	switch {
	case a == posInit:
		return InitOut
	case b == posFin:
		return FinalizeIn
	case b == posPart:
		return CollIn
	case a == posPart:
		return CollOut
	}
	return Compute
}

// chainWeight is the weight of the chain edge from an element that ended
// at end (kind a) to one that starts at start (kind b).
func chainWeight(d *rankData, a uint8, end int64, b uint8, start int64) int64 {
	if a == posInit && !d.hasInit || b == posFin && !d.hasFin {
		return 0
	}
	return clamp(start - end)
}

func (g *Graph) endAt(d *rankData, p pos) int64 {
	switch p.k {
	case posInit:
		return d.initEnd
	case posOp:
		return d.ops.end(p.i)
	case posPart:
		return g.parts[d.blk[p.i]].end
	}
	return d.finStart
}

func (g *Graph) startAt(d *rankData, p pos) int64 {
	switch p.k {
	case posInit:
		return d.initEnd
	case posOp:
		return d.ops.start(p.i)
	case posPart:
		return g.parts[d.blk[p.i]].start
	}
	return d.finStart
}

// chainEdge is the chain edge from a to b of the rank with index ri.
func (g *Graph) chainEdge(ri int, a, b pos) Edge {
	d := &g.ranks[ri]
	return Edge{Kind: chainKind(a.k, b.k), From: g.nodeAt(d, a), To: g.nodeAt(d, b), Rank: g.index.rank(ri),
		Weight: chainWeight(d, a.k, g.endAt(d, a), b.k, g.startAt(d, b))}
}

// crossEdge is the incoming cross edge number x of the rank with index ri.
func (g *Graph) crossEdge(ri int, x int) Edge {
	d := &g.ranks[ri]
	from := d.xFrom[x]
	e := Edge{Kind: Message, From: from, To: d.base + NodeID(d.xTo[x]), Rank: g.index.rank(ri), Bytes: d.crossBytes(x)}
	if from >= g.collBase {
		e.Kind = CollOut
	}
	return e
}

// RankCrossIn yields the incoming cross edges of rank r's operations (the
// second edge In gives an operation that has one), in program order of
// the operations they reach: what In finds one operation at a time by a
// search, for a whole rank in one walk.
func (g *Graph) RankCrossIn(r int) iter.Seq[Edge] {
	return func(yield func(Edge) bool) {
		ri, ok := g.index.find(r)
		if !ok {
			return
		}
		for x := range g.ranks[ri].xTo {
			if !yield(g.crossEdge(ri, x)) {
				return
			}
		}
	}
}

// In appends the incoming edges of node v to buf and returns it: for an
// operation its chain edge then its cross edge; for a collective one edge
// per participant in rank order; for Finalize one per rank with
// operations, in rank order.
func (g *Graph) In(v NodeID, buf []Edge) []Edge {
	switch g.Kind(v) {
	case KindFinalize:
		for ri := range g.ranks {
			if d := &g.ranks[ri]; d.hasChain() {
				buf = append(buf, g.chainEdge(ri, g.prev(d, pos{k: posFin}), pos{k: posFin}))
			}
		}
	case KindOp:
		ri := g.indexOf(v)
		d := &g.ranks[ri]
		i := uint32(v - d.base)
		buf = append(buf, g.chainEdge(ri, g.prev(d, pos{posOp, i}), pos{posOp, i}))
		if x, ok := slices.BinarySearch(d.xTo, i); ok {
			buf = append(buf, g.crossEdge(ri, x))
		}
	case KindCollective:
		c := &g.colls[v-g.collBase]
		for j := c.first; j < c.first+c.n; j++ {
			pt := &g.parts[j]
			ri := int(pt.ri)
			d := &g.ranks[ri]
			if pt.nb {
				buf = append(buf, Edge{Kind: CollIn, From: d.base + NodeID(pt.at), To: v, Rank: g.index.rank(ri)})
				continue
			}
			p := pos{posPart, pt.idx}
			buf = append(buf, g.chainEdge(ri, g.prev(d, p), p))
		}
	}
	return buf
}

// Out appends the outgoing edges of node v to buf and returns it: for Init
// one per rank with operations; for an operation its chain edge, its
// CollIn edges to nonblocking collectives it posted, then its messages by
// receiving node; for a collective one edge per participant in rank order
// (the next chain element of a blocking member, the completing operation
// of a nonblocking one).
func (g *Graph) Out(v NodeID, buf []Edge) []Edge {
	switch g.Kind(v) {
	case KindInit:
		for ri := range g.ranks {
			if d := &g.ranks[ri]; d.hasChain() {
				buf = append(buf, g.chainEdge(ri, pos{k: posInit}, g.next(d, pos{k: posInit})))
			}
		}
	case KindOp:
		ri := g.indexOf(v)
		d := &g.ranks[ri]
		i := uint32(v - d.base)
		buf = append(buf, g.chainEdge(ri, pos{posOp, i}, g.next(d, pos{posOp, i})))
		j := sort.Search(len(d.nb), func(j int) bool { return g.parts[d.nb[j]].at >= i })
		for ; j < len(d.nb) && g.parts[d.nb[j]].at == i; j++ {
			buf = append(buf, Edge{Kind: CollIn, From: v, To: g.collBase + NodeID(g.parts[d.nb[j]].coll), Rank: g.index.rank(ri)})
		}
		buf = g.outCross(v, buf)
	case KindCollective:
		c := &g.colls[v-g.collBase]
		for j := c.first; j < c.first+c.n; j++ {
			pt := &g.parts[j]
			if pt.nb {
				continue
			}
			ri := int(pt.ri)
			d := &g.ranks[ri]
			p := pos{posPart, pt.idx}
			buf = append(buf, g.chainEdge(ri, p, g.next(d, p)))
		}
		buf = g.outCross(v, buf)
	}
	return buf
}

// outIndex lists every cross edge by sending node.
type outIndex struct {
	from []NodeID
	ri   []int32 // receiving rank's index
	x    []uint32
}

func (g *Graph) outIndexed() *outIndex {
	g.outOnce.Do(func() {
		o := &outIndex{}
		for ri := range g.ranks {
			for x, f := range g.ranks[ri].xFrom {
				o.from = append(o.from, f)
				o.ri = append(o.ri, int32(ri))
				o.x = append(o.x, uint32(x))
			}
		}
		idx := make([]int, len(o.from))
		for i := range idx {
			idx[i] = i
		}
		// Stable by sender: receivers stay in node order.
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(o.from[a], o.from[b]) })
		s := &outIndex{from: make([]NodeID, len(idx)), ri: make([]int32, len(idx)), x: make([]uint32, len(idx))}
		for i, j := range idx {
			s.from[i], s.ri[i], s.x[i] = o.from[j], o.ri[j], o.x[j]
		}
		g.out = s
	})
	return g.out
}

func (g *Graph) outCross(v NodeID, buf []Edge) []Edge {
	o := g.outIndexed()
	i := sort.Search(len(o.from), func(i int) bool { return o.from[i] >= v })
	for ; i < len(o.from) && o.from[i] == v; i++ {
		buf = append(buf, g.crossEdge(int(o.ri[i]), int(o.x[i])))
	}
	return buf
}

// Edges calls yield for every edge: the outgoing edges of each node in
// node id order (as Out gives them). It stops when yield returns false.
func (g *Graph) Edges(yield func(Edge) bool) {
	var buf []Edge
	for v := NodeID(0); int(v) < g.NumNodes(); v++ {
		buf = g.Out(v, buf[:0])
		for _, e := range buf {
			if !yield(e) {
				return
			}
		}
	}
}
