package testgen_test

import (
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

func TestHalo(t *testing.T) {
	dir := t.TempDir()
	if err := testgen.Halo(5, 20, 7).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sends := map[[3]int64]int{} // (src, dst, tag) → count
	recvs := map[[3]int64]int{}
	total := 0
	err = tr.ForEachRank(1, func(r *tracefmt.RankReader) error {
		v := tracefmt.NewValidator(r.Header(), r.Strings(), r.Name())
		for r.Next() {
			ev := r.Event()
			v.Event(ev)
			total++
			switch ev.Kind {
			case spec.Send:
				sends[[3]int64{int64(r.Rank()), ev.Peer(), ev.Tag()}]++
			case spec.Irecv:
				recvs[[3]int64{ev.Peer(), int64(r.Rank()), ev.Tag()}]++
			}
		}
		if d := v.Finish(); d.Len() != 0 {
			t.Errorf("rank %d: %s", r.Rank(), d.Summary())
		}
		return r.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if total != 5*(20*5+2+2) { // + MPI_Init and MPI_Finalize per rank
		t.Errorf("%d events", total)
	}
	if len(sends) != 10 || len(sends) != len(recvs) {
		t.Errorf("sends %v recvs %v", sends, recvs)
	}
	for k, n := range sends {
		if recvs[k] != n {
			t.Errorf("%v: %d sends, %d receives", k, n, recvs[k])
		}
	}
	if d := tr.Diagnostics(); d.Len() != 0 {
		t.Error(d.Summary())
	}
}

func TestRankOutOfRangePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	testgen.New(2).Rank(2)
}
