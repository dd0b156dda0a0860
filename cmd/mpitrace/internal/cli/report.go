package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// reportOptions are the options of the commands that print one analysis
// of a trace as text or JSON (loops, regions).
type reportOptions struct {
	Dir  string
	JSON bool
	Out  string
	By   string
	traceFlags
}

// reportCmd completes cmd, a command that prints one analysis of a trace:
// its argument (the trace directory) and its flags --json, -o, --by rank
// and --strict, into o, the reportOptions of opts. what is what --json
// prints; byRank what --by rank adds. The command calls runF (tests) or,
// without it, run.
func reportCmd[O any](cmd *cobra.Command, opts O, o *reportOptions, what, byRank string, runF func(context.Context, O) error, run func(O) error) *cobra.Command {
	cmd.Args = cobra.MaximumNArgs(1)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		o.Dir = traceDirArg(args)
		if runF != nil {
			return runF(cmd.Context(), opts)
		}
		return run(opts)
	}
	f := cmd.Flags()
	f.BoolVar(&o.JSON, "json", false, "print the "+what+" as JSON")
	f.StringVarP(&o.Out, "output", "o", "-", "write to `file` instead of stdout ('-')")
	f.StringVar(&o.By, "by", "", "add a breakdown: rank ("+byRank+"; JSON has per_rank always)")
	f.BoolVar(&o.Strict, "strict", false, "exit with status 3 when the trace lost data")
	return cmd
}

// report is what a report command read from a trace.
type report struct {
	// json is the --json output; text writes the text output.
	json  any
	text  func(w io.Writer, byRank bool) error
	diags *tracefmt.Diagnostics
}

// runReport checks o's flags, opens the trace, reads it with read, writes
// the report where -o says, and reports the diagnostics.
func runReport(o *reportOptions, s *Streams, read func(t *tracefmt.Trace) (*report, error)) error {
	switch o.By {
	case "", "rank":
	default:
		return flagErrorf("--by %q: the only breakdown is by rank (--by rank)", o.By)
	}
	if err := checkOutputFlag(o.Out); err != nil {
		return err
	}
	t, err := openTrace(o.Dir, s)
	if err != nil {
		return err
	}
	rep, err := read(t)
	if err != nil {
		return err
	}
	err = writeOutputTo(s, o.Out, func(w io.Writer) error {
		if o.JSON {
			return writeJSON(w, rep.json)
		}
		fmt.Fprint(w, dataLossLine(rep.diags))
		return rep.text(w, o.By == "rank")
	})
	if err != nil {
		return err
	}
	return reportDiagnostics(s, rep.diags, &o.traceFlags)
}
