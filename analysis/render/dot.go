package render

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/emicklei/dot"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// DOTOptions select what WriteDOT draws and how it writes times. The zero
// value draws the whole graph with times in microseconds.
type DOTOptions struct {
	// Unit is the unit of the times in labels (critpath.Microsecond when 0).
	Unit critpath.Unit
	// CriticalOnly keeps only the critical path's vertices and edges; it
	// needs a path.
	CriticalOnly bool
	// Ranks, when not nil, keeps only these ranks' clusters and the shared
	// vertices on their chains; messages to and from other ranks end at a
	// "rank N" stub node per other rank.
	Ranks RankSet
	// Window, when not nil, keeps only the operations that start within it
	// (on each rank's clock, from the end of the rank's MPI_Init) and the
	// shared vertices joined to them.
	Window *Window
	// Model names the latency model in the graph's label (e.g. the model
	// file). When empty it is described from the model: a *latency.Model's
	// Source (and machine), "none" for a nil model.
	Model string
	// Sites, when not nil, names the vertices' call sites in their
	// tooltips.
	Sites critpath.SiteLabel
	// MaxVertices, when above 0, is the most vertices WriteDOTCount
	// draws: a bigger picture is refused with a *TooBigError before a byte
	// is written (the picture is built in memory, about 3 KB a vertex).
	MaxVertices int
}

// TooBigError is WriteDOTCount's refusal of a picture of more than
// DOTOptions.MaxVertices vertices.
type TooBigError struct {
	Vertices, Max int
	// AtLeast says the picture was not counted whole: it has Vertices
	// or more.
	AtLeast bool
}

func (e *TooBigError) Error() string {
	if e.AtLeast {
		return fmt.Sprintf("render: the picture would have more than %d vertices", e.Max)
	}
	return fmt.Sprintf("render: the picture would have %d vertices, more than %d", e.Vertices, e.Max)
}

// RankRange is an inclusive range of world ranks.
type RankRange struct{ First, Last int }

// Contains reports whether rank r is in the range.
func (r RankRange) Contains(rank int) bool { return rank >= r.First && rank <= r.Last }

// String returns "A-B", or "A" for a single rank.
func (r RankRange) String() string {
	if r.First == r.Last {
		return strconv.Itoa(r.First)
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last)
}

// RankSet is a set of world ranks: ranges sorted by First, neither
// overlapping nor adjacent (NewRankSet makes them so).
type RankSet []RankRange

// NewRankSet returns the set of the ranks in the given ranges.
func NewRankSet(ranges ...RankRange) RankSet {
	rs := slices.Clone(ranges)
	slices.SortFunc(rs, func(a, b RankRange) int { return cmp.Compare(a.First, b.First) })
	var s RankSet
	for _, r := range rs {
		if n := len(s); n > 0 && r.First <= s[n-1].Last+1 {
			s[n-1].Last = max(s[n-1].Last, r.Last)
			continue
		}
		s = append(s, r)
	}
	return s
}

// Contains reports whether rank r is in the set.
func (s RankSet) Contains(rank int) bool {
	for _, r := range s {
		if r.Contains(rank) {
			return true
		}
	}
	return false
}

// Max returns the largest rank of the set, -1 for an empty set.
func (s RankSet) Max() int {
	if len(s) == 0 {
		return -1
	}
	return s[len(s)-1].Last
}

// String returns the ranges separated by commas: "0-2,4,7".
func (s RankSet) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// Window is a time window [Start, End) on each rank's clock, measured from
// the end of that rank's MPI_Init. End 0 means no end.
type Window struct{ Start, End time.Duration }

// Contains reports whether t lies in the window.
func (w Window) Contains(t time.Duration) bool {
	return t >= w.Start && (w.End == 0 || t < w.End)
}

// String returns "[1.5s, 2s)", or "[1s, end)" without an end.
func (w Window) String() string {
	end := "end"
	if w.End != 0 {
		end = durString(w.End)
	}
	return "[" + durString(w.Start) + ", " + end + ")"
}

func durString(d time.Duration) string { return strings.ReplaceAll(d.String(), "µ", "u") }

// Highlight attributes of the critical path's vertices and edges. No other
// element has a penwidth.
const (
	CriticalColor    = "red"
	CriticalPenwidth = "3"
)

// WriteDOT writes g as a Graphviz digraph: a cluster per rank with its
// operations in program order, MPI_Init, MPI_Finalize and the collectives
// outside the clusters, edges labelled with their weights, and the critical
// path p highlighted (p may be nil: nothing is). m weighs the message and
// collective labels as critpath.Compute weighed the path (nil: 0). See the
// package documentation for the picture and the options.
func WriteDOT(w io.Writer, g *taskgraph.Graph, p *critpath.Path, m critpath.Model, o DOTOptions) error {
	_, err := WriteDOTCount(w, g, p, m, o)
	return err
}

// WriteDOTCount is WriteDOT, and returns the number of vertices drawn.
// Graphs of more than newrankLimit vertices are ranked cluster by cluster
// (no newrank=true), which Graphviz does faster and in less memory.
func WriteDOTCount(w io.Writer, g *taskgraph.Graph, p *critpath.Path, m critpath.Model, o DOTOptions) (int, error) {
	if o.Unit <= 0 {
		o.Unit = critpath.Microsecond
	}
	if err := checkOptions(g, p, &o); err != nil {
		return 0, err
	}
	v := selectView(g, p, &o)
	if n := v.vertices(); o.MaxVertices > 0 && n > o.MaxVertices {
		return n, &TooBigError{Vertices: n, Max: o.MaxVertices}
	}
	d := &drawer{g: g, v: v, m: m, o: &o}
	return v.vertices(), d.draw(w, p)
}

// vertices returns the number of vertices the view draws.
func (v *view) vertices() int {
	n := len(v.stubs)
	for _, k := range v.keep {
		if k {
			n++
		}
	}
	return n
}

func checkOptions(g *taskgraph.Graph, p *critpath.Path, o *DOTOptions) error {
	if o.CriticalOnly && p == nil {
		return errors.New("render: CriticalOnly needs a critical path")
	}
	for _, r := range o.Ranks {
		if r.First < 0 || r.Last < r.First || r.Last >= g.Size() {
			return fmt.Errorf("render: ranks %s: the graph has ranks 0-%d", o.Ranks, g.Size()-1)
		}
	}
	if w := o.Window; w != nil && (w.Start < 0 || w.End < 0 || w.End != 0 && w.End <= w.Start) {
		return fmt.Errorf("render: window %s is empty or negative", w)
	}
	return nil
}

// edgeKey identifies an edge: two edges never share all four fields.
type edgeKey struct {
	from, to taskgraph.NodeID
	kind     taskgraph.EdgeKind
	rank     int
}

func keyOf(e taskgraph.Edge) edgeKey { return edgeKey{e.From, e.To, e.Kind, e.Rank} }

// drawnEdge is an edge to draw; a message to or from a rank outside
// DOTOptions.Ranks has that rank's stub in place of the operation.
type drawnEdge struct {
	taskgraph.Edge
	stubFrom, stubTo int // rank of the stub, or -1
}

// view is what the options keep of the graph.
type view struct {
	keep      []bool // per node
	onPath    []bool // per node (nil without a path)
	pathEdges map[edgeKey]bool
	edges     []drawnEdge
	stubs     map[int]bool // ranks that have a stub node
	// counts for the label
	ops, colls, allEdges int
}

// selectView decides which nodes and edges are drawn (see the package
// documentation for the rules).
func selectView(g *taskgraph.Graph, p *critpath.Path, o *DOTOptions) *view {
	n := g.NumNodes()
	v := &view{keep: make([]bool, n), stubs: make(map[int]bool)}
	if p != nil {
		v.onPath = make([]bool, n)
		v.pathEdges = make(map[edgeKey]bool, p.NumVertices()-1)
		for i := range p.NumVertices() {
			v.onPath[p.Vertex(i).ID] = true
			if i+1 < p.NumVertices() {
				h := p.Hop(i)
				v.pathEdges[edgeKey{h.From, h.To, h.Kind, h.Rank}] = true
			}
		}
	}
	filtered := o.CriticalOnly || o.Ranks != nil || o.Window != nil
	candidate := func(e taskgraph.Edge) bool { return !o.CriticalOnly || v.pathEdges[keyOf(e)] }
	shared := func(id taskgraph.NodeID) bool { return g.Kind(id) != taskgraph.KindOp }
	keep := func(id taskgraph.NodeID) bool { return v.keep[id] }
	set := func(id taskgraph.NodeID) { v.keep[id] = true }

	// Operations.
	for _, r := range g.Ranks() {
		first, cnt := g.RankOps(r)
		if cnt == 0 || !o.inRanks(r) {
			continue
		}
		org := origin(g, r)
		for i := 0; i < cnt; i++ {
			id := first + taskgraph.NodeID(i)
			if o.CriticalOnly && !v.onPath[id] {
				continue
			}
			if o.Window != nil && !o.Window.Contains(time.Duration(g.Node(id).Start-org)) {
				continue
			}
			v.keep[id] = true
		}
	}
	// Shared vertices: all of them without a filter, else those joined to
	// a kept operation, or (without a window) on the chain of a kept rank.
	if !filtered {
		for id := range v.keep {
			v.keep[id] = true
		}
	} else {
		for e := range g.Edges {
			if candidate(e) {
				o.keepShared(e, shared(e.From), shared(e.To), keep, set)
			}
		}
	}
	// Edges.
	for e := range g.Edges {
		v.allEdges++
		if !candidate(e) {
			continue
		}
		if de, ok := o.drawEdge(e, shared(e.From), shared(e.To), v.keep[e.From], v.keep[e.To], g.Rank); ok {
			v.edges = append(v.edges, de)
			for _, r := range [2]int{de.stubFrom, de.stubTo} {
				if r >= 0 {
					v.stubs[r] = true
				}
			}
		}
	}
	for id, k := range v.keep {
		if !k {
			continue
		}
		switch g.Kind(taskgraph.NodeID(id)) {
		case taskgraph.KindOp:
			v.ops++
		case taskgraph.KindCollective:
			v.colls++
		}
	}
	return v
}

// inRanks says whether the picture draws rank r's operations.
func (o *DOTOptions) inRanks(r int) bool { return o.Ranks == nil || o.Ranks.Contains(r) }

// keepShared keeps what edge e, whose ends are shared vertices or not
// (su, sw), keeps of the shared vertices in a picture of a part: a
// shared end whose other end is kept; without a window, both ends of an
// edge between shared vertices on a drawn rank's chain. keep and set read
// and set what is kept.
func (o *DOTOptions) keepShared(e taskgraph.Edge, su, sw bool, keep func(taskgraph.NodeID) bool, set func(taskgraph.NodeID)) {
	switch {
	case su && sw:
		if o.Window == nil && o.inRanks(e.Rank) {
			set(e.From)
			set(e.To)
		}
	case su && keep(e.To):
		set(e.From)
	case sw && keep(e.From):
		set(e.To)
	}
}

// drawEdge says whether a picture draws edge e, whose ends are shared
// vertices or not (su, sw) and kept or not (ku, kw), and how: between
// kept ends, or a message to or from a rank not drawn, from or to that
// rank's stub (rank gives an operation's rank).
func (o *DOTOptions) drawEdge(e taskgraph.Edge, su, sw, ku, kw bool, rank func(taskgraph.NodeID) int) (drawnEdge, bool) {
	switch {
	case ku && kw && (!su || !sw || o.inRanks(e.Rank)):
		return drawnEdge{e, -1, -1}, true
	case e.Kind != taskgraph.Message || o.Ranks == nil:
	case ku && !o.inRanks(rank(e.To)):
		return drawnEdge{e, -1, rank(e.To)}, true
	case kw && !o.inRanks(rank(e.From)):
		return drawnEdge{e, rank(e.From), -1}, true
	}
	return drawnEdge{}, false
}

// origin is the time rank r's window is measured from: the end of its
// MPI_Init, or its first operation's start when it has none.
func origin(g *taskgraph.Graph, r int) int64 {
	initEnd, _, ok := g.RankSpan(r)
	if ok || initEnd != 0 {
		return initEnd
	}
	if first, n := g.RankOps(r); n > 0 {
		return g.Node(first).Start
	}
	return 0
}

type drawer struct {
	g *taskgraph.Graph
	v *view
	m critpath.Model
	o *DOTOptions
}

// siteTip is ", called at stencil.c:88 exchange" for a vertex whose call
// site is known, "" otherwise.
func (d *drawer) siteTip(id taskgraph.NodeID) string {
	if d.o.Sites == nil {
		return ""
	}
	r, site := critpath.VertexSite(d.g, id)
	return d.siteTipAt(d.g.Kind(id), r, site)
}

// siteTipAt is siteTip of a vertex of kind k whose call site is site of
// rank r's table.
func (d *drawer) siteTipAt(k taskgraph.NodeKind, r int, site uint32) string {
	if d.o.Sites == nil || site == 0 {
		return ""
	}
	l := d.o.Sites(r, site)
	if l == "" {
		return ""
	}
	if k == taskgraph.KindCollective {
		return fmt.Sprintf(", called on rank %d at %s", r, l)
	}
	return ", called at " + l
}

func nodeKey(id taskgraph.NodeID) string { return fmt.Sprintf("v%010d", id) }

func (d *drawer) draw(w io.Writer, p *critpath.Path) error {
	g, v := d.g, d.v
	pic := &picture{label: d.label(p), vertices: v.vertices()}
	onPath := func(id taskgraph.NodeID) bool { return v.onPath != nil && v.onPath[id] }
	// Clusters, in rank order.
	for _, r := range g.Ranks() {
		first, cnt := g.RankOps(r)
		org := origin(g, r)
		var c *cluster
		for i := 0; i < cnt; i++ {
			id := first + taskgraph.NodeID(i)
			if !v.keep[id] {
				continue
			}
			if c == nil {
				pic.clusters = append(pic.clusters, cluster{rank: r})
				c = &pic.clusters[len(pic.clusters)-1]
			}
			nd := g.Node(id)
			c.nodes = append(c.nodes, d.opNode(id, nd.Name, r, i, nd.Start-org, nd.End-nd.Start, nd.Bytes, d.siteTip(id), onPath(id)))
		}
	}
	// Shared vertices, in id order: MPI_Init, MPI_Finalize, collectives.
	for id := taskgraph.NodeID(0); int(id) < g.NumNodes(); id++ {
		if !v.keep[id] {
			continue
		}
		switch g.Kind(id) {
		case taskgraph.KindOp:
			continue
		case taskgraph.KindCollective:
			nd := g.Node(id)
			pic.shared = append(pic.shared, d.collNode(id, nd.Name, nd.Procs, nd.Participants, nd.Bytes, d.siteTip(id), onPath(id)))
		default:
			pic.shared = append(pic.shared, endNode(id, g.Name(id), onPath(id)))
		}
	}
	pic.stubs = slices.Sorted(maps.Keys(v.stubs))
	// Edges, in the graph's order.
	for _, e := range v.edges {
		pic.edges = append(pic.edges, pedge{drawnEdge: e, label: d.edgeLabel(e.Edge),
			dotted: e.Kind == taskgraph.CollIn && d.nonblocking(e.To) || e.Kind == taskgraph.CollOut && d.nonblocking(e.From),
			onPath: v.pathEdges[keyOf(e.Edge)]})
	}
	return pic.write(w)
}

// picture is a drawing of the graph, or of a part of it, in the order it
// is written: the ranks' clusters of operations, the shared vertices, the
// stubs of ranks left out, the edges.
type picture struct {
	label    string
	vertices int
	clusters []cluster
	shared   []pnode
	stubs    []int
	edges    []pedge
}

type cluster struct {
	rank  int
	nodes []pnode
}

// pnode is a vertex drawn: its DOT attributes, in order.
type pnode struct {
	id     taskgraph.NodeID
	attrs  []any
	onPath bool
}

type pedge struct {
	drawnEdge
	label          string
	dotted, onPath bool
}

// opNode is operation id, the i-th of rank r, of function name, that
// started start after the rank's origin and lasted dur.
func (d *drawer) opNode(id taskgraph.NodeID, name string, r, i int, start, dur, bytes int64, siteTip string, onPath bool) pnode {
	tip := fmt.Sprintf("%s on rank %d (operation %d): starts %s after MPI_Init, lasts %s",
		name, r, i, d.time(float64(start)), d.time(float64(dur)))
	if bytes > 0 {
		tip += fmt.Sprintf(", %d bytes", bytes)
	}
	tip += siteTip
	return pnode{id: id, onPath: onPath,
		attrs: []any{"label", name + "\n" + d.time(float64(dur)), "shape", "box", "id", fmt.Sprintf("v%d", id), "tooltip", tip}}
}

// collNode is collective id, weighed as critpath weighs it.
func (d *drawer) collNode(id taskgraph.NodeID, name string, procs, parts int, bytes int64, siteTip string, onPath bool) pnode {
	ns, used := d.collective(name, bytes, procs)
	tip := fmt.Sprintf("%s on %d processes (%d calls recorded), %d bytes per process; model %s: %s",
		name, procs, parts, bytes, used, d.time(ns)) + siteTip
	return pnode{id: id, onPath: onPath,
		attrs: []any{"label", name + "\n" + d.time(ns), "shape", "hexagon", "id", fmt.Sprintf("v%d", id), "tooltip", tip}}
}

// endNode is MPI_Init or MPI_Finalize.
func endNode(id taskgraph.NodeID, name string, onPath bool) pnode {
	return pnode{id: id, onPath: onPath, attrs: []any{"label", name, "shape", "ellipse", "id", fmt.Sprintf("v%d", id)}}
}

// write writes the picture as a Graphviz digraph.
func (pic *picture) write(w io.Writer) error {
	root := dot.NewGraph(dot.Directed)
	root.ID("taskgraph")
	root.Attr("label", pic.label)
	root.Attr("labelloc", "t")
	// Rank the whole graph at once, not cluster by cluster: a path that
	// hops between ranks then runs downwards instead of folding back. Not
	// beyond newrankLimit vertices: Graphviz 2.42 then takes far longer,
	// and crashes on some graphs (see docs/performance.md).
	if pic.vertices <= newrankLimit {
		root.Attr("newrank", "true")
	}
	nodes := make(map[taskgraph.NodeID]dot.Node)
	stubs := make(map[int]dot.Node)
	add := func(g *dot.Graph, pn *pnode) {
		n := g.Node(nodeKey(pn.id))
		n.Attrs(pn.attrs...)
		if pn.onPath {
			n.Attrs("color", CriticalColor, "penwidth", CriticalPenwidth)
		}
		nodes[pn.id] = n
	}

	// Clusters. emicklei/dot names a cluster cluster_sN after its creation
	// sequence; the names are replaced by cluster_rankN once written.
	var renames []string
	for i := range pic.clusters {
		c := &pic.clusters[i]
		r := c.rank
		sub := root.Subgraph(fmt.Sprintf("rank%010d", r), dot.ClusterOption{})
		sub.Attr("label", fmt.Sprintf("rank %d", r))
		sub.Attr("color", "gray60")
		renames = append(renames,
			"\n\tsubgraph "+sub.GetID()+" {\n",
			fmt.Sprintf("\n\tsubgraph cluster_rank%d {\n", r))
		for j := range c.nodes {
			add(sub, &c.nodes[j])
		}
	}
	for i := range pic.shared {
		add(root, &pic.shared[i])
	}
	// Stubs of the ranks outside DOTOptions.Ranks.
	for _, r := range pic.stubs {
		n := root.Node(fmt.Sprintf("w%010d", r))
		n.Attrs("label", fmt.Sprintf("rank %d", r), "shape", "box", "style", "dashed", "color", "gray50",
			"fontcolor", "gray30", "id", fmt.Sprintf("stub%d", r), "tooltip", fmt.Sprintf("rank %d (not shown)", r))
		stubs[r] = n
	}
	for _, e := range pic.edges {
		from, to := nodes[e.From], nodes[e.To]
		if e.stubFrom >= 0 {
			from = stubs[e.stubFrom]
		}
		if e.stubTo >= 0 {
			to = stubs[e.stubTo]
		}
		de := root.Edge(from, to)
		de.Attrs("label", e.label, "id", fmt.Sprintf("%s_%d_%d_r%d", e.Kind, e.From, e.To, e.Rank))
		switch {
		case e.Kind == taskgraph.Message:
			de.Attr("style", "dashed")
		case e.dotted:
			de.Attr("style", "dotted")
		}
		if e.onPath {
			de.Attrs("color", CriticalColor, "penwidth", CriticalPenwidth)
		} else if e.Kind == taskgraph.Message {
			de.Attr("color", "gray40")
		}
	}

	var buf bytes.Buffer
	root.Write(&buf)
	// The cluster headers come in rank order, each on a line of its own
	// (labels are quoted without raw newlines, so no label matches).
	out := buf.Bytes()
	parts := make([][]byte, 0, len(renames)+1)
	for i := 0; i < len(renames); i += 2 {
		j := bytes.Index(out, []byte(renames[i]))
		if j < 0 {
			return fmt.Errorf("render: internal error: cluster header %q not found", strings.TrimSpace(renames[i]))
		}
		parts = append(parts, out[:j], []byte(renames[i+1]))
		out = out[j+len(renames[i]):]
	}
	for _, b := range append(parts, out) {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func (d *drawer) nonblocking(id taskgraph.NodeID) bool {
	return d.g.Kind(id) == taskgraph.KindCollective && d.g.Node(id).Nonblocking
}

// edgeLabel is a computation edge's measured time, or a message's model
// latency and bytes: "1.8 us (4096)".
func (d *drawer) edgeLabel(e taskgraph.Edge) string {
	if e.Kind.IsComputation() {
		return d.time(float64(e.Weight))
	}
	var ns float64
	if d.m != nil {
		ns = finite(d.m.P2P(e.Bytes))
	}
	return fmt.Sprintf("%s (%d)", d.time(ns), e.Bytes)
}

// collective is the model time of a collective, as critpath weighs it.
func (d *drawer) collective(name string, bytes int64, procs int) (float64, string) {
	if d.m == nil {
		return 0, "none"
	}
	ns, used := d.m.CollectiveOrFallback(name, bytes, procs)
	return finite(ns), used
}

func finite(x float64) float64 {
	if x != x || x < 0 || x > 1e300 {
		return 0
	}
	return x
}

// time formats ns in the unit: "12 us", "1.8 us", "0.25 us".
func (d *drawer) time(ns float64) string {
	return formatNum(ns/float64(d.o.Unit)) + " " + d.o.Unit.String()
}

// formatNum writes x with three significant digits, and as an integer from
// 100 on: 1234, 12.5, 1.8, 0.25, 0.0005.
func formatNum(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "?"
	}
	prec := 0
	if ax := math.Abs(x); ax < 100 && ax > 0 {
		prec = min(2-int(math.Floor(math.Log10(ax))), 9)
	}
	s := strconv.FormatFloat(x, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// label is the graph's label: the graph's size, the path, the model and
// what the options left out.
func (d *drawer) label(p *critpath.Path) string {
	g, v := d.g, d.v
	c := labelCounts{size: g.Size(), ops: g.NumOps(), colls: g.NumCollectives(), msgs: g.NumMessages(),
		keptOps: v.ops, keptColls: v.colls, keptEdges: len(v.edges), allEdges: v.allEdges}
	if p != nil {
		c.path, c.length, c.vertices = true, p.Length, p.NumVertices()
	}
	return d.labelOf(c)
}

// labelCounts are the numbers of the graph's label.
type labelCounts struct {
	size, ops, colls, msgs                  int
	path                                    bool
	length                                  float64
	vertices                                int
	keptOps, keptColls, keptEdges, allEdges int
}

func (d *drawer) labelOf(c labelCounts) string {
	o := d.o
	lines := []string{fmt.Sprintf("MPI task graph: %d ranks, %d operations, %d collectives, %d messages",
		c.size, c.ops, c.colls, c.msgs)}
	if c.path {
		lines = append(lines, fmt.Sprintf("critical path (red): %s, %d vertices", d.time(c.length), c.vertices))
	} else {
		lines = append(lines, "critical path: not computed")
	}
	lines = append(lines, "latency model: "+describeModel(d.m, o.Model))
	var shown []string
	if o.Ranks != nil {
		shown = append(shown, fmt.Sprintf("ranks %s of 0-%d (messages to other ranks end at their stub)", o.Ranks, c.size-1))
	}
	if o.Window != nil {
		shown = append(shown, fmt.Sprintf("operations starting in %s after each rank's MPI_Init", o.Window))
	}
	if o.CriticalOnly {
		shown = append(shown, "the critical path only")
	}
	if len(shown) > 0 {
		lines = append(lines, "showing "+strings.Join(shown, "; "))
		lines = append(lines, fmt.Sprintf("left out: %d of %d operations, %d of %d collectives, %d of %d edges",
			c.ops-c.keptOps, c.ops, c.colls-c.keptColls, c.colls,
			c.allEdges-c.keptEdges, c.allEdges))
	}
	return strings.Join(lines, "\n")
}

func describeModel(m critpath.Model, name string) string {
	if name != "" {
		return name
	}
	switch m := m.(type) {
	case nil:
		return "none (messages and collectives weigh 0)"
	case *latency.Model:
		if m == nil {
			return "none (messages and collectives weigh 0)"
		}
		if m.IsDefault() || m.Machine == "" {
			return m.Source
		}
		return m.Source + " on " + m.Machine
	}
	return fmt.Sprintf("%T", m)
}
