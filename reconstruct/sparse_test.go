package reconstruct_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/internal/allocs"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// graphText renders everything a consumer can see of a graph: its text
// form, Walk's order with each node's in edges, and the critical path (or
// why there is none).
func graphText(t *testing.T, g *taskgraph.Graph) string {
	t.Helper()
	var b strings.Builder
	if err := g.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for r := -1; r <= g.Size(); r++ {
		first, n := g.RankOps(r)
		if n == 0 {
			first = 0 // no operation: meaningless
		}
		a, z, ok := g.RankSpan(r)
		fmt.Fprintf(&b, "rank %d: ops %d+%d span %d..%d %v chain %v\n", r, first, n, a, z, ok, g.HasChain(r))
	}
	err := g.Walk(func(v taskgraph.NodeID, in []taskgraph.Edge) { fmt.Fprintf(&b, "walk %d %v\n", v, in) })
	fmt.Fprintf(&b, "walk: %v\n", err)
	p, err := critpath.Compute(g, testModel{})
	if err == nil {
		hops := make([]critpath.Hop, p.NumVertices()-1)
		for i := range hops {
			hops[i] = p.Hop(i)
		}
		fmt.Fprintf(&b, "path %v\n%v\n", p.Length, hops)
	} else {
		fmt.Fprintf(&b, "path: %v\n", err)
	}
	return b.String()
}

// TestSparseRanks: a world whose ranks have no log at all gives the graph a
// world whose missing ranks have empty logs gives: the ranks without a log
// cost nothing, yet look the same to every consumer.
func TestSparseRanks(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for i := 0; i < 1500; i++ {
		ranks := randomRanks(rng)
		size := len(ranks) + rng.IntN(4)
		var present, dense []*tracefmt.RankData
		for r := 0; r < size; r++ {
			var d *tracefmt.RankData
			if r < len(ranks) {
				d = ranks[r]
			}
			if d == nil || rng.IntN(3) == 0 {
				// No log: an empty one for the dense world.
				dense = append(dense, &tracefmt.RankData{Header: tracefmt.NewHeader(r, size, "random")})
				continue
			}
			d.Header.Set(tracefmt.KeySize, fmt.Sprint(size))
			present = append(present, d)
			dense = append(dense, d)
		}
		if len(present) == 0 {
			continue
		}
		gs, _, err := reconstruct.BuildFromRanks(present, reconstruct.Options{Workers: 1 + i%2})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		gd, _, err := reconstruct.BuildFromRanks(dense, reconstruct.Options{Workers: 1})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if gs.Size() != size {
			t.Fatalf("case %d: size %d, want %d", i, gs.Size(), size)
		}
		if s, d := graphText(t, gs), graphText(t, gd); s != d {
			t.Fatalf("case %d: ranks without a log:\n%s\nranks with empty logs:\n%s", i, s, d)
		}
	}
}

// A rank file of a few hundred bytes may claim 2^24 ranks: reconstruction
// spends memory and time per rank with a log, and reports the others in a
// bounded number of diagnostics.
func TestHugeClaimedWorld(t *testing.T) {
	for _, rank := range []int{0, 1<<24 - 1} {
		dir := t.TempDir()
		if err := testgen.WriteHugeWorld(dir, 1<<24, rank); err != nil {
			t.Fatal(err)
		}
		tr, err := tracefmt.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var g *taskgraph.Graph
		var d *tracefmt.Diagnostics
		var p *critpath.Path
		n := allocs.Bytes(func() {
			if g, d, err = reconstruct.Build(tr, reconstruct.Options{}); err == nil {
				p, err = critpath.Compute(g, testModel{})
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("rank %d: %d bytes allocated", rank, n)
		if n > 4<<20 {
			t.Errorf("rank %d: reconstructing a file that claims 2^24 ranks allocated %d bytes", rank, n)
		}
		if g.Size() != 1<<24 || g.NumOps() != 1 || g.NumCollectives() != 1 || p.NumVertices() != 4 {
			t.Errorf("rank %d: size %d, %d ops, %d collectives, path of %d vertices", rank, g.Size(), g.NumOps(), g.NumCollectives(), p.NumVertices())
		}
		if n := g.Node(taskgraph.NodeID(2 + g.NumOps())); n.Procs != 1<<24 || n.Participants != 1 {
			t.Errorf("rank %d: the barrier: %+v", rank, n)
		}
		if d.Len() > 10 || d.Count(tracefmt.Error) != 0 {
			t.Errorf("rank %d: %s", rank, d.Summary())
		}
		for _, x := range d.All() {
			t.Log(x)
		}
	}
}
