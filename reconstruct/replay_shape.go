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

// graphShape sets res.Shape, and what ids and origins need: the ranks,
// each one's first operation's id and first collective's place, and the
// time its picture measures from.
func (e *engine) graphShape(res *ReplayResult) {
	s := &res.Shape
	s.Size = e.size
	s.Collectives = int(e.nrecs)
	s.Messages = e.shape.messages
	s.Edges = e.shape.crossEdges + e.shape.nbCalls
	s.IDs = !e.shape.unordered
	res.ranks = make([]int, len(e.ranks))
	res.opBase = make([]taskgraph.NodeID, len(e.ranks))
	res.collBefore = make([]uint32, len(e.ranks))
	res.origins = make([]int64, len(e.ranks))
	var colls uint32
	for i, r := range e.ranks {
		res.ranks[i] = r.rank
		res.opBase[i] = taskgraph.Finalize + 1 + taskgraph.NodeID(s.Ops)
		res.collBefore[i] = colls
		if e.shape.nlow != nil {
			colls += e.shape.nlow[i]
		}
		s.Ops += int(r.nops)
		blk := int(r.items - r.k)
		if r.nops > 0 || blk > 0 {
			s.Edges += int(r.nops) + blk + 1
		}
		// taskgraph's origin: the end of MPI_Init, or the first
		// operation's start when there is neither it nor a time for it.
		switch {
		case r.hasInit && r.hasFin || r.initRec != 0:
			res.origins[i] = r.initRec
		case r.nops > 0:
			res.origins[i] = r.firstStart
		}
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
