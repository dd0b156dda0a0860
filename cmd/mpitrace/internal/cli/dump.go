package cli

import (
	"bufio"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/tracefmt"
)

type dumpOptions struct {
	Dir   string
	Ranks []int
	traceFlags
}

func newDumpCmd(s *Streams, runF func(context.Context, *dumpOptions) error) *cobra.Command {
	opts := &dumpOptions{}
	cmd := &cobra.Command{
		Use:   "dump [TRACEDIR] [--rank N]...",
		Short: "Print a trace's events as text, one per line",
		Long: `Print the events of a trace in mpitrace's text form: for each rank its
header (meta lines), its string table, one line per event with its absolute
start time in ns, thread, kind, MPI function and arguments, and its end
record. The text form is lossless: it is what the golden tests use, and it
converts back to a binary trace.

Ranks are printed in order; --rank selects some (repeat it, or give a list).`,
		Example: `  mpitrace dump traces/ --rank 0
  mpitrace dump traces/ --rank 1,3 | grep Send`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = traceDirArg(args)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDump(opts, s)
		},
	}
	cmd.Flags().IntSliceVar(&opts.Ranks, "rank", nil, "print only these `ranks`")
	cmd.Flags().BoolVar(&opts.Strict, "strict", false, "exit with status 3 when the trace lost data")
	return cmd
}

func runDump(opts *dumpOptions, s *Streams) error {
	t, err := openTrace(opts.Dir)
	if err != nil {
		return err
	}
	want := map[int]bool{}
	for _, r := range opts.Ranks {
		if _, ok := t.Rank(r); !ok {
			return flagErrorf("--rank %d: %s has no log for rank %d (ranks 0-%d)", r, opts.Dir, r, t.Size-1)
		}
		want[r] = true
	}
	var diags tracefmt.Diagnostics
	diags.Merge(t.Diagnostics())
	out := bufio.NewWriterSize(s.Out, 1<<16)
	for _, f := range t.Files {
		if len(want) > 0 && !want[f.Rank] {
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
