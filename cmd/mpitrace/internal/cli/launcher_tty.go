package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// launcherTerminal reports whether the MPI launcher that started this
// process (mpirun, mpiexec: the first of its ancestors, up to a few
// levels, so named) writes its stderr (fd 2) and stdout (fd 1) to a
// terminal. Under a launcher a process's streams are pipes to it, never
// terminals; the launcher copies what comes through them to its own.
// So a progress bar process 0 draws reaches the user's terminal when the
// launcher's stderr is one, and only then. (A launcher on another node
// than process 0, as srun's, is not found: no bar.)
func launcherTerminal(proc string) (errTTY, outTTY bool) {
	pid := os.Getpid()
	for range 4 {
		ppid, ok := parentOf(proc, pid)
		if !ok || ppid <= 1 {
			return false, false
		}
		pid = ppid
		comm, err := os.ReadFile(fmt.Sprintf("%s/%d/comm", proc, pid))
		if err != nil {
			return false, false
		}
		if isLauncher(strings.TrimSpace(string(comm))) {
			return isTerminalPath(proc, pid, 2), isTerminalPath(proc, pid, 1)
		}
	}
	return false, false
}

// isLauncher reports whether a process's name (its comm) is an MPI
// launcher's: Open MPI's mpirun, mpiexec, orterun, prterun; MPICH's
// mpiexec.hydra, mpirun, mpiexec (Debian's mpirun.openmpi and
// mpirun.mpich too).
func isLauncher(comm string) bool {
	for _, l := range []string{"mpirun", "mpiexec", "orterun", "prterun"} {
		if comm == l || strings.HasPrefix(comm, l+".") {
			return true
		}
	}
	return false
}

// parentOf reads the parent of process pid from proc's stat.
func parentOf(proc string, pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", proc, pid))
	if err != nil {
		return 0, false
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// isTerminalPath reports whether file descriptor fd of process pid is a
// terminal (a pseudo-terminal or a console).
func isTerminalPath(proc string, pid, fd int) bool {
	target, err := os.Readlink(fmt.Sprintf("%s/%d/fd/%d", proc, pid, fd))
	return err == nil && (strings.HasPrefix(target, "/dev/pts/") || strings.HasPrefix(target, "/dev/tty"))
}
