package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// annotTraces marks the commands that read a trace and write what they
// find: run as several processes of an MPI job, each would write the same
// output.
const annotTraces = "mpitrace-reads-traces"

// readsTraces marks cmd as a command that reads a trace (see mpiJobError).
func readsTraces(cmd *cobra.Command) *cobra.Command { return annotate(cmd, annotTraces) }

// mpiJobVars are, per family of launchers, the variables a launcher gives
// each process it starts: its rank in the job and the job's size.
var mpiJobVars = []struct{ rank, size, launcher string }{
	{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun"},
	// MPICH's Hydra (mpiexec, mpirun), Intel MPI, srun --mpi=pmi2.
	{"PMI_RANK", "PMI_SIZE", "a PMI launcher (MPICH's mpiexec, srun)"},
}

// refusedDelay is how long a process other than 0 waits before it exits
// refused (mpiJobError); a variable for the tests.
var refusedDelay = aloneDelay

// mpiJobError returns, when the process is one of several processes of
// an MPI job (mpirun -np 4 mpitrace critpath ...), the error that stops
// command cmd with ExitUsage: the analysis runs as one process, and P
// copies would race on one output file. Process 0 of the job says so in
// one line; the others stop without a word, so that the terminal shows
// the line once. nil when the process is not started by a launcher, or is
// the only process of its job.
func mpiJobError(cmd *cobra.Command, getenv func(string) string) error {
	for _, v := range mpiJobVars {
		size, err := strconv.Atoi(getenv(v.size))
		if err != nil || size <= 1 {
			continue
		}
		rank, err := strconv.Atoi(getenv(v.rank))
		if err == nil && rank != 0 {
			// Process 0 says why; a launcher that stops the job when a
			// process fails (Open MPI's) must not stop it before.
			time.Sleep(refusedDelay)
			return &ExitCodeError{Code: ExitUsage}
		}
		how := fmt.Sprintf("run 'mpitrace %s' without the launcher", cmd.Name())
		if cmd.Flags().Lookup("mpi") != nil {
			how += ", or add --mpi to run it as an MPI job (each process reads a group of ranks)"
		}
		return &ExitCodeError{Code: ExitUsage, Err: fmt.Errorf("%s: started by %s as one of %d processes (%s=%d): the analysis runs as one process; %s",
			cmd.Name(), v.launcher, size, v.size, size, how)}
	}
	return nil
}
