package cli

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/internal/golden"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

var updateLoops = flag.Bool("update", false, "rewrite the golden files under testdata/ (loops, regions, critpath, check) and fixtures/traces/golden")

// loopTrace writes a 2-rank trace whose ranks exchange a message per
// execution of an outer loop (stencil.c:41:5, 40 iterations, every fourth
// sampled, with counters) that holds, in its sampled iterations, an inner
// loop (stencil.c:44:9, 8 iterations, every other one sampled).
func loopTrace(t *testing.T) string {
	t.Helper()
	b := testgen.New(2)
	b.Meta = testgen.LoopMeta("instructions,cycles", "0.25", "7")
	for r := 0; r < 2; r++ {
		rk := b.Rank(r)
		rk.Call("MPI_Init")
		for e := 0; e < 3; e++ {
			rk.Compute(5_000).LoopBegin("stencil.c", 41, 5)
			var pending int64
			for i := 1; i <= 40; i++ {
				work := int64(1_000 + 100*((i+r)%5))
				if (i+e+r)%4 != 0 {
					pending += work + 800
					continue
				}
				rk.Compute(pending).IterBegin(uint64(i))
				rk.Compute(work).LoopBegin("stencil.c", 44, 9)
				var ip int64
				for j := 1; j <= 8; j++ {
					if j%2 == 0 {
						ip += 100
						continue
					}
					rk.Compute(ip).IterBegin(uint64(j))
					rk.Compute(100).IterEnd(50, 120)
					ip = 0
				}
				rk.Compute(ip).LoopEnd(8, 0)
				rk.Compute(0).IterEnd(uint64(2000+10*i), uint64(3000+i))
				pending = 0
			}
			rk.Compute(pending).LoopEnd(40, 0)
			if r == 0 {
				rk.Send(1, 0, 4096)
			} else {
				rk.Recv(0, 0, 4096)
			}
		}
		rk.Call("MPI_Finalize")
	}
	return saveTrace(t, b)
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "loops", name), got, *updateLoops)
}

// goldenCase is a run of a command and the golden file of its stdout.
type goldenCase struct {
	golden string
	args   []string
}

// checkGoldens runs 'mpitrace command dir ARGS' for every case: it must
// succeed without a word on stderr, print what the golden file under
// testdata/sub holds (dir written TRACEDIR), the same again when run
// again, and the same into a file with -o FILE (and nothing on stdout).
// It returns the last case's output.
func checkGoldens(t *testing.T, sub, command, dir string, cases []goldenCase) string {
	t.Helper()
	var out string
	for _, c := range cases {
		args := append([]string{command, dir}, c.args...)
		code, o, errs := runCLI(t, args...)
		if code != 0 || errs != "" {
			t.Fatalf("%v: %d %s", args, code, errs)
		}
		out = o
		golden.Check(t, filepath.Join("testdata", sub, c.golden), strings.ReplaceAll(out, dir, "TRACEDIR"), *updateLoops)
		if _, again, _ := runCLI(t, args...); again != out {
			t.Errorf("%v: two runs differ", args)
		}
		file := filepath.Join(t.TempDir(), c.golden)
		code, o, errs = runCLI(t, append(args, "-o", file)...)
		if data, err := os.ReadFile(file); code != 0 || o != "" || errs != "" || err != nil || string(data) != out {
			t.Errorf("%v -o %s: %d %q %q %v; the file differs from stdout: %v", args, file, code, o, errs, err, string(data) != out)
		}
	}
	return out
}

func TestLoopsGolden(t *testing.T) {
	dir := loopTrace(t)
	data := []byte(checkGoldens(t, "loops", "loops", dir, []goldenCase{
		{"stencil2.loops.txt", nil},
		{"stencil2.loops-by-rank.txt", []string{"--by", "rank"}},
		{"stencil2.loops.json", []string{"--json"}},
	}))
	var doc struct {
		Loops []struct {
			File       string                           `json:"file"`
			Line       int                              `json:"line"`
			Column     int                              `json:"column"`
			Depth      int                              `json:"depth"`
			Parent     *string                          `json:"parent"`
			Executions int                              `json:"executions"`
			Iterations int                              `json:"iterations"`
			Sampled    int                              `json:"sampled_iterations"`
			Time       struct{ Mean, P50, P95 float64 } `json:"time_per_iteration_ns"`
			Estimated  float64                          `json:"estimated_total_ns"`
			CI         *[2]float64                      `json:"ci95_ns"`
			Measured   int64                            `json:"measured_ns"`
			Quality    float64                          `json:"quality"`
			PerRank    []struct {
				Rank       int `json:"rank"`
				Executions int `json:"executions"`
			} `json:"per_rank"`
		} `json:"loops"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Loops) != 2 {
		t.Fatalf("%d loops", len(doc.Loops))
	}
	o, in := doc.Loops[0], doc.Loops[1]
	// Per rank and execution, 10 of the 40 outer iterations are sampled.
	if o.File != "stencil.c" || o.Line != 41 || o.Column != 5 || o.Depth != 0 || o.Parent != nil || o.Executions != 6 ||
		o.Iterations != 240 || o.Sampled != 60 || o.Measured <= 0 || o.CI == nil || len(o.PerRank) != 2 || o.PerRank[1].Executions != 3 {
		t.Errorf("outer loop %+v", o)
	}
	if in.Depth != 1 || in.Parent == nil || *in.Parent != "stencil.c:41:5" || in.Executions != 60 || in.Iterations != 480 ||
		in.Sampled != 240 || in.Time.Mean != 100 || in.Measured != 60*800 {
		t.Errorf("inner loop %+v", in)
	}
}

// A trace without loop events says so.
func TestLoopsNone(t *testing.T) {
	code, out, errs := runCLI(t, "loops", writeTrace(t))
	if code != 0 || errs != "" || !strings.Contains(out, "Loops: 0 in 2 ranks") || !strings.Contains(out, "No instrumented loops") {
		t.Errorf("loops: %d %q %q", code, out, errs)
	}
}

// A program without MPI, recorded as one rank: loop events only.
func TestLoopsWithoutMPI(t *testing.T) {
	b := testgen.New(1)
	// The recorder without MPI writes no mpi_* keys.
	b.Meta = append(testgen.LoopMeta("task-clock", "0.5", "1"), tracefmt.KeyValue{Key: tracefmt.KeyMPILibrary}, tracefmt.KeyValue{Key: tracefmt.KeyMPIVersion})
	rk := b.Rank(0)
	rk.Loop("serial.c", 3, 1, 20, func(i uint64) int64 { return 1000 }, func(i uint64) bool { return i%2 == 1 },
		func(i uint64) []uint64 { return []uint64{900} })
	dir := saveTrace(t, b)
	code, out, errs := runCLI(t, "loops", dir)
	if code != 0 || errs != "" || !strings.Contains(out, "serial.c:3:1") {
		t.Fatalf("loops: %d %q %q", code, out, errs)
	}
	code, out, errs = runCLI(t, "dump", dir)
	if code != 0 || errs != "" || !strings.Contains(out, "LoopBegin file=serial.c line=3 col=1") || strings.Count(out, "IterEnd") != 10 {
		t.Fatalf("dump: %d %q %q", code, out, errs)
	}
	code, out, errs = runCLI(t, "stats", dir)
	if code != 0 || errs != "" || !strings.Contains(out, "A program without MPI: no MPI calls were recorded. 'mpitrace loops "+dir+"'") ||
		strings.Contains(out, "Application time") {
		t.Fatalf("stats: %d %q %q", code, out, errs)
	}
	code, _, errs = runCLI(t, "stats", dir, "--json")
	if code != 0 || errs != "" {
		t.Fatalf("stats --json: %d %q", code, errs)
	}
	// No critical path and no task graph: one line that says why and
	// what to run instead.
	for _, cmd := range []string{"critpath", "dot"} {
		code, out, errs := runCLI(t, cmd, dir, "-o", filepath.Join(t.TempDir(), "out"))
		if code != ExitError || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "a program without MPI") ||
			!strings.Contains(errs, "'mpitrace loops "+dir+"'") {
			t.Errorf("%s on a trace without MPI: exit %d, stdout %q, stderr %q", cmd, code, out, errs)
		}
	}
}

// Unbalanced loop events: diagnostics on stderr, the rest analysed.
func TestLoopsUnbalanced(t *testing.T) {
	b := testgen.New(1)
	rk := b.Rank(0)
	rk.IterEnd()
	rk.LoopBegin("a.c", 1, 1).IterBegin(1).Compute(10).IterEnd().LoopEnd(1, 0)
	rk.LoopEnd(2, 0)
	rk.LoopBegin("a.c", 9, 1)
	dir := saveTrace(t, b)
	code, out, errs := runCLI(t, "loops", dir)
	if code != ExitError || !strings.Contains(errs, "[iter_end_unopened]") || !strings.Contains(errs, "[loop_end_unopened]") ||
		!strings.Contains(errs, "[loop_unclosed]") || !strings.Contains(out, "a.c:1:1") {
		t.Fatalf("loops: %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = runCLI(t, "loops", dir, "--by", "thread")
	if code != ExitUsage || !strings.Contains(errs, "--by") {
		t.Errorf("--by thread: %d %q", code, errs)
	}
}

// pathTrace writes 2 ranks: rank 0 computes 125 us, 100 us of it in the
// loop stencil.c:41:5 (which holds, in its sampled iteration 5, 10 us of
// stencil.c:44:9), then sends to rank 1, which waits in MPI_Recv. Without
// withLoops the same times are recorded without loop events.
func pathTrace(t *testing.T, withLoops bool) string {
	t.Helper()
	b := testgen.New(2)
	if withLoops {
		b.Meta = testgen.LoopMeta("", "0.1", "1")
	}
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.Call("MPI_Init")
	r1.Call("MPI_Init")
	if withLoops {
		r0.Compute(20_000).LoopBegin("stencil.c", 41, 5)
		r0.Compute(40_000).IterBegin(5)
		r0.Compute(2_000).LoopBegin("stencil.c", 44, 9)
		r0.Compute(10_000).LoopEnd(4, 0)
		r0.Compute(3_000).IterEnd()
		r0.Compute(45_000).LoopEnd(10, 0)
		r0.Compute(5_000)
	} else {
		r0.Compute(125_000)
	}
	r0.Send(1, 3, 1024)
	r1.Recv(0, 3, 1024)
	r0.Call("MPI_Finalize")
	r1.Call("MPI_Finalize")
	return saveTrace(t, b)
}

func TestCritpathLoops(t *testing.T) {
	plain, looped := pathTrace(t, false), pathTrace(t, true)
	outPlain, outLooped := filepath.Join(t.TempDir(), "a.out"), filepath.Join(t.TempDir(), "b.out")
	code, sumPlain, errs := runCLI(t, "critpath", plain, "-o", outPlain)
	if code != 0 || errs != "" || strings.Contains(sumPlain, "loops") {
		t.Fatalf("critpath without loops: %d %q\n%s", code, errs, sumPlain)
	}
	code, sumLooped, errs := runCLI(t, "critpath", looped, "-o", outLooped)
	if code != 0 || errs != "" {
		t.Fatalf("critpath with loops: %d %q", code, errs)
	}
	a, _ := os.ReadFile(outPlain)
	b, _ := os.ReadFile(outLooped)
	if len(a) == 0 || string(a) != string(b) {
		t.Errorf("loop events changed the critical path:\n%s\n%s", a, b)
	}
	// The loops' lines come after the summary the plain trace gets.
	head := strings.NewReplacer(plain, "DIR", outPlain, "OUT").Replace(sumPlain)
	if !strings.HasPrefix(strings.NewReplacer(looped, "DIR", outLooped, "OUT").Replace(sumLooped), head) {
		t.Errorf("the summary changed before the loops:\n%s\n%s", sumPlain, sumLooped)
	}
	if !strings.Contains(sumLooped, "in instrumented loops: 100.000 us") || !strings.Contains(sumLooped, "of the path is in stencil.c:41:5") {
		t.Errorf("summary:\n%s", sumLooped)
	}

	code, out, _ := runCLI(t, "critpath", looped, "--json")
	var doc struct {
		Summary struct {
			Length      float64 `json:"length_ns"`
			Computation float64 `json:"computation_ns"`
			Loops       *struct {
				InLoops float64 `json:"in_loops_ns"`
				Share   float64 `json:"share"`
				Partial bool    `json:"nested_partial"`
				Loops   []struct {
					Loop   string  `json:"loop"`
					Depth  int     `json:"depth"`
					Parent string  `json:"parent"`
					Ns     float64 `json:"ns"`
					Share  float64 `json:"share"`
				} `json:"loops"`
			} `json:"loops"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("critpath --json: %d %v", code, err)
	}
	l := doc.Summary.Loops
	if l == nil || l.InLoops != 100_000 || !l.Partial || len(l.Loops) != 2 {
		t.Fatalf("loops %+v", l)
	}
	if l.Loops[0].Loop != "stencil.c:41:5" || l.Loops[0].Ns != 100_000 || l.Loops[0].Depth != 0 ||
		math.Abs(l.Loops[0].Share-100_000/doc.Summary.Length) > 1e-12 {
		t.Errorf("outer %+v (length %g)", l.Loops[0], doc.Summary.Length)
	}
	if l.Loops[1].Loop != "stencil.c:44:9" || l.Loops[1].Ns != 10_000 || l.Loops[1].Depth != 1 || l.Loops[1].Parent != "stencil.c:41:5" {
		t.Errorf("inner %+v", l.Loops[1])
	}
	code, out, _ = runCLI(t, "critpath", plain, "--json")
	if code != 0 || strings.Contains(out, `"loops"`) {
		t.Errorf("plain --json has loops: %d", code)
	}
	// stats and dot read the loop events as nothing.
	_, s1, _ := runCLI(t, "stats", plain)
	_, s2, _ := runCLI(t, "stats", looped)
	if s1 != s2 {
		t.Errorf("stats differ:\n%s\n%s", s1, s2)
	}
	_, d1, _ := runCLI(t, "dot", plain)
	_, d2, _ := runCLI(t, "dot", looped)
	if d1 == "" || strings.ReplaceAll(d1, plain, "") != strings.ReplaceAll(d2, looped, "") {
		t.Errorf("dot differs")
	}
}
