package taskgraph

import (
	"fmt"
	"strings"
)

// CycleError reports that Walk could not order the graph: some ranks wait
// for each other in a cycle, which only inconsistent input produces (e.g.
// messages matched against program order).
type CycleError struct {
	// Node is a node on the cycle: where the first stuck rank waits.
	Node NodeID
	// Rank is that rank.
	Rank int
	// Waits is what Node waits for: the sender of its message, or None
	// when Node is a collective whose other members never arrive.
	Waits NodeID
	// Stuck is the number of ranks that could not reach MPI_Finalize.
	Stuck int
	desc  string
}

func (e *CycleError) Error() string {
	return fmt.Sprintf("the task graph has a cycle (the trace is inconsistent): %s; %d rank(s) cannot reach MPI_Finalize", e.desc, e.Stuck)
}

func (g *Graph) describe(v NodeID) string {
	if v == None {
		return "?"
	}
	n := g.Node(v)
	switch n.Kind {
	case KindOp:
		return fmt.Sprintf("node %d (%s on rank %d, event %d)", v, n.Name, n.Rank, n.Event.Index)
	case KindCollective:
		return fmt.Sprintf("node %d (%s, collective of %d ranks)", v, n.Name, n.Participants)
	}
	return fmt.Sprintf("node %d (%s)", v, n.Name)
}

type waiter struct {
	need uint32 // local index of the operation waited for
	ri   int32  // index of the waiting rank
}

type cursor struct {
	k        uint32 // next operation
	p, q     int    // next blocking and nonblocking participation
	xc       int    // next incoming cross edge
	last     NodeID
	lastKind uint8
	lastEnd  int64
	waiters  waitHeap
}

type walker struct {
	sched
	visit    func(NodeID, []Edge)
	cur      []cursor
	partPred []NodeID
	partW    []int64
	fin      []Edge
	hasFin   []bool
	buf      []Edge
	cbuf     []Edge
}

// Walk calls visit once for every node, in a topological order: a node
// after all of its predecessors. Init comes first and Finalize last; in
// holds the node's incoming edges (as In gives them) and is valid only
// during the call. Walk takes time linear in the size of the graph and
// memory proportional to the number of ranks and collectives. If the graph
// has a cycle, which only inconsistent input produces, Walk stops with a
// *CycleError after visiting what it could.
func (g *Graph) Walk(visit func(v NodeID, in []Edge)) error {
	w := &walker{sched: newSched(g), visit: visit, cur: make([]cursor, len(g.ranks)),
		partPred: make([]NodeID, len(g.parts)), partW: make([]int64, len(g.parts)),
		fin: make([]Edge, len(g.ranks)), hasFin: make([]bool, len(g.ranks))}
	for i := range w.partPred {
		w.partPred[i] = None
	}
	visit(Init, nil)
	for ri := range w.cur {
		c := &w.cur[ri]
		c.last, c.lastKind, c.lastEnd = Init, posInit, g.ranks[ri].initEnd
		w.enqueue(int32(ri))
	}
	stuck, first := w.run(w.advance)
	if stuck > 0 {
		return w.cycle(first, stuck)
	}
	in := w.buf[:0]
	for ri := range w.fin {
		if w.hasFin[ri] {
			in = append(in, w.fin[ri])
		}
	}
	visit(Finalize, in)
	return nil
}

// done reports whether node v has been visited.
func (w *walker) done(v NodeID) bool {
	g := w.g
	if v >= g.collBase {
		return w.collDone[v-g.collBase]
	}
	s := g.indexOf(v)
	return w.cur[s].k > uint32(v-g.ranks[s].base)
}

// block makes the rank with index ri wait until node v is visited.
func (w *walker) block(ri int, v NodeID) {
	g := w.g
	if v >= g.collBase {
		ci := uint32(v - g.collBase)
		w.collWait[ci] = append(w.collWait[ci], int32(ri))
		return
	}
	s := g.indexOf(v)
	c := &w.cur[s]
	c.waiters.push(waiter{need: uint32(v - g.ranks[s].base), ri: int32(ri)})
}

// wake enqueues the ranks waiting for operations of rank s it has passed.
func (w *walker) wake(c *cursor) {
	c.waiters.popReady(c.k, w.enqueue)
}

// arrive records that participation j reached its collective from pred
// with the given edge weight, and completes the collective when it was the
// last.
func (w *walker) arrive(j uint32, pred NodeID, weight int64) {
	w.partPred[j] = pred
	w.partW[j] = weight
	ci := w.g.parts[j].coll
	w.arrived[ci]++
	if w.arrived[ci] == w.g.colls[ci].n {
		w.complete(ci)
	}
}

func (w *walker) complete(ci uint32) {
	g := w.g
	c := &g.colls[ci]
	v := g.collBase + NodeID(ci)
	in := w.cbuf[:0]
	for j := c.first; j < c.first+c.n; j++ {
		pt := &g.parts[j]
		e := Edge{Kind: CollIn, From: w.partPred[j], To: v, Rank: g.index.rank(int(pt.ri)), Weight: w.partW[j]}
		if e.From == Init {
			e.Kind = InitOut
		}
		in = append(in, e)
	}
	w.cbuf = in
	w.visit(v, in)
	w.release(ci)
}

// advance moves the rank with index ri along its chain as far as it can.
func (w *walker) advance(ri int) {
	g := w.g
	d := &g.ranks[ri]
	c := &w.cur[ri]
	r := g.index.rank(ri)
	n := uint32(d.n())
	for {
		if c.p < len(d.blk) {
			j := d.blk[c.p]
			pt := &g.parts[j]
			if pt.at == c.k {
				ci := pt.coll
				if !w.collDone[ci] {
					if w.partPred[j] == None {
						w.arrive(j, c.last, chainWeight(d, c.lastKind, c.lastEnd, posPart, pt.start))
					}
					if !w.collDone[ci] {
						return // the last member to arrive enqueues r
					}
				}
				c.last, c.lastKind, c.lastEnd = g.collBase+NodeID(ci), posPart, pt.end
				c.p++
				continue
			}
		}
		if c.k < n {
			k := c.k
			v := d.base + NodeID(k)
			in := w.buf[:0]
			in = append(in, Edge{Kind: chainKind(c.lastKind, posOp), From: c.last, To: v, Rank: r,
				Weight: chainWeight(d, c.lastKind, c.lastEnd, posOp, d.ops.start(k))})
			if c.xc < len(d.xTo) && d.xTo[c.xc] == k {
				from := d.xFrom[c.xc]
				if !w.done(from) {
					w.block(ri, from)
					return
				}
				in = append(in, g.crossEdge(ri, c.xc))
				c.xc++
			}
			w.buf = in
			w.visit(v, in)
			c.last, c.lastKind, c.lastEnd = v, posOp, d.ops.end(k)
			c.k++
			if len(c.waiters) > 0 {
				w.wake(c)
			}
			for c.q < len(d.nb) && g.parts[d.nb[c.q]].at == k {
				j := d.nb[c.q]
				c.q++
				w.arrive(j, v, 0)
			}
			continue
		}
		if d.hasChain() {
			w.fin[ri] = Edge{Kind: FinalizeIn, From: c.last, To: Finalize, Rank: r,
				Weight: chainWeight(d, c.lastKind, c.lastEnd, posFin, d.finStart)}
			w.hasFin[ri] = true
		}
		w.finished[ri] = true
		return
	}
}

func (w *walker) cycle(ri, stuck int) error {
	g := w.g
	d := &g.ranks[ri]
	c := &w.cur[ri]
	r := g.index.rank(ri)
	e := &CycleError{Rank: r, Waits: None, Stuck: stuck}
	if c.p < len(d.blk) && g.parts[d.blk[c.p]].at == c.k {
		ci := g.parts[d.blk[c.p]].coll
		e.Node = g.collBase + NodeID(ci)
		col := &g.colls[ci]
		var missing []string
		for j := col.first; j < col.first+col.n; j++ {
			if w.partPred[j] == None {
				missing = append(missing, fmt.Sprint(g.index.rank(int(g.parts[j].ri))))
			}
		}
		e.desc = fmt.Sprintf("rank %d waits at %s for ranks %s to arrive", r, g.describe(e.Node), strings.Join(missing, ","))
		return e
	}
	e.Node = d.base + NodeID(c.k)
	if c.xc < len(d.xTo) && d.xTo[c.xc] == c.k {
		e.Waits = d.xFrom[c.xc]
	}
	e.desc = fmt.Sprintf("rank %d waits at %s for %s", r, g.describe(e.Node), g.describe(e.Waits))
	return e
}

// waitHeap holds the ranks waiting for an operation of another rank: a
// min-heap by the index of the operation they need.
type waitHeap []waiter

func (h *waitHeap) push(x waiter) {
	q := append(*h, x)
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if q[p].need <= q[i].need {
			break
		}
		q[p], q[i] = q[i], q[p]
		i = p
	}
	*h = q
}

// popReady removes the waiters whose operation lies before index k and
// calls ready with their rank index, lowest operation index first.
func (h *waitHeap) popReady(k uint32, ready func(ri int32)) {
	q := *h
	for len(q) > 0 && q[0].need < k {
		ready(q[0].ri)
		last := len(q) - 1
		q[0] = q[last]
		q = q[:last]
		for i := 0; ; {
			l := 2*i + 1
			if l >= len(q) {
				break
			}
			m := l
			if l+1 < len(q) && q[l+1].need < q[l].need {
				m = l + 1
			}
			if q[i].need <= q[m].need {
				break
			}
			q[i], q[m] = q[m], q[i]
			i = m
		}
	}
	*h = q
}
