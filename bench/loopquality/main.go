// Command loopquality measures how well sampled loop iterations estimate
// loop time: the study the loop seed's annex on data quality left empty
// (docs/performance.md, "Loop sampling quality"; the method is
// docs/loops-analysis.md).
//
//	go run ./bench/loopquality [-mpicc mpicc.openmpi] [-mpirun mpirun.openmpi] [-np 2]
//	    [-steps 2000] [-rows 256] [-cols 1024] [-chances 0.01,0.1,0.5] [-seeds 5] [-counters]
//
// It builds bench/programs/loopstencil.c, a 2-D Jacobi kernel whose
// time-step loop (top level) and row loop (nested in it) carry hand-written
// markers, records it once at chance 1 (the reference) and then at each
// chance with several fixed seeds (MPITRACE_LOOP_CHANCE, MPITRACE_LOOP_SEED,
// which `mpitrace record` passes on to the ranks), and prints per run and
// loop: the sampled iterations, estimate / measured and whether the
// measured time lies in the 95% interval; for the row loop its run-wide
// (inverse-probability-weighted) iterations against the exact count and
// time against the same run's step-loop time less its MPI_Sendrecv calls
// (the step loop is recorded in full and its iterations are the row loop
// and two MPI_Sendrecv); and the size of the trace. A summary per chance follows. Sampled iterations carry no
// counters unless -counters is given (MPITRACE_LOOP_COUNTERS=none): reading
// them costs microseconds per sampled iteration, which the samples of the
// enclosing loop then hold.
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mpitrace/mpitrace/analysis/loops"
	"github.com/mpitrace/mpitrace/bench/internal/benchutil"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

const (
	stepLoop = "loopstencil.c:39:9"
	rowLoop  = "loopstencil.c:47:17"
)

type config struct {
	mpicc, mpirun   string
	np              int
	steps, rows, cs int
	chances         []float64
	seeds           int
	counters        bool
}

func main() {
	var c config
	var chances string
	flag.StringVar(&c.mpicc, "mpicc", "mpicc.openmpi", "MPI compiler wrapper")
	flag.StringVar(&c.mpirun, "mpirun", "mpirun.openmpi", "MPI launcher")
	flag.IntVar(&c.np, "np", 2, "ranks")
	flag.IntVar(&c.steps, "steps", 2000, "time steps (iterations of the top-level loop)")
	flag.IntVar(&c.rows, "rows", 256, "rows per rank (iterations of the nested loop)")
	flag.IntVar(&c.cs, "cols", 1024, "columns (the work of a row)")
	flag.StringVar(&chances, "chances", "0.01,0.1,0.5", "sampling chances, comma separated")
	flag.IntVar(&c.seeds, "seeds", 5, "runs (seeds 1..N) per chance")
	flag.BoolVar(&c.counters, "counters", false, "sample counters too (the recorder's default)")
	flag.Parse()
	for _, s := range strings.Split(chances, ",") {
		p, err := strconv.ParseFloat(s, 64)
		if err != nil || p <= 0 || p > 1 {
			fmt.Fprintf(os.Stderr, "loopquality: -chances: %q is not a chance in (0,1]\n", s)
			os.Exit(2)
		}
		c.chances = append(c.chances, p)
	}
	if err := run(&c); err != nil {
		fmt.Fprintln(os.Stderr, "loopquality:", err)
		os.Exit(1)
	}
}

// result is what one recorded run says of the two loops.
type result struct {
	step, row *loops.Loop
	bytes     int64
	mpi       int64 // ns in MPI_Sendrecv
}

// rowTruth is the row loop's whole-run time as the top-level step loop
// measures it: the step iterations less their MPI calls.
func (r *result) rowTruth() float64 { return float64(r.step.Measured - r.mpi) }

func run(c *config) error {
	work, err := os.MkdirTemp("", "mpitrace-loopquality-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	mpitrace, err := benchutil.BuildMpitrace(work)
	if err != nil {
		return err
	}
	bin := filepath.Join(work, "loopstencil")
	src := filepath.Join("bench", "programs", "loopstencil.c")
	if out, err := exec.Command(c.mpicc, "-O2", "-Irecorder/c", "-o", bin, src, "-lm").CombinedOutput(); err != nil {
		return fmt.Errorf("compiling %s: %v\n%s", src, err, out)
	}
	record := func(chance float64, seed int) (*result, error) {
		dir := filepath.Join(work, fmt.Sprintf("traces-%g-%d", chance, seed))
		argv := []string{"record", "-o", dir, "--", c.mpirun}
		if b := filepath.Base(c.mpirun); b == "mpirun.openmpi" || b == "mpirun" {
			argv = append(argv, "--oversubscribe")
		}
		argv = append(argv, "-np", strconv.Itoa(c.np), bin, strconv.Itoa(c.steps), strconv.Itoa(c.rows), strconv.Itoa(c.cs))
		cmd := exec.Command(mpitrace, argv...)
		cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
			"MPITRACE_LOOP_CHANCE="+strconv.FormatFloat(chance, 'g', -1, 64), "MPITRACE_LOOP_SEED="+strconv.Itoa(seed))
		if !c.counters {
			cmd.Env = append(cmd.Env, "MPITRACE_LOOP_COUNTERS=none")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("recording at chance %g seed %d: %v\n%s", chance, seed, err, out)
		}
		res, err := analyse(dir)
		if err != nil {
			return nil, fmt.Errorf("chance %g seed %d: %w", chance, seed, err)
		}
		os.RemoveAll(dir)
		return res, nil
	}

	ref, err := record(1, 1)
	if err != nil {
		return err
	}
	exactRows := float64(c.np) * float64(c.steps) * float64(c.rows)
	fmt.Printf("loopstencil: %d ranks, %d steps, %d rows per rank, %d columns; counters %v; mpicc=%s\n", c.np, c.steps, c.rows, c.cs, c.counters, c.mpicc)
	fmt.Printf("chance 1: step loop %.1f ms (%.1f ms of it in MPI_Sendrecv), row loop %.1f ms (%d iterations, each with its events), trace %s\n\n",
		float64(ref.step.Measured)/1e6, float64(ref.mpi)/1e6, float64(ref.row.Measured)/1e6, ref.row.Iterations, size(ref.bytes))
	fmt.Printf("%-6s %4s | %-28s | %-28s | %-30s | %9s\n", "", "", "step loop (top level)", "row loop (recorded part)", "row loop, run-wide (IPW)", "")
	fmt.Printf("%-6s %4s | %8s %9s %9s | %8s %9s %9s | %9s %9s %9s | %9s\n",
		"chance", "seed", "sampled", "est/meas", "in CI", "sampled", "est/meas", "in CI", "iters/ex", "time/true", "in CI", "trace")
	for _, p := range c.chances {
		var n, stepIn, rowIn, rwIn, rowRuns int
		var stepErr, rowErr, rwErr, itErr float64
		var bytes int64
		for s := 1; s <= c.seeds; s++ {
			r, err := record(p, s)
			if err != nil {
				return err
			}
			n++
			bytes += r.bytes
			stepErr += math.Abs(r.step.Quality - 1)
			stepIn += b2i(r.step.InCI)
			row := "-"
			rw := "-"
			if r.row != nil {
				rowRuns++
				rowErr += math.Abs(r.row.Quality - 1)
				rowIn += b2i(r.row.InCI)
				row = fmt.Sprintf("%8d %9.4f %9s", r.row.Sampled, r.row.Quality, yes(r.row.InCI))
				if w := r.row.RunWide; w != nil {
					truth := r.rowTruth()
					in := w.CI95 != nil && truth >= w.CI95[0] && truth <= w.CI95[1]
					rwIn += b2i(&in)
					rwErr += math.Abs(w.TimeNs/truth - 1)
					itErr += math.Abs(w.Iterations/exactRows - 1)
					rw = fmt.Sprintf("%9.4f %9.4f %9s", w.Iterations/exactRows, w.TimeNs/truth, yes(&in))
				}
			}
			fmt.Printf("%-6g %4d | %8d %9.4f %9s | %-28s | %-30s | %9s\n", p, s, r.step.Sampled, r.step.Quality, yes(r.step.InCI), row, rw, size(r.bytes))
		}
		fmt.Printf("%-6g %4s | mean |est/meas-1| %.4f, in CI %d/%d | row: %.4f, in CI %d/%d | run-wide: |iters/exact-1| %.4f, |time/true-1| %.4f, true in CI %d/%d | mean trace %s\n\n",
			p, "all", stepErr/float64(n), stepIn, n, div(rowErr, rowRuns), rowIn, rowRuns, div(itErr, rowRuns), div(rwErr, rowRuns), rwIn, rowRuns, size(bytes/int64(n)))
	}
	return nil
}

// analyse reads a trace's loops and its size.
func analyse(dir string) (*result, error) {
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	res := &result{}
	var ranks []*loops.RankLoops
	for _, f := range tr.Files {
		r, err := tr.OpenRank(f.Rank)
		if err != nil {
			return nil, err
		}
		a := loops.NewAggregator(r.Header(), r.Strings())
		for r.Next() {
			ev := r.Event()
			a.Event(ev)
			if ev.Kind == spec.Sendrecv {
				res.mpi += ev.Dur()
			}
		}
		rl := a.Finish()
		err = r.Err()
		r.Close()
		if err != nil {
			return nil, err
		}
		ranks = append(ranks, rl)
		st, err := os.Stat(f.Path)
		if err != nil {
			return nil, err
		}
		res.bytes += st.Size()
	}
	rep := loops.Merge(ranks)
	for _, l := range rep.Loops {
		switch l.Location {
		case stepLoop:
			res.step = l
		case rowLoop:
			res.row = l
		}
	}
	if res.step == nil {
		return nil, errors.New("the trace has no loop events: this recorder does not record loops (the loop runtime is not in this build)")
	}
	return res, nil
}

func b2i(b *bool) int {
	if b != nil && *b {
		return 1
	}
	return 0
}

func yes(b *bool) string {
	switch {
	case b == nil:
		return "-"
	case *b:
		return "yes"
	}
	return "no"
}

func div(a float64, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	return a / float64(n)
}

func size(b int64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
