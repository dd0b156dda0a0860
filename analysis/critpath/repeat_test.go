package critpath_test

import (
	"slices"
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
	rep, err := critpath.SummarizeRepetition(f)
	if err != nil || rep == nil || rep.Iterations < 10 || rep.Share < 0.5 {
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

// TestFoldRule: Fold, which folds the coarsest level first and gives up
// finer levels early, takes the fold the rule states, computed here from
// every level folded in full: the finest that draws at most FoldTarget/3
// vertices, else the finest within 1.5 times the fewest.
func TestFoldRule(t *testing.T) {
	var paths []*critpath.Path
	for seed := uint64(1); seed <= 6; seed++ {
		for _, b := range []*testgen.Builder{
			testgen.Halo(int(2+seed), int(50*seed), seed),
			testgen.Serial(int(3000*seed), seed),
			testgen.Halo(2, int(20*seed), seed),
		} {
			_, p := testpath.Of(t, b, latency.Default())
			paths = append(paths, p)
		}
	}
	levels := map[int]int{}
	for i, p := range paths {
		all := critpath.FoldAll(p)
		var leaves []int
		want := -1
		for level, f := range all {
			n := fold.Leaves(f.Nodes)
			leaves = append(leaves, n)
			if want < 0 && n <= critpath.FoldTarget/3 {
				want = level
			}
		}
		if want < 0 {
			fewest := slices.Min(leaves)
			for want = 0; leaves[want]*2 > fewest*3; want++ {
			}
		}
		got := critpath.Fold(p)
		levels[got.Level]++
		if got.Level != want || !slices.EqualFunc(got.Nodes, all[want].Nodes, sameNode) {
			t.Errorf("path %d (%d vertices, leaves per level %v): level %d, want %d", i, p.NumVertices(), leaves, got.Level, want)
		}
		// A long path's fold drops the merged level's after its count.
		if long := critpath.FoldLong(p); long.Level != got.Level || !slices.EqualFunc(long.Nodes, got.Nodes, sameNode) || long.Steps() != got.Steps() {
			t.Errorf("path %d: folded as a long path, level %d and %d steps, want %d and %d", i, long.Level, long.Steps(), got.Level, got.Steps())
		}
	}
	t.Logf("levels %v", levels)
	if len(levels) < 2 {
		t.Errorf("the paths all fold at one level (%v): the test tries too little", levels)
	}
}

func sameNode(a, b fold.Node) bool {
	return a.Start == b.Start && a.Period == b.Period && a.Count == b.Count && slices.EqualFunc(a.Body, b.Body, sameNode)
}
