//go:build cgo

package instrument

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestPlanCC(t *testing.T) {
	for _, c := range []struct {
		args string
		want Plan
	}{
		{"gcc -O2 -o app a.c b.cc x.o", Plan{Link: true, Sources: []int{4, 5}, Output: "app"}},
		{"gcc -c a.c", Plan{Sources: []int{2}}},
		{"gcc -c -MD -MF dep.d -I inc.c a.c", Plan{Sources: []int{7}, DepFile: "dep.d", DepFlags: true}},
		{"gcc -E a.c", Plan{PassThrough: true, Sources: []int{2}}},
		{"gcc -MM a.c", Plan{PassThrough: true, Sources: []int{2}}},
		{"gcc --version", Plan{PassThrough: true}},
		{"gcc -c a.s", Plan{PassThrough: true}},
		{"gcc -o app a.o b.o", Plan{Link: true, Output: "app"}},
		{"gcc -x c -c prog.in", Plan{Sources: []int{4}}},
		{"gcc -x assembler -c a.c", Plan{PassThrough: true}},
		{"gcc -include pre.c -c b.c", Plan{Sources: []int{4}}},
	} {
		if got := PlanCC(strings.Fields(c.args)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.args, got, c.want)
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	files, _ := filepath.Glob(filepath.Join(from, "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCC builds a two-file program with mpitrace cc in one step and in
// two (-c with -MD, then a link), and checks that both run as the
// original and that the dependency file names the original source.
func TestCC(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found")
	}
	t.Setenv("MPITRACE_CACHE", t.TempDir())
	dir := t.TempDir()
	copyDir(t, "testdata/ccprog", filepath.Join(dir))
	if err := os.Mkdir(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	// util.c in a subdirectory: its "util.h" comes through -iquote.
	if err := os.Rename(filepath.Join(dir, "util.c"), filepath.Join(dir, "src", "util.c")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "util.h"), filepath.Join(dir, "src", "util.h")); err != nil {
		t.Fatal(err)
	}
	run := func(args string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code, err := CC(context.Background(), strings.Fields(args), CCOptions{Chance: 1, Stdout: &out, Stderr: &errb, Dir: dir})
		if err != nil || code != 0 {
			t.Fatalf("mpitrace cc -- %s: status %d, %v\n%s%s", args, code, err, out.String(), errb.String())
		}
		if errb.Len() > 0 {
			t.Errorf("mpitrace cc -- %s wrote to stderr:\n%s", args, errb.String())
		}
		return out.String()
	}
	exe := func(name string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(dir, name)).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		return string(out)
	}
	orig := exec.Command("gcc", "-Isrc", "-o", "orig", "main.c", "src/util.c")
	orig.Dir = dir
	if out, err := orig.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := exe("orig")
	run("gcc -Wall -Isrc -O1 -o one main.c src/util.c")
	if got := exe("one"); got != want {
		t.Errorf("one-step build prints %q, want %q", got, want)
	}
	run("gcc -Wall -Isrc -MD -c main.c")
	run("gcc -Wall -c src/util.c -o util.o")
	run("gcc -o two main.o util.o")
	if got := exe("two"); got != want {
		t.Errorf("two-step build prints %q, want %q", got, want)
	}
	dep, err := os.ReadFile(filepath.Join(dir, "main.d"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(dep), "main.o: main.c ") || strings.Contains(string(dep), "mpitrace-cc") {
		t.Errorf("main.d names the instrumented copy, not main.c:\n%s", dep)
	}
	// The objects carry the markers: the loop sites name the sources.
	for obj, file := range map[string]string{"main.o": "main.c", "util.o": "src/util.c"} {
		b, err := os.ReadFile(filepath.Join(dir, obj))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(file+"\x00")) || !bytes.Contains(b, []byte("mpitrace_api_v1")) {
			t.Errorf("%s holds no loop site of %s", obj, file)
		}
	}
	// What compiles nothing passes through, with the compiler's status.
	if out := run("gcc -E -P src/util.h"); !strings.Contains(out, "long weight(int i);") {
		t.Errorf("gcc -E through mpitrace cc printed %q", out)
	}
	var errb bytes.Buffer
	code, err := CC(context.Background(), []string{"gcc", "-c", "nothere.c"}, CCOptions{Stdout: &errb, Stderr: &errb, Dir: dir})
	if err != nil || code != 1 || !strings.Contains(errb.String(), "nothere.c") {
		t.Errorf("a missing source: status %d, %v, %q; want gcc's status 1 and its message", code, err, errb.String())
	}
}
