// Package mpijob runs the commands of the tests that start MPI jobs (a
// launcher, or mpitrace record or calibrate in front of one): each with a
// deadline of its own, so that a job starved on a loaded machine fails the
// test with its command line and what it wrote on stderr, not the test
// binary with a goroutine dump when go test's -timeout strikes.
//
// A job runs in a process group of its own. At its deadline the group gets
// SIGTERM, which lets a launcher stop its ranks, and whatever is left of
// it SIGKILL a few seconds later, so that no rank keeps spinning after its
// test failed.
//
// # Busy-polling ranks on a loaded machine
//
// MPI ranks wait for messages by polling, and ranks that outnumber the
// cores starve each other: a waiting rank burns its time slice while the
// rank it waits for is not running. What the two MPIs the tests use do
// about it (measured on a 2-core machine, fixtures/README.md):
//
//   - Open MPI 4.1 yields the processor in its progress loop when mpirun
//     starts more ranks than slots: it tells them so
//     (OMPI_MCA_mpi_oversubscribe=1) and MPI_Init then turns
//     mpi_yield_when_idle on. Nothing to set: forcing it off with 4 ranks
//     on 2 cores makes a job 2.7 times slower, forcing it on with 2 ranks
//     1.8 times slower beside busy processes.
//   - Debian's MPICH 4.0.2 (device ch4:ucx) cannot yield: its ch4 progress
//     loop yields through MPL_thread_yield, which MPICH's configure
//     compiles to nothing on Linux unless built with --enable-yield, and
//     only when MPI_THREAD_MULTIPLE is in use; libmpich.so.12 does not
//     even import sched_yield. MPIR_CVAR_POLLS_BEFORE_YIELD belongs to
//     ch3, MPIR_CVAR_DEFAULT_THREAD_LEVEL=MPI_THREAD_MULTIPLE reaches the
//     no-op, MPIR_CVAR_ASYNC_PROGRESS adds a polling thread per rank (2.3
//     times slower), UCX is only polled (ucp_worker_progress) and Hydra
//     has no such option. An MPICH job in a test should therefore start
//     no more ranks than the test needs, and it relies on its deadline.
package mpijob

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Timeout is how long one job may run. Jobs take seconds on an idle
// machine and a few times that beside other MPI jobs.
const Timeout = 3 * time.Minute

// grace is how long before the test binary's own deadline (go test
// -timeout) a job is stopped, so that it fails the test first.
const grace = 30 * time.Second

// stopDelay is how long a stopped job has between SIGTERM and SIGKILL.
const stopDelay = 10 * time.Second

// deadliner is what *testing.T has and testing.TB lacks.
type deadliner interface {
	Deadline() (time.Time, bool)
}

// Context returns the context of one job of t: done after Timeout, or
// grace before the test binary's deadline, whichever comes first. For jobs
// run by code under test (calibrate.Run); Run and Start use it.
func Context(t testing.TB) (context.Context, context.CancelFunc) {
	d := time.Now().Add(Timeout)
	if dt, ok := t.(deadliner); ok {
		if td, ok := dt.Deadline(); ok && td.Add(-grace).Before(d) {
			d = td.Add(-grace)
		}
	}
	return context.WithDeadline(context.Background(), d)
}

// Result is what a job did.
type Result struct {
	Stdout, Stderr string
	// Code is the exit status, 128+N when signal N ended the job.
	Code int
}

// A Job is a started command.
type Job struct {
	t      testing.TB
	argv   []string
	cmd    *exec.Cmd
	ctx    context.Context
	cancel context.CancelFunc
	out    bytes.Buffer
	errb   bytes.Buffer
	waited bool
}

// Start starts argv in dir, with env added to the environment, in a
// process group of its own. Wait for it with Wait.
func Start(t testing.TB, dir string, env []string, argv ...string) *Job {
	t.Helper()
	j := &Job{t: t, argv: argv}
	j.ctx, j.cancel = Context(t)
	cmd := exec.CommandContext(j.ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &j.out, &j.errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = stopDelay
	j.cmd = cmd
	if j.ctx.Err() != nil {
		j.cancel()
		t.Fatalf("job not started, too close to go test's -timeout (jobs stop %v before it):\n  %s", grace, CommandLine(argv))
	}
	if err := cmd.Start(); err != nil {
		j.cancel()
		t.Fatalf("starting %s: %v", CommandLine(argv), err)
	}
	// A test that fails before it waits for its job stops the job's
	// process group, and says which job that was.
	t.Cleanup(func() {
		if !j.waited {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			j.cancel()
			t.Logf("stopped, never waited for: %s\nstderr (end):\n%s", CommandLine(argv), Tail(j.errb.String(), 40))
		}
	})
	return j
}

// Run runs argv in dir, with env added to the environment, and returns
// what it did; a job that does not finish by its deadline fails the test.
func Run(t testing.TB, dir string, env []string, argv ...string) Result {
	t.Helper()
	return Start(t, dir, env, argv...).Wait()
}

// Signal sends sig to the job's first process (not its group).
func (j *Job) Signal(sig os.Signal) error { return j.cmd.Process.Signal(sig) }

// Expired reports whether the job's deadline has passed: for tests that
// poll for something while the job runs.
func (j *Job) Expired() bool { return j.ctx.Err() != nil }

// Context is done at the job's deadline: for tests that wait for
// something while the job runs.
func (j *Job) Context() context.Context { return j.ctx }

// Wait waits for the job and returns what it did. A job stopped at its
// deadline fails the test with its command line and the end of its
// stderr and stdout.
func (j *Job) Wait() Result {
	j.t.Helper()
	defer j.cancel()
	j.waited = true
	err := j.cmd.Wait()
	r := Result{Stdout: j.out.String(), Stderr: j.errb.String()}
	if j.ctx.Err() != nil {
		syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL) // what SIGTERM left of the group
		limit := "its deadline"
		if dl, ok := j.ctx.Deadline(); ok {
			limit = dl.Format("15:04:05") + " (" + Timeout.String() + " at most, and before go test's -timeout)"
		}
		j.t.Fatalf("job stopped, still running at %s:\n  %s\nstderr (end):\n%s\nstdout (end):\n%s",
			limit, CommandLine(j.argv), Tail(r.Stderr, 40), Tail(r.Stdout, 20))
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Code = 128 + int(ws.Signal())
		} else {
			r.Code = ee.ExitCode()
		}
	default:
		j.t.Fatalf("running %s: %v\nstderr (end):\n%s", CommandLine(j.argv), err, Tail(r.Stderr, 40))
	}
	return r
}

// CommandLine quotes argv for a failure message.
func CommandLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			a = strconv.Quote(a)
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// MPI is an MPI's compiler wrapper and launcher, as Debian installs them.
type MPI struct{ CC, Run string }

// MPIs are Open MPI and MPICH.
var MPIs = []MPI{{"mpicc.openmpi", "mpirun.openmpi"}, {"mpicc.mpich", "mpirun.mpich"}}

// Launch returns the launch line of np processes of argv: Open MPI's
// oversubscribed (the test machines have 2 cores).
func (m MPI) Launch(np int, argv ...string) []string {
	l := []string{m.Run, "-np", strconv.Itoa(np)}
	if strings.Contains(m.Run, "openmpi") {
		l = append(l, "--oversubscribe")
	}
	return append(l, argv...)
}

// RootEnv lets Open MPI run as root.
var RootEnv = []string{"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"}
