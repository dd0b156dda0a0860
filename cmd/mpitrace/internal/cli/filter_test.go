package cli

import (
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// filteredTrace writes a 2-rank trace whose header options say the
// recorder ran with include and exclude; with recv false rank 1 did not
// record its receive of rank 0's message.
func filteredTrace(t *testing.T, include, exclude string, recv bool) string {
	t.Helper()
	b := testgen.New(2)
	b.Meta = []tracefmt.KeyValue{{Key: tracefmt.KeyOptions,
		Value: "buffer=262144 compress=1 zstd_level=3 clocksync=10 include=" + include + " exclude=" + exclude}}
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.Call("MPI_Init")
	r1.Call("MPI_Init")
	r0.Send(1, 3, 64)
	r0.Send(1, 4, 64)
	if recv {
		r1.Recv(0, 3, 64)
		r1.Recv(0, 4, 64)
	}
	r0.Call("MPI_Finalize")
	r1.Call("MPI_Finalize")
	return saveTrace(t, b)
}

// critpath (and dot) on a trace recorded with --include or --exclude say
// that the filter explains its unmatched messages.
func TestFilterExplainsUnmatched(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, c := range []struct {
		name             string
		include, exclude string
		recv             bool
		want             string // "" for no note
	}{
		{"exclude", "", "MPI_Recv,MPI_Wtime", false, "mpitrace: note: the trace was recorded with --exclude MPI_Recv,MPI_Wtime: 2 unmatched messages may be those whose send or receive it left out\n"},
		{"include", "MPI_Send", "", false, "mpitrace: note: the trace was recorded with --include MPI_Send: 2 unmatched messages may be those whose send or receive it left out\n"},
		{"both", "MPI_Send,MPI_Recv", "MPI_Recv", false, "recorded with --include MPI_Send,MPI_Recv --exclude MPI_Recv: 2 unmatched"},
		{"no filter", "", "", false, ""},
		{"all matched", "", "MPI_Wtime", true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filteredTrace(t, c.include, c.exclude, c.recv)
			for _, cmd := range []string{"critpath", "dot"} {
				code, _, errs := runCLI(t, cmd, dir)
				// A filter's unmatched messages are warnings (exit 0);
				// without a filter they are errors of the trace (exit 1).
				wantCode := 0
				if c.name == "no filter" {
					wantCode = 1
				}
				if code != wantCode {
					t.Errorf("%s: exit %d, want %d; stderr:\n%s", cmd, code, wantCode, errs)
				}
				note := ""
				for _, l := range strings.SplitAfter(errs, "\n") {
					if strings.HasPrefix(l, "mpitrace: note: ") {
						note += l
					}
				}
				if c.want == "" && note != "" || c.want != "" && !strings.Contains(note, c.want) || strings.Count(note, "\n") > 1 {
					t.Errorf("%s: notes %q, want %q; stderr:\n%s", cmd, note, c.want, errs)
				}
				if c.want != "" && !strings.Contains(errs, "unmatched_send") {
					t.Errorf("%s: no unmatched_send diagnostic:\n%s", cmd, errs)
				}
			}
		})
	}
}
