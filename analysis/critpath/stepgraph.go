package critpath

import (
	"math"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// StepGraph is the critical path merged by place in the program: one
// vertex per call site (and MPI function) the path passes through, one
// edge per pair of them the path hops between, each with how often and
// how long. The path's order is lost, but its loops show as cycles, and
// its size is bounded by the program's call sites, not by its length: it
// is the picture of a path that wanders too much to fold (its iterations
// differ, e.g. on ranks that share cores).
//
// In a trace without call sites a vertex is an MPI function on one rank,
// or an MPI function on any rank when that leaves more than FoldTarget.
type StepGraph struct {
	Nodes []StepNode // in the order of the path's first visit
	Edges []StepEdge // in the order of the path's first hop
	// By says what a vertex stands for: "call site", "MPI function and
	// rank" or "MPI function".
	By string
	p  *Path
}

// StepNode is every step of the path at one call site.
type StepNode struct {
	First  int    // the path vertex of its first step
	Name   string // MPI function
	Rank   int    // the rank (RankHi == Rank) or the lowest of them; -1 for shared vertices
	RankHi int
	Count  int
	// Weight is the steps' share of the path in ns: the hops into them
	// and, for collectives, their vertex weights.
	Weight float64
	site   [2]int // (rank, site id) of its first step, 0 id: unknown
}

// StepEdge is every hop of the path of one kind from the steps of one
// StepNode to those of another.
type StepEdge struct {
	From, To int // indices in Nodes
	Kind     taskgraph.EdgeKind
	Count    int
	Weight   float64 // the hops' share of the path in ns
	Bytes    int64   // messages' bytes in all
}

// Path returns the path the graph merges.
func (s *StepGraph) Path() *Path { return s.p }

// Site returns the call site of node i's steps as VertexSite does (the
// first step's), site 0 when unknown.
func (s *StepGraph) Site(i int) (rank int, site uint32) {
	return s.Nodes[i].site[0], uint32(s.Nodes[i].site[1])
}

// MergeSteps merges p's steps by call site (see StepGraph).
func MergeSteps(p *Path) *StepGraph {
	prog := newProgramSites(p.StepPath().tables())
	by := "call site"
	key := func(v taskgraph.NodeID, kind taskgraph.NodeKind, rank, idx int) [3]int64 {
		if kind == taskgraph.KindInit || kind == taskgraph.KindFinalize {
			return [3]int64{int64(kind), int64(idx), -1}
		}
		if prog != nil {
			sr, site := VertexSite(p.g, v)
			return [3]int64{int64(kind), int64(idx), int64(prog.id(sr, site))}
		}
		return [3]int64{int64(kind), int64(idx), int64(rank)}
	}
	if prog == nil {
		by = "MPI function and rank"
		s := p.mergeSteps(key, by)
		if len(s.Nodes) <= FoldTarget {
			return s
		}
		by = "MPI function"
		key = func(_ taskgraph.NodeID, kind taskgraph.NodeKind, _, idx int) [3]int64 {
			return [3]int64{int64(kind), int64(idx), 0}
		}
	}
	return p.mergeSteps(key, by)
}

func (p *Path) mergeSteps(key func(v taskgraph.NodeID, kind taskgraph.NodeKind, rank, idx int) [3]int64, by string) *StepGraph {
	s := &StepGraph{By: by, p: p}
	nodeOf := map[[3]int64]int{}
	edgeOf := map[[3]int]int{}
	prev := -1
	for i := range p.NumVertices() {
		v := p.p.Node(i)
		kind, rank, name, idx := p.g.Describe(v)
		k := key(v, kind, rank, idx)
		n, ok := nodeOf[k]
		if !ok {
			n = len(s.Nodes)
			nodeOf[k] = n
			sr, site := VertexSite(p.g, v)
			s.Nodes = append(s.Nodes, StepNode{First: i, Name: name, Rank: math.MaxInt, RankHi: math.MinInt, site: [2]int{sr, int(site)}})
		}
		nd := &s.Nodes[n]
		nd.Count++
		nd.Rank, nd.RankHi = min(nd.Rank, rank), max(nd.RankHi, rank)
		nd.Weight += p.Vertex(i).Weight
		if prev >= 0 {
			h := p.Hop(i - 1)
			nd.Weight += h.Weight
			ek := [3]int{prev, n, int(h.Kind)}
			e, ok := edgeOf[ek]
			if !ok {
				e = len(s.Edges)
				edgeOf[ek] = e
				s.Edges = append(s.Edges, StepEdge{From: prev, To: n, Kind: h.Kind})
			}
			ed := &s.Edges[e]
			ed.Count++
			ed.Weight += h.Weight
			if h.Kind == taskgraph.Message {
				ed.Bytes += h.Bytes
			}
		}
		prev = n
	}
	return s
}
