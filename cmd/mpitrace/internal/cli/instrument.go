package cli

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"
)

// defaultChance matches instrument.DefaultChance (that package needs cgo;
// this one must build without it).
const defaultChance = 0.01

type instrumentOptions struct {
	Chance     float64
	Output     string
	Preprocess bool
	File       string
	CPPFlags   []string // after --, for --preprocess
}

func newInstrumentCmd(s *Streams, runF func(context.Context, *instrumentOptions) error) *cobra.Command {
	opts := &instrumentOptions{}
	cmd := &cobra.Command{
		Use:   "instrument [--chance P] [-o OUT] [--preprocess] FILE.c|.cc|.cpp|.cxx|.C [-- CPPFLAGS...]",
		Short: "Write a C or C++ source with loop markers on every loop",
		Long: `Write FILE with mpitrace's loop markers (mpitrace.h) around every for,
while, do-while and range-for loop, to stdout or to -o OUT. Only text is
inserted, on the lines of the loops, and a #line directive keeps the
original file and line numbers in diagnostics and debug information.
Loops that cannot be wrapped safely (code jumps into them, a preprocessor
conditional splits them, a constexpr function...) are left alone with a
note on stderr, file:line: why.

With --preprocess the compiler's preprocessor ($CC or cc, $CXX or c++ for
C++; the flags after -- are passed to it) runs first, so loops written as
macros are instrumented too; only the loops of FILE itself are.

Build the result with -I pointing at mpitrace.h (mpitrace cc does all of
this on the fly: see docs/instrument.md).`,
		Example: `  mpitrace instrument stencil.c -o stencil.inst.c
  mpitrace instrument --chance 0.1 solver.cpp > solver.inst.cpp
  mpitrace instrument --preprocess kernel.c -- -Iinclude -DN=64`,
		DisableFlagsInUseLine: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if n := cmd.ArgsLenAtDash(); n >= 0 && n != 1 || n < 0 && len(args) != 1 {
				return flagErrorf("instrument takes one source file")
			}
			if n := cmd.ArgsLenAtDash(); n >= 0 && !opts.Preprocess {
				return flagErrorf("flags after -- are for --preprocess")
			}
			return checkChance(opts.Chance)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			opts.CPPFlags = args[1:]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runInstrument(cmd.Context(), opts, s)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&opts.Chance, "chance", defaultChance, "probability that an iteration is sampled (MPITRACE_LOOP_CHANCE overrides it at run time)")
	f.StringVarP(&opts.Output, "output", "o", "", "write to `file` instead of stdout")
	f.BoolVar(&opts.Preprocess, "preprocess", false, "instrument the preprocessor's output (catches loops written as macros)")
	return cmd
}

type ccOptions struct {
	Chance     float64
	Preprocess bool
	Args       []string
}

func newCCCmd(s *Streams, runF func(context.Context, *ccOptions) error) *cobra.Command {
	opts := &ccOptions{}
	cmd := &cobra.Command{
		Use:   "cc [--chance P] [--preprocess] -- COMPILER ARGS...",
		Short: "Run a compiler on sources instrumented on the fly",
		Long: `Run COMPILER ARGS with every C and C++ source among ARGS instrumented
(as mpitrace instrument does) into a temporary directory, -iquote for the
original's directory, -I for mpitrace.h and, when the command links, -ldl.
Everything else is the compiler's: its output, messages and exit status.
Commands that compile nothing (-E, -M, --version, linking objects...) run
unchanged but for -ldl on a link. A build system switches with
CC="mpitrace cc -- mpicc" (see docs/instrument.md).`,
		Example: `  mpitrace cc -- mpicc -O2 -o app a.c b.c
  mpitrace cc --chance 0.1 -- mpicxx -c solver.cpp
  make CC="mpitrace cc -- mpicc"`,
		DisableFlagsInUseLine: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return flagErrorf("name the compiler after --: mpitrace cc -- mpicc -c a.c")
			}
			return checkChance(opts.Chance)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCC(cmd.Context(), opts, s)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	f.Float64Var(&opts.Chance, "chance", defaultChance, "probability that an iteration is sampled (MPITRACE_LOOP_CHANCE overrides it at run time)")
	f.BoolVar(&opts.Preprocess, "preprocess", false, "instrument each source's preprocessor output (catches loops written as macros)")
	return cmd
}

func checkChance(p float64) error {
	if !(p >= 0 && p <= 1) {
		return flagErrorf("--chance %s: give a probability from 0 to 1", strconv.FormatFloat(p, 'g', -1, 64))
	}
	return nil
}
