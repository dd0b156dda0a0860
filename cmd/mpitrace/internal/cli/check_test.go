package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/analysis/baseline"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/internal/golden"

	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// checkWork shapes the trace of checkTrace.
type checkWork struct {
	ranks   int
	steps   int
	compute int64 // ns per step on rank 0; rank r computes (r+1)×
	sendDur int64 // ns per MPI_Send
	region  bool  // a region and a kernel around the compute
}

// checkTrace writes a trace whose ranks, per step, compute inside a
// region "step" holding a kernel "work" and a loop, pass a message around
// the ring and join a barrier.
func checkTrace(t *testing.T, w checkWork) string {
	t.Helper()
	b := testgen.New(w.ranks)
	for r := 0; r < w.ranks; r++ {
		rk := b.Rank(r)
		rk.Dur = 1_000
		rk.Call("MPI_Init")
		for s := 0; s < w.steps; s++ {
			work := w.compute * int64(r+1)
			if w.region {
				rk.Compute(1_000).RegionBegin("step")
				rk.Compute(0).LoopBegin("app.c", 12, 5)
				rk.Kernel(0, "work", work)
				rk.Compute(0).LoopEnd(100, 0)
				rk.Compute(0).RegionEnd(0)
			} else {
				rk.Compute(work)
			}
			next, prev := int64((r+1)%w.ranks), int64((r+w.ranks-1)%w.ranks)
			rk.Dur = w.sendDur
			if r%2 == 0 {
				rk.Send(next, 0, 4096)
				rk.Dur = 1_000
				rk.Recv(prev, 0, 4096)
			} else {
				rk.Recv(prev, 0, 4096)
				rk.Dur = w.sendDur
				rk.Send(next, 0, 4096)
				rk.Dur = 1_000
			}
			rk.Barrier()
		}
		rk.Call("MPI_Finalize")
	}
	return saveTrace(t, b)
}

func checkGoldenFile(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "check", name), got, *updateLoops)
}

var checkBase = checkWork{ranks: 2, steps: 10, compute: 1_000_000, sendDur: 400_000, region: true}

// baselineOf writes the baseline of dir into a new file and returns it.
func baselineOf(t *testing.T, dir string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "baseline.json")
	code, out, errs := runCLI(t, "check", dir, "--baseline", file, "--write-baseline")
	if code != 0 || errs != "" || !strings.HasPrefix(out, "Wrote "+file+": 2 ranks, 3 MPI functions, ") || lines(out) != 1 {
		t.Fatalf("--write-baseline: %d %q %q", code, out, errs)
	}
	return file
}

func TestCheckWriteBaseline(t *testing.T) {
	dir := checkTrace(t, checkBase)
	file := baselineOf(t, dir)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	checkGoldenFile(t, "base.baseline.json", strings.ReplaceAll(string(data), dir, "TRACEDIR"))
	// The same trace again: the same bytes.
	again := baselineOf(t, dir)
	if data2, _ := os.ReadFile(again); !bytes.Equal(data, data2) {
		t.Errorf("two baselines of one trace differ")
	}
	// A trace and its own baseline: OK.
	code, out, errs := runCLI(t, "check", dir, "--baseline", file)
	if code != 0 || errs != "" || !strings.HasPrefix(out, "OK: 14 figures of "+dir+" within 5% and 100.000 us of ") {
		t.Errorf("own baseline: %d %q %q", code, out, errs)
	}
}

func TestCheckRegression(t *testing.T) {
	file := baselineOf(t, checkTrace(t, checkBase))
	slower := checkBase
	slower.compute = 1_500_000 // +50% computation
	slower.sendDur = 100_000   // MPI_Send 4× faster
	dir := checkTrace(t, slower)
	code, out, errs := runCLI(t, "check", dir, "--baseline", file)
	if code != ExitRegression {
		t.Fatalf("exit %d, want %d: %q %q", code, ExitRegression, out, errs)
	}
	checkGoldenFile(t, "slower.check.txt", strings.ReplaceAll(strings.ReplaceAll(out, dir, "TRACEDIR"), file, "BASELINE"))
	if !strings.HasPrefix(errs, "mpitrace: regression: 6 times grew beyond 5%: critical path computation +49.") || lines(errs) != 1 {
		t.Errorf("stderr %q", errs)
	}
	// At a tolerance above the change: within it.
	code, out, errs = runCLI(t, "check", dir, "--baseline", file, "--tolerance", "60%")
	if code != 0 || errs != "" || !strings.Contains(out, "OK: no regression in 14 figures (2 faster)") {
		t.Errorf("--tolerance 60%%: %d %q %q", code, out, errs)
	}
	// A floor above every change: nothing moved.
	code, out, _ = runCLI(t, "check", dir, "--baseline", file, "--floor", "1h")
	if code != 0 || !strings.HasPrefix(out, "OK: 14 figures") {
		t.Errorf("--floor 1h: %d %q", code, out)
	}
	// Only faster: exit 0, every change listed.
	slow := checkBase
	slow.compute = 1_500_000
	fast := baselineOf(t, checkTrace(t, slow))
	code, out, errs = runCLI(t, "check", checkTrace(t, checkBase), "--baseline", fast, "--tolerance", "10")
	if code != 0 || errs != "" || strings.Count(out, " faster\n") != 6 || strings.Contains(out, "REGRESSION") ||
		!strings.HasSuffix(out, "OK: no regression in 14 figures (6 faster)\n") {
		t.Errorf("faster: %d %q %q", code, out, errs)
	}
}

func TestCheckShapeChanged(t *testing.T) {
	file := baselineOf(t, checkTrace(t, checkBase))
	more := checkBase
	more.steps = 12
	more.ranks = 4
	code, out, errs := runCLI(t, "check", checkTrace(t, more), "--baseline", file)
	if code != ExitShapeChanged || lines(errs) != 1 ||
		!strings.Contains(errs, "the run's shape changed since "+file+" (ranks 2 -> 4, MPI_Barrier calls 20 -> 48, MPI_Recv calls 20 -> 48, and 1 more): timings not compared") {
		t.Fatalf("exit %d: %q", code, errs)
	}
	checkGoldenFile(t, "shape.check.txt", strings.ReplaceAll(out, file, "BASELINE"))
}

func TestCheckBadInput(t *testing.T) {
	dir := checkTrace(t, checkBase)
	good := baselineOf(t, dir)
	tmp := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	broken := write("broken.json", `{"mpitrace_baseline": 1, "shape": {`)
	other := write("other.json", `{"name": "x"}`)
	v2 := write("v2.json", `{"mpitrace_baseline": 2}`)
	missing := filepath.Join(tmp, "missing.json")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"broken baseline", []string{"check", dir, "--baseline", broken}, "baseline " + broken + ": not valid JSON"},
		{"not a baseline", []string{"check", dir, "--baseline", other}, "baseline " + other + ": not an mpitrace baseline"},
		{"other version", []string{"check", dir, "--baseline", v2}, "baseline " + v2 + ": unsupported baseline version 2 (this build reads 1)"},
		{"missing baseline", []string{"check", dir, "--baseline", missing}, "baseline open " + missing + ": no such file"},
		{"a directory as baseline", []string{"check", dir, "--baseline", tmp}, "baseline read " + tmp},
		{"no trace", []string{"check", filepath.Join(tmp, "nope"), "--baseline", good}, "nope: no such trace directory"},
		{"not a trace", []string{"check", tmp, "--baseline", good}, "no rank-*.mpit files"},
		{"no --baseline", []string{"check", dir}, "--baseline FILE is required"},
		{"bad tolerance", []string{"check", dir, "--baseline", good, "--tolerance", "five"}, `--tolerance "five"`},
		{"negative tolerance", []string{"check", dir, "--baseline", good, "--tolerance", "-1%"}, `--tolerance "-1%"`},
		{"negative floor", []string{"check", dir, "--baseline", good, "--floor", "-1s"}, "--floor must be 0 or more"},
		{"bad floor", []string{"check", dir, "--baseline", good, "--floor", "1 parsec"}, "invalid argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tc.args...)
			if code != 2 || !strings.HasPrefix(errs, "mpitrace: ") || !strings.Contains(errs, tc.want) {
				t.Fatalf("mpitrace %v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
			}
			if out != "" {
				t.Errorf("stdout %q", out)
			}
		})
	}
	// A trace that lost data is bad input too: exit 2, the baseline
	// untouched.
	before, _ := os.ReadFile(good)
	damaged := truncatedTrace(t)
	code, out, errs := runCLI(t, "check", damaged, "--baseline", good, "--write-baseline")
	if after, _ := os.ReadFile(good); !bytes.Equal(before, after) {
		t.Errorf("a failed --write-baseline changed the file")
	}
	last := errs[strings.LastIndex(strings.TrimSuffix(errs, "\n"), "\n")+1:]
	if code != 2 || out != "" || !strings.HasPrefix(last, "mpitrace: "+damaged+" lost data (") {
		t.Errorf("damaged trace: exit %d, %q, last line %q", code, out, last)
	}
	if code, _, _ := runCLI(t, "check", damaged, "--baseline", good); code != 2 {
		t.Errorf("damaged trace compared: exit %d", code)
	}
}

func TestCheckFlags(t *testing.T) {
	var got *checkOptions
	cmd := newCheckCmd(&Streams{}, func(_ context.Context, o *checkOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"tr", "--baseline", "b.json", "--tolerance", "12.5%", "--floor", "2ms", "--write-baseline"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Dir != "tr" || got.Baseline != "b.json" || got.Tolerance != "12.5%" || got.Floor != 2*time.Millisecond || !got.WriteBaseline {
		t.Errorf("%+v", got)
	}
	for in, want := range map[string]float64{"5": 0.05, "5%": 0.05, " 10 % ": 0.10, "0": 0, "150%": 1.5} {
		if v, err := parseTolerance(in); err != nil || v != want {
			t.Errorf("parseTolerance(%q) = %v, %v; want %v", in, v, err, want)
		}
	}
	for _, in := range []string{"", "%", "NaN", "Inf", "-5", "5%%", "x"} {
		if _, err := parseTolerance(in); err == nil {
			t.Errorf("parseTolerance(%q): no error", in)
		}
	}
}

// TestCheckModel: check --model weighs the critical path as critpath
// --model does, records the model's fingerprint in the baseline, and
// refuses (status 2) to compare figures weighed with different models.
func TestCheckModel(t *testing.T) {
	dir := checkTrace(t, checkBase)
	m := latency.Default()
	for i := range m.PointToPoint.Segments {
		m.PointToPoint.Segments[i].A += 50_000 // every message 50 us slower
	}
	slow := filepath.Join(t.TempDir(), "slow.json")
	if err := writeOutput(slow, m.Write); err != nil {
		t.Fatal(err)
	}
	// The default model's fits in a file of another layout.
	same := filepath.Join(t.TempDir(), "default.json")
	data, err := json.Marshal(latency.Default())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(same, data, 0o644); err != nil {
		t.Fatal(err)
	}
	lengthOf := func(args ...string) int64 {
		t.Helper()
		code, out, errs := runCLI(t, append([]string{"critpath", dir, "-o", filepath.Join(t.TempDir(), "cp.out"), "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("critpath %q: %d %q", args, code, errs)
		}
		var j struct {
			Summary struct {
				Length float64 `json:"length_ns"`
			} `json:"summary"`
		}
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			t.Fatalf("critpath --json: %v\n%s", err, out)
		}
		return int64(math.Round(j.Summary.Length))
	}
	write := func(args ...string) *baseline.Baseline {
		t.Helper()
		file := filepath.Join(t.TempDir(), "baseline.json")
		code, _, errs := runCLI(t, append([]string{"check", dir, "--baseline", file, "--write-baseline"}, args...)...)
		if code != 0 {
			t.Fatalf("--write-baseline %q: %d %q", args, code, errs)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		b, err := baseline.Read(data)
		if err != nil {
			t.Fatal(err)
		}
		b.Trace = file // where it is, for the checks below
		return b
	}
	def, slowB, sameB := write(), write("--model", slow), write("--model", same)
	if def.Model != "" || sameB.Model != "" {
		t.Errorf("default model's fingerprint recorded: %q, %q", def.Model, sameB.Model)
	}
	if slowB.Model != m.Fingerprint() || len(slowB.Model) != 16 {
		t.Errorf("baseline's model %q, want %q", slowB.Model, m.Fingerprint())
	}
	for _, c := range []struct {
		b    *baseline.Baseline
		args []string
	}{{def, nil}, {slowB, []string{"--model", slow}}} {
		if got, want := c.b.Times[baseline.CritpathLength], lengthOf(c.args...); got != want {
			t.Errorf("check %q: critical path %d ns, critpath: %d ns", c.args, got, want)
		}
	}
	if def.Times[baseline.CritpathLength] >= slowB.Times[baseline.CritpathLength] {
		t.Errorf("the slower model's path (%d ns) is not longer than the default's (%d ns)",
			slowB.Times[baseline.CritpathLength], def.Times[baseline.CritpathLength])
	}
	// Compared with the model it was written with: OK; with another: 2.
	if code, out, errs := runCLI(t, "check", dir, "--baseline", slowB.Trace, "--model", slow); code != 0 || errs != "" || !strings.HasPrefix(out, "OK: ") {
		t.Errorf("same model: %d %q %q", code, out, errs)
	}
	if code, out, errs := runCLI(t, "check", dir, "--baseline", def.Trace, "--model", same); code != 0 || !strings.HasPrefix(out, "OK: ") {
		t.Errorf("default fits from a file: %d %q %q", code, out, errs)
	}
	for _, c := range []struct {
		base string
		args []string
		want string
	}{
		{slowB.Trace, nil, "mpitrace: baseline " + slowB.Trace + " was weighed with the latency model of fingerprint " + m.Fingerprint() + ", the trace with the default latency model: give check the --model the baseline was written with\n"},
		{def.Trace, []string{"--model", slow}, "mpitrace: baseline " + def.Trace + " was weighed with the default latency model, the trace with the latency model of fingerprint " + m.Fingerprint() + ": give check the --model the baseline was written with\n"},
	} {
		code, out, errs := runCLI(t, append([]string{"check", dir, "--baseline", c.base}, c.args...)...)
		if code != ExitUsage || out != "" || errs != c.want {
			t.Errorf("other model %q: %d %q %q", c.args, code, out, errs)
		}
	}
}
