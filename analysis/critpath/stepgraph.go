package critpath

import (
	"math"

	"github.com/mpitrace/mpitrace/reconstruct"
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
	// Length and Vertices are the path's.
	Length   float64
	Vertices int
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
	// Kind and ID are its first step's vertex kind and task graph id
	// (taskgraph.None when the replay that found the path does not know
	// it).
	Kind taskgraph.NodeKind
	ID   taskgraph.NodeID
	site [2]int // (rank, site id) of its first step, 0 id: unknown
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

// Site returns the call site of node i's steps as VertexSite does (the
// first step's), site 0 when unknown.
func (s *StepGraph) Site(i int) (rank int, site uint32) {
	return s.Nodes[i].site[0], uint32(s.Nodes[i].site[1])
}

// MergeSteps merges p's steps by call site (see StepGraph).
func MergeSteps(p *Path) *StepGraph {
	s, _ := p.StepPath().MergeSteps() // a graph's path never fails
	return s
}

// stepNodeKey is what merges steps into one StepNode: the vertex kind,
// the MPI function and a call site, a rank or nothing.
type stepNodeKey struct {
	kind taskgraph.NodeKind
	name string
	x    int64
}

// MergeSteps merges the path's steps by call site (see StepGraph), in
// one pass over the path (two when it falls back from ranks to MPI
// functions).
func (sp *StepPath) MergeSteps() (*StepGraph, error) {
	prog := newProgramSites(sp.tables())
	by := "call site"
	key := func(st *reconstruct.ReplayStep) stepNodeKey {
		if st.Kind == taskgraph.KindInit || st.Kind == taskgraph.KindFinalize {
			return stepNodeKey{st.Kind, st.Name, -1}
		}
		if prog != nil {
			return stepNodeKey{st.Kind, st.Name, int64(prog.id(st.SiteRank, st.Site))}
		}
		return stepNodeKey{st.Kind, st.Name, int64(st.Rank)}
	}
	if prog == nil {
		by = "MPI function and rank"
		s, err := sp.mergeSteps(key, by)
		if err != nil || len(s.Nodes) <= FoldTarget {
			return s, err
		}
		by = "MPI function"
		key = func(st *reconstruct.ReplayStep) stepNodeKey { return stepNodeKey{st.Kind, st.Name, 0} }
	}
	return sp.mergeSteps(key, by)
}

func (sp *StepPath) mergeSteps(key func(*reconstruct.ReplayStep) stepNodeKey, by string) (*StepGraph, error) {
	s := &StepGraph{By: by, Length: sp.Length, Vertices: sp.NumSteps}
	nodeOf := map[stepNodeKey]int{}
	edgeOf := map[[3]int]int{}
	prev, i := -1, 0
	err := sp.Steps(func(st *reconstruct.ReplayStep) error {
		k := key(st)
		n, ok := nodeOf[k]
		if !ok {
			n = len(s.Nodes)
			nodeOf[k] = n
			s.Nodes = append(s.Nodes, StepNode{First: i, Name: st.Name, Rank: math.MaxInt, RankHi: math.MinInt,
				Kind: st.Kind, ID: st.ID, site: [2]int{st.SiteRank, int(st.Site)}})
		}
		nd := &s.Nodes[n]
		nd.Count++
		nd.Rank, nd.RankHi = min(nd.Rank, st.Rank), max(nd.RankHi, st.Rank)
		if st.Kind == taskgraph.KindCollective {
			nd.Weight += st.Weight
		}
		if prev >= 0 {
			w := HopWeight(st)
			nd.Weight += w
			ek := [3]int{prev, n, int(st.In.Kind)}
			e, ok := edgeOf[ek]
			if !ok {
				e = len(s.Edges)
				edgeOf[ek] = e
				s.Edges = append(s.Edges, StepEdge{From: prev, To: n, Kind: st.In.Kind})
			}
			ed := &s.Edges[e]
			ed.Count++
			ed.Weight += w
			if st.In.Kind == taskgraph.Message {
				ed.Bytes += st.In.Bytes
			}
		}
		prev = n
		i++
		return nil
	})
	return s, err
}
