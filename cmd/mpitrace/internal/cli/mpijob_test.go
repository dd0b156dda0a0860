package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMPIJobRefused: a command that reads a trace, started as one of
// several processes of an MPI job (the launcher's variables say so), stops
// with ExitUsage and writes nothing; process 0 says why in one line, the
// others say nothing. One process of a job, and the commands that read no
// trace, run.
func TestMPIJobRefused(t *testing.T) {
	defer func(d time.Duration) { refusedDelay = d }(refusedDelay)
	refusedDelay = 0
	dir := writeTrace(t)
	for _, c := range []struct {
		name       string
		env        map[string]string
		code       int
		says, file bool
	}{
		{"open mpi, process 0 of 4", map[string]string{"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_RANK": "0"}, ExitUsage, true, false},
		{"open mpi, process 3 of 4", map[string]string{"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_RANK": "3"}, ExitUsage, false, false},
		{"pmi, process 0 of 2", map[string]string{"PMI_SIZE": "2", "PMI_RANK": "0"}, ExitUsage, true, false},
		{"pmi, process 1 of 2", map[string]string{"PMI_SIZE": "2", "PMI_RANK": "1"}, ExitUsage, false, false},
		{"one process of a job", map[string]string{"OMPI_COMM_WORLD_SIZE": "1", "OMPI_COMM_WORLD_RANK": "0", "PMI_SIZE": "1"}, ExitOK, false, true},
		{"no launcher", nil, ExitOK, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range mpiJobVars {
				t.Setenv(v.rank, "")
				t.Setenv(v.size, "")
				os.Unsetenv(v.rank)
				os.Unsetenv(v.size)
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			out := filepath.Join(t.TempDir(), "critPath.out")
			code, stdout, stderr := runCLI(t, "critpath", dir, "-o", out)
			if code != c.code {
				t.Fatalf("exit status %d, want %d; stderr:\n%s", code, c.code, stderr)
			}
			if _, err := os.Stat(out); (err == nil) != c.file {
				t.Errorf("critPath.out written: %v, want %v", err == nil, c.file)
			}
			if c.code == ExitOK {
				return
			}
			if stdout != "" {
				t.Errorf("stdout: %q, want nothing", stdout)
			}
			switch {
			case !c.says && stderr != "":
				t.Errorf("a process other than 0 said %q, want nothing", stderr)
			case c.says && (lines(stderr) != 1 || !strings.Contains(stderr, "critpath: started by ") || !strings.Contains(stderr, "without the launcher")):
				t.Errorf("stderr %q, want one line saying the analysis runs as one process", stderr)
			}
		})
	}
	// The commands that read no trace do not mind.
	t.Setenv("OMPI_COMM_WORLD_SIZE", "4")
	t.Setenv("OMPI_COMM_WORLD_RANK", "0")
	if code, _, stderr := runCLI(t, "recorder", "include"); code != ExitOK {
		t.Errorf("recorder include under a launcher: status %d, %q", code, stderr)
	}
}
