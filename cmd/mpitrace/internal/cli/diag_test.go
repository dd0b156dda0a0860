package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// truncatedTrace is writeTrace with rank 1's log cut short.
func truncatedTrace(t *testing.T) string {
	t.Helper()
	dir := writeTrace(t)
	p := filepath.Join(dir, "rank-00001.mpit")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b[:len(b)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// jsonDiagnostics is the diagnostics part of a --json output.
type jsonDiagnostics struct {
	Diagnostics *struct {
		Counts map[string]int `json:"counts"`
		Codes  map[string]int `json:"codes"`
		List   []struct {
			Severity string `json:"severity"`
			Code     string `json:"code"`
			Rank     *int   `json:"rank"`
			File     string `json:"file"`
			Message  string `json:"message"`
		} `json:"list"`
	} `json:"diagnostics"`
}

// Diagnostics appear in --json: a list with severity, code, rank and
// message, and counts by severity; stderr still has its lines.
func TestJSONDiagnostics(t *testing.T) {
	t.Chdir(t.TempDir())
	good, bad := writeTrace(t), truncatedTrace(t)
	for _, cmd := range []string{"stats", "critpath"} {
		code, out, _ := runCLI(t, cmd, good, "--json")
		var j jsonDiagnostics
		decodeOnly(t, out, &j)
		d := j.Diagnostics
		if code != 0 || d == nil || d.List == nil || len(d.List) != 0 || d.Counts["data_loss"] != 0 || d.Counts["error"] != 0 {
			t.Fatalf("%s --json on a good trace: exit %d, diagnostics %+v", cmd, code, d)
		}
		for _, sev := range []string{"info", "warning", "data_loss", "error"} {
			if _, ok := d.Counts[sev]; !ok {
				t.Errorf("%s --json: no count of %s", cmd, sev)
			}
		}

		code, out, errs := runCLI(t, cmd, bad, "--json")
		j = jsonDiagnostics{}
		decodeOnly(t, out, &j)
		d = j.Diagnostics
		if code != 0 || d == nil || d.Counts["data_loss"] == 0 || !strings.Contains(errs, "data loss") {
			t.Fatalf("%s --json on a truncated trace: exit %d, diagnostics %+v, stderr %q", cmd, code, d, errs)
		}
		n := 0
		for _, x := range d.List {
			if x.Severity == "data_loss" {
				n++
				if x.Rank == nil || *x.Rank < 0 || *x.Rank > 1 || x.Code == "" || x.Message == "" || d.Codes[x.Code] == 0 {
					t.Errorf("%s --json: diagnostic %+v", cmd, x)
				}
			}
		}
		if n != d.Counts["data_loss"] {
			t.Errorf("%s --json: %d data_loss diagnostics listed, %d counted", cmd, n, d.Counts["data_loss"])
		}
		if _, again, _ := runCLI(t, cmd, bad, "--json"); again != out {
			t.Errorf("%s --json: two runs differ", cmd)
		}
	}
}

// The stdout summaries say when data was lost, with the count.
func TestSummarySaysDataLost(t *testing.T) {
	t.Chdir(t.TempDir())
	good, bad := writeTrace(t), truncatedTrace(t)
	lost := regexp.MustCompile(`(?m)^Data lost: (\d+) data-loss diagnostics? \(listed on stderr\)`)
	for _, cmd := range []string{"stats", "critpath"} {
		if _, out, _ := runCLI(t, cmd, good); lost.MatchString(out) || strings.Contains(out, "lost") {
			t.Errorf("%s on a good trace says data was lost:\n%s", cmd, out)
		}
		_, out, _ := runCLI(t, cmd, bad)
		m := lost.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s on a truncated trace does not say data was lost:\n%s", cmd, out)
		}
		_, js, _ := runCLI(t, cmd, bad, "--json")
		var j jsonDiagnostics
		decodeOnly(t, js, &j)
		if want := j.Diagnostics.Counts["data_loss"]; m[1] != fmt.Sprint(want) {
			t.Errorf("%s says %s data-loss diagnostics, --json counts %d", cmd, m[1], want)
		}
	}
}

// stats lists MPI_Init and MPI_Finalize apart from the application's MPI
// functions, in the text and in the JSON.
func TestStatsInitFinalizeApart(t *testing.T) {
	dir := writeTrace(t)
	code, out, _ := runCLI(t, "stats", dir)
	_, all, _ := strings.Cut(out, "All ranks:\n")
	all, apart, found := strings.Cut(all, "\nMPI_Init and MPI_Finalize (")
	if code != 0 || !found || strings.Contains(all, "MPI_Init") || strings.Contains(all, "MPI_Finalize") ||
		!strings.Contains(apart, " MPI_Init ") || !strings.Contains(apart, " MPI_Finalize ") {
		t.Errorf("stats: exit %d; MPI_Init and MPI_Finalize not apart:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "stats", dir, "--json")
	var j struct {
		All          []struct{ Name string } `json:"aggregate"`
		InitFinalize []struct{ Name string } `json:"init_finalize"`
	}
	decodeOnly(t, out, &j)
	if all := fmt.Sprint(j.All); code != 0 || len(j.InitFinalize) != 2 || len(j.All) != 3 || strings.Contains(all, "MPI_Init") || strings.Contains(all, "MPI_Finalize") {
		t.Errorf("stats --json: aggregate %v, init_finalize %v", j.All, j.InitFinalize)
	}
}
