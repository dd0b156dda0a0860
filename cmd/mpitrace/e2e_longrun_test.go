package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLongRunEveryCommand records a long run under each MPI — the stencil
// fixture on 2 ranks for 400,000 iterations, 4.08 million MPI calls — and
// runs every analysis command on it: each must succeed (or say that the
// trace has no loops, or in one line no regions), count every call, and stay
// within its memory bound. stats and the streamed export hold what the
// ranks need, not what the run recorded; check and regions replay the
// trace (reconstruct.ReplayTrace) in memory independent of the events
// (50-60 MB, most of it the readers' 32 MiB of windows); critpath replays
// it too (twice with measured weights or the why block) but folds its
// path, a byte a vertex and at most 4 for each signature its finer levels
// read (115-172 MB on this run's 3.2 M vertices when the fold held 13
// bytes a vertex and 12 more a step while folding), and so does dot
// --critical-only, which draws the folded path without the graph; export
// replays it and keeps the marks of the path (about a byte a call on it;
// its track is read again from the replay's result) (docs/performance.md).
func TestLongRunEveryCommand(t *testing.T) {
	const iters = 400_000
	// Per rank: 2 MPI_Irecv, 2 MPI_Isend and an MPI_Waitall an iteration,
	// an MPI_Allreduce every 10, MPI_Init and MPI_Finalize.
	const perRank = 5*iters + iters/10 + 2
	const events = 2 * perRank
	const flat = 64 << 20                     // what a streaming command may hold, whatever the length
	const replayBound = flat + 32<<20         // the replay's engine, whatever the length
	const foldBound = replayBound + 8*events  // and the fold of a path of every call (a byte a vertex and its signatures)
	const marksBound = replayBound + 8*events // and the export's marks of it (about a byte a call on it)
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			bin := m.compile(t, "stencil")
			work := t.TempDir()
			tr := filepath.Join(work, "traces")
			if r := record(t, tr, nil, m.launch(2, bin, strconv.Itoa(iters), "8")...); r.code != 0 {
				t.Fatalf("record: exit %d\n%s", r.code, r.stderr)
			}
			out := func(name string) string { return filepath.Join(work, name) }
			for _, c := range []struct {
				argv  []string
				code  int
				bound int64
				check func(t *testing.T, r result)
			}{
				{[]string{"stats", tr, "--json"}, 0, flat, func(t *testing.T, r result) {
					var j struct {
						Ranks []struct {
							Rank  int   `json:"rank"`
							Calls int64 `json:"calls"`
						} `json:"ranks"`
					}
					if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
						t.Fatal(err)
					}
					if len(j.Ranks) != 2 || j.Ranks[0].Calls != perRank || j.Ranks[1].Calls != perRank {
						t.Errorf("calls per rank %+v, want %d each", j.Ranks, perRank)
					}
				}},
				{[]string{"critpath", tr, "-o", out("critPath.out")}, 0, foldBound, func(t *testing.T, r result) {
					checkLongPath(t, out("critPath.out"), r.stdout, iters)
				}},
				{[]string{"critpath", tr, "--weights", "measured", "-o", out("measured.out")}, 0, foldBound, func(t *testing.T, r result) {
					checkLongPath(t, out("measured.out"), r.stdout, iters)
				}},
				{[]string{"dot", tr, "--critical-only", "-o", out("path.dot")}, 0, foldBound, func(t *testing.T, r result) {
					dot, err := os.ReadFile(out("path.dot"))
					if n := strings.Count(string(dot), "shape="); err != nil || n == 0 || n > 300 {
						t.Errorf("the folded path has %d vertices (%v), want 1 to 300", n, err)
					}
				}},
				{[]string{"check", tr, "--baseline", out("baseline.json"), "--write-baseline"}, 0, replayBound, nil},
				{[]string{"check", tr, "--baseline", out("baseline.json")}, 0, replayBound, func(t *testing.T, r result) {
					if !strings.HasPrefix(r.stdout, "OK: ") {
						t.Errorf("the trace against its own baseline:\n%s", r.stdout)
					}
				}},
				// The timeline with the path's marks (1 GB of JSON: not kept),
				// then streamed, a window of it.
				{[]string{"export", tr, "-o", os.DevNull}, 0, marksBound, nil},
				{[]string{"export", tr, "--critical=false", "--window", "0:100ms", "-o", out("window.json")}, 0, flat, func(t *testing.T, r result) {
					data, err := os.ReadFile(out("window.json"))
					if err != nil || !json.Valid(data) || !strings.Contains(string(data), `"name":"MPI_Waitall"`) {
						t.Errorf("the window's timeline (%d bytes, %v) is not JSON with the calls", len(data), err)
					}
				}},
				{[]string{"loops", tr}, 0, flat, func(t *testing.T, r result) {
					if !strings.Contains(r.stdout, "No instrumented loops") {
						t.Errorf("loops of a program built without loop markers:\n%s", r.stdout)
					}
				}},
				{[]string{"regions", tr}, 1, replayBound, nil},
			} {
				name := strings.Join(c.argv[:1], " ")
				if len(c.argv) > 2 && strings.HasPrefix(c.argv[2], "-") {
					name += " " + c.argv[2]
				}
				t.Run(name, func(t *testing.T) {
					r := runMeasured(t, work, append([]string{mpitraceBin}, c.argv...)...)
					if r.code != c.code || strings.Contains(r.stderr, "panic") {
						t.Fatalf("%v: exit %d, want %d; stderr:\n%s", c.argv, r.code, c.code, r.stderr)
					}
					if c.code != 0 && strings.Count(strings.TrimRight(r.stderr, "\n"), "\n") != 0 {
						t.Errorf("%v: more than one line on stderr:\n%s", c.argv, r.stderr)
					}
					t.Logf("%v: peak RSS %d MB, %.0f bytes an event", c.argv, r.maxRSS>>20, float64(r.maxRSS)/events)
					if r.maxRSS > c.bound {
						t.Errorf("%v: peak RSS %d MB, bound %d MB", c.argv, r.maxRSS>>20, c.bound>>20)
					}
					if c.check != nil {
						c.check(t, r)
					}
				})
			}
		})
	}
}

// checkLongPath checks the critPath.out file of a long stencil run and
// its summary: from MPI_Init to MPI_Finalize, vertex and edge lines
// alternating, as many vertices as the summary says, at least a Waitall
// an iteration, and the repetition found.
func checkLongPath(t *testing.T, file, summary string, iters int) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines)%2 != 1 || lines[0] != "MPI_Init -1" || lines[len(lines)-1] != "MPI_Finalize -1" {
		t.Fatalf("%s: %d lines from %q to %q", file, len(lines), lines[0], lines[len(lines)-1])
	}
	m := regexp.MustCompile(`\n(\d+) vertices on 2 ranks`).FindStringSubmatch(summary)
	if m == nil {
		t.Fatalf("no vertex count in the summary:\n%s", summary)
	}
	if n, _ := strconv.Atoi(m[1]); n != (len(lines)+1)/2 || n < iters {
		t.Errorf("%s: %d vertices, the summary says %s; want at least %d", file, (len(lines)+1)/2, m[1], iters)
	}
	waitalls := 0
	for i := 0; i < len(lines); i += 2 {
		if strings.HasPrefix(lines[i], "MPI_Waitall ") || strings.HasPrefix(lines[i], "MPI_Wait ") {
			waitalls++
		}
	}
	if waitalls < iters/2 {
		t.Errorf("%s: %d MPI_Waitall vertices for %d iterations", file, waitalls, iters)
	}
	if !regexp.MustCompile(`iterations of a body of \d+ steps`).MatchString(summary) {
		t.Errorf("no repetition in the summary:\n%s", summary)
	}
}
