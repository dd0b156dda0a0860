package loops

import (
	"strconv"

	"github.com/mpitrace/mpitrace/analysis/internal/spanset"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Site is where a loop is in the source.
type Site struct {
	File string `json:"file"`
	Line uint64 `json:"line"`
	Col  uint64 `json:"column"`
}

// String is "file:line:col".
func (s Site) String() string {
	return s.File + ":" + strconv.FormatUint(s.Line, 10) + ":" + strconv.FormatUint(s.Col, 10)
}

// tally is what is known of one loop (in one calling context, see node)
// over some executions: a rank's, or merged over ranks.
type tally struct {
	execs, iters       uint64 // recorded executions; their LoopEnd counts summed
	unwound, uncounted uint64 // executions with LoopUnwound, LoopUncounted
	measured           int64  // sum of LoopEnd - LoopBegin
	times              moments
	sk                 sketch
	counters           []counterAcc // by the position in the header's loop_counters

	// For the run-wide estimate of a nested loop: its executions outside
	// a sampled iteration of its parent (direct, seen whenever the parent
	// is), and the sums over the parent's sampled iterations of what it
	// did inside each (y) and of its squares.
	direct         part
	yTime, yTime2  float64
	yIters, yExecs float64
	clusters       uint64 // this loop's own sampled iterations whose children were counted
}

// part is the executions, iterations and time of a loop in one place.
type part struct {
	execs, iters uint64
	time         int64
}

type counterAcc struct {
	sum float64
	n   uint64
}

func (s *tally) merge(o *tally) {
	s.execs += o.execs
	s.iters += o.iters
	s.unwound += o.unwound
	s.uncounted += o.uncounted
	s.measured += o.measured
	s.times.merge(&o.times)
	s.sk.merge(&o.sk)
	for len(s.counters) < len(o.counters) {
		s.counters = append(s.counters, counterAcc{})
	}
	for i, c := range o.counters {
		s.counters[i].sum += c.sum
		s.counters[i].n += c.n
	}
	s.direct.execs += o.direct.execs
	s.direct.iters += o.direct.iters
	s.direct.time += o.direct.time
	s.yTime += o.yTime
	s.yTime2 += o.yTime2
	s.yIters += o.yIters
	s.yExecs += o.yExecs
	s.clusters += o.clusters
}

// node is a loop in one calling context: the loop at a site, run inside
// an iteration (or between iterations) of a given parent node.
type node struct {
	parent int32 // -1 for a top-level loop
	file   uint64
	line   int64
	col    int64
	spans  []spanset.Span // its executions, with KeepSpans
	tally
}

type nodeKey struct {
	parent    int32
	file      uint64
	line, col int64
}

// frame is an open loop execution of a thread.
type frame struct {
	node      int32
	begin     int64
	inIter    bool // it began inside a sampled iteration of its parent
	iterOpen  bool
	iterStart int64
	acc       []childAcc // children's totals in the current sampled iteration
}

type childAcc struct {
	node int32
	p    part
}

// Aggregator reads one rank's events and aggregates its loop events: a
// single-pass consumer (Event for every event, in the reader's order, then
// Finish). Events of other kinds are ignored. Loop events that do not nest
// (tracefmt.Validator names them) are skipped and counted: an iteration or
// loop end with nothing open, an iteration begun inside an open one (the
// open one is dropped), executions still open at the end (dropped).
type Aggregator struct {
	// KeepSpans keeps every execution's interval, for Spans (the critical
	// path's attribution to loops): 16 bytes per recorded execution.
	KeepSpans bool

	rank    int
	strs    *tracefmt.Strings
	header  *tracefmt.Header
	nodes   []node
	index   map[nodeKey]int32
	threads map[int][]frame
	skipped uint64
}

// NewAggregator returns an aggregator for a rank with the given header and
// string table (a RankReader's, valid until Finish).
//
// Its tables are made with the rank's first loop event: a rank without
// costs a few bytes (a trace may have thousands of ranks).
func NewAggregator(h *tracefmt.Header, strs *tracefmt.Strings) *Aggregator {
	return &Aggregator{rank: h.Rank, header: h, strs: strs}
}

// Event consumes the rank's next event.
func (a *Aggregator) Event(ev *tracefmt.Event) {
	switch ev.Kind {
	case spec.LoopBegin, spec.LoopEnd, spec.IterBegin, spec.IterEnd:
	default:
		return
	}
	if a.index == nil {
		a.index, a.threads = make(map[nodeKey]int32), make(map[int][]frame)
	}
	stack := a.threads[ev.Thread]
	var top *frame
	if len(stack) > 0 {
		top = &stack[len(stack)-1]
	}
	switch ev.Kind {
	case spec.LoopBegin:
		k := nodeKey{parent: -1, file: uint64(ev.F[spec.File]), line: ev.F[spec.Line], col: ev.F[spec.Col]}
		inIter := false
		if top != nil {
			k.parent, inIter = top.node, top.iterOpen
		}
		id, ok := a.index[k]
		if !ok {
			id = int32(len(a.nodes))
			a.nodes = append(a.nodes, node{parent: k.parent, file: k.file, line: k.line, col: k.col})
			a.index[k] = id
		}
		stack = append(stack, frame{node: id, begin: ev.Start, inIter: inIter})
	case spec.LoopEnd:
		if top == nil {
			a.skipped++
			return
		}
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := &a.nodes[f.node]
		if f.iterOpen {
			// Ended inside a sampled iteration (unwound): no time sample,
			// but what its nested loops did still counts.
			a.flush(&f)
		}
		p := part{execs: 1, iters: ev.Count(), time: max(ev.Start-f.begin, 0)}
		n.execs++
		n.iters += p.iters
		if a.KeepSpans {
			n.spans = append(n.spans, spanset.Span{Start: f.begin, End: f.begin + p.time})
		}
		n.measured += p.time
		if ev.Flags()&spec.LoopUnwound != 0 {
			n.unwound++
		}
		if ev.Flags()&spec.LoopUncounted != 0 {
			n.uncounted++
		}
		if len(stack) > 0 && f.inIter && stack[len(stack)-1].iterOpen {
			pf := &stack[len(stack)-1]
			i := 0
			for i < len(pf.acc) && pf.acc[i].node != f.node {
				i++
			}
			if i == len(pf.acc) {
				pf.acc = append(pf.acc, childAcc{node: f.node})
			}
			c := &pf.acc[i].p
			c.execs++
			c.iters += p.iters
			c.time += p.time
		} else {
			n.direct.execs++
			n.direct.iters += p.iters
			n.direct.time += p.time
		}
	case spec.IterBegin:
		if top == nil {
			a.skipped++
			return
		}
		if top.iterOpen {
			a.skipped++
			a.flush(top)
		}
		top.iterOpen, top.iterStart = true, ev.Start
	case spec.IterEnd:
		if top == nil || !top.iterOpen {
			a.skipped++
			return
		}
		n := &a.nodes[top.node]
		d := max(ev.Start-top.iterStart, 0)
		n.times.add(float64(d))
		n.sk.add(d)
		for len(n.counters) < len(ev.Values) {
			n.counters = append(n.counters, counterAcc{})
		}
		for i, v := range ev.Values {
			n.counters[i].sum += float64(v)
			n.counters[i].n++
		}
		a.flush(top)
	}
	a.threads[ev.Thread] = stack
}

// flush closes f's open sampled iteration: one more cluster of f's loop,
// and what each nested loop did in it added to its sums.
func (a *Aggregator) flush(f *frame) {
	a.nodes[f.node].clusters++
	for _, c := range f.acc {
		n := &a.nodes[c.node]
		t := float64(c.p.time)
		n.yTime += t
		n.yTime2 += t * t
		n.yIters += float64(c.p.iters)
		n.yExecs += float64(c.p.execs)
	}
	f.acc = f.acc[:0]
	f.iterOpen = false
}

// RankLoops is one rank's aggregated loops.
type RankLoops struct {
	Rank int
	// Counters, Chance and Seed are the header's loop_counters, loop_chance
	// and loop_seed ("" when absent).
	Counters, Chance, Seed string
	// Skipped counts loop events that did not nest; Open the loop
	// executions still open when the rank's events ended (not counted).
	Skipped, Open uint64
	loops         map[string]*rankLoop
	order         []string
	spans         *spanset.Rank // with KeepSpans
	nested        bool          // some loop is nested in another
}

type rankLoop struct {
	site   Site
	parent string // key of the parent, "" for a top-level loop
	depth  int
	tally
}

// Finish returns the rank's loops.
func (a *Aggregator) Finish() *RankLoops {
	r := &RankLoops{Rank: a.rank, Skipped: a.skipped, loops: make(map[string]*rankLoop, len(a.nodes))}
	r.Counters, _ = a.header.Get(tracefmt.KeyLoopCounters)
	r.Chance, _ = a.header.Get(tracefmt.KeyLoopChance)
	r.Seed, _ = a.header.Get(tracefmt.KeyLoopSeed)
	for _, stack := range a.threads {
		r.Open += uint64(len(stack))
	}
	keys := make([]string, len(a.nodes))
	locs := make([]string, len(a.nodes))
	depth := make([]int, len(a.nodes))
	for i := range a.nodes {
		n := &a.nodes[i]
		name, ok := a.strs.Lookup(n.file)
		if !ok {
			name = "#" + strconv.FormatUint(n.file, 10)
		}
		s := Site{File: name, Line: uint64(n.line), Col: uint64(n.col)}
		parent := ""
		if n.parent >= 0 { // parents are created before their children
			r.nested = true
			parent = keys[n.parent]
			depth[i] = depth[n.parent] + 1
		}
		locs[i] = s.String()
		// The key of a calling context: its loops' locations from the
		// outermost, each with its length, so that no file name can make
		// two contexts one.
		keys[i] = parent + strconv.Itoa(len(locs[i])) + ":" + locs[i]
		rl := r.loops[keys[i]]
		if rl == nil {
			// Two nodes get one key only when file ids differ but name
			// the same file: they are one loop.
			rl = &rankLoop{site: s, parent: parent, depth: depth[i]}
			r.loops[keys[i]] = rl
			r.order = append(r.order, keys[i])
		}
		rl.merge(&n.tally)
	}
	if a.KeepSpans {
		r.spans = newRankSpans(a.nodes, locs, depth)
	}
	return r
}

// RankOf aggregates the loop events of src, read to the end.
func RankOf(src tracefmt.Source) (*RankLoops, error) {
	a := NewAggregator(src.Header(), src.Strings())
	for src.Next() {
		a.Event(src.Event())
	}
	return a.Finish(), src.Err()
}
