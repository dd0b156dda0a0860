package render_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/analysis/render"
	"github.com/mpitrace/mpitrace/internal/allocs"
	"github.com/mpitrace/mpitrace/internal/golden"
	"github.com/mpitrace/mpitrace/internal/graphviztest"
	"github.com/mpitrace/mpitrace/internal/testmodel"
	"github.com/mpitrace/mpitrace/internal/textdiff"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

var update = flag.Bool("update", false, "rewrite testdata/*.dot")

// testModel is the golden tests' latency model, with round numbers.
type testModel = testmodel.Round

const testModelName = "test model (1 us + 1 ns/byte)"

// halo4 writes a 4-rank periodic halo exchange with testgen: per
// iteration each rank computes 20-41 us, posts MPI_Irecv from both
// neighbours and MPI_Isend to both, and waits with MPI_Waitall; every third
// iteration ends with an MPI_Allreduce of 8 bytes.
func halo4(dir string) error {
	const size, iters = 4, 6
	b := testgen.New(size)
	for r := 0; r < size; r++ {
		b.Rank(r).Call("MPI_Init")
	}
	for it := 0; it < iters; it++ {
		for r := 0; r < size; r++ {
			rk := b.Rank(r)
			left, right := int64((r+size-1)%size), int64((r+1)%size)
			bytes := uint64(1024 << (it % 3))
			rk.Compute(int64(20_000 + 7_000*((3*r+5*it)%4)))
			q1 := rk.Irecv(left, 1, bytes)
			q2 := rk.Irecv(right, 2, bytes)
			q3 := rk.Isend(right, 1, bytes)
			q4 := rk.Isend(left, 2, bytes)
			rk.Waitall(q1, q2, q3, q4)
			if it%3 == 2 {
				rk.Allreduce(8)
			}
		}
	}
	for r := 0; r < size; r++ {
		b.Rank(r).Compute(10_000).Call("MPI_Finalize")
	}
	return b.WriteDir(dir)
}

// load builds the graph of an input and its critical path (nil when the
// graph has none): testdata/NAME.txt in the tracefmt text form, or halo4.
func load(t *testing.T, name string, workers int) (*taskgraph.Graph, *critpath.Path) {
	t.Helper()
	var (
		g   *taskgraph.Graph
		err error
	)
	if name == "halo4" {
		dir := filepath.Join(t.TempDir(), "traces")
		if err := halo4(dir); err != nil {
			t.Fatal(err)
		}
		tr, err := tracefmt.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		g, _, err = reconstruct.Build(tr, reconstruct.Options{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
	} else {
		f, err := os.Open(filepath.Join("testdata", name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ranks, err := tracefmt.ParseText(f)
		if err != nil {
			t.Fatalf("%s.txt: %v", name, err)
		}
		g, _, err = reconstruct.BuildFromRanks(ranks, reconstruct.Options{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
	}
	p, err := critpath.Compute(g, testModel{})
	var ce *taskgraph.CycleError
	if errors.As(err, &ce) {
		return g, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return g, p
}

func us(d float64) time.Duration { return time.Duration(d * float64(time.Microsecond)) }

// goldens are the golden cases: testdata/INPUT[.NAME].dot.
var goldens = []struct {
	input, name string
	opts        render.DOTOptions
}{
	{"sendrecv", "", render.DOTOptions{}},
	{"sendrecv", "critical", render.DOTOptions{CriticalOnly: true}},
	{"sendrecv", "ns", render.DOTOptions{Unit: critpath.Nanosecond}},
	{"ring", "", render.DOTOptions{}},
	{"waitall", "", render.DOTOptions{}},
	{"icoll", "", render.DOTOptions{}},
	{"subcomm", "", render.DOTOptions{}},
	{"subcomm", "ranks1-2", render.DOTOptions{Ranks: render.RankSet{{First: 1, Last: 2}}}},
	{"subcomm", "ranks0.critical", render.DOTOptions{Ranks: render.RankSet{{First: 0, Last: 0}}, CriticalOnly: true}},
	{"cycle", "", render.DOTOptions{}},
	{"halo4", "", render.DOTOptions{}},
	{"halo4", "critical", render.DOTOptions{CriticalOnly: true}},
	{"halo4", "ranks1-2", render.DOTOptions{Ranks: render.RankSet{{First: 1, Last: 2}}}},
	{"halo4", "window50us-100us", render.DOTOptions{Window: &render.Window{Start: us(50), End: us(100)}}},
	{"halo4", "window100us-", render.DOTOptions{Window: &render.Window{Start: us(100)}}},
	{"halo4", "ranks3.window-40us.ms", render.DOTOptions{Ranks: render.RankSet{{First: 3, Last: 3}},
		Window: &render.Window{End: us(40)}, Unit: critpath.Millisecond}},
}

func goldenFile(input, name string) string {
	if name == "" {
		return filepath.Join("testdata", input+".dot")
	}
	return filepath.Join("testdata", input+"."+name+".dot")
}

func render1(t *testing.T, g *taskgraph.Graph, p *critpath.Path, o render.DOTOptions) string {
	t.Helper()
	if o.Model == "" {
		o.Model = testModelName
	}
	var b bytes.Buffer
	if err := render.WriteDOT(&b, g, p, testModel{}, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestGoldenDOT(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range goldens {
		file := goldenFile(c.input, c.name)
		seen[filepath.Base(file)] = true
		t.Run(strings.TrimSuffix(filepath.Base(file), ".dot"), func(t *testing.T) {
			g, p := load(t, c.input, 0)
			got := render1(t, g, p, c.opts)
			checkStructure(t, g, p, c.opts, got)
			checkGraphviz(t, got)
			// The same input gives the same bytes: render again, and
			// from a graph built with one worker.
			if again := render1(t, g, p, c.opts); again != got {
				t.Errorf("two renderings differ:\n%s", textdiff.Lines(got, again))
			}
			g1, p1 := load(t, c.input, 1)
			if one := render1(t, g1, p1, c.opts); one != got {
				t.Errorf("the DOT depends on the number of workers:\n%s", textdiff.Lines(got, one))
			}
			golden.Check(t, file, got, *update)
		})
	}
	// Every golden file belongs to a case.
	files, _ := filepath.Glob("testdata/*.dot")
	seen["pingpong20.folded.dot"] = true // TestFoldedGolden
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s: no golden case renders it (remove it)", f)
		}
	}
}

// checkGraphviz renders the DOT with Graphviz: dot -Tsvg must accept it
// without a warning.
func checkGraphviz(t *testing.T, src string) {
	t.Helper()
	if w := graphviztest.Render(t, src); w != "" {
		t.Errorf("dot -Tsvg warned:\n%s", w)
	}
}

// The parsed DOT: emicklei/dot writes one statement per line.
type dotNode struct {
	cluster string // enclosing subgraph, "" at the top level
	attrs   map[string]string
}

type dotEdge struct {
	from, to string
	attrs    map[string]string
}

var (
	reSub  = regexp.MustCompile(`^\s*subgraph (\S+) \{$`)
	reNode = regexp.MustCompile(`^\s*(n\d+)\[(.*)\];$`)
	reEdge = regexp.MustCompile(`^\s*(n\d+)->(n\d+)\[(.*)\];$`)
)

func parseDOT(t *testing.T, src string) (map[string]dotNode, []dotEdge, []string) {
	t.Helper()
	nodes := map[string]dotNode{}
	var (
		edges    []dotEdge
		clusters []string
		stack    []string
	)
	if !strings.HasPrefix(src, "digraph ") {
		t.Fatalf("the DOT does not start with digraph: %.40q", src)
	}
	for i, line := range strings.Split(src, "\n") {
		switch {
		case reSub.MatchString(line):
			name := reSub.FindStringSubmatch(line)[1]
			stack = append(stack, name)
			clusters = append(clusters, name)
		case strings.TrimSpace(line) == "}":
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case reEdge.MatchString(line):
			m := reEdge.FindStringSubmatch(line)
			edges = append(edges, dotEdge{m[1], m[2], parseAttrs(t, m[3])})
			if len(stack) > 0 {
				t.Errorf("line %d: an edge inside %s", i+1, stack[len(stack)-1])
			}
		case reNode.MatchString(line):
			m := reNode.FindStringSubmatch(line)
			if _, dup := nodes[m[1]]; dup {
				t.Errorf("line %d: node %s declared twice", i+1, m[1])
			}
			cl := ""
			if len(stack) > 0 {
				cl = stack[len(stack)-1]
			}
			nodes[m[1]] = dotNode{cl, parseAttrs(t, m[2])}
		}
	}
	return nodes, edges, clusters
}

// parseAttrs parses k="v",k2="v2" (values Go-quoted, as emicklei/dot writes them).
func parseAttrs(t *testing.T, s string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			t.Fatalf("bad attributes %q", s)
		}
		k := s[:eq]
		q, err := strconv.QuotedPrefix(s[eq+1:])
		if err != nil {
			t.Fatalf("attribute %s: %v in %q", k, err, s)
		}
		v, _ := strconv.Unquote(q)
		out[k] = v
		s = strings.TrimPrefix(s[eq+1+len(q):], ",")
	}
	return out
}

var reMessageLabel = regexp.MustCompile(`^[0-9.]+ (ns|us|ms|s) \((\d+)\)$`)
var reTimeLabel = regexp.MustCompile(`^[0-9.]+ (ns|us|ms|s)$`)

// checkStructure checks the picture independently of the goldens: the
// clusters hold their rank's operations and nothing else, message labels
// carry the bytes, exactly the critical path is highlighted, and the
// filters keep what they promise.
func checkStructure(t *testing.T, g *taskgraph.Graph, p *critpath.Path, o render.DOTOptions, src string) {
	t.Helper()
	nodes, edges, clusters := parseDOT(t, src)
	for _, c := range clusters {
		if !regexp.MustCompile(`^cluster_rank\d+$`).MatchString(c) {
			t.Errorf("subgraph %s is not named cluster_rankN", c)
		}
	}
	graphEdges := map[string]taskgraph.Edge{}
	for e := range g.Edges {
		graphEdges[fmt.Sprintf("%s_%d_%d_r%d", e.Kind, e.From, e.To, e.Rank)] = e
	}
	onPath := map[taskgraph.NodeID]bool{}
	pathEdges := map[string]bool{}
	if p != nil {
		for i := range p.NumVertices() {
			onPath[p.Vertex(i).ID] = true
			if i+1 < p.NumVertices() {
				h := p.Hop(i)
				pathEdges[fmt.Sprintf("%s_%d_%d_r%d", h.Kind, h.From, h.To, h.Rank)] = true
			}
		}
	}
	shownOps := map[taskgraph.NodeID]bool{}
	for name, n := range nodes {
		id := n.attrs["id"]
		if strings.HasPrefix(id, "stub") {
			if o.Ranks == nil || n.cluster != "" || n.attrs["label"] != "rank "+strings.TrimPrefix(id, "stub") {
				t.Errorf("stub %s: %+v", name, n)
			}
			continue
		}
		x, err := strconv.ParseUint(strings.TrimPrefix(id, "v"), 10, 32)
		if err != nil || !strings.HasPrefix(id, "v") || int(x) >= g.NumNodes() {
			t.Errorf("node %s: id %q is not a node of the graph", name, id)
			continue
		}
		v := taskgraph.NodeID(x)
		if !strings.HasPrefix(n.attrs["label"], g.Name(v)) {
			t.Errorf("node %s: label %q does not start with %s", id, n.attrs["label"], g.Name(v))
		}
		if g.Kind(v) == taskgraph.KindOp {
			shownOps[v] = true
			if want := fmt.Sprintf("cluster_rank%d", g.Rank(v)); n.cluster != want {
				t.Errorf("operation %s of rank %d is in %q, want %s", id, g.Rank(v), n.cluster, want)
			}
			if o.Ranks != nil && !o.Ranks.Contains(g.Rank(v)) {
				t.Errorf("operation %s of rank %d shown with ranks %s", id, g.Rank(v), o.Ranks)
			}
		} else if n.cluster != "" {
			t.Errorf("shared vertex %s (%s) inside %s", id, g.Name(v), n.cluster)
		}
		if _, hl := n.attrs["penwidth"]; hl != onPath[v] {
			t.Errorf("vertex %s: highlighted %v, on the path %v", id, hl, onPath[v])
		}
		if o.CriticalOnly && !onPath[v] {
			t.Errorf("vertex %s shown with CriticalOnly but not on the path", id)
		}
	}
	if o.Window != nil {
		for v := range shownOps {
			r := g.Rank(v)
			initEnd, _, _ := g.RankSpan(r)
			if !o.Window.Contains(time.Duration(g.Node(v).Start - initEnd)) {
				t.Errorf("operation %d starts at %d ns after MPI_Init, outside %s", v, g.Node(v).Start-initEnd, o.Window)
			}
		}
	}
	drawn := map[string]bool{}
	for _, de := range edges {
		id := de.attrs["id"]
		e, ok := graphEdges[id]
		if !ok {
			t.Errorf("edge %s->%s: id %q is not an edge of the graph", de.from, de.to, id)
			continue
		}
		if drawn[id] {
			t.Errorf("edge %s drawn twice", id)
		}
		drawn[id] = true
		label := de.attrs["label"]
		if e.Kind == taskgraph.Message {
			m := reMessageLabel.FindStringSubmatch(label)
			if m == nil || m[2] != strconv.FormatInt(e.Bytes, 10) {
				t.Errorf("message %s: label %q, want \"LATENCY UNIT (%d)\"", id, label, e.Bytes)
			}
		} else if !reTimeLabel.MatchString(label) {
			t.Errorf("edge %s: label %q, want \"TIME UNIT\"", id, label)
		}
		_, hl := de.attrs["penwidth"]
		if hl != pathEdges[id] || hl && de.attrs["color"] != render.CriticalColor {
			t.Errorf("edge %s: highlighted %v (%v), on the path %v", id, hl, de.attrs, pathEdges[id])
		}
		// Endpoints: the graph's nodes, or the stub of the other rank.
		for _, end := range []struct {
			dot string
			v   taskgraph.NodeID
		}{{de.from, e.From}, {de.to, e.To}} {
			n := nodes[end.dot]
			if n.attrs["id"] != fmt.Sprintf("v%d", end.v) && n.attrs["id"] != fmt.Sprintf("stub%d", g.Rank(end.v)) {
				t.Errorf("edge %s: endpoint %s is %q", id, end.dot, n.attrs["id"])
			}
		}
	}
	if o.Ranks == nil && o.Window == nil {
		// Without rank or time filters every path edge is drawn, and
		// without CriticalOnly every edge.
		for id := range pathEdges {
			if !drawn[id] {
				t.Errorf("path edge %s not drawn", id)
			}
		}
		if !o.CriticalOnly && (len(edges) != len(graphEdges) || len(nodes) != g.NumNodes()) {
			t.Errorf("drew %d of %d edges and %d of %d nodes", len(edges), len(graphEdges), len(nodes), g.NumNodes())
		}
	}
}

func TestOptionErrors(t *testing.T) {
	g, p := load(t, "sendrecv", 0)
	for _, c := range []struct {
		p    *critpath.Path
		o    render.DOTOptions
		want string
	}{
		{nil, render.DOTOptions{CriticalOnly: true}, "needs a critical path"},
		{p, render.DOTOptions{Ranks: render.RankSet{{First: 1, Last: 2}}}, "ranks 1-2: the graph has ranks 0-1"},
		{p, render.DOTOptions{Ranks: render.RankSet{{First: 1, Last: 0}}}, "ranks 1-0"},
		{p, render.DOTOptions{Window: &render.Window{Start: time.Second, End: time.Second}}, "window [1s, 1s)"},
	} {
		var b bytes.Buffer
		err := render.WriteDOT(&b, g, c.p, testModel{}, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.o, err, c.want)
		}
		if b.Len() != 0 {
			t.Errorf("%+v: wrote %d bytes on error", c.o, b.Len())
		}
	}
}

// The label names the model: the caller's name, else the model's source.
func TestModelLabel(t *testing.T) {
	g, p := load(t, "sendrecv", 0)
	m := latency.Default()
	var b bytes.Buffer
	if err := render.WriteDOT(&b, g, p, m, render.DOTOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "latency model: "+latency.DefaultSource) {
		t.Errorf("the label does not name the default model:\n%s", b.String())
	}
	b.Reset()
	if err := render.WriteDOT(&b, g, nil, nil, render.DOTOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "latency model: none") || !strings.Contains(b.String(), "critical path: not computed") {
		t.Errorf("nil model and path:\n%s", b.String())
	}
	checkGraphviz(t, b.String())
}

func TestWindowString(t *testing.T) {
	for _, c := range []struct {
		w    render.Window
		want string
	}{
		{render.Window{Start: 1500 * time.Millisecond, End: 2 * time.Second}, "[1.5s, 2s)"},
		{render.Window{Start: time.Second}, "[1s, end)"},
		{render.Window{End: 250 * time.Microsecond}, "[0s, 250us)"},
	} {
		if got := c.w.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.w, got, c.want)
		}
	}
}

func TestTimeFormat(t *testing.T) {
	g, p := load(t, "sendrecv", 0)
	for _, c := range []struct {
		unit critpath.Unit
		want []string
	}{
		{critpath.Microsecond, []string{`label="MPI_Send\n0.5 us"`, `label="41 us (40000)"`, `label="2000 us"`, `label="0.1 us"`, "critical path (red): 2043 us"}},
		{critpath.Millisecond, []string{`label="MPI_Send\n0.0005 ms"`, `label="0.041 ms (40000)"`, `label="2 ms"`, `label="MPI_Barrier\n0.0022 ms"`}},
		{critpath.Nanosecond, []string{`label="MPI_Send\n500 ns"`, `label="41000 ns (40000)"`, `label="2000000 ns"`}},
		{critpath.Second, []string{`label="0.002 s"`, `label="0.000041 s (40000)"`}},
	} {
		got := render1(t, g, p, render.DOTOptions{Unit: c.unit})
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("unit %s: no %s in\n%s", c.unit, w, got)
			}
		}
	}
}

// Two rank files of a few hundred bytes that claim a world of 2^24 ranks:
// drawing it costs what the two ranks hold, not what the world claims.
func TestHugeClaimedWorld(t *testing.T) {
	dir := t.TempDir()
	if err := testgen.WriteHugeWorld(dir, 1<<24, 0, 1<<24-1); err != nil {
		t.Fatal(err)
	}
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := reconstruct.Build(tr, reconstruct.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := critpath.Compute(g, testModel{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []render.DOTOptions{{}, {Ranks: render.RankSet{{First: 0, Last: 0}}}, {CriticalOnly: true}} {
		var b bytes.Buffer
		n := allocs.Bytes(func() { err = render.WriteDOT(&b, g, p, testModel{}, o) })
		if err != nil {
			t.Fatal(err)
		}
		if n > 2<<20 {
			t.Errorf("%+v: drawing 2 ranks of a world that claims 2^24 allocated %d bytes", o, n)
		}
		if !o.CriticalOnly && (!strings.Contains(b.String(), "cluster_rank0 ") || (o.Ranks == nil) != strings.Contains(b.String(), "cluster_rank16777215 ")) {
			t.Errorf("%+v:\n%s", o, b.String())
		}
	}
}

// Vertex tooltips name the call site when the graph has one and
// DOTOptions.Sites names it.
func TestSiteTooltips(t *testing.T) {
	b := taskgraph.NewBuilder(2)
	send, recv, bar := b.Name("MPI_Send"), b.Name("MPI_Recv"), b.Name("MPI_Barrier")
	b.Rank(0).AddOp(taskgraph.Op{Name: send, Kind: spec.Send, Start: 10, End: 20, Bytes: 8, Event: 1})
	b.Rank(0).SetSite(1, 1)
	b.Rank(0).SetSite(2, 2)
	b.Rank(1).SetSite(2, 5)
	b.Rank(1).AddOp(taskgraph.Op{Name: recv, Kind: spec.Recv, Start: 10, End: 30, Bytes: 8, Event: 1})
	if err := b.Layout(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddCollective(taskgraph.Collective{Name: bar, GID: 1, Members: []int32{0, 1},
		Parts: []taskgraph.Part{{Rank: 0, At: 1, Start: 40, End: 50, Event: 2}, {Rank: 1, At: 1, Start: 40, End: 50, Event: 2}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Rank(1).AddIncoming(0, b.OpID(0, 0), 8); err != nil {
		t.Fatal(err)
	}
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	labels := func(rank int, site uint32) string {
		return map[[2]int]string{{0, 1}: "a.c:7 send_halo", {0, 2}: "a.c:9 main"}[[2]int{rank, int(site)}]
	}
	var out bytes.Buffer
	if err := render.WriteDOT(&out, g, nil, testModel{}, render.DOTOptions{Sites: labels}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{", called at a.c:7 send_halo\"", ", called on rank 0 at a.c:9 main\""} {
		if !strings.Contains(s, want) {
			t.Errorf("DOT lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "called"); n != 2 {
		t.Errorf("%d tooltips name a call site, want 2 (MPI_Recv has none):\n%s", n, s)
	}
	out.Reset()
	if err := render.WriteDOT(&out, g, nil, testModel{}, render.DOTOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "called") {
		t.Errorf("without Sites, a tooltip names a call site:\n%s", out.String())
	}
}
