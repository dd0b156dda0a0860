package render_test

import (
	"bytes"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/render"
	"github.com/mpitrace/mpitrace/internal/golden"
	"github.com/mpitrace/mpitrace/internal/testpath"
	"github.com/mpitrace/mpitrace/internal/textdiff"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// pingpong is 2 ranks exchanging a message both ways, then an
// MPI_Allreduce, iters times: a critical path of iters iterations of one
// body, with a prologue (MPI_Init, a first computation) and an epilogue.
func pingpong(t *testing.T, iters int) *critpath.Path {
	t.Helper()
	_, p := testpath.Of(t, pingpongTrace(iters, tracefmt.Zstd), testModel{})
	return p
}

// pingpongTrace is a ping-pong of 2 ranks with an MPI_Allreduce an
// iteration, its logs written with comp.
func pingpongTrace(iters int, comp tracefmt.Compression) *testgen.Builder {
	b := testgen.New(2)
	b.Options.Compression = comp
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.Call("MPI_Init")
	r1.Call("MPI_Init")
	r0.Compute(5_000).Call("MPI_Comm_rank")
	for range iters {
		r0.Compute(30_000)
		r0.Send(1, 1, 4096)
		r1.Recv(0, 1, 4096)
		r1.Compute(20_000)
		r1.Send(0, 2, 4096)
		r0.Recv(1, 2, 4096)
		r0.Compute(1_000)
		r1.Compute(1_000)
		r0.Allreduce(8)
		r1.Allreduce(8)
	}
	r0.Compute(1_000).Call("MPI_Finalize")
	r1.Compute(1_000).Call("MPI_Finalize")
	return b
}

func renderFolded(t *testing.T, p *critpath.Path) string {
	t.Helper()
	var b bytes.Buffer
	if err := render.WriteFoldedDOT(&b, critpath.Fold(p), testModel{}, render.DOTOptions{Model: testModelName}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var (
	reFoldedNode = regexp.MustCompile(`(?m)^\s*s\d+\[`)
	reFoldedEdge = regexp.MustCompile(`(?m)^\s*s\d+->s\d+\[`)
)

func TestFoldedDOT(t *testing.T) {
	p := pingpong(t, 1000)
	if p.NumVertices() < 5000 {
		t.Fatalf("the path has %d vertices, want the 1000 iterations on it", p.NumVertices())
	}
	got := renderFolded(t, p)
	nodes := len(reFoldedNode.FindAllString(got, -1))
	if nodes > 20 || nodes < 5 {
		t.Errorf("the folded path has %d vertices, want 5 to 20 for a 1000-iteration loop:\n%s", nodes, got)
	}
	// The first iteration comes from the prologue by another hop than
	// the others from the iteration before: it is not one of the run.
	if !strings.Contains(got, `label="999 x 5 steps\n`) {
		t.Errorf("no cluster labelled with the 999 iterations after the first:\n%s", got)
	}
	if n := len(reFoldedEdge.FindAllString(got, -1)); n != nodes {
		// one edge into every vertex but MPI_Init, and one back per run
		t.Errorf("%d edges for %d vertices and 1 run", n, nodes)
	}
	if f := critpath.Fold(p); f.Level != critpath.SameStep || render.FoldedVertices(f) != nodes {
		t.Errorf("fold level %d with %d vertices, want the finest level and %d", f.Level, render.FoldedVertices(f), nodes)
	}
	checkGraphviz(t, got)
	if again := renderFolded(t, p); again != got {
		t.Errorf("two renderings differ:\n%s", textdiff.Lines(got, again))
	}
	// The summary names the repetition.
	rep, err := critpath.SummarizeRepetition(critpath.Fold(p))
	if err != nil || rep == nil || rep.Iterations != 999 || rep.BodySteps != 5 {
		t.Fatalf("repetition %+v, want 999 iterations of 5 steps", rep)
	}
	var line strings.Builder
	if err := rep.WriteText(&line); err != nil {
		t.Fatal(err)
	}
	if want := "the path is 999 iterations of a body of 5 steps (MPI_Recv 1 -> ... -> MPI_Send 0), 99.9% of the path\n"; line.String() != want {
		t.Errorf("repetition line %q, want %q", line.String(), want)
	}
}

// TestFoldedGolden pins the folded picture of 20 ping-pong iterations.
func TestFoldedGolden(t *testing.T) {
	got := renderFolded(t, pingpong(t, 20))
	checkGraphviz(t, got)
	golden.Check(t, filepath.Join("testdata", "pingpong20.folded.dot"), got, *update)
}

// A path merged by call site (here, without call sites: by MPI function
// and rank) draws a vertex per function and rank, an edge per pair the
// path hops between, and Graphviz lays it out.
func TestStepGraphDOT(t *testing.T) {
	p := pingpong(t, 50)
	s := critpath.MergeSteps(p)
	if s.By != "MPI function and rank" {
		t.Errorf("merged by %q", s.By)
	}
	var b bytes.Buffer
	if err := render.WriteStepGraphDOT(&b, s, testModel{}, render.DOTOptions{Model: testModelName}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	nodes := regexp.MustCompile(`(?m)^\s*n\d+\[`).FindAllString(out, -1)
	edges := regexp.MustCompile(`(?m)^\s*n\d+->n\d+\[`).FindAllString(out, -1)
	// MPI_Init, MPI_Comm_rank 0, MPI_Send 0, MPI_Recv 1, MPI_Send 1,
	// MPI_Recv 0, MPI_Allreduce, MPI_Finalize.
	if len(nodes) != len(s.Nodes) || len(nodes) > 8 || len(edges) != len(s.Edges) {
		t.Errorf("%d vertices and %d edges drawn, the merge has %d and %d", len(nodes), len(edges), len(s.Nodes), len(s.Edges))
	}
	if !strings.Contains(out, "merged by MPI function and rank") || !strings.Contains(out, "50 x") {
		t.Errorf("label or counts missing:\n%s", out)
	}
	checkGraphviz(t, out)
}

// TestFoldedDOTMemory: drawing a folded path the replay found allocates
// what its picture holds, not a table of its steps: 4 times the
// iterations allocate less than a byte more per added path vertex.
func TestFoldedDOTMemory(t *testing.T) {
	alloc := func(iters int) (uint64, int) {
		dir := t.TempDir()
		// (Compressed, so regular a log reads as a decompression bomb.)
		if err := pingpongTrace(iters, tracefmt.NoCompression).WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		tr, err := tracefmt.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		res, err := reconstruct.ReplayTrace(tr, critpath.ModelWeights(testModel{}), reconstruct.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer res.Close()
		f, err := critpath.ReplayPath(res, critpath.WeightsModel, testModel{}, nil).Fold()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		if err := render.WriteFoldedDOT(&b, f, testModel{}, render.DOTOptions{Model: testModelName}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&m1)
		if !strings.Contains(b.String(), " x 5 steps") {
			t.Fatalf("the path of %d iterations is not folded:\n%s", iters, b.String())
		}
		return m1.TotalAlloc - m0.TotalAlloc, res.NumSteps
	}
	a1, v1 := alloc(20_000)
	a4, v4 := alloc(80_000)
	per := (float64(a4) - float64(a1)) / float64(v4-v1)
	t.Logf("%d bytes for %d vertices, %d for %d: %.2f bytes an added vertex", a1, v1, a4, v4, per)
	if per > 1 {
		t.Errorf("the folded picture allocates %.2f bytes an added path vertex, want under 1", per)
	}
}
