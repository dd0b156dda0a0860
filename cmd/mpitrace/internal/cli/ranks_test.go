package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/render"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

func TestParseRanks(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want render.RankSet
		str  string
	}{
		{[]string{"3"}, render.RankSet{{First: 3, Last: 3}}, "3"},
		{[]string{"1-3"}, render.RankSet{{First: 1, Last: 3}}, "1-3"},
		{[]string{"0,2"}, render.RankSet{{First: 0, Last: 0}, {First: 2, Last: 2}}, "0,2"},
		{[]string{"7,0-2, 4"}, render.RankSet{{First: 0, Last: 2}, {First: 4, Last: 4}, {First: 7, Last: 7}}, "0-2,4,7"},
		// Overlapping and adjacent ranges merge; a repeated flag adds.
		{[]string{"0-3,2-5", "6", "9"}, render.RankSet{{First: 0, Last: 6}, {First: 9, Last: 9}}, "0-6,9"},
		{[]string{"2", "2"}, render.RankSet{{First: 2, Last: 2}}, "2"},
	} {
		got, err := parseRanks("--ranks", c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) || got.String() != c.str {
			t.Errorf("parseRanks(%q) = %v (%q), %v; want %v (%q)", c.in, got, got.String(), err, c.want, c.str)
		}
	}
	for _, bad := range []string{"", "x", "1-", "-1", "3-1", "1,,2", "1-2-3", "+1", "01", " ", "1.5"} {
		if got, err := parseRanks("--rank", []string{bad}); err == nil || !strings.HasPrefix(err.Error(), "--rank ") {
			t.Errorf("parseRanks(%q) = %v, %v; want an error naming --rank", bad, got, err)
		}
	}
	s := render.RankSet{{First: 0, Last: 1}, {First: 5, Last: 5}}
	for r, want := range map[int]bool{0: true, 1: true, 2: false, 5: true, 6: false, -1: false} {
		if s.Contains(r) != want {
			t.Errorf("%v.Contains(%d) = %v", s, r, !want)
		}
	}
	if s.Max() != 5 {
		t.Errorf("%v.Max() = %d", s, s.Max())
	}
}

// writeTrace3 writes a 3-rank ring trace.
func writeTrace3(t *testing.T) string {
	t.Helper()
	b := testgen.New(3)
	for r := 0; r < 3; r++ {
		rk := b.Rank(r)
		rk.Call("MPI_Init")
		rk.Send(int64((r+1)%3), 1, 8)
		rk.Recv(int64((r+2)%3), 1, 8)
		rk.Call("MPI_Finalize")
	}
	return saveTrace(t, b)
}

// dump --rank takes the lists and ranges dot --ranks takes.
func TestDumpRankRanges(t *testing.T) {
	dir := writeTrace3(t)
	for _, c := range []struct {
		args  []string
		ranks string
	}{
		{[]string{"--rank", "1-2"}, "1 2"},
		{[]string{"--rank", "0,2"}, "0 2"},
		{[]string{"--rank", "2", "--rank", "0"}, "0 2"},
		{[]string{"--rank=0-1,2"}, "0 1 2"},
		{nil, "0 1 2"},
	} {
		code, out, errs := runCLI(t, append([]string{"dump", dir}, c.args...)...)
		if code != 0 || errs != "" {
			t.Fatalf("dump %v: exit %d, %s", c.args, code, errs)
		}
		var got []string
		for _, l := range strings.Split(out, "\n") {
			if r, ok := strings.CutPrefix(l, "rank "); ok {
				got = append(got, r)
			}
		}
		if strings.Join(got, " ") != c.ranks {
			t.Errorf("dump %v printed ranks %v, want %s", c.args, got, c.ranks)
		}
	}
	for _, c := range []struct{ arg, want string }{
		{"1-5", "mpitrace: --rank 1-5: " + dir + " has ranks 0-2"},
		{"x", `mpitrace: --rank "x": want a rank N or a range A-B, or a list of them separated by commas (e.g. 0-3 or 0,2)`},
	} {
		code, out, errs := runCLI(t, "dump", dir, "--rank", c.arg)
		if code != ExitUsage || out != "" || !strings.HasPrefix(errs, c.want+"\n") {
			t.Errorf("dump --rank %s: exit %d, stderr %q; want %d and %q", c.arg, code, errs, ExitUsage, c.want)
		}
	}
}

// dot --ranks takes a list too.
func TestDotRankList(t *testing.T) {
	dir := writeTrace3(t)
	code, out, errs := runCLI(t, "dot", dir, "--ranks", "0,2")
	if code != 0 || errs != "" {
		t.Fatalf("dot --ranks 0,2: exit %d, %s", code, errs)
	}
	if !strings.Contains(out, "cluster_rank0") || strings.Contains(out, "cluster_rank1") || !strings.Contains(out, "cluster_rank2") ||
		!strings.Contains(out, "showing ranks 0,2 of 0-2") {
		t.Errorf("dot --ranks 0,2:\n%s", out)
	}
}
