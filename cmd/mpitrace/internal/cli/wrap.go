package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/recorder/wrap"
)

type wrapOptions struct {
	Dump          bool     // -d
	Fortran       bool     // -f
	Guards        bool     // -g
	NoFrontMatter bool     // -s
	NoDeprecation bool     // -w
	Compiler      string   // -c
	Includes      []string // -I
	PMPIInit      string   // -i
	Output        string   // -o ("" or "-": stdout)
	HeaderNames   bool     // --header-names
	Files         []string
}

func newWrapCmd(s *Streams, runF func(context.Context, *wrapOptions) error) *cobra.Command {
	opts := &wrapOptions{}
	cmd := &cobra.Command{
		Use:   "wrap [-d] [-f] [-g] [-s] [-w] [-c CC] [-I DIR]... [-i BINDING] [-o FILE] FILE.w...",
		Short: "Generate PMPI wrappers from wrap.py templates",
		Long: `Generate C PMPI wrappers from wrap.py template files (.w), with wrap.py's
command line and template language: {{fn}}, {{fnall}}, {{foreachfn}},
{{forallfn}}, {{callfn}}, {{ret_val}}, {{args}}, {{sub}}, ... (see
docs/wrap.md). The MPI functions come from the mpi.h that the MPI compiler
wrapper's preprocessor reads (-c, default mpicc); the generated C goes to
stdout, or to FILE with -o. {{fileno}} numbers the input files from 0.

Beyond wrap.py: an error is one line "file.w:LINE: message" and leaves no
output file; the output is deterministic; the -g reentry guard is
thread-local; the -f Fortran bindings handle MPI_STATUS(ES)_IGNORE, status
arrays, CHARACTER arguments, MPI_Message, handle arrays, MPI_IN_PLACE and
MPI_Init_thread, and never recurse through the MPI library's own Fortran
layer; {{vardecl}} declares wrapper-local variables.`,
		Example: `  mpitrace wrap -o wrappers.c tool.w
  mpitrace wrap -fgw -c mpicc.mpich -o wrappers.c tool.w
  mpitrace wrap -c "mpicc -DTOOL_DEBUG" -I /opt/mpi/include -o w.c a.w b.w
  mpitrace wrap -d -c mpicc.openmpi | grep MPI_Send`,
		DisableFlagsInUseLine: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !opts.Dump {
				return flagErrorf("wrap needs at least one template file (FILE.w), or -d")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runWrap(cmd.Context(), opts, s)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&opts.Dump, "dump", "d", false, "print the declarations parsed out of mpi.h, one per line, and stop")
	f.BoolVarP(&opts.Fortran, "fortran", "f", false, "generate Fortran bindings too")
	f.BoolVarP(&opts.Guards, "guards", "g", false, "generate (thread-local) reentry guards around the wrappers")
	f.BoolVarP(&opts.NoFrontMatter, "skip-headers", "s", false, "skip the #includes, #defines and other front matter (for non-C output)")
	f.BoolVarP(&opts.NoDeprecation, "no-deprecation-warnings", "w", false, "silence compiler warnings about deprecated MPI functions around the calls the wrappers make")
	f.StringVarP(&opts.Compiler, "compiler", "c", "mpicc", "MPI compiler `wrapper` whose preprocessor reads mpi.h (may carry flags: \"mpicc -DX\")")
	f.StringArrayVarP(&opts.Includes, "include", "I", nil, "extra include `directory` for reading mpi.h (repeatable)")
	f.StringVarP(&opts.PMPIInit, "pmpi-init", "i", "pmpi_init_", "Fortran pmpi_init `binding` a static wrapper library calls: PMPI_INIT, pmpi_init, pmpi_init_ or pmpi_init__")
	outputFlag(f, &opts.Output, "", "write the output to `file` instead of stdout")
	f.BoolVar(&opts.HeaderNames, "header-names", false, "name the wrappers' parameters as mpi.h does, like wrap.py (default: arg_0, arg_1, ...)")
	return cmd
}

func runWrap(ctx context.Context, opts *wrapOptions, s *Streams) error {
	valid := false
	for _, b := range wrap.PMPIInitBindings {
		valid = valid || b == opts.PMPIInit
	}
	if !valid {
		return flagErrorf("-i %q: the pmpi_init binding must be one of %s", opts.PMPIInit, strings.Join(wrap.PMPIInitBindings, ", "))
	}
	if strings.TrimSpace(opts.Compiler) == "" {
		return flagErrorf("-c is empty: name the MPI compiler wrapper, e.g. -c mpicc")
	}
	toFile := opts.Output != "" && opts.Output != "-"
	// Like wrap.py, a failed run leaves no output file: a build system must
	// not take an old one for the result. (Through a symbolic link, the
	// file it leads to.)
	fail := func(err error) error {
		if toFile {
			if target, st, serr := outputTarget(opts.Output); serr == nil && st != nil && st.Mode().IsRegular() {
				os.Remove(target)
			}
		}
		return err
	}
	var inputs []wrap.Input
	if !opts.Dump {
		for _, name := range opts.Files {
			b, err := os.ReadFile(name)
			if err != nil {
				var pe *os.PathError
				if errors.As(err, &pe) {
					err = pe.Err
				}
				return fail(fmt.Errorf("reading %s: %w", name, err))
			}
			inputs = append(inputs, wrap.Input{Name: name, Text: string(b)})
		}
	}
	header, err := wrap.Preprocess(ctx, opts.Compiler, opts.Includes)
	if err != nil {
		return fail(err)
	}
	funcs, err := wrap.ParseHeader(header)
	if err != nil {
		return fail(fmt.Errorf("reading the declarations of mpi.h (%s): %w", opts.Compiler, err))
	}
	var out bytes.Buffer
	if opts.Dump {
		err = wrap.Dump(&out, funcs)
	} else {
		err = wrap.Generate(&out, funcs, inputs, wrap.Options{
			Fortran:               opts.Fortran,
			Guards:                opts.Guards,
			NoFrontMatter:         opts.NoFrontMatter,
			NoDeprecationWarnings: opts.NoDeprecation,
			PMPIInit:              opts.PMPIInit,
			HeaderNames:           opts.HeaderNames,
		})
	}
	if err != nil {
		var se *wrap.SyntaxError
		if errors.As(err, &se) {
			// The one line editors and compilers print: file.w:LINE: message.
			fmt.Fprintln(s.Err, se.Error())
			return fail(&ExitCodeError{Code: ExitError})
		}
		return fail(err)
	}
	if err := writeOutputTo(s, opts.Output, func(w io.Writer) error { _, err := w.Write(out.Bytes()); return err }); err != nil {
		return fail(err)
	}
	return nil
}
