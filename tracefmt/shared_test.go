package tracefmt

import (
	"bytes"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// TestSharedStrings: readers of ranks that define the same strings share
// one table, which a Define on one of them leaves to the others.
func TestSharedStrings(t *testing.T) {
	s := newStream()
	s.add(call(spec.Call, 0, 10, 5))
	open := func(rank int) *RankReader {
		data := writeFile(t, rank, 2, s.evs, nil, &End{Reason: spec.EndFinalize, Events: 1})
		r, err := NewRankReader(bytes.NewReader(data), "r")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := open(0), open(1)
	if a.strings.Len() == 0 || &a.strings.dense[0] != &b.strings.dense[0] {
		t.Fatalf("two ranks of the same strings hold tables %p and %p", a.strings.dense, b.strings.dense)
	}
	want := a.strings.Len()
	if err := a.strings.Define(uint64(want)+1, "MPI_Bcast"); err != nil {
		t.Fatal(err)
	}
	if b.strings.Len() != want || a.strings.Len() != want+1 || a.strings.Name(uint64(want)+1) != "MPI_Bcast" {
		t.Errorf("after a Define on one reader: %d and %d strings, want %d and %d", a.strings.Len(), b.strings.Len(), want+1, want)
	}
	if got := shareDense([]string{"MPI_Send", "MPI_Recv"}); len(got) != 2 || cap(got) != 2 || &got[0] == &b.strings.dense[0] {
		t.Errorf("another table shared: %v", got)
	}
}
