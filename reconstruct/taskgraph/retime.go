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

// Retimed returns a copy of g with other times: the same nodes and edges,
// computation edges weighing the new times' differences. It copies the
// operations (16 bytes each) and the collective participations; the rest
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
	ng.ranks = make([]rankData, len(g.ranks))
	for ri := range g.ranks {
		d := g.ranks[ri] // shares the links; the operations are rebuilt
		old := &g.ranks[ri].ops
		d.ops = opStore{}
		for i := uint32(0); int(i) < old.n; i++ {
			s, e := t.Op(d.base+NodeID(i), old.start(i), old.end(i))
			d.ops.add(s, e, uint64(old.bytes(i)), old.event(i), old.name(i))
		}
		if d.hasInit {
			d.initEnd = t.InitEnd(g.index.rank(ri), d.initEnd)
		}
		ng.ranks[ri] = d
	}
	return ng
}

// OpTimes returns operation v's call times on its rank's clock.
func (g *Graph) OpTimes(v NodeID) (start, end int64) {
	d := &g.ranks[g.indexOf(v)]
	i := uint32(v - d.base)
	return d.ops.start(i), d.ops.end(i)
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
