package cli

import (
	"bufio"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/analysis/render"
	"github.com/mpitrace/mpitrace/tracefmt"
)

type dumpOptions struct {
	Dir   string
	Ranks render.RankSet // nil: all
	traceFlags

	ranksArg []string
}

func newDumpCmd(s *Streams, runF func(context.Context, *dumpOptions) error) *cobra.Command {
	opts := &dumpOptions{}
	cmd := &cobra.Command{
		Use:   "dump [TRACEDIR] [--rank LIST]...",
		Short: "Print a trace's events as text, one per line",
		Long: `Print the events of a trace in mpitrace's text form: for each rank its
header (meta lines), its string table, one line per event with its absolute
start time in ns, thread, kind, MPI function and arguments, and its end
record. The text form is lossless: it is what the golden tests use, and it
converts back to a binary trace.

Ranks are printed in order; --rank selects some: a rank N, a range A-B, or
a list of them (0,2-3), as dot --ranks takes them; it may be repeated.`,
		Example: `  mpitrace dump traces/ --rank 0
  mpitrace dump traces/ --rank 1,3 | grep Send
  mpitrace dump traces/ --rank 4-7`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = traceDirArg(args)
			opts.Ranks = nil
			if cmd.Flags().Changed("rank") {
				var err error
				if opts.Ranks, err = parseRanks("--rank", opts.ranksArg); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDump(opts, s)
		},
	}
	cmd.Flags().StringArrayVar(&opts.ranksArg, "rank", nil, "print only these `ranks`: N, A-B, or a list of them (0,2-3)")
	cmd.Flags().BoolVar(&opts.Strict, "strict", false, "exit with status 3 when the trace lost data")
	return cmd
}

func runDump(opts *dumpOptions, s *Streams) error {
	t, err := openTrace(opts.Dir, s)
	if err != nil {
		return err
	}
	if err := checkRanks("--rank", opts.Ranks, t); err != nil {
		return err
	}
	for _, rr := range opts.Ranks {
		for r := rr.First; r <= rr.Last; r++ {
			if _, ok := t.Rank(r); !ok {
				return flagErrorf("--rank %s: %s has no log for rank %d", opts.Ranks, opts.Dir, r)
			}
		}
	}
	var diags tracefmt.Diagnostics
	diags.Merge(t.Diagnostics())
	out := bufio.NewWriterSize(s.Out, 1<<16)
	for _, f := range t.Files {
		if opts.Ranks != nil && !opts.Ranks.Contains(f.Rank) {
			continue
		}
		r, err := t.OpenRank(f.Rank)
		if err != nil {
			return err
		}
		err = tracefmt.WriteText(out, r)
		diags.Merge(r.Diagnostics())
		r.Close()
		if err != nil {
			out.Flush()
			return fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	return reportDiagnostics(s, &diags, &opts.traceFlags)
}
