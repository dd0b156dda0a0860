package reconstruct

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// A Cut collects, during a streaming replay, the part of the task graph
// a picture of some ranks or a time window draws (mpitrace dot --ranks,
// --window): the operations of those ranks that start in the window,
// every edge that reaches or leaves one of them, the collectives and the
// shared vertices those edges join, and the chain edges between shared
// vertices of those ranks. It holds what the part holds, not the graph:
// the picture of a few ranks of a long run costs the memory of those
// ranks' operations in the window.
//
// The vertex ids are the graph's (taskgraph.Graph, as Build numbers
// them), known once the replay is done; Graph is then set. A replay
// that declines the trace, or whose ids are not the graph's
// (GraphShape.IDs), leaves it nil.
type Cut struct {
	// Ranks says which ranks are drawn; nil: all.
	Ranks func(rank int) bool
	// Window, when not nil, keeps the operations that start in
	// [Start, End) ns after their rank's origin (ReplayResult.Origin);
	// End 0: no end.
	Window *CutWindow

	// Max, when above 0, is the most operations the part may draw: past
	// it, the replay stops collecting and Graph says the part is over.
	Max int

	// Graph is the part, set by the replay.
	Graph *CutGraph

	ranks   []cutRank // by rank index
	ops     []cutOp
	edges   []cutEdge
	pending []cutEdge // with a window: chain edges between collectives, kept until they can be dropped
	pruned  int       // len(pending) after the last prune
	track   map[*sinst]*cutTrack
	colls   map[*sinst]bool
	sure    int  // candidate operations drawn whatever their rank's origin
	over    bool // more than Max of them
}

// CutWindow is a Cut's window, in ns.
type CutWindow struct{ Start, End int64 }

func (w *CutWindow) contains(t int64) bool { return t >= w.Start && (w.End == 0 || t < w.End) }

// CutGraph is the part of the graph a Cut collected.
type CutGraph struct {
	// Ops are the operations drawn, by rank then id.
	Ops []CutOp
	// Colls are the collectives the edges join, by id.
	Colls []CutColl
	// Edges are the edges that reach or leave an operation of the part,
	// and the chain edges between shared vertices of its ranks that may
	// be drawn, in the order Graph.Edges yields them: what a picture
	// draws of the part is among them (render.WriteCutDOT chooses).
	Edges []CutEdge
	// InitName and FinalizeName are the shared vertices' names.
	InitName, FinalizeName string
	// Over says the part has more than Cut.Max operations: it holds
	// nothing else.
	Over bool
}

// CutOp is an operation of a CutGraph: as taskgraph.Node has it, and its
// index among its rank's operations.
type CutOp struct {
	ID         taskgraph.NodeID
	Rank       int
	Index      uint32
	Name       string
	Start, End int64
	Bytes      int64
	Site       uint32
	Origin     int64 // its rank's (ReplayResult.Origin)
}

// CutColl is a collective instance of a CutGraph.
type CutColl struct {
	ID           taskgraph.NodeID
	Name         string
	Procs        int
	Participants int
	Bytes        int64
	Nonblocking  bool
	SiteRank     int
	Site         uint32
}

// CutEdge is an edge of a CutGraph and the ranks of its ends (-1 for a
// shared vertex).
type CutEdge struct {
	taskgraph.Edge
	FromRank, ToRank int
}

// cutEnd is an end of an edge while the replay goes: an operation (rank
// index and local index), a collective instance, MPI_Init or
// MPI_Finalize.
type cutEnd struct {
	kind uint8 // posInit, posOp, posPart (a collective), posFin
	ri   int32
	op   uint32
	in   *sinst
}

// cutEdge is an edge while the replay goes; class, a and b order the
// edges that leave one vertex as Graph.Out does: its chain edge (0; from
// a collective, by its member's rank index a), its posts of nonblocking
// collectives (1, in order a), its cross edges (2, by the receiving
// rank's index a and operation b).
type cutEdge struct {
	kind     taskgraph.EdgeKind
	from, to cutEnd
	rank     int
	weight   int64
	bytes    int64
	class    uint8
	a        int32
	b        uint32
}

// cutOp is a candidate operation: one of a rank drawn that starts in the
// window from some origin its rank may have.
type cutOp struct {
	ri    int32
	op    uint32
	name  taskgraph.NameID
	start int64
	end   int64
	bytes uint64
	site  uint32
}

// cutRank is a rank's place on its chain.
type cutRank struct {
	prev     cutEnd // kind 0: none yet (MPI_Init)
	posts    int32  // nonblocking posts by the current operation
	keep     int8   // 0: not asked yet, 1: drawn, -1: not
	prevCand bool   // prev is a candidate operation
}

// cutTrack is, with a window, an instance whose chain edges to other
// instances may wait: kept once joined to a candidate operation, dropped
// once no operation can join it any more (every member's chain has
// passed its blocking call, every nonblocking call has completed).
type cutTrack struct {
	kept      bool
	passed    int32 // blocking members whose chain went on
	nb        int32 // nonblocking calls
	completed int32 // of them, completed by an operation
}

func (c *Cut) init(ranks int) {
	c.ranks = make([]cutRank, ranks)
	c.colls = make(map[*sinst]bool)
	if c.Window != nil {
		c.track = make(map[*sinst]*cutTrack)
	}
}

// drawn says whether the rank of r is drawn.
func (c *Cut) drawn(r *streamRank) bool {
	cr := &c.ranks[r.idx]
	if cr.keep == 0 {
		cr.keep = -1
		if c.Ranks == nil || c.Ranks(r.rank) {
			cr.keep = 1
		}
	}
	return cr.keep > 0
}

// candidate says whether an operation of r that started at start may be
// drawn: its rank is, and it starts in the window from the origin its
// rank has, or from either of the two it may have (a rank whose MPI_Init
// ended at 0 measures from it if it reaches MPI_Finalize, else from its
// first operation's start, as rankShape); and whether it will be drawn
// whichever that origin is.
func (c *Cut) candidate(r *streamRank, start int64) (cand, sure bool) {
	if !c.drawn(r) {
		return false, false
	}
	w := c.Window
	switch {
	case w == nil:
		return true, true
	case r.initRec != 0:
		in := w.contains(start - r.initRec)
		return in, in
	case !r.hasInit:
		in := w.contains(start - r.firstStart)
		return in, in
	}
	a, b := w.contains(start), w.contains(start-r.firstStart)
	return a || b, a && b
}

// senderCand says whether the sending operation of rank r that started
// at start may be drawn.
func (c *Cut) senderCand(r *streamRank, start int64) bool {
	cand, _ := c.candidate(r, start)
	return cand
}

func opEnd(r *streamRank, k uint32) cutEnd { return cutEnd{kind: posOp, ri: r.idx, op: k} }

func (c *Cut) add(e cutEdge) {
	for _, x := range [2]cutEnd{e.from, e.to} {
		if x.kind == posPart {
			c.colls[x.in] = true
		}
	}
	c.edges = append(c.edges, e)
}

// trackOf returns in's track (with a window).
func (c *Cut) trackOf(in *sinst) *cutTrack {
	t := c.track[in]
	if t == nil {
		t = &cutTrack{}
		c.track[in] = t
	}
	return t
}

// pass: a member's chain leaves blocking instance in, to a candidate
// operation or not.
func (c *Cut) pass(in *sinst, toCand bool) {
	if c.track == nil {
		return
	}
	t := c.trackOf(in)
	t.passed++
	c.settle(in, t, toCand)
}

// completed: an operation completes a nonblocking call of instance in, a
// candidate operation or not.
func (c *Cut) completed(in *sinst, cand bool) {
	if c.track == nil {
		return
	}
	t := c.trackOf(in)
	t.completed++
	c.settle(in, t, cand)
}

// settle drops in's track once nothing can join in to a candidate
// operation (a call never completed keeps it to the end).
func (c *Cut) settle(in *sinst, t *cutTrack, cand bool) {
	if cand {
		t.kept = true
	}
	if in.done && !t.kept && int(t.passed) >= in.arrived-int(t.nb) && t.completed >= t.nb {
		delete(c.track, in)
	}
}

// join: a candidate operation is joined to instance in.
func (c *Cut) join(in *sinst) {
	if c.track != nil {
		c.trackOf(in).kept = true
	}
}

// shared adds a chain edge between shared vertices of a rank drawn.
func (c *Cut) shared(e cutEdge) {
	if c.track == nil {
		c.add(e)
		return
	}
	for _, x := range [2]cutEnd{e.from, e.to} {
		if x.kind == posPart && c.track[x.in] == nil {
			return // dropped: no candidate joins it
		}
	}
	c.pending = append(c.pending, e)
	if len(c.pending) >= max(cutPruneMin, 2*c.pruned) {
		c.pending = slices.DeleteFunc(c.pending, func(e cutEdge) bool {
			return e.from.kind == posPart && c.track[e.from.in] == nil || e.to.kind == posPart && c.track[e.to.in] == nil
		})
		c.pruned = len(c.pending)
	}
}

// cutPruneMin is how many chain edges between collectives a Cut with a
// window holds before it drops those it can (a variable for the tests).
var cutPruneMin = 4096

// The replay's hooks (engine.replayRank, finishReplay).

// chain is the chain edge of rank r from its previous element to next.
func (c *Cut) chain(r *streamRank, next cutEnd, nextCand bool, kind uint8, w int64) {
	cr := &c.ranks[r.idx]
	prev := cr.prev
	if prev.kind == 0 {
		prev = cutEnd{kind: posInit}
	}
	if prev.kind == posPart {
		c.pass(prev.in, nextCand)
	}
	if c.drawn(r) {
		// From MPI_Init and from a collective, by the rank's index.
		e := cutEdge{kind: chainKindOf(prev.kind, kind), from: prev, to: next, rank: r.rank, weight: w, a: r.idx}
		switch {
		case nextCand || cr.prevCand:
			if next.kind == posPart {
				c.join(next.in) // from a candidate (to one: pass)
			}
			c.add(e)
		case prev.kind != posOp && kind != posOp:
			c.shared(e)
		}
	}
	cr.prev, cr.prevCand, cr.posts = next, nextCand, 0
}

// part: rank r reaches its call of blocking instance in, its chain edge
// weighing w.
func (c *Cut) part(r *streamRank, in *sinst, w int64) {
	if c.over {
		return
	}
	if c.track != nil {
		c.trackOf(in)
	}
	c.chain(r, cutEnd{kind: posPart, in: in}, false, posPart, w)
}

// cutOp passes operation k of rank r, o, to the cut; paired says it
// received a message.
func (e *engine) cutOp(r *streamRank, k uint32, o *sop, paired bool) {
	var m *smsg
	if paired {
		m = o.in.msg
	}
	var nb *sinst
	if o.collIn != nil {
		nb = o.collIn.in
	}
	e.cut.op(r, k, o, r.chainW(r.lastKind, r.lastEnd, posOp, o.start), m, nb)
}

// op: rank r replays its operation k, its chain edge weighing w; m is the
// message it received (nil: none), nb the nonblocking instance it
// completed (nil: none).
func (c *Cut) op(r *streamRank, k uint32, o *sop, w int64, m *smsg, nb *sinst) {
	if c.over {
		return
	}
	cand, sure := c.candidate(r, o.ostart)
	to := opEnd(r, k)
	if cand {
		if sure {
			if c.sure++; c.Max > 0 && c.sure > c.Max {
				c.over = true
				c.ranks, c.ops, c.edges, c.pending, c.track, c.colls = nil, nil, nil, nil, nil, nil
				return
			}
		}
		c.ops = append(c.ops, cutOp{ri: r.idx, op: k, name: o.name, start: o.ostart, end: o.oend, bytes: o.bytes, site: o.site})
	}
	c.chain(r, to, cand, posOp, w)
	if m != nil && (cand || c.senderCand(r.e.ranks[m.from], m.start)) {
		c.add(cutEdge{kind: taskgraph.Message, from: cutEnd{kind: posOp, ri: m.from, op: m.node}, to: to, rank: r.rank,
			bytes: int64(min(m.bytes, 1<<63-1)), class: 2, a: r.idx, b: k})
	}
	if nb != nil {
		c.completed(nb, cand)
	}
	if nb != nil && cand {
		c.add(cutEdge{kind: taskgraph.CollOut, from: cutEnd{kind: posPart, in: nb}, to: to, rank: r.rank, class: 2, a: r.idx, b: k})
	}
}

// post: rank r's operation k posted nonblocking instance in.
func (c *Cut) post(r *streamRank, k uint32, in *sinst) {
	if c.over {
		return
	}
	cr := &c.ranks[r.idx]
	if c.track != nil {
		c.trackOf(in).nb++
	}
	if cr.prevCand {
		c.join(in)
		c.add(cutEdge{kind: taskgraph.CollIn, from: opEnd(r, k), to: cutEnd{kind: posPart, in: in}, rank: r.rank, class: 1, a: cr.posts})
	}
	cr.posts++
}

// fin: rank r's chain ends at MPI_Finalize, its edge weighing w.
func (c *Cut) fin(r *streamRank, w int64) {
	if c.over {
		return
	}
	c.chain(r, cutEnd{kind: posFin}, false, posFin, w)
}

// finish resolves the part's ids once the replay is done and its shape
// known.
func (c *Cut) finish(e *engine, res *ReplayResult) error {
	if !res.Shape.IDs {
		return nil
	}
	if c.over {
		c.Graph = &CutGraph{Over: true}
		return nil
	}
	e.names.mu.Lock()
	names := slices.Clip(e.names.names)
	e.names.mu.Unlock()
	name := func(n taskgraph.NameID) string {
		if int(n) < len(names) {
			return names[n]
		}
		return ""
	}
	g := &CutGraph{InitName: res.names[res.sharedName(e.initName())], FinalizeName: res.names[res.sharedName(nameFinalize)]}
	// The operations in the window from their rank's origin, now known.
	for _, o := range c.ops {
		org := res.origins[o.ri]
		if c.Window != nil && !c.Window.contains(o.start-org) {
			continue
		}
		r := e.ranks[o.ri]
		id := res.opID(int(o.ri), o.op)
		g.Ops = append(g.Ops, CutOp{ID: id, Rank: r.rank, Index: o.op, Name: name(o.name), Start: o.start, End: o.end,
			Bytes: int64(min(o.bytes, 1<<63-1)), Site: o.site, Origin: org})
	}
	c.ops = nil
	slices.SortFunc(g.Ops, func(a, b CutOp) int { return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.ID, b.ID)) })
	// The collectives.
	ids := make(map[*sinst]taskgraph.NodeID, len(c.colls))
	for in := range c.colls {
		if !in.done {
			continue
		}
		ir, err := e.inst(int32(in.id))
		if err != nil {
			return err
		}
		id := res.collID(e.index(int(ir.low)), ir)
		ids[in] = id
		g.Colls = append(g.Colls, CutColl{ID: id, Name: name(ir.name), Procs: int(ir.procs), Participants: int(ir.parts), Bytes: ir.bytes,
			Nonblocking: ir.nb, SiteRank: int(ir.low), Site: ir.lowSite})
	}
	c.colls = nil
	slices.SortFunc(g.Colls, func(a, b CutColl) int { return cmp.Compare(a.ID, b.ID) })
	// The edges, with ids.
	type keyed struct {
		CutEdge
		class uint8
		a     int32
		b     uint32
	}
	resolve := func(x cutEnd) (taskgraph.NodeID, int, bool) {
		switch x.kind {
		case posInit:
			return taskgraph.Init, -1, true
		case posFin:
			return taskgraph.Finalize, -1, true
		case posOp:
			return res.opID(int(x.ri), x.op), e.ranks[x.ri].rank, true
		}
		id, ok := ids[x.in]
		return id, -1, ok
	}
	var all []keyed
	for _, l := range [2][]cutEdge{c.edges, c.pending} {
		for _, ce := range l {
			from, fr, ok1 := resolve(ce.from)
			to, tr, ok2 := resolve(ce.to)
			if !ok1 || !ok2 {
				continue
			}
			all = append(all, keyed{CutEdge{taskgraph.Edge{Kind: ce.kind, From: from, To: to, Rank: ce.rank, Weight: ce.weight, Bytes: ce.bytes}, fr, tr},
				ce.class, ce.a, ce.b})
		}
	}
	c.edges, c.pending, c.track = nil, nil, nil
	slices.SortFunc(all, func(x, y keyed) int {
		return cmp.Or(cmp.Compare(x.From, y.From), cmp.Compare(x.class, y.class), cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b))
	})
	g.Edges = make([]CutEdge, len(all))
	for i := range all {
		g.Edges[i] = all[i].CutEdge
		if i > 0 && all[i].From == all[i-1].From && all[i].To == all[i-1].To && all[i].Kind == all[i-1].Kind && all[i].Rank == all[i-1].Rank {
			return fmt.Errorf("internal error: reconstruct: the part of the graph has edge %v twice", all[i].Edge)
		}
	}
	c.Graph = g
	return nil
}
