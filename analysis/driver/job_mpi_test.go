package driver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mpitrace/mpitrace/internal/mpicomm"
	"github.com/mpitrace/mpitrace/internal/mpijob"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// TestMain runs, under a launcher, the job TestJobReplayMPI starts.
func TestMain(m *testing.M) {
	if lib := os.Getenv("DRIVER_TEST_MPI_LIB"); lib != "" {
		if err := replayJob(lib, os.Getenv("DRIVER_TEST_TRACE")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// replayJob replays dir as a process of an MPI job (Job.Replay); process
// 0 prints the result's digest.
func replayJob(lib, dir string) error {
	c, err := mpicomm.Open(lib)
	if err != nil {
		return err
	}
	var digest string
	j, err := OpenJob(dir, c, nil)
	if err == nil {
		res, rerr := j.Replay(critpathModel(), replayOpts())
		if err = rerr; err == nil && res != nil {
			digest, err = replayDigest(res)
			res.Close()
		}
	}
	if err != nil {
		c.Abort(1)
		return err
	}
	if c.Rank() == 0 {
		fmt.Print(digest)
	}
	return c.Finalize()
}

// TestJobReplayMPI: under Open MPI and MPICH, a job of 1 to 4 processes
// replaying a stored trace and a generated one of 64 ranks, each process
// its own ranks, finds the single replay's path and diagnostics.
func TestJobReplayMPI(t *testing.T) {
	gen := filepath.Join(t.TempDir(), "halo64")
	if err := testgen.Halo(64, 6, 3).WriteDir(gen); err != nil {
		t.Fatal(err)
	}
	dirs := []string{filepath.Join("..", "..", "fixtures", "traces", "v5", "mix"), gen}
	want := make([]string, len(dirs))
	for i, d := range dirs {
		var err error
		if want[i], err = serialDigest(d); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
	}
	for _, m := range mpijob.MPIs {
		t.Run(m.CC, func(t *testing.T) {
			if _, err := exec.LookPath(m.CC); err != nil {
				t.Skipf("%s is not installed", m.CC)
			}
			ctx, cancel := mpijob.Context(t)
			defer cancel()
			lib, err := mpicomm.Build(ctx, mpicomm.BuildOptions{MPICC: m.CC, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			self, _ := os.Executable()
			for i, dir := range dirs {
				for np := 1; np <= 4; np++ {
					r := mpijob.Run(t, "", append([]string{"DRIVER_TEST_MPI_LIB=" + lib, "DRIVER_TEST_TRACE=" + dir}, mpijob.RootEnv...), m.Launch(np, self)...)
					if r.Code != 0 || r.Stdout != want[i] {
						t.Errorf("%s, %d processes: status %d, stderr:\n%s\nprinted:\n%s\nwant:\n%s", dir, np, r.Code, r.Stderr, mpijob.Tail(r.Stdout, 2000), mpijob.Tail(want[i], 2000))
					}
				}
			}
		})
	}
}
