package taskgraph

// Times gives the times of a retimed graph (Graph.Retimed). Every method
// is given the original times and returns the new ones.
type Times interface {
	// Op is operation v's call (start, end on its rank's clock).
	Op(v NodeID, start, end int64) (newStart, newEnd int64)
	// Part is rank's call of collective v (blocking), or its posting
	// operation's times (nonblocking).
	Part(v NodeID, rank int, start, end int64) (newStart, newEnd int64)
	// InitEnd is the end of rank's MPI_Init.
	InitEnd(rank int, end int64) int64
}

// RankTimes are Times that retime a rank's operations at once: Retimed
// calls RankOps once per rank with operations, in increasing rank order
// (after every Part), instead of Op once per operation. RankOps must call
// set.Set once for each of the rank's operations, in program order.
type RankTimes interface {
	Times
	RankOps(ops RankView, set *OpSetter)
}

// Retimed returns a copy of g with other times: the same nodes and edges,
// computation edges weighing the new times' differences. It copies the
// operations' times (8 bytes an operation) and the collective
// participations; the rest, the operations' bytes, events and names too,
// is shared with g. Ranks without MPI_Init keep their weight-0 edge from
// it, ranks without MPI_Finalize theirs to it.
func (g *Graph) Retimed(t Times) *Graph {
	ng := &Graph{size: g.size, names: g.names, opNames: g.opNames, initName: g.initName, finName: g.finName,
		index: g.index, numOps: g.numOps, collBase: g.collBase, colls: g.colls,
		sendBits: g.sendBits, sendRank: g.sendRank, numSenders: g.numSenders, partBits: g.partBits, rankIdx: g.rankIdx}
	ng.parts = make([]participant, len(g.parts))
	for j, pt := range g.parts {
		pt.start, pt.end = t.Part(g.collBase+NodeID(pt.coll), g.index.rank(int(pt.ri)), pt.start, pt.end)
		ng.parts[j] = pt
	}
	rt, _ := t.(RankTimes)
	ng.ranks = make([]rankData, len(g.ranks))
	for ri := range g.ranks {
		d := g.ranks[ri] // shares the links; the operations' times are new
		old := &g.ranks[ri].ops
		set := OpSetter{old: old, s: &d.ops}
		d.ops = opStore{chunks: make([]opChunk, 0, len(old.chunks)), bigBytes: old.bigBytes, bigEv: old.bigEv}
		switch {
		case old.n == 0:
		case rt != nil:
			rt.RankOps(RankView{g: g, d: &g.ranks[ri], ri: ri}, &set)
		default:
			for i := uint32(0); int(i) < old.n; i++ {
				set.Set(t.Op(d.base+NodeID(i), old.start(i), old.end(i)))
			}
		}
		if d.ops.n != old.n {
			panic("taskgraph: Retimed: RankOps did not set every operation of the rank")
		}
		if d.hasInit {
			d.initEnd = t.InitEnd(g.index.rank(ri), d.initEnd)
		}
		ng.ranks[ri] = d
	}
	return ng
}

// OpSetter sets the new times of one rank's operations, in program order
// (RankTimes).
type OpSetter struct {
	old, s *opStore
}

// Set sets the times of the rank's next operation. The operation keeps
// its bytes, event and name, which the new store shares with the old.
func (w *OpSetter) Set(start, end int64) {
	s := w.s
	i := uint32(s.n)
	j := i & chunkMask
	if j == 0 || int(i) >= w.old.n {
		w.newChunk(start)
	}
	c := &s.chunks[i>>chunkBits]
	if d, e := start-c.base, end-start; c.wide == nil && uint64(d) <= maxU32 && uint64(e) < maxU32 {
		c.start[j], c.dur[j] = uint32(d), uint32(e)
	} else {
		s.setTimes(c, i, start, end)
	}
	s.n++
}

// newChunk starts the chunk of the next operation, whose start is start
// (Set).
func (w *OpSetter) newChunk(start int64) {
	s := w.s
	i := uint32(s.n)
	if int(i) >= w.old.n {
		panic("taskgraph: OpSetter.Set: more operations than the rank has")
	}
	oc := &w.old.chunks[i>>chunkBits]
	n := min(len(oc.dur), w.old.n-int(i))
	u := make([]uint32, 2*n)
	s.chunks = append(s.chunks, opChunk{start: u[:n:n], dur: u[n:], bytes: oc.bytes, ev: oc.ev, name: oc.name,
		base: start, evBase: oc.evBase})
}

// RankView reads one rank's operations by their index on the rank (0,
// 1, ...: node ids Base()+i) and its incoming cross edges, without the
// search for the rank that the Graph's methods by node id make.
type RankView struct {
	g  *Graph
	d  *rankData
	ri int
}

// RankView returns the view of rank r; ok is false when the graph holds
// no operations for r.
func (g *Graph) RankView(r int) (v RankView, ok bool) {
	ri, ok := g.index.find(r)
	if !ok {
		return RankView{}, false
	}
	return RankView{g: g, d: &g.ranks[ri], ri: ri}, true
}

// Rank returns the view's world rank.
func (v RankView) Rank() int { return v.g.index.rank(v.ri) }

// Base returns the node id of the rank's first operation.
func (v RankView) Base() NodeID { return v.d.base }

// Len returns the number of the rank's operations.
func (v RankView) Len() int { return v.d.ops.n }

// Times returns operation i's call times (OpTimes).
func (v RankView) Times(i int) (start, end int64) { return v.d.ops.times(uint32(i)) }

// Start returns operation i's start.
func (v RankView) Start(i int) int64 { return v.d.ops.start(uint32(i)) }

// Event returns the index of operation i's event in the rank's stream
// (OpEvent).
func (v RankView) Event(i int) int64 { return v.d.ops.event(uint32(i)) }

// Name returns operation i's function name and its index in Names()
// (Describe).
func (v RankView) Name(i int) (name string, nameIdx int) {
	fn := v.g.opNames[v.d.ops.name(uint32(i))].fn
	return v.g.names[fn], int(fn)
}

// Site returns operation i's call-site id (OpSite).
func (v RankView) Site(i int) uint32 { return v.d.sites.get(v.d.ops.event(uint32(i))) }

// Sends reports whether operation i sends a message (is the source of a
// Message edge).
func (v RankView) Sends(i int) bool {
	o := uint32(v.d.base-firstOp) + uint32(i)
	return v.g.sendBits[o>>6]&(1<<(o&63)) != 0
}

// CrossIn returns the rank's incoming cross edges, in the order
// RankCrossIn yields them: to[x] is the index on the rank of the
// operation edge x reaches, increasing, from[x] the node it comes from (a
// sending operation, or a nonblocking collective). Do not modify them.
func (v RankView) CrossIn() (to []uint32, from []NodeID) { return v.d.xTo, v.d.xFrom }

// OpTimes returns operation v's call times on its rank's clock.
func (g *Graph) OpTimes(v NodeID) (start, end int64) {
	d := &g.ranks[g.indexOf(v)]
	return d.ops.times(uint32(v - d.base))
}

// CrossInIndex returns, for an operation v with an incoming cross edge,
// its rank and the edge's index in the rank's CrossIn; ok is false when
// v has none.
func (g *Graph) CrossInIndex(v NodeID) (rank, x int, ok bool) {
	if g.Kind(v) != KindOp {
		return -1, 0, false
	}
	ri := g.indexOf(v)
	d := &g.ranks[ri]
	x = searchU32(d.xTo, uint32(v-d.base))
	if x == len(d.xTo) || d.xTo[x] != uint32(v-d.base) {
		return -1, 0, false
	}
	return g.index.rank(ri), x, true
}

// RankEnds returns the end of rank r's MPI_Init and the start of its
// MPI_Finalize on its clock, each with whether the rank has it.
func (g *Graph) RankEnds(r int) (initEnd int64, hasInit bool, finalizeStart int64, hasFinalize bool) {
	i, ok := g.index.find(r)
	if !ok {
		return 0, false, 0, false
	}
	d := &g.ranks[i]
	return d.initEnd, d.hasInit, d.finStart, d.hasFin
}

// IsNonblocking reports whether collective v is a nonblocking one.
func (g *Graph) IsNonblocking(v NodeID) bool {
	return g.Kind(v) == KindCollective && g.colls[v-g.collBase].nonblocking
}

// CollectiveRoot returns the world rank of collective v's root; ok is
// false when v is not a collective, has no root or its root is not known.
func (g *Graph) CollectiveRoot(v NodeID) (root int, ok bool) {
	if g.Kind(v) != KindCollective || g.colls[v-g.collBase].root < 0 {
		return -1, false
	}
	return int(g.colls[v-g.collBase].root), true
}

// OpRankStart returns operation v's start on its rank's clock, and the
// index of its rank in Ranks().
func (g *Graph) OpRankStart(v NodeID) (rankIdx int, start int64) {
	ri := g.indexOf(v)
	d := &g.ranks[ri]
	return ri, d.ops.start(uint32(v - d.base))
}
