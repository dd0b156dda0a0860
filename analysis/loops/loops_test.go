package loops

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// readDir aggregates every rank of a trace directory, concurrently, as the
// command does.
func readDir(t *testing.T, dir string) *Report {
	t.Helper()
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		ranks []*RankLoops
	)
	err = tr.ForEachRank(0, func(r *tracefmt.RankReader) error {
		rl, err := RankOf(r)
		mu.Lock()
		ranks = append(ranks, rl)
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return Merge(ranks)
}

// kernel is a synthetic stencil: per rank, execs executions of an outer
// loop (stencil.c:41:5) of n iterations; iteration i computes for
// 500 + 10·(i mod 7) ns and runs an inner loop (stencil.c:42:9) of 10
// iterations of 100 ns each. An outer iteration is sampled when the
// sampler says so; inside it the inner loop is recorded, its odd
// iterations sampled. The outer iterations' counters are 2i and 3i.
type kernel struct {
	ranks, execs, n int
	sampled         func(rank, exec, i int) bool

	// What the test expects, filled in by build.
	outerTimes []int64 // every sampled outer iteration's time
	outerTotal int64   // every outer iteration's time
	m          int     // sampled outer iterations
	sumI       float64 // of the sampled iterations' i
}

func outerWork(i int) int64 { return 500 + 10*int64(i%7) }

const innerTime = 10 * 100

func (k *kernel) build(t *testing.T, dir string) {
	b := testgen.New(k.ranks)
	b.Meta = testgen.LoopMeta("instructions,cycles", "0.1", "42")
	for r := 0; r < k.ranks; r++ {
		rk := b.Rank(r)
		rk.Call("MPI_Init")
		for e := 0; e < k.execs; e++ {
			rk.Compute(2000)
			rk.LoopBegin("stencil.c", 41, 5)
			var pending int64
			for i := 1; i <= k.n; i++ {
				d := outerWork(i) + innerTime
				k.outerTotal += d
				if !k.sampled(r, e, i) {
					pending += d
					continue
				}
				k.m++
				k.sumI += float64(i)
				k.outerTimes = append(k.outerTimes, d)
				rk.Compute(pending).IterBegin(uint64(i))
				rk.Compute(outerWork(i)/2).LoopBegin("stencil.c", 42, 9)
				var ip int64
				for j := 1; j <= 10; j++ {
					if j%2 == 0 {
						ip += 100
						continue
					}
					rk.Compute(ip).IterBegin(uint64(j))
					rk.Compute(100).IterEnd()
					ip = 0
				}
				rk.Compute(ip).LoopEnd(10, 0)
				rk.Compute(outerWork(i)-outerWork(i)/2).IterEnd(2*uint64(i), 3*uint64(i))
				pending = 0
			}
			rk.Compute(pending).LoopEnd(uint64(k.n), 0)
		}
		rk.Compute(1000).Call("MPI_Finalize")
	}
	if err := b.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
}

// lcg is a deterministic sampler with chance p.
func lcg(p float64, seed uint64) func(rank, exec, i int) bool {
	return func(rank, exec, i int) bool {
		x := (uint64(rank)<<40 ^ uint64(exec)<<20 ^ uint64(i)) + seed
		x ^= x >> 33
		x *= 0xff51afd7ed558ccd
		x ^= x >> 33
		x *= 0xc4ceb9fe1a85ec53
		x ^= x >> 33
		return float64(x>>11)/(1<<53) < p
	}
}

// fromText aggregates the first rank of a trace in the text form.
func fromText(t *testing.T, text string, keepSpans bool) *RankLoops {
	t.Helper()
	ranks, err := tracefmt.ParseText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	src := ranks[0].Source()
	a := NewAggregator(src.Header(), src.Strings())
	a.KeepSpans = keepSpans
	for src.Next() {
		a.Event(src.Event())
	}
	return a.Finish()
}

func nearestRank(v []int64, q float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	r := int(math.Ceil(q * float64(len(s))))
	return float64(s[max(r, 1)-1])
}

func near(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b)) }

func TestKernel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tr")
	k := &kernel{ranks: 2, execs: 3, n: 1000, sampled: lcg(0.1, 7)}
	k.build(t, dir)
	rep := readDir(t, dir)
	if len(rep.Loops) != 2 {
		t.Fatalf("%d loops, want 2", len(rep.Loops))
	}
	if rep.Ranks != 2 || rep.Chance != "0.1" || rep.Seed != "42" || !slices.Equal(rep.Counters, []string{"instructions", "cycles"}) {
		t.Errorf("report header %d %q %q %q", rep.Ranks, rep.Chance, rep.Seed, rep.Counters)
	}
	outer, inner := rep.Loops[0], rep.Loops[1]
	if outer.Location != "stencil.c:41:5" || outer.Depth != 0 || outer.Parent != nil {
		t.Fatalf("outer %s depth %d parent %v", outer.Location, outer.Depth, outer.Parent)
	}
	if outer.Executions != 6 || outer.Iterations != 6000 || outer.Sampled != uint64(k.m) {
		t.Errorf("outer: %d executions, %d iterations, %d sampled; want 6, 6000, %d", outer.Executions, outer.Iterations, outer.Sampled, k.m)
	}
	if k.m < 450 || k.m > 750 {
		t.Fatalf("the sampler took %d of 6000", k.m)
	}
	var sum int64
	for _, d := range k.outerTimes {
		sum += d
	}
	mean := float64(sum) / float64(k.m)
	if !near(outer.Time.Mean, mean, 1e-12) || outer.Time.P50 != nearestRank(k.outerTimes, 0.5) ||
		outer.Time.P95 != nearestRank(k.outerTimes, 0.95) || !outer.Time.Exact {
		t.Errorf("outer time %+v, want mean %g p50 %g p95 %g", *outer.Time, mean, nearestRank(k.outerTimes, 0.5), nearestRank(k.outerTimes, 0.95))
	}
	if outer.Measured != k.outerTotal {
		t.Errorf("outer measured %d, want %d", outer.Measured, k.outerTotal)
	}
	if outer.CI95 == nil || float64(k.outerTotal) < outer.CI95[0] || float64(k.outerTotal) > outer.CI95[1] || outer.InCI == nil || !*outer.InCI {
		t.Errorf("outer CI %v does not hold the true total %d", outer.CI95, k.outerTotal)
	}
	if !near(outer.Estimated, mean*6000, 1e-12) || !near(outer.Quality, 1, 0.01) {
		t.Errorf("outer estimate %g quality %g", outer.Estimated, outer.Quality)
	}
	if len(outer.Counters) != 2 || !near(outer.Counters[0].Mean, 2*k.sumI/float64(k.m), 1e-12) ||
		outer.Counters[1].Name != "cycles" || !near(outer.Counters[1].Mean, 3*k.sumI/float64(k.m), 1e-12) {
		t.Errorf("outer counters %+v", outer.Counters)
	}
	if outer.RunWide != nil {
		t.Error("a top-level loop has a run-wide estimate")
	}
	if len(outer.PerRank) != 2 || outer.PerRank[0].Rank != 0 || outer.PerRank[1].Executions != 3 || outer.PerRank[0].Iterations != 3000 {
		t.Errorf("outer per rank %+v", outer.PerRank)
	}

	// The inner loop: seen only in the m sampled outer iterations.
	if inner.Location != "stencil.c:42:9" || inner.Depth != 1 || inner.Parent == nil || *inner.Parent != "stencil.c:41:5" {
		t.Fatalf("inner %s depth %d parent %v", inner.Location, inner.Depth, inner.Parent)
	}
	m := uint64(k.m)
	if inner.Executions != m || inner.Iterations != 10*m || inner.Sampled != 5*m || inner.Measured != innerTime*int64(m) {
		t.Errorf("inner: %d executions %d iterations %d sampled %d ns; m=%d", inner.Executions, inner.Iterations, inner.Sampled, inner.Measured, m)
	}
	if inner.Time.Mean != 100 || inner.Time.P95 != 100 || inner.Estimated != float64(100*10*m) {
		t.Errorf("inner time %+v estimate %g", *inner.Time, inner.Estimated)
	}
	rw := inner.RunWide
	if rw == nil || rw.Method != "ipw" || !near(rw.Executions, 6000, 1e-12) || !near(rw.Iterations, 60000, 1e-12) ||
		!near(rw.TimeNs, 6000*innerTime, 1e-12) || !near(rw.Inclusion, float64(m)/6000, 1e-12) {
		t.Fatalf("inner run-wide %+v", rw)
	}
	if rw.CI95 == nil || !near(rw.CI95[0], rw.TimeNs, 1e-9) || !near(rw.CI95[1], rw.TimeNs, 1e-9) {
		t.Errorf("inner run-wide CI %v: every parent iteration has the same inner time, the interval is a point", rw.CI95)
	}
	if inner.PerRank[0].RunWide == nil || !near(inner.PerRank[0].RunWide.Iterations, 30000, 1e-12) {
		t.Errorf("inner per-rank run-wide %+v", inner.PerRank[0].RunWide)
	}
}

// TestCoverage: over many seeds, the 95% interval of a regular kernel's
// estimate holds the true total about 95% of the time.
func TestCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("many traces")
	}
	hits, runs := 0, 40
	for s := 0; s < runs; s++ {
		dir := filepath.Join(t.TempDir(), "tr")
		k := &kernel{ranks: 1, execs: 1, n: 2000, sampled: lcg(0.05, uint64(s)*1000003)}
		k.build(t, dir)
		rep := readDir(t, dir)
		if o := rep.Loops[0]; o.InCI != nil && *o.InCI {
			hits++
		}
	}
	if hits < runs*80/100 {
		t.Errorf("the interval held the measured time in %d of %d runs", hits, runs)
	}
}

// TestIPWUneven: the inner loop runs only in even outer iterations, with
// a trip count that grows with i: the run-wide estimate is unbiased, so
// its interval holds the truth, and it is far from the recorded figures.
func TestIPWUneven(t *testing.T) {
	b := testgen.New(1)
	r := b.Rank(0)
	const n = 4000
	smp := lcg(0.2, 99)
	var trueIters, trueTime int64
	r.LoopBegin("a.c", 1, 1)
	var pending int64
	for i := 1; i <= n; i++ {
		trips := 0
		if i%2 == 0 {
			trips = 1 + i%13
		}
		trueIters += int64(trips)
		trueTime += int64(trips) * 50
		if !smp(0, 0, i) {
			pending += 10 + int64(trips)*50
			continue
		}
		r.Compute(pending).IterBegin(uint64(i))
		r.Compute(10)
		if trips > 0 {
			r.LoopBegin("a.c", 2, 3)
			r.Compute(int64(trips)*50).LoopEnd(uint64(trips), 0)
		}
		r.IterEnd()
		pending = 0
	}
	r.Compute(pending).LoopEnd(n, 0)
	dir := filepath.Join(t.TempDir(), "tr")
	if err := b.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	rep := readDir(t, dir)
	in := rep.Loops[1]
	rw := in.RunWide
	if rw == nil || rw.CI95 == nil {
		t.Fatalf("no run-wide estimate: %+v", in)
	}
	if float64(trueTime) < rw.CI95[0] || float64(trueTime) > rw.CI95[1] || !near(rw.Iterations, float64(trueIters), 0.1) {
		t.Errorf("run-wide %+v; true time %d, iterations %d", rw, trueTime, trueIters)
	}
	if near(float64(in.Measured), float64(trueTime), 0.5) {
		t.Errorf("the recorded time %d is already near the truth %d: the test shows nothing", in.Measured, trueTime)
	}
}

func TestSketch(t *testing.T) {
	var a, b, c sketch
	for i := int64(1); i <= 3*exactLimit; i++ {
		a.add(i)
		if i%2 == 0 {
			b.add(i)
		} else {
			c.add(i)
		}
	}
	if a.Exact() || len(a.buckets) > 1000 {
		t.Fatalf("exact %v, %d buckets", a.Exact(), len(a.buckets))
	}
	for _, q := range []float64{0.01, 0.5, 0.95, 1} {
		want := math.Ceil(q * 3 * exactLimit)
		if got := a.quantile(q); math.Abs(got-want) > sketchError*want+1 {
			t.Errorf("q%g: %g, want %g", q, got, want)
		}
		var bc, cb sketch
		bc.merge(&b)
		bc.merge(&c)
		cb.merge(&c)
		cb.merge(&b)
		if bc.quantile(q) != cb.quantile(q) || bc.quantile(q) != a.quantile(q) {
			t.Errorf("q%g depends on the merge order: %g %g %g", q, bc.quantile(q), cb.quantile(q), a.quantile(q))
		}
	}
	var z sketch
	if z.quantile(0.5) != 0 {
		t.Error("empty sketch")
	}
	z.add(0)
	z.add(-5)
	z.add(7)
	if z.quantile(0.5) != 0 || z.quantile(1) != 7 {
		t.Errorf("small exact sketch: %g %g", z.quantile(0.5), z.quantile(1))
	}
}

func TestMomentsMerge(t *testing.T) {
	var all, x, y moments
	for i := 0; i < 1000; i++ {
		v := float64(i*i%97) + 1e9
		all.add(v)
		if i < 300 {
			x.add(v)
		} else {
			y.add(v)
		}
	}
	x.merge(&y)
	if x.n != all.n || !near(x.mean, all.mean, 1e-15) || !near(x.variance(), all.variance(), 1e-9) {
		t.Errorf("merged %+v, all %+v", x, all)
	}
}

const unbalanced = `rank 0
meta size="1"
LoopEnd count=1
IterBegin iter=1
IterEnd
LoopBegin file=a.c line=1 col=1
IterEnd
IterBegin iter=1
IterBegin iter=2
t=100 IterEnd
LoopEnd count=3 flags=1
LoopBegin file=a.c line=1 col=1
LoopBegin file=b.c line=2 col=2
thr=1 LoopBegin file=#9 line=3 col=3
`

func TestUnbalanced(t *testing.T) {
	rep := Merge([]*RankLoops{fromText(t, unbalanced, false)})
	if rep.Skipped != 5 || rep.Open != 3 {
		t.Errorf("skipped %d open %d, want 5 and 3", rep.Skipped, rep.Open)
	}
	if len(rep.Loops) != 3 || rep.Loops[0].Location != "#9:3:3" || rep.Loops[1].Executions != 1 || rep.Loops[1].Sampled != 1 ||
		rep.Loops[1].Unwound != 1 || rep.Loops[1].Iterations != 3 {
		for _, l := range rep.Loops {
			t.Logf("%s %+v", l.Location, l.Figures)
		}
		t.Error("unexpected loops")
	}
	var sb strings.Builder
	if err := WriteText(&sb, rep, TextOptions{ByRank: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "5 skipped, 3 executions still open") {
		t.Error(sb.String())
	}
}

// FuzzAggregate feeds arbitrary loop event streams (and calls) to the
// aggregator and the validator: neither panics, the report renders, and a
// stream the validator finds balanced is one the aggregator took whole.
func FuzzAggregate(f *testing.F) {
	f.Add([]byte{1, 3, 4, 3, 4, 2})
	f.Add([]byte{2, 4, 3, 1, 1, 3, 1, 3, 4, 2, 4, 2, 0})
	f.Add([]byte{1, 1, 1, 9, 3, 17, 4, 2, 2, 2, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 4000 {
			return
		}
		var sb strings.Builder
		sb.WriteString("rank 0\nmeta size=\"1\"\nmeta loop_counters=\"a,b\"\nstring 1 \"x.c\"\nstring 2 \"MPI_Send\"\n")
		iter := map[int]int{}
		for i, op := range ops {
			th := int(op>>5) & 1
			switch op & 7 {
			case 0:
				sb.WriteString("Call fn=MPI_Send\n")
			case 1:
				sb.WriteString(sprintf("thr=%d gap=%d LoopBegin file=#%d line=%d col=1\n", th, i%5, 1+int(op>>6), int(op>>3)&3))
			case 2:
				sb.WriteString(sprintf("thr=%d gap=%d LoopEnd count=%d flags=%d\n", th, i%3, iter[th]+int(op>>6), int(op>>3)&3))
				iter[th] = 0
			case 3:
				iter[th]++
				sb.WriteString(sprintf("thr=%d gap=%d IterBegin iter=%d\n", th, i%7, iter[th]))
			case 4:
				sb.WriteString(sprintf("thr=%d gap=%d IterEnd values=[%d,%d,%d]\n", th, i%11, i, op, int(op>>3)))
			}
		}
		ranks, err := tracefmt.ParseText(strings.NewReader(sb.String()))
		if err != nil {
			t.Fatalf("%v\n%s", err, sb.String())
		}
		src := ranks[0].Source()
		a := NewAggregator(src.Header(), src.Strings())
		v := tracefmt.NewValidator(src.Header(), src.Strings(), "f")
		for src.Next() {
			a.Event(src.Event())
			v.Event(src.Event())
		}
		rl := a.Finish()
		d := v.Finish()
		rep := Merge([]*RankLoops{rl, rl})
		var out strings.Builder
		if err := WriteText(&out, rep, TextOptions{ByRank: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(rep); err != nil {
			t.Fatal(err)
		}
		nesting := 0
		for _, c := range []string{tracefmt.CodeLoopEndUnopened, tracefmt.CodeIterOutsideLoop, tracefmt.CodeIterEndUnopened,
			tracefmt.CodeIterUnclosed, tracefmt.CodeLoopUnclosed} {
			nesting += d.CountCode(c)
		}
		if nesting == 0 && (rl.Skipped != 0 || rl.Open != 0) {
			t.Errorf("the validator finds the nesting right, the aggregator skipped %d and left %d open\n%s", rl.Skipped, rl.Open, sb.String())
		}
		for _, l := range rep.Loops {
			if l.Time != nil && (math.IsNaN(l.Time.Mean) || l.Time.Mean < 0) {
				t.Errorf("%s: mean %g", l.Location, l.Time.Mean)
			}
			if l.RunWide != nil && (math.IsNaN(l.RunWide.TimeNs) || l.RunWide.Inclusion > 1) {
				t.Errorf("%s: run-wide %+v", l.Location, *l.RunWide)
			}
		}
	})
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func TestSpans(t *testing.T) {
	// Two threads run the same loop at once: counted once.
	rl := fromText(t, `rank 0
t=100 LoopBegin file=a.c line=1 col=1
t=200 LoopEnd
t=150 thr=1 LoopBegin file=a.c line=1 col=1
t=150 thr=1 IterBegin iter=1
t=160 thr=1 LoopBegin file=b.c line=2 col=1
t=170 thr=1 LoopEnd
t=250 thr=1 IterEnd
t=250 thr=1 LoopEnd count=1
`, true)
	s := NewSpans([]*RankLoops{rl})
	got := map[string]int64{}
	s.Overlap(0, 0, 1000, func(loop string, ns int64) { got[loop] += ns })
	if got[""] != 150 || got["a.c:1:1"] != 150 || got["b.c:2:1"] != 10 || len(got) != 3 {
		t.Errorf("overlap %v", got)
	}
	if d, p := s.Describe("b.c:2:1"); d != 1 || p != "a.c:1:1" || !s.Partial() || s.Empty() {
		t.Errorf("describe %d %q", d, p)
	}
}

// File names are data: a newline or a colon in one cannot merge two
// calling contexts nor lose a loop.
func TestOddFileNames(t *testing.T) {
	rl := fromText(t, `rank 0
string 1 "a\n1"
string 2 "a"
string 3 "1:1\n"
LoopBegin file=#1 line=1 col=1
IterBegin iter=1
LoopBegin file=#2 line=1 col=1
LoopEnd count=0
IterEnd
LoopEnd count=1
LoopBegin file=#2 line=1 col=1
IterBegin iter=1
LoopBegin file=#3 line=1 col=1
LoopEnd count=0
IterEnd
LoopEnd count=1
`, false)
	rep := Merge([]*RankLoops{rl})
	var got []string
	for _, l := range rep.Loops {
		p := "-"
		if l.Parent != nil {
			p = *l.Parent
		}
		got = append(got, fmt.Sprintf("%d %q < %q", l.Depth, l.Location, p))
	}
	want := []string{`0 "a:1:1" < "-"`, `1 "1:1\n:1:1" < "a:1:1"`, `0 "a\n1:1:1" < "-"`, `1 "a:1:1" < "a\n1:1:1"`}
	if !slices.Equal(got, want) {
		t.Errorf("loops\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
