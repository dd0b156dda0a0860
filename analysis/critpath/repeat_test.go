package critpath_test

import (
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/fold"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/internal/testpath"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// A halo exchange on 8 ranks, 400 iterations with random times: its
// critical path moves across ranks and takes 3 or 4 MPI_Wait in a row, so
// that only a coarse level folds it; the fold stays within FoldTarget and
// the summary names the repetition.
func TestFoldHalo(t *testing.T) {
	_, p := testpath.Of(t, testgen.Halo(8, 400, 3), latency.Default())
	f := critpath.Fold(p)
	if l := fold.Leaves(f.Nodes); l > critpath.FoldTarget {
		t.Errorf("%d leaves at level %d, want at most %d", l, f.Level, critpath.FoldTarget)
	}
	// The steps cover the path, and their weights add up to its length.
	_, end := f.StepVertices(f.Steps() - 1)
	if end != p.NumVertices() {
		t.Errorf("the steps end at vertex %d of %d", end, p.NumVertices())
	}
	if w := f.Weight(0, f.Steps()); w < p.Length*0.999999 || w > p.Length*1.000001 {
		t.Errorf("the steps weigh %g, the path %g", w, p.Length)
	}
	rep := critpath.SummarizeRepetition(f)
	if rep == nil || rep.Iterations < 10 || rep.Share < 0.5 {
		t.Fatalf("repetition %+v", rep)
	}
	var b strings.Builder
	rep.WriteText(&b)
	if !strings.Contains(b.String(), " iterations of a body of ") {
		t.Errorf("repetition line %q", b.String())
	}
	// Deterministic.
	if g := critpath.Fold(p); g.Level != f.Level || fold.Leaves(g.Nodes) != fold.Leaves(f.Nodes) {
		t.Error("two folds differ")
	}
}
