package mpijob

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeT is a test whose deadline is near and whose failures are recorded
// instead of failing the real test.
type fakeT struct {
	*testing.T
	deadline time.Time
	failed   string
}

func (f *fakeT) Deadline() (time.Time, bool) { return f.deadline, true }
func (f *fakeT) Helper()                     {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	panic(f) // unwinds the job's Wait, like runtime.Goexit in a real test
}

// run calls f with a fakeT whose binary deadline is in `in`, and returns
// the failure it reported ("" for none).
func run(t *testing.T, in time.Duration, f func(ft *fakeT)) string {
	ft := &fakeT{T: t, deadline: time.Now().Add(in)}
	func() {
		defer func() {
			if p := recover(); p != nil && p != ft {
				panic(p)
			}
		}()
		f(ft)
	}()
	return ft.failed
}

func TestRunResult(t *testing.T) {
	dir := t.TempDir()
	r := Run(t, dir, []string{"MPIJOB_X=42"}, "sh", "-c", `echo out $MPIJOB_X; pwd; echo err >&2; exit 3`)
	if r.Code != 3 || r.Stdout != "out 42\n"+dir+"\n" || r.Stderr != "err\n" {
		t.Errorf("%+v", r)
	}
	if r := Run(t, dir, nil, "sh", "-c", "kill -USR1 $$"); r.Code != 128+int(syscall.SIGUSR1) {
		t.Errorf("killed by SIGUSR1: code %d", r.Code)
	}
}

// TestDeadline: a job still running at its deadline (here, 1 s before the
// test binary's, which is grace away) fails naming its command line and
// showing its stderr, and nothing of its process group survives it.
func TestDeadline(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := `sleep 300 & echo $! > ` + pidFile + `; echo "rank 1 waits" >&2; wait`
	msg := run(t, grace+time.Second, func(ft *fakeT) {
		Run(ft, "", nil, "sh", "-c", script)
		t.Error("Run returned after the deadline")
	})
	for _, want := range []string{"job stopped, still running", `sh -c "sleep 300 &`, "rank 1 waits"} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure lacks %q:\n%s", want, msg)
		}
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// The background sleep was killed with its group; it may linger as a
	// zombie of its dead parent for a moment, until init reaps it.
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(20 * time.Millisecond)
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(st), ") Z ") {
			break
		}
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Errorf("the job's background process %d survived it: %s", pid, st)
	}
}

func TestContextBeforeBinaryDeadline(t *testing.T) {
	ft := &fakeT{T: t, deadline: time.Now().Add(time.Hour)}
	ctx, cancel := Context(ft)
	defer cancel()
	if d, _ := ctx.Deadline(); time.Until(d) > Timeout {
		t.Errorf("deadline in %v, more than Timeout", time.Until(d))
	}
	ft.deadline = time.Now().Add(grace + time.Minute)
	ctx2, cancel2 := Context(ft)
	defer cancel2()
	if d, _ := ctx2.Deadline(); !d.Before(ft.deadline.Add(-grace).Add(time.Second)) {
		t.Errorf("deadline %v not grace before the binary's %v", d, ft.deadline)
	}
}

func TestCommandLine(t *testing.T) {
	got := CommandLine([]string{"mpirun", "-np", "2", "./a b", ""})
	if want := `mpirun -np 2 "./a b" ""`; got != want {
		t.Errorf("%s, want %s", got, want)
	}
	if got := Tail("a\nb\nc\n", 2); got != "...\nb\nc" {
		t.Errorf("Tail: %q", got)
	}
}
