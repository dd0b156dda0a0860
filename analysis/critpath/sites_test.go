package critpath

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/internal/golden"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

var updateSites = flag.Bool("update", false, "rewrite the golden files under testdata/")

// pingPongGraph is n iterations of: rank 0 computes 1 ms then sends at
// site 1 (rank 0's table); rank 1 receives at site 2 (rank 1's table),
// then both meet in a barrier at site 3 (rank 0's). Rank 1's sends have no
// site when noSite.
func pingPongGraph(t testing.TB, n int) *taskgraph.Graph {
	t.Helper()
	return pingPongGraphSites(t, n, func(int) uint64 { return 1 })
}

// pingPongGraphSites is pingPongGraph with rank 0's send of iteration i
// at site sendSite(i).
func pingPongGraphSites(t testing.TB, n int, sendSite func(i int) uint64) *taskgraph.Graph {
	t.Helper()
	b := taskgraph.NewBuilder(2)
	send, recv, bar := b.Name("MPI_Send"), b.Name("MPI_Recv"), b.Name("MPI_Barrier")
	r0, r1 := b.Rank(0), b.Rank(1)
	// Both ranks run one binary, loaded at different addresses: site id
	// k of either rank returns to offset 16k of it.
	for r, rb := range []*taskgraph.RankBuilder{r0, r1} {
		var tab tracefmt.Sites
		base := uint64(0x1000 + 0x4000*r)
		tab.AddMapping(tracefmt.Mapping{Start: base, End: base + 0x1000, Path: "/pp"})
		for id := uint64(1); id < 8; id++ {
			tab.Define(id, base+16*id)
		}
		rb.SetSites(&tab)
	}
	r0.SetInit(0)
	r1.SetInit(0)
	const it = 3_000_000
	for i := range n {
		base := int64(i) * it
		r0.AddOp(taskgraph.Op{Name: send, Kind: spec.Send, Start: base + 1_000_000, End: base + 1_000_100, Bytes: 800, Event: int64(2 * i)})
		r0.SetSite(int64(2*i), sendSite(i))
		r1.AddOp(taskgraph.Op{Name: recv, Kind: spec.Recv, Start: base + 10, End: base + 1_000_200, Bytes: 800, Event: int64(2 * i)})
		r1.SetSite(int64(2*i), 2)
	}
	r0.SetFinalize(int64(n) * it)
	r1.SetFinalize(int64(n) * it)
	if err := b.Layout(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		r0.SetSite(int64(2*i+1), 3)
		r1.SetSite(int64(2*i+1), 4)
	}
	for i := range n {
		base := int64(i) * it
		if _, err := b.AddCollective(taskgraph.Collective{Name: bar, GID: 1, Members: []int32{0, 1},
			Parts: []taskgraph.Part{{Rank: 0, At: uint32(i + 1), Start: base + 1_000_100, End: base + 2_000_000, Event: int64(2*i + 1)},
				{Rank: 1, At: uint32(i + 1), Start: base + 1_000_200, End: base + 2_000_000, Event: int64(2*i + 1)}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if err := r1.AddIncoming(uint32(i), b.OpID(0, uint32(i)), 800); err != nil {
			t.Fatal(err)
		}
	}
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func siteNames(rank int, site uint32) string {
	switch {
	case rank == 0 && site == 1:
		return "pp.c:10 ping"
	case rank == 1 && site == 2:
		return "pp.c:20 pong"
	case rank == 0 && site == 3:
		return "pp.c:30 main"
	}
	return ""
}

func TestAttributeSites(t *testing.T) {
	g := pingPongGraph(t, 50)
	p, err := Compute(g, fixedModel{})
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(p, 3)
	s.Sites = AttributeSites(p, 3, siteNames)
	// The sites' shares add up to the path, as the functions' do.
	total := 0.0
	count := 0
	for _, x := range s.Sites.BySite {
		total += x.Computation + x.Communication
		count += x.Count
	}
	if d := total - p.Length; d > 1e-6 || d < -1e-6 {
		t.Errorf("by site sums to %v, path %v", total, p.Length)
	}
	if count != p.NumVertices() {
		t.Errorf("by site counts %d vertices, path has %d", count, p.NumVertices())
	}
	sites := map[string]SiteShare{}
	for _, x := range s.Sites.BySite {
		sites[x.Label()] = x
	}
	if x := sites["pp.c:30 main: MPI_Barrier"]; x.Count != 50 {
		t.Errorf("barrier site: %+v (all: %+v)", x, s.Sites.BySite)
	}
	// Steps are grouped per call-site pair, not repeated per iteration.
	if len(s.Sites.Steps) != 3 {
		t.Fatalf("steps: %+v", s.Sites.Steps)
	}
	for _, x := range s.Sites.Steps {
		if strings.Count(x.From+x.To, "pp.c") == 2 && x.Count < 49 {
			t.Errorf("step group %+v: want one per iteration", x)
		}
	}
	var b bytes.Buffer
	if err := s.WriteText(&b, Microsecond); err != nil {
		t.Fatal(err)
	}
	js, err := json.MarshalIndent(s.Sites, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "pingpong-sites.txt"), b.String()+"\n"+string(js)+"\n", *updateSites)

	// Without labels every vertex is at the unknown site.
	u := AttributeSites(p, -1, func(int, uint32) string { return "" })
	for _, x := range u.BySite {
		if x.Site != UnknownSite && x.Site != "" {
			t.Errorf("unlabelled: %+v", x)
		}
	}
	if strings.Contains(fmt.Sprint(u.Steps), "pp.c") {
		t.Errorf("unlabelled steps name a site: %+v", u.Steps)
	}
}

// BenchmarkAttributeSites sums a path of 300,000 vertices by call site.
//
//	go test ./analysis/critpath -run '^$' -bench AttributeSites
func BenchmarkAttributeSites(b *testing.B) {
	g := pingPongGraph(b, 100_000)
	p, err := Compute(g, fixedModel{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		AttributeSites(p, 10, siteNames)
	}
	b.ReportMetric(float64(p.NumVertices())*float64(b.N)/b.Elapsed().Seconds(), "vertices/s")
}

// Folding tells call sites apart: the same ping-pong with rank 0 sending
// from two call sites in turn repeats a body twice as long, half as often.
func TestFoldCallSites(t *testing.T) {
	const n = 40
	reps := func(g *taskgraph.Graph) *Repetition {
		t.Helper()
		p, err := Compute(g, fixedModel{})
		if err != nil {
			t.Fatal(err)
		}
		f := Fold(p)
		if f.Level != SameStep {
			t.Fatalf("folded at level %d, want SameStep", f.Level)
		}
		r, err := SummarizeRepetition(f)
		if err != nil || r == nil {
			t.Fatal("no repetition")
		}
		return r
	}
	one := reps(pingPongGraph(t, n))
	two := reps(pingPongGraphSites(t, n, func(i int) uint64 { return 1 + 4*uint64(i%2) }))
	if two.BodySteps != 2*one.BodySteps {
		t.Errorf("body of %d steps with two send sites, %d with one: want twice", two.BodySteps, one.BodySteps)
	}
	if d := one.Iterations - 2*two.Iterations; d < 0 || d > 2 {
		t.Errorf("%d iterations with two send sites, %d with one: want about half", two.Iterations, one.Iterations)
	}
}

// MergeSteps: a ping-pong whose rank 0 sends from one of three call sites
// at random does not fold, and merges into one vertex per call site, the
// steps and hops of the path each counted once and its weight kept.
func TestMergeSteps(t *testing.T) {
	const n = 60
	x := uint64(12345)
	sites := make([]uint64, n)
	for i := range sites {
		x = x*6364136223846793005 + 1442695040888963407
		sites[i] = []uint64{1, 5, 6}[x>>62%3]
	}
	g := pingPongGraphSites(t, n, func(i int) uint64 { return sites[i] })
	p, err := Compute(g, fixedModel{})
	if err != nil {
		t.Fatal(err)
	}
	s := MergeSteps(p)
	if s.By != "call site" {
		t.Errorf("merged by %q", s.By)
	}
	want := map[string]bool{}
	for i := range p.NumVertices() {
		r, site := VertexSite(g, p.p.Node(i))
		want[fmt.Sprint(p.Vertex(i).Name, r, site)] = true
	}
	if len(s.Nodes) != len(want) {
		t.Errorf("%d vertices, want one per call site on the path: %d (%v)", len(s.Nodes), len(want), want)
	}
	steps, w := 0, 0.0
	for _, nd := range s.Nodes {
		steps += nd.Count
		w += nd.Weight
	}
	hops := 0
	for _, e := range s.Edges {
		hops += e.Count
		if e.From < 0 || e.From >= len(s.Nodes) || e.To < 0 || e.To >= len(s.Nodes) {
			t.Fatalf("edge %+v", e)
		}
	}
	if steps != p.NumVertices() || hops != p.NumVertices()-1 {
		t.Errorf("%d steps and %d hops, the path has %d vertices", steps, hops, p.NumVertices())
	}
	if w < p.Length*0.999999 || w > p.Length*1.000001 {
		t.Errorf("the steps weigh %g, the path %g", w, p.Length)
	}
}

// A collective's call site is its lowest member's id, which means a place
// in the program only in that member's table. Rank 1 alternates a barrier
// with rank 0 (at rank 0's site 3) and one with rank 2 (at rank 1's site
// 3): two lines of the program under one id in two tables. The finest
// level must tell them apart.
func TestFoldCollectiveSitesAcrossRanks(t *testing.T) {
	const n, it = 20, 1_000_000
	b := taskgraph.NewBuilder(3)
	bar := b.Name("MPI_Barrier")
	rs := []*taskgraph.RankBuilder{b.Rank(0), b.Rank(1), b.Rank(2)}
	for r, rb := range rs {
		// Rank r's id k returns to offset 16*(k+8r) of one binary: the
		// ranks interned the program's call sites in different orders.
		var tab tracefmt.Sites
		base := uint64(0x1000 + 0x4000*r)
		tab.AddMapping(tracefmt.Mapping{Start: base, End: base + 0x1000, Path: "/app"})
		for id := uint64(1); id < 8; id++ {
			tab.Define(id, base+16*(id+8*uint64(r)))
		}
		rb.SetSites(&tab)
		rb.SetInit(0)
	}
	// Barrier i joins ranks lo and lo+1, lo = i%2; the lower member calls
	// it at its site 3, the upper at its site 5 or 6.
	var ev [3]int64
	for i := range 2 * n {
		lo := i % 2
		rs[lo].SetSite(ev[lo], 3)
		rs[lo+1].SetSite(ev[lo+1], uint64(5+lo))
		ev[lo]++
		ev[lo+1]++
	}
	for _, rb := range rs {
		rb.SetFinalize(int64(2*n+1) * it)
	}
	if err := b.Layout(); err != nil {
		t.Fatal(err)
	}
	ev = [3]int64{}
	for i := range 2 * n {
		base, lo := int64(i)*it, i%2
		parts := []taskgraph.Part{
			{Rank: lo, Start: base + it - 100, End: base + it, Event: ev[lo]},
			{Rank: lo + 1, Start: base + it - 100, End: base + it, Event: ev[lo+1]},
		}
		ev[lo]++
		ev[lo+1]++
		if _, err := b.AddCollective(taskgraph.Collective{Name: bar, GID: uint64(1 + lo), Members: []int32{int32(lo), int32(lo + 1)}, Parts: parts}); err != nil {
			t.Fatal(err)
		}
	}
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compute(g, fixedModel{})
	if err != nil {
		t.Fatal(err)
	}
	seq := make([]uint32, p.NumVertices())
	st, err := p.StepPath().newSteps()
	if err != nil {
		t.Fatal(err)
	}
	st.source(SameStep).Fill(seq, 0)
	prog := newProgramSites(p.StepPath().tables())
	pairs := 0
	for i := 1; i+1 < p.NumVertices(); i++ {
		v, w := p.p.Node(i), p.p.Node(i+1)
		if g.Kind(v) != taskgraph.KindCollective || g.Kind(w) != taskgraph.KindCollective {
			continue
		}
		rv, sv := VertexSite(g, v)
		rw, sw := VertexSite(g, w)
		if prog.id(rv, sv) == prog.id(rw, sw) {
			continue
		}
		pairs++
		if seq[i] == seq[i+1] {
			t.Fatalf("path vertices %d and %d: barriers at different call sites (rank %d site %d, rank %d site %d) get one signature", i, i+1, rv, sv, rw, sw)
		}
	}
	if pairs == 0 {
		t.Fatal("the path has no two consecutive barriers at different call sites: the test tests nothing")
	}
}
