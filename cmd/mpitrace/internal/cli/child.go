package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"syscall"
	"time"
	"unsafe"
)

// How `record` runs the launcher, and what it does with the signals it
// gets (docs/recording.md, "Signals"). A launcher takes a second SIGTERM or
// SIGINT as "kill now": Open MPI's mpirun then SIGKILLs the ranks at once,
// where one signal gives them SIGCONT, SIGTERM a second later and SIGKILL
// after that; MPICH's mpiexec forwards each SIGTERM to the ranks and aborts
// on the second SIGINT. So each signal must reach the launcher once,
// whether it was sent to mpitrace alone or to its whole process group.

// forwarded are the signals record passes on to the launcher.
var forwarded = []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2}

// signalPolicy says where the launcher runs and which signals go to it.
type signalPolicy struct {
	// mode names the policy (for tests and messages).
	mode string
	// ownGroup starts the launcher in a process group of its own, so that
	// a signal to mpitrace's group reaches mpitrace only.
	ownGroup bool
	// toGroup passes signals on to the launcher's process group, as a
	// signal to mpitrace's group would have reached it, rather than to the
	// launcher alone.
	toGroup bool
	// forward are passed on to the launcher, once per delivery; the other
	// signals of forwarded that are not ignored are caught, so that
	// mpitrace outlives them, writes the manifest and says what was
	// recorded.
	forward []syscall.Signal
}

const (
	// modeJob: a batch system that signals every process of a job (Slurm,
	// PBS, LSF) already signals the launcher.
	modeJob = "job"
	// modeTerminal: mpitrace is the foreground process group of its
	// terminal: the launcher stays in that group (job control, stdin), so
	// the terminal's SIGINT, SIGQUIT and SIGHUP reach it directly.
	modeTerminal = "terminal"
	// modeGroup: anything else (batch scripts, timeout, nohup, the
	// background): the launcher gets a process group of its own and every
	// signal mpitrace gets, once.
	modeGroup = "group"
)

// jobVariables name the job of a batch system that signals every process
// of the job itself.
var jobVariables = []string{"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID"}

// chooseSignalPolicy picks the policy for the running mpitrace. prefixes
// are the commands the launcher runs under: setsid and timeout put it in a
// process group of their own, out of the terminal's reach.
func chooseSignalPolicy(prefixes []string) signalPolicy {
	for _, v := range jobVariables {
		if os.Getenv(v) != "" {
			return signalPolicy{mode: modeJob}
		}
	}
	setsid, timeout := slices.Contains(prefixes, "setsid"), slices.Contains(prefixes, "timeout")
	if !setsid && !timeout && foregroundOfTerminal() {
		return signalPolicy{mode: modeTerminal, forward: []syscall.Signal{syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2}}
	}
	// setsid, as a process group leader, would fork and return at once:
	// it makes the group itself. timeout passes a signal on to its own
	// group: it gets it alone.
	return signalPolicy{mode: modeGroup, ownGroup: !setsid, toGroup: !timeout, forward: forwarded}
}

// foregroundOfTerminal reports whether mpitrace has a controlling terminal
// whose foreground process group is mpitrace's.
func foregroundOfTerminal() bool {
	fd, err := syscall.Open("/dev/tty", syscall.O_RDONLY|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	var pgrp int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp))); e != 0 {
		return false
	}
	return int(pgrp) == syscall.Getpgrp()
}

// runChild runs argv with the standard streams under the signal policy
// and returns an *ExitCodeError carrying a non-zero status (128+N when it
// died of signal N), or a *startError when it could not be started.
//
// The launcher is killed when mpitrace dies (a parent-death signal,
// SIGKILL), so that a SIGKILLed mpitrace does not leave the job running
// on its own: the launcher then stops its ranks.
func runChild(argv []string, extraEnv []string, s *Streams, p signalPolicy) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = s.In
	cmd.Stdout = s.Out
	cmd.Stderr = s.Err
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: p.ownGroup, Pdeathsig: syscall.SIGKILL}
	// A signal that was ignored when mpitrace started (nohup's SIGHUP, a
	// background job's SIGINT) stays ignored, by the launcher too.
	var caught []os.Signal
	for _, sig := range forwarded {
		if !signal.Ignored(sig) {
			caught = append(caught, sig)
		}
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, caught...)
	defer signal.Stop(sigs)
	// The parent-death signal is sent when the thread that started the
	// child ends: keep this goroutine on its thread until the child ends.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		// The shell's statuses: 127 not found, 126 not executable.
		code := 126
		var ee *exec.Error
		if errors.As(err, &ee) {
			code, err = 127, ee.Err
		} else if errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return &startError{ExitCodeError{Code: code, Err: fmt.Errorf("cannot run %s: %v", argv[0], unwrapPathError(err))}}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pid := cmd.Process.Pid
	once := onceFilter{}
	for {
		select {
		case s := <-sigs:
			sig := s.(syscall.Signal)
			if slices.Contains(p.forward, sig) && once.pass(sig, time.Now()) {
				forwardSignal(pid, sig, p.toGroup)
			}
		case err := <-done:
			return childStatus(err)
		}
	}
}

// duplicateWindow: the same signal again this soon after it was passed on
// is the same signal sent twice at once. timeout sends its signal to its
// child and then to its whole process group, so mpitrace may get it twice,
// microseconds apart (or once, when the two merge while pending).
const duplicateWindow = time.Second

// onceFilter passes each signal on once: by signal, when it was last
// passed on.
type onceFilter map[syscall.Signal]time.Time

func (f onceFilter) pass(sig syscall.Signal, now time.Time) bool {
	if t, ok := f[sig]; ok && now.Sub(t) < duplicateWindow {
		return false
	}
	f[sig] = now
	return true
}

// forwardSignal sends sig to the launcher: to its process group when it
// leads one (toGroup), as a signal to mpitrace's group would have reached
// it, else (or before it has made its group) to the launcher alone.
func forwardSignal(pid int, sig syscall.Signal, toGroup bool) {
	if toGroup && syscall.Kill(-pid, sig) == nil {
		return
	}
	_ = syscall.Kill(pid, sig)
}

// childStatus turns the launcher's end into record's error: nil for
// success, an *ExitCodeError with its status otherwise.
func childStatus(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &ExitCodeError{Code: 128 + int(ws.Signal())}
		}
		return &ExitCodeError{Code: ee.ExitCode()}
	}
	return err
}

// startError: the command could not be started at all.
type startError struct{ ExitCodeError }

func (e *startError) Unwrap() error { return &e.ExitCodeError }
