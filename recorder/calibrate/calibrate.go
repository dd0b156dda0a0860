package calibrate

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

//go:embed c/calibrate.c
var source []byte

// Source returns the benchmark's C source.
func Source() []byte { return bytes.Clone(source) }

// BinaryName is the file name Build gives the benchmark.
const BinaryName = "mpitrace-calibrate"

// Collectives are the collectives the benchmark measures, in its order.
var Collectives = []string{
	"MPI_Barrier", "MPI_Bcast", "MPI_Scatter", "MPI_Gather",
	"MPI_Reduce", "MPI_Allreduce", "MPI_Allgather", "MPI_Alltoall",
}

// maxBytes bounds message sizes (the benchmark takes at most 1 GiB).
const maxBytes = 1 << 30

// Config is what the benchmark measures. Sizes double from the minimum up
// to the maximum. A zero field takes DefaultConfig's value.
type Config struct {
	P2PMin, P2PMax   int64 // point-to-point message sizes, bytes
	CollMin, CollMax int64 // collective block sizes, bytes per process
	// MinReps and MaxReps bound the repetitions of a timed batch.
	MinReps, MaxReps int
	// Trials is the number of timed batches per point; the point is
	// their median.
	Trials int
	// MaxProcs is the largest collective sub-communicator (0, or more
	// than the launcher starts: all ranks).
	MaxProcs int
	// Target is the duration a timed batch aims for; repetitions follow
	// from a warm-up's per-call time.
	Target time.Duration
	// Collectives restricts the collectives measured (nil: Collectives).
	// Names are as MPI spells them; the "MPI_" prefix may be left out.
	Collectives []string
}

// DefaultConfig is a calibration for real use: point-to-point 4 B to 4 MiB,
// collectives 4 B to 64 KiB per process on every process count, 5 trials
// of about 5 ms each. On 4 ranks it runs for about half a minute.
func DefaultConfig() Config {
	return Config{
		P2PMin: 4, P2PMax: 4 << 20,
		CollMin: 4, CollMax: 64 << 10,
		MinReps: 3, MaxReps: 10000,
		Trials: 5,
		Target: 5 * time.Millisecond,
	}
}

// CIConfig is a small, fast configuration for tests and CI: sizes 4 B to
// 4 KiB, 3 trials of about 1 ms. On 2 to 4 ranks it runs in seconds.
func CIConfig() Config {
	return Config{
		P2PMin: 4, P2PMax: 4 << 10,
		CollMin: 4, CollMax: 4 << 10,
		MinReps: 3, MaxReps: 1000,
		Trials: 3,
		Target: time.Millisecond,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	set := func(v *int64, def int64) {
		if *v == 0 {
			*v = def
		}
	}
	seti := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	set(&c.P2PMin, d.P2PMin)
	set(&c.P2PMax, max(d.P2PMax, c.P2PMin))
	set(&c.CollMin, d.CollMin)
	set(&c.CollMax, max(d.CollMax, c.CollMin))
	seti(&c.MinReps, d.MinReps)
	seti(&c.MaxReps, max(d.MaxReps, c.MinReps))
	seti(&c.Trials, d.Trials)
	if c.Target == 0 {
		c.Target = d.Target
	}
	return c
}

// Validate reports the first unusable field of c (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.P2PMin < 1 || c.P2PMax > maxBytes || c.P2PMax < c.P2PMin:
		return fmt.Errorf("point-to-point sizes %d..%d: want 1 <= min <= max <= %d", c.P2PMin, c.P2PMax, maxBytes)
	case c.CollMin < 1 || c.CollMax > maxBytes/4 || c.CollMax < c.CollMin:
		return fmt.Errorf("collective sizes %d..%d: want 1 <= min <= max <= %d", c.CollMin, c.CollMax, maxBytes/4)
	case c.MinReps < 1 || c.MaxReps < c.MinReps || c.MaxReps > 100000000:
		return fmt.Errorf("repetitions %d..%d: want 1 <= min <= max <= 100000000", c.MinReps, c.MaxReps)
	case c.Trials < 1 || c.Trials > 1000:
		return fmt.Errorf("trials %d: want 1..1000", c.Trials)
	case c.MaxProcs < 0 || c.MaxProcs == 1:
		return fmt.Errorf("max processes %d: want 0 (all) or at least 2", c.MaxProcs)
	case c.Target < time.Microsecond || c.Target > time.Minute:
		return fmt.Errorf("target batch time %v: want 1µs..1m", c.Target)
	}
	for _, name := range c.Collectives {
		if canonicalCollective(name) == "" {
			return fmt.Errorf("unknown collective %q (the benchmark measures %s)", name, strings.Join(Collectives, ", "))
		}
	}
	return nil
}

func canonicalCollective(name string) string {
	n := strings.TrimPrefix(strings.ToLower(name), "mpi_")
	for _, c := range Collectives {
		if strings.ToLower(c[4:]) == n {
			return c
		}
	}
	return ""
}

// Args returns the benchmark's command-line flags for c.
func (c Config) Args() []string {
	c = c.withDefaults()
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	args := []string{
		"--p2p-min", i(c.P2PMin), "--p2p-max", i(c.P2PMax),
		"--coll-min", i(c.CollMin), "--coll-max", i(c.CollMax),
		"--min-reps", i(int64(c.MinReps)), "--reps", i(int64(c.MaxReps)),
		"--trials", i(int64(c.Trials)), "--max-procs", i(int64(c.MaxProcs)),
		"--target-us", i(max(c.Target.Microseconds(), 1)),
	}
	if len(c.Collectives) > 0 {
		names := make([]string, len(c.Collectives))
		for k, n := range c.Collectives {
			names[k] = canonicalCollective(n)
		}
		args = append(args, "--collectives", strings.Join(names, ","))
	}
	return args
}

// Build compiles the benchmark with the MPI's C compiler wrapper mpicc
// (which may carry flags: "mpicc -O3"; empty means "mpicc") into dir and
// returns the binary's path. An empty dir is a new temporary directory the
// caller removes (filepath.Dir of the path). The compiler's output goes to
// dir/build.log.
func Build(ctx context.Context, mpicc, dir string) (string, error) {
	if mpicc == "" {
		mpicc = "mpicc"
	}
	cc := strings.Fields(mpicc)
	if len(cc) == 0 {
		return "", errors.New("the MPI compiler wrapper is empty: name one, e.g. mpicc")
	}
	if _, err := exec.LookPath(cc[0]); err != nil {
		return "", fmt.Errorf("MPI compiler wrapper %q not found on PATH: install the MPI's development package (e.g. libopenmpi-dev or libmpich-dev) or name another", cc[0])
	}
	var err error
	if dir == "" {
		if dir, err = os.MkdirTemp("", "mpitrace-calibrate-"); err != nil {
			return "", fmt.Errorf("creating a build directory for the calibration benchmark: %w", err)
		}
	} else if err = os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating the calibration benchmark's build directory: %w", err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "calibrate.c"), source, 0o644); err != nil {
		return "", fmt.Errorf("writing the calibration benchmark's source: %w", err)
	}
	tmp := BinaryName + ".tmp" + strconv.Itoa(os.Getpid())
	args := append(append([]string{}, cc[1:]...), "-O2", "-std=gnu11", "-o", tmp, "calibrate.c")
	cmd := exec.CommandContext(ctx, cc[0], args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	logPath := filepath.Join(dir, "build.log")
	_ = os.WriteFile(logPath, append([]byte(cc[0]+" "+strings.Join(args, " ")+"\n"), out...), 0o644)
	if err != nil {
		_ = os.Remove(filepath.Join(dir, tmp))
		return "", fmt.Errorf("compiling the calibration benchmark with %s: %v: %s (full log: %s)", cc[0], err, lastLine(out, ""), logPath)
	}
	bin := filepath.Join(dir, BinaryName)
	if err := os.Rename(filepath.Join(dir, tmp), bin); err != nil {
		return "", fmt.Errorf("installing the calibration benchmark: %w", err)
	}
	return bin, nil
}

// maxOutput bounds the benchmark output Run keeps.
const maxOutput = 64 << 20

// Run runs the benchmark bin under the launcher command launcherArgv
// ("mpirun", "-np", "4"; empty runs bin directly) with cfg's flags, passes
// the launcher's stderr on to stderr (nil: discarded) and parses rank 0's
// output. Its errors are one line naming what failed.
func Run(ctx context.Context, launcherArgv []string, bin string, cfg Config, stderr io.Writer) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("calibration configuration: %w", err)
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() {
		return nil, fmt.Errorf("calibration benchmark %s not found: build it first", bin)
	}
	argv := append(append(append([]string{}, launcherArgv...), bin), cfg.Args()...)
	name := filepath.Base(argv[0])
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("launcher %q not found on PATH", argv[0])
	}
	if stderr == nil {
		stderr = io.Discard
	}
	var out limitedBuffer
	errTail := &tailBuffer{max: 16 << 10}
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Stdout = &out
	cmd.Stderr = io.MultiWriter(stderr, errTail)
	// A launcher forwards SIGTERM to its ranks and cleans up; SIGKILL
	// only if it does not exit.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("calibration benchmark interrupted (%v) while running %s", context.Cause(ctx), name)
	}
	if err != nil {
		msg := lastLine(errTail.b, "mpitrace-calibrate: ")
		if msg == "" {
			msg = "no error output"
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("calibration benchmark failed: %s %s: %s", name, exitStatus(ee), msg)
		}
		return nil, fmt.Errorf("calibration benchmark failed: running %s: %v: %s", name, err, msg)
	}
	if out.truncated {
		return nil, fmt.Errorf("calibration benchmark wrote more than %d bytes on stdout: not its output", maxOutput)
	}
	res, err := Parse(bytes.NewReader(out.b))
	if err != nil {
		return nil, fmt.Errorf("reading the calibration benchmark's output (run under %s): %w", name, err)
	}
	return res, nil
}

func exitStatus(ee *exec.ExitError) string {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "was killed by signal " + ws.Signal().String()
	}
	return "exited with status " + strconv.Itoa(ee.ExitCode())
}

// lastLine returns the last line of b that starts with prefix (without
// it); failing that, the last line that says something (not blank, not a
// rule of dashes or stars as Open MPI frames its messages with).
func lastLine(b []byte, prefix string) string {
	lines := strings.Split(string(b), "\n")
	if prefix != "" {
		for i := len(lines) - 1; i >= 0; i-- {
			if _, after, ok := strings.Cut(lines[i], prefix); ok {
				return strings.TrimSpace(after)
			}
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if strings.IndexFunc(l, func(r rune) bool {
			return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		}) >= 0 {
			return l
		}
	}
	return ""
}

// limitedBuffer keeps the first maxOutput bytes written to it.
type limitedBuffer struct {
	b         []byte
	truncated bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxOutput - len(l.b); len(p) > room {
		l.b = append(l.b, p[:room]...)
		l.truncated = true
	} else {
		l.b = append(l.b, p...)
	}
	return len(p), nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}
