package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
)

type critpathOptions struct {
	Dir   string
	Out   string
	Model string
	Unit  string
	JSON  bool
	Top   int
	traceFlags
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

The path goes to critPath.out (-o; '-' for stdout), one item per line,
alternating vertex and edge: a vertex is the MPI function name and the rank
(-1 for MPI_Init, MPI_Finalize and collectives), a computation edge its time
rounded to an integer in --unit, a message edge its size in bytes. A summary
goes to stdout: the path's length against the measured run time, its share
by rank, by MPI function, computation against communication, and its
heaviest edges.`,
		Example: `  mpitrace critpath traces/
  mpitrace critpath traces/ -o critPath.out --model model.json --unit ms
  mpitrace critpath traces/ --json | jq .summary.by_rank`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = traceDirArg(args)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCritpath(opts, s)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Out, "out", "o", "critPath.out", "`file` for the critical path ('-': stdout, no summary)")
	f.StringVar(&opts.Model, "model", "", "latency model `file` from mpitrace calibrate (default: the embedded model)")
	f.StringVar(&opts.Unit, "unit", "us", "unit of computation edges in critPath.out and the summary: ns, us, ms or s")
	f.BoolVar(&opts.JSON, "json", false, "print the summary and the path as JSON")
	f.IntVar(&opts.Top, "top", 10, "heaviest edges to list in the summary")
	f.BoolVar(&opts.Strict, "strict", false, "exit with status 3 when the trace lost data")
	return cmd
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
	// pathErr says why there is no path (no operations, or inconsistent
	// data making a cycle); the graph is still there.
	pathErr error
}

// analyze rebuilds the task graph of an opened trace and looks for its
// critical path with the latency model of modelPath (or the default).
func analyze(t *tracefmt.Trace, modelPath string, s *Streams) (*analysis, error) {
	a := &analysis{trace: t}
	var err error
	if a.model, a.modelName, err = loadModel(modelPath); err != nil {
		return nil, err
	}
	if s.ErrTTY {
		fmt.Fprintf(s.Err, "mpitrace: reading %d ranks of %s...\r", len(t.Files), t.Dir)
	}
	a.graph, a.diags, err = reconstruct.Build(t, reconstruct.Options{})
	if s.ErrTTY {
		fmt.Fprintf(s.Err, "\033[K")
	}
	if err != nil {
		return nil, err
	}
	a.path, a.pathErr = critpath.Compute(a.graph, a.model)
	return a, nil
}

// analyzePath is analyze for the commands that need the path: it opens dir
// and fails, after the diagnostics that say why, when there is no path.
func analyzePath(dir, modelPath string, s *Streams) (*analysis, error) {
	t, err := openTrace(dir)
	if err != nil {
		return nil, err
	}
	a, err := analyze(t, modelPath, s)
	if err != nil {
		return nil, err
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
	if opts.Out == "" {
		return flagErrorf("-o needs a file name (or - for stdout)")
	}
	a, err := analyzePath(opts.Dir, opts.Model, s)
	if err != nil {
		return err
	}
	if opts.Out == "-" {
		w := bufio.NewWriter(s.Out)
		if err := critpath.WriteCritPathOut(w, a.path, unit); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
	} else if err := writeCritPathFile(opts.Out, a.path, unit); err != nil {
		return err
	}
	sum := critpath.Summarize(a.graph, a.path, opts.Top)
	switch {
	case opts.Out == "-":
	case opts.JSON:
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		err = enc.Encode(struct {
			Trace   string            `json:"trace"`
			Model   string            `json:"model"`
			Unit    string            `json:"unit"`
			Output  string            `json:"critpath_out"`
			Summary *critpath.Summary `json:"summary"`
		}{opts.Dir, a.modelName, unit.String(), opts.Out, sum})
	default:
		err = writeSummary(s.Out, opts.Dir, a.modelName, opts.Out, sum, unit)
	}
	if err != nil {
		return err
	}
	return reportDiagnostics(s, a.diags, &opts.traceFlags)
}

func writeSummary(w io.Writer, dir, model, out string, sum *critpath.Summary, unit critpath.Unit) error {
	fmt.Fprintf(w, "Critical path of %s (written to %s)\n", dir, out)
	fmt.Fprintf(w, "Latency model: %s\n\n", model)
	return sum.WriteText(w, unit)
}

// writeCritPathFile writes critPath.out through a temporary file, so a
// failed run never leaves half a file. It streams: the file of a long path
// is bigger than the path in memory.
func writeCritPathFile(path string, p *critpath.Path, unit critpath.Unit) error {
	err := writeFileAtomicFunc(path, func(w io.Writer) error { return critpath.WriteCritPathOut(w, p, unit) })
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, unwrapPathError(err))
	}
	return nil
}
