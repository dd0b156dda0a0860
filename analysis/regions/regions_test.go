package regions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// fromText aggregates the ranks of a trace in the text form.
func fromText(t testing.TB, text string, keepSpans bool) []*RankRegions {
	t.Helper()
	ranks, err := tracefmt.ParseText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return aggregate(ranks, keepSpans)
}

func aggregate(ranks []*tracefmt.RankData, keepSpans bool) []*RankRegions {
	var out []*RankRegions
	for _, d := range ranks {
		src := d.Source()
		a := NewAggregator(src.Header(), src.Strings())
		a.KeepSpans = keepSpans
		for src.Next() {
			a.Event(src.Event())
		}
		out = append(out, a.Finish())
	}
	return out
}

// find returns the node at a path of names ("main/timestep/axpy").
func find(t *testing.T, rep *Report, path string) *Node {
	t.Helper()
	nodes := rep.Nodes
	var n *Node
	for _, name := range strings.Split(path, "/") {
		n = nil
		for _, c := range nodes {
			if c.Name == name {
				n = c
			}
		}
		if n == nil {
			t.Fatalf("no node %q in %s", path, dump(rep))
		}
		nodes = n.Children
	}
	return n
}

func dump(rep *Report) string {
	var b strings.Builder
	WriteText(&b, rep, TextOptions{})
	return b.String()
}

type want struct {
	kind                   string
	calls                  uint64
	total, self, mpi       int64
	children, ranks, depth int
}

func check(t *testing.T, rep *Report, path string, w want) {
	t.Helper()
	n := find(t, rep, path)
	got := want{n.Kind, n.Calls, n.TotalNs, n.SelfNs, n.MPINs, len(n.Children), n.Ranks, n.Depth}
	if got != w {
		t.Errorf("%s: %+v, want %+v", path, got, w)
	}
}

const nested = `rank 0
t=0 RegionBegin name=main
t=10 RegionBegin name=timestep
t=20 KernelBegin type=1 name=axpy dev=0
t=50 KernelEnd
t=60 Call fn=MPI_Allreduce dur=15
t=80 KernelBegin type=2 name=dot dev=0
t=90 KernelEnd
t=100 RegionEnd
t=110 RegionBegin name=timestep
t=130 KernelBegin type=1 name=axpy dev=0
t=160 KernelEnd
t=165 KernelBegin type=4 name=sync dev=0
t=168 KernelEnd
t=170 RegionEnd
t=180 Call fn=MPI_Barrier dur=5
t=200 RegionEnd
`

func TestNesting(t *testing.T) {
	rep := Merge(fromText(t, nested, false))
	if len(rep.Nodes) != 1 || rep.Counts != (Counts{}) {
		t.Fatalf("%d roots, counts %+v", len(rep.Nodes), rep.Counts)
	}
	check(t, rep, "main", want{KindRegion, 1, 200, 200 - 90 - 60, 20, 1, 1, 0})
	check(t, rep, "main/timestep", want{KindRegion, 2, 150, 90 - 30 - 10 + 60 - 30 - 3, 15, 3, 1, 1})
	check(t, rep, "main/timestep/axpy", want{KindFor, 2, 60, 60, 0, 0, 1, 2})
	check(t, rep, "main/timestep/dot", want{KindReduce, 1, 10, 10, 0, 0, 1, 2})
	check(t, rep, "main/timestep/sync", want{KindFence, 1, 3, 3, 0, 0, 1, 2})
	// Children by time, most first.
	c := find(t, rep, "main/timestep").Children
	if c[0].Name != "axpy" || c[1].Name != "dot" || c[2].Name != "sync" {
		t.Errorf("children order %s %s %s", c[0].Name, c[1].Name, c[2].Name)
	}
	if len(rep.Devices) != 1 || rep.Devices[0] != (Count{"Serial", 4}) {
		t.Errorf("devices %+v", rep.Devices)
	}
}

// Three ranks, rank 2 never runs solve: it counts 0 in the mean and min.
// Rank 0 runs it on two threads at once: both calls count.
func TestImbalance(t *testing.T) {
	rep := Merge(fromText(t, `rank 0
t=0 RegionBegin name=solve
t=100 RegionEnd
t=20 thr=1 RegionBegin name=solve
t=70 thr=1 RegionEnd
rank 1
t=0 RegionBegin name=solve
t=300 RegionEnd
rank 2
t=0 RegionBegin name=io
t=30 RegionEnd
`, false))
	if rep.Ranks != 3 {
		t.Fatalf("ranks %d", rep.Ranks)
	}
	n := find(t, rep, "solve")
	if n.Calls != 3 || n.Ranks != 2 || n.TotalNs != 450 || n.MeanNs != 150 || n.MinNs != 0 || n.MaxNs != 300 ||
		n.MaxRank != 1 || n.Imbalance != 2 {
		t.Errorf("solve %+v", n)
	}
	if len(n.PerRank) != 2 || n.PerRank[0] != (RankFigures{Rank: 0, Figures: Figures{Calls: 2, TotalNs: 150, SelfNs: 150}}) || n.PerRank[1].Rank != 1 {
		t.Errorf("per rank %+v", n.PerRank)
	}
	io := find(t, rep, "io")
	if io.MaxRank != 2 || io.MinNs != 0 || io.Imbalance != 3 {
		t.Errorf("io %+v", io)
	}
	if rep.Nodes[0] != n {
		t.Error("the roots are not sorted by time")
	}
	// Every rank took as long: no imbalance, min = max.
	even := Merge(fromText(t, "rank 0\nt=0 RegionBegin name=a\nt=40 RegionEnd\nrank 1\nt=5 RegionBegin name=a\nt=45 RegionEnd\n", false))
	if a := find(t, even, "a"); a.Imbalance != 1 || a.MinNs != 40 || a.MaxRank != 0 {
		t.Errorf("even %+v", a)
	}
}

// Sections are top-level nodes whatever is open around them, need not
// nest, and match by id within their thread.
func TestSections(t *testing.T) {
	rep := Merge(fromText(t, `rank 0
t=0 RegionBegin name=main
t=10 SectionBegin sec=1 name=assembly
t=20 SectionBegin sec=2 name=io
t=30 Call fn=MPI_Send dur=10
t=50 SectionEnd sec=1
t=60 SectionEnd sec=2
t=70 SectionBegin sec=1 name=assembly
t=75 SectionEnd sec=1
t=80 thr=1 SectionEnd sec=2
t=100 RegionEnd
`, false))
	check(t, rep, "main", want{KindRegion, 1, 100, 100, 10, 0, 1, 0})
	check(t, rep, "assembly", want{KindSection, 2, 45, 45, 10, 0, 1, 0})
	check(t, rep, "io", want{KindSection, 1, 40, 40, 10, 0, 1, 0})
	if rep.Counts != (Counts{Skipped: 1}) {
		t.Errorf("counts %+v", rep.Counts)
	}
}

// Unwound, unmatched, crossed, skipped and unclosed ends are counted, and
// the tree is still built.
func TestUnbalanced(t *testing.T) {
	rep := Merge(fromText(t, `rank 0
t=0 RegionEnd flags=2
t=1 KernelEnd
t=10 RegionBegin name=a
t=20 KernelBegin type=1 name=k dev=0
t=30 RegionEnd
t=40 RegionBegin name=b
t=50 RegionEnd flags=1
t=60 RegionBegin name=open
t=70 KernelBegin type=9 name=odd dev=117440512
t=90 Call fn=MPI_Barrier dur=10
t=5 thr=1 SectionBegin sec=3 name=s
t=8 thr=1 CopyEnd
`, false))
	if want := (Counts{Unwound: 1, Unmatched: 1, Skipped: 2, Crossed: 1, Unclosed: 3}); rep.Counts != want {
		t.Errorf("counts %+v, want %+v", rep.Counts, want)
	}
	check(t, rep, "a", want{KindRegion, 1, 20, 10, 0, 1, 1, 0})
	check(t, rep, "a/k", want{KindFor, 1, 10, 10, 0, 0, 1, 1})
	check(t, rep, "b", want{KindRegion, 1, 10, 10, 0, 0, 1, 0})
	// Closed at the end of the thread's last event (the barrier, at 100).
	check(t, rep, "open", want{KindRegion, 1, 40, 10, 10, 1, 1, 0})
	check(t, rep, "open/odd", want{KindKernel, 1, 30, 30, 10, 0, 1, 1})
	check(t, rep, "s", want{KindSection, 1, 3, 3, 0, 0, 1, 0})
	if b := find(t, rep, "b"); b.Unwound != 1 {
		t.Errorf("b unwound %d", b.Unwound)
	}
	if o := find(t, rep, "open/odd"); o.Unclosed != 1 {
		t.Errorf("odd unclosed %d", o.Unclosed)
	}
	if len(rep.Devices) != 2 || rep.Devices[0] != (Count{"SYCL", 1}) || rep.Devices[1] != (Count{"Serial", 1}) {
		t.Errorf("devices %+v", rep.Devices)
	}
}

// The high-water mark follows the start times of every thread's events,
// not the reader's order of the threads.
func TestMemory(t *testing.T) {
	rep := Merge(fromText(t, `rank 0
t=0 Alloc space=HostSpace name=x bytes=100
t=50 Free space=HostSpace name=x bytes=100
t=55 Alloc space=CudaSpace name=d bytes=1000
t=10 thr=1 Alloc space=HostSpace name=y bytes=200
t=60 thr=1 Free space=HostSpace name=y bytes=200
t=70 thr=1 Alloc space=HostSpace name=z bytes=50
rank 1
t=0 Alloc space=HostSpace name=x bytes=400
t=10 Free space=HostSpace name=x bytes=400
rank 2
t=0 Mark name=nothing
`, false))
	if len(rep.Memory) != 2 || rep.Memory[0].Space != "CudaSpace" || rep.Memory[1].Space != "HostSpace" {
		t.Fatalf("memory %+v", rep.Memory)
	}
	h := rep.Memory[1]
	if h.Allocations != 4 || h.Frees != 3 || h.Allocated != 750 || h.HighWaterMax != 400 || h.MaxRank != 1 ||
		h.HighWaterMean != 700.0/3 || len(h.PerRank) != 2 {
		t.Errorf("HostSpace %+v", h)
	}
	if r0 := h.PerRank[0]; r0 != (RankMemory{Rank: 0, MemCounts: MemCounts{Allocations: 3, Frees: 2, Allocated: 350}, HighWater: 300, LiveAtEnd: 50}) {
		t.Errorf("rank 0 %+v", r0)
	}
	if c := rep.Memory[0]; c.HighWaterMax != 1000 || c.MaxRank != 0 || c.PerRank[0].LiveAtEnd != 1000 {
		t.Errorf("CudaSpace %+v", c)
	}
	if rep.Empty() || len(rep.Nodes) != 0 {
		t.Error("a trace with allocations only is not empty, and has no nodes")
	}
}

func TestCopiesAndMPI(t *testing.T) {
	rep := Merge(fromText(t, `rank 0
string 1 "Kokkos::View::initialization [x]"
t=0 RegionBegin name=exchange
t=10 CopyBegin space=HostSpace name=x_h srcspace=CudaSpace srcname=x bytes=4096
t=30 CopyEnd
t=40 Call fn=MPI_Sendrecv dur=20
t=70 CopyBegin space=CudaSpace name=x srcspace=HostSpace srcname=x_h bytes=4096
t=75 Call fn=MPI_Wait dur=5
t=90 CopyEnd
t=95 KernelBegin type=1 name=#1 dev=33554432
t=99 KernelEnd
t=100 RegionEnd
`, false))
	check(t, rep, "exchange", want{KindRegion, 1, 100, 100 - 20 - 20 - 4, 25, 3, 1, 0})
	check(t, rep, "exchange/deep_copy HostSpace:x_h <- CudaSpace:x", want{KindCopy, 1, 20, 20, 0, 0, 1, 1})
	check(t, rep, "exchange/deep_copy CudaSpace:x <- HostSpace:x_h", want{KindCopy, 1, 20, 20, 5, 0, 1, 1})
	check(t, rep, "exchange/Kokkos::View::initialization [x]", want{KindFor, 1, 4, 4, 0, 0, 1, 1})
	if n := find(t, rep, "exchange/deep_copy HostSpace:x_h <- CudaSpace:x"); n.Bytes != 4096 {
		t.Errorf("bytes %d", n.Bytes)
	}
	if rep.Devices[0].Name != "Cuda" {
		t.Errorf("devices %+v", rep.Devices)
	}
}

func TestMetaMarksDualViews(t *testing.T) {
	rep := Merge(fromText(t, `rank 0
t=0 Meta name=kokkos.version value=4.2.0
t=1 Meta name=backend value=Serial
t=2 Meta name=backend value=Serial
t=3 Mark name=checkpoint
t=4 Mark name=checkpoint
t=5 Mark name=restart
t=6 DualView name=dv flags=0
t=7 DualView name=dv flags=1
t=8 DualView name=dv flags=2
t=9 DualView name=dv flags=3
t=9 DualView name=dv flags=3
rank 1
t=0 Meta name=kokkos.version value=4.2.0
t=1 Meta name=backend value=OpenMP
t=3 Mark name=restart
t=3 Mark name=restart
t=3 RegionBegin name=r
t=4 RegionEnd
`, false))
	if len(rep.Meta) != 2 || rep.Meta[0].Key != "backend" || len(rep.Meta[0].Values) != 2 ||
		rep.Meta[0].Values[0].Value != "Serial" || rep.Meta[0].Values[0].Ranks != "0" || rep.Meta[0].Values[1].Ranks != "1" ||
		rep.Meta[1].Values[0].Ranks != "0-1" {
		t.Errorf("meta %s", mustJSON(t, rep.Meta))
	}
	if len(rep.Marks) != 2 || rep.Marks[0] != (Count{"restart", 3}) || rep.Marks[1] != (Count{"checkpoint", 2}) {
		t.Errorf("marks %+v", rep.Marks)
	}
	if len(rep.DualViews) != 1 || *rep.DualViews[0] != (DualViewCount{Name: "dv", SyncHost: 1, SyncDevice: 1, ModifyHost: 1, ModifyDevice: 2}) {
		t.Errorf("dual views %+v", rep.DualViews[0])
	}
	text := dump(rep)
	for _, s := range []string{"backend = Serial (ranks 0)", "kokkos.version = 4.2.0\n", "restart     3", "dv            1            1            1              2"} {
		if !strings.Contains(text, s) {
			t.Errorf("text lacks %q:\n%s", s, text)
		}
	}
}

// Spans are where each node ran, for the critical path: a node counted
// once where two threads run it at once, its parents including it.
func TestSpans(t *testing.T) {
	ranks := fromText(t, `rank 0
t=0 RegionBegin name=step
t=10 KernelBegin type=1 name=k dev=0
t=30 KernelEnd
t=40 RegionEnd
t=20 thr=1 RegionBegin name=step
t=50 thr=1 RegionEnd
rank 1
t=100 RegionBegin name=other
t=200 RegionEnd
`, true)
	rep := Merge(ranks)
	s := NewSpans(ranks)
	got := map[string]int64{}
	s.Overlap(0, 5, 45, func(key string, ns int64) { got[key] += ns })
	step, k := find(t, rep, "step"), find(t, rep, "step/k")
	if len(got) != 3 || got[""] != 40 || got[step.Key] != 40 || got[k.Key] != 20 {
		t.Errorf("overlap %v", got)
	}
	if kind, name := s.Node(k.Key); kind != KindFor || name != "k" {
		t.Errorf("node %q %q", kind, name)
	}
	if d, p := s.Describe(k.Key); d != 1 || p != step.Key {
		t.Errorf("describe %d %q", d, p)
	}
	rep.MarkCriticalPath(map[string]float64{k.Key: 20, step.Key: 40, "nothing": 3}, 100, 80)
	if !k.OnCriticalPath || k.CriticalPathNs != 20 || find(t, rep, "other").OnCriticalPath || !rep.CriticalPath.Computed {
		t.Errorf("marks %+v %+v", k, rep.CriticalPath)
	}
	if !strings.Contains(dump(rep), "*    k  ") {
		t.Errorf("no mark:\n%s", dump(rep))
	}
}

// addCounts adds every counter, whatever its type, and no name.
func TestAddCounts(t *testing.T) {
	f := Figures{Calls: 1, TotalNs: 2, SelfNs: 3, MPINs: 4, Bytes: 5, Unwound: 6, Unclosed: 7}
	addCounts(&f, &f)
	if f != (Figures{Calls: 2, TotalNs: 4, SelfNs: 6, MPINs: 8, Bytes: 10, Unwound: 12, Unclosed: 14}) {
		t.Errorf("figures %+v", f)
	}
	d := DualViewCount{Name: "a", SyncHost: 1, ModifyDevice: 3}
	addCounts(&d, &DualViewCount{Name: "b", SyncHost: 1, SyncDevice: 2, ModifyHost: 4, ModifyDevice: 5})
	if d != (DualViewCount{Name: "a", SyncHost: 2, SyncDevice: 2, ModifyHost: 4, ModifyDevice: 8}) {
		t.Errorf("dual view %+v", d)
	}
	c := Counts{Unwound: 1, Unclosed: 9}
	addCounts(&c, &Counts{Unwound: 1, Unmatched: 2, Skipped: 3, Crossed: 4, Unclosed: 5})
	if c != (Counts{Unwound: 2, Unmatched: 2, Skipped: 3, Crossed: 4, Unclosed: 14}) {
		t.Errorf("counts %+v", c)
	}
}

func mustJSON(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The same events give the same output, whatever the reading order of
// the ranks.
func TestDeterministic(t *testing.T) {
	ranks := fromText(t, nested+strings.Replace(nested, "rank 0", "rank 1", 1), false)
	a := dump(Merge(ranks))
	ranks[0], ranks[1] = ranks[1], ranks[0]
	if b := dump(Merge(ranks)); a != b {
		t.Errorf("outputs differ:\n%s\n%s", a, b)
	}
}

func FuzzRegions(f *testing.F) {
	f.Add(nested)
	f.Add("rank 0\nRegionEnd flags=3\nKernelBegin type=0 name=#0 dev=18446744073709551615\nCopyBegin bytes=18446744073709551615\nAlloc bytes=18446744073709551615\nAlloc bytes=18446744073709551615\nFree\nSectionEnd sec=-1\n")
	f.Add("rank 0\nt=9223372036854775807 RegionBegin name=a\nt=-9223372036854775808 RegionEnd\nt=0 thr=4 SectionBegin sec=1\nrank 1\nMeta name=a value=b\nDualView flags=255\nMark name=#5\n")
	f.Fuzz(func(t *testing.T, text string) {
		ranks, err := tracefmt.ParseText(strings.NewReader(text))
		if err != nil {
			return
		}
		rs := aggregate(ranks, true)
		rep := Merge(rs)
		rep.Walk(func(n *Node) {
			if n.SelfNs > n.TotalNs || n.MPINs > n.TotalNs || n.SelfNs < 0 || n.Ranks > rep.Ranks || math.IsNaN(n.Imbalance) {
				t.Errorf("node %+v", n)
			}
		})
		s := NewSpans(rs)
		for _, r := range rs {
			s.Overlap(r.Rank, math.MinInt64/2, math.MaxInt64/2, func(string, int64) {})
		}
		if err := WriteText(io.Discard, rep, TextOptions{ByRank: true}); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(rep); err != nil {
			t.Fatal(fmt.Errorf("json: %w", err))
		}
	})
}

// TestMangledKernelNames: Kokkos names a kernel without a label by its
// functor's type as typeid spells it; the tree shows it demangled, and
// leaves region names and labels as they are.
func TestMangledKernelNames(t *testing.T) {
	rep := Merge(fromText(t, `rank 0
t=0 RegionBegin name=4KinE
t=10 KernelBegin type=1 name=4KinE dev=0
t=20 KernelEnd
t=30 KernelBegin type=2 name=Z4mainEUliE_ dev=0
t=40 KernelEnd
t=50 KernelBegin type=1 name=ForceLJNeigh::compute dev=0
t=60 KernelEnd
t=70 RegionEnd
`, false))
	check(t, rep, "4KinE/KinE", want{KindFor, 1, 10, 10, 0, 0, 1, 1})
	check(t, rep, "4KinE/main::{lambda(int)#1}", want{KindReduce, 1, 10, 10, 0, 0, 1, 1})
	check(t, rep, "4KinE/ForceLJNeigh::compute", want{KindFor, 1, 10, 10, 0, 0, 1, 1})
}

// TestShownNames: the tables print a name with a newline escaped and a
// long name cut, and align names of several-byte characters.
func TestShownNames(t *testing.T) {
	long := strings.Repeat("x", 200)
	rep := Merge(fromText(t, `rank 0
string 1 "a\nb"
string 2 "`+long+`"
string 3 "größe"
t=0 RegionBegin name=#1
t=10 RegionEnd
t=20 RegionBegin name=#2
t=30 RegionEnd
t=40 RegionBegin name=#3
t=50 RegionEnd
`, false))
	out := dump(rep)
	if !strings.Contains(out, `a\nb`) || strings.Contains(out, long) || !strings.Contains(out, strings.Repeat("x", maxShown-1)+"…") {
		t.Errorf("names not escaped or cut:\n%s", out)
	}
	var rows []int
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " region ") {
			rows = append(rows, strings.Index(l, " region ")-len(l)+utf8.RuneCountInString(l))
		}
	}
	if len(rows) != 3 || rows[0] != rows[1] || rows[1] != rows[2] {
		t.Errorf("kind column at %v, want three equal:\n%s", rows, out)
	}
}

// TestDeepNesting: a crafted trace nesting 5,000 regions keeps MaxDepth
// levels and one node for the rest, in bounded time and memory.
func TestDeepNesting(t *testing.T) {
	var b strings.Builder
	b.WriteString("rank 0\n")
	const n = 5000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "t=%d RegionBegin name=r%d\n", i, i)
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "t=%d RegionEnd\n", n+i)
	}
	rep := Merge(fromText(t, b.String(), false))
	count, deepest := 0, 0
	var deep *Node
	rep.Walk(func(x *Node) {
		count++
		deepest = max(deepest, x.Depth)
		if x.Name == DeepName {
			deep = x
		}
	})
	if count != MaxDepth+1 || deepest != MaxDepth || deep == nil || deep.Calls != n-MaxDepth {
		t.Errorf("%d nodes, deepest at %d, deep node %+v; want %d, %d, %d calls", count, deepest, deep, MaxDepth+1, MaxDepth, n-MaxDepth)
	}
}
