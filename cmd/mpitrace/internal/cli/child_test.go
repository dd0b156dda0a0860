package cli

import (
	"syscall"
	"testing"
	"time"
)

// A signal that comes twice at once (timeout sends it to its child, then
// to its process group) is passed on once; later, or another signal, is
// passed on again.
func TestOnceFilter(t *testing.T) {
	f := onceFilter{}
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		sig  syscall.Signal
		at   time.Duration
		pass bool
	}{
		{syscall.SIGTERM, 0, true},
		{syscall.SIGTERM, 5 * time.Microsecond, false},
		{syscall.SIGINT, 5 * time.Microsecond, true},
		{syscall.SIGTERM, 900 * time.Millisecond, false},
		{syscall.SIGTERM, 1500 * time.Millisecond, true},
		{syscall.SIGTERM, 1600 * time.Millisecond, false},
	} {
		if got := f.pass(tc.sig, t0.Add(tc.at)); got != tc.pass {
			t.Errorf("%v at %v: passed %v, want %v", tc.sig, tc.at, got, tc.pass)
		}
	}
}

// Under a batch system that signals every process of a job, the launcher
// already gets every signal: nothing is passed on, and the launcher stays
// in mpitrace's process group. Elsewhere, without a terminal, the launcher
// gets a group of its own (unless setsid makes one) and every signal.
func TestChooseSignalPolicy(t *testing.T) {
	for _, v := range jobVariables {
		t.Setenv(v, "")
	}
	t.Setenv("SLURM_JOB_ID", "1234")
	if p := chooseSignalPolicy(nil); p.mode != modeJob || p.ownGroup || len(p.forward) != 0 {
		t.Errorf("in a Slurm job: %+v", p)
	}
	t.Setenv("SLURM_JOB_ID", "")
	// setsid and timeout take the launcher out of the terminal's reach,
	// if there is one.
	if p := chooseSignalPolicy([]string{"env", "setsid"}); p.mode != modeGroup || p.ownGroup || !p.toGroup || len(p.forward) != len(forwarded) {
		t.Errorf("under setsid: %+v", p)
	}
	if p := chooseSignalPolicy([]string{"timeout"}); p.mode != modeGroup || !p.ownGroup || p.toGroup {
		t.Errorf("under timeout: %+v", p)
	}
	if foregroundOfTerminal() {
		t.Skip("the test runs in the foreground of a terminal")
	}
	if p := chooseSignalPolicy([]string{"env"}); p.mode != modeGroup || !p.ownGroup || !p.toGroup || len(p.forward) != len(forwarded) {
		t.Errorf("without a terminal: %+v", p)
	}
}
