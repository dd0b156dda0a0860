package taskgraph

import (
	"fmt"
	"math"
	"math/bits"
)

// Weights weigh a graph for Longest. Computation edges weigh their
// measured Weight (ns); the two methods weigh the rest, in ns too. Weights
// must be finite and not negative.
type Weights interface {
	// Message is the weight of a Message edge carrying bytes.
	Message(bytes int64) float64
	// Collective is the weight of collective node v.
	Collective(v NodeID) float64
}

// CrossWeights are Weights that weigh each cross edge on its own: Longest
// then calls Cross instead of Message, and adds Cross to a nonblocking
// collective's fan-out (which weighs 0 otherwise).
type CrossWeights interface {
	Weights
	// Cross is the weight of the cross edge from → to: a message of
	// bytes from a sending operation, or a nonblocking collective's
	// fan-out (from the collective, bytes 0).
	Cross(from, to NodeID, bytes int64) float64
}

// CrossTable are CrossWeights that hold every cross edge's weight:
// CrossIn(r) returns those of rank r's incoming cross edges, in the order
// RankCrossIn yields them (for each, what Cross returns). Longest reads
// them rank by rank instead of calling Cross for each edge.
type CrossTable interface {
	CrossWeights
	CrossIn(rank int) []float64
}

// Longest returns the length of a longest path from Init to Finalize and
// the path. It is Walk specialised: it visits the nodes in the same
// topological order, keeping the longest distance only per rank (the
// chain's current element), per operation that sends a message, and per
// collective, plus one bit per operation saying whether its longest
// incoming path arrives by its cross edge; it then walks back from
// Finalize. Time is linear in the size of the graph, extra memory about 8
// bytes per message, a bit per operation and 11 bytes per step of the
// path. Among equally long incoming paths it takes the first in In order
// (the chain before a message; the lowest participant; the lowest rank).
// A cycle is a *CycleError.
func (g *Graph) Longest(w Weights) (float64, *Path, error) {
	cw, _ := w.(CrossWeights)
	l := &longest{sched: newSched(g), w: w, cw: cw, cur: make([]lcursor, len(g.ranks)),
		sendVal: make([]uint64, g.numSenders), choice: make([]uint64, (g.numOps+63)/64),
		collVal: make([]float64, len(g.colls)), collArg: make([]uint32, len(g.colls)),
		partIn: make([]bool, len(g.parts)), finArg: -1, bad: None}
	tw, _ := w.(CrossTable)
	for ri := range l.cur {
		c := &l.cur[ri]
		c.lastKind, c.lastEnd = posInit, g.ranks[ri].initEnd
		if tw != nil {
			if xw := tw.CrossIn(g.index.rank(ri)); len(xw) >= len(g.ranks[ri].xTo) && xw != nil {
				c.xw = xw
			}
		}
		l.enqueue(int32(ri))
	}
	stuck, first := l.run(l.advance)
	if stuck > 0 {
		return 0, nil, l.cycle(first, stuck)
	}
	if l.finArg < 0 {
		return 0, nil, fmt.Errorf("the task graph has no operations: no path from %s to %s", g.initName, g.finName)
	}
	if l.bad != None {
		// sendVal's mark would read such a value back wrong.
		return 0, nil, fmt.Errorf("internal error: taskgraph: the longest path to node %d is negative or not a number: a weight is", l.bad)
	}
	path, err := l.back()
	return l.finVal, path, err
}

type lcursor struct {
	k        uint32
	p, q     int
	xc       int
	val      float64
	lastKind uint8
	lastEnd  int64
	waiters  waitHeap
	xw       []float64 // the incoming cross edges' weights (CrossTable), by xc
}

type longest struct {
	sched
	w       Weights
	cw      CrossWeights // w, when it weighs each cross edge
	cur     []lcursor
	sendVal []uint64  // per sending operation (senderSlot): visitedBit | its value's bits; 0: not visited yet
	choice  []uint64  // per operation: the longest path arrives by the cross edge
	collVal []float64 // best arrival, then (when done) the value after the node
	collArg []uint32  // participation the best arrival came from
	partIn  []bool    // participation arrived
	finVal  float64
	finArg  int // index of the rank the longest path reaches Finalize from
	// bad is a sending operation whose value came out negative or not a
	// number (a weight broke the Weights contract), None if none did.
	bad NodeID
}

// visitedBit marks a visited sending operation's value in sendVal: the
// sign bit, which a value (never negative) does not use, so that the
// array needs no filling before the walk.
const visitedBit = 1 << 63

// senderSlot returns the index of operation v among the operations that
// send cross edges, or -1.
func (g *Graph) senderSlot(v NodeID) int {
	i := uint32(v - firstOp)
	word := g.sendBits[i>>6]
	bit := uint64(1) << (i & 63)
	if word&bit == 0 {
		return -1
	}
	return int(g.sendRank[i>>6]) + bits.OnesCount64(word&(bit-1))
}

func (l *longest) arrive(j uint32, v float64) {
	ci := l.g.parts[j].coll
	l.partIn[j] = true
	if l.arrived[ci] == 0 || v > l.collVal[ci] || v == l.collVal[ci] && j < l.collArg[ci] {
		l.collVal[ci], l.collArg[ci] = v, j
	}
	l.arrived[ci]++
	if l.arrived[ci] == l.g.colls[ci].n {
		l.complete(ci)
	}
}

func (l *longest) complete(ci uint32) {
	l.collVal[ci] += l.w.Collective(l.g.collBase + NodeID(ci))
	l.release(ci)
}

func (l *longest) advance(ri int) {
	g := l.g
	d := &g.ranks[ri]
	c := &l.cur[ri]
	n := uint32(d.n())
	for {
		if c.p < len(d.blk) {
			j := d.blk[c.p]
			pt := &g.parts[j]
			if pt.at == c.k {
				ci := pt.coll
				if !l.collDone[ci] {
					if !l.partIn[j] {
						l.arrive(j, c.val+float64(chainWeight(d, c.lastKind, c.lastEnd, posPart, pt.start)))
					}
					if !l.collDone[ci] {
						return
					}
				}
				c.val, c.lastKind, c.lastEnd = l.collVal[ci], posPart, pt.end
				c.p++
				continue
			}
		}
		if c.k < n {
			k := c.k
			v := d.base + NodeID(k)
			start, end := d.ops.times(k)
			val := c.val + float64(chainWeight(d, c.lastKind, c.lastEnd, posOp, start))
			if c.xc < len(d.xTo) && d.xTo[c.xc] == k {
				from := d.xFrom[c.xc]
				var sv float64
				if from >= g.collBase {
					ci := uint32(from - g.collBase)
					if !l.collDone[ci] {
						l.collWait[ci] = append(l.collWait[ci], int32(ri))
						return
					}
					sv = l.collVal[ci]
					if c.xw != nil {
						sv += c.xw[c.xc]
					} else if l.cw != nil {
						sv += l.cw.Cross(from, v, 0)
					}
				} else {
					b := l.sendVal[g.senderSlot(from)]
					if b == 0 {
						l.block(ri, from)
						return
					}
					sv = math.Float64frombits(b &^ visitedBit)
					if c.xw != nil {
						sv += c.xw[c.xc]
					} else if l.cw != nil {
						sv += l.cw.Cross(from, v, d.crossBytes(c.xc))
					} else {
						sv += l.w.Message(d.crossBytes(c.xc))
					}
				}
				if sv > val {
					val = sv
					o := uint32(v - firstOp)
					l.choice[o>>6] |= 1 << (o & 63)
				}
				c.xc++
			}
			c.val, c.lastKind, c.lastEnd = val, posOp, end
			if s := g.senderSlot(v); s >= 0 {
				if !(val >= 0) && l.bad == None {
					l.bad = v
				}
				l.sendVal[s] = math.Float64bits(val) | visitedBit
			}
			c.k++
			if len(c.waiters) > 0 {
				l.wake(c)
			}
			for c.q < len(d.nb) && g.parts[d.nb[c.q]].at == k {
				j := d.nb[c.q]
				c.q++
				l.arrive(j, val)
			}
			continue
		}
		if d.hasChain() {
			v := c.val + float64(chainWeight(d, c.lastKind, c.lastEnd, posFin, d.finStart))
			if l.finArg < 0 || v > l.finVal || v == l.finVal && ri < l.finArg {
				l.finVal, l.finArg = v, ri
			}
		}
		l.finished[ri] = true
		return
	}
}

func (l *longest) block(ri int, v NodeID) {
	g := l.g
	s := g.indexOf(v)
	c := &l.cur[s]
	c.waiters.push(waiter{need: uint32(v - g.ranks[s].base), ri: int32(ri)})
}

func (l *longest) wake(c *lcursor) {
	c.waiters.popReady(c.k, l.enqueue)
}

// back walks from Finalize to Init along the recorded choices.
func (l *longest) back() (*Path, error) {
	g := l.g
	p := &Path{}
	// last[ri] is the index in xTo of the cross edge the walk took last on
	// rank index ri, 0 for none: the walk visits a rank's operations in
	// decreasing order, so the next is most often the one just before.
	last := make([]int, len(g.ranks))
	ri := l.finArg
	v, e := Finalize, g.chainEdge(ri, g.prev(&g.ranks[ri], pos{k: posFin}), pos{k: posFin})
	cross := false
	for {
		p.push(v, e, cross)
		if p.n > g.NumNodes() {
			return nil, fmt.Errorf("internal error: taskgraph: the longest path back from %s does not reach %s", g.finName, g.initName)
		}
		v, cross = e.From, false
		switch g.Kind(v) {
		case KindInit:
			p.push(v, Edge{}, false)
			return p, nil
		case KindOp:
			ri = g.indexOf(v)
			d := &g.ranks[ri]
			i := uint32(v - d.base)
			if o := uint32(v - firstOp); l.choice[o>>6]&(1<<(o&63)) != 0 {
				x := last[ri] - 1
				if x < 0 || d.xTo[x] != i {
					x = searchU32(d.xTo, i)
				}
				last[ri] = x
				e, cross = g.crossEdge(ri, x), true
			} else {
				e = g.chainEdge(ri, g.prev(d, pos{posOp, i}), pos{posOp, i})
			}
		case KindCollective:
			pt := &g.parts[l.collArg[v-g.collBase]]
			ri = int(pt.ri)
			d := &g.ranks[ri]
			if pt.nb {
				e = Edge{Kind: CollIn, From: d.base + NodeID(pt.at), To: v, Rank: g.index.rank(ri)}
			} else {
				at := pos{posPart, pt.idx}
				e = g.chainEdge(ri, g.prev(d, at), at)
			}
		default:
			return nil, fmt.Errorf("internal error: taskgraph: the longest path back reaches node %d", v)
		}
	}
}

// searchU32 returns the index of x in the sorted slice s (which holds it).
func searchU32(s []uint32, x uint32) int {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (l *longest) cycle(ri, stuck int) error {
	g := l.g
	d := &g.ranks[ri]
	c := &l.cur[ri]
	r := g.index.rank(ri)
	e := &CycleError{Rank: r, Waits: None, Stuck: stuck}
	if c.p < len(d.blk) && g.parts[d.blk[c.p]].at == c.k {
		ci := g.parts[d.blk[c.p]].coll
		e.Node = g.collBase + NodeID(ci)
		e.desc = fmt.Sprintf("rank %d waits at %s for ranks %s to arrive", r, g.describe(e.Node), g.missing(ci, l.partIn))
		return e
	}
	e.Node = d.base + NodeID(c.k)
	if c.xc < len(d.xTo) && d.xTo[c.xc] == c.k {
		e.Waits = d.xFrom[c.xc]
	}
	e.desc = fmt.Sprintf("rank %d waits at %s for %s", r, g.describe(e.Node), g.describe(e.Waits))
	return e
}

// missing lists the participants of collective ci that have not arrived.
func (g *Graph) missing(ci uint32, arrived []bool) string {
	col := &g.colls[ci]
	s := ""
	for j := col.first; j < col.first+col.n; j++ {
		if !arrived[j] {
			if s != "" {
				s += ","
			}
			s += fmt.Sprint(g.index.rank(int(g.parts[j].ri)))
		}
	}
	return s
}
