package regions

import (
	"cmp"
	"reflect"
	"slices"
	"strconv"

	"github.com/mpitrace/mpitrace/analysis/internal/spanset"
	"github.com/mpitrace/mpitrace/internal/cxxname"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Node kinds, as the output names them.
const (
	KindRegion  = "region"
	KindFor     = "for"
	KindReduce  = "reduce"
	KindScan    = "scan"
	KindFence   = "fence"
	KindCopy    = "copy"
	KindSection = "section"
	// KindKernel is a kernel whose type is none of the known ones.
	KindKernel = "kernel"
)

// kernelKinds are the kinds of KernelBegin's types.
var kernelKinds = map[int64]string{spec.KernelFor: KindFor, spec.KernelReduce: KindReduce, spec.KernelScan: KindScan, spec.KernelFence: KindFence}

// nodeKey identifies a node of a rank's tree: its parent, kind and the
// string ids that name it (a copy's four: space, label, source space,
// source label).
type nodeKey struct {
	parent int32 // -1 at the top
	kind   string
	ids    [4]uint64
	deep   bool // the node of everything nested deeper than MaxDepth
}

// MaxDepth is the deepest nesting the tree keeps (the recorder keeps 128
// per thread): what a crafted trace nests deeper lands in one node,
// DeepName, under the node at that depth.
const MaxDepth = 200

// DeepName names the node of what is nested deeper than MaxDepth.
const DeepName = "(nested deeper than 200)"

// Figures are what a node did, on a rank or summed over ranks.
type Figures struct {
	Calls uint64 `json:"calls"`
	// TotalNs is the inclusive time, the sum of end - begin; SelfNs the
	// same less the time of the nodes nested in it; MPINs the time of the
	// MPI calls its thread made while it was open.
	TotalNs int64 `json:"total_ns"`
	SelfNs  int64 `json:"self_ns"`
	MPINs   int64 `json:"mpi_ns"`
	// Bytes copied (deep copies only).
	Bytes uint64 `json:"bytes,omitempty"`
	// Unwound calls the recorder ended itself; Unclosed calls still open
	// at the end of their thread.
	Unwound  uint64 `json:"unwound,omitempty"`
	Unclosed uint64 `json:"unclosed,omitempty"`
}

// node is a node of a rank's tree.
type node struct {
	nodeKey
	Figures
	spans []spanset.Span // its calls, with KeepSpans
}

// frame is an open region, kernel or copy of a thread.
type frame struct {
	node  int32
	begin spec.Kind // its begin kind
	start int64
	child int64 // the nested nodes' time so far
	mpi0  int64 // the thread's MPI time when it began
}

// openSection is a started profile section of a thread.
type openSection struct {
	node  int32
	start int64
	mpi0  int64
}

type thread struct {
	stack []frame
	secs  map[int64][]openSection // by section id, latest last
	mpi   int64                   // the thread's MPI time so far
	last  int64                   // end of its latest event
}

// memEvent is an allocation (bytes > 0) or a deallocation (bytes < 0).
type memEvent struct {
	t     int64
	bytes int64
}

type memSpace struct {
	events []memEvent
	MemCounts
}

// Aggregator reads one rank's events and builds its tree of regions,
// kernels, deep copies and sections: a single-pass consumer (Event for
// every event, in the reader's order, then Finish). Events of other kinds
// are ignored, but for MPI calls, whose time counts in the nodes open
// around them.
//
// Events that do not nest (tracefmt.Validator names them) are counted and
// skipped: an end with nothing of its kind open (Skipped), a pop the
// recorder flagged EndUnmatched (Unmatched). An end that closes a node
// while nodes begun inside it are still open closes those too, at the
// same time (Crossed). What is still open when the thread's events end is
// closed at the end of the thread's last event (Unclosed).
type Aggregator struct {
	// KeepSpans keeps every call's interval, for Spans (the critical
	// path's attribution to regions and kernels): 16 bytes per call.
	KeepSpans bool

	rank    int
	strs    *tracefmt.Strings
	nodes   []node
	index   map[nodeKey]int32
	threads map[int]*thread
	mem     map[uint64]*memSpace
	marks   map[uint64]uint64
	meta    map[[2]uint64]bool
	metaOrd [][2]uint64
	dvs     map[uint64]*DualViewCount
	devices map[uint64]uint64 // kernels by device type
	counts  Counts
	// lastClosed is the node close closed last.
	lastClosed int32
	// open counts the nodes open in every thread: while it is 0, MPI calls
	// are not followed.
	open int
}

// Counts are the region events that did not nest, and how many calls
// ended unwound.
type Counts struct {
	// Unwound: ends the recorder made itself (EndUnwound).
	Unwound uint64 `json:"unwound"`
	// Unmatched: pops without an open region (EndUnmatched): nothing closed.
	Unmatched uint64 `json:"unmatched"`
	// Skipped: ends with nothing of their kind open, and section stops of
	// sections not started.
	Skipped uint64 `json:"skipped"`
	// Crossed: nodes closed by the end of a node around them.
	Crossed uint64 `json:"crossed"`
	// Unclosed: nodes still open at the end of their thread, closed at its
	// last event.
	Unclosed uint64 `json:"unclosed"`
}

// NewAggregator returns an aggregator for a rank with the given header and
// string table (a RankReader's, valid until Finish).
//
// Its tables are made with the rank's first region event: a rank without
// costs a few bytes (a trace may have thousands of ranks).
func NewAggregator(h *tracefmt.Header, strs *tracefmt.Strings) *Aggregator {
	return &Aggregator{rank: h.Rank, strs: strs}
}

// makeTables makes the aggregator's tables.
func (a *Aggregator) makeTables() {
	a.index, a.threads = map[nodeKey]int32{}, map[int]*thread{}
	a.mem, a.marks, a.meta = map[uint64]*memSpace{}, map[uint64]uint64{}, map[[2]uint64]bool{}
	a.dvs, a.devices = map[uint64]*DualViewCount{}, map[uint64]uint64{}
}

func (a *Aggregator) thread(t int) *thread {
	th := a.threads[t]
	if th == nil {
		th = &thread{}
		a.threads[t] = th
	}
	return th
}

// Event consumes the rank's next event.
func (a *Aggregator) Event(ev *tracefmt.Event) {
	if ev.Kind >= spec.NumKinds {
		return
	}
	if spec.Kinds[ev.Kind].IsCall {
		if a.open == 0 {
			// An MPI call's time matters only inside a node: a trace
			// without region events costs this test per call.
			return
		}
		th := a.thread(ev.Thread)
		th.mpi += max(ev.End-ev.Start, 0)
		th.last = max(th.last, ev.End)
		return
	}
	if ev.Kind < spec.RegionBegin {
		return
	}
	if a.index == nil {
		a.makeTables()
	}
	th := a.thread(ev.Thread)
	th.last = max(th.last, ev.End)
	id := func(f spec.Field) uint64 { return uint64(ev.F[f]) }
	switch ev.Kind {
	case spec.RegionBegin:
		a.push(th, ev, nodeKey{kind: KindRegion, ids: [4]uint64{id(spec.Name)}})
	case spec.KernelBegin:
		kind, ok := kernelKinds[ev.F[spec.Type]]
		if !ok {
			kind = KindKernel
		}
		a.devices[id(spec.Dev)>>24]++
		a.push(th, ev, nodeKey{kind: kind, ids: [4]uint64{id(spec.Name)}})
	case spec.CopyBegin:
		a.push(th, ev, nodeKey{kind: KindCopy, ids: [4]uint64{id(spec.Space), id(spec.Name), id(spec.SrcSpace), id(spec.SrcName)}})
		a.nodes[th.stack[len(th.stack)-1].node].Bytes += ev.Bytes()
	case spec.RegionEnd, spec.KernelEnd, spec.CopyEnd:
		a.end(th, ev)
	case spec.SectionBegin:
		n := a.nodeOf(nodeKey{parent: -1, kind: KindSection, ids: [4]uint64{id(spec.Name)}})
		if th.secs == nil {
			th.secs = map[int64][]openSection{}
		}
		sec := ev.F[spec.Sec]
		th.secs[sec] = append(th.secs[sec], openSection{node: n, start: ev.Start, mpi0: th.mpi})
		a.open++
	case spec.SectionEnd:
		sec := ev.F[spec.Sec]
		open := th.secs[sec]
		if len(open) == 0 {
			a.counts.Skipped++
			return
		}
		s := open[len(open)-1]
		a.open--
		if len(open) == 1 {
			delete(th.secs, sec)
		} else {
			th.secs[sec] = open[:len(open)-1]
		}
		a.close(s.node, s.start, ev.Start, 0, th.mpi-s.mpi0)
	case spec.Alloc, spec.Free:
		m := a.mem[id(spec.Space)]
		if m == nil {
			m = &memSpace{}
			a.mem[id(spec.Space)] = m
		}
		b := int64(min(ev.Bytes(), 1<<62))
		if ev.Kind == spec.Alloc {
			m.Allocations++
			m.Allocated += ev.Bytes()
		} else {
			m.Frees++
			b = -b
		}
		m.events = append(m.events, memEvent{t: ev.Start, bytes: b})
	case spec.Mark:
		a.marks[id(spec.Name)]++
	case spec.Meta:
		kv := [2]uint64{id(spec.Name), id(spec.Value)}
		if !a.meta[kv] {
			a.meta[kv] = true
			a.metaOrd = append(a.metaOrd, kv)
		}
	case spec.DualView:
		d := a.dvs[id(spec.Name)]
		if d == nil {
			d = &DualViewCount{}
			a.dvs[id(spec.Name)] = d
		}
		switch f := ev.Flags(); {
		case f&spec.DualViewModify != 0 && f&spec.DualViewDevice != 0:
			d.ModifyDevice++
		case f&spec.DualViewModify != 0:
			d.ModifyHost++
		case f&spec.DualViewDevice != 0:
			d.SyncDevice++
		default:
			d.SyncHost++
		}
	}
}

// nodeOf returns the node of k, creating it.
func (a *Aggregator) nodeOf(k nodeKey) int32 {
	n, ok := a.index[k]
	if !ok {
		n = int32(len(a.nodes))
		a.nodes = append(a.nodes, node{nodeKey: k})
		a.index[k] = n
	}
	return n
}

// push opens the node k under the thread's innermost open node.
func (a *Aggregator) push(th *thread, ev *tracefmt.Event, k nodeKey) {
	k.parent = -1
	if len(th.stack) > 0 {
		k.parent = th.stack[len(th.stack)-1].node
	}
	if len(th.stack) >= MaxDepth {
		k = nodeKey{parent: th.stack[MaxDepth-1].node, kind: KindRegion, deep: true}
	}
	th.stack = append(th.stack, frame{node: a.nodeOf(k), begin: ev.Kind, start: ev.Start, mpi0: th.mpi})
	a.open++
}

// end closes the innermost open node of the end's kind, and any begun
// inside it.
func (a *Aggregator) end(th *thread, ev *tracefmt.Event) {
	if ev.Kind == spec.RegionEnd && ev.Flags()&spec.EndUnmatched != 0 {
		a.counts.Unmatched++
		return
	}
	begin := tracefmt.NestedBegin(ev.Kind)
	i := len(th.stack) - 1
	for i >= 0 && th.stack[i].begin != begin {
		i--
	}
	if i < 0 {
		a.counts.Skipped++
		return
	}
	a.counts.Crossed += uint64(len(th.stack) - 1 - i)
	a.popTo(th, i, ev.Start)
	if ev.Flags()&spec.EndUnwound != 0 {
		a.counts.Unwound++
		a.nodes[a.lastClosed].Unwound++
	}
}

// popTo closes the frames of th from the innermost down to frame i, at t.
func (a *Aggregator) popTo(th *thread, i int, t int64) {
	for len(th.stack) > i {
		f := th.stack[len(th.stack)-1]
		th.stack = th.stack[:len(th.stack)-1]
		a.open--
		incl := a.close(f.node, f.start, t, f.child, th.mpi-f.mpi0)
		if len(th.stack) > 0 {
			th.stack[len(th.stack)-1].child += incl
		}
	}
}

// close adds a call of node n from start to end, with child time in its
// nested nodes and mpi in MPI calls, and returns its time.
func (a *Aggregator) close(n int32, start, end, child, mpi int64) int64 {
	nd := &a.nodes[n]
	incl := max(end-start, 0)
	nd.Calls++
	nd.TotalNs += incl
	nd.SelfNs += max(incl-child, 0)
	nd.MPINs += min(max(mpi, 0), incl)
	if a.KeepSpans && incl > 0 {
		nd.spans = append(nd.spans, spanset.Span{Start: start, End: start + incl})
	}
	a.lastClosed = n
	return incl
}

// RankRegions is one rank's tree, memory and metadata.
type RankRegions struct {
	Rank   int
	Counts Counts
	nodes  map[string]*rankNode // by path key
	order  []string             // keys, parents before children
	mem    map[string]*rankMem  // by space name
	marks  map[string]uint64
	meta   [][2]string // key, value; distinct, in order of appearance
	dvs    map[string]*DualViewCount
	// devices counts kernels by device type name.
	devices map[string]uint64
	spans   *spanset.Rank // with KeepSpans
}

type rankNode struct {
	kind, name string
	parent     string // key of the parent, "" at the top
	depth      int
	Figures
}

type rankMem struct {
	MemCounts
	high, live int64
}

// nameOf returns the string of id, or "#id" when the table lacks it.
func (a *Aggregator) nameOf(id uint64) string {
	if s, ok := a.strs.Lookup(id); ok {
		return s
	}
	return "#" + strconv.FormatUint(id, 10)
}

// Name returns the node name of a copy: "deep_copy DST_SPACE:DST_LABEL <-
// SRC_SPACE:SRC_LABEL".
func copyName(space, label, srcSpace, srcLabel string) string {
	return "deep_copy " + space + ":" + label + " <- " + srcSpace + ":" + srcLabel
}

// Finish closes what is still open and returns the rank's regions.
func (a *Aggregator) Finish() *RankRegions {
	threads := make([]int, 0, len(a.threads))
	for t := range a.threads {
		threads = append(threads, t)
	}
	slices.Sort(threads)
	for _, t := range threads {
		th := a.threads[t]
		a.counts.Unclosed += uint64(len(th.stack))
		for _, f := range th.stack {
			a.nodes[f.node].Unclosed++
		}
		a.popTo(th, 0, th.last)
		secs := make([]int64, 0, len(th.secs))
		for s := range th.secs {
			secs = append(secs, s)
		}
		slices.Sort(secs)
		for _, s := range secs {
			for _, o := range th.secs[s] {
				a.counts.Unclosed++
				a.nodes[o.node].Unclosed++
				a.close(o.node, o.start, th.last, 0, th.mpi-o.mpi0)
			}
		}
	}
	r := &RankRegions{Rank: a.rank, Counts: a.counts, nodes: map[string]*rankNode{}, mem: map[string]*rankMem{},
		marks: map[string]uint64{}, dvs: map[string]*DualViewCount{}, devices: map[string]uint64{}}
	keys := make([]string, len(a.nodes))
	if a.KeepSpans {
		r.spans = spanset.NewRank()
	}
	for i := range a.nodes {
		n := &a.nodes[i]
		name := a.nameOf(n.ids[0])
		switch {
		case n.deep:
			name = DeepName
		case n.kind == KindCopy:
			name = copyName(name, a.nameOf(n.ids[1]), a.nameOf(n.ids[2]), a.nameOf(n.ids[3]))
		case n.kind == KindRegion || n.kind == KindSection:
		default:
			// A kernel launched without a label is named by its
			// functor's mangled type.
			name = cxxname.Readable(name)
		}
		parent, depth := "", 0
		if n.parent >= 0 { // parents are created before their children
			parent = keys[n.parent]
			depth = r.nodes[parent].depth + 1
		}
		keys[i] = pathKey(parent, n.kind, name)
		rn := r.nodes[keys[i]]
		if rn == nil {
			// Two nodes get one key only when string ids differ but name
			// the same strings: they are one node.
			rn = &rankNode{kind: n.kind, name: name, parent: parent, depth: depth}
			r.nodes[keys[i]] = rn
			r.order = append(r.order, keys[i])
		}
		addCounts(&rn.Figures, &n.Figures)
		if r.spans != nil {
			r.spans.Add(keys[i], parent, depth, n.spans)
		}
	}
	if r.spans != nil {
		r.spans.Finish()
	}
	for id, m := range a.mem {
		name := a.nameOf(id)
		rm := r.mem[name]
		if rm == nil {
			rm = &rankMem{}
			r.mem[name] = rm
		}
		addCounts(&rm.MemCounts, &m.MemCounts)
	}
	a.highWater(r)
	for id, n := range a.marks {
		r.marks[a.nameOf(id)] += n
	}
	for _, kv := range a.metaOrd {
		x := [2]string{a.nameOf(kv[0]), a.nameOf(kv[1])}
		if !slices.Contains(r.meta, x) {
			r.meta = append(r.meta, x)
		}
	}
	for id, d := range a.dvs {
		name := a.nameOf(id)
		x := r.dvs[name]
		if x == nil {
			x = &DualViewCount{Name: name}
			r.dvs[name] = x
		}
		addCounts(x, d)
	}
	for t, n := range a.devices {
		r.devices[DeviceType(t)] += n
	}
	return r
}

// highWater computes each space's high-water mark of live bytes: the
// allocations and deallocations of every thread in the order of their
// start times (the reader's order between equal times), as a running sum.
func (a *Aggregator) highWater(r *RankRegions) {
	byName := map[string][]memEvent{}
	for id, m := range a.mem {
		name := a.nameOf(id)
		byName[name] = append(byName[name], m.events...)
	}
	for name, evs := range byName {
		slices.SortStableFunc(evs, func(x, y memEvent) int { return cmp.Compare(x.t, y.t) })
		var live, high int64
		for _, e := range evs {
			live += e.bytes
			high = max(high, live)
		}
		r.mem[name].high, r.mem[name].live = high, live
	}
}

// pathKey is the key of a node: its parent's key, then its kind and name,
// each with its length, so that no name can make two paths one.
func pathKey(parent, kind, name string) string {
	return parent + strconv.Itoa(len(kind)) + ":" + kind + strconv.Itoa(len(name)) + ":" + name
}

// deviceTypes are the Kokkos device types by their number (the device
// id's top 8 bits).
var deviceTypes = []string{"Serial", "OpenMP", "Cuda", "HIP", "OpenMPTarget", "HPX", "Threads", "SYCL"}

// DeviceType names the device type of a Kokkos device id's top 8 bits:
// Serial, OpenMP, Cuda, HIP, OpenMPTarget, HPX, Threads, SYCL, or
// "device type N".
func DeviceType(t uint64) string {
	if t < uint64(len(deviceTypes)) {
		return deviceTypes[t]
	}
	return "device type " + strconv.FormatUint(t, 10)
}

// RankOf aggregates the region events of src, read to the end.
func RankOf(src tracefmt.Source) (*RankRegions, error) {
	a := NewAggregator(src.Header(), src.Strings())
	for src.Next() {
		a.Event(src.Event())
	}
	return a.Finish(), src.Err()
}

// addCounts adds every integer field of *src to *dst: Figures, Counts,
// MemCounts and DualViewCount are structs of counters (a DualViewCount's
// name is left alone).
func addCounts[T any](dst, src *T) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := range d.NumField() {
		switch f := d.Field(i); f.Kind() {
		case reflect.Int64:
			f.SetInt(f.Int() + s.Field(i).Int())
		case reflect.Uint64:
			f.SetUint(f.Uint() + s.Field(i).Uint())
		}
	}
}
