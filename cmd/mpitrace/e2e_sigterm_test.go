package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// TestAnalysisStopsOnSIGTERM: a command that reads a trace stops when it is
// sent SIGTERM (`timeout 60 mpitrace critpath ...`, a CI job cancelled),
// even while it is blocked writing its output. It used to catch SIGTERM
// for a cancellation nothing looked at, and go on.
func TestAnalysisStopsOnSIGTERM(t *testing.T) {
	b := testgen.New(2)
	for r := 0; r < 2; r++ {
		rk := b.Rank(r)
		rk.Call("MPI_Init")
		for i := 0; i < 20000; i++ {
			rk.Send(int64(1-r), 5, 64)
			rk.Recv(int64(1-r), 5, 64)
		}
		rk.Call("MPI_Finalize")
	}
	dir := filepath.Join(t.TempDir(), "traces")
	if err := b.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"dump", dir}, {"critpath", "-o", "-", dir}} {
		t.Run(args[0], func(t *testing.T) {
			// Its stdout is a pipe nobody reads: after the pipe's 64 KiB
			// the command blocks in write.
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			cmd := exec.Command(mpitraceBin, args...)
			cmd.Stdout = pw
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pw.Close()
			time.Sleep(500 * time.Millisecond) // let it fill the pipe (or finish reading)
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
				if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
					t.Errorf("mpitrace %s ended with %v, want SIGTERM's default action", args[0], cmd.ProcessState)
				}
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				<-done
				t.Fatalf("mpitrace %s did not stop within a minute of SIGTERM", args[0])
			}
		})
	}
}
