package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/analysis/baseline"
	"github.com/mpitrace/mpitrace/analysis/driver"
	"github.com/mpitrace/mpitrace/analysis/stats"
	"github.com/mpitrace/mpitrace/tracefmt"
)

type checkOptions struct {
	Dir           string
	Model         string
	Baseline      string
	Tolerance     string
	Floor         time.Duration
	WriteBaseline bool
	mpi           mpiFlags
}

func newCheckCmd(s *Streams, runF func(context.Context, *checkOptions) error) *cobra.Command {
	opts := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check [TRACEDIR] --baseline FILE [--model FILE] [--tolerance PCT] [--floor DURATION] [--write-baseline]",
		Short: "Compare a trace's critical path and MPI times with a stored baseline (for CI)",
		Long: `Compare a trace with a baseline file, for regression checks in CI
(docs/ci.md shows a GitHub Actions and a GitLab CI job).

The figures are the critical path's length, its computation and
communication, and its share per MPI function (as 'mpitrace critpath'
summarises it, with the latency model of --model, by default the one
embedded in mpitrace); the time spent in each MPI
function, summed over ranks (as 'mpitrace stats'); and, when the trace
recorded them, each region's and kernel's inclusive time summed over ranks
(as 'mpitrace regions') and each loop's measured time (as 'mpitrace loops').
The run's shape is the number of ranks and the calls per MPI function,
summed over ranks.

With --write-baseline, check writes these figures to FILE (versioned JSON,
keys sorted, times in integer nanoseconds; docs/cli.md gives the schema) and
says so in one line. A baseline written with --model records the model's
fingerprint, and is compared only with a trace weighed by the same model:
pass the same --model (or one with the same fits) when checking.

Without it, check compares the trace with FILE. When the shape differs (other
ranks, other call counts), the runs are not the same run: it lists what
changed and compares no time, exit status 4. Otherwise it lists every figure
that moved by more than --tolerance (default 5%) and by more than --floor
(default 100us) in either direction, with the baseline's value, the
trace's, and the change; a time that grew is a regression. Exit status: 0
when no time grew beyond the tolerance (a one-line summary says how many
figures were compared), 1 on a regression (named on stderr), 2 on bad input
(bad flags, an unreadable or invalid baseline, a baseline weighed with
another latency model, an unreadable trace, one with errors or one that
lost data: its diagnostics are printed on stderr),
4 when the shape changed.`,
		Example: `  mpitrace check traces/ --baseline perf/baseline.json --write-baseline
  mpitrace check traces/ --baseline perf/baseline.json
  mpitrace check traces/ --baseline perf/baseline.json --tolerance 20% --floor 1ms`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = traceDirArg(args)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCheck(cmd.Context(), opts, s)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Baseline, "baseline", "", "baseline `file` to compare with (or to write, with --write-baseline)")
	addModelFlag(f, &opts.Model, "the critical path")
	f.StringVar(&opts.Tolerance, "tolerance", "5%", "relative change that counts, in `percent` (10 or 10%)")
	f.DurationVar(&opts.Floor, "floor", 100*time.Microsecond, "absolute change below which no figure counts (small times must not flap)")
	f.BoolVar(&opts.WriteBaseline, "write-baseline", false, "write the trace's figures to the baseline file instead of comparing")
	addMPIFlags(f, &opts.mpi)
	return cmd
}

// parseTolerance reads --tolerance: a percentage, with or without %.
func parseTolerance(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%")), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, flagErrorf("--tolerance %q: give a percentage of 0 or more, such as 5 or 5%%", s)
	}
	return v / 100, nil
}

// badInput makes err end check with status 2, unless it has its own.
func badInput(err error) error {
	var ec *ExitCodeError
	var fe *FlagError
	if err == nil || errors.As(err, &ec) || errors.As(err, &fe) {
		return err
	}
	return &ExitCodeError{Code: ExitUsage, Err: err}
}

func runCheck(ctx context.Context, opts *checkOptions, s *Streams) error {
	if opts.Baseline == "" {
		return flagErrorf("--baseline FILE is required: the baseline to compare with, or to write with --write-baseline")
	}
	tol, err := parseTolerance(opts.Tolerance)
	if err != nil {
		return err
	}
	if opts.Floor < 0 {
		return flagErrorf("--floor must be 0 or more")
	}
	var old *baseline.Baseline
	if !opts.WriteBaseline {
		if old, err = readBaseline(opts.Baseline); err != nil {
			return err
		}
	}
	if err := opts.mpi.check(); err != nil {
		return err
	}
	if opts.mpi.MPI {
		return runMPI(ctx, s, opts.Dir, &opts.mpi, func(j *driver.Job, s *Streams) error {
			now, err := jobBaseline(j, opts.Dir, opts.Model, s)
			if now == nil || err != nil {
				return err
			}
			return checkWith(opts, s, tol, old, now)
		})
	}
	now, err := traceBaseline(opts.Dir, opts.Model, s)
	if err != nil {
		return err
	}
	return checkWith(opts, s, tol, old, now)
}

// checkWith compares now, a trace's figures, with the baseline old, or
// writes now as the baseline (old is nil then).
func checkWith(opts *checkOptions, s *Streams, tol float64, old, now *baseline.Baseline) error {
	if old != nil && old.Model != now.Model {
		return badInput(fmt.Errorf("baseline %s was weighed with %s, the trace with %s: give check the --model the baseline was written with",
			opts.Baseline, modelDesc(old.Model), modelDesc(now.Model)))
	}
	if opts.WriteBaseline {
		if err := writeOutput(opts.Baseline, now.Write); err != nil {
			return badInput(err)
		}
		_, err := fmt.Fprintf(s.Out, "Wrote %s: %d ranks, %d MPI functions, %d figures (critical path %s)\n",
			opts.Baseline, now.Shape.Ranks, len(now.Shape.Calls), len(now.Times), stats.Duration(now.Times[baseline.CritpathLength]))
		return err
	}
	r := baseline.Compare(old, now, baseline.Options{Tolerance: tol, Floor: opts.Floor.Nanoseconds()})
	if err := writeComparison(s.Out, opts, tol, r); err != nil {
		return err
	}
	switch {
	case len(r.Shape) > 0:
		return &ExitCodeError{Code: ExitShapeChanged, Err: fmt.Errorf("the run's shape changed since %s (%s): timings not compared", opts.Baseline, shapeSummary(r.Shape))}
	case r.Regressions > 0:
		return &ExitCodeError{Code: ExitRegression, Err: fmt.Errorf("regression: %s", regressionSummary(r, tol))}
	}
	return nil
}

// readBaseline reads and checks a baseline file; its errors name it and
// end check with status 2.
func readBaseline(path string) (*baseline.Baseline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, badInput(fmt.Errorf("baseline %w", err))
	}
	b, err := baseline.Read(data)
	if err != nil {
		return nil, badInput(fmt.Errorf("baseline %s: %w", path, err))
	}
	return b, nil
}

// traceBaseline reads the trace in dir and returns its figures. Its errors
// (an unreadable trace, one with errors) end check with status 2.
func traceBaseline(dir, modelPath string, s *Streams) (*baseline.Baseline, error) {
	t, err := openTrace(dir, s)
	if err != nil {
		return nil, badInput(err)
	}
	prof, err := stats.OfTrace(t)
	if err != nil {
		return nil, badInput(err)
	}
	a, err := analyzeTracePath(t, driver.Options{Model: modelPath, Stream: true}, s)
	if err != nil {
		return nil, badInput(err)
	}
	defer a.Close()
	return analysisBaseline(a, dir, prof, s)
}

// jobBaseline is traceBaseline as an MPI job: process 0 gets the
// figures, the others nil.
func jobBaseline(j *driver.Job, dir, modelPath string, s *Streams) (*baseline.Baseline, error) {
	// What stops the job (MPI's errors) is not bad input.
	bad := func(err error) error {
		if isMPIFailure(err) || j.Fatal(err) {
			return err
		}
		return badInput(err)
	}
	prof, err := j.Profile()
	if err != nil {
		return nil, bad(err)
	}
	// The figures need no spans: none is gathered.
	a, err := analyzeJobPath(j, driver.Options{Model: modelPath, Stream: true, Baseline: true, NoSpans: true}, s)
	if a == nil || err != nil {
		return nil, bad(err)
	}
	defer a.Close()
	return analysisBaseline(a, dir, prof, s)
}

// analysisBaseline returns the figures of analysis a of trace dir and its
// profile prof, after its diagnostics; errors end check with status 2.
func analysisBaseline(a *driver.Analysis, dir string, prof *stats.Profile, s *Streams) (*baseline.Baseline, error) {
	// A trace with errors or lost data is bad input: its figures would
	// compare as another run's.
	if err := reportDiagnostics(s, a.Diags, &traceFlags{}); err != nil {
		var ec *ExitCodeError
		if errors.As(err, &ec) {
			ec.Code = ExitUsage
		}
		return nil, err
	}
	if n := a.Diags.Count(tracefmt.DataLoss); n > 0 {
		return nil, badInput(fmt.Errorf("%s lost data (%d data-loss diagnostics, see above): its figures would not compare; record the run again", dir, n))
	}
	return a.Baseline(dir, prof)
}

// writeComparison writes the table of a comparison, or the shape's
// changes, and the summary line.
func writeComparison(w io.Writer, opts *checkOptions, tol float64, r *baseline.Result) error {
	if len(r.Shape) > 0 {
		fmt.Fprintf(w, "The run's shape changed since %s: timings not compared (record the same run, or write a new baseline with --write-baseline)\n", opts.Baseline)
		rows := [][]string{{"shape", "baseline", "now"}}
		for _, c := range r.Shape {
			rows = append(rows, []string{shapeWhat(c), strconv.FormatInt(c.Old, 10), strconv.FormatInt(c.New, 10)})
		}
		return writeTable(w, rows)
	}
	limits := fmt.Sprintf("%s and %s", pct(tol), stats.Duration(opts.Floor.Nanoseconds()))
	if len(r.Changes) == 0 {
		_, err := fmt.Fprintf(w, "OK: %d figures of %s within %s of %s\n", r.Compared, opts.Dir, limits, opts.Baseline)
		return err
	}
	fmt.Fprintf(w, "%d of %d figures of %s moved beyond %s since %s:\n", len(r.Changes), r.Compared, opts.Dir, limits, opts.Baseline)
	rows := [][]string{{"figure", "baseline", "now", "change", ""}}
	for _, c := range r.Changes {
		mark := "faster"
		if c.Regression {
			mark = "REGRESSION"
		}
		rows = append(rows, []string{c.Name, stats.Duration(c.Old), stats.Duration(c.New), changeText(c), mark})
	}
	if err := writeTable(w, rows); err != nil {
		return err
	}
	if r.Regressions == 0 {
		_, err := fmt.Fprintf(w, "OK: no regression in %d figures (%d faster)\n", r.Compared, len(r.Changes))
		return err
	}
	return nil
}

// writeTable writes rows as columns two spaces apart: the first, and
// those with an empty heading, left-aligned, the others (numbers)
// right-aligned; names are escaped, widths counted in characters.
func writeTable(w io.Writer, rows [][]string) error {
	width := make([]int, len(rows[0]))
	for _, row := range rows {
		for i := range row {
			row[i] = strings.Trim(strconv.Quote(row[i]), `"`)
			width[i] = max(width[i], utf8.RuneCountInString(row[i]))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		b.Reset()
		for i, cell := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(cell))
			if i > 0 {
				b.WriteString("  ")
			}
			if i == 0 || rows[0][i] == "" {
				b.WriteString(cell + pad)
			} else {
				b.WriteString(pad + cell)
			}
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
	}
	return nil
}

// changeText is a change in percent, or "new" for a figure the baseline
// did not have.
func changeText(c baseline.Change) string {
	if math.IsInf(c.Ratio, 0) {
		return "new"
	}
	return fmt.Sprintf("%+.1f%%", 100*c.Ratio)
}

// shapeWhat names a change of the shape.
func shapeWhat(c baseline.ShapeChange) string {
	if c.What == "ranks" {
		return "ranks"
	}
	return c.What + " calls"
}

// pct formats a fraction as a percentage without needless digits.
func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', -1, 64) + "%" }

// shapeSummary is the shape's changes in a line, the first few.
func shapeSummary(cs []baseline.ShapeChange) string {
	var parts []string
	for i, c := range cs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(cs)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d -> %d", shapeWhat(c), c.Old, c.New))
	}
	return strings.Join(parts, ", ")
}

// regressionSummary names the regressions in a line, the first few.
func regressionSummary(r *baseline.Result, tol float64) string {
	var names []string
	for _, c := range r.Changes {
		if !c.Regression {
			continue
		}
		if len(names) == 3 {
			names = append(names, fmt.Sprintf("and %d more", r.Regressions-3))
			break
		}
		names = append(names, c.Name+" "+changeText(c))
	}
	s := "s"
	if r.Regressions == 1 {
		s = ""
	}
	return fmt.Sprintf("%d time%s grew beyond %s: %s", r.Regressions, s, pct(tol), strings.Join(names, ", "))
}
