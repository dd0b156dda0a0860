package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mpitrace/mpitrace/analysis/callsite"
	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/analysis/loops"
	"github.com/mpitrace/mpitrace/analysis/regions"
	"github.com/mpitrace/mpitrace/analysis/stats"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
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
			return runCritpath(opts, s)
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

// loadModel returns the latency model of --model, or the embedded default,
// and how to name it to the user.
func loadModel(path string) (*latency.Model, string, error) {
	if path == "" {
		return latency.Default(), "default model embedded in mpitrace (run mpitrace calibrate for this machine)", nil
	}
	m, err := latency.Load(path)
	if err != nil {
		return nil, "", fmt.Errorf("--model: %w", err)
	}
	return m, fmt.Sprintf("%s (calibrated on %s, %d ranks, %s)", path, m.Machine, m.Procs, firstLine(m.MPI)), nil
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' || r == '\t' || i >= 60 {
			return s[:i]
		}
	}
	return s
}

// analysis is a trace's task graph and critical path: what critpath, dot
// and record --critpath share.
type analysis struct {
	trace     *tracefmt.Trace
	graph     *taskgraph.Graph
	diags     *tracefmt.Diagnostics
	model     *latency.Model
	modelName string
	path      *critpath.Path
	fold      *critpath.Folded // folded() folds path once
	// pathErr says why there is no path (no operations, or inconsistent
	// data making a cycle); the graph is still there.
	pathErr error
	// loopAggs and regionAggs saw each rank's loop and region events
	// during the reconstruction.
	loopAggs    []*loops.Aggregator
	regionAggs  []*regions.Aggregator
	regionRanks []*regions.RankRegions // the aggregators' Finish (regions)
	loopRanks   []*loops.RankLoops     // the aggregators' Finish (loops)
	// clocks saw each rank's clock offsets; mpath is the path under
	// measured weights, once computed (measuredPath).
	clocks   *clockObserver
	mpath    *critpath.Path
	mpathErr error
	// resolver resolves the call sites (set by commands with --binary;
	// the default resolver when nil); sites is their table, made on first
	// use by siteLabel.
	resolver *callsite.Resolver
	sites    *callsite.Table
}

// siteLabel returns the labeller of the graph's call sites, nil when the
// graph has none (traces before format version 5).
func (a *analysis) siteLabel() critpath.SiteLabel {
	if a.sites == nil {
		r := a.resolver
		if r == nil {
			r = callsite.NewResolver()
		}
		ranks := map[int]*tracefmt.Sites{}
		for _, rk := range a.graph.Ranks() {
			ranks[rk] = a.graph.RankSites(rk)
		}
		a.sites = siteTable(r, ranks)
	}
	if a.sites.Empty() {
		return nil
	}
	return a.sites.Label
}

// observer is what else an analysis wants to see of each rank's events:
// it is given the rank's header, strings and file, and returns what sees
// the events.
type observer func(h *tracefmt.Header, strs *tracefmt.Strings, file string) func(*tracefmt.Event)

// analyze rebuilds the task graph of an opened trace and looks for its
// critical path with the latency model of modelPath (or the default).
func analyze(t *tracefmt.Trace, modelPath string, s *Streams) (*analysis, error) {
	return analyzeWith(t, modelPath, s, nil)
}

// analyzeWith is analyze with another observer of each rank's events.
func analyzeWith(t *tracefmt.Trace, modelPath string, s *Streams, extra observer) (*analysis, error) {
	return analyzeSpans(t, modelPath, s, extra, true)
}

// analyzeSpans is analyzeWith; without spans, the loops' and regions'
// intervals are not kept (the path's share in them is not needed).
func analyzeSpans(t *tracefmt.Trace, modelPath string, s *Streams, extra observer, spans bool) (*analysis, error) {
	a := &analysis{trace: t, clocks: newClockObserver()}
	var err error
	if a.model, a.modelName, err = loadModel(modelPath); err != nil {
		return nil, err
	}
	var mu sync.Mutex
	observe := func(h *tracefmt.Header, strs *tracefmt.Strings) func(*tracefmt.Event) {
		// Where the loops and regions ran, for the critical path's share
		// in them: little more than a switch per event in a trace without.
		ag := loops.NewAggregator(h, strs)
		ag.KeepSpans = spans
		rg := regions.NewAggregator(h, strs)
		rg.KeepSpans = spans
		var more func(*tracefmt.Event)
		if extra != nil {
			file := ""
			if f, ok := t.Rank(h.Rank); ok {
				file = f.Path
			}
			more = extra(h, strs, file)
		}
		mu.Lock()
		a.loopAggs = append(a.loopAggs, ag)
		a.regionAggs = append(a.regionAggs, rg)
		mu.Unlock()
		clk := a.clocks.observe(h, strs, "")
		return func(ev *tracefmt.Event) {
			ag.Event(ev)
			rg.Event(ev)
			clk(ev)
			if more != nil {
				more(ev)
			}
		}
	}
	a.graph, a.diags, err = reconstruct.Build(t, reconstruct.Options{Filtered: recordFilter(t) != "", Observe: observe})
	if err != nil {
		return nil, err
	}
	if note := filterNote(t, a.diags); note != "" {
		fmt.Fprintf(s.Err, "mpitrace: note: %s\n", note)
	}
	a.path, a.pathErr = critpath.Compute(a.graph, a.model)
	return a, nil
}

// withoutMPI reports whether t may come from a program without MPI: the
// recorder without MPI writes no mpi_library in any rank's header.
func withoutMPI(t *tracefmt.Trace) bool {
	for _, f := range t.Files {
		if f.Header.MPILibrary != "" {
			return false
		}
	}
	return len(t.Files) > 0
}

// noMPIRecorded reports whether a, analysed from t, is a program without
// MPI rather than a damaged trace: no MPI library named, no operation in
// the graph, and nothing lost.
func noMPIRecorded(t *tracefmt.Trace, a *analysis) bool {
	return withoutMPI(t) && errors.Is(a.pathErr, critpath.ErrEmpty) && a.diags.Count(tracefmt.DataLoss) == 0
}

// analyzePath is analyze for the commands that need the path: it opens dir
// and fails, after the diagnostics that say why, when there is no path.
func analyzePath(dir, modelPath string, s *Streams) (*analysis, error) {
	t, err := openTrace(dir, s)
	if err != nil {
		return nil, err
	}
	return analyzeTracePath(t, modelPath, s)
}

// analyzeTracePath is analyzePath of an opened trace.
func analyzeTracePath(t *tracefmt.Trace, modelPath string, s *Streams) (*analysis, error) {
	a, err := analyze(t, modelPath, s)
	if err != nil {
		return nil, err
	}
	if noMPIRecorded(t, a) {
		return nil, fmt.Errorf("%s: a program without MPI (no MPI call recorded, no MPI library in the logs): there is no critical path across ranks; 'mpitrace loops %s' shows its loops", t.Dir, t.Dir)
	}
	if a.pathErr != nil {
		reportDiagnostics(s, a.diags, &traceFlags{})
		return nil, a.pathErr
	}
	return a, nil
}

func runCritpath(opts *critpathOptions, s *Streams) error {
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
	resolver, err := opts.resolver()
	if err != nil {
		return err
	}
	a, err := analyzePath(opts.Dir, opts.Model, s)
	if err != nil {
		return err
	}
	a.resolver = resolver
	path := a.path
	if weights == critpath.WeightsMeasured {
		if path, err = a.measuredPath(); err != nil {
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
		if err := writeOutputTo(s, out, func(w io.Writer) (err error) {
			sum, err = critpath.WriteCritPathOutSummary(w, path, unit, opts.Top)
			return err
		}); err != nil {
			return err
		}
	}
	sum = summarizePath(a, path, sum, opts.Top)
	if err := explain(a, sum); err != nil {
		return err
	}
	switch {
	case opts.JSON:
		err = writeJSON(s.Out, struct {
			Trace       string                    `json:"trace"`
			Model       string                    `json:"model"`
			Unit        string                    `json:"unit"`
			Output      string                    `json:"critpath_out,omitempty"`
			Summary     *critpath.Summary         `json:"summary"`
			Path        *critpath.Path            `json:"path"`
			Unfinished  []tracefmt.UnfinishedCall `json:"unfinished,omitempty"`
			Diagnostics *diagnosticsJSON          `json:"diagnostics"`
		}{opts.Dir, a.modelName, unit.String(), out, sum, path, a.trace.Unfinished(), newDiagnosticsJSON(a.diags)})
	case out != "-":
		err = writeSummary(s.Out, opts.Dir, a, out, sum, unit)
	}
	if err != nil {
		return err
	}
	if a.sites != nil {
		reportSiteProblems(s, a.sites)
	}
	return reportDiagnostics(s, a.diags, &opts.traceFlags)
}

// summarize summarises the critical path of a (unless sum, made while
// writing critPath.out, already does); for a trace with loop events it
// adds which loops the path's computation ran in.
func summarize(a *analysis, sum *critpath.Summary, top int) *critpath.Summary {
	return summarizePath(a, a.path, sum, top)
}

// summarizePath is summarize of path, a critical path of a's graph.
func summarizePath(a *analysis, path *critpath.Path, sum *critpath.Summary, top int) *critpath.Summary {
	if sum == nil {
		sum = critpath.Summarize(a.graph, path, top)
	}
	var f *critpath.Folded
	if path == a.path {
		f = a.folded()
	} else {
		f = critpath.Fold(path) // the measured path: folded for its summary only
	}
	sum.Repetition = critpath.SummarizeRepetition(f)
	if label := a.siteLabel(); label != nil {
		sum.Sites = critpath.AttributeSites(a.graph, path, top, label)
		sum.Run.LabelSites(label)
	}
	if spans := loops.NewSpans(a.loops()); !spans.Empty() {
		sum.Loops = critpath.AttributeLoops(path, sum, spans)
	}
	if spans := regions.NewSpans(a.regions()); !spans.Empty() {
		sum.Regions = critpath.AttributeRegions(path, sum, spans)
	}
	return sum
}

// folded returns the critical path folded (critpath.Fold), folding it once.
func (a *analysis) folded() *critpath.Folded {
	if a.fold == nil {
		a.fold = critpath.Fold(a.path)
	}
	return a.fold
}

// loops returns each rank's loops, as the reconstruction saw them.
func (a *analysis) loops() []*loops.RankLoops { return finishOnce(&a.loopRanks, a.loopAggs) }

// regions returns each rank's regions, as the reconstruction saw them.
func (a *analysis) regions() []*regions.RankRegions { return finishOnce(&a.regionRanks, a.regionAggs) }

// finishOnce returns what each aggregator's Finish returns, calling it
// once per aggregator: later calls return *done.
func finishOnce[A interface{ Finish() R }, R any](done *[]R, aggs []A) []R {
	if *done == nil {
		*done = make([]R, len(aggs))
		for i, ag := range aggs {
			(*done)[i] = ag.Finish()
		}
	}
	return *done
}

// writeJSON writes v as indented JSON: the --json output of the commands.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeSummary writes the text summary of critpath and record --critpath:
// what was analysed, where the path went, the model, whether data was
// lost, and the summary's tables.
func writeSummary(w io.Writer, dir string, a *analysis, out string, sum *critpath.Summary, unit critpath.Unit) error {
	fmt.Fprintf(w, "Critical path of %s (written to %s)\n", dir, out)
	if sum.Weights == critpath.WeightsMeasured {
		fmt.Fprintf(w, "Weights: measured (messages and collectives weigh what the run took, clocks aligned by the ClockSync offsets; --weights model for the latency model)\n")
	} else {
		fmt.Fprintf(w, "Latency model: %s\n", a.modelName)
	}
	fmt.Fprintf(w, "%s\n", dataLossLine(a.diags))
	if err := sum.WriteText(w, unit); err != nil {
		return err
	}
	return writeUnfinished(w, a.trace)
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

// writeCritPathFile writes critPath.out to path (see writeOutput) and
// returns the path's summary with its top heaviest items.
func writeCritPathFile(path string, p *critpath.Path, unit critpath.Unit, top int) (sum *critpath.Summary, err error) {
	err = writeOutput(path, func(w io.Writer) error {
		sum, err = critpath.WriteCritPathOutSummary(w, p, unit, top)
		return err
	})
	return sum, err
}
