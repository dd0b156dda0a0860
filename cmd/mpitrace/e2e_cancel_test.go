package main_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCancelledReceives: the cancel fixture under both MPIs, 2 ranks.
// Every MPI_Cancel is recorded with its request (a ReqFree event that
// frees nothing), so that a receive cancelled and freed without a
// completion is taken as cancelled, not as a wildcard receive never
// completed (graph500 warned so on every analysis); a cancellation that
// failed leaves the receive matched to its message. critpath and stats
// then say no warning, only the cancelled requests (information).
func TestCancelledReceives(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			bin := m.compile(t, "cancel")
			dir := t.TempDir()
			out := dir + "/traces"
			r := record(t, out, nil, m.launch(2, bin)...)
			if r.code != 0 || !strings.Contains(r.stdout, "cancel done") {
				t.Fatalf("record: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			d := run(t, dir, mpitraceBin, "dump", out)
			if n := strings.Count(d.stdout, "ReqFree fn=MPI_Cancel "); n != 7 || strings.Contains(d.stdout, "Call fn=MPI_Cancel") {
				t.Errorf("dump: %d MPI_Cancel recorded as ReqFree, want 7 (3 a rank, and rank 0's of a received message)\n%s", n, d.stdout)
			}
			for _, args := range [][]string{{"critpath", "-o", dir + "/critPath.out"}, {"stats"}} {
				res := run(t, dir, append([]string{mpitraceBin}, append(args, out)...)...)
				if res.code != 0 || strings.Contains(res.stderr, "warning") || strings.Contains(res.stderr, "error") {
					t.Errorf("mpitrace %s: exit %d\n%s", args[0], res.code, res.stderr)
				}
			}
			res := run(t, dir, mpitraceBin, "critpath", out, "--json")
			var j struct {
				Diagnostics struct {
					List []struct {
						Code     string `json:"code"`
						Severity string `json:"severity"`
						Rank     int    `json:"rank"`
						Message  string `json:"message"`
					} `json:"list"`
				} `json:"diagnostics"`
			}
			if err := json.Unmarshal([]byte(res.stdout), &j); err != nil {
				t.Fatal(err)
			}
			freed := map[int]bool{}
			for _, x := range j.Diagnostics.List {
				switch {
				case x.Code == "cancelled_request" && strings.Contains(x.Message, "1 receives cancelled (MPI_Cancel) and freed"):
					freed[x.Rank] = true
				case x.Code == "unresolved_wildcard" || x.Code == "unmatched_send" || x.Code == "unmatched_recv":
					t.Errorf("rank %d: %s: %s", x.Rank, x.Code, x.Message)
				}
			}
			if !freed[0] || !freed[1] {
				t.Errorf("the receives cancelled and freed without a completion are not said so on both ranks: %+v", j.Diagnostics.List)
			}
		})
	}
}
