package main_test

// The analysis as an MPI job (--mpi): mpirun -np P mpitrace stats --mpi.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/internal/mpijob"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// procs are the numbers of processes of the jobs of the i-th stored
// trace under the mi-th MPI: two of 1 to 4, the other two under the
// other MPI, so that each trace is analysed by jobs of 1, 2, 3 and 4
// processes (an MPI job costs about half a second to start here; four
// per trace, command and MPI would cost minutes).
func procs(i, mi int) [2]int { return [2]int{1 + (i+mi)%4, 1 + (i+mi+2)%4} }

// TestStatsMPI: under both MPIs, with 1 to 4 processes (procs), 'stats
// --mpi --json' on every stored trace prints what the single-process
// run's goldens hold, byte for byte (stdout and stderr: the profile and
// the diagnostics), and exits 0; so does 'stats --mpi --by callsite'.
func TestStatsMPI(t *testing.T) {
	stored, dirs := storedTraces(t)
	for mi, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			sysroot := t.TempDir()
			for i, dir := range dirs {
				version, name := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
				golden := filepath.Join(stored, "golden", version, name)
				for k, np := range procs(i, mi) {
					for _, c := range []struct {
						file string
						args []string
					}{
						{"stats.json", []string{"stats", "--json"}},
						{"stats-callsite.txt", []string{"stats", "--by", "callsite", "--sysroot", sysroot}},
					} {
						if c.file == "stats-callsite.txt" && k > 0 {
							continue // the same exchanges as --json's: once is enough
						}
						argv := append(append([]string{mpitraceBin}, c.args...), "--mpi", "--mpicc", m.cc, dir)
						r := run(t, t.TempDir(), m.launch(np, argv...)...)
						clean := func(s string) string {
							return strings.ReplaceAll(strings.ReplaceAll(s, sysroot, "$TMP/sysroot"), dir, "$TRACE")
						}
						if r.code != 0 {
							t.Fatalf("%s/%s, %d processes: mpitrace %s: exit %d\n%s", version, name, np, strings.Join(c.args, " "), r.code, r.stderr)
						}
						want, err := os.ReadFile(filepath.Join(golden, c.file))
						if err != nil {
							t.Fatal(err)
						}
						if got := clean(r.stdout); got != string(want) {
							t.Errorf("%s/%s, %d processes: mpitrace %s differs from %s:\n%s", version, name, np, strings.Join(c.args, " "), c.file, lineDiff(strings.Split(got, "\n"), strings.Split(string(want), "\n")))
						}
						wantErr, _ := os.ReadFile(filepath.Join(golden, c.file+".stderr"))
						if got := clean(r.stderr); got != string(wantErr) {
							t.Errorf("%s/%s, %d processes: stderr of mpitrace %s:\n%s\nwant:\n%s", version, name, np, strings.Join(c.args, " "), got, wantErr)
						}
					}
				}
			}
		})
	}
}

// TestStatsMPIFaults: under both MPIs, a job that cannot run stops every
// process with one line from mpitrace and a documented status, never a
// hang (each job has a deadline): damaged and foreign rank files are
// reported as the single-process run reports them; a compiler wrapper
// that does not exist, the launcher of another MPI than the transport's,
// and a command started under a launcher without --mpi are refused.
func TestStatsMPIFaults(t *testing.T) {
	src, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "traces", "v5", "mix"))
	if err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(t.TempDir(), "mix")
	copyDir(t, src, trace)
	// A checksum that fails in rank 2's log, rank 3's log cut short, and
	// rank 1's no mpitrace file.
	damage(t, filepath.Join(trace, "rank-00002.mpit"), 600, 40)
	cut(t, filepath.Join(trace, "rank-00003.mpit"), 1000)
	if err := os.WriteFile(filepath.Join(trace, "rank-00001.mpit"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	// stats reads every file; critpath replays them (and, the replay
	// declining the lost events, process 0 builds the graph); check
	// refuses a trace that lost data.
	commands := [][]string{{"stats", "--json"}, {"critpath", "-o", "-"}, {"check", "--write-baseline", "--baseline", "base.json"}}
	serial := make([]result, len(commands))
	for i, args := range commands {
		serial[i] = run(t, t.TempDir(), append(append([]string{mpitraceBin}, args...), trace)...)
		if want := []int{0, 1, 2}[i]; serial[i].code != want || len(mpitraceLines(serial[i].stderr)) < 3 {
			t.Fatalf("the damaged trace, %s: exit %d (want %d), stderr:\n%s", args[0], serial[i].code, want, serial[i].stderr)
		}
	}
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			for i, args := range commands {
				argv := append(append([]string{mpitraceBin}, args...), "--mpi", "--mpicc", m.cc, trace)
				r := run(t, t.TempDir(), m.launch(3, argv...)...)
				// (The launcher adds what it says of a process that exits
				// with a status.)
				if r.code != serial[i].code || r.stdout != serial[i].stdout || !slices.Equal(mpitraceLines(r.stderr), mpitraceLines(serial[i].stderr)) {
					t.Errorf("damaged trace, 3 processes, %s: exit %d (want %d), stdout same: %v, stderr:\n%s\nwant:\n%s",
						args[0], r.code, serial[i].code, r.stdout == serial[i].stdout, r.stderr, serial[i].stderr)
				}
			}
			other := "mpicc.mpich"
			if m.name == "mpich" {
				other = "mpicc.openmpi"
			}
			for _, c := range []struct {
				name string
				args []string
				code int
				says string
			}{
				{"no wrapper", []string{"--mpi", "--mpicc", "no-such-mpicc"}, 1, `"no-such-mpicc" not found`},
				{"another MPI", []string{"--mpi", "--mpicc", other}, 1, "the launcher belongs to another MPI"},
				{"without --mpi", nil, 2, "add --mpi"},
				{"no trace", []string{"--mpi", "--mpicc", m.cc}, 1, "no such trace directory"},
				// Parsing stops at the bad flag, before --mpi.
				{"bad flag first", []string{"--bogus", "--mpi", "--mpicc", m.cc}, 2, "unknown flag: --bogus"},
			} {
				dir := trace
				if c.name == "no trace" {
					dir = filepath.Join(t.TempDir(), "none")
				}
				argv := append([]string{mpitraceBin, "stats", dir}, c.args...)
				r := run(t, t.TempDir(), m.launch(3, argv...)...)
				lines := mpitraceLines(r.stderr)
				if r.code != c.code || len(lines) != 1 || !strings.Contains(lines[0], c.says) {
					t.Errorf("%s: exit %d (want %d), mpitrace's lines %q, want one saying %q", c.name, r.code, c.code, lines, c.says)
				}
			}
			// One process of three does not see the trace directory (a
			// node without the file system): every process stops, none
			// waits for it.
			argv := m.launch(1, mpitraceBin, "stats", "--mpi", "--mpicc", m.cc, filepath.Join(t.TempDir(), "none"))
			argv = append(append(argv, ":", "-np", "2"), mpitraceBin, "stats", "--mpi", "--mpicc", m.cc, trace)
			r := run(t, t.TempDir(), argv...)
			if lines := mpitraceLines(r.stderr); r.code != 1 || len(lines) != 1 || !strings.Contains(lines[0], "no such trace directory") {
				t.Errorf("a directory one process lacks: exit %d, mpitrace's lines %q", r.code, lines)
			}
		})
	}
}

// storedTraces returns the directory of the stored traces and the traces
// (fixtures/traces/vN/NAME), oldest format first.
func storedTraces(t *testing.T) (stored string, dirs []string) {
	t.Helper()
	stored, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "traces"))
	if err != nil {
		t.Fatal(err)
	}
	dirs, err = filepath.Glob(filepath.Join(stored, "v*", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no stored traces: %v", err)
	}
	return stored, dirs
}

// copyDir copies the files of directory src into a new directory dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// damage overwrites n bytes of file at offset off with 0xff.
func damage(t *testing.T, file string, off, n int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil || len(b) < off+n {
		t.Fatalf("%s: %d bytes, %v", file, len(b), err)
	}
	for i := off; i < off+n; i++ {
		b[i] = 0xff
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// cut truncates file to n bytes.
func cut(t *testing.T, file string, n int64) {
	t.Helper()
	if err := os.Truncate(file, n); err != nil {
		t.Fatal(err)
	}
}

// TestStatsMPIRecorded: a run recorded under each MPI (fixtures'
// mix.c, 4 ranks) and a generated trace of 4,096 ranks, profiled and
// analysed by 3 processes of that MPI (stats in all its formats: text,
// --per-rank, --json, by call site; critpath's critPath.out, --json and
// --weights measured; the JSON alone for the large one), print what one
// process prints, byte for byte.
func TestStatsMPIRecorded(t *testing.T) {
	wide := filepath.Join(t.TempDir(), "wide")
	if err := testgen.Halo(4096, 3, 1).WriteDir(wide); err != nil {
		t.Fatal(err)
	}
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			bin := m.compile(t, "mix")
			out := filepath.Join(t.TempDir(), "traces")
			if r := record(t, out, nil, m.launch(4, bin)...); r.code != 0 {
				t.Fatalf("record exited %d\n%s", r.code, r.stderr)
			}
			// --mpi-stats: the three processes' groups cover the 4,096
			// ranks in order, and the MPI is the launcher's. The three
			// share this machine: on at most 3 processors, each runs Go
			// code on one at a time (its share), unless GOMAXPROCS is set.
			statsFile := filepath.Join(t.TempDir(), "mpi-stats.json")
			r := run(t, t.TempDir(), m.launch(3, mpitraceBin, "stats", "--mpi", "--mpicc", m.cc, "--mpi-stats", statsFile, wide)...)
			if r.code != 0 {
				t.Fatalf("--mpi-stats: exit %d\n%s", r.code, r.stderr)
			}
			var ms struct {
				MPILibrary string `json:"mpi_library"`
				Processes  []struct {
					Process   int   `json:"process"`
					FirstRank int   `json:"first_rank"`
					LastRank  int   `json:"last_rank"`
					FileBytes int64 `json:"file_bytes"`
					Exchanges int   `json:"exchanges"`
					Node      int   `json:"node_processes"`
					Procs     int   `json:"gomaxprocs"`
				} `json:"processes"`
			}
			b, err := os.ReadFile(statsFile)
			if err == nil {
				err = json.Unmarshal(b, &ms)
			}
			if err != nil {
				t.Fatal(err)
			}
			wantLib := map[string]string{"openmpi": "Open MPI", "mpich": "MPICH"}[m.name]
			next := 0
			for i, p := range ms.Processes {
				share := p.Procs >= 1
				if runtime.NumCPU() <= 3 && os.Getenv("GOMAXPROCS") == "" {
					share = p.Procs == 1
				}
				if p.Process != i || p.FirstRank != next || p.LastRank < p.FirstRank || p.FileBytes <= 0 || p.Exchanges < 2 || p.Node != 3 || !share {
					t.Errorf("--mpi-stats process %d: %+v", i, p)
				}
				next = p.LastRank + 1
			}
			if len(ms.Processes) != 3 || next != 4096 || !strings.Contains(ms.MPILibrary, wantLib) {
				t.Errorf("--mpi-stats: %d processes up to rank %d, library %q", len(ms.Processes), next-1, ms.MPILibrary)
			}
			for _, dir := range []string{out, wide} {
				for _, args := range [][]string{{"stats"}, {"stats", "--per-rank"}, {"stats", "--json"}, {"stats", "--by", "callsite"},
					{"critpath", "-o", "-"}, {"critpath", "--json"}, {"critpath", "--weights", "measured", "-o", "-"}} {
					if dir == wide && args[len(args)-1] != "--json" {
						continue // the JSON holds what the others print
					}
					one := run(t, t.TempDir(), append(append([]string{mpitraceBin}, args...), dir)...)
					argv := append(append([]string{mpitraceBin}, args...), "--mpi", "--mpicc", m.cc, dir)
					job := run(t, t.TempDir(), m.launch(3, argv...)...)
					if one.code != 0 || job.code != 0 || job.stdout != one.stdout || job.stderr != one.stderr {
						t.Errorf("%s, mpitrace %s: exit %d with --mpi, %d without; same stdout: %v; stderr with --mpi:\n%s\nwithout:\n%s",
							filepath.Base(dir), strings.Join(args, " "), job.code, one.code, job.stdout == one.stdout, job.stderr, one.stderr)
					}
				}
			}
		})
	}
}

// TestCritpathMPI: under both MPIs in turn, 'critpath --mpi' on every
// stored trace (jobs of 1 to 4 processes, procs; the newest format's
// under both) writes the critPath.out of the goldens and prints what the single-process run prints (stdout,
// stderr, exit status), byte for byte; so do, on the newest format's
// traces, --json, --weights measured, check (the baseline it writes, and
// its comparison with one trace's baseline: the same trace passes, the
// others changed shape) and export (the timeline with the path; without,
// of rank 1). (The summary is compared with the single run's
// rather than the golden: its "why" block names this machine's CPUs when
// a trace was recorded on a machine of its name.)
func TestCritpathMPI(t *testing.T) {
	stored, dirs := storedTraces(t)
	newest := filepath.Base(filepath.Dir(dirs[len(dirs)-1]))
	sysroot := t.TempDir()
	base := filepath.Join(t.TempDir(), "base.json")
	if r := run(t, t.TempDir(), mpitraceBin, "check", "--write-baseline", "--baseline", base, filepath.Join(stored, newest, "mix")); r.code != 0 {
		t.Fatalf("check --write-baseline: exit %d\n%s", r.code, r.stderr)
	}
	critPath := []string{"critpath", "-o", "critPath.out", "--sysroot", sysroot}
	jobs := func(version string) [][]string {
		if version != newest {
			return [][]string{critPath}
		}
		return [][]string{
			critPath,
			{"critpath", "--json", "--sysroot", sysroot},
			{"critpath", "--weights", "measured", "-o", "critPath.out", "--sysroot", sysroot},
			{"check", "--write-baseline", "--baseline", "base.json"},
			{"check", "--baseline", base},
			{"export", "-o", "trace.json"},
			{"export", "-o", "trace.json", "--critical=false", "--ranks", "1"},
		}
	}
	// The jobs' numbers of processes: critPath.out of the newest format's
	// with two (procs), the rest with one, in turn.
	// Each other job runs under one MPI, the MPIs taking turns across
	// traces and commands (where one MPI only is installed, under it).
	nps := func(version string, i, mi, j int) []int {
		ps := procs(i+j, mi)
		switch {
		case j == 0 && version == newest:
			return ps[:]
		case len(mpis) == 2 && (i+j)%2 != mi && bothMPIs():
			return nil
		}
		return ps[:1]
	}
	// What a run prints and writes.
	outputs := func(r result, cwd string) result {
		for _, f := range []string{"critPath.out", "base.json", "trace.json"} {
			r.stdout += readIfAny(t, filepath.Join(cwd, f))
		}
		return r
	}
	// The single-process runs, once.
	serial := map[string]result{}
	key := func(dir string, args []string) string { return dir + "\x00" + strings.Join(args, " ") }
	for _, dir := range dirs {
		for _, args := range jobs(filepath.Base(filepath.Dir(dir))) {
			cwd := t.TempDir()
			r := run(t, cwd, append(append([]string{mpitraceBin}, args...), dir)...)
			if r.code != 0 && r.code != 4 {
				t.Fatalf("%s: mpitrace %s: exit %d\n%s", dir, strings.Join(args, " "), r.code, r.stderr)
			}
			serial[key(dir, args)] = outputs(r, cwd)
		}
	}
	for mi, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			for i, dir := range dirs {
				version, name := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
				golden := filepath.Join(stored, "golden", version, name, "critPath.out")
				for ji, args := range jobs(version) {
					for _, np := range nps(version, i, mi, ji) {
						cwd := t.TempDir()
						argv := append(append([]string{mpitraceBin}, args...), "--mpi", "--mpicc", m.cc, dir)
						r := outputs(run(t, cwd, m.launch(np, argv...)...), cwd)
						one := serial[key(dir, args)]
						if r.code != 0 {
							// The launcher adds what it says of a process that
							// exits with a status.
							r.stderr = strings.Join(mpitraceLines(r.stderr), "\n")
							one.stderr = strings.Join(mpitraceLines(one.stderr), "\n")
						}
						what := fmt.Sprintf("%s/%s, %d processes: mpitrace %s", version, name, np, strings.Join(args, " "))
						if r != one {
							t.Errorf("%s: exit %d (want %d), stdout and files:\n%s\nstderr:\n%s\nwant:\n%s",
								what, r.code, one.code, lineDiff(strings.Split(r.stdout, "\n"), strings.Split(one.stdout, "\n")), r.stderr, one.stderr)
						}
						if slices.Equal(args, critPath) {
							want, err := os.ReadFile(golden)
							if err != nil {
								t.Fatal(err)
							}
							if got := readIfAny(t, filepath.Join(cwd, "critPath.out")); got != string(want) {
								t.Errorf("%s: critPath.out differs from the golden", what)
							}
						}
					}
				}
			}
		})
	}
}

// readIfAny returns the content of file, "" when there is none.
func readIfAny(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestMPIProgress: under both MPIs, with the launcher's stderr a terminal
// (script's), process 0 draws its progress bar, which the launcher copies
// there, then the summary; with the launcher's stderr a file, no bar.
func TestMPIProgress(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatalf("script (util-linux) is not installed: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "halo")
	// About 3 M events: more than a second of reading (the bar's delay).
	if err := testgen.Halo(4, 150_000, 1).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	for mi, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			for _, redirect := range []bool{false, true} {
				if redirect && mi > 0 {
					continue // the same decision under either MPI
				}
				errFile := filepath.Join(t.TempDir(), "stderr")
				// One process: the bar is what is tested, not the exchanges
				// (this trace's would be a round per iteration).
				line := shellQuote(m.launch(1, mpitraceBin, "critpath", "--mpi", "--mpicc", m.cc, "-o", "/dev/null", dir)...)
				if redirect {
					line += " 2>" + shellQuote(errFile)
				}
				r := run(t, t.TempDir(), "script", "-qec", line, "/dev/null")
				errs := readIfAny(t, errFile)
				bar := strings.Contains(r.stdout+errs, "reading halo (process 0 of 1) [")
				if r.code != 0 || !strings.Contains(r.stdout, "Critical path of") || bar == redirect {
					t.Errorf("launcher's stderr redirected: %v: exit %d, bar drawn: %v; the terminal got:\n%s\nstderr file:\n%s",
						redirect, r.code, bar, mpijob.Tail(r.stdout, 3000), errs)
				}
			}
		})
	}
}

// bothMPIs reports whether both MPIs' wrappers and launchers are
// installed.
func bothMPIs() bool {
	for _, m := range mpis {
		for _, p := range []string{m.cc, m.run} {
			if _, err := exec.LookPath(p); err != nil {
				return false
			}
		}
	}
	return true
}

// shellQuote joins args as a POSIX shell reads them back.
func shellQuote(args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
