package render

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// ChromeOptions are the options of WriteChrome.
type ChromeOptions struct {
	// Ranks, when not nil, keeps only these ranks' tracks.
	Ranks RankSet
	// Window, when not nil, keeps only the slices that start within it,
	// on each rank's own clock from the end of its MPI_Init (as in
	// DOTOptions).
	Window *Window
	// Offsets are the ns to add to each rank's clock to get the common
	// clock (rank 0's); a rank without one gets 0.
	Offsets map[int]int64
	// Open opens the event stream of a rank, the same stream the graph was
	// built from; WriteChrome closes it with close.
	Open func(rank int) (src tracefmt.Source, close func() error, err error)
	// Spans are each rank's spans paired by a SpanEnds fed its whole
	// stream (while the graph was built); for a rank without,
	// WriteChrome reads the rank once more to pair them.
	Spans map[int]*SpanEnds
}

// CriticalPID is the pid of the critical path's track: one past the
// highest rank of the world.
func CriticalPID(g *taskgraph.Graph) int { return g.Size() }

// WriteChrome writes a trace in the Chrome trace-event JSON format that
// Perfetto UI and chrome://tracing open: a track per rank (pid) and
// recorder thread (tid) holding each MPI call as a complete slice, the
// loops, iterations, regions, kernels, copies and sections recorded around
// them as enclosing slices, a flow per matched message (from the send's
// slice to the slice that completed the receive) and per collective
// member (from its slice to the last member to arrive's), the slices on
// path marked critical, and path laid out on a track of its own.
//
// It streams: ranks are read one after the other with o.Open and their
// events written as they are decoded; what it keeps is the graph and the
// path it is given, the node list of the rank being written and the
// loops and regions open on its threads. The output depends only on its
// inputs (same input, same bytes). docs/cli.md ('mpitrace export')
// describes the file.
func WriteChrome(w io.Writer, g *taskgraph.Graph, path *critpath.Path, o ChromeOptions) error {
	if o.Open == nil {
		return fmt.Errorf("internal error: render: WriteChrome without Open")
	}
	if w := o.Window; w != nil && (w.Start < 0 || w.End < 0 || w.End != 0 && w.End <= w.Start) {
		return fmt.Errorf("internal error: render: bad window %v", *w)
	}
	cw := &chromeWriter{g: g, o: o, w: bufio.NewWriterSize(w, 1<<16), nodes: uint64(g.NumNodes()),
		onPath: make([]uint64, (g.NumNodes()+63)/64), collOnPath: map[[2]int64]bool{}}
	cw.origin = func(r int) int64 { return origin(g, r) }
	if path != nil {
		cw.markPath(path)
	}
	cw.raw(`{"displayTimeUnit":"ns","traceEvents":[`)
	for _, r := range g.Ranks() {
		if o.Ranks != nil && !o.Ranks.Contains(r) {
			continue
		}
		if err := cw.rank(r); err != nil {
			return err
		}
	}
	if path != nil {
		cw.criticalTrack(path)
	}
	cw.raw("\n]}\n")
	return cw.w.Flush()
}

type chromeWriter struct {
	g     *taskgraph.Graph
	o     ChromeOptions
	w     *bufio.Writer
	buf   []byte
	first bool // an event has been written
	nodes uint64

	onPath     []uint64          // bit per node on the path
	collOnPath map[[2]int64]bool // (collective node, rank) of the path's hops into and out of collectives

	edges []taskgraph.Edge
	args  []chromeArg
	last  []int32 // by collective index: its last arriver + 1, -1 for none, 0 not yet known

	spans    []int64 // the ends of the rank's spans (SpanEnds.ends)
	nextSpan int     // the index of the next span to begin

	// origin is where rank r's clock starts for --window: the end of its
	// MPI_Init (see the package's origin).
	origin func(r int) int64
}

func (c *chromeWriter) raw(s string) { c.w.WriteString(s) }

func (c *chromeWriter) critical(v taskgraph.NodeID) bool {
	return int(v>>6) < len(c.onPath) && c.onPath[v>>6]&(1<<(v&63)) != 0
}

func (c *chromeWriter) markPath(p *critpath.Path) {
	for i := range p.NumVertices() {
		v := p.Vertex(i).ID
		c.onPath[v>>6] |= 1 << (v & 63)
	}
	for i := range p.NumVertices() - 1 {
		h := p.Hop(i)
		for _, v := range []taskgraph.NodeID{h.From, h.To} {
			if c.g.Kind(v) == taskgraph.KindCollective {
				c.collOnPath[[2]int64{int64(v), int64(h.Rank)}] = true
			}
		}
	}
}

func (c *chromeWriter) offset(r int) int64 { return c.o.Offsets[r] }

// kept reports whether rank r's slice starting at start() (on r's
// clock) is written; start is called only with a window.
func (c *chromeWriter) kept(r int, start func() int64) bool {
	if c.o.Ranks != nil && !c.o.Ranks.Contains(r) {
		return false
	}
	return c.o.Window == nil || c.o.Window.Contains(time.Duration(start()-c.origin(r)))
}

// keptAt is kept for a known start.
func (c *chromeWriter) keptAt(r int, start int64) bool {
	return c.kept(r, func() int64 { return start })
}

// eventStart is the start of the event operation v comes from: the parts
// of an expanded MPI_Waitall after the first start at the call's end.
func (c *chromeWriter) eventStart(v taskgraph.NodeID) int64 {
	n := c.g.Node(v)
	if n.EventKind != spec.Sendrecv && n.Event.Completion > 0 {
		return c.g.Node(v - taskgraph.NodeID(n.Event.Completion)).Start
	}
	return n.Start
}

// collIndex is the index of collective node v among the collectives
// (their ids follow MPI_Init, MPI_Finalize and the operations).
func (c *chromeWriter) collIndex(v taskgraph.NodeID) uint64 {
	return uint64(v) - 2 - uint64(c.g.NumOps())
}

// Flow ids: a message's is its receiving operation's node id (an
// operation receives at most one message); a collective member's is past
// every node id.
func (c *chromeWriter) collFlowID(v taskgraph.NodeID, member int) uint64 {
	return c.nodes + c.collIndex(v)*uint64(c.g.Size()) + uint64(member)
}

// lastArriver is the member of collective v whose call started last on
// the common clock (the lowest rank among equals), computed once per
// collective (4 bytes each).
func (c *chromeWriter) lastArriver(v taskgraph.NodeID) (rank int, ok bool) {
	if c.last == nil {
		c.last = make([]int32, c.g.NumCollectives())
	}
	ci := c.collIndex(v)
	if ci >= uint64(len(c.last)) {
		return 0, false
	}
	if x := c.last[ci]; x != 0 {
		return int(x - 1), x > 0
	}
	best, found := int64(0), false
	for _, m := range c.g.Participants(v) {
		start, _, ok := c.g.PartTimes(v, m)
		if !ok {
			continue
		}
		if t := start + c.offset(m); !found || t > best {
			best, rank, found = t, m, true
		}
	}
	c.last[ci] = -1
	if found {
		c.last[ci] = int32(rank + 1)
	}
	return rank, found
}

type evNode struct {
	ev int64
	v  taskgraph.NodeID
}

type threadState struct{}

// SpanEnds pairs the begin and end events of the loops, iterations,
// regions, kernels, copies and sections of one rank's stream, for
// WriteChrome to write each span when it begins, before the calls inside
// it (viewers want a slice before the slices it encloses). Feed it every
// event of the stream in order; it keeps 8 bytes per span.
type SpanEnds struct {
	ends []int64 // by begin, in stream order: the end, or -1 when it has none
	open map[int][]spanOpen
}

type spanOpen struct {
	kind spec.Kind
	i    int
}

// NewSpanEnds returns an empty pairing.
func NewSpanEnds() *SpanEnds { return &SpanEnds{open: map[int][]spanOpen{}} }

// Event takes the stream's next event. An end closes the innermost open
// span of its thread when that span is of its begin's kind (End kinds
// follow their Begin kinds); any other end does not nest and is ignored,
// and a span never closed has no end (the validator reports both).
func (s *SpanEnds) Event(ev *tracefmt.Event) {
	switch k := ev.Kind; k {
	case spec.LoopBegin, spec.IterBegin, spec.RegionBegin, spec.KernelBegin, spec.CopyBegin, spec.SectionBegin:
		s.open[ev.Thread] = append(s.open[ev.Thread], spanOpen{k, len(s.ends)})
		s.ends = append(s.ends, -1)
	case spec.LoopEnd, spec.IterEnd, spec.RegionEnd, spec.KernelEnd, spec.CopyEnd, spec.SectionEnd:
		st := s.open[ev.Thread]
		if n := len(st); n > 0 && st[n-1].kind == k-1 {
			s.ends[st[n-1].i] = ev.Start
			s.open[ev.Thread] = st[:n-1]
		}
	}
}

type chromeArg struct {
	key  string
	s    string
	n    int64
	isS  bool
	flag bool // a boolean true
}

// spanEnds returns the spans of rank r, paired by a pass over its stream
// when o.Spans has none.
func (c *chromeWriter) spanEnds(r int) (*SpanEnds, error) {
	if s := c.o.Spans[r]; s != nil {
		return s, nil
	}
	src, closeSrc, err := c.o.Open(r)
	if err != nil {
		return nil, err
	}
	defer closeSrc()
	s := NewSpanEnds()
	for src.Next() {
		s.Event(src.Event())
	}
	return s, src.Err()
}

// rank writes the track of rank r.
func (c *chromeWriter) rank(r int) error {
	spans, err := c.spanEnds(r)
	if err != nil {
		return err
	}
	c.spans, c.nextSpan = spans.ends, 0
	src, closeSrc, err := c.o.Open(r)
	if err != nil {
		return err
	}
	defer closeSrc()
	nodes := c.rankNodes(r)
	c.names(r, -1, "rank "+strconv.Itoa(r), r)
	threads := map[int]*threadState{}
	var (
		lastTid int
		lastTh  *threadState
	)
	strs := src.Strings()
	off := c.offset(r)
	for idx := int64(0); src.Next(); idx++ {
		ev := src.Event()
		th := lastTh
		if ev.Thread != lastTid || th == nil {
			th = threads[ev.Thread]
			lastTid = ev.Thread
		}
		if th == nil {
			th = &threadState{}
			threads[ev.Thread] = th
			c.names(r, ev.Thread, "thread "+strconv.Itoa(ev.Thread), ev.Thread)
		}
		lastTh = th
		c.event(r, off, th, strs, ev, nodes.at(idx))
	}
	return src.Err()
}

// nodeCursor gives the nodes of a rank's events in event order: its
// operations (in event order unless reconstruction reordered them) merged
// with its collective calls.
type nodeCursor struct {
	g          *taskgraph.Graph
	first      taskgraph.NodeID
	n, i       int
	colls      []evNode // the collective calls, then (reordered ranks) the operations too, sorted
	j          int
	buf        []taskgraph.NodeID
	sortedOnly bool // every node is in colls
}

func (c *chromeWriter) rankNodes(r int) *nodeCursor {
	g := c.g
	nc := &nodeCursor{g: g}
	nc.first, nc.n = g.RankOps(r)
	g.RankCollectives(r, func(v taskgraph.NodeID, ev int64) bool {
		nc.colls = append(nc.colls, evNode{ev, v})
		return true
	})
	for i := 1; i < nc.n; i++ {
		if g.OpEvent(nc.first+taskgraph.NodeID(i)) < g.OpEvent(nc.first+taskgraph.NodeID(i-1)) {
			// Reordered operations: all of them go in the sorted list.
			for k := range nc.n {
				v := nc.first + taskgraph.NodeID(k)
				nc.colls = append(nc.colls, evNode{g.OpEvent(v), v})
			}
			nc.sortedOnly = true
			break
		}
	}
	slices.SortFunc(nc.colls, func(a, b evNode) int {
		return cmp.Or(cmp.Compare(a.ev, b.ev), cmp.Compare(a.v, b.v))
	})
	return nc
}

// at returns the nodes of event idx; idx increases from call to call.
func (nc *nodeCursor) at(idx int64) []taskgraph.NodeID {
	nc.buf = nc.buf[:0]
	for !nc.sortedOnly && nc.i < nc.n {
		v := nc.first + taskgraph.NodeID(nc.i)
		ev := nc.g.OpEvent(v)
		if ev > idx {
			break
		}
		if ev == idx {
			nc.buf = append(nc.buf, v)
		}
		nc.i++
	}
	for nc.j < len(nc.colls) && nc.colls[nc.j].ev <= idx {
		if nc.colls[nc.j].ev == idx {
			nc.buf = append(nc.buf, nc.colls[nc.j].v)
		}
		nc.j++
	}
	return nc.buf
}

// spanNames name the spans of a name in their slices ("region NAME").
var spanNames = map[spec.Kind]string{spec.RegionBegin: "region", spec.KernelBegin: "kernel", spec.CopyBegin: "copy", spec.SectionBegin: "section"}

// callKinds marks the kinds that are MPI calls (a function and a duration).
var callKinds = func() (k [spec.NumKinds]bool) {
	for i := range k {
		fs := spec.Kinds[i].Fields
		k[i] = slices.Contains(fs, spec.Fn) && slices.Contains(fs, spec.Dur)
	}
	return k
}()

// callArgs are, per kind, the fields a call's slice shows in args.
var callArgs = func() (t [spec.NumKinds][]spec.Field) {
	for i := range t {
		for _, f := range []spec.Field{spec.Peer, spec.Tag, spec.Bytes, spec.Comm, spec.Root, spec.RPeer, spec.RTag, spec.Src, spec.STag, spec.SBytes, spec.RBytes} {
			if slices.Contains(spec.Kinds[i].Fields, f) {
				t[i] = append(t[i], f)
			}
		}
	}
	return t
}()

func (c *chromeWriter) event(r int, off int64, th *threadState, strs *tracefmt.Strings, ev *tracefmt.Event, nodes []taskgraph.NodeID) {
	mid, ok := c.writeEvent(r, off, strs, ev, c, nodes)
	if !ok {
		return
	}
	for _, v := range nodes {
		c.flows(r, ev.Thread, mid, v)
	}
}

// nextSpanEnd returns the end of the rank's next span to begin, -1 when
// it has none.
func (c *chromeWriter) nextSpanEnd() int64 {
	end := int64(-1)
	if c.nextSpan < len(c.spans) {
		end = c.spans[c.nextSpan]
	}
	c.nextSpan++
	return end
}

// onPathAny reports whether one of the nodes of a call of rank r is on the
// critical path.
func (c *chromeWriter) onPathAny(r int, nodes []taskgraph.NodeID) bool {
	for _, v := range nodes {
		if c.g.Kind(v) == taskgraph.KindCollective {
			if c.collOnPath[[2]int64{int64(v), int64(r)}] {
				return true
			}
		} else if c.critical(v) {
			return true
		}
	}
	return false
}

// eventSource is what writeEvent asks of the rank being written: the end
// of its next span and whether a call's nodes are on the critical path.
type eventSource interface {
	nextSpanEnd() int64
	onPathAny(r int, nodes []taskgraph.NodeID) bool
}

// writeEvent writes the slice of event ev of rank r (offset off): a span
// at its begin, an MPI call, nothing for other events or events cut by
// --ranks or --window. For a call written, it returns the middle of its
// slice on the common clock, where its flows attach.
func (c *chromeWriter) writeEvent(r int, off int64, strs *tracefmt.Strings, ev *tracefmt.Event, es eventSource, nodes []taskgraph.NodeID) (mid int64, ok bool) {
	k := ev.Kind
	switch k {
	case spec.LoopBegin, spec.IterBegin, spec.RegionBegin, spec.KernelBegin, spec.CopyBegin, spec.SectionBegin:
		end := es.nextSpanEnd()
		if end < 0 || !c.keptAt(r, ev.Start) {
			return 0, false
		}
		var name string
		args := c.args[:0]
		switch k {
		case spec.LoopBegin:
			file, _ := strs.Lookup(uint64(ev.Get(spec.File)))
			loc := file + ":" + strconv.FormatInt(ev.Get(spec.Line), 10) + ":" + strconv.FormatInt(ev.Get(spec.Col), 10)
			name, args = "loop "+loc, append(args, chromeArg{key: "location", s: loc, isS: true})
		case spec.IterBegin:
			name, args = "iteration", append(args, chromeArg{key: "iter", n: ev.Get(spec.Iter)})
		default:
			n, _ := strs.Lookup(uint64(ev.Get(spec.Name)))
			name = spanNames[k] + " " + n
			if k == spec.CopyBegin {
				args = append(args, chromeArg{key: "bytes", n: ev.Get(spec.Bytes)})
			}
		}
		c.slice(r, ev.Thread, name, "span", ev.Start+off, max(end-ev.Start, 0), args)
		c.args = args
		return 0, false
	case spec.LoopEnd, spec.IterEnd, spec.RegionEnd, spec.KernelEnd, spec.CopyEnd, spec.SectionEnd:
		return 0, false // written at its begin
	}
	if int(k) >= len(callKinds) || !callKinds[k] || !c.keptAt(r, ev.Start) {
		return 0, false
	}
	name, ok := strs.Lookup(ev.Fn())
	if !ok {
		name = "fn " + strconv.FormatUint(ev.Fn(), 10)
	}
	args := c.args[:0]
	for _, f := range callArgs[k] {
		args = append(args, chromeArg{key: spec.Fields[f].Name, n: ev.Get(f)})
	}
	if es.onPathAny(r, nodes) {
		args = append(args, chromeArg{key: "critical", flag: true})
	}
	start, dur := ev.Start+off, max(ev.End-ev.Start, 0)
	c.slice(r, ev.Thread, name, "mpi", start, dur, args)
	c.args = args
	return start + dur/2, true
}

// flows writes the flow ends on the slice of node v, at ts.
func (c *chromeWriter) flows(r, tid int, ts int64, v taskgraph.NodeID) {
	g := c.g
	if g.Kind(v) == taskgraph.KindCollective {
		last, ok := c.lastArriver(v)
		if !ok {
			return
		}
		if r != last {
			if start, _, ok := g.PartTimes(v, last); ok && c.keptAt(last, start) {
				c.flow(r, tid, "s", ts, c.collFlowID(v, r), "collective")
			}
			return
		}
		for _, m := range g.Participants(v) {
			if start, _, ok := g.PartTimes(v, m); ok && m != r && c.keptAt(m, start) {
				c.flow(r, tid, "f", ts, c.collFlowID(v, m), "collective")
			}
		}
		return
	}
	c.edges = g.Out(v, c.edges[:0])
	for _, e := range c.edges {
		if e.Kind == taskgraph.Message && c.kept(g.Rank(e.To), func() int64 { return c.eventStart(e.To) }) {
			c.flow(r, tid, "s", ts, uint64(e.To), "message")
		}
	}
	c.edges = g.In(v, c.edges[:0])
	for _, e := range c.edges {
		if e.Kind == taskgraph.Message && c.kept(g.Rank(e.From), func() int64 { return c.eventStart(e.From) }) {
			c.flow(r, tid, "f", ts, uint64(v), "message")
		}
	}
}

// criticalTrack lays the path out on its own track, step after step from
// the earliest MPI_Init on the common clock: a slice per hop and per
// collective of non-zero weight, each as long as its share of the path.
func (c *chromeWriter) criticalTrack(p *critpath.Path) {
	pid := CriticalPID(c.g)
	c.names(pid, -1, "critical path", pid)
	c.names(pid, 0, fmt.Sprintf("critical path (%s)", durString(time.Duration(math.Round(p.Length)))), 0)
	t0, found := int64(0), false
	for _, r := range c.g.Ranks() {
		if t := origin(c.g, r) + c.offset(r); !found || t < t0 {
			t0, found = t, true
		}
	}
	at := 0.0 // ns since t0
	step := func(name string, w float64, args []chromeArg) {
		if w <= 0 {
			return
		}
		from := int64(math.Round(at))
		at += w
		c.slice(pid, 0, name, "critical", t0+from, int64(math.Round(at))-from, args)
	}
	for i := range p.NumVertices() {
		if x := p.Vertex(i); x.Weight > 0 {
			step(x.Name, x.Weight, []chromeArg{{key: "model", s: x.Model, isS: true}, {key: "procs", n: int64(x.Procs)}, {key: "bytes", n: x.Bytes}})
		}
		if i == p.NumVertices()-1 {
			break
		}
		h := p.Hop(i)
		if h.Kind == taskgraph.Message {
			step(fmt.Sprintf("message %d→%d", c.g.Rank(h.From), c.g.Rank(h.To)), h.Weight,
				[]chromeArg{{key: "bytes", n: h.Bytes}, {key: "from", s: c.g.Name(h.From), isS: true}, {key: "to", s: c.g.Name(h.To), isS: true}})
			continue
		}
		step("compute on rank "+strconv.Itoa(h.Rank), h.Weight,
			[]chromeArg{{key: "from", s: c.g.Name(h.From), isS: true}, {key: "rank", n: int64(h.Rank)}, {key: "to", s: c.g.Name(h.To), isS: true}})
	}
}

// The writers of events. Keys are written in sorted order, args sorted
// by key.

func (c *chromeWriter) begin() {
	if c.first {
		c.buf = append(c.buf, ",\n"...)
	} else {
		c.buf = append(c.buf, '\n')
		c.first = true
	}
}

func (c *chromeWriter) flush() {
	c.w.Write(c.buf)
	c.buf = c.buf[:0]
}

// meta writes a metadata event: a process's or thread's name (what
// "process_name" or "thread_name", a string) or sort index.
func (c *chromeWriter) meta(pid, tid int, what string, arg chromeArg) {
	c.begin()
	c.buf = append(c.buf, `{"args":{`...)
	c.buf = c.appendArg(c.buf, arg)
	c.buf = append(c.buf, `},"name":"`...)
	c.buf = append(c.buf, what...)
	c.buf = append(c.buf, `","ph":"M","pid":`...)
	c.buf = c.ids(pid, tid)
	c.buf = append(c.buf, '}')
	c.flush()
}

// names writes the name and sort index of a process (tid < 0) or thread.
func (c *chromeWriter) names(pid, tid int, name string, index int) {
	what := "process_"
	if tid >= 0 {
		what = "thread_"
	}
	c.meta(pid, tid, what+"name", chromeArg{key: "name", s: name, isS: true})
	c.meta(pid, tid, what+"sort_index", chromeArg{key: "sort_index", n: int64(index)})
}

func (c *chromeWriter) appendArg(b []byte, a chromeArg) []byte {
	b = appendJSONString(b, a.key)
	b = append(b, ':')
	switch {
	case a.flag:
		return append(b, "true"...)
	case a.isS:
		return appendJSONString(b, a.s)
	}
	return strconv.AppendInt(b, a.n, 10)
}

// end writes an event's last keys, pid, tid and ts, and the event.
func (c *chromeWriter) end(pid, tid int, ts int64) {
	b := c.ids(pid, tid)
	b = append(b, `,"ts":`...)
	b = appendMicros(b, ts)
	c.buf = append(b, '}')
	c.flush()
}

// ids appends the pid (already keyed) and, for tid >= 0, the tid.
func (c *chromeWriter) ids(pid, tid int) []byte {
	b := strconv.AppendInt(c.buf, int64(pid), 10)
	if tid >= 0 {
		b = append(b, `,"tid":`...)
		b = strconv.AppendInt(b, int64(tid), 10)
	}
	return b
}

func (c *chromeWriter) slice(pid, tid int, name, cat string, ts, dur int64, args []chromeArg) {
	c.begin()
	b := c.buf
	if len(args) > 0 {
		byKey := func(a, b chromeArg) int { return cmp.Compare(a.key, b.key) }
		if !slices.IsSortedFunc(args, byKey) {
			slices.SortFunc(args, byKey)
		}
		b = append(b, `{"args":{`...)
		for i, a := range args {
			if i > 0 {
				b = append(b, ',')
			}
			b = c.appendArg(b, a)
		}
		b = append(b, `},"cat":"`...)
	} else {
		b = append(b, `{"cat":"`...)
	}
	b = append(b, cat...)
	b = append(b, `","dur":`...)
	b = appendMicros(b, dur)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, name)
	b = append(b, `,"ph":"X","pid":`...)
	c.buf = b
	c.end(pid, tid, ts)
}

func (c *chromeWriter) flow(pid, tid int, ph string, ts int64, id uint64, cat string) {
	c.begin()
	b := c.buf
	if ph == "f" {
		b = append(b, `{"bp":"e","cat":"`...)
	} else {
		b = append(b, `{"cat":"`...)
	}
	b = append(b, cat...)
	b = append(b, `","id":`...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, `,"name":"`...)
	b = append(b, cat...)
	b = append(b, `","ph":"`...)
	b = append(b, ph...)
	b = append(b, `","pid":`...)
	c.buf = b
	c.end(pid, tid, ts)
}

// appendMicros appends ns as microseconds with three decimals (exact).
func appendMicros(b []byte, ns int64) []byte {
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = uint64(-ns)
	}
	b = strconv.AppendUint(b, u/1000, 10)
	frac := u % 1000
	b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	return b
}

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		ch := s[i]
		if ch < utf8.RuneSelf {
			switch {
			case ch == '"' || ch == '\\':
				b = append(b, '\\', ch)
			case ch < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[ch>>4], hex[ch&15])
			default:
				b = append(b, ch)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
