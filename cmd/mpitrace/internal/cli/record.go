package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/driver"
	"github.com/mpitrace/mpitrace/analysis/render"
	"github.com/mpitrace/mpitrace/recorder"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

type recordOptions struct {
	Out       string
	Force     bool
	MPICC     string
	Include   string
	Exclude   string
	Buffer    string
	ClockSync int
	Critpath  bool
	Model     string
	Argv      []string
	// Kokkos: record Kokkos' kernels and regions (the recorder as the
	// Kokkos tool); KokkosSet: the flag was given, else the program
	// decides (it links Kokkos or not).
	Kokkos, KokkosSet bool
	KokkosFences      bool
}

func newRecordCmd(s *Streams, runF func(context.Context, *recordOptions) error) *cobra.Command {
	opts := &recordOptions{}
	cmd := &cobra.Command{
		Use:   "record [flags] -- LAUNCHER [ARGS...]",
		Short: "Run an MPI program with the recorder and keep one log per rank",
		Long: `Run an MPI program with the mpitrace recorder preloaded into every rank.

The recorder intercepts every MPI function of the MPI's mpi.h (through PMPI)
and writes one compressed log per rank into the output directory, plus a
manifest.json describing the run. The recorder is built on first use for the
MPI the program uses, and cached (see 'mpitrace recorder build').

The launcher's own mechanism passes the recorder to the ranks, in every
context of an MPMD command line: -x for Open MPI's mpirun, -genv for MPICH's
mpiexec, --export for srun. The launcher may follow prefix commands (env,
time, nice, numactl, stdbuf, taskset, chrt, ionice, setsid, nohup, timeout);
a command that is not a launcher (a singleton MPI program, a shell script)
gets the recorder through its environment, and a script is read (never run)
to find the MPI of the launcher it calls.

A program that links Kokkos gets the recorder as its Kokkos tool too
(--kokkos; on by itself, said in one line, when a program of the command
line links Kokkos): its kernels, regions, deep copies and allocations go
into the same logs (docs/kokkos.md). A program without MPI is one rank.

record ends with one line on stderr saying where the logs are, how many,
their size and what was lost. It exits with the launcher's exit status (1
when the output directory cannot be written and the run succeeded), passes
each signal on to the launcher once, and never mixes or overwrites an
earlier recording.`,
		Example: `  mpitrace record -- mpirun -np 4 ./app input.dat
  mpitrace record -o run2 -- mpirun.mpich -np 4 ./app
  mpitrace record -- env OMP_NUM_THREADS=2 mpirun -np 1 ./a : -np 3 ./b
  mpitrace record -- ./run.sh
  mpitrace record --exclude 'MPI_Wtime,MPI_Comm_rank' -- mpirun -np 64 ./app
  mpitrace record --critpath -- mpirun -np 4 ./app && xdot traces/taskgraph.dot
  mpitrace record --kokkos -- mpirun -np 2 ./kokkos_app`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return flagErrorf("record needs the command to run after --, e.g. mpitrace record -- mpirun -np 4 ./app")
			}
			if cmd.ArgsLenAtDash() != 0 {
				return flagErrorf("put the command to run after --, e.g. mpitrace record -- %s", strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Argv = args
			opts.KokkosSet = cmd.Flags().Changed("kokkos")
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRecord(cmd.Context(), opts, s)
		},
	}
	f := cmd.Flags()
	outputFlag(f, &opts.Out, "traces", "output `directory` for the rank logs")
	f.BoolVar(&opts.Force, "force", false, "replace the recording already in the output directory")
	f.StringVar(&opts.MPICC, "mpicc", os.Getenv("MPITRACE_MPICC"), "MPI C compiler `wrapper` to build the recorder with (default: the application's MPI)")
	f.StringVar(&opts.Include, "include", "", "record only these MPI functions (comma-separated, a trailing * matches a prefix)")
	f.StringVar(&opts.Exclude, "exclude", "", "do not record these MPI functions (comma-separated, a trailing * matches a prefix)")
	f.StringVar(&opts.Buffer, "buffer", "", "event buffer per thread before a block is written, e.g. 256k, 1M")
	f.IntVar(&opts.ClockSync, "clocksync", -1, "ping-pong rounds per rank for the clock offsets at MPI_Init and MPI_Finalize (0 disables)")
	f.BoolVar(&opts.Critpath, "critpath", false, "after the run, find the critical path: write critPath.out and taskgraph.dot next to the logs, summary on stderr")
	addModelFlag(f, &opts.Model, "--critpath")
	f.BoolVar(&opts.Kokkos, "kokkos", false, "record Kokkos kernels, regions, copies and allocations: the recorder is the program's Kokkos tool (default: when the program links Kokkos)")
	f.BoolVar(&opts.KokkosFences, "kokkos-fences", false, "let Kokkos fence after every kernel, so that asynchronous kernels' times are their own (implies --kokkos)")
	return cmd
}

func runRecord(ctx context.Context, opts *recordOptions, s *Streams) error {
	if opts.Buffer != "" {
		if _, err := parseSize(opts.Buffer); err != nil {
			return flagErrorf("--buffer %q: %v", opts.Buffer, err)
		}
	}
	if opts.KokkosFences && opts.KokkosSet && !opts.Kokkos {
		return flagErrorf("--kokkos-fences asks Kokkos to fence for the recorder, which --kokkos=false does not load: drop one of them")
	}
	ownTool := kokkosToolArg(opts.Argv)
	if ownTool != "" && (opts.Kokkos || opts.KokkosFences) {
		return flagErrorf("--kokkos: the command line names its own Kokkos tool (%s), and Kokkos refuses two: remove that option, or drop --kokkos", ownTool)
	}
	start := time.Now()
	launch := recorder.DetectLaunch(ctx, opts.Argv, opts.MPICC)
	if launch.Warning != "" {
		fmt.Fprintf(s.Err, "mpitrace: warning: %s\n", launch.Warning)
	}
	policy := chooseSignalPolicy(launch.Prefixes)
	outDir, err := filepath.Abs(opts.Out)
	if err != nil {
		return err
	}
	if err := prepareOutDir(opts.Out, opts.Force); err != nil {
		var unw *unwritableError
		if !errors.As(err, &unw) {
			return err
		}
		// Recording is impossible, the run is not: say so once and run;
		// the status says it too when the run itself succeeds.
		fmt.Fprintf(s.Err, "mpitrace: %s; the application runs without recording\n", err)
		runErr := runChild(opts.Argv, nil, s, policy)
		var notStarted *startError
		if errors.As(runErr, &notStarted) {
			return runErr
		}
		fmt.Fprintf(s.Err, "mpitrace: nothing recorded: %s is not writable\n", opts.Out)
		if runErr == nil {
			return &ExitCodeError{Code: ExitError}
		}
		return runErr
	}
	opts.Kokkos = recordKokkos(opts, launch, ownTool, s)
	var log *os.File
	if s.ErrTTY {
		log = os.Stderr
	}
	bopts := recorder.BuildOptions{MPICC: launch.MPICC}
	if log != nil {
		bopts.Log = log
	}
	var lib *recorder.Library
	noMPI := opts.MPICC == "" && launch.Kind == recorder.LauncherNone && len(launch.Apps) == 1 && recorder.WithoutMPI(launch.App)
	if noMPI {
		// A program that does not link MPI (loop markers only): the
		// recorder without MPI writes it as one rank.
		lib, err = recorder.BuildCore(ctx, "", bopts)
	} else {
		lib, err = recorder.Build(ctx, bopts)
	}
	if err != nil {
		return err
	}
	warnUnlisted(s, lib, "--include", opts.Include)
	warnUnlisted(s, lib, "--exclude", opts.Exclude)
	stateDir, err := os.MkdirTemp("", "mpitrace-run-")
	if err != nil {
		return fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer os.RemoveAll(stateDir)
	runID := newRunID()
	if opts.Kokkos {
		warnKokkosTool(s, lib.Path)
	}
	env := recordEnv(opts, lib.Path, outDir, runID, stateDir)
	argv, childEnv := launch.Command(opts.Argv, env)
	runErr := runChild(argv, childEnv, s, policy)
	var notStarted *startError
	if errors.As(runErr, &notStarted) {
		return runErr
	}
	status := 0
	var ec *ExitCodeError
	if errors.As(runErr, &ec) {
		status = ec.Code
	} else if runErr != nil {
		return runErr
	}
	m := tracefmt.Manifest{
		RunID:           runID,
		Command:         opts.Argv,
		Launcher:        string(launch.Kind),
		MPICompiler:     lib.MPICC,
		RecorderLibrary: lib.Path,
		StartTime:       start.UTC(),
		EndTime:         time.Now().UTC(),
		ExitStatus:      status,
		FormatVersion:   int(spec.Current),
		MpitraceVersion: Version,
	}
	ranks, size := summarizeRanks(outDir)
	m.WorldSize = size
	m.MPILibrary = mpiLibraryOf(outDir)
	if err := tracefmt.WriteManifest(outDir, &m); err != nil && !recorderWarned(stateDir) {
		// (When the ranks already said the directory cannot be written,
		// once is enough.)
		fmt.Fprintf(s.Err, "mpitrace: writing %s: %v\n", filepath.Join(opts.Out, tracefmt.ManifestName), unwrapPathError(err))
	}
	closing := closingLine(outDir, opts.Out, launch, stateDir)
	if noMPI && ranks == 0 {
		doc := "docs/loops.md, docs/regions.md"
		if opts.Kokkos {
			doc = "docs/kokkos.md"
		}
		closing = fmt.Sprintf("no rank logs in %s: nothing was recorded (%s links no MPI and made no loop marker, region or Kokkos call; see %s)", opts.Out, filepath.Base(launch.App), doc)
	}
	fmt.Fprintf(s.Err, "mpitrace: %s\n", closing)
	if ranks > 0 && opts.Critpath {
		// The run's status decides record's; an analysis failure is said,
		// not returned over it.
		if err := recordCritpath(opts, outDir, s); err != nil {
			fmt.Fprintf(s.Err, "mpitrace: --critpath: %v\n", err)
			if runErr == nil {
				return &ExitCodeError{Code: ExitError}
			}
		}
	}
	return runErr
}

// warnUnlisted says, in one line, which names of a --include or
// --exclude list are no function the recorder records.
func warnUnlisted(s *Streams, lib *recorder.Library, flag, list string) {
	bad := lib.Unlisted(list)
	if len(bad) == 0 {
		return
	}
	for i, b := range bad {
		if n := lib.Spelled(b); n != "" {
			bad[i] = fmt.Sprintf("%s (did you mean %s?)", b, n)
		}
	}
	what := "is no MPI function"
	if len(bad) > 1 {
		what = "are no MPI functions"
	}
	fmt.Fprintf(s.Err, "mpitrace: warning: %s: %s %s of %s's mpi.h; ignored\n", flag, strings.Join(bad, ", "), what, lib.MPICC)
}

// Files record --critpath writes next to the logs.
const (
	critPathFile = "critPath.out"
	taskGraphDOT = "taskgraph.dot"
)

// recordCritpath is the seed's "display at the end of the run": it writes
// critPath.out and the task graph's DOT (the critical path only, when the
// graph is too big to draw whole) into the trace directory and prints the
// summary on stderr, leaving stdout to the application.
func recordCritpath(opts *recordOptions, dir string, s *Streams) error {
	// The streaming replay finds the path; the graph is built only when
	// the picture is the whole graph (one Graphviz lays out), else the
	// picture is the path's.
	a, err := analyzePath(dir, driver.Options{Model: opts.Model, Stream: dotStream}, s)
	if err != nil {
		return err
	}
	defer func() { a.Close() }()
	switch {
	case a.Graph != nil:
	case replayDraws(a.Steps, &dotOptions{CriticalOnly: a.Steps.Shape != nil && a.Steps.Shape.NumNodes() > bigDOTGraph}):
		if dotReplayDrew != nil {
			dotReplayDrew()
		}
	default:
		if a, err = withGraph(a, driver.Options{Model: opts.Model}); err != nil {
			return err
		}
	}
	var sum *critpath.Summary
	if err := writeOutput(filepath.Join(dir, critPathFile), func(w io.Writer) (err error) {
		sum, err = a.Report(a.Steps, w, critpath.Microsecond, 5)
		return err
	}); err != nil {
		return err
	}
	ro := render.DOTOptions{Unit: critpath.Microsecond, Model: a.ModelName, CriticalOnly: numNodes(a) > bigDOTGraph,
		Sites: a.SiteLabel()}
	write := func(w io.Writer) error {
		if a.Graph == nil {
			_, err := render.WriteStepsDOT(w, a.Steps, a.Model, ro)
			return err
		}
		return render.WriteDOT(w, a.Graph, a.Path, a.Model, ro)
	}
	if ro.CriticalOnly && a.Steps.NumSteps > critpath.FoldTarget {
		write, _, _ = pathPicture(a, ro)
	}
	if err := writeOutput(filepath.Join(dir, taskGraphDOT), write); err != nil {
		return err
	}
	if err := writeSummary(s.Err, opts.Out, a, filepath.Join(opts.Out, critPathFile), sum, critpath.Microsecond); err != nil {
		return err
	}
	reportSiteProblems(s, a.Sites())
	what := "the task graph"
	if ro.CriticalOnly {
		what = "the critical path (the whole graph is too big to draw; a path of more than 300 vertices is folded, or merged by call site)"
	}
	fmt.Fprintf(s.Err, "%s: %s with the critical path in red; view it with: xdot %s\n",
		filepath.Join(opts.Out, taskGraphDOT), what, filepath.Join(opts.Out, taskGraphDOT))
	return reportDiagnostics(s, a.Diags, &traceFlags{})
}

// recordKokkos decides whether the recorder is the program's Kokkos tool:
// as --kokkos says, else (--kokkos-fences implies it) when an application
// of the command line links Kokkos, which it says in one line.
func recordKokkos(opts *recordOptions, launch recorder.Launch, ownTool string, s *Streams) bool {
	if opts.KokkosSet {
		return opts.Kokkos
	}
	if opts.KokkosFences {
		return true
	}
	for _, app := range launch.Apps {
		if !recorder.LinksKokkos(app) {
			continue
		}
		if ownTool != "" {
			fmt.Fprintf(s.Err, "mpitrace: %s links Kokkos but names its own Kokkos tool (%s): its kernels are not recorded (without that option they would be)\n", filepath.Base(app), ownTool)
			return false
		}
		fmt.Fprintf(s.Err, "mpitrace: %s links Kokkos: its kernels and regions are recorded too (--kokkos=false turns this off)\n", filepath.Base(app))
		return true
	}
	return false
}

// kokkosToolArg returns the option of argv that gives Kokkos a tool on the
// program's command line (--kokkos-tools-library=..., Kokkos 4's
// --kokkos-tools-libs=...), "" when there is none: Kokkos aborts when that
// tool and the one of its environment differ.
func kokkosToolArg(argv []string) string {
	for _, a := range argv {
		if strings.HasPrefix(a, "--kokkos-tools-library") || strings.HasPrefix(a, "--kokkos-tools-libs") {
			return a
		}
	}
	return ""
}

// warnKokkosTool says in one line which Kokkos tool of the user's
// environment the recorder lib replaces for the run.
func warnKokkosTool(s *Streams, lib string) {
	var old []string
	for _, k := range []string{recorder.KokkosToolsLibs, recorder.KokkosProfileLibrary} {
		if v := os.Getenv(k); v != "" && v != lib {
			old = append(old, k+"="+v)
		}
	}
	if len(old) > 0 {
		fmt.Fprintf(s.Err, "mpitrace: warning: --kokkos: the recorder replaces the Kokkos tool of your environment (%s) for this run\n", strings.Join(old, ", "))
	}
}

// recordEnv is the environment every rank gets.
func recordEnv(opts *recordOptions, lib, outDir, runID, stateDir string) []string {
	preload := lib
	if old := os.Getenv("LD_PRELOAD"); old != "" {
		preload += ":" + old
	}
	vars := map[string]string{}
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "MPITRACE_") {
			k, v, _ := strings.Cut(e, "=")
			vars[k] = v
		}
	}
	delete(vars, "MPITRACE_MPICC")
	delete(vars, "MPITRACE_CACHE")
	vars["MPITRACE_DIR"] = outDir
	vars["MPITRACE_RUN_ID"] = runID
	vars["MPITRACE_STATE_DIR"] = stateDir
	if opts.Include != "" {
		vars["MPITRACE_INCLUDE"] = opts.Include
	}
	if opts.Exclude != "" {
		vars["MPITRACE_EXCLUDE"] = opts.Exclude
	}
	if opts.Buffer != "" {
		vars["MPITRACE_BUFFER"] = opts.Buffer
	}
	if opts.ClockSync >= 0 {
		vars["MPITRACE_CLOCKSYNC"] = strconv.Itoa(opts.ClockSync)
	}
	if opts.Kokkos {
		for k, v := range recorder.KokkosEnv(lib, opts.KokkosFences) {
			vars[k] = v
		}
	}
	env := []string{"LD_PRELOAD=" + preload}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+vars[k])
	}
	return env
}

type unwritableError struct {
	dir string
	err error
}

func (e *unwritableError) Error() string {
	return fmt.Sprintf("cannot write to %s: %v", e.dir, e.err)
}

// prepareOutDir makes sure dir exists, is writable, and holds no earlier
// recording (removing it with force).
func prepareOutDir(dir string, force bool) error {
	entries, err := os.ReadDir(dir)
	if err == nil {
		var old []string
		for _, e := range entries {
			if e.Name() == tracefmt.ManifestName || isRankFile(e.Name()) || e.Name() == critPathFile || e.Name() == taskGraphDOT {
				old = append(old, e.Name())
			}
		}
		if len(old) > 0 && !force {
			return fmt.Errorf("%s already holds a recording (%d files); record into another directory with -o, or replace it with --force", dir, len(old))
		}
		for _, n := range old {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return fmt.Errorf("--force: removing the old recording: %w", err)
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return &unwritableError{dir, unwrapPathError(err)}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &unwritableError{dir, unwrapPathError(err)}
	}
	probe, err := os.CreateTemp(dir, ".mpitrace-probe-")
	if err != nil {
		return &unwritableError{dir, unwrapPathError(err)}
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func newRunID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	return hex.EncodeToString(b[:])
}

// summarizeRanks counts the rank logs and reads the world size from one.
func summarizeRanks(dir string) (n, size int) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if isRankFile(e.Name()) {
			n++
			if size == 0 {
				if h, err := tracefmt.ReadHeader(filepath.Join(dir, e.Name())); err == nil {
					size = h.Size
				}
			}
		}
	}
	return n, size
}

func mpiLibraryOf(dir string) string {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if isRankFile(e.Name()) {
			if h, err := tracefmt.ReadHeader(filepath.Join(dir, e.Name())); err == nil {
				return h.MPILibrary
			}
		}
	}
	return ""
}

func dirSize(dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// parseSize reads a --buffer size: 4096, 256k, 1M, from 4k to 16M.
func parseSize(v string) (int64, error) {
	n, err := parseBytes(v)
	if err != nil {
		return 0, err
	}
	if n < 4096 || n > 16<<20 {
		return 0, fmt.Errorf("must be between 4k and 16M")
	}
	return n, nil
}

// isRankFile reports whether name is a rank log's file name.
func isRankFile(name string) bool {
	ok, _ := filepath.Match("rank-*.mpit", name)
	return ok
}

// recorderWarned reports whether a rank's recorder printed a warning of its
// own (it leaves a marker in the run's state directory).
func recorderWarned(stateDir string) bool {
	m, _ := filepath.Glob(filepath.Join(stateDir, "warned-*"))
	return len(m) > 0
}

// recorderSaid reports whether a rank's recorder printed the warning tag
// (e.g. "foreign": it stepped aside in a process of another MPI).
func recorderSaid(stateDir, tag string) bool {
	_, err := os.Stat(filepath.Join(stateDir, "warned-"+tag))
	return err == nil
}
