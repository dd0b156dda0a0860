package main_test

// record in batch jobs: the closing line it always prints, an output
// directory it cannot write, and signals sent the way batch systems and
// timeout send them.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/internal/mpijob"
)

// TestRecordClosingLine: with stderr not a terminal, as in a batch job,
// record still ends with one line saying where the logs are, how many,
// their size and what was lost.
func TestRecordClosingLine(t *testing.T) {
	m := mpis[0]
	t.Run("recorded", func(t *testing.T) {
		bin, _, out := faultSetup(t, m)
		r := record(t, out, nil, m.launch(2, bin, "finalize", "10")...)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		closingLine(t, r.stderr, "2 rank logs in "+out+" (")
		closingLine(t, r.stderr, "no data lost")
	})
	t.Run("killed-rank", func(t *testing.T) {
		bin, _, out := faultSetup(t, m)
		r := record(t, out, []string{"--buffer", "4k"}, m.launch(2, bin, "kill", "1200")...)
		lines := mpitraceLines(r.stderr)
		// Open MPI then stops rank 0 with SIGCONT, SIGTERM and SIGKILL
		// (wantStopEnd): on a loaded machine SIGKILL may come before its
		// SIGTERM handler has written its end, and the line names it too.
		if len(lines) != 1 || !strings.Contains(lines[0], "data lost: ") ||
			!strings.Contains(lines[0], "rank 1 stopped before its final write") && !strings.Contains(lines[0], "ranks 0-1 stopped before their final write") {
			t.Fatalf("want one closing line saying rank 1 (and maybe rank 0) lost its end, got %q", lines)
		}
	})
	t.Run("nothing", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "traces")
		r := record(t, out, m.recorderFlags(t), "true")
		lines := mpitraceLines(r.stderr)
		if r.code != 0 || len(lines) != 1 || !strings.Contains(lines[0], "no rank logs in "+out+": nothing was recorded") {
			t.Fatalf("exit %d, want one line saying nothing was recorded, got %q", r.code, lines)
		}
	})
}

// TestRecordUnwritableOut: an output directory that cannot be made is one
// line before the run, which goes on without the recorder, and a closing
// line and status 1 after it (the application's own status when it
// fails).
func TestRecordUnwritableOut(t *testing.T) {
	m := mpis[0]
	m.require(t)
	bin := m.compile(t, "mix")
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(file, "traces") // below a regular file: never writable, even for root
	for _, status := range []int{0, 7} {
		t.Run(fmt.Sprint("exit", status), func(t *testing.T) {
			plain := run(t, dir, m.launch(2, bin, fmt.Sprint(status))...)
			argv := append([]string{mpitraceBin, "record", "-o", out, "--"}, m.launch(2, bin, fmt.Sprint(status))...)
			r := run(t, dir, argv...)
			want := status
			if want == 0 {
				want = 1
			}
			if r.code != want || plain.code != status || !slices.Equal(sortedLines(r.stdout), sortedLines(plain.stdout)) {
				t.Fatalf("exit %d (want %d), output %q; the program alone: exit %d, output %q", r.code, want, r.stdout, plain.code, plain.stdout)
			}
			lines := mpitraceLines(r.stderr)
			if len(lines) != 2 || !strings.Contains(lines[0], "cannot write to "+out+": not a directory; the application runs without recording") ||
				!strings.Contains(lines[1], "nothing recorded: "+out+" is not writable") {
				t.Fatalf("want a line before and a line after the run, got %q", lines)
			}
		})
	}
}

// waitFor polls cond until it holds; the test fails, saying what it
// waited for, when ctx ends first.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("waited in vain for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFile waits for a file to appear and returns its content.
func waitFile(t *testing.T, ctx context.Context, path string) string {
	t.Helper()
	var b []byte
	waitFor(t, ctx, path, func() bool {
		var err error
		b, err = os.ReadFile(path)
		return err == nil
	})
	return strings.TrimSpace(string(b))
}

// waitRanks waits until n ranks of the faults fixture's wait mode are
// ready (each writes a file into dir).
func waitRanks(t *testing.T, ctx context.Context, dir string, n int) {
	t.Helper()
	waitFor(t, ctx, fmt.Sprintf("%d ranks to get ready", n), func() bool {
		ents, _ := os.ReadDir(dir)
		return len(ents) == n
	})
}

// killStandIn kills the stand-in launcher a failed test left running: the
// process pid, if its command line still names the test's directory.
func killStandIn(pid int, dir string) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(b), dir) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// batchEnv is the environment of a run outside any batch system that
// signals every process of a job.
func batchEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		name, _, _ := strings.Cut(e, "=")
		if name != "SLURM_JOB_ID" && name != "PBS_JOBID" && name != "LSB_JOBID" {
			env = append(env, e)
		}
	}
	return env
}

// TestRecordSignalsOnce: a signal sent to the process group mpitrace runs
// in (as timeout and batch systems send it) reaches the launcher once, not
// once from the sender and once more from mpitrace; a signal sent to
// mpitrace alone reaches it too. mpitrace runs in a process group of its
// own that is no terminal's foreground, as under timeout.
//
// The order of events is forced: mpitrace is stopped while the group gets
// SIGINT; when the launcher is in that group, the test waits until it has
// counted that SIGINT, then lets mpitrace go on, so that a SIGINT passed on
// by mpitrace is counted apart. Then, as timeout does, SIGUSR1 goes to
// mpitrace and at once to its group: mpitrace may get it twice, and passes
// it on once (within a second, the same signal again is the same one: the
// check relies on the two kill calls being that close). Once the launcher
// has counted a SIGINT and a SIGUSR1, a SIGTERM to mpitrace alone, passed
// on, makes it write its counts.
func TestRecordSignalsOnce(t *testing.T) {
	m := mpis[0]
	m.require(t)
	fake := m.compile(t, "sigcount") // counts the signals it gets
	for _, prefix := range [][]string{nil, {"setsid"}} {
		t.Run(strings.Join(append([]string{"launcher"}, prefix...), "-"), func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := mpijob.Context(t) // before go test's -timeout too
			defer cancel()
			argv := append(append([]string{"record", "-o", filepath.Join(dir, "traces")}, m.recorderFlags(t)...), "--")
			argv = append(argv, prefix...)
			cmd := exec.CommandContext(ctx, mpitraceBin, append(argv, fake, dir)...)
			cmd.Env = batchEnv()
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			mpid := cmd.Process.Pid
			lpid, err := strconv.Atoi(waitFile(t, ctx, filepath.Join(dir, "ready")))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { killStandIn(lpid, dir) })
			lpgid, err := syscall.Getpgid(lpid)
			if err != nil {
				t.Fatal(err)
			}
			syscall.Kill(mpid, syscall.SIGSTOP)
			syscall.Kill(-mpid, syscall.SIGINT)
			if lpgid == mpid {
				waitFile(t, ctx, filepath.Join(dir, "int"))
			}
			syscall.Kill(mpid, syscall.SIGCONT)
			waitFile(t, ctx, filepath.Join(dir, "int"))
			// timeout's way: its child, then its process group; that
			// is one signal too.
			syscall.Kill(mpid, syscall.SIGUSR1)
			syscall.Kill(-mpid, syscall.SIGUSR1)
			waitFile(t, ctx, filepath.Join(dir, "usr1"))
			syscall.Kill(mpid, syscall.SIGTERM)
			err = cmd.Wait()
			if ctx.Err() != nil {
				t.Fatalf("record did not end: %s\nstderr:\n%s", mpijob.CommandLine(cmd.Args), stderr.String())
			}
			if err != nil {
				t.Fatalf("record: %v\n%s", err, stderr.String())
			}
			counts := waitFile(t, ctx, filepath.Join(dir, "counts"))
			if counts != "int=1 usr1=1 term=1" {
				t.Fatalf("the launcher got %s; want each signal once (its process group %d, mpitrace's %d)", counts, lpgid, mpid)
			}
		})
	}
}

// TestRecordTimeout: a job stopped by timeout -s TERM (which signals its
// child and then its whole process group) ends with the same status under
// record as without it (with MPICH, one of the two it gives by chance), and
// Open MPI's ranks, which mpirun stops with SIGCONT and SIGTERM, keep their
// events.
func TestRecordTimeout(t *testing.T) {
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Fatal("timeout (GNU coreutils) is not installed")
	}
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			bin, dir, out := faultSetup(t, m)
			// timeout sends its signal when the time is up, or when it
			// gets one itself: the test sends it SIGTERM once every rank
			// is waiting, so no timing decides what the ranks have done.
			stop := func(name string, argv ...string) (int, string) {
				ready := filepath.Join(dir, name)
				os.Mkdir(ready, 0o755)
				ctx, cancel := mpijob.Context(t) // before go test's -timeout too
				defer cancel()
				argv = append(append([]string{"timeout", "-s", "TERM", "1h"}, argv...), m.launch(2, bin, "wait", "10", ready)...)
				cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
				cmd.Env = batchEnv()
				cmd.Dir = dir
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				waitRanks(t, ctx, ready, 2)
				cmd.Process.Signal(syscall.SIGTERM)
				err := cmd.Wait()
				if ctx.Err() != nil {
					t.Fatalf("%s did not end: %s\nstderr:\n%s", name, mpijob.CommandLine(cmd.Args), stderr.String())
				}
				if ee, ok := err.(*exec.ExitError); ok {
					return ee.ExitCode(), stderr.String()
				}
				return 0, stderr.String()
			}
			plain, _ := stop("plain")
			recorded, stderr := stop("recorded", mpitraceBin, "record", "-o", out, "--")
			// MPICH's mpiexec exits 15 or 0, by chance, when its ranks died
			// of the SIGTERM it passed on to them.
			same := recorded == plain || m.name == "mpich" && (recorded == 0 || recorded == 15) && (plain == 0 || plain == 15)
			if plain == 0 && m.name == "openmpi" || !same {
				t.Fatalf("exit status %d under record, %d without\n%s", recorded, plain, stderr)
			}
			_, logs := readTrace(t, out)
			if len(logs) != 2 {
				t.Fatalf("%d rank logs, want 2", len(logs))
			}
			if m.name == "openmpi" {
				// mpirun stops the ranks with SIGCONT, then SIGTERM: they
				// keep every event.
				for _, l := range logs {
					wantStoppedByOpenMPI(t, l, 10)
				}
			}
		})
	}
}

// TestRecordSignalsTerminal: in the foreground of a terminal, Ctrl-C sends
// SIGINT to the whole foreground process group, launcher included: record
// keeps the launcher in its group and does not pass SIGINT on again, but it
// passes on the signals sent to it alone. script(1) gives record a
// terminal; a ^C written to it is the user's Ctrl-C.
func TestRecordSignalsTerminal(t *testing.T) {
	m := mpis[0]
	m.require(t)
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatal("script (util-linux) is not installed")
	}
	fake := m.compile(t, "sigcount")
	dir := t.TempDir()
	ctx, cancel := mpijob.Context(t) // before go test's -timeout too
	defer cancel()
	line := fmt.Sprintf("exec %s record --out %s %s -- %s %s", mpitraceBin, filepath.Join(dir, "traces"), strings.Join(m.recorderFlags(t), " "), fake, dir)
	cmd := exec.CommandContext(ctx, "script", "-qfec", line, "/dev/null")
	cmd.Env = batchEnv()
	keyboard, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer keyboard.Close()
	var output strings.Builder
	cmd.Stdout = &output
	cmd.Stderr = &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lpid, err := strconv.Atoi(waitFile(t, ctx, filepath.Join(dir, "ready")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killStandIn(lpid, dir) })
	// The launcher's parent is mpitrace: /proc/PID/stat is "pid (comm)
	// state ppid ...".
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", lpid))
	if err != nil {
		t.Fatal(err)
	}
	mpid, err := strconv.Atoi(strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))[1])
	if err != nil {
		t.Fatal(err)
	}
	lpgid, _ := syscall.Getpgid(lpid)
	if mpgid, _ := syscall.Getpgid(mpid); lpgid != mpgid {
		t.Fatalf("in a terminal's foreground the launcher runs in mpitrace's process group %d, not %d", mpgid, lpgid)
	}
	keyboard.Write([]byte{3}) // ^C
	waitFile(t, ctx, filepath.Join(dir, "int"))
	syscall.Kill(mpid, syscall.SIGUSR1)
	waitFile(t, ctx, filepath.Join(dir, "usr1"))
	syscall.Kill(mpid, syscall.SIGTERM)
	counts := waitFile(t, ctx, filepath.Join(dir, "counts"))
	keyboard.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("record: %v\n%s", err, output.String())
	}
	if counts != "int=1 usr1=1 term=1" {
		t.Fatalf("the launcher got %s; want each signal once", counts)
	}
}
