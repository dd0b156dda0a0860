package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/mpitrace/mpitrace/analysis/driver"
	"github.com/mpitrace/mpitrace/internal/mpicomm"
)

// mpiFlags run a command as an MPI job (--mpi).
type mpiFlags struct {
	MPI       bool
	MPICC     string
	StatsFile string
}

func addMPIFlags(f *pflag.FlagSet, m *mpiFlags) {
	f.BoolVar(&m.MPI, "mpi", false, "run as an MPI job (mpirun -np P mpitrace ... --mpi): each process reads a group of ranks")
	f.StringVar(&m.MPICC, "mpicc", "", "the MPI's C compiler wrapper that builds the --mpi transport (default: the launcher's MPI's, else mpicc)")
	f.StringVar(&m.StatsFile, "mpi-stats", "", "with --mpi, write each process's ranks, time and bytes exchanged to `FILE` (JSON)")
}

// check says what is wrong with the flags.
func (m *mpiFlags) check() error {
	if !m.MPI && (m.MPICC != "" || m.StatsFile != "") {
		return flagErrorf("--mpicc and --mpi-stats go with --mpi")
	}
	return nil
}

// runMPI runs body as this process's part of an analysis run as an MPI
// job: it builds (or finds in the cache) and loads the MPI transport,
// opens the trace as one of the job's processes and hands body the job
// and the streams to print on, process 0's own and nothing elsewhere. The
// exit status is process 0's, on every process. A failure before MPI
// works is said by the launcher's process 0 only; a failure of MPI itself
// after it worked stops the whole job (MPI_Abort), never a hang.
func runMPI(ctx context.Context, s *Streams, dir string, m *mpiFlags, body func(j *driver.Job, s *Streams) error) error {
	// Before MPI works, each process fails alone: the launcher's process
	// 0 says why at once, the others wait a moment first, so that a
	// launcher that stops the job when a process fails (Open MPI's) does
	// not stop process 0 before it said it.
	// (A process that fails here while the others start MPI leaves them
	// waiting for it in MPI_Init under MPICH: what can differ between
	// nodes, the trace directory, is looked at once MPI works.)
	envRank, envSize, launched := mpicomm.JobSize(os.Getenv)
	quiet := &Streams{In: s.In, Out: io.Discard, Err: io.Discard}
	alone := func(err error) error {
		if envRank != 0 {
			time.Sleep(aloneDelay)
			return &ExitCodeError{Code: exitCode(err)}
		}
		fmt.Fprintf(s.Err, "mpitrace: %v\n", err)
		return &ExitCodeError{Code: exitCode(err)}
	}
	if err := mpicomm.Available(); err != nil {
		return alone(err)
	}
	lib, err := mpicomm.Build(ctx, mpicomm.BuildOptions{MPICC: m.MPICC})
	if err != nil {
		return alone(err)
	}
	comm, err := mpicomm.Open(lib)
	if err != nil {
		return alone(err)
	}
	if launched && comm.Size() != envSize {
		err := fmt.Errorf("--mpi: the launcher started %d processes, but MPI_Init in the transport built with %s sees %d: the launcher belongs to another MPI; pass that MPI's compiler wrapper with --mpicc (e.g. --mpicc mpicc.mpich for mpirun.mpich)",
			envSize, orDefault(m.MPICC, mpicomm.DefaultMPICC(os.Getenv)), comm.Size())
		if envRank == 0 {
			err = alone(err)
			comm.Finalize()
			return err
		}
		comm.Finalize()
		return alone(err)
	}
	out := s
	if comm.Rank() != 0 {
		out = quiet
	} else if !s.ErrTTY {
		// Process 0's stderr is a pipe to the launcher: its bar reaches
		// the user when the launcher's stderr is a terminal.
		if l := launcherTerminal("/proc"); l.errTTY {
			o := *s
			o.ErrTTY, o.OutTTY, o.forwarded, o.errWidth = true, l.outTTY, true, l.width
			out = &o
		}
	}
	// Every process calls LocalSize (MPI_Comm_split_type), whatever it
	// then makes of it.
	local, err := comm.LocalSize()
	if err != nil {
		fmt.Fprintf(s.Err, "mpitrace: process %d: %v\n", comm.Rank(), err)
		comm.Abort(ExitError)
	}
	shareProcessors(local, os.Getenv, driver.OnlineCPUs())
	j, err := driver.OpenJob(dir, comm, checkTraceDir)
	if err == nil {
		j.Stats.NodeProcesses, j.Stats.Gomaxprocs = local, runtime.GOMAXPROCS(0)
		if comm.Rank() == 0 {
			// Process 0's own share: about the whole job's, the groups
			// being about equal in bytes.
			startProgressNamed(out, j.Own, fmt.Sprintf("reading %s (process 0 of %d)", filepath.Base(dir), comm.Size()))
		}
		err = body(j, out)
		if err == nil || !isMPIFailure(err) && !j.Fatal(err) {
			if serr := writeMPIStats(j, m.StatsFile, comm.Library()); err == nil {
				err = serr
			}
		}
	}
	if isMPIFailure(err) || j != nil && j.Fatal(err) {
		// The others may wait in an exchange this process will not make.
		fmt.Fprintf(s.Err, "mpitrace: process %d: %v\n", comm.Rank(), err)
		comm.Abort(ExitError)
	}
	code := []int64{0}
	if comm.Rank() == 0 && err != nil {
		// Said now: once the others know the status, they exit, and a
		// launcher may stop this process before it says anything.
		code[0] = int64(exitCode(err))
		var ec *ExitCodeError
		if !errors.As(err, &ec) || ec.Err != nil {
			fmt.Fprintf(s.Err, "mpitrace: %v\n", err)
		}
		err = &ExitCodeError{Code: int(code[0])}
	}
	if xerr := comm.AllreduceInt64(mpicomm.Sum, code); xerr != nil {
		fmt.Fprintf(s.Err, "mpitrace: process %d: %v\n", comm.Rank(), xerr)
		comm.Abort(ExitError)
	}
	comm.Finalize()
	if comm.Rank() != 0 {
		if code[0] == ExitOK {
			return nil
		}
		return &ExitCodeError{Code: int(code[0])}
	}
	return err
}

// aloneDelay is how long a process other than 0 waits before it exits
// when it failed before MPI worked (runMPI).
const aloneDelay = time.Second

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// isMPIFailure reports whether err is MPI's own (the transport's), not
// the analysis's.
func isMPIFailure(err error) bool {
	var me *mpicomm.Error
	return errors.As(err, &me)
}

// writeMPIStats writes, on process 0, every process's figures and the
// MPI library's version to file (one JSON document); every process takes
// part.
func writeMPIStats(j *driver.Job, file, library string) error {
	if file == "" {
		return nil
	}
	all, err := j.GatherStats()
	if err != nil || all == nil {
		return err
	}
	return writeOutput(file, func(w io.Writer) error {
		return writeJSON(w, struct {
			MPILibrary string                `json:"mpi_library"`
			Processes  []driver.ProcessStats `json:"processes"`
		}{strings.TrimSpace(library), all})
	})
}

// shareProcessors gives the process its share of its node's processors
// when local processes of the job share the node (local counts them):
// GOMAXPROCS online/local, at least 1. A process of the analysis as an
// MPI job replays on one goroutine; with the default GOMAXPROCS, the Go
// runtime of every process would run its collector's workers on every
// processor of the node, on the processors the other processes replay on
// (docs/performance.md: halo100 at P = 2 on 2 cores, 6.2 → 5.5 s). The
// setting is left alone when the user set GOMAXPROCS and when the process
// is alone on its node; a process the launcher bound to fewer processors
// (its affinity, runtime.NumCPU) takes the smaller of the two: bound to a
// core, one; bound to a socket that other processes share, its share of
// the node.
func shareProcessors(local int, getenv func(string) string, online int) {
	n := processorShare(local, getenv("GOMAXPROCS") != "", online, runtime.NumCPU())
	if n > 0 && n < runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(n)
	}
}

// processorShare is the GOMAXPROCS of a process that shares its node with
// local-1 other processes of the job, 0 to leave it as it is: set says
// the user set GOMAXPROCS, online counts the node's processors (0:
// unknown), affinity those the process may run on.
func processorShare(local int, set bool, online, affinity int) int {
	if set || local <= 1 || online <= 0 {
		return 0
	}
	return max(1, min(affinity, online/local))
}
