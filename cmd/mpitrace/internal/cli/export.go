package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/render"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

type exportOptions struct {
	Dir    string
	Format string
	Output string
	Model  string
	cutFlags
	traceFlags
}

func newExportCmd(s *Streams, runF func(context.Context, *exportOptions) error) *cobra.Command {
	opts := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export [TRACEDIR] --format chrome -o FILE [--ranks LIST] [--window T0:T1]",
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

The file is written as the ranks are read, without holding the trace in
memory. To cut a big trace:
  --ranks LIST      only these ranks (N, A-B, or a list: 0,2-3)
  --window T0:T1    only the slices that start between T0 and T1 after
                    their rank's MPI_Init, on its own clock (ns, us, ms, s;
                    either end may be left out: :2s, 1s:)
Flows whose other end was cut are left out.

Diagnostics go to stderr; the exit status is 1 when the trace has errors,
2 on bad flags, and with --strict 3 when it lost data.`,
		Example: `  mpitrace export traces/ --format chrome -o trace.json
  mpitrace export traces/ -o trace.json --ranks 0-7 --window 1s:1.5s
  mpitrace export traces/ -o - | gzip > trace.json.gz`,
		Args: cobra.MaximumNArgs(1),
		RunE: runE(&opts.Dir, opts, opts.parse, runF, func(o *exportOptions) error { return runExport(o, s) }),
	}
	f := cmd.Flags()
	f.StringVar(&opts.Format, "format", "chrome", "output `format`: chrome (trace-event JSON for Perfetto UI and chrome://tracing)")
	opts.cutFlags.add(f, "export", "slices")
	f.StringVar(&opts.Model, "model", "", "latency model `file` for the critical path (default: the embedded model)")
	outputFlag(f, &opts.Output, "", "write the JSON to `file` ('-': stdout)")
	f.BoolVar(&opts.Strict, "strict", false, "exit with status 3 when the trace lost data")
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
	return o.cutFlags.parse(cmd)
}

// exportPass1 collects, while the trace is read for the task graph, what
// the export needs of each rank's events besides: its clock offset (that
// of its MPI_Init clock synchronisation, else of its MPI_Finalize one)
// and its spans paired.
type exportPass1 struct {
	mu    sync.Mutex
	off   map[int]int64
	spans map[int]*render.SpanEnds
}

func (c *exportPass1) observe(h *tracefmt.Header, _ *tracefmt.Strings, _ string) func(*tracefmt.Event) {
	rank, found, init := h.Rank, false, false
	spans := render.NewSpanEnds()
	c.mu.Lock()
	c.spans[rank] = spans
	c.mu.Unlock()
	return func(ev *tracefmt.Event) {
		spans.Event(ev)
		if ev.Kind != spec.ClockSync || init {
			return
		}
		if ev.Phase() == spec.PhaseInit || !found {
			found, init = true, ev.Phase() == spec.PhaseInit
			c.mu.Lock()
			c.off[rank] = ev.Offset()
			c.mu.Unlock()
		}
	}
}

func runExport(opts *exportOptions, s *Streams) error {
	t, err := openTrace(opts.Dir, s)
	if err != nil {
		return err
	}
	if err := checkRanks("--ranks", opts.Ranks, t); err != nil {
		return err
	}
	pass1 := &exportPass1{off: map[int]int64{}, spans: map[int]*render.SpanEnds{}}
	a, err := analyzeSpans(t, opts.Model, s, pass1.observe, false)
	if err != nil {
		return err
	}
	// A trace without a path (no MPI operation, or a cycle from
	// inconsistent data) is still worth seeing: it is exported without
	// one, and a cycle fails the command after.
	path := a.path
	if a.pathErr != nil && !errors.Is(a.pathErr, critpath.ErrEmpty) {
		fmt.Fprintf(s.Err, "mpitrace: no critical path (exported without one): %v\n", a.pathErr)
	}
	ro := render.ChromeOptions{Ranks: opts.Ranks, Window: opts.Window, Offsets: pass1.off, Spans: pass1.spans,
		Open: func(r int) (tracefmt.Source, func() error, error) {
			rr, err := t.OpenRank(r)
			if err != nil {
				return nil, nil, err
			}
			return rr, rr.Close, nil
		}}
	err = writeOutputTo(s, opts.Output, func(w io.Writer) error { return render.WriteChrome(w, a.graph, path, ro) })
	if err != nil {
		return err
	}
	if err := reportDiagnostics(s, a.diags, &opts.traceFlags); err != nil {
		return err
	}
	if a.pathErr != nil && !errors.Is(a.pathErr, critpath.ErrEmpty) {
		return fmt.Errorf("no critical path (the timeline is written without one): %w", a.pathErr)
	}
	return nil
}
