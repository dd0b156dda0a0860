package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestLauncherTerminal: with the process's stderr a pipe or socket, the
// launcher is found among its ancestors by its name, and its streams are
// terminals when /proc says they are pseudo-terminals or consoles.
func TestLauncherTerminal(t *testing.T) {
	type proc struct {
		pid, ppid int
		comm      string
		fd1, fd2  string
	}
	me := os.Getpid()
	for _, c := range []struct {
		name          string
		procs         []proc
		errTTY, outTT bool
	}{
		{"open mpi on a terminal", []proc{{me, 500, "mpitrace", "pipe:[1]", "pipe:[2]"}, {500, 400, "mpirun.openmpi", "/dev/pts/3", "/dev/pts/3"}}, true, true},
		{"stdout to a file", []proc{{me, 500, "mpitrace", "pipe:[1]", "pipe:[2]"}, {500, 400, "mpirun", "/tmp/out", "/dev/pts/3"}}, true, false},
		{"stderr to a file", []proc{{me, 500, "mpitrace", "pipe:[1]", "pipe:[2]"}, {500, 400, "orterun", "/dev/pts/0", "/tmp/err"}}, false, true},
		{"mpich's proxy, then mpiexec", []proc{{me, 600, "mpitrace", "pipe:[1]", "pipe:[2]"}, {600, 500, "hydra_pmi_proxy", "pipe:[5]", "pipe:[6]"}, {500, 400, "mpiexec.hydra", "/dev/tty1", "/dev/tty1"}}, true, true},
		// The shell above a launcher whose stderr is a file is not asked.
		{"no launcher", []proc{{me, 500, "mpitrace", "pipe:[1]", "pipe:[2]"}, {500, 400, "bash", "/dev/pts/3", "/dev/pts/3"}}, false, false},
		{"mpirunner is not mpirun", []proc{{me, 500, "mpitrace", "pipe:[1]", "pipe:[2]"}, {500, 400, "mpirunner", "/dev/pts/3", "/dev/pts/3"}}, false, false},
		{"too far up", []proc{{me, 10, "mpitrace", "pipe:[1]", "pipe:[2]"}, {10, 11, "a", "", ""}, {11, 12, "b", "", ""}, {12, 13, "c", "", ""}, {13, 14, "d", "", ""}, {14, 15, "mpirun", "/dev/pts/1", "/dev/pts/1"}}, false, false},
		{"parent gone", []proc{{me, 500, "mpitrace", "pipe:[1]", "pipe:[2]"}}, false, false},
		// A wrapper sent this process's stderr to a file.
		{"own stderr a file", []proc{{me, 500, "mpitrace", "pipe:[1]", "/tmp/log.0"}, {500, 400, "mpirun", "/dev/pts/3", "/dev/pts/3"}}, false, false},
		{"socket to the launcher", []proc{{me, 500, "mpitrace", "socket:[7]", "socket:[8]"}, {500, 400, "mpirun", "/dev/pts/3", "/dev/pts/3"}}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for _, p := range c.procs {
				dir := filepath.Join(root, fmt.Sprint(p.pid))
				if err := os.MkdirAll(filepath.Join(dir, "fd"), 0o755); err != nil {
					t.Fatal(err)
				}
				stat := fmt.Sprintf("%d (%s) S %d 1 1 0 -1", p.pid, p.comm+") x (", p.ppid)
				os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644)
				os.WriteFile(filepath.Join(dir, "comm"), []byte(p.comm+"\n"), 0o644)
				for fd, target := range map[int]string{1: p.fd1, 2: p.fd2} {
					if target != "" {
						os.Symlink(target, filepath.Join(dir, "fd", fmt.Sprint(fd)))
					}
				}
			}
			l := launcherTerminal(root)
			if l.errTTY != c.errTTY || l.outTTY != c.outTT {
				t.Errorf("stderr a terminal: %v, stdout: %v; want %v, %v", l.errTTY, l.outTTY, c.errTTY, c.outTT)
			}
		})
	}
}
