package recorder

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// TestLoopRuntimeEdges runs testdata/loops_unit.c, linked with the core and
// the loop runtime, through the edge cases of the API (chance 0 and 1,
// nesting under unsampled and sampled iterations, outer ends closing inner
// loops, stale, garbage and other threads' tokens, the depth bound,
// uncounted loops, a loop open at exit) and compares the log with the
// events each case must write.
func TestLoopRuntimeEdges(t *testing.T) {
	needCC(t)
	dir := t.TempDir()
	for name, b := range Sources() {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, _ := filepath.Abs(filepath.Join("testdata", "loops_unit.c"))
	bin := filepath.Join(dir, "loops_unit")
	args := []string{"-O1", "-g", "-std=gnu11", "-pthread", "-I", dir, "-o", bin, src}
	for _, s := range coreSources {
		args = append(args, filepath.Join(dir, s))
	}
	cmd := exec.Command("cc", append(args, "-lzstd")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compiling: %v\n%s", err, out)
	}
	trace := filepath.Join(dir, "trace")
	run := exec.Command(bin)
	run.Env = []string{"MPITRACE_DIR=" + trace, "MPITRACE_LOOP_COUNTERS=none", "MPITRACE_LOOP_SEED=1"}
	out, err := run.CombinedOutput()
	if err != nil || string(out) != "ok\n" {
		t.Fatalf("loops_unit: %v\n%s", err, out)
	}
	r, err := tracefmt.OpenRank(filepath.Join(trace, "rank-00000.mpit"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	for r.Next() {
		ev := r.Event()
		if ev.Thread != 0 {
			t.Errorf("event %s on thread %d: the other thread records nothing", ev.Name(), ev.Thread)
		}
		switch ev.Kind {
		case spec.LoopBegin:
			got = append(got, fmt.Sprintf("B%d", ev.Get(spec.Line)))
		case spec.LoopEnd:
			got = append(got, fmt.Sprintf("E%d/%d", ev.Get(spec.Count), ev.Get(spec.Flags)))
		case spec.IterBegin:
			got = append(got, fmt.Sprintf("I%d", ev.Get(spec.Iter)))
		case spec.IterEnd:
			if len(ev.Values) != 0 {
				t.Errorf("IterEnd with values %v under MPITRACE_LOOP_COUNTERS=none", ev.Values)
			}
			got = append(got, "X")
		default:
			t.Errorf("unexpected %s", ev.Name())
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"B1", "E5/0", "B2", "I1", "X", "I2", "X", "I3", "X", "E3/0", // 1
		"B3", "I2", "B4", "E1/0", "X", "E2/0", // 2
		"B5", "I1", "B6", "I1", "X", "E1/1", "X", "E1/0", // 3
		"B7", "I1", "B8", "I1", "X", "E1/1", "X", "I2", "X", "E2/0", // 4
	}
	for line := 21; line <= 84; line++ { // 6
		want = append(want, fmt.Sprintf("B%d", line), "I1")
	}
	for line := 84; line >= 21; line-- {
		want = append(want, "X", "E1/0")
	}
	want = append(want, "B99", "B9", "E1/0", "B9", "E1/0", "E0/2", // 7
		"B10", "E1/0", // 8
		"B11", "I1", "X", "E1/1") // 9
	if g, w := strings.Join(got, " "), strings.Join(want, " "); g != w {
		t.Errorf("events:\n got %s\nwant %s", g, w)
	}
	if c, _ := r.Header().Get("loop_counters"); c != "" {
		t.Errorf("loop_counters %q under MPITRACE_LOOP_COUNTERS=none", c)
	}
}

// needCC fails the test when there is no C compiler to build a harness.
func needCC(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Fatal("no C compiler: run 'make deps' (apt-get install gcc)")
	}
}
