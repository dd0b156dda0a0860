package calibrate_test

import (
	"bytes"
	"context"
	"math"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/internal/mpijob"
	"github.com/mpitrace/mpitrace/recorder/calibrate"
)

// mpis are the MPI installations the end-to-end tests use.
var mpis = []struct {
	name     string
	mpicc    string
	launcher []string
}{
	{"openmpi", "mpicc", []string{"mpirun", "--oversubscribe", "-np", "2"}},
	{"mpich", "mpicc.mpich", []string{"mpirun.mpich", "-np", "2"}},
}

func need(t *testing.T, cmds ...string) {
	t.Helper()
	for _, c := range cmds {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s not installed", c)
		}
	}
}

func allowRoot(t *testing.T) {
	// Open MPI refuses to run as root without these; harmless otherwise.
	t.Setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
	t.Setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
}

// TestEndToEnd builds the benchmark with each MPI, runs it on 2 ranks in
// the CI configuration, fits a model and checks its structure (not its
// timings).
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs MPI jobs")
	}
	for _, mpi := range mpis {
		t.Run(mpi.name, func(t *testing.T) {
			need(t, mpi.mpicc, mpi.launcher[0])
			allowRoot(t)
			ctx, cancel := mpijob.Context(t)
			defer cancel()
			bin, err := calibrate.Build(ctx, mpi.mpicc, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			var stderr bytes.Buffer
			res, err := calibrate.Run(ctx, mpi.launcher, bin, calibrate.CIConfig(), &stderr)
			if err != nil {
				t.Fatalf("%v\n  %s %s\nstderr (end):\n%s", err, mpijob.CommandLine(mpi.launcher), bin, mpijob.Tail(stderr.String(), 40))
			}
			t.Logf("%s: %d points in %v", mpi.name, len(res.Points), time.Since(start).Round(time.Millisecond))
			if res.Procs != 2 || res.Host == "" || res.MPI == "" {
				t.Errorf("header: %d procs, host %q, MPI %q", res.Procs, res.Host, res.MPI)
			}
			if want := map[string]string{"openmpi": "Open MPI", "mpich": "MPICH"}[mpi.name]; !strings.Contains(res.MPI, want) {
				t.Errorf("MPI library %q, want %s", res.MPI, want)
			}
			pts := make([]latency.Point, len(res.Points))
			for i, p := range res.Points {
				pts[i] = latency.Point(p)
			}
			m, err := latency.Fit(pts)
			if err != nil {
				t.Fatal(err)
			}
			m.Machine, m.MPI, m.Procs, m.CPUs = res.Host, res.MPI, res.Procs, res.CPUs
			checkModel(t, m)
			var buf bytes.Buffer
			if err := m.Write(&buf); err != nil {
				t.Fatal(err)
			}
			if _, err := latency.Read(&buf); err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", m.Summary())
		})
	}
}

func checkModel(t *testing.T, m *latency.Model) {
	t.Helper()
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	segs := m.PointToPoint.Segments
	if len(segs) == 0 {
		t.Fatal("no point-to-point segment")
	}
	for i, s := range segs {
		if !finite(s.A) || !finite(s.B) || s.A < 0 || s.B < 0 || s.A+s.B <= 0 || !finite(s.R2) {
			t.Errorf("p2p segment %d: %+v", i, s)
		}
	}
	for b := int64(4); b <= 4096; b *= 2 {
		if v := m.P2P(b); !(v > 0) || !finite(v) {
			t.Errorf("P2P(%d) = %v", b, v)
		}
	}
	var names []string
	for _, c := range m.Collectives {
		names = append(names, c.Name)
		for i, s := range c.Segments {
			var sum float64
			for _, term := range s.Terms {
				if !finite(term.Coef) || term.Coef < 0 {
					t.Errorf("%s segment %d: term %+v", c.Name, i, term)
				}
				sum += term.Coef
			}
			if !(sum > 0) || !finite(s.R2) {
				t.Errorf("%s segment %d: %+v", c.Name, i, s)
			}
		}
		for _, p := range []int{2, 4, 64} {
			for _, b := range []int64{0, 8, 4096} {
				if v, ok := m.Collective(c.Name, b, p); !ok || !finite(v) || (b > 0 || c.Name == "MPI_Barrier") && !(v > 0) {
					t.Errorf("Collective(%s, %d, %d) = %v, %v", c.Name, b, p, v, ok)
				}
			}
		}
	}
	if !slices.Equal(names, sorted(calibrate.Collectives)) {
		t.Errorf("collectives %v, want %v", names, sorted(calibrate.Collectives))
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestRunErrors: a failing benchmark gives one line naming the launcher,
// its exit status and the benchmark's message.
func TestRunErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs MPI jobs")
	}
	need(t, "mpicc", "mpirun")
	allowRoot(t)
	ctx, cancel := mpijob.Context(t) // the failing jobs must fail, not hang
	defer cancel()
	bin, err := calibrate.Build(ctx, "mpicc", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = calibrate.Run(ctx, []string{"mpirun", "--oversubscribe", "-np", "1"}, bin, calibrate.CIConfig(), nil)
	want := "calibration benchmark failed: mpirun exited with status 2: needs at least 2 processes"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("one rank: %v\nwant one line containing %q", err, want)
	}
	_, err = calibrate.Run(ctx, []string{"no-such-launcher", "-np", "2"}, bin, calibrate.CIConfig(), nil)
	if err == nil || !strings.Contains(err.Error(), `launcher "no-such-launcher" not found`) {
		t.Errorf("missing launcher: %v", err)
	}
	_, err = calibrate.Run(ctx, []string{"mpirun"}, bin, calibrate.Config{Trials: -1}, nil)
	if err == nil || !strings.Contains(err.Error(), "calibration configuration: trials -1") {
		t.Errorf("bad configuration: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	cfg := calibrate.DefaultConfig()
	_, err = calibrate.Run(short, []string{"mpirun", "--oversubscribe", "-np", "2"}, bin, cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("timeout: %v", err)
	}
}

func TestBuildErrors(t *testing.T) {
	_, err := calibrate.Build(context.Background(), "no-such-mpicc -O2", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), `MPI compiler wrapper "no-such-mpicc" not found`) {
		t.Errorf("missing compiler: %v", err)
	}
	need(t, "mpicc")
	dir := t.TempDir()
	_, err = calibrate.Build(context.Background(), "mpicc -DNO_SUCH_FLAG -Werror=nonexistent-warning", dir)
	if err == nil || !strings.Contains(err.Error(), "compiling the calibration benchmark with mpicc") || !strings.Contains(err.Error(), dir) {
		t.Errorf("failing compile: %v", err)
	}
	// Flags in the wrapper string reach the compiler.
	if _, err := calibrate.Build(context.Background(), "mpicc -O3 -DEXTRA=1", dir); err != nil {
		t.Errorf("mpicc with flags: %v", err)
	}
}
