package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/recorder"
)

// --kokkos, --kokkos=false and no flag at all are three choices: the
// recorder is the Kokkos tool, it is not, the program decides.
func TestRecordKokkosFlags(t *testing.T) {
	for _, c := range []struct {
		args             []string
		kokkos, set, fen bool
	}{
		{nil, false, false, false},
		{[]string{"--kokkos"}, true, true, false},
		{[]string{"--kokkos=false"}, false, true, false},
		{[]string{"--kokkos-fences"}, false, false, true},
		{[]string{"--kokkos", "--kokkos-fences"}, true, true, true},
	} {
		var got *recordOptions
		cmd := newRecordCmd(&Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, func(_ context.Context, o *recordOptions) error { got = o; return nil })
		cmd.SetArgs(append(c.args, "--", "mpirun", "./a"))
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if got.Kokkos != c.kokkos || got.KokkosSet != c.set || got.KokkosFences != c.fen {
			t.Errorf("%v: kokkos %v set %v fences %v; want %v %v %v", c.args, got.Kokkos, got.KokkosSet, got.KokkosFences, c.kokkos, c.set, c.fen)
		}
	}
	code, out, errs := runCLI(t, "record", "--kokkos=false", "--kokkos-fences", "--", "./a")
	if code != ExitUsage || out != "" || !strings.HasPrefix(errs, "mpitrace: --kokkos-fences asks Kokkos to fence for the recorder, which --kokkos=false does not load: drop one of them\n") {
		t.Errorf("--kokkos=false --kokkos-fences: exit %d, stderr %q", code, errs)
	}
}

// Without the flag, a program that links Kokkos turns it on, in one line;
// --kokkos-fences implies it; the flag, given, wins.
func TestRecordKokkosDetection(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Fatal("no C compiler: run 'make deps' (apt-get install gcc)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "k.c")
	os.WriteFile(src, []byte(`void k(void) __asm__("_ZN6Kokkos10initializeEv");
void k(void) {}
int main(void) { k(); return 0; }
`), 0o644)
	kapp := filepath.Join(dir, "kapp")
	if out, err := exec.Command("cc", "-o", kapp, src).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	plain, _ := os.Executable() // this test binary: Go, no Kokkos
	for _, c := range []struct {
		opts recordOptions
		app  string
		want bool
		line string
	}{
		{recordOptions{}, plain, false, ""},
		{recordOptions{}, kapp, true, "mpitrace: kapp links Kokkos: its kernels and regions are recorded too (--kokkos=false turns this off)\n"},
		{recordOptions{KokkosSet: true}, kapp, false, ""},
		{recordOptions{Kokkos: true, KokkosSet: true}, plain, true, ""},
		{recordOptions{KokkosFences: true}, plain, true, ""},
	} {
		var errb bytes.Buffer
		got := recordKokkos(&c.opts, recorder.Launch{App: c.app, Apps: []string{plain, c.app}}, kokkosToolArg(c.opts.Argv), &Streams{Err: &errb})
		if got != c.want || errb.String() != c.line {
			t.Errorf("%+v on %s: %v, stderr %q; want %v, %q", c.opts, filepath.Base(c.app), got, errb.String(), c.want, c.line)
		}
	}
}

// The ranks get both of Kokkos' variables naming the preloaded library,
// and the fences variable with --kokkos-fences; another tool of the user's
// environment is replaced, in one warning line naming it.
func TestRecordKokkosEnv(t *testing.T) {
	lib := "/cache/libmpitrace.so"
	has := func(env []string, e string) bool {
		for _, x := range env {
			if x == e {
				return true
			}
		}
		return false
	}
	t.Setenv("MPITRACE_KOKKOS_FENCES", "")
	os.Unsetenv("MPITRACE_KOKKOS_FENCES")
	env := recordEnv(&recordOptions{Kokkos: true, ClockSync: -1}, lib, "/out", "id", "/state")
	if !has(env, "KOKKOS_TOOLS_LIBS="+lib) || !has(env, "KOKKOS_PROFILE_LIBRARY="+lib) || has(env, "MPITRACE_KOKKOS_FENCES=1") {
		t.Errorf("--kokkos: %v", env)
	}
	env = recordEnv(&recordOptions{Kokkos: true, KokkosFences: true, ClockSync: -1}, lib, "/out", "id", "/state")
	if !has(env, "MPITRACE_KOKKOS_FENCES=1") {
		t.Errorf("--kokkos-fences: %v", env)
	}
	for _, e := range recordEnv(&recordOptions{ClockSync: -1}, lib, "/out", "id", "/state") {
		if strings.HasPrefix(e, "KOKKOS_") {
			t.Errorf("without --kokkos: %s", e)
		}
	}

	var errb bytes.Buffer
	t.Setenv("KOKKOS_TOOLS_LIBS", lib)
	t.Setenv("KOKKOS_PROFILE_LIBRARY", "")
	warnKokkosTool(&Streams{Err: &errb}, lib)
	if errb.Len() != 0 {
		t.Errorf("the recorder itself named: %q", errb.String())
	}
	t.Setenv("KOKKOS_PROFILE_LIBRARY", "/opt/kp/libkp_kernel_timer.so")
	warnKokkosTool(&Streams{Err: &errb}, lib)
	if want := "mpitrace: warning: --kokkos: the recorder replaces the Kokkos tool of your environment (KOKKOS_PROFILE_LIBRARY=/opt/kp/libkp_kernel_timer.so) for this run\n"; errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
}
