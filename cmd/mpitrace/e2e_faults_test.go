package main_test

// Fault tests: runs that end badly keep what the recorder promised
// (docs/recording.md, "Never losing what was recorded"), and the reader
// reports what was lost without failing.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/internal/mpijob"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// countCalls counts a rank's recorded calls of fn.
func countCalls(l *rankLog, fn string) int {
	n := 0
	for _, c := range l.calls {
		if c.fn == fn {
			n++
		}
	}
	return n
}

// wantEnd checks a rank's end record.
func wantEnd(t *testing.T, l *rankLog, reason, signal uint64) {
	t.Helper()
	if l.end == nil {
		t.Fatalf("rank %d: no end record (diagnostics %v); want reason %d signal %d", l.rank, diagCodes(l.diags), reason, signal)
	}
	if l.end.Reason != reason || l.end.Signal != signal {
		t.Fatalf("rank %d: end reason %d signal %d, want %d %d", l.rank, l.end.Reason, l.end.Signal, reason, signal)
	}
}

// wantBarriers checks that a rank recorded MPI_Init and n barriers.
func wantBarriers(t *testing.T, l *rankLog, n int) {
	t.Helper()
	if got := countCalls(l, "MPI_Barrier"); got != n || countCalls(l, "MPI_Init") != 1 {
		t.Fatalf("rank %d: %d barriers, %d MPI_Init; want %d and 1", l.rank, got, countCalls(l, "MPI_Init"), n)
	}
}

// faultSetup compiles the faults fixture with m's compiler and returns it,
// a fresh directory and the trace directory in it.
func faultSetup(t *testing.T, m mpiImpl) (bin, dir, out string) {
	t.Helper()
	m.require(t)
	dir = t.TempDir()
	return m.compile(t, "faults"), dir, filepath.Join(dir, "traces")
}

func TestFaultAbort(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			bin, _, out := faultSetup(t, m)
			r := record(t, out, nil, m.launch(3, bin, "abort", "10")...)
			if r.code == 0 {
				t.Fatalf("a rank called abort() but record exited 0")
			}
			_, logs := readTrace(t, out)
			wantEnd(t, logs[1], spec.EndSignal, uint64(syscall.SIGABRT))
			wantBarriers(t, logs[1], 10)
			if m.name == "openmpi" {
				// Open MPI stops the other ranks: they flush.
				for _, l := range []*rankLog{logs[0], logs[2]} {
					wantStoppedByOpenMPI(t, l, 10)
				}
			}
			// MPICH's Hydra stops them with SIGKILL: what they had not
			// written is lost, and the reader says so (checked below).
			for _, l := range logs {
				if l.end == nil && !slices.Contains(diagCodes(l.diags), tracefmt.CodeMissingEnd) {
					t.Errorf("rank %d: no end record and no missing_end diagnostic", l.rank)
				}
			}
		})
	}
}

func TestFaultMPIAbort(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			bin, dir, out := faultSetup(t, m)
			plain := run(t, dir, m.launch(3, bin, "mpi_abort", "10")...)
			r := record(t, out, nil, m.launch(3, bin, "mpi_abort", "10")...)
			if r.code != plain.code || r.code == 0 {
				t.Fatalf("record exited %d, the program alone %d", r.code, plain.code)
			}
			_, logs := readTrace(t, out)
			wantEnd(t, logs[1], spec.EndAbort, 0)
			wantBarriers(t, logs[1], 10)
			if last := logs[1].calls[len(logs[1].calls)-1]; last.fn != "MPI_Abort" {
				t.Errorf("rank 1's last call is %s, want MPI_Abort", last.fn)
			}
		})
	}
}

func TestFaultSegfaultAndExit(t *testing.T) {
	m := mpis[0]
	m.require(t)
	bin := m.compile(t, "faults")
	t.Run("segv", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "traces")
		if r := record(t, out, nil, m.launch(3, bin, "segv", "10")...); r.code == 0 {
			t.Fatalf("a rank crashed but record exited 0")
		}
		_, logs := readTrace(t, out)
		wantEnd(t, logs[1], spec.EndSignal, uint64(syscall.SIGSEGV))
		wantBarriers(t, logs[1], 10)
	})
	t.Run("exit-without-finalize", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "traces")
		record(t, out, nil, m.launch(3, bin, "noinit", "10")...)
		_, logs := readTrace(t, out)
		// Every rank calls exit(0). Open MPI treats the first rank to end
		// without MPI_Finalize as a failed job and stops the others, so a
		// rank still on its way to exit may be stopped by the launcher
		// first: which ranks that happens to depends on scheduling. The
		// first rank to exit cannot be stopped, so at least one rank must
		// have the exit end record, and every rank keeps all its calls.
		exited := 0
		for _, l := range logs {
			if l.end != nil && l.end.Reason == spec.EndExit {
				wantEnd(t, l, spec.EndExit, 0)
				wantBarriers(t, l, 10)
				exited++
				continue
			}
			wantStoppedByOpenMPI(t, l, 10)
		}
		if exited == 0 {
			t.Errorf("no rank has the exit end record")
		}
	})
}

// TestFaultSignalDuringFlush: a launcher's SIGTERM may arrive while a rank
// is writing its buffer, e.g. at exit: Open MPI stops every rank as soon as
// one ends without MPI_Finalize. The recorder's test hook makes the rank
// send itself SIGTERM in the middle of its first flush, every time; the
// flush must complete, and nothing recorded may be lost.
func TestFaultSignalDuringFlush(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			bin, dir, out := faultSetup(t, m)
			argv := append([]string{mpitraceBin, "record", "--out", out, "--"}, m.launch(1, bin, "noinit", "10")...)
			r := runEnv(t, dir, []string{"MPITRACE_TEST_SIGNAL_IN_FLUSH=15"}, argv...)
			if r.code == 0 {
				t.Fatalf("the rank was sent SIGTERM but record exited 0\n%s", r.stderr)
			}
			_, logs := readTrace(t, out)
			l := logs[0]
			wantBarriers(t, l, 10)
			// No seq_gap, events_missing, duplicated events...: only the
			// note that the rank did not finalize.
			if d := diagCodes(l.diags); !slices.Equal(d, []string{tracefmt.CodeAbnormalEnd}) {
				t.Errorf("diagnostics %v, want only %s", d, tracefmt.CodeAbnormalEnd)
			}
			switch {
			case l.end == nil:
				t.Fatalf("no end record")
			case l.end.Reason == spec.EndExit:
				t.Logf("the signal was held off until the exit flush was done")
			default:
				t.Logf("another thread took the signal and wrote the buffer")
				wantEnd(t, l, spec.EndSignal, uint64(syscall.SIGTERM))
			}
		})
	}
}

// TestFaultProgramHandler: a signal handler the program installed before
// MPI_Init still runs under the recorder, with the signal mask it would
// have had without it: a handler that siglongjmps out leaves the program
// with the mask it would have had alone. The recorder writes the log when
// the signal arrives.
func TestFaultProgramHandler(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			bin, dir, out := faultSetup(t, m)
			plain := run(t, dir, m.launch(2, bin, "jump", "10")...)
			r := record(t, out, nil, m.launch(2, bin, "jump", "10")...)
			if plain.code != 0 || r.code != 0 {
				t.Fatalf("exit %d under record, %d alone\n%s", r.code, plain.code, r.stderr)
			}
			if got, want := sortedLines(r.stdout), sortedLines(plain.stdout); !slices.Equal(got, want) || len(want) != 2 {
				t.Fatalf("under record the program printed\n%q\nalone\n%q", got, want)
			}
			_, logs := readTrace(t, out)
			for _, l := range logs {
				wantEnd(t, l, spec.EndSignal, uint64(syscall.SIGTERM))
				wantBarriers(t, l, 10)
			}
		})
	}
}

// TestFaultSIGTERM stops a whole recorded run with SIGTERM, as a batch
// system does: mpitrace passes it to the launcher, the launcher to the ranks,
// and every rank's recorder flushes before dying. A rank stopped inside an
// MPI call has that call recorded.
func TestFaultSIGTERM(t *testing.T) {
	m := mpis[0]
	bin, dir, out := faultSetup(t, m)
	ready := filepath.Join(dir, "ready")
	os.Mkdir(ready, 0o755)
	args := append([]string{mpitraceBin, "record", "--out", out, "--"}, m.launch(3, bin, "wait", "10", ready)...)
	job := mpijob.Start(t, dir, nil, args...)
	for {
		ents, _ := os.ReadDir(ready)
		if len(ents) == 3 {
			break
		}
		if job.Expired() {
			t.Log("the ranks never got ready")
			job.Wait() // fails the test, naming the job
		}
		time.Sleep(50 * time.Millisecond)
	}
	job.Signal(syscall.SIGTERM)
	if r := job.Wait(); r.Code == 0 {
		t.Fatalf("the run was stopped but record exited 0")
	}
	_, logs := readTrace(t, out)
	for _, l := range logs {
		wantStoppedByOpenMPI(t, l, 10)
	}
}

// wantStoppedByOpenMPI checks a rank that Open MPI's launcher stopped. It
// sends SIGCONT, SIGTERM a second later, and SIGKILL a few milliseconds after
// that. The recorder writes its buffer on SIGCONT and again, with an end
// record, on SIGTERM; on a loaded machine a rank may be killed before its
// SIGTERM handler runs, and then only the end record is missing. Every event
// must be there.
func wantStoppedByOpenMPI(t *testing.T, l *rankLog, barriers int) {
	t.Helper()
	wantBarriers(t, l, barriers)
	if l.end == nil {
		if !slices.Equal(diagCodes(l.diags), []string{tracefmt.CodeMissingEnd}) {
			t.Errorf("rank %d: no end record, diagnostics %v", l.rank, diagCodes(l.diags))
		}
		t.Logf("rank %d was killed before its SIGTERM handler ran; its events were written on SIGCONT", l.rank)
		return
	}
	wantEnd(t, l, spec.EndSignal, uint64(syscall.SIGTERM))
}

// TestFaultSIGKILL: a rank killed with SIGKILL loses at most its unflushed
// block; the reader returns every complete block and reports the loss, and
// only --strict turns the loss into a failing exit status.
func TestFaultSIGKILL(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			bin, dir, out := faultSetup(t, m)
			const n, buffer = 1200, 4096
			// Two ranks: oversubscribed MPICH ranks poll each other slowly.
			record(t, out, []string{"--buffer", "4k"}, m.launch(2, bin, "kill", fmt.Sprint(n))...)
			_, logs := readTrace(t, out)
			l := logs[1]
			if l.end != nil {
				t.Fatalf("rank 1 was killed but has an end record %+v", l.end)
			}
			if !slices.Contains(diagCodes(l.diags), tracefmt.CodeMissingEnd) {
				t.Fatalf("rank 1: no missing_end diagnostic: %v", diagCodes(l.diags))
			}
			// A Barrier event takes at least 8 bytes, so one block holds at
			// most buffer/8 of them: that is all rank 1 may lose.
			got := countCalls(l, "MPI_Barrier")
			if got > n || got < n-buffer/8 {
				t.Fatalf("rank 1 kept %d of %d barriers: it must lose only its unflushed block (< %d events)", got, n, buffer/8)
			}
			dump := run(t, dir, mpitraceBin, "dump", out, "--rank", "1")
			if dump.code != 0 || !strings.Contains(dump.stderr, "data loss") || !strings.Contains(dump.stderr, "rank 1") {
				t.Fatalf("dump of the killed rank: exit %d, stderr %q", dump.code, dump.stderr)
			}
			if c := strings.Count(dump.stdout, "MPI_Barrier dur="); c != got {
				t.Errorf("dump shows %d barriers, the reader %d", c, got)
			}
			strict := run(t, dir, mpitraceBin, "stats", "--strict", out)
			if strict.code != 3 {
				t.Fatalf("stats --strict on a lossy trace: exit %d, want 3\n%s", strict.code, strict.stderr)
			}
		})
	}
}

// mountTmp mounts a file system for a fault test and unmounts it at the end.
func mountTmp(t *testing.T, args ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a file system (CI runs as root)")
	}
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Fatalf("mount %v: %v\n%s", args, err, out)
	}
	t.Cleanup(func() { exec.Command("umount", args[len(args)-1]).Run() })
}

// mpitraceLines returns the lines of stderr that mpitrace printed.
func mpitraceLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "mpitrace:") {
			out = append(out, l)
		}
	}
	return out
}

// TestFaultReadOnlyDir: nothing can be written; the application runs
// unharmed and the user reads one message.
func TestFaultReadOnlyDir(t *testing.T) {
	m := mpis[0]
	m.require(t)
	bin := m.compile(t, "mix")
	dir := t.TempDir()
	src, ro := filepath.Join(dir, "src"), filepath.Join(dir, "ro")
	os.Mkdir(src, 0o755)
	os.Mkdir(ro, 0o755)
	mountTmp(t, "--bind", "-o", "ro", src, ro)
	plain := run(t, dir, m.launch(3, bin)...)

	t.Run("record", func(t *testing.T) {
		r := record(t, filepath.Join(ro, "traces"), nil, m.launch(3, bin)...)
		if r.code != 0 || !slices.Equal(sortedLines(r.stdout), sortedLines(plain.stdout)) {
			t.Fatalf("exit %d, output %q; want the program's own", r.code, r.stdout)
		}
		lines := mpitraceLines(r.stderr)
		if len(lines) != 1 || !strings.Contains(lines[0], "read-only file system") {
			t.Fatalf("want one message about the read-only directory, got %q", lines)
		}
	})
	t.Run("preloaded-by-hand", func(t *testing.T) {
		lib := strings.TrimSpace(run(t, dir, mpitraceBin, "recorder", "build", "--mpicc", m.cc).stdout)
		argv := append([]string{m.run}, m.flags...)
		argv = append(argv, "-x", "LD_PRELOAD="+lib, "-x", "MPITRACE_DIR="+ro, "-x", "TMPDIR="+dir, "-np", "3", bin)
		r := run(t, dir, argv...)
		if r.code != 0 || !slices.Equal(sortedLines(r.stdout), sortedLines(plain.stdout)) {
			t.Fatalf("exit %d, output %q; want the program's own", r.code, r.stdout)
		}
		lines := mpitraceLines(r.stderr)
		if len(lines) != 1 || !strings.Contains(lines[0], "Read-only file system") {
			t.Fatalf("want one message from the three ranks, got %q", lines)
		}
	})
}

// TestFaultDiskFull: the disk fills during the run; recording stops with
// one message, the application completes, and the logs give what was
// written with a data-loss diagnostic.
func TestFaultDiskFull(t *testing.T) {
	m := mpis[0]
	m.require(t)
	bin := m.compile(t, "faults")
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	os.Mkdir(full, 0o755)
	mountTmp(t, "-t", "tmpfs", "-o", "size=64k", "tmpfs", full)
	out := filepath.Join(full, "traces")
	r := record(t, out, []string{"--buffer", "4k"}, m.launch(3, bin, "finalize", "30000")...)
	if r.code != 0 {
		t.Fatalf("the application did not complete normally: exit %d\n%s", r.code, r.stderr)
	}
	lines := mpitraceLines(r.stderr)
	if len(lines) != 1 || !strings.Contains(lines[0], "No space left on device") || !strings.Contains(lines[0], "the application continues") {
		t.Fatalf("want one message about the full disk, got %q", lines)
	}
	dump := run(t, dir, mpitraceBin, "dump", out)
	if dump.code != 0 || !strings.Contains(dump.stderr, "data loss") {
		t.Fatalf("dump: exit %d, stderr %q", dump.code, dump.stderr)
	}
	if !strings.Contains(dump.stdout, "MPI_Barrier") {
		t.Fatalf("the logs lost even what was written before the disk filled")
	}
}
