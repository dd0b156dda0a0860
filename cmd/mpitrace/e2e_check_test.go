package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCheckRegression records fixtures/programs/checkwork.c with both MPIs:
// a baseline from one run; a second run with the same work passes
// mpitrace check; a run with twice the work fails it, naming the critical
// path; a broken baseline exits 2.
//
// Not timing-fragile: the work is a sleep (20 ms × (rank+1) per step, 10
// steps: the critical path is about 400 ms of it, 800 ms with twice the
// work), whose time a busy machine hardly changes; the comparisons allow
// 50% and ignore changes under 20 ms, so that the MPI waits of a run
// slowed by other jobs do not count, while twice the work adds some
// 400 ms (+100%) to the critical path.
func TestCheckRegression(t *testing.T) {
	const steps, ms = "10", "20"
	flags := []string{"--tolerance", "50%", "--floor", "20ms"}
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			bin := m.compile(t, "checkwork")
			dir := t.TempDir()
			rec := func(name, work string) string {
				t.Helper()
				out := filepath.Join(dir, name)
				if r := record(t, out, nil, m.launch(2, bin, steps, work)...); r.code != 0 {
					t.Fatalf("record %s: exit %d\n%s", name, r.code, r.stderr)
				}
				return out
			}
			a, same, twice := rec("a", ms), rec("same", ms), rec("twice", "40")
			base := filepath.Join(dir, "baseline.json")
			r := run(t, dir, mpitraceBin, "check", a, "--baseline", base, "--write-baseline")
			if r.code != 0 || !strings.HasPrefix(r.stdout, "Wrote "+base+": 2 ranks, 4 MPI functions, ") {
				t.Fatalf("--write-baseline: exit %d %q %q", r.code, r.stdout, r.stderr)
			}
			data, err := os.ReadFile(base)
			if err != nil || !strings.HasPrefix(string(data), "{\n  \"mpitrace_baseline\": 1,\n") ||
				!strings.Contains(string(data), `"MPI_Sendrecv": 20`) || !strings.Contains(string(data), `"MPI_Allreduce": 20`) {
				t.Fatalf("baseline file: %v\n%s", err, data)
			}

			r = run(t, dir, append([]string{mpitraceBin, "check", same, "--baseline", base}, flags...)...)
			if r.code != 0 || r.stderr != "" || !regexp.MustCompile(`^OK: 1[0-9] figures of .* within 50% and 20.000 ms of `).MatchString(r.stdout) {
				t.Errorf("same work: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}

			r = run(t, dir, append([]string{mpitraceBin, "check", twice, "--baseline", base}, flags...)...)
			if r.code != 1 || !strings.HasPrefix(r.stderr, "mpitrace: regression: ") {
				t.Fatalf("twice the work: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			for _, fig := range []string{"critical path length", "critical path computation"} {
				re := regexp.MustCompile(`(?m)^` + fig + ` +[0-9.]+ ms +[0-9.]+ ms +\+[0-9.]+% +REGRESSION$`)
				if !re.MatchString(r.stdout) || !strings.Contains(r.stderr, fig) {
					t.Errorf("twice the work: %q not a regression:\n%s%s", fig, r.stdout, r.stderr)
				}
			}

			broken := filepath.Join(dir, "broken.json")
			if err := os.WriteFile(broken, data[:len(data)/2], 0o644); err != nil {
				t.Fatal(err)
			}
			r = run(t, dir, mpitraceBin, "check", same, "--baseline", broken)
			if r.code != 2 || r.stdout != "" || r.stderr != "mpitrace: baseline "+broken+": not valid JSON: unexpected end of JSON input\n" {
				t.Errorf("broken baseline: exit %d %q %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}
