package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// launcherTTY is what launcherTerminal found.
type launcherTTY struct {
	errTTY, outTTY bool
	// width is the columns of the launcher's stderr terminal (0: unknown).
	width int
}

// launcherTerminal reports whether this process's stderr is a pipe (or
// socket) to the MPI launcher that started it (mpirun, mpiexec: the
// first of its ancestors, up to a few levels, so named) and the launcher
// writes its own stderr (fd 2) and stdout (fd 1) to a terminal: the
// launcher copies what comes through the pipes there, so a progress bar
// process 0 draws reaches the user's terminal then, and only then. (A
// process whose stderr a wrapper redirected to a file, or a launcher on
// another node, as srun's, gives no bar.)
func launcherTerminal(proc string) launcherTTY {
	if !isPipe(proc, os.Getpid(), 2) {
		return launcherTTY{}
	}
	pid := os.Getpid()
	for range 4 {
		ppid, ok := parentOf(proc, pid)
		if !ok || ppid <= 1 {
			return launcherTTY{}
		}
		pid = ppid
		comm, err := os.ReadFile(fmt.Sprintf("%s/%d/comm", proc, pid))
		if err != nil {
			return launcherTTY{}
		}
		if isLauncher(strings.TrimSpace(string(comm))) {
			errPath, errTTY := terminalPath(proc, pid, 2)
			_, outTTY := terminalPath(proc, pid, 1)
			l := launcherTTY{errTTY: errTTY, outTTY: outTTY}
			if errTTY {
				l.width = terminalWidth(errPath)
			}
			return l
		}
	}
	return launcherTTY{}
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

// fdTarget is what file descriptor fd of process pid is open on ("" when
// /proc cannot say).
func fdTarget(proc string, pid, fd int) string {
	target, _ := os.Readlink(fmt.Sprintf("%s/%d/fd/%d", proc, pid, fd))
	return target
}

// terminalPath returns what file descriptor fd of process pid is open
// on, and whether that is a terminal (a pseudo-terminal or a console).
func terminalPath(proc string, pid, fd int) (string, bool) {
	target := fdTarget(proc, pid, fd)
	return target, strings.HasPrefix(target, "/dev/pts/") || strings.HasPrefix(target, "/dev/tty")
}

// isPipe reports whether file descriptor fd of process pid is a pipe or a
// socket (what launchers connect their processes' streams with).
func isPipe(proc string, pid, fd int) bool {
	target := fdTarget(proc, pid, fd)
	return strings.HasPrefix(target, "pipe:") || strings.HasPrefix(target, "socket:")
}

// terminalWidth is the columns of terminal path, 0 when it cannot be
// asked.
func terminalWidth(path string) int {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOCTTY, 0)
	if err != nil {
		return 0
	}
	defer f.Close()
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
