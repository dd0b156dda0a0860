package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/recorder"
)

// record's closing line says where the logs are, how many, their size and
// what was lost, read from the block frames.
func TestClosingLine(t *testing.T) {
	dir := writeTrace(t)
	launch := recorder.Launch{Flavor: recorder.FlavorMPICH}
	state := t.TempDir()
	check := func(want ...string) {
		t.Helper()
		got := closingLine(dir, "traces", launch, state)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("closing line %q does not say %q", got, w)
			}
		}
		if strings.Contains(got, "\n") {
			t.Errorf("closing line %q is more than one line", got)
		}
	}
	check("2 rank logs in traces (", "KiB)", "no data lost")

	// A rank killed while writing: its last block is cut and it has no
	// end record.
	p := filepath.Join(dir, "rank-00000.mpit")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, b[:len(b)-20], 0o644)
	check("data lost: rank 0 stopped before its final write, damaged blocks (truncated_block 1)", "details: mpitrace stats traces")

	// A rank that left no log.
	os.Remove(filepath.Join(dir, "rank-00001.mpit"))
	check("1 of 2 rank logs in traces", "data lost: no log from rank 1, rank 0 stopped")

	os.Remove(p)
	check("no rank logs in traces: nothing was recorded (did the program call MPI_Init? is it linked against MPICH?)")

	// The recorder stepped aside in a process of another MPI, and said so.
	os.WriteFile(filepath.Join(state, "warned-foreign"), nil, 0o600)
	check("no rank logs in traces: nothing was recorded (the recorder stepped aside: see above)")
}

func TestRanksPhrase(t *testing.T) {
	for _, tc := range []struct {
		ranks []int
		want  string
	}{
		{[]int{3}, "rank 3"},
		{[]int{0, 2, 3, 4, 5, 9}, "ranks 0, 2-5, 9"},
		{[]int{1, 2}, "ranks 1-2"},
	} {
		if got := ranksPhrase(tc.ranks); got != tc.want {
			t.Errorf("ranksPhrase(%v) = %q, want %q", tc.ranks, got, tc.want)
		}
	}
}
