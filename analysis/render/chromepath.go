package render

import (
	"encoding/binary"
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
// is written: about a byte per call on the path (their indices, delta
// coded) and, for a graph's path, 40 per step; the steps of a path the
// replay found are read again from the replay's result for the track
// (which must then stay open until the trace is written).
type ChromePath struct {
	events map[int]*pathEvents // by rank
	length float64             // ns
	steps  []pathStep          // a graph's path's track
	names  []string            // the steps' names, by index
	sp     *critpath.StepPath  // a replay's path, read again for its track
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

// pathEvents is a rank's events on the path: increasing indices as
// uvarint deltas, and the few that came after a larger one, sorted at
// the end.
type pathEvents struct {
	enc   []byte
	last  int64
	n     int
	extra []int64
}

func (pe *pathEvents) add(ev int64) {
	switch {
	case ev > pe.last:
		pe.enc = binary.AppendUvarint(pe.enc, uint64(ev-pe.last-1))
		pe.last = ev
		pe.n++
	case ev < pe.last:
		pe.extra = append(pe.extra, ev)
	}
}

func (pe *pathEvents) finish() {
	slices.Sort(pe.extra)
	pe.extra = slices.Clip(slices.Compact(pe.extra))
	pe.enc = slices.Clip(pe.enc)
}

// pathCursor walks a rank's events on the path in increasing order; its
// zero value has none.
type pathCursor struct {
	enc   []byte
	next  int64 // the next from enc, when ok
	ok    bool
	extra []int64
}

func (pe *pathEvents) cursor() pathCursor {
	c := pathCursor{enc: pe.enc, extra: pe.extra}
	c.step(-1)
	return c
}

// step decodes enc's next index after prev.
func (c *pathCursor) step(prev int64) {
	d, n := binary.Uvarint(c.enc)
	if n <= 0 {
		c.enc, c.ok = nil, false
		return
	}
	c.enc = c.enc[n:]
	c.next, c.ok = prev+1+int64(d), true
}

// has reports whether event idx is on the path; idx must not decrease
// from one call to the next.
func (c *pathCursor) has(idx int64) bool {
	for c.ok && c.next < idx {
		c.step(c.next)
	}
	for len(c.extra) > 0 && c.extra[0] < idx {
		c.extra = c.extra[1:]
	}
	return c.ok && c.next == idx || len(c.extra) > 0 && c.extra[0] == idx
}

// trackStep is a slice of the path's track, as eachTrackStep finds it.
type trackStep struct {
	kind     stepKind
	weight   float64
	n        int64
	a, b     string
	from, to int32
}

// eachTrackStep calls fn for each slice of the track of path sp, in path
// order: a vertex's own weight (a collective's) after the hop into it;
// and each call on the path (rank, event index).
func eachTrackStep(sp *critpath.StepPath, call func(rank int, ev int64), fn func(*trackStep)) error {
	var prevName string
	prevRank := -1
	first := true
	var ts trackStep
	return sp.Steps(func(st *reconstruct.ReplayStep) error {
		defer func() { prevName, prevRank, first = st.Name, st.Rank, false }()
		if st.Kind == taskgraph.KindOp && call != nil {
			call(st.Rank, st.Event.Index)
		}
		if !first {
			h := &st.In
			if call != nil {
				for _, ev := range [2]int64{h.FromEvent, h.ToEvent} {
					if ev >= 0 {
						call(h.Rank, ev)
					}
				}
			}
			if w := critpath.HopWeight(st); w > 0 && fn != nil {
				if h.Kind == taskgraph.Message {
					ts = trackStep{kind: stepMessage, weight: w, a: prevName, b: st.Name, from: int32(prevRank), to: int32(st.Rank), n: h.Bytes}
				} else {
					ts = trackStep{kind: stepCompute, weight: w, a: prevName, b: st.Name, from: int32(h.Rank)}
				}
				fn(&ts)
			}
		}
		if st.Kind == taskgraph.KindCollective && st.Weight > 0 && fn != nil {
			ts = trackStep{kind: stepVertex, weight: st.Weight, a: st.Name, b: sp.Fit(st), from: int32(st.Procs), n: st.Bytes}
			fn(&ts)
		}
		return nil
	})
}

// NewChromePath takes from critical path sp (of the graph or the replay)
// what StreamChrome needs to mark the path, in one pass over its steps. A
// call is on the path when one of its operations is a vertex of the path
// or, for a collective call, when one of the path's hops into or out of
// the collective's vertex is on the call's rank.
func NewChromePath(sp *critpath.StepPath) (*ChromePath, error) {
	cp := &ChromePath{events: map[int]*pathEvents{}, length: sp.Length}
	call := func(rank int, ev int64) {
		pe := cp.events[rank]
		if pe == nil {
			pe = &pathEvents{last: -1}
			cp.events[rank] = pe
		}
		pe.add(ev)
	}
	var fn func(*trackStep)
	if sp.Shape != nil {
		cp.sp = sp // the replay's: its track is read again
	} else {
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
		fn = func(ts *trackStep) {
			cp.steps = append(cp.steps, pathStep{kind: ts.kind, weight: ts.weight, n: ts.n, a: name(ts.a), b: name(ts.b), from: ts.from, to: ts.to})
		}
	}
	if err := eachTrackStep(sp, call, fn); err != nil {
		return nil, err
	}
	cp.steps = slices.Clip(cp.steps)
	for _, pe := range cp.events {
		pe.finish()
	}
	return cp, nil
}

// Events returns the indices, in rank r's event stream, of its calls on
// the path, in increasing order.
func (cp *ChromePath) Events(r int) []int64 {
	pe := cp.events[r]
	if pe == nil {
		return nil
	}
	out := make([]int64, 0, pe.n+len(pe.extra))
	for c := pe.cursor(); c.ok; c.step(c.next) {
		out = append(out, c.next)
	}
	out = append(out, pe.extra...)
	slices.Sort(out)
	return slices.Compact(out)
}

// cursorOf returns a cursor over rank r's events on the path.
func (cp *ChromePath) cursorOf(r int) pathCursor {
	if pe := cp.events[r]; pe != nil {
		return pe.cursor()
	}
	return pathCursor{}
}

// track calls fn for each slice of the path's track, in order.
func (cp *ChromePath) track(fn func(*trackStep)) error {
	if cp.sp != nil {
		return eachTrackStep(cp.sp, nil, fn)
	}
	var ts trackStep
	for i := range cp.steps {
		s := &cp.steps[i]
		ts = trackStep{kind: s.kind, weight: s.weight, n: s.n, a: cp.names[s.a], b: cp.names[s.b], from: s.from, to: s.to}
		fn(&ts)
	}
	return nil
}

// criticalTrack lays the path out on its own track (pid), step after step
// from t0: a slice per hop and per collective of non-zero weight, each as
// long as its share of the path. With a window, only the steps whose place
// along the path (ns from t0) starts within it are written, as the ranks'
// calls are cut by their start after MPI_Init.
func (c *chromeWriter) criticalTrack(cp *ChromePath, pid int, t0 int64) error {
	c.names(pid, -1, "critical path", pid)
	c.names(pid, 0, fmt.Sprintf("critical path (%s)", durString(time.Duration(math.Round(cp.length)))), 0)
	at := 0.0 // ns since t0
	return cp.track(func(s *trackStep) {
		from := int64(math.Round(at))
		at += s.weight
		if c.window != nil && !c.window.Contains(time.Duration(from)) {
			return
		}
		var name string
		var args []chromeArg
		switch s.kind {
		case stepVertex:
			name = s.a
			args = []chromeArg{{key: "model", s: s.b, isS: true}, {key: "procs", n: int64(s.from)}, {key: "bytes", n: s.n}}
		case stepMessage:
			name = fmt.Sprintf("message %d→%d", s.from, s.to)
			args = []chromeArg{{key: "bytes", n: s.n}, {key: "from", s: s.a, isS: true}, {key: "to", s: s.b, isS: true}}
		default:
			name = "compute on rank " + strconv.Itoa(int(s.from))
			args = []chromeArg{{key: "from", s: s.a, isS: true}, {key: "rank", n: int64(s.from)}, {key: "to", s: s.b, isS: true}}
		}
		c.slice(pid, 0, name, "critical", t0+from, int64(math.Round(at))-from, args)
	})
}
