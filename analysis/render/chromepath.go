package render

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/reconstruct"
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

// NewChromePath takes from critical path sp (of the graph or the replay)
// what StreamChrome needs to mark the path, in one pass over its steps. A
// call is on the path when one of its operations is a vertex of the path
// or, for a collective call, when one of the path's hops into or out of
// the collective's vertex is on the call's rank.
func NewChromePath(sp *critpath.StepPath) (*ChromePath, error) {
	cp := &ChromePath{events: map[int][]int64{}, length: sp.Length}
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
	// Counted first, to be allocated once at their size: the track's steps
	// and each rank's calls.
	nsteps, calls, i := 0, map[int]int{}, 0
	if err := sp.Steps(func(st *reconstruct.ReplayStep) error {
		if i++; st.Kind == taskgraph.KindOp {
			calls[st.Rank]++
		}
		if i > 1 {
			for _, ev := range [2]int64{st.In.FromEvent, st.In.ToEvent} {
				if ev >= 0 {
					calls[st.In.Rank]++
				}
			}
			if critpath.HopWeight(st) > 0 {
				nsteps++
			}
		}
		if st.Kind == taskgraph.KindCollective && st.Weight > 0 {
			nsteps++
		}
		return nil
	}); err != nil {
		return nil, err
	}
	cp.steps = make([]pathStep, 0, nsteps)
	for r, n := range calls {
		cp.events[r] = make([]int64, 0, n)
	}
	var prevName string
	prevRank := -1
	first := true
	// The steps of the track are in path order: a vertex's own weight (a
	// collective's) after the hop into it.
	err := sp.Steps(func(st *reconstruct.ReplayStep) error {
		defer func() { prevName, prevRank, first = st.Name, st.Rank, false }()
		if st.Kind == taskgraph.KindOp {
			cp.events[st.Rank] = append(cp.events[st.Rank], st.Event.Index)
		}
		if !first {
			h := &st.In
			for _, ev := range [2]int64{h.FromEvent, h.ToEvent} {
				if ev >= 0 {
					cp.events[h.Rank] = append(cp.events[h.Rank], ev)
				}
			}
			if w := critpath.HopWeight(st); w > 0 {
				if h.Kind == taskgraph.Message {
					cp.steps = append(cp.steps, pathStep{kind: stepMessage, weight: w, a: name(prevName), b: name(st.Name),
						from: int32(prevRank), to: int32(st.Rank), n: h.Bytes})
				} else {
					cp.steps = append(cp.steps, pathStep{kind: stepCompute, weight: w, a: name(prevName), b: name(st.Name), from: int32(h.Rank)})
				}
			}
		}
		if st.Kind == taskgraph.KindCollective && st.Weight > 0 {
			cp.steps = append(cp.steps, pathStep{kind: stepVertex, weight: st.Weight, a: name(st.Name), b: name(sp.Fit(st)), from: int32(st.Procs), n: st.Bytes})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for r, evs := range cp.events {
		slices.Sort(evs)
		cp.events[r] = slices.Clip(slices.Compact(evs))
	}
	return cp, nil
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
