package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/recorder"
	"github.com/mpitrace/mpitrace/recorder/calibrate"
)

type calibrateOptions struct {
	Out      string
	MPICC    string
	Quick    bool
	P2PMax   string
	CollMax  string
	Trials   int
	MaxProcs int
	Launcher []string
}

func newCalibrateCmd(s *Streams, runF func(context.Context, *calibrateOptions) error) *cobra.Command {
	opts := &calibrateOptions{}
	cmd := &cobra.Command{
		Use:   "calibrate [-o model.json] [flags] -- LAUNCHER -np N",
		Short: "Measure this machine's MPI latencies and fit the latency model",
		Long: `Build and run mpitrace's MPI benchmark under the given launcher, and fit
the latency model the critical path uses:

  point-to-point  ranks 0 and 1 ping-pong for every size from 4 B doubling
                  to 4 MiB; one-way latency = total / repetitions / 2, the
                  median of several trials; fitted as a + b·bytes, piecewise
                  where the MPI changes protocol (eager/rendezvous).
  collectives     Barrier, Bcast, Scatter, Gather, Reduce, Allreduce,
                  Allgather and Alltoall over sizes and over sub-communicators
                  of 2..N ranks; fitted in two variables, bytes and processes.

The model (JSON) keeps the fits, their R², every measured point, the machine
and the MPI. Give it to 'mpitrace critpath --model'. Without one, critpath
uses a model embedded in mpitrace and says so.

Run it with the launcher and rank count of your real jobs; ranks must not
share cores with other work while it runs (it reports oversubscription).`,
		Example: `  mpitrace calibrate -o model.json -- mpirun -np 4
  mpitrace calibrate --quick -- mpirun.mpich -np 2
  mpitrace calibrate -o cluster.json -- srun -N 2 -n 64`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return flagErrorf("calibrate needs the launcher after --, e.g. mpitrace calibrate -- mpirun -np 4")
			}
			if cmd.ArgsLenAtDash() != 0 {
				return flagErrorf("put the launcher after --, e.g. mpitrace calibrate -- %s", strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Launcher = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCalibrate(cmd.Context(), opts, s)
		},
	}
	f := cmd.Flags()
	outputFlag(f, &opts.Out, "model.json", "model `file` to write ('-': stdout, the fits then go to stderr)")
	f.StringVar(&opts.MPICC, "mpicc", os.Getenv("MPITRACE_MPICC"), "MPI C compiler `wrapper` to build the benchmark with (default: the launcher's MPI)")
	f.BoolVar(&opts.Quick, "quick", false, "a small, fast run (sizes 4 B to 4 KiB, fewer trials): for tests, not for real models")
	f.StringVar(&opts.P2PMax, "p2p-max", "", "largest point-to-point size, e.g. 4M (default 4M; at least 32k for a useful model)")
	f.StringVar(&opts.CollMax, "coll-max", "", "largest collective block per process, e.g. 64k")
	f.IntVar(&opts.Trials, "trials", 0, "timed trials per point (the median is kept)")
	f.IntVar(&opts.MaxProcs, "max-procs", 0, "largest collective sub-communicator (default: all ranks)")
	return cmd
}

func runCalibrate(ctx context.Context, opts *calibrateOptions, s *Streams) error {
	if err := checkOutputFlag(opts.Out); err != nil {
		return err
	}
	cfg := calibrate.DefaultConfig()
	if opts.Quick {
		cfg = calibrate.CIConfig()
	}
	for _, x := range []struct {
		flag, val string
		dst       *int64
	}{{"--p2p-max", opts.P2PMax, &cfg.P2PMax}, {"--coll-max", opts.CollMax, &cfg.CollMax}} {
		if x.val == "" {
			continue
		}
		v, err := parseBytes(x.val)
		if err != nil {
			return flagErrorf("%s %q: %v", x.flag, x.val, err)
		}
		*x.dst = v
	}
	if opts.Trials < 0 || opts.MaxProcs < 0 {
		return flagErrorf("--trials and --max-procs must be positive")
	}
	if opts.Trials > 0 {
		cfg.Trials = opts.Trials
	}
	cfg.MaxProcs = opts.MaxProcs
	if err := cfg.Validate(); err != nil {
		return flagErrorf("%v", err)
	}
	launch := recorder.DetectLaunch(ctx, opts.Launcher, opts.MPICC)
	work, err := os.MkdirTemp("", "mpitrace-calibrate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if s.ErrTTY {
		fmt.Fprintf(s.Err, "mpitrace: building the benchmark with %s\n", launch.MPICC)
	}
	bin, err := calibrate.Build(ctx, launch.MPICC, work)
	if err != nil {
		return err
	}
	if s.ErrTTY {
		fmt.Fprintf(s.Err, "mpitrace: measuring under %s (this takes a while)...\n", strings.Join(opts.Launcher, " "))
	}
	start := time.Now()
	res, err := calibrate.Run(ctx, opts.Launcher, bin, cfg, s.Err)
	if err != nil {
		return err
	}
	pts := make([]latency.Point, len(res.Points))
	for i, p := range res.Points {
		pts[i] = latency.Point(p)
	}
	m, err := latency.Fit(pts)
	if err != nil {
		return fmt.Errorf("fitting the latency model: %w", err)
	}
	m.Source = latency.SourceCalibrated
	m.Machine, m.MPI, m.Procs, m.CPUs = res.Host, res.MPI, res.Procs, res.CPUs
	if err := writeModel(s, opts.Out, m, time.Since(start)); err != nil {
		return err
	}
	if res.Oversubscribed() {
		fmt.Fprintf(s.Err, "mpitrace: warning: %d ranks shared %d cores: the measured latencies include waiting for a core\n", res.Procs, res.CPUs)
	}
	if cfg.P2PMax < 32<<10 {
		fmt.Fprintf(s.Err, "mpitrace: warning: point-to-point sizes stop at %d bytes: larger messages are extrapolated\n", cfg.P2PMax)
	}
	return nil
}

// writeModel writes the model to path and its fits on stdout, or with
// path "-" the model on stdout and the fits on stderr.
func writeModel(s *Streams, path string, m *latency.Model, took time.Duration) error {
	if err := writeOutputTo(s, path, m.Write); err != nil {
		return err
	}
	if path == "-" {
		fmt.Fprintf(s.Err, "%s", m.Summary())
		return nil
	}
	fmt.Fprintf(s.Out, "%s", m.Summary())
	fmt.Fprintf(s.Out, "wrote %s (%d points, %s)\n", path, len(m.Points), took.Round(time.Second))
	return nil
}

// parseBytes reads 4096, 64k, 4M.
func parseBytes(v string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(v))
	mult := int64(1)
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1<<10, strings.TrimSuffix(t, "k")
	case strings.HasSuffix(t, "m"):
		mult, t = 1<<20, strings.TrimSuffix(t, "m")
	}
	var n int64
	if _, err := fmt.Sscan(t, &n); err != nil || n <= 0 {
		return 0, fmt.Errorf("expected a size such as 4096, 64k or 4M")
	}
	return n * mult, nil
}
