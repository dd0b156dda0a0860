package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/analysis/loops"
	"github.com/mpitrace/mpitrace/tracefmt"
)

type loopsOptions struct{ reportOptions }

func newLoopsCmd(s *Streams, runF func(context.Context, *loopsOptions) error) *cobra.Command {
	opts := &loopsOptions{}
	return reportCmd(&cobra.Command{
		Use:   "loops [TRACEDIR] [--json] [--by rank] [-o FILE]",
		Short: "Instrumented loops: iterations, sampled iteration times, estimated against measured time",
		Long: `Analyse the loop events of a trace recorded from a program with loop markers
('mpitrace cc', or recorder/c/mpitrace.h). For every loop, identified by
file:line:col and by the instrumented loops around it (its depth and its
parent), over all ranks and threads: its executions, its iterations (the
exact totals the recorder counts), the sampled iterations, the time per
sampled iteration (mean, p50, p95) and the counters per iteration, the
estimated total time (mean × iterations) with a 95% confidence interval,
the measured time (sum of each execution's end minus begin), and the
sampling quality: estimate / measured, and whether the measured time lies
in the interval.

A nested loop is recorded only inside sampled iterations of its parent;
for it the output adds run-wide estimates by inverse-probability weighting
(docs/loops-analysis.md says how).

--by rank adds a table per rank; --json prints one JSON object with every
loop, its per-rank figures and the trace's diagnostics (docs/cli.md gives
the schema). -o writes the output to a file instead of stdout.

Loop events that do not nest (an iteration end without its begin, a loop
left open) are reported as diagnostics on stderr and left out. The exit
status is 1 when the trace has errors, and with --strict 3 when it lost
data.`,
		Example: `  mpitrace loops traces/
  mpitrace loops traces/ --by rank
  mpitrace loops traces/ --json | jq '.loops[] | {location, quality}'`,
	}, opts, &opts.reportOptions, "loops", "a table per rank", runF, func(o *loopsOptions) error { return runLoops(o, s) })
}

// loopCodes are the validation codes of loop nesting: the loops command
// reports these (and not the validator's MPI checks, which are the task
// graph's business).
var loopCodes = []string{tracefmt.CodeUnknownFile, tracefmt.CodeLoopEndUnopened, tracefmt.CodeIterOutsideLoop,
	tracefmt.CodeIterEndUnopened, tracefmt.CodeIterUnclosed, tracefmt.CodeLoopCount, tracefmt.CodeLoopUnclosed}

// readLoops aggregates the loops of every rank of t, and returns the
// diagnostics of reading them and of their nesting.
func readLoops(t *tracefmt.Trace, s *Streams) (*loops.Report, *tracefmt.Diagnostics, error) {
	if s.ErrTTY {
		fmt.Fprintf(s.Err, "mpitrace: reading %d ranks of %s...\r", len(t.Files), t.Dir)
	}
	var (
		mu    sync.Mutex
		ranks []*loops.RankLoops
		found = map[int]*tracefmt.Diagnostics{}
	)
	err := t.ForEachRank(0, func(r *tracefmt.RankReader) error {
		a := loops.NewAggregator(r.Header(), r.Strings())
		v := tracefmt.NewValidator(r.Header(), r.Strings(), r.Name())
		for r.Next() {
			ev := r.Event()
			a.Event(ev)
			v.Event(ev)
		}
		var d tracefmt.Diagnostics
		for _, x := range v.Finish().All() {
			if slices.Contains(loopCodes, x.Code) {
				d.Add(x)
			}
		}
		rl := a.Finish()
		mu.Lock()
		ranks = append(ranks, rl)
		found[r.Rank()] = &d
		mu.Unlock()
		return r.Err()
	})
	if s.ErrTTY {
		fmt.Fprintf(s.Err, "\033[K")
	}
	if err != nil {
		return nil, nil, err
	}
	diags := &tracefmt.Diagnostics{}
	diags.Merge(t.Diagnostics())
	for _, f := range t.Files {
		diags.Merge(found[f.Rank])
	}
	return loops.Merge(ranks), diags, nil
}

func runLoops(opts *loopsOptions, s *Streams) error {
	return runReport(&opts.reportOptions, s, func(t *tracefmt.Trace) (*report, error) {
		rep, diags, err := readLoops(t, s)
		if err != nil {
			return nil, err
		}
		return &report{
			json: struct {
				Trace string `json:"trace"`
				*loops.Report
				Diagnostics *diagnosticsJSON `json:"diagnostics"`
			}{opts.Dir, rep, newDiagnosticsJSON(diags)},
			text: func(w io.Writer, byRank bool) error {
				return loops.WriteText(w, rep, loops.TextOptions{ByRank: byRank})
			},
			diags: diags,
		}, nil
	})
}
