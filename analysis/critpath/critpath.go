// Package critpath finds the critical path of an MPI task graph: the
// longest weighted path from MPI_Init to MPI_Finalize, where computation
// edges weigh their measured time, message edges the latency model's
// one-way latency at the message's size, and collective vertices the
// model's time for the collective at (bytes per process, members). It
// writes the path in the critPath.out format and summarises it.
//
// The path never depends on clock agreement between ranks: computation
// edges are measured on one rank's clock, and everything that crosses
// ranks is weighted by the model.
package critpath

import (
	"errors"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// Model weighs messages and collectives in nanoseconds.
// *latency.Model (analysis/latency) satisfies it.
type Model interface {
	// P2P is the one-way latency of a point-to-point message of the
	// given size.
	P2P(bytes int64) float64
	// CollectiveOrFallback is the time of the named collective (as MPI
	// spells it) with bytes per process on procs processes, and the name
	// of the fit used.
	CollectiveOrFallback(name string, bytes int64, procs int) (ns float64, used string)
}

// Vertex is a node on the path.
type Vertex struct {
	ID   taskgraph.NodeID
	Kind taskgraph.NodeKind
	Name string // MPI function name
	Rank int    // -1 for MPI_Init, MPI_Finalize and collectives
	// Weight is the vertex's share of the path in ns: the model time of a
	// collective, 0 for any other vertex.
	Weight float64
	// Model is, for a collective, the fit the model used (its own name,
	// the one it falls back to, or "p2p").
	Model string
	// Bytes and Procs are a collective's model inputs.
	Bytes int64
	Procs int
}

// Hop is an edge on the path.
type Hop struct {
	Kind     taskgraph.EdgeKind
	From, To taskgraph.NodeID
	Rank     int // see taskgraph.Edge.Rank
	// Weight is the edge's share of the path in ns: the measured time of
	// a computation edge, the model latency of a message.
	Weight float64
	// Measured is a computation edge's measured time in ns.
	Measured int64
	// Bytes is a message's size.
	Bytes int64
}

// Path is a critical path: Vertex(0) is MPI_Init, Vertex(NumVertices()-1)
// MPI_Finalize, and Hop(i) leads from Vertex(i) to Vertex(i+1). It holds
// 11 bytes per vertex (a taskgraph.Path) and describes vertices and hops on
// demand, without allocating, so a path of millions of steps costs little
// more than its graph. It is not safe for concurrent use.
type Path struct {
	// Length is the path's weight in ns: its hops' and vertices' weights.
	Length float64
	// Weights says how the path was weighed.
	Weights Weighting

	g    *taskgraph.Graph // the graph the path was found in (retimed, for measured weights)
	orig *taskgraph.Graph // the graph as built
	w    *weigher
	p    *taskgraph.Path
	st   reconstruct.ReplayStep // the step StepPath's passes describe
}

// NumVertices returns the number of vertices on the path (its hops are
// one fewer).
func (p *Path) NumVertices() int { return p.p.Len() }

// Graph returns the graph the path was found in (for measured weights,
// the retimed copy: same vertices, call sites and edges).
func (p *Path) Graph() *taskgraph.Graph { return p.g }

// Vertex returns vertex i of the path.
func (p *Path) Vertex(i int) Vertex { return vertex(p.g, p.w, p.p.Node(i)) }

// Hop returns hop i of the path, from Vertex(i) to Vertex(i+1).
func (p *Path) Hop(i int) Hop {
	e := p.p.Edge(i)
	h := Hop{Kind: e.Kind, From: e.From, To: e.To, Rank: e.Rank, Weight: p.w.edge(&e), Bytes: e.Bytes}
	if e.Kind != taskgraph.Message {
		h.Measured = e.Weight
	}
	return h
}

// zeroModel weighs everything 0 (Compute with a nil model).
type zeroModel struct{}

func (zeroModel) P2P(int64) float64 { return 0 }
func (zeroModel) CollectiveOrFallback(name string, _ int64, _ int) (float64, string) {
	return 0, name
}

// weigher memoises model calls (a run uses few message sizes) and weighs
// the graph for taskgraph.Graph.Longest.
type weigher struct {
	g   *taskgraph.Graph
	m   Model
	p2p [256]struct {
		bytes int64
		ns    float64
		ok    bool
	}
	colls map[taskgraph.CollectiveInfo]collW
	meas  *measured // measured weights instead of the model's
}

type collW struct {
	ns   float64
	used string
}

func finite(x float64) float64 {
	if x != x || x < 0 || x > 1e300 {
		return 0
	}
	return x
}

// Message implements taskgraph.Weights.
func (w *weigher) Message(bytes int64) float64 {
	c := &w.p2p[uint64(bytes)*0x9E3779B97F4A7C15>>56]
	if !c.ok || c.bytes != bytes {
		c.bytes, c.ns, c.ok = bytes, finite(w.m.P2P(bytes)), true
	}
	return c.ns
}

// Collective implements taskgraph.Weights.
func (w *weigher) Collective(v taskgraph.NodeID) float64 { return w.coll(v).ns }

// Cross implements taskgraph.CrossWeights: the model weighs a message by
// its bytes and a nonblocking collective's fan-out 0.
func (w *weigher) Cross(from, to taskgraph.NodeID, bytes int64) float64 {
	if w.meas != nil {
		return w.meas.Cross(from, to, bytes)
	}
	if w.g.Kind(from) == taskgraph.KindCollective {
		return 0
	}
	return w.Message(bytes)
}

func (w *weigher) edge(e *taskgraph.Edge) float64 {
	if e.Kind == taskgraph.Message || w.meas != nil && e.Kind == taskgraph.CollOut && w.g.IsNonblocking(e.From) {
		return w.Cross(e.From, e.To, e.Bytes)
	}
	return float64(e.Weight)
}

func (w *weigher) coll(v taskgraph.NodeID) collW {
	ci, ok := w.g.Collective(v)
	if !ok {
		return collW{}
	}
	if w.meas != nil {
		return collW{ns: w.meas.Collective(v), used: "measured"}
	}
	return w.collOf(ci)
}

// collOf is the model's weight of a collective, and the fit it used.
func (w *weigher) collOf(ci taskgraph.CollectiveInfo) collW {
	if cw, ok := w.colls[ci]; ok {
		return cw
	}
	ns, used := w.m.CollectiveOrFallback(ci.Name, ci.Bytes, ci.Procs)
	cw := collW{ns: finite(ns), used: used}
	w.colls[ci] = cw
	return cw
}

// ErrEmpty is returned for a graph without operations.
var ErrEmpty = errors.New("the task graph has no operations: no path from MPI_Init to MPI_Finalize")

// Compute returns the longest weighted path from MPI_Init to MPI_Finalize
// (a nil model weighs messages and collectives 0; negative or NaN model
// times count as 0). It runs taskgraph.Graph.Longest: one visit of the
// graph in topological order, in time linear in its size and about 8
// bytes of memory per message, then a walk back from MPI_Finalize that
// keeps 11 bytes per vertex of the path; among equally long paths it
// prefers the chain edge to a message, the lowest participant of a
// collective and the lowest rank into MPI_Finalize. A cycle, which only
// inconsistent data makes, is a *taskgraph.CycleError naming a node on it.
func Compute(g *taskgraph.Graph, m Model) (*Path, error) {
	if m == nil {
		m = zeroModel{}
	}
	if g.NumOps() == 0 && g.NumCollectives() == 0 {
		return nil, ErrEmpty
	}
	w := &weigher{g: g, m: m, colls: make(map[taskgraph.CollectiveInfo]collW)}
	length, path, err := g.Longest(w)
	if err != nil {
		return nil, err
	}
	return &Path{Length: length, Weights: WeightsModel, g: g, orig: g, w: w, p: path}, nil
}

func vertex(g *taskgraph.Graph, w *weigher, v taskgraph.NodeID) Vertex {
	x := Vertex{ID: v}
	x.Kind, x.Rank, x.Name, _ = g.Describe(v)
	if x.Kind == taskgraph.KindCollective {
		ci, _ := g.Collective(v)
		cw := w.coll(v)
		x.Weight, x.Model, x.Bytes, x.Procs = cw.ns, cw.used, ci.Bytes, ci.Procs
	}
	return x
}
