package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/driver"
	"github.com/mpitrace/mpitrace/analysis/render"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
)

type exportOptions struct {
	Dir    string
	Format string
	Output string
	Model  string
	// Critical marks the critical path (the task graph is built first, as
	// by critpath); without, the export needs memory independent of the
	// trace's length.
	Critical bool
	cutFlags
	traceFlags
	mpi mpiFlags
}

func newExportCmd(s *Streams, runF func(context.Context, *exportOptions) error) *cobra.Command {
	opts := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export [TRACEDIR] --format chrome -o FILE [--ranks LIST] [--window T0:T1] [--critical=false]",
		Short: "Write a timeline for Perfetto UI or chrome://tracing (Chrome trace-event JSON)",
		Long: `Write the trace as a timeline in the Chrome trace-event JSON format, which
Perfetto UI (https://ui.perfetto.dev, "Open trace file") and chrome://tracing
open. In the file:
  - a process per rank ("rank N", pid N) and a thread per recorder thread
    ("thread T", tid T); each MPI call is a slice with its function's name,
    on the common clock (the ClockSync offsets of MPI_Init applied), with
    its peer, tag, bytes and communicator in args;
  - the loops, sampled iterations, regions, kernels, copies and sections
    recorded around the calls are slices enclosing them;
  - a flow arrow per matched message, from the send's slice to the slice
    that completed the receive (the receive, or the wait or test that
    completed the Irecv), and per collective call, from each member's
    slice to the slice of the member that arrived last;
  - the critical path ('mpitrace critpath'): its MPI calls have
    args.critical = true, and a process "critical path" (pid: the world
    size) lays the path out step after step from MPI_Init, each slice as
    long as its share of the path's length.

The file is written streaming: the ranks are read merged by time and the
messages matched as they go. The critical path is found first, as
'mpitrace critpath' finds it, in the task graph (about 60 bytes per
event, what critpath needs); only the path is kept to write the file.
--critical=false leaves the path out and skips the graph: memory that
does not grow with the trace's length (a 100-million-event trace fits in
the memory of a small one). To cut a big trace:
  --ranks LIST      only these ranks (N, A-B, or a list: 0,2-3)
  --window T0:T1    only the slices that start between T0 and T1 after
                    their rank's MPI_Init, on its own clock (ns, us, ms, s;
                    either end may be left out: :2s, 1s:)
Flows whose other end was cut are left out.

Diagnostics go to stderr; the exit status is 1 when the trace has errors,
2 on bad flags, and with --strict 3 when it lost data.`,
		Example: `  mpitrace export traces/ --format chrome -o trace.json
  mpitrace export traces/ -o trace.json --ranks 0-7 --window 1s:1.5s
  mpitrace export traces/ -o - | gzip > trace.json.gz
  mpitrace export traces/ -o trace.json --critical=false   # a huge trace`,
		Args: cobra.MaximumNArgs(1),
		RunE: runE(&opts.Dir, opts, opts.parse, runF, func(ctx context.Context, o *exportOptions) error { return runExport(ctx, o, s) }),
	}
	f := cmd.Flags()
	f.StringVar(&opts.Format, "format", "chrome", "output `format`: chrome (trace-event JSON for Perfetto UI and chrome://tracing)")
	opts.cutFlags.add(f, "export", "slices")
	addModelFlag(f, &opts.Model, "the critical path")
	f.BoolVar(&opts.Critical, "critical", true, "mark the critical path (builds the task graph first, as critpath does); --critical=false needs memory independent of the trace's length")
	outputFlag(f, &opts.Output, "", "write the JSON to `file` ('-': stdout)")
	f.BoolVar(&opts.Strict, "strict", false, "exit with status 3 when the trace lost data")
	addMPIFlags(f, &opts.mpi)
	return cmd
}

// parse checks and converts the flags that need it.
func (o *exportOptions) parse(cmd *cobra.Command) error {
	if o.Format != "chrome" {
		return flagErrorf("--format %q: the only format is chrome (--format chrome)", o.Format)
	}
	if !cmd.Flags().Changed("output") && !cmd.Flags().Changed("out") {
		return flagErrorf("name the output: -o trace.json (or -o - for stdout)")
	}
	if err := checkOutputFlag(o.Output); err != nil {
		return err
	}
	if err := o.mpi.check(); err != nil {
		return err
	}
	return o.cutFlags.parse(cmd)
}

func runExport(ctx context.Context, opts *exportOptions, s *Streams) error {
	if opts.mpi.MPI {
		// The job finds the path; process 0 writes the timeline, one
		// stream merged by time from every rank's log.
		return runMPI(ctx, s, opts.Dir, &opts.mpi, func(j *driver.Job, s *Streams) error {
			if err := checkRanks("--ranks", opts.Ranks, j.Trace); err != nil {
				return err
			}
			if !opts.Critical {
				if j.Process() != 0 {
					return nil
				}
				return streamExport(j.Trace, opts, s, nil, nil)
			}
			a, err := j.Analyze(exportAnalysis(opts.Model))
			if a == nil || err != nil {
				return err
			}
			sayNote(a, s)
			return exportWith(j.Trace, opts, s, a)
		})
	}
	t, err := openTrace(opts.Dir, s)
	if err != nil {
		return err
	}
	if err := checkRanks("--ranks", opts.Ranks, t); err != nil {
		return err
	}
	if !opts.Critical {
		return streamExport(t, opts, s, nil, nil)
	}
	a, err := analyze(t, exportAnalysis(opts.Model), s)
	if err != nil {
		return err
	}
	return exportWith(t, opts, s, a)
}

// exportAnalysis is how export analyses a trace for its path: as
// critpath, without the loops' and regions' spans.
func exportAnalysis(model string) driver.Options {
	return driver.Options{Model: model, NoSpans: true, Stream: true}
}

// exportWith writes the timeline of trace t with the path of analysis a
// (which it closes).
func exportWith(t *tracefmt.Trace, opts *exportOptions, s *Streams, a *driver.Analysis) error {
	path, diags, pathErr, done, err := exportPath(a)
	if err != nil {
		return err
	}
	defer done()
	// A trace without a path (no MPI operation, or a cycle from
	// inconsistent data) is still worth seeing: it is exported without
	// one, and a cycle fails the command after.
	if pathErr != nil {
		fmt.Fprintf(s.Err, "mpitrace: no critical path (exported without one): %v\n", pathErr)
	}
	if err := streamExport(t, opts, s, path, diags); err != nil {
		return err
	}
	if pathErr != nil {
		return fmt.Errorf("no critical path (the timeline is written without one): %w", pathErr)
	}
	return nil
}

// exportPath returns what the export needs of the critical path of
// analysis a (exportAnalysis: the streaming replay, or the task graph
// where the trace needs it, as critpath finds it): the path (nil without
// one: pathErr says why, nil for a trace without MPI operations),
// reconstruction's diagnostics, and what releases the replay's result
// once the export is written (the path's track is read from it again). A
// graph is released before it returns: the export then needs no more
// memory than critpath. a is closed on an error, else by done.
func exportPath(a *driver.Analysis) (_ *render.ChromePath, _ *tracefmt.Diagnostics, pathErr error, done func(), err error) {
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()
	if exportGraphBuilt != nil && a.Graph != nil {
		exportGraphBuilt(a.Graph)
	}
	var path *render.ChromePath
	if a.Steps != nil {
		if path, err = render.NewChromePath(a.Steps); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	diags := a.Diags
	if a.PathErr != nil && !errors.Is(a.PathErr, critpath.ErrEmpty) {
		pathErr = a.PathErr
	}
	// The graph is unreachable from here on; give its memory back before
	// the stream's buffers are allocated.
	a.Graph, a.Path, a.Steps = nil, nil, nil
	debug.FreeOSMemory()
	ok = true
	return path, diags, pathErr, a.Close, nil
}

// exportGraphBuilt, when not nil, is shown the graph exportPath builds
// (for the test that it is released).
var exportGraphBuilt func(*taskgraph.Graph)

// openRankOf returns what opens the ranks of t for the render package;
// with diags, each reader's diagnostics are added to diags when it is
// closed; with sp, each reader spools its blocks there.
func openRankOf(t *tracefmt.Trace, diags *tracefmt.Diagnostics, sp *tracefmt.Spool) func(r int) (tracefmt.Source, func() error, error) {
	return func(r int) (tracefmt.Source, func() error, error) {
		rr, err := t.OpenRank(r)
		if err != nil {
			return nil, nil, err
		}
		if sp != nil {
			rr.SpoolTo(sp)
		}
		if diags == nil {
			return rr, rr.Close, nil
		}
		return rr, func() error {
			diags.Merge(rr.Diagnostics())
			return rr.Close()
		}, nil
	}
}

// streamExport writes the file with render.StreamChrome, marking path
// when not nil. With diags (the default mode), those are the diagnostics
// reported: reconstruction's, of the pass that computed the path.
// Without (--critical=false: the graph is not built), they are those of
// reading the trace and of tracefmt.Validator's checks of each rank's
// events (in the first pass).
func streamExport(t *tracefmt.Trace, opts *exportOptions, s *Streams, path *render.ChromePath, diags *tracefmt.Diagnostics) error {
	var ranks []int
	for _, f := range t.Files {
		ranks = append(ranks, f.Header.Rank)
	}
	slices.Sort(ranks)
	so := render.StreamOptions{Ranks: opts.Ranks, Window: opts.Window, Size: t.Size, Logged: ranks, Path: path, ClockGroups: t.ClockGroups()}
	// The second pass reads every rank at once: with many ranks, their
	// readers spool their blocks (256 KiB each as the recorder writes
	// them) to a temporary file and hold a window of a few KiB each.
	var sp *tracefmt.Spool
	if len(ranks) >= exportSpoolRanks {
		sp = tracefmt.NewSpool("")
		defer sp.Close()
	}
	// again reports whether rank r was opened before: the second pass.
	opened := map[int]bool{}
	again := func(r int) bool {
		seen := opened[r]
		opened[r] = true
		return seen
	}
	if diags != nil {
		so.Open = func(r int) (tracefmt.Source, func() error, error) {
			if again(r) {
				return openRankOf(t, nil, sp)(r)
			}
			return openRankOf(t, nil, nil)(r)
		}
		if err := writeOutputTo(s, opts.Output, func(w io.Writer) error { return render.StreamChrome(w, so) }); err != nil {
			return err
		}
		return reportDiagnostics(s, diags, &opts.traceFlags)
	}
	diags = &tracefmt.Diagnostics{}
	diags.Merge(t.Diagnostics())
	var readDiags, checkDiags tracefmt.Diagnostics
	so.Open = func(r int) (tracefmt.Source, func() error, error) {
		if again(r) {
			// The second pass's readers report the damage.
			return openRankOf(t, &readDiags, sp)(r)
		}
		rr, err := t.OpenRank(r)
		if err != nil {
			return nil, nil, err
		}
		file := ""
		if f, ok := t.Rank(r); ok {
			file = f.Path
		}
		vs := &validatingSource{RankReader: rr, v: tracefmt.NewValidator(rr.Header(), rr.Strings(), file)}
		return vs, func() error {
			for _, d := range vs.v.Finish().All() {
				if streamCodes[d.Code] {
					checkDiags.Add(d)
				}
			}
			return rr.Close()
		}, nil
	}
	if err := writeOutputTo(s, opts.Output, func(w io.Writer) error { return render.StreamChrome(w, so) }); err != nil {
		return err
	}
	diags.Merge(&readDiags)
	diags.Merge(&checkDiags)
	return reportDiagnostics(s, diags, &opts.traceFlags)
}

// exportSpoolRanks is the number of ranks from which the export's second
// pass spools its readers' blocks (tests lower it).
var exportSpoolRanks = 64

// streamCodes are the codes of tracefmt.Validator's diagnostics that
// export --critical=false reports: those reconstruction reports too, so
// that a trace fails export the same way with and without the graph as
// far as the stream can tell.
var streamCodes = map[string]bool{tracefmt.CodeUnknownFn: true, tracefmt.CodeUndefinedComm: true,
	tracefmt.CodeUnknownRequest: true, tracefmt.CodeRequestReused: true}

// validatingSource is a rank's reader whose events also go through a
// tracefmt.Validator.
type validatingSource struct {
	*tracefmt.RankReader
	v *tracefmt.Validator
}

func (s *validatingSource) Next() bool {
	if !s.RankReader.Next() {
		return false
	}
	s.v.Event(s.RankReader.Event())
	return true
}
