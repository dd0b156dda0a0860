package main_test

// Helpers of the end-to-end tests: the mpitrace binary, the two MPI
// installations, compiling fixture programs, running commands, and reading
// a recorded trace back into events per rank.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mpitrace/mpitrace/internal/mpijob"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

var (
	mpitraceBin string // built once by TestMain
	workDir     string // scratch space shared by the tests of this run
)

func TestMain(m *testing.M) {
	if out := os.Getenv(measureEnv); out != "" {
		os.Exit(measureChild(out, os.Args[1:]))
	}
	dir, err := os.MkdirTemp("", "mpitrace-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workDir = dir
	mpitraceBin = filepath.Join(dir, "mpitrace")
	if out, err := exec.Command("go", "build", "-o", mpitraceBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building mpitrace: %v\n%s", err, out)
		os.Exit(1)
	}
	// A cache of this run's own: the tests build the recorder as a user would.
	os.Setenv("MPITRACE_CACHE", filepath.Join(dir, "cache"))
	os.Setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
	os.Setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// mpiImpl is one MPI installation.
type mpiImpl struct {
	name   string
	cc     string   // C compiler wrapper
	run    string   // launcher
	flags  []string // launcher flags every run needs
	fortCC string   // Fortran compiler wrapper
}

var mpis = []mpiImpl{
	{name: "openmpi", cc: "mpicc.openmpi", run: "mpirun.openmpi", flags: []string{"--oversubscribe"}, fortCC: "mpif90.openmpi"},
	{name: "mpich", cc: "mpicc.mpich", run: "mpirun.mpich", fortCC: "mpif90.mpich"},
}

func (m mpiImpl) require(t *testing.T) {
	t.Helper()
	for _, p := range []string{m.cc, m.run} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is not installed: run 'make deps' (apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev)", p)
		}
	}
}

// recorderFlags choose m's recorder for a command whose MPI record cannot
// tell (no MPI program): spelled as record spells it for m's launcher, so
// that the run's recorder cache has it already.
func (m mpiImpl) recorderFlags(t *testing.T) []string {
	t.Helper()
	cc, err := exec.LookPath(m.cc)
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--mpicc", cc}
}

// launch is the launcher command line for np ranks of argv.
func (m mpiImpl) launch(np int, argv ...string) []string {
	out := append([]string{m.run}, m.flags...)
	out = append(out, "-np", strconv.Itoa(np))
	return append(out, argv...)
}

var (
	compileMu sync.Mutex
	compiled  = map[string]string{}
)

// compile builds fixtures/programs/NAME.c with m's compiler, once per run.
func (m mpiImpl) compile(t *testing.T, name string) string {
	t.Helper()
	compileMu.Lock()
	defer compileMu.Unlock()
	key := m.name + "/" + name
	if p, ok := compiled[key]; ok {
		return p
	}
	src, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "programs", name+".c"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(workDir, "bin", m.name, name)
	os.MkdirAll(filepath.Dir(out), 0o755)
	// With -g, as docs/callsites.md tells users: the commands then resolve
	// every call site and print no note about missing debug information.
	if b, err := exec.Command(m.cc, "-O1", "-g", "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("compiling %s with %s: %v\n%s", name, m.cc, err, b)
	}
	compiled[key] = out
	return out
}

// result of a command.
type result struct {
	stdout, stderr string
	code           int
	maxRSS         int64 // peak resident memory in bytes (runMeasured only)
}

// run runs argv in dir and returns its output and exit status (128+N for
// signal N).
func run(t *testing.T, dir string, argv ...string) result {
	t.Helper()
	return runEnv(t, dir, nil, argv...)
}

// runTimeout bounds every command of the end-to-end tests (see
// internal/mpijob): a hung or starved MPI run fails its test, naming
// itself, instead of the CI job.
const runTimeout = mpijob.Timeout

// runEnv is run with extra environment variables. The command runs in a
// process group of its own, with a deadline (internal/mpijob).
func runEnv(t *testing.T, dir string, env []string, argv ...string) result {
	t.Helper()
	r := mpijob.Run(t, dir, env, argv...)
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

// measureEnv names the file into which the test binary, run as a helper,
// writes the peak memory of the command it runs (runMeasured).
const measureEnv = "MPITRACE_TEST_MAXRSS_FILE"

// runMeasured is run, with the command's peak resident memory in maxRSS.
// The command runs under a fresh copy of the test binary: Linux counts the
// memory of the process that starts a program in the program's peak (exec
// keeps the old address space's high-water mark), and this test binary may
// have grown large.
func runMeasured(t *testing.T, dir string, argv ...string) result {
	t.Helper()
	file := filepath.Join(t.TempDir(), "maxrss")
	r := runEnv(t, dir, []string{measureEnv + "=" + file}, append([]string{os.Args[0]}, argv...)...)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("measuring %v: %v", argv, err)
	}
	if r.maxRSS, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil || r.maxRSS <= 0 {
		t.Fatalf("measuring %v: peak memory %q", argv, b)
	}
	return r
}

// measureChild runs argv with the standard streams, writes its peak
// resident memory (bytes) to out and returns its exit status.
func measureChild(out string, argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		return 127
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		os.WriteFile(out, []byte(strconv.FormatInt(int64(ru.Maxrss)<<10, 10)), 0o644)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// record runs `mpitrace record -o out [flags] -- argv...`.
func record(t *testing.T, out string, flags []string, argv ...string) result {
	t.Helper()
	args := append([]string{mpitraceBin, "record", "-o", out}, flags...)
	args = append(args, "--")
	return run(t, filepath.Dir(out), append(args, argv...)...)
}

// call is one recorded MPI call, with its function's name.
type call struct {
	fn string
	tracefmt.Event
}

func (c *call) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", c.Name(), c.fn)
	for _, f := range spec.Kinds[c.Kind].Fields {
		if f == spec.Fn || f == spec.Gap || f == spec.Dur || f == spec.Site {
			continue
		}
		fmt.Fprintf(&b, " %s=%d", spec.Fields[f].Name, c.F[f])
	}
	switch {
	case len(c.Completions) > 0:
		fmt.Fprintf(&b, " completions=%v", c.Completions)
	case len(c.Ranks) > 0:
		fmt.Fprintf(&b, " ranks=%v", c.Ranks)
	case len(c.Reqs) > 0:
		fmt.Fprintf(&b, " reqs=%v", c.Reqs)
	}
	return b.String()
}

// rankLog is what a rank's log holds.
type rankLog struct {
	rank   int
	header tracefmt.Header
	calls  []call           // every MPI call, in order
	sites  *tracefmt.Sites  // the call-site table and mappings
	clocks []tracefmt.Event // ClockSync events
	end    *tracefmt.End
	diags  *tracefmt.Diagnostics
	// unfinished names, per thread, the call its log says began and never
	// returned (RankReader.Unfinished: a pending record no event covers).
	unfinished []string
}

// readTrace reads every rank of a trace directory.
func readTrace(t *testing.T, dir string) (*tracefmt.Trace, []*rankLog) {
	t.Helper()
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatalf("opening %s: %v", dir, err)
	}
	var logs []*rankLog
	for _, f := range tr.Files {
		r, err := tr.OpenRank(f.Rank)
		if err != nil {
			t.Fatalf("rank %d: %v", f.Rank, err)
		}
		l := &rankLog{rank: f.Rank, header: *r.Header()}
		for r.Next() {
			ev := r.Event()
			if ev.Kind == spec.ClockSync {
				l.clocks = append(l.clocks, ev.Clone())
				continue
			}
			if ev.Kind == spec.SiteDef || ev.Kind == spec.Map {
				continue // the call-site table: r.Sites()
			}
			name, ok := r.Strings().Lookup(ev.Fn())
			if !ok {
				t.Fatalf("rank %d: event %s has fn id %d without a name", f.Rank, ev.Name(), ev.Fn())
			}
			l.calls = append(l.calls, call{fn: name, Event: ev.Clone()})
		}
		if err := r.Err(); err != nil {
			t.Fatalf("rank %d: reading: %v", f.Rank, err)
		}
		l.end = r.End()
		for _, p := range r.Unfinished() {
			name, ok := r.Strings().Lookup(p.Fn)
			if !ok {
				t.Fatalf("rank %d: unfinished call with fn id %d without a name", f.Rank, p.Fn)
			}
			l.unfinished = append(l.unfinished, name)
		}
		l.sites = r.Sites()
		d := *r.Diagnostics()
		l.diags = &d
		r.Close()
		logs = append(logs, l)
	}
	return tr, logs
}

// diagCodes lists a diagnostics table's codes, sorted, with duplicates.
func diagCodes(d *tracefmt.Diagnostics) []string {
	var codes []string
	for _, x := range d.All() {
		codes = append(codes, x.Code)
	}
	sort.Strings(codes)
	return codes
}

// sortedLines sorts a program's output lines: ranks print in any order.
func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	sort.Strings(lines)
	return lines
}
