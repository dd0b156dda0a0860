package critpath

import (
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// StepPath is a critical path read as its steps, from MPI_Init to
// MPI_Finalize: each vertex with the edge into it, as the streaming
// replay gives them (reconstruct.ReplayStep). critPath.out, the summary
// and its call sites, loops and regions are made from it in one or two
// passes over the steps, in memory that does not grow with the path: the
// same code for a path of the task graph (Path.StepPath) and for one the
// replay found without the graph (ReplayPath).
type StepPath struct {
	// Length is the path's weight in ns.
	Length float64
	// Weights says how the path was weighed.
	Weights Weighting
	// NumSteps is the number of vertices on the path.
	NumSteps int
	// RunTime is the measured run: the largest, over the ranks with both,
	// time from the end of MPI_Init to the start of MPI_Finalize on the
	// rank's clock (Summary.Measured).
	RunTime int64
	// Shape is, for a path the replay found, what the task graph of the
	// trace would hold (and whether the steps' ID are its ids); nil for
	// the path of a graph, whose ids the steps carry.
	Shape *reconstruct.GraphShape

	each func(func(*reconstruct.ReplayStep) error) error
	// colls, when set, is each for the collective vertices alone, with
	// their indices on the path (cheaper than each on a graph's path).
	colls func(func(i int, st *reconstruct.ReplayStep) error) error
	w     *weigher // the fits of the model's collectives
	// tables returns the ranks' call-site tables (those that have one).
	tables func() map[int]*tracefmt.Sites
	p      *Path                     // the path of the graph read, nil for a replay's
	res    *reconstruct.ReplayResult // the replay's, nil for a graph's
	run    func(measured int64) *RunInfo
}

// Steps calls fn for each step of the path in order; it stops at fn's
// first error. The step is fn's only during the call.
func (sp *StepPath) Steps(fn func(*reconstruct.ReplayStep) error) error { return sp.each(fn) }

// collectives calls fn for each collective vertex of the path, in order,
// with its index on the path.
func (sp *StepPath) collectives(fn func(i int, st *reconstruct.ReplayStep) error) error {
	if sp.colls != nil {
		return sp.colls(fn)
	}
	i := 0
	return sp.Steps(func(st *reconstruct.ReplayStep) error {
		i++
		if st.Kind != taskgraph.KindCollective {
			return nil
		}
		return fn(i-1, st)
	})
}

// RunInfo returns what the measured weights found of the run (nil for a
// path under the model's weights), as Path.RunInfo.
func (sp *StepPath) RunInfo(measured int64) *RunInfo {
	if sp.run == nil {
		return nil
	}
	return sp.run(measured)
}

// Fit is the fit the model used for collective step st ("measured" under
// measured weights).
func (sp *StepPath) Fit(st *reconstruct.ReplayStep) string {
	if sp.Weights == WeightsMeasured {
		return "measured"
	}
	return sp.w.collOf(taskgraph.CollectiveInfo{Name: st.Name, Bytes: st.Bytes, Procs: st.Procs}).used
}

// HopWeight is the share of the path of the edge into st: a cross edge's
// weight (a message's, a nonblocking collective's fan-out), else the
// edge's measured time.
func HopWeight(st *reconstruct.ReplayStep) float64 {
	if st.In.Kind == taskgraph.Message || st.Cross && st.In.Kind == taskgraph.CollOut {
		return st.In.Cross
	}
	return float64(st.In.Weight)
}

// StepPath returns p read as its steps.
func (p *Path) StepPath() *StepPath {
	return &StepPath{Length: p.Length, Weights: p.Weights, NumSteps: p.NumVertices(), RunTime: RunTime(p.orig), p: p,
		each: p.steps, colls: p.collSteps, w: p.w, run: func(measured int64) *RunInfo { return p.RunInfo(measured) },
		tables: func() map[int]*tracefmt.Sites {
			m := map[int]*tracefmt.Sites{}
			for _, r := range p.g.Ranks() {
				if t := p.g.RankSites(r); t.Len() > 0 {
					m[r] = t
				}
			}
			return m
		}}
}

// collSteps describes p's collective vertices as steps does.
func (p *Path) collSteps(fn func(i int, st *reconstruct.ReplayStep) error) error {
	for i := 0; i < p.NumVertices(); i++ {
		if p.g.Kind(p.p.Node(i)) != taskgraph.KindCollective {
			continue
		}
		if err := p.step(i, fn); err != nil {
			return err
		}
	}
	return nil
}

// RunTime is the measured run of g: the largest, over the ranks with both,
// time from the end of MPI_Init to the start of MPI_Finalize on the rank's
// clock (taskgraph.Graph.RankSpan).
func RunTime(g *taskgraph.Graph) int64 {
	var run int64
	for _, r := range g.Ranks() {
		if a, b, ok := g.RankSpan(r); ok {
			run = max(run, b-a)
		}
	}
	return run
}

// steps describes p's vertices as the replay does.
func (p *Path) steps(fn func(*reconstruct.ReplayStep) error) error {
	each := func(_ int, st *reconstruct.ReplayStep) error { return fn(st) }
	for i := 0; i < p.NumVertices(); i++ {
		if err := p.step(i, each); err != nil {
			return err
		}
	}
	return nil
}

var noEvent = taskgraph.EventRef{Rank: -1, Index: -1, Completion: -1}

// step describes vertex i of p, and the edge into it, to fn.
func (p *Path) step(i int, fn func(int, *reconstruct.ReplayStep) error) error {
	g := p.g
	v := p.p.Node(i)
	kind, rank, name, _ := g.Describe(v)
	st := &p.st // one for all: fn keeps none
	*st = reconstruct.ReplayStep{Kind: kind, Name: name, Rank: rank, Event: noEvent, ID: v}
	st.SiteRank, st.Site = VertexSite(g, v)
	if i > 0 {
		e := p.p.Edge(i - 1)
		st.In = reconstruct.ReplayEdge{Kind: e.Kind, Rank: e.Rank, Weight: e.Weight, Bytes: e.Bytes, End: g.EdgeEnd(e)}
		switch {
		case e.Kind == taskgraph.Message:
			st.Cross, st.MsgBytes = true, e.Bytes
			st.In.Cross, st.In.Weight = p.w.edge(&e), 0
		case e.Kind == taskgraph.CollOut && crossEdge(g, e.From, e.To):
			// A nonblocking collective's fan-out to a call completing it.
			st.Cross = true
			st.In.Cross = p.w.Cross(e.From, e.To, 0)
		default:
			// A chain edge: its weight on the times as recorded, and how
			// much the call it leaves moved.
			st.In.Orig = origChain(p.orig, e.From, e.To, e.Rank)
			_, oe := nodeTimes(p.orig, e.From, e.Rank)
			_, re := nodeTimes(g, e.From, e.Rank)
			st.In.FromShift = oe - re
		}
		st.In.FromSite, st.In.FromEvent = partOf(g, e.From, e.Rank)
		st.In.ToSite, st.In.ToEvent = partOf(g, e.To, e.Rank)
	}
	switch kind {
	case taskgraph.KindOp:
		n := g.Node(v)
		st.Event, st.Start, st.End, st.Bytes = n.Event, n.Start, n.End, n.Bytes
	case taskgraph.KindCollective:
		n := g.Node(v)
		st.Start, st.End, st.Bytes = n.Start, n.End, n.Bytes
		st.GID, st.Procs, st.Participants, st.Nonblocking = n.GID, n.Procs, n.Participants, n.Nonblocking
		st.Weight = p.w.coll(v).ns
	}
	return fn(i, st)
}

// partOf is the call site and event of rank r's call of v when v is a
// collective r takes part in; 0, -1 otherwise.
func partOf(g *taskgraph.Graph, v taskgraph.NodeID, r int) (site uint32, ev int64) {
	if g.Kind(v) != taskgraph.KindCollective {
		return 0, -1
	}
	ev, ok := g.PartEvent(v, r)
	if !ok {
		return 0, -1
	}
	return g.PartSite(v, r), ev
}

// crossEdge reports whether from -> to is a cross edge of g: a message, or
// a nonblocking collective's fan-out to a call that completes it.
func crossEdge(g *taskgraph.Graph, from, to taskgraph.NodeID) bool {
	r, x, ok := g.CrossInIndex(to)
	if !ok {
		return false
	}
	v, _ := g.RankView(r)
	_, froms := v.CrossIn()
	return froms[x] == from
}

// ReplayPath returns the path the streaming replay found (res, weighed by
// ModelWeights(m), or under measured weights by ReplayMeasured with the
// offsets of clocks) as its steps. Under measured weights the run's span,
// wait states and clamps come from res.Run.
func ReplayPath(res *reconstruct.ReplayResult, weights Weighting, m Model, clocks *Clocks) *StepPath {
	if m == nil {
		m = zeroModel{}
	}
	sp := &StepPath{Length: res.Length, Weights: weights, NumSteps: res.NumSteps, RunTime: res.RunTime, Shape: &res.Shape, res: res,
		each: res.Steps, colls: res.Collectives, w: &weigher{m: m, colls: make(map[taskgraph.CollectiveInfo]collW)},
		tables: func() map[int]*tracefmt.Sites {
			m := map[int]*tracefmt.Sites{}
			for r, t := range res.Sites() {
				if t.Len() > 0 {
					m[r] = t
				}
			}
			return m
		}}
	if weights == WeightsMeasured && res.Run != nil {
		r := res.Run
		sp.run = func(measured int64) *RunInfo {
			run := r.Span
			if run <= 0 {
				run = measured
			}
			info := &RunInfo{Span: r.Span, InitSkew: r.InitSkew, WaitStates: make([]WaitState, 0, len(r.Waits)),
				Clamped: Clamps{Messages: r.Messages, MessagesNS: r.MessagesNS, EarlyExits: r.EarlyExits, EarlyExitsNS: r.EarlyExitsNS}}
			if clocks != nil {
				info.ClockErr = clocks.MaxErr()
			}
			for _, x := range r.Waits {
				ws := WaitState{State: x.State, Rank: x.Rank, Function: x.Function, SiteID: x.Site, Count: x.Count, Time: x.Time}
				if run > 0 {
					ws.Share = float64(x.Time) / float64(run)
				}
				info.WaitStates = append(info.WaitStates, ws)
			}
			sortWaits(info.WaitStates)
			return info
		}
	}
	return sp
}
