package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/driver"
	"github.com/mpitrace/mpitrace/analysis/render"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// bigDOTGraph is the number of vertices above which a graph is more than
// Graphviz lays out in reasonable time and memory: dot warns, and draws
// the folded critical path in place of a whole graph that big.
const bigDOTGraph = render.GraphvizLimit

type dotOptions struct {
	Dir          string
	CriticalOnly bool
	Unfold       bool
	MaxVertices  int
	cutFlags
	Model  string // --model file ("" for the embedded default)
	Unit   critpath.Unit
	Output string // -o file ("" or "-": stdout)
	traceFlags
	siteFlags

	unitArg string
}

// cutFlags are --ranks and --window, which cut a big trace (dot, export).
type cutFlags struct {
	// Ranks and Window are the parsed --ranks and --window (nil: all).
	Ranks  render.RankSet
	Window *render.Window

	ranksArg  []string
	windowArg string
}

// add defines the flags; what is what is kept ("draw only operations").
func (c *cutFlags) add(f *pflag.FlagSet, verb, what string) {
	f.StringArrayVar(&c.ranksArg, "ranks", nil, verb+" only these `ranks`: N, A-B, or a list of them (0,2-3)")
	f.StringVar(&c.windowArg, "window", "", verb+" only "+what+" starting in `T0:T1` after their rank's MPI_Init (e.g. 100ms:250ms, :2s, 1s:)")
}

// parse converts the flags given.
func (c *cutFlags) parse(cmd *cobra.Command) error {
	var err error
	c.Ranks, c.Window = nil, nil
	if cmd.Flags().Changed("ranks") {
		if c.Ranks, err = parseRanks("--ranks", c.ranksArg); err != nil {
			return err
		}
	}
	if cmd.Flags().Changed("window") {
		if c.Window, err = parseWindow(c.windowArg); err != nil {
			return err
		}
	}
	return nil
}

// runE is the RunE of a command of options o: the trace directory
// argument, the flags' checks, then runF (tests) or run.
func runE[O any](dir *string, o O, parse func(*cobra.Command) error, runF func(context.Context, O) error, run func(context.Context, O) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		*dir = traceDirArg(args)
		if err := parse(cmd); err != nil {
			return err
		}
		if runF != nil {
			return runF(cmd.Context(), o)
		}
		return run(cmd.Context(), o)
	}
}

func newDotCmd(s *Streams, runF func(context.Context, *dotOptions) error) *cobra.Command {
	opts := &dotOptions{}
	cmd := &cobra.Command{
		Use:   "dot [TRACEDIR] [--critical-only] [--unfold] [--ranks LIST] [--window T0:T1] [--model FILE] [-o FILE]",
		Short: "Draw the task graph in Graphviz DOT, critical path highlighted",
		Long: `Write the MPI task graph of a trace in Graphviz's DOT language, with its
critical path highlighted, for xdot or dot. Nothing but DOT goes to stdout.

The picture:
  - one cluster per rank ("rank N") with the rank's MPI operations in
    program order, each labelled with its MPI function and its duration;
  - MPI_Init, MPI_Finalize and every collective are shared by the ranks and
    drawn outside the clusters; a collective is labelled with its name and
    the latency model's time for it;
  - computation edges (between consecutive calls of a rank, and into and
    out of collectives) are labelled with their measured time; message
    edges (dashed) with the model latency and the bytes: "1.8 us (4096)";
  - the critical path (the longest path from MPI_Init to MPI_Finalize, as
    'mpitrace critpath' finds it) is red and bold; the graph's label gives
    its length and the latency model used.

Big runs make big graphs. To keep them viewable:
  --critical-only   only the critical path; one of more than 300 vertices
                    is folded: a stretch of the path that repeats one
                    body of steps (an iterative loop) is one cluster
                    holding the body once, labelled with its repeat count,
                    total time and share of the path (with --ranks or
                    --window, the part of the path is drawn unfolded)
  --unfold          with --critical-only, every vertex of the path
  --ranks LIST      only these ranks' clusters: a rank N, a range A-B, or a
                    list of them (0,2-3); a message to or from another
                    rank ends at a small "rank N" stub node
  --window T0:T1    only the operations that start between T0 and T1 after
                    their rank's MPI_Init, on each rank's own clock (units
                    ns, us, ms, s; either end may be left out: :2s, 1s:)
They combine, and the graph's label says what was left out. Without
--critical-only, --ranks or --window, a graph of more than 1,000 vertices
(beyond what Graphviz lays out in reasonable time) is drawn as the folded
critical path instead, which stderr says; --unfold draws it whole. Whenever
the graph written has more than 1,000 vertices, stderr says so and what to
do.

Messages and collectives are weighed with the latency model of --model
(written by 'mpitrace calibrate'), else with the default model embedded in
mpitrace. Diagnostics go to stderr; the exit status is 1 when the trace has
errors, and with --strict 3 when it lost data.`,
		Example: `  mpitrace dot traces/ | xdot -
  mpitrace dot traces/ | dot -Tsvg > graph.svg
  mpitrace dot traces/ --critical-only --model model.json -o critpath.dot
  mpitrace dot traces/ --ranks 0-3 --window 1.5s:2s | xdot -
  mpitrace dot traces/ --ranks 0,7 --critical-only | xdot -
  mpitrace dot traces/ --critical-only --unfold -o path.dot`,
		Args: cobra.MaximumNArgs(1),
		RunE: runE(&opts.Dir, opts, opts.parse, runF, func(_ context.Context, o *dotOptions) error { return runDot(o, s) }),
	}
	f := cmd.Flags()
	f.BoolVar(&opts.CriticalOnly, "critical-only", false, "draw only the critical path, its repetitions folded")
	f.BoolVar(&opts.Unfold, "unfold", false, "draw every vertex: do not fold the critical path's repetitions, nor replace a big graph by the folded path")
	opts.cutFlags.add(f, "draw", "operations")
	addModelFlag(f, &opts.Model, "the critical path")
	f.StringVar(&opts.unitArg, "unit", "us", "`unit` of the times in labels: ns, us, ms or s")
	outputFlag(f, &opts.Output, "", "write the DOT to `file` instead of stdout")
	f.IntVar(&opts.MaxVertices, "max-vertices", defaultMaxDOTVertices, "refuse to draw more `vertices` than this unfolded (0: no limit; the picture takes about 3 KB a vertex in memory)")
	f.BoolVar(&opts.Strict, "strict", false, "exit with status 3 when the trace lost data")
	addSiteFlags(f, &opts.siteFlags)
	return cmd
}

// parse checks and converts the flags that need it.
func (o *dotOptions) parse(cmd *cobra.Command) error {
	u, err := critpath.ParseUnit(o.unitArg)
	if err != nil {
		return flagErrorf("--unit %q: want ns, us, ms or s", o.unitArg)
	}
	o.Unit = u
	if o.MaxVertices < 0 {
		return flagErrorf("--max-vertices %d: want 0 (no limit) or more", o.MaxVertices)
	}
	return o.cutFlags.parse(cmd)
}

// parseWindow parses --window: "T0:T1" with units, either end optional.
func parseWindow(s string) (*render.Window, error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(a) == "" && strings.TrimSpace(b) == "" {
		return nil, flagErrorf("--window %q: want T0:T1 with units, e.g. --window 100ms:250ms (or :2s, 1s:)", s)
	}
	parse := func(x string) (time.Duration, error) {
		x = strings.TrimSpace(x)
		if x == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(x)
		if err != nil || d < 0 {
			return 0, flagErrorf("--window %q: %q is not a time with a unit (ns, us, ms, s), e.g. 1.5s", s, x)
		}
		return d, nil
	}
	w := &render.Window{}
	var err error
	if w.Start, err = parse(a); err != nil {
		return nil, err
	}
	if w.End, err = parse(b); err != nil {
		return nil, err
	}
	if strings.TrimSpace(b) != "" && w.End <= w.Start {
		return nil, flagErrorf("--window %q: the end must be after the start", s)
	}
	return w, nil
}

func runDot(opts *dotOptions, s *Streams) error {
	resolver, err := opts.resolver()
	if err != nil {
		return err
	}
	t, err := openTrace(opts.Dir, s)
	if err != nil {
		return err
	}
	if err := checkRanks("--ranks", opts.Ranks, t); err != nil {
		return err
	}
	if opts.Model == "" && s.ErrTTY {
		fmt.Fprintln(s.Err, "mpitrace: using the default latency model; for this machine's, run 'mpitrace calibrate -o model.json -- mpirun -np 4' and pass --model model.json")
	}
	// The streaming replay draws the critical path without the graph, and
	// a part of the graph (--ranks, --window) from what it collects of
	// that part; the graph is built when the picture needs it (the whole
	// graph), or when the replay declines the trace.
	ro := render.DOTOptions{Unit: opts.Unit, CriticalOnly: opts.CriticalOnly, Ranks: opts.Ranks, Window: opts.Window,
		MaxVertices: opts.MaxVertices}
	cut := opts.Ranks != nil || opts.Window != nil
	var part *reconstruct.Cut
	if dotStream {
		part = ro.Cut()
	}
	dopts := driver.Options{Model: opts.Model, Resolver: resolver, Cut: part,
		Stream: dotStream && (cut || opts.CriticalOnly || !opts.Unfold)}
	a, err := analyze(t, dopts, s)
	if err != nil {
		return err
	}
	defer func() { a.Close() }()
	partDrawn := part != nil && part.Graph != nil && a.Graph == nil && a.Steps != nil
	if a.Graph == nil && a.PathErr == nil && !a.NoMPI() && !replayDraws(a.Steps, opts) && !partDrawn {
		if a, err = withGraph(a, dopts); err != nil {
			return err
		}
	}
	if a.Graph == nil && dotReplayDrew != nil {
		dotReplayDrew()
	}
	if a.NoMPI() {
		return fmt.Errorf("%s: a program without MPI (no MPI call recorded, no MPI library in the logs): it has no task graph of MPI calls to draw; 'mpitrace loops %s' shows its loops", t.Dir, t.Dir)
	}
	g, diags, path, pathErr, m, modelName := a.Graph, a.Diags, a.Path, a.PathErr, a.Model, a.ModelName
	// A graph with a cycle (inconsistent data) has no critical path but is
	// worth seeing: it is drawn without one, and the command fails after.
	var cycle *taskgraph.CycleError
	if pathErr != nil && (opts.CriticalOnly || !errors.As(pathErr, &cycle)) {
		reportDiagnostics(s, diags, &traceFlags{})
		return pathErr
	}
	ro.Model, ro.Sites = modelName, a.SiteLabel()
	whole := !opts.CriticalOnly && !cut
	folded := !opts.Unfold && !cut && a.Steps != nil && foldsPath(a.Steps, numNodes(a), opts)
	var drawn int
	switch {
	case folded:
		var how string
		var write func(io.Writer) error
		write, drawn, how = pathPicture(a, ro)
		if whole {
			fmt.Fprintf(s.Err, "mpitrace: the task graph has %d vertices, more than Graphviz lays out (%d): drawing its critical path %s (%d vertices); --unfold draws it whole, --ranks A-B or --window T0:T1 a part of it\n", numNodes(a), bigDOTGraph, how, drawn)
		}
		err = writeOutputTo(s, opts.Output, write)
	default:
		err = writeOutputTo(s, opts.Output, func(w io.Writer) (err error) {
			switch {
			case a.Graph == nil && cut:
				drawn, err = render.WriteCutDOT(w, part.Graph, a.Steps, m, ro)
				return err
			case a.Graph == nil:
				drawn, err = render.WriteStepsDOT(w, a.Steps, m, ro)
				return err
			}
			drawn, err = render.WriteDOTCount(w, g, path, m, ro)
			return err
		})
	}
	var tooBig *render.TooBigError
	if errors.As(err, &tooBig) {
		n := fmt.Sprintf("%d vertices, more than --max-vertices %d", tooBig.Vertices, tooBig.Max)
		if tooBig.AtLeast {
			n = fmt.Sprintf("more than --max-vertices %d vertices", tooBig.Max)
		}
		return fmt.Errorf("%s: the picture would have %s (it is built in memory, about 3 KB a vertex, and Graphviz lays out about %d): %s; --max-vertices 0 lifts the limit", t.Dir, n, bigDOTGraph, tooBigAdvice(opts))
	}
	if err != nil {
		return err
	}
	if drawn > bigDOTGraph {
		fmt.Fprintf(s.Err, "mpitrace: the graph written has %d vertices, more than Graphviz lays out in reasonable time and memory (%d): %s\n", drawn, bigDOTGraph, bigGraphAdvice(folded, opts))
	}
	reportSiteProblems(s, a.Sites())
	if err := reportDiagnostics(s, diags, &opts.traceFlags); err != nil {
		return err
	}
	if pathErr != nil {
		return fmt.Errorf("no critical path (the graph is drawn without one): %w", pathErr)
	}
	return nil
}

// dotStream lets dot draw from the streaming replay (false: the graph
// only, for the tests that compare the two); dotReplayDrew, when set, is
// called when the replay draws.
var (
	dotStream     = true
	dotReplayDrew func()
)

// foldsPath says whether the picture the options ask of a trace whose
// graph has nodes vertices is its path folded (or merged): a path of
// FoldTarget vertices or fewer is drawn as it is; the graph is drawn
// whole when Graphviz can lay it out.
func foldsPath(sp *critpath.StepPath, nodes int, opts *dotOptions) bool {
	return sp.NumSteps > critpath.FoldTarget && (opts.CriticalOnly || nodes > bigDOTGraph)
}

// replayDraws says whether the path sp the replay found draws the
// picture the options ask for without the graph: the critical path
// (folded, merged or as it is) when its steps carry the graph's vertex
// ids; not a part of the graph nor the whole of it (which a graph too big
// to draw whole is, drawn whole, when its path is too short to fold).
func replayDraws(sp *critpath.StepPath, opts *dotOptions) bool {
	if sp == nil || sp.Shape == nil || !sp.Shape.IDs || opts.Ranks != nil || opts.Window != nil {
		return false
	}
	return opts.CriticalOnly || !opts.Unfold && foldsPath(sp, sp.Shape.NumNodes(), opts)
}

// withGraph analyses a's trace again with o, building the graph: for a
// picture the replay does not draw. Its notes are a's: they are not said
// again.
func withGraph(a *driver.Analysis, o driver.Options) (*driver.Analysis, error) {
	a.Close()
	o.Stream = false
	return driver.Analyze(a.Trace, o)
}

// numNodes is the task graph's vertex count, built or not.
func numNodes(a *driver.Analysis) int {
	if a.Graph != nil {
		return a.Graph.NumNodes()
	}
	return a.Steps.Shape.NumNodes()
}

// pathPicture returns the writer of the picture of a's critical path when
// it is too long to draw whole: folded, or merged by call site when its
// iterations differ so that folding leaves more than critpath.FoldTarget
// vertices and the merge draws fewer; with the vertices it draws and how
// it was made ("folded", "merged by call site").
func pathPicture(a *driver.Analysis, ro render.DOTOptions) (write func(io.Writer) error, drawn int, how string) {
	f, err := a.Folded()
	if err != nil {
		return func(io.Writer) error { return err }, 0, "folded"
	}
	drawn = render.FoldedVertices(f)
	if drawn > critpath.FoldTarget {
		sg, err := a.Steps.MergeSteps()
		if err != nil {
			return func(io.Writer) error { return err }, 0, "merged"
		}
		if len(sg.Nodes) < drawn {
			return func(w io.Writer) error { return render.WriteStepGraphDOT(w, sg, a.Model, ro) },
				len(sg.Nodes), "merged by " + sg.By
		}
	}
	return func(w io.Writer) error { return render.WriteFoldedDOT(w, f, a.Model, ro) }, drawn, "folded"
}

// defaultMaxDOTVertices is --max-vertices' default: 100 times what
// Graphviz lays out, about 300 MB of picture.
const defaultMaxDOTVertices = 100_000

// tooBigAdvice says what draws less than an unfolded picture the options
// asked for: the folded path, unless they cut the graph (a cut is drawn
// unfolded), or less of it.
func tooBigAdvice(opts *dotOptions) string {
	if opts.Ranks != nil || opts.Window != nil {
		return "draw fewer --ranks or a shorter --window (a part of the graph is drawn unfolded)"
	}
	return "draw the critical path folded (--critical-only without --unfold), or a part with --ranks A-B or --window T0:T1"
}

// bigGraphAdvice says what draws less than the options did.
func bigGraphAdvice(folded bool, opts *dotOptions) string {
	switch {
	case folded:
		return "the path does not repeat enough to fold, nor merge by call site into fewer; --ranks A-B or --window T0:T1 draw a part of it"
	case opts.CriticalOnly && opts.Ranks == nil && opts.Window == nil:
		return "drop --unfold to fold the path's repetitions, or draw a part of it with --ranks A-B or --window T0:T1"
	case opts.CriticalOnly:
		return "draw fewer ranks or a shorter --window"
	}
	return "--critical-only draws the critical path folded; fewer --ranks or a shorter --window draw less"
}
