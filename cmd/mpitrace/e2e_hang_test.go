package main_test

// Runs that never end by themselves: a job killed at its time limit, and a
// deadlocked job. The recorder writes what it recorded every flush interval
// and says which call a rank waits in, so neither loses more than the last
// interval of events, and the logs name the calls the ranks hung in.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/internal/mpijob"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// flushEnv sets the recorder's flush interval (ms) for these tests: short,
// so that "older than the interval" leaves room for a loaded machine.
const flushMs = 200

var flushEnv = []string{"MPITRACE_FLUSH_INTERVAL=" + strconv.Itoa(flushMs)}

// startRecord starts `mpitrace record` of the faults fixture in mode on np
// ranks; ready is the directory the ranks write their pids into, and done
// is closed when record has exited.
func startRecord(t *testing.T, m mpiImpl, np int, mode string, env []string, wrap ...string) (cmd *exec.Cmd, out, ready string, done chan struct{}) {
	t.Helper()
	bin, dir, out := faultSetup(t, m)
	ready = filepath.Join(dir, "ready")
	os.Mkdir(ready, 0o755)
	argv := append(append([]string{}, wrap...), mpitraceBin, "record", "-o", out, "--")
	argv = append(argv, m.launch(np, bin, mode, "5", ready)...)
	cmd = exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second // the launcher may outlive a killed mpitrace
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done = make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			killRanks(t, ready)
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Process.Kill()
			<-done
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%v\nstderr:\n%s", argv, stderr)
		}
	})
	waitFor(t, waitCtx(t), fmt.Sprintf("%d ranks to start (%v)", np, argv), func() bool {
		ents, _ := filepath.Glob(filepath.Join(ready, "ready-*"))
		return len(ents) == np
	})
	return cmd, out, ready, done
}

// waitCtx bounds a wait of the test by runTimeout, and by go test's
// -timeout (internal/mpijob).
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := mpijob.Context(t)
	t.Cleanup(cancel)
	return ctx
}

// killRanks sends SIGKILL to every rank that wrote its pid into ready.
func killRanks(t *testing.T, ready string) {
	files, _ := filepath.Glob(filepath.Join(ready, "ready-*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// waitExit waits for the record command to end.
func waitExit(t *testing.T, done chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-waitCtx(t).Done():
		t.Fatalf("mpitrace record did not end within %v after its ranks were stopped", runTimeout)
	}
}

// progress reads a tick rank's progress file: barrier i completed at
// times[i] (monotonic ns).
func progress(t *testing.T, ready string, rank int) []int64 {
	t.Helper()
	times := progressQuiet(ready, rank)
	if times == nil {
		t.Fatalf("rank %d wrote no progress", rank)
	}
	return times
}

// wantOlderKept checks that rank l kept every barrier that completed more
// than a second (five flush intervals) before the rank's last one.
func wantOlderKept(t *testing.T, l *rankLog, times []int64) {
	t.Helper()
	if len(times) == 0 {
		t.Fatalf("rank %d made no progress", l.rank)
	}
	cut := times[len(times)-1] - int64(time.Second)
	old := 0
	for old < len(times) && times[old] <= cut {
		old++
	}
	if old == 0 {
		t.Fatalf("rank %d: no barrier is a second older than its last (%d barriers)", l.rank, len(times))
	}
	got := countCalls(l, "MPI_Barrier")
	if got < old || countCalls(l, "MPI_Init") != 1 {
		t.Errorf("rank %d: the log has MPI_Init %d times and %d barriers; %d of the %d the rank made completed more than a second before it was stopped, and all of those must be kept",
			l.rank, countCalls(l, "MPI_Init"), got, old, len(times))
	}
	t.Logf("rank %d: %d of %d barriers kept (%d older than a second)", l.rank, got, len(times), old)
}

// TestFaultTimeLimit: a job that is stopped from outside keeps every event
// older than the recorder's flush interval, under both MPIs: stopped by
// `timeout` (SIGTERM to the process group, as a batch system at the wall
// clock limit), or with its ranks SIGKILLed, which no handler sees.
func TestFaultTimeLimit(t *testing.T) {
	for _, m := range mpis {
		for _, how := range []string{"timeout", "sigkill"} {
			t.Run(m.name+"/"+how, func(t *testing.T) {
				var wrap []string
				if how == "timeout" {
					wrap = []string{"timeout", "-s", "TERM", "60"}
				}
				cmd, out, ready, done := startRecord(t, m, 2, "tick", flushEnv, wrap...)
				waitFor(t, waitCtx(t), "two seconds of progress", func() bool {
					for r := 0; r < 2; r++ {
						if ts := progressQuiet(ready, r); len(ts) < 2 || ts[len(ts)-1]-ts[0] < 2*int64(time.Second) {
							return false
						}
					}
					return true
				})
				if how == "timeout" {
					// What timeout does when its time is up.
					syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
					syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
				} else {
					killRanks(t, ready)
				}
				waitExit(t, done)
				_, logs := readTrace(t, out)
				if len(logs) != 2 {
					t.Fatalf("%d rank logs, want 2", len(logs))
				}
				for _, l := range logs {
					wantOlderKept(t, l, progress(t, ready, l.rank))
				}
			})
		}
	}
}

// progressQuiet is progress without failing the test (for polling).
func progressQuiet(ready string, rank int) []int64 {
	b, err := os.ReadFile(filepath.Join(ready, fmt.Sprintf("progress-%d", rank)))
	if err != nil {
		return nil
	}
	var times []int64
	for _, line := range strings.Split(string(b), "\n") {
		var i, ns int64
		if n, _ := fmt.Sscanf(line, "%d %d", &i, &ns); n == 2 && i == int64(len(times)) {
			times = append(times, ns)
		}
	}
	return times
}

// TestFaultDeadlock: every rank waits in an MPI_Recv nobody sends. Within a
// flush interval or two, each rank's log names the call it waits in (its
// entry is written while the call blocks); the job is then killed with
// SIGKILL, and the reader, stats and critpath all say where each rank hung.
func TestFaultDeadlock(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			const np = 3
			_, out, ready, done := startRecord(t, m, np, "deadlock", flushEnv)
			// Wait for MPI_Recv by name: on a loaded machine a barrier
			// can last longer than the flush interval, and its pending
			// record names it until the flush writes the barrier's event;
			// killing the ranks then would lose that barrier and the
			// MPI_Recv.
			waitFor(t, waitCtx(t), "every rank's log to name the call it waits in", func() bool {
				for r := 0; r < np; r++ {
					rd, err := tracefmt.OpenRank(filepath.Join(out, tracefmt.RankFileName(r)))
					if err != nil {
						return false
					}
					u := rd.Unfinished()
					name := ""
					if len(u) == 1 {
						name, _ = rd.Strings().Lookup(u[0].Fn)
					}
					rd.Close()
					if name != "MPI_Recv" {
						return false
					}
				}
				return true
			})
			killRanks(t, ready)
			waitExit(t, done)
			tr, logs := readTrace(t, out)
			for _, l := range logs {
				if n := countCalls(l, "MPI_Barrier"); n != 5 {
					t.Errorf("rank %d: %d barriers, want 5", l.rank, n)
				}
			}
			if err := tr.ForEachRank(1, func(r *tracefmt.RankReader) error { return nil }); err != nil {
				t.Fatal(err)
			}
			u := tr.Unfinished()
			if len(u) != np {
				t.Fatalf("unfinished calls %+v, want one per rank", u)
			}
			for i, c := range u {
				if c.Rank != i || c.Thread != 0 || c.Name != "MPI_Recv" {
					t.Errorf("unfinished call %+v, want rank %d thread 0 in MPI_Recv", c, i)
				}
			}
			st := run(t, filepath.Dir(out), mpitraceBin, "stats", out)
			cp := run(t, filepath.Dir(out), mpitraceBin, "critpath", "-o", "-", "--top", "1", out)
			cps := run(t, filepath.Dir(out), mpitraceBin, "critpath", "-o", filepath.Join(filepath.Dir(out), "cp.out"), out)
			for r := 0; r < np; r++ {
				row := fmt.Sprintf("%d       0  MPI_Recv", r)
				if !strings.Contains(st.stdout, "Unfinished calls") || !strings.Contains(st.stdout, row) {
					t.Errorf("stats does not list rank %d's MPI_Recv as unfinished:\n%s", r, st.stdout)
				}
				line := fmt.Sprintf("rank %d thread 0: MPI_Recv", r)
				if !strings.Contains(cps.stdout, line) {
					t.Errorf("the critpath summary does not say rank %d hung in MPI_Recv:\n%s", r, cps.stdout)
				}
				diag := fmt.Sprintf("rank %d: thread 0: MPI_Recv never returned", r)
				for _, res := range []result{st, cp, cps} {
					if !strings.Contains(res.stderr, diag) {
						t.Errorf("no unfinished_call diagnostic for rank %d:\n%s", r, res.stderr)
					}
				}
			}
			if !strings.Contains(cps.stdout, fmt.Sprintf("The run did not end normally: %d of %d ranks", np, np)) {
				t.Errorf("critpath summary:\n%s", cps.stdout)
			}
		})
	}
}
