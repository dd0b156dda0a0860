package main_test

// End-to-end tests of the loop markers' runtime (docs/loops.md): programs
// with markers written by hand (fixtures/programs/loops.c without MPI,
// loopsmpi.c with it) recorded by `mpitrace record`, their logs read back
// with tracefmt.

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// loopStat is what a rank's log says of one loop site (by its line).
type loopStat struct {
	execs, iters, sampled int
	flags                 []int    // LoopEnd flags, sorted, without duplicates
	sampledIters          []uint64 // iteration numbers of the sampled iterations, in order
}

func (s loopStat) String() string {
	return fmt.Sprintf("execs=%d iters=%d sampled=%d flags=%v", s.execs, s.iters, s.sampled, s.flags)
}

// loopRank is one rank's loops and MPI calls.
type loopRank struct {
	header   tracefmt.Header
	loops    map[int]*loopStat // by site line
	calls    map[string]int    // MPI calls by function
	files    map[string]bool   // the sites' file names
	nvalues  map[int]int       // IterEnd events by number of values
	unclosed int               // loops still open at the end of the log
}

// readLoops reads every rank of a trace directory: each thread's loop
// events must nest (an IterBegin/IterEnd inside its loop, a LoopEnd for
// the innermost open loop).
func readLoops(t *testing.T, dir string) map[int]*loopRank {
	t.Helper()
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatalf("opening %s: %v", dir, err)
	}
	out := map[int]*loopRank{}
	for _, f := range tr.Files {
		r, err := tr.OpenRank(f.Rank)
		if err != nil {
			t.Fatalf("rank %d: %v", f.Rank, err)
		}
		lr := &loopRank{header: *r.Header(), loops: map[int]*loopStat{}, calls: map[string]int{}, files: map[string]bool{}, nvalues: map[int]int{}}
		type open struct {
			line    int
			sampled int
			inIter  bool
			iters   []uint64
		}
		stacks := map[int][]*open{}
		for r.Next() {
			ev := r.Event()
			st := stacks[ev.Thread]
			switch ev.Kind {
			case spec.LoopBegin:
				name, ok := r.Strings().Lookup(uint64(ev.Get(spec.File)))
				if !ok {
					t.Fatalf("rank %d: LoopBegin with file id %d without a string", f.Rank, ev.Get(spec.File))
				}
				lr.files[name] = true
				stacks[ev.Thread] = append(st, &open{line: int(ev.Get(spec.Line))})
			case spec.IterBegin, spec.IterEnd:
				if len(st) == 0 {
					t.Fatalf("rank %d thread %d: %s outside any loop", f.Rank, ev.Thread, ev.Name())
				}
				top := st[len(st)-1]
				if (ev.Kind == spec.IterBegin) == top.inIter {
					t.Fatalf("rank %d thread %d: %s in loop %d: iterations do not alternate", f.Rank, ev.Thread, ev.Name(), top.line)
				}
				top.inIter = ev.Kind == spec.IterBegin
				if top.inIter {
					top.sampled++
					top.iters = append(top.iters, uint64(ev.Get(spec.Iter)))
				} else {
					lr.nvalues[len(ev.Values)]++
				}
			case spec.LoopEnd:
				if len(st) == 0 {
					t.Fatalf("rank %d thread %d: LoopEnd outside any loop", f.Rank, ev.Thread)
				}
				top := st[len(st)-1]
				if top.inIter {
					t.Fatalf("rank %d thread %d: loop %d ends inside a sampled iteration", f.Rank, ev.Thread, top.line)
				}
				stacks[ev.Thread] = st[:len(st)-1]
				s := lr.loops[top.line]
				if s == nil {
					s = &loopStat{}
					lr.loops[top.line] = s
				}
				s.execs++
				s.iters += int(ev.Get(spec.Count))
				s.sampled += top.sampled
				s.sampledIters = append(s.sampledIters, top.iters...)
				fl := int(ev.Get(spec.Flags))
				if i := sort.SearchInts(s.flags, fl); i == len(s.flags) || s.flags[i] != fl {
					s.flags = append(s.flags, fl)
					sort.Ints(s.flags)
				}
			case spec.ClockSync:
			default:
				name, _ := r.Strings().Lookup(ev.Fn())
				lr.calls[name]++
			}
		}
		if err := r.Err(); err != nil {
			t.Fatalf("rank %d: reading: %v", f.Rank, err)
		}
		for _, st := range stacks {
			lr.unclosed += len(st)
		}
		r.Close()
		out[f.Rank] = lr
	}
	return out
}

// compileWith builds fixtures/programs/NAME.c with the compiler cc and the
// marker header's directory on the include path.
func compileWith(t *testing.T, cc, name string) string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "programs", name+".c"))
	if err != nil {
		t.Fatal(err)
	}
	inc, _ := filepath.Abs(filepath.Join("..", "..", "recorder", "c"))
	out := filepath.Join(t.TempDir(), name)
	if b, err := exec.Command(cc, "-O1", "-pthread", "-I", inc, "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("compiling %s with %s: %v\n%s", name, cc, err, b)
	}
	return out
}

// recordEnv runs `mpitrace record -o out -- argv...` with extra environment.
func recordEnv(t *testing.T, out string, env []string, argv ...string) result {
	t.Helper()
	args := append([]string{mpitraceBin, "record", "-o", out, "--"}, argv...)
	return runEnv(t, filepath.Dir(out), env, args...)
}

// TestLoopsWithoutMPI: a program without MPI is recorded as one rank, and
// with chance 1 every count is the known one: nesting, break, continue,
// return, goto, do-while, longjmp, threads, thread exit and program exit
// inside a loop, an uncounted loop.
func TestLoopsWithoutMPI(t *testing.T) {
	bin := compileWith(t, "cc", "loops")
	plain := run(t, t.TempDir(), bin)
	if plain.code != 0 {
		t.Fatalf("loops without the recorder: exit %d\n%s", plain.code, plain.stderr)
	}
	dir := filepath.Join(t.TempDir(), "trace")
	res := recordEnv(t, dir, []string{"MPITRACE_LOOP_CHANCE=1"}, bin)
	if res.code != 0 {
		t.Fatalf("record: exit %d\n%s", res.code, res.stderr)
	}
	if res.stdout != plain.stdout {
		t.Errorf("the recorder changed the program's output:\n%q\nwithout it:\n%q", res.stdout, plain.stdout)
	}
	for _, name := range []string{"rank-00000.mpit", tracefmt.ManifestName} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	ranks := readLoops(t, dir)
	if len(ranks) != 1 || ranks[0] == nil {
		t.Fatalf("got ranks %v, want rank 0 alone", ranks)
	}
	r := ranks[0]
	h := r.header
	if h.Size != 1 || h.Rank != 0 {
		t.Errorf("header rank %d size %d, want 0 and 1", h.Rank, h.Size)
	}
	for _, kv := range h.Meta {
		if strings.HasPrefix(kv.Key, "mpi_") {
			t.Errorf("header of a program without MPI has %s=%q", kv.Key, kv.Value)
		}
	}
	counters, _ := h.Get("loop_counters")
	if chance, _ := h.Get("loop_chance"); chance != "1" {
		t.Errorf("loop_chance %q, want 1 (MPITRACE_LOOP_CHANCE)", chance)
	}
	if seed, ok := h.Get("loop_seed"); !ok || seed == "" {
		t.Errorf("no loop_seed in the header")
	}
	want := map[int]string{
		100: "execs=1 iters=1000 sampled=1000 flags=[0]",
		200: "execs=1 iters=20 sampled=20 flags=[0]",
		201: "execs=20 iters=1000 sampled=1000 flags=[0]",
		300: "execs=1 iters=8 sampled=8 flags=[0]",
		400: "execs=1 iters=10 sampled=10 flags=[0]",
		500: "execs=3 iters=15 sampled=15 flags=[0]",
		600: "execs=1 iters=3 sampled=3 flags=[0]",
		601: "execs=3 iters=24 sampled=24 flags=[0]",
		650: "execs=1 iters=6 sampled=6 flags=[0]",
		700: fmt.Sprintf("execs=1 iters=4 sampled=4 flags=[%d]", spec.LoopUnwound),
		701: "execs=1 iters=5 sampled=5 flags=[0]",
		800: "execs=4 iters=1000 sampled=1000 flags=[0]",
		801: "execs=1000 iters=4000 sampled=4000 flags=[0]",
		900: fmt.Sprintf("execs=1 iters=10 sampled=10 flags=[%d]", spec.LoopUnwound),
		950: fmt.Sprintf("execs=1 iters=3 sampled=3 flags=[%d]", spec.LoopUnwound),
		960: fmt.Sprintf("execs=1 iters=0 sampled=0 flags=[%d]", spec.LoopUncounted),
		961: "execs=10 iters=30 sampled=30 flags=[0]",
	}
	for line, w := range want {
		if s := r.loops[line]; s == nil || s.String() != w {
			t.Errorf("site %d: %v, want %s", line, s, w)
		}
	}
	for line, s := range r.loops {
		if _, ok := want[line]; !ok {
			t.Errorf("unexpected site %d: %v", line, s)
		}
	}
	if r.unclosed != 0 {
		t.Errorf("%d loops left open in the log", r.unclosed)
	}
	if !reflect.DeepEqual(r.files, map[string]bool{"loops.c": true}) {
		t.Errorf("site files %v, want loops.c", r.files)
	}
	// Every sampled iteration carries the header's counters (a thread
	// whose counters could not be opened carries none).
	n := 0
	if counters != "" {
		n = len(strings.Split(counters, ","))
	}
	for k := range r.nvalues {
		if k != n && k != 0 {
			t.Errorf("IterEnd events with %d values, header loop_counters=%q", k, counters)
		}
	}
	for _, cmd := range [][]string{{"dump", dir}, {"stats", dir}} {
		res := run(t, dir, append([]string{mpitraceBin}, cmd...)...)
		if res.code != 0 || strings.Contains(res.stderr, "abnormal_end") {
			t.Errorf("mpitrace %s: exit %d\n%s", cmd[0], res.code, res.stderr)
		}
	}
}

// binomialOK reports whether k successes of n trials are within 5 sigma
// of chance p.
func binomialOK(k, n int, p float64) bool {
	mean := float64(n) * p
	sigma := math.Sqrt(float64(n) * p * (1 - p))
	return math.Abs(float64(k)-mean) <= 5*sigma+1
}

// TestLoopsSampling: with chance p the sampled fraction lies in a binomial
// bound; a nested loop runs instrumented exactly under the sampled
// iterations of its parent (chance^2 in all); the same seed samples the
// same iterations; the markers' own chance holds without the override;
// MPITRACE_LOOP_COUNTERS=none leaves the counters out.
func TestLoopsSampling(t *testing.T) {
	bin := compileWith(t, "cc", "loops")
	const n = 20000
	sample := func(env ...string) *loopRank {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "trace")
		res := recordEnv(t, dir, env, bin, "sample", fmt.Sprint(n))
		if res.code != 0 {
			t.Fatalf("record %v: exit %d\n%s", env, res.code, res.stderr)
		}
		return readLoops(t, dir)[0]
	}
	const p = 0.1
	a := sample("MPITRACE_LOOP_CHANCE=0.1", "MPITRACE_LOOP_SEED=42", "MPITRACE_LOOP_COUNTERS=none")
	top, outer, inner := a.loops[1000], a.loops[1100], a.loops[1101]
	if top == nil || outer == nil || inner == nil {
		t.Fatalf("sites 1000, 1100, 1101: %v %v %v", top, outer, inner)
	}
	if ch, _ := a.header.Get("loop_chance"); ch != "0.1" {
		t.Errorf("loop_chance %q, want 0.1 as MPITRACE_LOOP_CHANCE spelled it", ch)
	}
	if top.iters != n || outer.iters != n/10 {
		t.Errorf("iterations %d and %d, want %d and %d", top.iters, outer.iters, n, n/10)
	}
	if !binomialOK(top.sampled, n, p) {
		t.Errorf("site 1000: %d of %d iterations sampled, chance %g", top.sampled, n, p)
	}
	if !binomialOK(outer.sampled, n/10, p) {
		t.Errorf("site 1100: %d of %d iterations sampled, chance %g", outer.sampled, n/10, p)
	}
	if inner.execs != outer.sampled || inner.iters != 10*outer.sampled {
		t.Errorf("site 1101 ran instrumented %d times (%d iterations); its parent had %d sampled iterations", inner.execs, inner.iters, outer.sampled)
	}
	if !binomialOK(inner.sampled, inner.iters, p) {
		t.Errorf("site 1101: %d of %d instrumented iterations sampled, chance %g", inner.sampled, inner.iters, p)
	}
	// Of all n inner iterations the program ran, chance² are sampled.
	if !binomialOK(inner.sampled, n, p*p) {
		t.Errorf("site 1101: %d of %d iterations sampled, want about chance² = %g", inner.sampled, n, p*p)
	}
	if c, _ := a.header.Get("loop_counters"); c != "" || len(a.nvalues) != 1 || a.nvalues[0] == 0 {
		t.Errorf("MPITRACE_LOOP_COUNTERS=none: loop_counters=%q, IterEnd values %v", c, a.nvalues)
	}
	if s, _ := a.header.Get("loop_seed"); s != "42" {
		t.Errorf("loop_seed %q, want 42", s)
	}

	b := sample("MPITRACE_LOOP_CHANCE=0.1", "MPITRACE_LOOP_SEED=42", "MPITRACE_LOOP_COUNTERS=none")
	for _, line := range []int{1000, 1100, 1101} {
		if !reflect.DeepEqual(a.loops[line].sampledIters, b.loops[line].sampledIters) {
			t.Errorf("site %d: the same seed sampled other iterations", line)
		}
	}
	c := sample("MPITRACE_LOOP_CHANCE=0.1", "MPITRACE_LOOP_SEED=43")
	if reflect.DeepEqual(a.loops[1000].sampledIters, c.loops[1000].sampledIters) {
		t.Errorf("site 1000: seeds 42 and 43 sampled the same %d iterations", len(a.loops[1000].sampledIters))
	}

	// Without the override, the markers' chance (0.25).
	d := sample()
	if ch, _ := d.header.Get("loop_chance"); ch != "instrumented" {
		t.Errorf("loop_chance %q without MPITRACE_LOOP_CHANCE, want instrumented", ch)
	}
	if s := d.loops[1000]; s == nil || !binomialOK(s.sampled, n, 0.25) {
		t.Errorf("site 1000 with the markers' chance 0.25: %v of %d", s, n)
	}
}

// TestLoopsMPI: an MPI program with markers, recorded on 3 ranks under
// each MPI: every rank has its known counts (a loop before MPI_Init
// included) and its MPI calls as without markers.
func TestLoopsMPI(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			bin := compileWith(t, m.cc, "loopsmpi")
			dir := filepath.Join(t.TempDir(), "trace")
			res := recordEnv(t, dir, []string{"MPITRACE_LOOP_CHANCE=1"}, m.launch(3, bin)...)
			if res.code != 0 {
				t.Fatalf("record: exit %d\n%s", res.code, res.stderr)
			}
			if !strings.Contains(res.stdout, "total ") {
				t.Errorf("program output %q", res.stdout)
			}
			ranks := readLoops(t, dir)
			if len(ranks) != 3 {
				t.Fatalf("%d rank logs, want 3", len(ranks))
			}
			for rank := 0; rank < 3; rank++ {
				r := ranks[rank]
				if r == nil {
					t.Fatalf("rank %d: no log", rank)
				}
				want := map[int]string{
					10: "execs=1 iters=5 sampled=5 flags=[0]",
					20: fmt.Sprintf("execs=1 iters=%d sampled=%d flags=[0]", 30+rank, 30+rank),
					21: fmt.Sprintf("execs=%d iters=%d sampled=%d flags=[0]", 30+rank, (30+rank)*(rank+2), (30+rank)*(rank+2)),
					30: "execs=1 iters=3 sampled=3 flags=[0]",
				}
				for line, w := range want {
					if s := r.loops[line]; s == nil || s.String() != w {
						t.Errorf("rank %d site %d: %v, want %s", rank, line, s, w)
					}
				}
				if len(r.loops) != len(want) || r.unclosed != 0 {
					t.Errorf("rank %d: sites %v, %d left open", rank, r.loops, r.unclosed)
				}
				if r.header.Size != 3 || r.header.MPILibrary == "" {
					t.Errorf("rank %d: header size %d mpi_library %q", rank, r.header.Size, r.header.MPILibrary)
				}
				for fn, n := range map[string]int{"MPI_Init": 1, "MPI_Comm_rank": 1, "MPI_Allreduce": 3, "MPI_Finalize": 1} {
					if r.calls[fn] != n {
						t.Errorf("rank %d: %d %s calls recorded, want %d (all: %v)", rank, r.calls[fn], fn, n, r.calls)
					}
				}
			}
		})
	}
}
