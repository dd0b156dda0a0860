package critpath_test

import (
	"math/rand"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// A one-rank path of MPI_Init, 300 iterations of (MPI_E MPI_C MPI_D) at
// random call sites, then MPI_A, MPI_B and MPI_Finalize. The sites vary,
// so that only SameFunction folds it (the merged level's fold, no two
// consecutive vertices sharing a function). Its signatures are the
// functions' indices shifted left by 9: MPI_E's, 2048, is at least the
// path's 904 steps + 1024 and goes to package fold's map of last
// positions, and MPI_C's and MPI_D's then grow the table past it. The fold
// lost MPI_E's link from vertex 1 to vertex 4 and read the path as 299
// iterations of (MPI_C MPI_D MPI_E) from vertex 2.
func TestFoldFunctionIndices(t *testing.T) {
	b := taskgraph.NewBuilder(1)
	var fn [5]taskgraph.NameID
	for i, s := range []string{"MPI_A", "MPI_B", "MPI_C", "MPI_D", "MPI_E"} {
		fn[i] = b.Name(s) // indices 0 to 4, sorted
	}
	r0 := b.Rank(0)
	var tab tracefmt.Sites
	tab.AddMapping(tracefmt.Mapping{Start: 0x1000, End: 0x2000, Path: "/x"})
	for id := uint64(1); id < 8; id++ {
		tab.Define(id, 0x1000+16*id)
	}
	r0.SetSites(&tab)
	r0.SetInit(0)
	rnd := rand.New(rand.NewSource(5))
	ev, now := int64(0), int64(10)
	call := func(f taskgraph.NameID, site uint64) {
		r0.AddOp(taskgraph.Op{Name: f, Kind: spec.Call, Start: now + 100, End: now + 200, Event: ev})
		r0.SetSite(ev, site)
		ev++
		now += 300
	}
	for range 300 {
		call(fn[4], uint64(1+rnd.Intn(7)))
		call(fn[2], uint64(1+rnd.Intn(7)))
		call(fn[3], uint64(1+rnd.Intn(7)))
	}
	call(fn[0], 1)
	call(fn[1], 1)
	r0.SetFinalize(now + 100)
	if err := b.Layout(); err != nil {
		t.Fatal(err)
	}
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	p, err := critpath.Compute(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.NumVertices() != 904 {
		t.Fatalf("%d path vertices, want 904", p.NumVertices())
	}
	f := critpath.Fold(p)
	if f.Level != critpath.SameFunction {
		t.Errorf("folded at level %d, want SameFunction", f.Level)
	}
	rep, err := critpath.SummarizeRepetition(f)
	if err != nil || rep == nil || rep.Iterations != 300 || rep.BodySteps != 3 || rep.Start != 1 || rep.First != "MPI_E 0" {
		t.Errorf("repetition %+v, want 300 iterations of 3 steps from vertex 1 (MPI_E 0)", rep)
	}
}
