package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/render"
	"github.com/mpitrace/mpitrace/internal/graphviztest"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// Flags reach the options: parsed ranks, window and unit.
func TestDotFlagParsing(t *testing.T) {
	s := &Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
	parse := func(args ...string) *dotOptions {
		t.Helper()
		var got *dotOptions
		cmd := newDotCmd(s, func(_ context.Context, o *dotOptions) error { got = o; return nil })
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return got
	}
	o := parse("run2", "--critical-only", "--ranks", "1-2", "--window", "100ms:250ms", "--model", "m.json",
		"--unit", "ms", "-o", "g.dot", "--strict")
	if o.Dir != "run2" || !o.CriticalOnly || o.Ranks.String() != "1-2" ||
		o.Window == nil || *o.Window != (render.Window{Start: 100 * time.Millisecond, End: 250 * time.Millisecond}) ||
		o.Model != "m.json" || o.Unit != critpath.Millisecond || o.Output != "g.dot" || !o.Strict {
		t.Fatalf("dot options: %+v", o)
	}
	o = parse()
	if o.Dir != "traces" || o.CriticalOnly || o.Ranks != nil || o.Window != nil || o.Unit != critpath.Microsecond || o.Output != "" {
		t.Fatalf("dot defaults: %+v", o)
	}
	o = parse("--ranks", "3", "--window", ":2s")
	if o.Ranks.String() != "3" || *o.Window != (render.Window{End: 2 * time.Second}) {
		t.Fatalf("--ranks 3 --window :2s: %+v %+v", o.Ranks, o.Window)
	}
	o = parse("--window", "1.5s:", "--unit", "ns")
	if *o.Window != (render.Window{Start: 1500 * time.Millisecond}) || o.Unit != critpath.Nanosecond {
		t.Fatalf("--window 1.5s: %+v", o.Window)
	}
}

// Bad values are usage errors (exit 2): one error line naming the flag,
// then the usage.
func TestDotBadFlags(t *testing.T) {
	dir := writeTrace(t)
	for _, c := range []struct{ flag, value, want string }{
		{"--ranks", "x", `--ranks "x": want a rank N or a range A-B`},
		{"--ranks", "2-1", `--ranks "2-1": the range is empty`},
		{"--ranks", "1-", `--ranks "1-"`},
		{"--ranks", "-1", `--ranks "-1"`},
		{"--ranks", "0-5", "--ranks 0-5: " + dir + " has ranks 0-1"},
		{"--ranks", "2", "--ranks 2: " + dir + " has ranks 0-1"},
		{"--window", "1s", `--window "1s": want T0:T1`},
		{"--window", ":", `--window ":": want T0:T1`},
		{"--window", "2s:1s", `--window "2s:1s": the end must be after the start`},
		{"--window", "100:200", `--window "100:200": "100" is not a time with a unit`},
		{"--window", "-1s:", `--window "-1s:"`},
		{"--unit", "h", `--unit "h"`},
		{"--max-vertices", "-1", `--max-vertices -1: want 0 (no limit) or more`},
	} {
		t.Run(c.flag+"="+c.value, func(t *testing.T) {
			code, out, errs := runCLI(t, "dot", dir, c.flag+"="+c.value)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, ExitUsage, errs)
			}
			if out != "" {
				t.Errorf("stdout not empty: %q", out)
			}
			first, rest, _ := strings.Cut(errs, "\n")
			if first != "mpitrace: "+c.want && !strings.HasPrefix(first, "mpitrace: "+c.want) {
				t.Errorf("first line %q, want %q", first, "mpitrace: "+c.want)
			}
			if strings.Contains(rest, "mpitrace: ") || !strings.HasPrefix(rest, "usage: mpitrace dot") {
				t.Errorf("want one error line then the usage, got:\n%s", errs)
			}
		})
	}
}

func TestDotRun(t *testing.T) {
	dir := writeTrace(t)
	code, out, errs := runCLI(t, "dot", dir)
	if code != 0 || errs != "" {
		t.Fatalf("dot: exit %d, stderr %q", code, errs)
	}
	if !strings.HasPrefix(out, "digraph ") || !strings.Contains(out, "subgraph cluster_rank0 {") ||
		!strings.Contains(out, "subgraph cluster_rank1 {") || !strings.Contains(out, `penwidth="3"`) ||
		!strings.Contains(out, "latency model: default model embedded in mpitrace") {
		t.Fatalf("dot wrote:\n%.600s", out)
	}
	if dotBin, err := exec.LookPath("dot"); err == nil {
		cmd := exec.Command(dotBin, "-Tsvg")
		cmd.Stdin = strings.NewReader(out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("dot -Tsvg: %v\n%.400s", err, b)
		}
	}

	// The same trace gives the same bytes.
	if _, again, _ := runCLI(t, "dot", dir); again != out {
		t.Errorf("two runs wrote different DOT")
	}

	// -o writes the file and nothing to stdout; the options reach the
	// picture.
	file := filepath.Join(t.TempDir(), "g.dot")
	code, out2, errs := runCLI(t, "dot", dir, "--critical-only", "--ranks", "1", "--window", "0s:", "--unit", "ms", "-o", file)
	if code != 0 || out2 != "" || errs != "" {
		t.Fatalf("dot -o: exit %d, stdout %q, stderr %q", code, out2, errs)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if !strings.HasPrefix(got, "digraph ") || strings.Contains(got, "cluster_rank0") ||
		!strings.Contains(got, "showing ranks 1 of 0-1") || !strings.Contains(got, "the critical path only") ||
		!strings.Contains(got, " ms") {
		t.Fatalf("dot --critical-only --ranks 1 -o:\n%s", got)
	}
}

// On a terminal the default model is announced once on stderr; stdout
// stays pure DOT.
func TestDotDefaultModelNotice(t *testing.T) {
	dir := writeTrace(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"dot", dir}, &Streams{In: strings.NewReader(""), Out: &out, Err: &errb, ErrTTY: true})
	if code != 0 || strings.Count(errb.String(), "default latency model") != 1 || !strings.HasPrefix(out.String(), "digraph ") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if strings.Contains(out.String(), "calibrate -o") {
		t.Errorf("the notice went to stdout")
	}
}

func TestDotDamagedTrace(t *testing.T) {
	dir := writeTrace(t)
	p := filepath.Join(dir, "rank-00001.mpit")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, b[:len(b)*2/3], 0o644)
	code, out, errs := runCLI(t, "dot", dir)
	if code != 0 || !strings.HasPrefix(out, "digraph ") || !strings.Contains(errs, "data loss") {
		t.Fatalf("truncated: exit %d, stderr %q", code, errs)
	}
	code, out, _ = runCLI(t, "dot", "--strict", dir)
	if code != ExitDataLoss || !strings.HasPrefix(out, "digraph ") {
		t.Fatalf("--strict on a truncated trace: exit %d, want %d", code, ExitDataLoss)
	}
}

// A cycle (inconsistent data) has no critical path: the graph is drawn
// without one and the command fails.
func TestDotCycle(t *testing.T) {
	b := testgen.New(2)
	for r := 0; r < 2; r++ {
		rk := b.Rank(r)
		rk.Call("MPI_Init")
		rk.Recv(int64(1-r), 1, 8)
		rk.Send(int64(1-r), 1, 8)
		rk.Call("MPI_Finalize")
	}
	dir := saveTrace(t, b)
	code, out, errs := runCLI(t, "dot", dir)
	if code != ExitError || !strings.HasPrefix(out, "digraph ") || !strings.Contains(out, "critical path: not computed") ||
		!strings.Contains(errs, "no critical path") || !strings.Contains(errs, "cycle") {
		t.Fatalf("cycle: exit %d, stderr %q", code, errs)
	}
	if code, out, _ := runCLI(t, "dot", dir, "--critical-only"); code != ExitError || out != "" {
		t.Fatalf("cycle --critical-only: exit %d, stdout %.80q", code, out)
	}
}

// A big trace: the critical path is folded by default, --unfold draws every
// vertex, and a graph beyond what Graphviz lays out is never written
// without a warning on stderr.
func TestDotFoldAndBigGraphs(t *testing.T) {
	b := testgen.New(2)
	const iters = 2500
	for r := range 2 {
		b.Rank(r).Call("MPI_Init")
	}
	for it := range iters {
		for r := range 2 {
			rk := b.Rank(r)
			rk.Compute(int64(10_000 + 1_000*r))
			q := rk.Irecv(int64(1-r), 1, 1024)
			rk.Send(int64(1-r), 1, 1024)
			rk.Wait(q)
			if it%10 == 9 {
				rk.Allreduce(8)
			}
		}
	}
	for r := range 2 {
		b.Rank(r).Call("MPI_Finalize")
	}
	dir := saveTrace(t, b)
	nodes := func(dot string) int { return strings.Count(dot, "shape=") }

	// Default: the whole graph (15,000 vertices) is too big, the
	// folded critical path is drawn in its place, and stderr says so.
	code, out, errs := runCLI(t, "dot", dir)
	if code != 0 || !strings.Contains(errs, "drawing its critical path folded") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("dot: exit %d, stderr %q", code, errs)
	}
	if n := nodes(out); n > 100 || !strings.Contains(out, "subgraph cluster_run") || !strings.Contains(out, " x ") {
		t.Fatalf("dot: %d vertices:\n%.2000s", n, out)
	}
	graphviztest.Render(t, out)

	// An unfolded picture beyond --max-vertices is refused, naming what
	// draws less, and nothing is written; 0 lifts the limit.
	outFile := filepath.Join(t.TempDir(), "big.dot")
	code, _, errs = runCLI(t, "dot", dir, "--unfold", "--max-vertices", "1000", "-o", outFile)
	if code != 1 || !strings.Contains(errs, "more than --max-vertices 1000") || !strings.Contains(errs, "--ranks A-B or --window T0:T1") || strings.Count(errs, "\n") != 1 {
		t.Errorf("dot --unfold --max-vertices 1000: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(outFile); !os.IsNotExist(err) {
		t.Errorf("a refused picture left %s: %v", outFile, err)
	}
	// A cut is drawn unfolded: the advice is to cut more.
	code, _, errs = runCLI(t, "dot", dir, "--critical-only", "--ranks", "0-1", "--max-vertices", "500")
	if code != 1 || !strings.Contains(errs, "draw fewer --ranks or a shorter --window") || strings.Contains(errs, "--critical-only without --unfold") {
		t.Errorf("dot --critical-only --ranks 0-1 --max-vertices 500: exit %d, stderr %q", code, errs)
	}
	// A part of more operations than --max-vertices is refused by the
	// replay that collects it, once it has collected that many.
	code, _, errs = runCLI(t, "dot", dir, "--ranks", "0-1", "--max-vertices", "500", "-o", outFile)
	if code != 1 || !strings.Contains(errs, "would have more than --max-vertices 500 vertices") || !strings.Contains(errs, "draw fewer --ranks or a shorter --window") || strings.Count(errs, "\n") != 1 {
		t.Errorf("dot --ranks 0-1 --max-vertices 500: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(outFile); !os.IsNotExist(err) {
		t.Errorf("a refused picture left %s: %v", outFile, err)
	}
	if code, out, _ := runCLI(t, "dot", dir, "--unfold", "--max-vertices", "0"); code != 0 || nodes(out) < 10_000 {
		t.Errorf("dot --unfold --max-vertices 0: exit %d, %d vertices", code, nodes(out))
	}

	// --critical-only folds too, without a word.
	code, folded, errs := runCLI(t, "dot", dir, "--critical-only")
	if code != 0 || errs != "" || folded != out {
		t.Fatalf("dot --critical-only: exit %d, stderr %q, same as the default: %v", code, errs, folded == out)
	}
	if !regexp.MustCompile(`label="2[45]\d x \d+ steps`).MatchString(out) {
		t.Errorf("no cluster of the ~250 iterations of 10:\n%.3000s", out)
	}

	// --unfold: the whole graph, and a warning naming what to do.
	code, out, errs = runCLI(t, "dot", dir, "--unfold")
	if code != 0 || !strings.Contains(errs, "more than Graphviz lays out") || !strings.Contains(errs, "--critical-only") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("dot --unfold: exit %d, stderr %q", code, errs)
	}
	if n := nodes(out); n < 2*3*iters || strings.Contains(out, "newrank") {
		t.Errorf("dot --unfold: %d vertices, newrank %v", n, strings.Contains(out, "newrank"))
	}

	// --critical-only --unfold: the path, over 1,000 vertices, with a
	// warning that says to fold.
	code, out, errs = runCLI(t, "dot", dir, "--critical-only", "--unfold")
	if code != 0 || !strings.Contains(errs, "drop --unfold") {
		t.Fatalf("dot --critical-only --unfold: exit %d, stderr %q", code, errs)
	}
	if n := nodes(out); n <= render.GraphvizLimit {
		t.Errorf("dot --critical-only --unfold: %d vertices", n)
	}
}
