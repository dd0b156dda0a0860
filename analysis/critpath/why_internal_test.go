package critpath

import (
	"strconv"
	"strings"
	"testing"
)

// The text summary lists the largest wait states only, and says how many
// it left out and how small they are.
func TestWaitStatesTextCut(t *testing.T) {
	r := &RunInfo{Span: 1000}
	for i := range maxWaitRows + 5 {
		r.WaitStates = append(r.WaitStates, WaitState{State: "late_sender", Rank: i, Function: "MPI_Recv", Count: 1,
			Time: int64(100 - i), Share: float64(100-i) / 1000})
	}
	var b strings.Builder
	r.writeText(&b, func(ns float64) string { return strconv.FormatFloat(ns, 'f', 0, 64) + " ns" })
	out := b.String()
	if n := strings.Count(out, "late_sender"); n != maxWaitRows {
		t.Errorf("%d rows, want %d:\n%s", n, maxWaitRows, out)
	}
	if !strings.Contains(out, "... 5 more, each at most 8.0% of the run (--json lists them all)") {
		t.Errorf("no line for the rows left out:\n%s", out)
	}
}
