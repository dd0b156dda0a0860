package main_test

// record in batch jobs: the closing line it always prints, and an output
// directory it cannot write.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRecordClosingLine: with stderr not a terminal, as in a batch job,
// record still ends with one line saying where the logs are, how many,
// their size and what was lost.
func TestRecordClosingLine(t *testing.T) {
	m := mpis[0]
	t.Run("recorded", func(t *testing.T) {
		bin, _, out := faultSetup(t, m)
		r := record(t, out, nil, m.launch(2, bin, "finalize", "10")...)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		closingLine(t, r.stderr, "2 rank logs in "+out+" (")
		closingLine(t, r.stderr, "no data lost")
	})
	t.Run("killed-rank", func(t *testing.T) {
		bin, _, out := faultSetup(t, m)
		r := record(t, out, []string{"--buffer", "4k"}, m.launch(2, bin, "kill", "1200")...)
		lines := mpitraceLines(r.stderr)
		if len(lines) != 1 || !strings.Contains(lines[0], "data lost: ") || !strings.Contains(lines[0], "rank 1 stopped before its final write") {
			t.Fatalf("want one closing line saying rank 1 lost its end, got %q", lines)
		}
	})
	t.Run("nothing", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "traces")
		r := record(t, out, nil, "true")
		lines := mpitraceLines(r.stderr)
		if r.code != 0 || len(lines) != 1 || !strings.Contains(lines[0], "no rank logs in "+out+": nothing was recorded") {
			t.Fatalf("exit %d, want one line saying nothing was recorded, got %q", r.code, lines)
		}
	})
}

// TestRecordUnwritableOut: an output directory that cannot be made is one
// line before the run, which goes on without the recorder, and a closing
// line and status 1 after it (the application's own status when it
// fails).
func TestRecordUnwritableOut(t *testing.T) {
	m := mpis[0]
	m.require(t)
	bin := m.compile(t, "mix")
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(file, "traces") // below a regular file: never writable, even for root
	for _, status := range []int{0, 7} {
		t.Run(fmt.Sprint("exit", status), func(t *testing.T) {
			plain := run(t, dir, m.launch(2, bin, fmt.Sprint(status))...)
			argv := append([]string{mpitraceBin, "record", "--out", out, "--"}, m.launch(2, bin, fmt.Sprint(status))...)
			r := run(t, dir, argv...)
			want := status
			if want == 0 {
				want = 1
			}
			if r.code != want || plain.code != status || !slices.Equal(sortedLines(r.stdout), sortedLines(plain.stdout)) {
				t.Fatalf("exit %d (want %d), output %q; the program alone: exit %d, output %q", r.code, want, r.stdout, plain.code, plain.stdout)
			}
			lines := mpitraceLines(r.stderr)
			if len(lines) != 2 || !strings.Contains(lines[0], "cannot write to "+out+": not a directory; the application runs without recording") ||
				!strings.Contains(lines[1], "nothing recorded: "+out+" is not writable") {
				t.Fatalf("want a line before and a line after the run, got %q", lines)
			}
		})
	}
}
