package tracefmt_test

import (
	"bytes"
	"flag"
	"github.com/mpitrace/mpitrace/internal/textdiff"
	"os"
	"path/filepath"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenScenarios are small traces built with testgen, one per scenario;
// their text form is checked in under testdata/golden/NAME.txt.
var goldenScenarios = map[string]func() *testgen.Builder{
	"ring2-waitall": func() *testgen.Builder { return ring(2, 2) },
	"wildcard-threads-comms": func() *testgen.Builder {
		b := testgen.New(3)
		for r := 0; r < 3; r++ {
			b.Rank(r).ClockSync(spec.PhaseInit, int64(-10*r), 2)
		}
		// Master/worker with MPI_ANY_SOURCE.
		m := b.Rank(0)
		q := m.IrecvStatus(spec.AnySource, spec.AnyTag, 64, 2, 5, 16)
		b.Rank(2).Compute(100).SendFn("MPI_Ssend", 0, 5, 16)
		m.Wait(q)
		m.RecvStatus(spec.AnySource, 1, 64, 1, 1, 64)
		b.Rank(1).Send(0, 1, 64)
		// A sub-communicator of ranks 0 and 2, a collective on it, freed.
		for _, r := range []int{0, 2} {
			rk := b.Rank(r)
			c := rk.CommNew("MPI_Comm_split", spec.CommWorld, 4097, 0, 2)
			rk.On(c).Bcast(0, 1024)
			rk.CommFree(c)
		}
		// A second thread on rank 1.
		b.Rank(1).Thread(1).Compute(50).Call("MPI_Wtime")
		b.Rank(1).Sendrecv(2, 9, 8, 2, 9, 8)
		b.Rank(2).Sendrecv(1, 9, 8, 1, 9, 8)
		b.Rank(2).SetEnd(tracefmt.End{Reason: spec.EndSignal, Signal: 11, Events: 7, Blocks: 1, Time: 2_000_000_000})
		return b
	},
}

func TestGolden(t *testing.T) {
	for name, build := range goldenScenarios {
		t.Run(name, func(t *testing.T) {
			b := build()
			var got bytes.Buffer
			for r := 0; r < b.Size; r++ {
				data, err := b.Bytes(r)
				if err != nil {
					t.Fatal(err)
				}
				rr, err := tracefmt.NewRankReader(bytes.NewReader(data), tracefmt.RankFileName(r))
				if err != nil {
					t.Fatal(err)
				}
				if err := tracefmt.WriteText(&got, rr); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join("testdata", "golden", name+".txt")
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./tracefmt -run TestGolden -update)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("text of %s differs from %s (-update rewrites it):\n%s", name, path, textdiff.Lines(string(want), got.String()))
			}
			// The golden text parses back to the same ranks.
			ranks, err := tracefmt.ParseText(bytes.NewReader(want))
			if err != nil || len(ranks) != b.Size {
				t.Fatalf("parse: %v (%d ranks)", err, len(ranks))
			}
			var again bytes.Buffer
			for _, rd := range ranks {
				var bin bytes.Buffer
				if err := rd.WriteBinary(&bin, nil); err != nil {
					t.Fatal(err)
				}
				rr, err := tracefmt.NewRankReader(&bin, "x")
				if err != nil {
					t.Fatal(err)
				}
				tracefmt.WriteText(&again, rr)
			}
			if again.String() != string(want) {
				t.Fatalf("golden text is not stable:\n%s", textdiff.Lines(string(want), again.String()))
			}
		})
	}
}
