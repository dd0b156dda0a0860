package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/recorder"
)

func newRecorderCmd(s *Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "recorder",
		Short: "Build the recorder library; find the source-level API's files",
		Long: `The recorder is a shared library of PMPI wrappers for every function of an
MPI's mpi.h, generated and compiled with that MPI's compiler wrapper.
'mpitrace record' builds it on first use; these commands do it explicitly.`,
		Example: `  mpitrace recorder build
  mpirun.mpich -genv LD_PRELOAD $(mpitrace recorder build --mpicc mpicc.mpich) -np 2 ./app`,
	}
	cmd.AddCommand(handlesSignals(newRecorderBuildCmd(s)), newRecorderIncludeCmd(s))
	return commandGroup(cmd)
}

type recorderBuildOptions struct {
	MPICC string
	Force bool
}

func newRecorderBuildCmd(s *Streams) *cobra.Command {
	opts := &recorderBuildOptions{}
	cmd := &cobra.Command{
		Use:   "build [--mpicc CC] [--force]",
		Short: "Build (or find in the cache) the recorder and print its path",
		Long: `Build the recorder for the MPI of the given compiler wrapper and print the
library's path. Builds are cached (in $MPITRACE_CACHE, default
~/.cache/mpitrace/recorder) under a key made of the MPI's preprocessed mpi.h,
the compiler and the recorder sources, so each MPI is built once.

The library can be preloaded by hand:
  LD_PRELOAD=$(mpitrace recorder build) MPITRACE_DIR=traces ./app`,
		Example: `  mpitrace recorder build
  mpitrace recorder build --mpicc mpicc.mpich`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			bopts := recorder.BuildOptions{MPICC: opts.MPICC, Force: opts.Force}
			if s.ErrTTY {
				bopts.Log = s.Err
			}
			lib, err := recorder.Build(cmd.Context(), bopts)
			if err != nil {
				return err
			}
			fmt.Fprintln(s.Out, lib.Path)
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.MPICC, "mpicc", "mpicc", "MPI C compiler `wrapper`, possibly with flags")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "rebuild even if the cache has the library")
	return cmd
}

func newRecorderIncludeCmd(s *Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "include",
		Short: "Print the directory of mpitrace.h and mpitrace.f90 (regions and loop markers)",
		Long: `Print a directory holding mpitrace.h, the C and C++ header of mpitrace's
source-level API (named regions: mpitrace_region_push/pop; loop markers),
and mpitrace.f90, the Fortran module of the regions. A program built with
them needs nothing more at link time and runs unchanged without the
recorder; under 'mpitrace record' its regions are recorded
(docs/regions.md).`,
		Example: `  mpicc -I$(mpitrace recorder include) -o app app.c
  mpif90 -o app $(mpitrace recorder include)/mpitrace.f90 app.f90`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := recorder.IncludeDir()
			if err != nil {
				return err
			}
			fmt.Fprintln(s.Out, dir)
			return nil
		},
	}
}
