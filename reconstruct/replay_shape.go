package reconstruct

import (
	"slices"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// GraphShape is what the task graph Build makes of a trace would hold,
// counted by the replay that makes none: what a picture of the path
// drawn without the graph says of the graph (render.WriteDOT's label and
// vertex names).
type GraphShape struct {
	Size        int // the world's ranks (taskgraph.Graph.Size)
	Ops         int // operations (NumOps)
	Collectives int // collective instances (NumCollectives)
	Messages    int // Message edges (NumMessages)
	Edges       int // all edges (as Graph.Edges yields them)
	// IDs says the steps' ID are the graph's vertex ids. It is false when
	// a nonblocking collective completed after a later one whose lowest
	// participant is the same rank: Build numbers them in that rank's
	// order of calls, which the replay then does not know.
	IDs bool
}

// NumNodes is the graph's vertex count (Graph.NumNodes).
func (s GraphShape) NumNodes() int { return 2 + s.Ops + s.Collectives }

// shapeCount is what the replay counts of the graph's shape as it goes.
type shapeCount struct {
	messages   int
	crossEdges int // messages and nonblocking collectives' completions
	nbCalls    int // nonblocking collective calls (a CollIn edge each)
	// nlow[i] counts the instances whose lowest participant is ranks[i];
	// lastLow[i] is that participant's event in the last of them.
	nlow      []uint32
	lastLow   []int64
	unordered bool
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

// lowIndex numbers a complete instance whose lowest participant is the
// rank of index li, whose call was event ev: its place among that rank's
// instances by call (Build's order of collectives).
func (c *shapeCount) lowIndex(li int, ev int64, ranks int) uint32 {
	if li < 0 {
		c.unordered = true
		return 0
	}
	if c.nlow == nil {
		c.nlow, c.lastLow = make([]uint32, ranks), make([]int64, ranks)
		for i := range c.lastLow {
			c.lastLow[i] = -1
		}
	}
	if ev < c.lastLow[li] {
		c.unordered = true
	}
	c.lastLow[li] = ev
	c.nlow[li]++
	return c.nlow[li] - 1
}

// rankShape is what the graph's shape and ids need of a rank (and the
// run time and MPI_Init's name): a replay in groups gathers them.
type rankShape struct {
	Rank   int
	Ops    uint32 // operations
	Blk    uint32 // blocking collective calls
	NLow   uint32 // instances whose lowest participant it is
	Origin int64  // its picture's origin
	Span   int64  // MPI_Init's end to MPI_Finalize's start, -1: not both
	Init   bool   // it called MPI_Init or MPI_Init_thread
	InitTh bool   // MPI_Init_thread
}

// rankShape returns rank r's shape (its index i).
func (e *engine) rankShape(i int, r *streamRank) rankShape {
	rs := rankShape{Rank: r.rank, Ops: r.nops, Blk: r.items - r.k, Span: -1}
	if e.shape.nlow != nil {
		rs.NLow = e.shape.nlow[i]
	}
	// taskgraph's origin: the end of MPI_Init, or the first operation's
	// start when there is neither it nor a time for it.
	switch {
	case r.hasInit && r.hasFin || r.initRec != 0:
		rs.Origin = r.initRec
	case r.nops > 0:
		rs.Origin = r.firstStart
	}
	if r.hasInit && r.hasFin {
		rs.Span = r.finStr - r.initRec
	}
	if r.p != nil {
		rs.Init, rs.InitTh = r.p.hasInit, r.p.initTh
	}
	return rs
}

// graphShape sets res.Shape, and what ids and origins need: the ranks,
// each one's first operation's id and first collective's place, and the
// time its picture measures from.
func (e *engine) graphShape(res *ReplayResult) {
	ranks := make([]rankShape, len(e.ranks))
	for i, r := range e.ranks {
		ranks[i] = e.rankShape(i, r)
	}
	shapeOf(res, e.size, ranks, int(e.nrecs), e.shape)
}

// shapeOf sets res.Shape and the ids from the ranks' shapes (by index)
// and the counts.
func shapeOf(res *ReplayResult, size int, ranks []rankShape, colls int, sh shapeCount) {
	s := &res.Shape
	s.Size = size
	s.Collectives = colls
	s.Messages = sh.messages
	s.Edges = sh.crossEdges + sh.nbCalls
	s.IDs = !sh.unordered
	res.ranks = make([]int, len(ranks))
	res.opBase = make([]taskgraph.NodeID, len(ranks))
	res.collBefore = make([]uint32, len(ranks))
	res.origins = make([]int64, len(ranks))
	var before uint32
	for i, r := range ranks {
		res.ranks[i] = r.Rank
		res.opBase[i] = taskgraph.Finalize + 1 + taskgraph.NodeID(s.Ops)
		res.collBefore[i] = before
		before += r.NLow
		s.Ops += int(r.Ops)
		if r.Ops > 0 || r.Blk > 0 {
			s.Edges += int(r.Ops) + int(r.Blk) + 1
		}
		res.origins[i] = r.Origin
		res.RunTime = max(res.RunTime, r.Span)
	}
	res.collBase = taskgraph.Finalize + 1 + taskgraph.NodeID(s.Ops)
}

// rankIndex returns the index of rank in res.ranks, -1 for none.
func (res *ReplayResult) rankIndex(rank int) int {
	i, ok := slices.BinarySearch(res.ranks, rank)
	if !ok {
		return -1
	}
	return i
}

// Origin is the time a picture of the graph measures rank's operations
// from (render's origin): the end of its MPI_Init, or its first
// operation's start.
func (res *ReplayResult) Origin(rank int) int64 {
	if i := res.rankIndex(rank); i >= 0 {
		return res.origins[i]
	}
	return 0
}

// opID is the graph's id of the operation of local index op of the rank
// of index ri.
func (res *ReplayResult) opID(ri int, op uint32) taskgraph.NodeID {
	return res.opBase[ri] + taskgraph.NodeID(op)
}

// collID is the graph's id of the instance ir.
func (res *ReplayResult) collID(lowIdx int, ir *instRec) taskgraph.NodeID {
	if lowIdx < 0 {
		return taskgraph.None
	}
	return res.collBase + taskgraph.NodeID(res.collBefore[lowIdx]+ir.lowIdx)
}

// FirstOp is the graph's id of rank's first operation (taskgraph.Graph's
// RankOps), taskgraph.None for a rank without a log.
func (res *ReplayResult) FirstOp(rank int) taskgraph.NodeID {
	if i := res.rankIndex(rank); i >= 0 {
		return res.opBase[i]
	}
	return taskgraph.None
}
