package render

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// ChromePath is what StreamChrome needs of a critical path to mark it:
// per rank, the indices in its event stream of the calls on the path, and
// the path's steps for its track. It holds no reference to the task graph
// it was taken from, so that the graph can be released before the trace
// is written: 8 bytes per call on the path and 40 per step.
type ChromePath struct {
	events map[int][]int64 // by rank, sorted
	length float64         // ns
	steps  []pathStep
	names  []string // the steps' names, by index
}

// pathStep is a slice of the path's track. Its strings are indices in
// ChromePath.names.
type pathStep struct {
	weight   float64
	n        int64  // vertex and message: the bytes
	a, b     uint32 // vertex: its name and model; hop: the from and to functions
	from, to int32  // vertex: its procs; hop: the ranks (compute: from)
	kind     stepKind
}

type stepKind uint8

const (
	stepVertex stepKind = iota
	stepMessage
	stepCompute
)

// NewChromePath takes from graph g and its critical path p what
// StreamChrome needs to mark the path. A call is on the path when one of
// its operations is a vertex of p or, for a collective call, when one of
// p's hops into or out of the collective's vertex is on the call's rank.
func NewChromePath(g *taskgraph.Graph, p *critpath.Path) *ChromePath {
	cp := &ChromePath{events: map[int][]int64{}, length: p.Length}
	colls := map[int][]taskgraph.NodeID{} // by rank: the collectives the path enters or leaves on it
	nv := p.NumVertices()
	// The steps are counted first, to be allocated once at their size.
	n := 0
	for i := range nv {
		if p.Vertex(i).Weight > 0 {
			n++
		}
		if i < nv-1 && p.Hop(i).Weight > 0 {
			n++
		}
	}
	cp.steps = make([]pathStep, 0, n)
	index := map[string]uint32{}
	name := func(s string) uint32 {
		i, ok := index[s]
		if !ok {
			i = uint32(len(cp.names))
			index[s] = i
			cp.names = append(cp.names, s)
		}
		return i
	}
	for i := range nv {
		x := p.Vertex(i)
		if g.Kind(x.ID) == taskgraph.KindOp {
			r := g.Rank(x.ID)
			cp.events[r] = append(cp.events[r], g.OpEvent(x.ID))
		}
		if x.Weight > 0 {
			cp.steps = append(cp.steps, pathStep{kind: stepVertex, weight: x.Weight, a: name(x.Name), b: name(x.Model), from: int32(x.Procs), n: x.Bytes})
		}
		if i == nv-1 {
			break
		}
		h := p.Hop(i)
		for _, v := range []taskgraph.NodeID{h.From, h.To} {
			if g.Kind(v) == taskgraph.KindCollective {
				colls[h.Rank] = append(colls[h.Rank], v)
			}
		}
		if h.Weight <= 0 {
			continue
		}
		if h.Kind == taskgraph.Message {
			cp.steps = append(cp.steps, pathStep{kind: stepMessage, weight: h.Weight, a: name(g.Name(h.From)), b: name(g.Name(h.To)),
				from: int32(g.Rank(h.From)), to: int32(g.Rank(h.To)), n: h.Bytes})
			continue
		}
		cp.steps = append(cp.steps, pathStep{kind: stepCompute, weight: h.Weight, a: name(g.Name(h.From)), b: name(g.Name(h.To)), from: int32(h.Rank)})
	}
	for r, vs := range colls {
		slices.Sort(vs)
		g.RankCollectives(r, func(v taskgraph.NodeID, ev int64) bool {
			if _, ok := slices.BinarySearch(vs, v); ok {
				cp.events[r] = append(cp.events[r], ev)
			}
			return true
		})
	}
	for r, evs := range cp.events {
		slices.Sort(evs)
		cp.events[r] = slices.Clip(slices.Compact(evs))
	}
	return cp
}

// Events returns the indices, in rank r's event stream, of its calls on
// the path, in increasing order.
func (cp *ChromePath) Events(r int) []int64 { return cp.events[r] }

// criticalTrack lays the path out on its own track (pid), step after step
// from t0: a slice per hop and per collective of non-zero weight, each as
// long as its share of the path. With a window, only the steps whose place
// along the path (ns from t0) starts within it are written, as the ranks'
// calls are cut by their start after MPI_Init.
func (c *chromeWriter) criticalTrack(cp *ChromePath, pid int, t0 int64) {
	c.names(pid, -1, "critical path", pid)
	c.names(pid, 0, fmt.Sprintf("critical path (%s)", durString(time.Duration(math.Round(cp.length)))), 0)
	at := 0.0 // ns since t0
	for i := range cp.steps {
		s := &cp.steps[i]
		from := int64(math.Round(at))
		at += s.weight
		if c.window != nil && !c.window.Contains(time.Duration(from)) {
			continue
		}
		var name string
		var args []chromeArg
		switch s.kind {
		case stepVertex:
			name = cp.names[s.a]
			args = []chromeArg{{key: "model", s: cp.names[s.b], isS: true}, {key: "procs", n: int64(s.from)}, {key: "bytes", n: s.n}}
		case stepMessage:
			name = fmt.Sprintf("message %d→%d", s.from, s.to)
			args = []chromeArg{{key: "bytes", n: s.n}, {key: "from", s: cp.names[s.a], isS: true}, {key: "to", s: cp.names[s.b], isS: true}}
		default:
			name = "compute on rank " + strconv.Itoa(int(s.from))
			args = []chromeArg{{key: "from", s: cp.names[s.a], isS: true}, {key: "rank", n: int64(s.from)}, {key: "to", s: cp.names[s.b], isS: true}}
		}
		c.slice(pid, 0, name, "critical", t0+from, int64(math.Round(at))-from, args)
	}
}
