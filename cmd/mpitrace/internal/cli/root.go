// Package cli implements the mpitrace commands. Each command is a thin
// cobra layer: parse flags into an options struct, call the packages that
// do the work, print.
package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/mpitrace/mpitrace/internal/mpicomm"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// annotSignals marks the commands that handle SIGTERM themselves.
const annotSignals = "mpitrace-handles-sigterm"

// handlesSignals marks cmd as one that handles SIGTERM (see run).
func handlesSignals(cmd *cobra.Command) *cobra.Command { return annotate(cmd, annotSignals) }

// annotate marks cmd with annotation key.
func annotate(cmd *cobra.Command, key string) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[key] = "yes"
	return cmd
}

// Version is the mpitrace version.
const Version = "0.1.0"

// Streams are a command's standard streams.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
	// ErrTTY is true when Err is a terminal: progress goes there only then.
	ErrTTY bool
	// OutTTY is true when Out is a terminal: output there removes progress.
	OutTTY bool

	progress *readProgress // of the trace being read (progress.go)
	// forwarded: Err and Out are pipes a launcher copies to its terminal
	// (--mpi), errWidth that terminal's columns (0: unknown).
	forwarded bool
	errWidth  int
}

func systemStreams() *Streams {
	return &Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, ErrTTY: isTerminal(os.Stderr), OutTTY: isTerminal(os.Stdout)}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Main runs mpitrace with the given arguments and returns the exit status.
func Main(args []string) int {
	return run(context.Background(), args, systemStreams())
}

func run(ctx context.Context, args []string, s *Streams) int {
	root := newRootCmd(s)
	root.SetArgs(args)
	defer s.stopProgress()
	// The commands that start processes (record, calibrate, recorder build)
	// turn SIGTERM into a cancellation they pass on; the others keep
	// SIGTERM's default action, so that a cancelled job stops them at once.
	if cmd, _, err := root.Find(args); err == nil && cmd.Annotations[annotSignals] != "" {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM)
		defer stop()
	}
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	// Under --mpi, one line for the whole job: process 0's, every
	// process with the same status (runMPI has the others' agree with
	// process 0's; some launchers combine the statuses of the processes).
	quiet := false
	if rank, _, launched := mpicomm.JobSize(os.Getenv); launched && rank != 0 && mpiAsked(cmd, args) {
		quiet = true
	}
	say := func(format string, args ...any) {
		if !quiet {
			fmt.Fprintf(s.Err, format, args...)
		}
	}
	var ec *ExitCodeError
	if errors.As(err, &ec) {
		if ec.Err != nil {
			say("mpitrace: %s\n", ec.Err)
		}
		return ec.Code
	}
	if quiet {
		// A failure before MPI (a bad flag): process 0 says it, and a
		// launcher that stops the job when a process fails (Open MPI's)
		// must not stop process 0 before it did.
		time.Sleep(aloneDelay)
	}
	say("mpitrace: %s\n", err)
	var fe *FlagError
	if errors.As(err, &fe) || isCobraUsageError(err) {
		if cmd != nil {
			say("usage: %s\nRun '%s --help' for more.\n", cmd.UseLine(), cmd.CommandPath())
		}
		return ExitUsage
	}
	return exitCode(err)
}

// mpiAsked reports whether the command line asked for --mpi: the flag
// parsed, or, when parsing stopped at a bad flag before it, the word.
func mpiAsked(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		if mpi, _ := cmd.Flags().GetBool("mpi"); mpi {
			return true
		}
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--mpi" || strings.HasPrefix(a, "--mpi=") {
			return true
		}
	}
	return false
}

// isCobraUsageError recognises cobra's own flag and argument errors.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand flag", "flag needs an argument",
		"invalid argument", "accepts ", "requires at least", "requires at most", "bad flag syntax", "if any flags in the group"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func newRootCmd(s *Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "mpitrace",
		Short: "Record MPI programs and find their critical path",
		Long: `mpitrace records what every rank of an MPI program does into compact
per-rank logs, and analyses them offline: it rebuilds the program's task
graph and finds its critical path, the chain of computation and messages
that decides the run time.

  mpitrace record -- mpirun -np 4 ./app      record a run into traces/
  mpitrace critpath traces/                  the critical path -> critPath.out
  mpitrace dot traces/ | xdot -              the task graph, critical path in red
  mpitrace calibrate -- mpirun -np 4         this machine's latency model
  mpitrace stats traces/                     per-function time and bytes (mpiP-like)
  mpitrace loops traces/                     instrumented loops: sampled iterations, estimates
  mpitrace regions traces/                   regions and Kokkos kernels across ranks: time, imbalance
  mpitrace check traces/ --baseline b.json  compare with a baseline (CI): exit 1 on a regression
  mpitrace dump traces/ --rank 0             the events, one per line

Commands that read traces take the trace directory as their argument and
default to traces/.`,
		Version: Version,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if mpi, _ := cmd.Flags().GetBool("mpi"); cmd.Annotations[annotTraces] != "" && !mpi {
				if err := mpiJobError(cmd, os.Getenv); err != nil {
					return err
				}
			}
			warnDeprecated(cmd, s)
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &FlagError{Err: err} })
	root.CompletionOptions.DisableDefaultCmd = true
	commandGroup(root)
	root.SetHelpCommand(newHelpCmd())
	root.AddCommand(
		handlesSignals(newRecordCmd(s, nil)),
		newRecorderCmd(s),
		readsTraces(newDumpCmd(s, nil)),
		readsTraces(newStatsCmd(s, nil)),
		handlesSignals(newCalibrateCmd(s, nil)),
		readsTraces(newDotCmd(s, nil)),
		readsTraces(newExportCmd(s, nil)),
		readsTraces(newCritpathCmd(s, nil)),
		readsTraces(newLoopsCmd(s, nil)),
		readsTraces(newRegionsCmd(s, nil)),
		readsTraces(newCheckCmd(s, nil)),
		newWrapCmd(s, nil),
		newInstrumentCmd(s, nil),
		newCCCmd(s, nil),
	)
	return root
}

// commandGroup makes cmd, a command that holds subcommands, print its help
// when run alone and refuse an unknown subcommand in one line (cobra's
// own behaviour: a usage message over several lines at the top, and at a
// lower level the help with status 0).
func commandGroup(cmd *cobra.Command) *cobra.Command {
	cmd.Args = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return unknownCommand(c, args[0])
		}
		return nil
	}
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	cmd.SuggestionsMinimumDistance = 2
	return cmd
}

// newHelpCmd is "mpitrace help [command]", refusing an unknown command as
// the commands themselves do.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			cmd, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				parent := root
				if cmd != nil {
					parent = cmd
				}
				return unknownCommand(parent, rest[0])
			}
			return cmd.Help()
		},
	}
}

// unknownCommand is the usage error for a subcommand parent does not have:
// one line with the commands it has, or the ones the name resembles.
func unknownCommand(parent *cobra.Command, name string) error {
	what := fmt.Sprintf("unknown command %q", name)
	if parent.HasParent() {
		what += fmt.Sprintf(" for %q", parent.CommandPath())
	}
	if like := parent.SuggestionsFor(name); len(like) > 0 {
		return &ExitCodeError{Code: ExitUsage, Err: fmt.Errorf("%s: did you mean %s? ('%s --help' lists the commands)",
			what, strings.Join(like, " or "), parent.CommandPath())}
	}
	var names []string
	for _, c := range parent.Commands() {
		if c.IsAvailableCommand() && c.Name() != "help" {
			names = append(names, c.Name())
		}
	}
	return &ExitCodeError{Code: ExitUsage, Err: fmt.Errorf("%s: the commands are %s ('%s --help' says more)",
		what, strings.Join(names, ", "), parent.CommandPath())}
}

// traceDirArg returns the trace directory argument, traces/ by default.
func traceDirArg(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return "traces"
}
