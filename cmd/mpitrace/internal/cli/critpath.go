package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/driver"
	"github.com/mpitrace/mpitrace/analysis/stats"
	"github.com/mpitrace/mpitrace/tracefmt"
)

type critpathOptions struct {
	Dir string
	// Out is the critPath.out file ("-": stdout). With JSON it is written
	// only when OutGiven.
	Out      string
	OutGiven bool
	Model    string
	Unit     string
	JSON     bool
	Top      int
	Weights  string
	traceFlags
	siteFlags
	mpi mpiFlags
}

func newCritpathCmd(s *Streams, runF func(context.Context, *critpathOptions) error) *cobra.Command {
	opts := &critpathOptions{}
	cmd := &cobra.Command{
		Use:   "critpath [TRACEDIR] [-o critPath.out] [--model FILE] [--unit us|ms|s|ns] [--json]",
		Short: "Find the critical path: the chain of computation and messages that decides the run time",
		Long: `Rebuild the program's task graph from a trace and find its critical path:
the longest chain, from MPI_Init to MPI_Finalize, of computation between MPI
calls on one rank, messages from a send to the call that received it, and
collectives (see docs/reconstruction.md for the rules).

Computation edges weigh the measured time between a rank's consecutive MPI
calls; message edges the latency model's one-way latency at the message's
size; a collective its model time at (bytes per process, members). The model
is --model (written by 'mpitrace calibrate') or, without it, a default one
embedded in mpitrace (which the output says).

The path goes to critPath.out (or -o FILE), one item per line, alternating
vertex and edge: a vertex is the MPI function name and the rank (-1 for
MPI_Init, MPI_Finalize and collectives), a computation edge its time rounded
to an integer in --unit, a message edge its size in bytes. A summary goes to
stdout: the path's length against the measured run time, its share by rank,
by MPI function, computation against communication, and its heaviest
edges. With -o - the path goes to stdout instead of the summary.

For a trace with call sites (format version 5 on), the summary adds the
path by call site (file:line and function of each MPI call, from the
binary's debug information: build with -g), and lists its heaviest steps
grouped by the call sites at their two ends, once per pair rather than once
per iteration. A binary without debug information, changed or missing
since the run gets one note on stderr (--binary points at a copy).

With --json, stdout holds one JSON object instead: the summary, the path
itself (its vertices, and the edges between them with their weights in ns),
and the trace's diagnostics (counts by severity and code, and a list with
severity, code, rank and message); critPath.out is then written only when
-o names a file.

Problems in the trace are printed on stderr, one line each; when data was
lost the summary says so. The exit status is 1 when the trace has errors,
and with --strict 3 when it lost data.`,
		Example: `  mpitrace critpath traces/
  mpitrace critpath traces/ -o critPath.out --model model.json --unit ms
  mpitrace critpath traces/ --json | jq .summary.by_rank
  mpitrace critpath traces/ --json | jq -r '.path.vertices[] | "\(.name) \(.rank)"'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = traceDirArg(args)
			opts.OutGiven = outputGiven(cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCritpath(cmd.Context(), opts, s)
		},
	}
	f := cmd.Flags()
	outputFlag(f, &opts.Out, "critPath.out", "`file` for the critical path ('-': stdout, no summary; with --json: none unless given)")
	addModelFlag(f, &opts.Model, "the critical path")
	f.StringVar(&opts.Unit, "unit", "us", "`unit` of computation edges in critPath.out and the summary: ns, us, ms or s")
	f.BoolVar(&opts.JSON, "json", false, "print the summary and the path as JSON on stdout")
	f.IntVar(&opts.Top, "top", 10, "heaviest edges to list in the summary")
	f.StringVar(&opts.Weights, "weights", "model", "`weights` of messages and collectives: model (the latency model) or measured (what the run took, with wait states)")
	f.BoolVar(&opts.Strict, "strict", false, "exit with status 3 when the trace lost data")
	addSiteFlags(f, &opts.siteFlags)
	addMPIFlags(f, &opts.mpi)
	return cmd
}

// addModelFlag defines --model, the latency model every command that
// weighs a critical path takes, for what the command weighs.
func addModelFlag(f *pflag.FlagSet, p *string, what string) {
	f.StringVar(p, "model", "", "latency model `file` from mpitrace calibrate, for "+what+" (default: the embedded model)")
}

// modelDesc names a model by its fingerprint, as a baseline records it
// (empty for the embedded default).
func modelDesc(fingerprint string) string {
	if fingerprint == "" {
		return "the default latency model"
	}
	return "the latency model of fingerprint " + fingerprint
}

// analyze rebuilds the task graph of an opened trace and looks for its
// critical path (driver.Analyze), and prints the analysis' note.
func analyze(t *tracefmt.Trace, o driver.Options, s *Streams) (*driver.Analysis, error) {
	a, err := driver.Analyze(t, o)
	if err != nil {
		return nil, err
	}
	sayNote(a, s)
	return a, nil
}

// sayNote prints the analysis' note, if any.
func sayNote(a *driver.Analysis, s *Streams) {
	if a.Note != "" {
		fmt.Fprintf(s.Err, "mpitrace: note: %s\n", a.Note)
	}
}

// analyzePath is analyze for the commands that need the path: it opens dir
// and fails, after the diagnostics that say why, when there is no path.
func analyzePath(dir string, o driver.Options, s *Streams) (*driver.Analysis, error) {
	t, err := openTrace(dir, s)
	if err != nil {
		return nil, err
	}
	return analyzeTracePath(t, o, s)
}

// analyzeTracePath is analyzePath of an opened trace.
func analyzeTracePath(t *tracefmt.Trace, o driver.Options, s *Streams) (*driver.Analysis, error) {
	a, err := analyze(t, o, s)
	if err != nil {
		return nil, err
	}
	if err := needPath(a, s); err != nil {
		return nil, err
	}
	return a, nil
}

// analyzeJobPath is analyzePath as an MPI job (driver.Job.Analyze):
// process 0 gets the analysis, the others nil.
func analyzeJobPath(j *driver.Job, o driver.Options, s *Streams) (*driver.Analysis, error) {
	a, err := j.Analyze(o)
	if a == nil || err != nil {
		return nil, err
	}
	sayNote(a, s)
	if err := needPath(a, s); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// needPath fails, after the diagnostics that say why, when a has no
// critical path.
func needPath(a *driver.Analysis, s *Streams) error {
	if err := a.NeedPath(); err != nil {
		if !errors.Is(err, driver.ErrNoMPI) {
			reportDiagnostics(s, a.Diags, &traceFlags{})
		}
		return err
	}
	return nil
}

func runCritpath(ctx context.Context, opts *critpathOptions, s *Streams) error {
	unit, err := critpath.ParseUnit(opts.Unit)
	if err != nil {
		return flagErrorf("--unit %q: %v", opts.Unit, err)
	}
	if opts.Top < 0 {
		return flagErrorf("--top must be 0 or more")
	}
	if err := checkOutputFlag(opts.Out); err != nil {
		return err
	}
	weights, ok := critpath.ParseWeighting(opts.Weights)
	if !ok {
		return flagErrorf("--weights %q: want model or measured", opts.Weights)
	}
	if err := opts.mpi.check(); err != nil {
		return err
	}
	resolver, err := opts.resolver()
	if err != nil {
		return err
	}
	// The path is found by the streaming replay, or the task graph when
	// the trace needs it.
	o := driver.Options{Model: opts.Model, Resolver: resolver, Stream: true, Measured: weights == critpath.WeightsMeasured, Why: true}
	if opts.mpi.MPI {
		return runMPI(ctx, s, opts.Dir, &opts.mpi, func(j *driver.Job, s *Streams) error {
			a, err := analyzeJobPath(j, o, s)
			if a == nil || err != nil {
				return err
			}
			defer a.Close()
			return reportCritpath(opts, s, a, unit, weights)
		})
	}
	a, err := analyzePath(opts.Dir, o, s)
	if err != nil {
		return err
	}
	defer a.Close()
	return reportCritpath(opts, s, a, unit, weights)
}

// reportCritpath writes critPath.out, the summary or the JSON, and the
// diagnostics of analysis a.
func reportCritpath(opts *critpathOptions, s *Streams, a *driver.Analysis, unit critpath.Unit, weights critpath.Weighting) error {
	var err error
	path := a.Steps
	if weights == critpath.WeightsMeasured {
		if path, err = a.MeasuredPath(); err != nil {
			return err
		}
	}
	// Where critPath.out goes: -o (stdout for -), critPath.out by default;
	// with --json only where -o says, and never to the JSON's stdout (the
	// JSON holds the path).
	out := opts.Out
	if opts.JSON && (!opts.OutGiven || out == "-") {
		out = ""
	}
	// critPath.out and the summary in one pass over the path.
	var sum *critpath.Summary
	if out != "" {
		err = writeOutputTo(s, out, func(w io.Writer) (err error) {
			sum, err = a.Report(path, w, unit, opts.Top)
			return err
		})
	} else {
		sum, err = a.Report(path, nil, unit, opts.Top)
	}
	if err != nil {
		return err
	}
	if err := a.Explain(sum); err != nil {
		return err
	}
	switch {
	case opts.JSON:
		// The path is streamed where a placeholder stands in the rest.
		err = writeJSONWith(s.Out, struct {
			Trace       string                    `json:"trace"`
			Model       string                    `json:"model"`
			Unit        string                    `json:"unit"`
			Output      string                    `json:"critpath_out,omitempty"`
			Summary     *critpath.Summary         `json:"summary"`
			Path        json.RawMessage           `json:"path"`
			Unfinished  []tracefmt.UnfinishedCall `json:"unfinished,omitempty"`
			Diagnostics *diagnosticsJSON          `json:"diagnostics"`
		}{opts.Dir, a.ModelName, unit.String(), out, sum, jsonPlaceholder, a.Trace.Unfinished(), newDiagnosticsJSON(a.Diags)},
			func(w io.Writer) error { return path.WriteJSON(w, "  ", "  ") })
	case out != "-":
		err = writeSummary(s.Out, opts.Dir, a, out, sum, unit)
	}
	if err != nil {
		return err
	}
	reportSiteProblems(s, a.Sites())
	return reportDiagnostics(s, a.Diags, &opts.traceFlags)
}

// writeJSON writes v as indented JSON: the --json output of the commands.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jsonPlaceholder stands, in a value writeJSONWith writes, for what it
// streams (a field of the top-level object).
var jsonPlaceholder = json.RawMessage(`"\u0000streamed\u0000"`)

// writeJSONWith writes v as writeJSON does, but for the field holding
// jsonPlaceholder, whose value stream writes (indented as a field of the
// top-level object): a long critical path is written as it is read, not
// held.
func writeJSONWith(w io.Writer, v any, stream func(io.Writer) error) error {
	var b bytes.Buffer
	if err := writeJSON(&b, v); err != nil {
		return err
	}
	before, after, ok := bytes.Cut(b.Bytes(), jsonPlaceholder)
	if !ok {
		return fmt.Errorf("internal error: mpitrace: no place for the streamed JSON")
	}
	if _, err := w.Write(before); err != nil {
		return err
	}
	if err := stream(w); err != nil {
		return err
	}
	_, err := w.Write(after)
	return err
}

// writeSummary writes the text summary of critpath and record --critpath:
// what was analysed, where the path went, the model, whether data was
// lost, and the summary's tables.
func writeSummary(w io.Writer, dir string, a *driver.Analysis, out string, sum *critpath.Summary, unit critpath.Unit) error {
	fmt.Fprintf(w, "Critical path of %s (written to %s)\n", dir, out)
	if sum.Weights == critpath.WeightsMeasured {
		fmt.Fprintf(w, "Weights: measured (messages and collectives weigh what the run took, clocks aligned by the ClockSync offsets; --weights model for the latency model)\n")
	} else {
		fmt.Fprintf(w, "Latency model: %s\n", a.ModelName)
	}
	fmt.Fprintf(w, "%s\n", dataLossLine(a.Diags))
	if err := sum.WriteText(w, unit); err != nil {
		return err
	}
	return writeUnfinished(w, a.Trace)
}

// writeUnfinished says, when the run hung or was stopped, which MPI calls
// never returned: the critical path ends at the operations before them.
func writeUnfinished(w io.Writer, t *tracefmt.Trace) error {
	calls := t.Unfinished()
	if len(calls) == 0 {
		return nil
	}
	ranks := map[int]bool{}
	for _, c := range calls {
		ranks[c.Rank] = true
	}
	fmt.Fprintf(w, "\nThe run did not end normally: %d of %d ranks were inside MPI calls that never returned\n"+
		"(the run hung there, or was stopped); the path ends at the operations before them:\n", len(ranks), t.Size)
	for _, c := range calls {
		began := ""
		if f, ok := t.Rank(c.Rank); ok {
			if v, ok := f.Header.Get(tracefmt.KeyInitMonotonicNS); ok {
				if init, err := strconv.ParseInt(v, 10, 64); err == nil && c.Start >= init {
					began = ", began " + stats.Duration(c.Start-init) + " after MPI_Init"
				}
			}
		}
		if _, err := fmt.Fprintf(w, "  rank %d thread %d: %s%s, waited at least %s\n", c.Rank, c.Thread, c.Name, began, stats.Duration(c.Time-c.Start)); err != nil {
			return err
		}
	}
	return nil
}
