package critpath

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/fold"
	"github.com/mpitrace/mpitrace/internal/benchtrace"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// longBody is the body of longPath's iterations: no two neighbours (nor
// the last and the first) one function.
var longBody = []string{"MPI_Irecv", "MPI_Send", "MPI_Comm_rank", "MPI_Wtime", "MPI_Comm_rank",
	"MPI_Wait", "MPI_Comm_size", "MPI_Wtime", "MPI_Allreduce", "MPI_Wait"}

// longPath is a path of n steps on one rank, as the replay would give it
// (no graph): MPI_Init, iterations of longBody, MPI_Finalize. noisy: the
// hop into each call is a message or a computation at random, as on
// serial1, so that SameStep and SameCall give up early and SameFunction
// folds it; else SameStep folds the whole path. merge: one iteration in
// two at random ends with a second MPI_Wait, so that only the merged
// level folds it. It is generated on each pass, holding nothing per step.
func longPath(n int, noisy, merge bool) *StepPath {
	each := func(fn func(*reconstruct.ReplayStep) error) error {
		var st reconstruct.ReplayStep
		x := uint64(12345)
		rnd := func() bool {
			x = x*6364136223846793005 + 1442695040888963407
			return x>>63 != 0
		}
		at, again := 0, false // the place in the body, a second MPI_Wait due
		for i := range n {
			st = reconstruct.ReplayStep{Kind: taskgraph.KindOp, Rank: 0, SiteRank: 0}
			switch {
			case i == 0:
				st.Kind, st.Name, st.Rank = taskgraph.KindInit, "MPI_Init", -1
			case i == n-1:
				st.Kind, st.Name, st.Rank = taskgraph.KindFinalize, "MPI_Finalize", -1
				st.In = reconstruct.ReplayEdge{Kind: taskgraph.FinalizeIn, Weight: 1000}
			default:
				if again {
					st.Name, again = "MPI_Wait", false
				} else {
					st.Name = longBody[at]
					if at++; at == len(longBody) {
						at, again = 0, merge && rnd()
					}
				}
				st.Site = uint32(len(st.Name))
				st.In = reconstruct.ReplayEdge{Kind: taskgraph.Compute, Weight: 1000}
				if noisy && rnd() {
					st.Cross = true
					st.In = reconstruct.ReplayEdge{Kind: taskgraph.Message, Cross: 500, Bytes: 8}
				}
			}
			if i == 1 {
				st.In.Kind = taskgraph.InitOut
			}
			if err := fn(&st); err != nil {
				return err
			}
		}
		return nil
	}
	sp := &StepPath{NumSteps: n, each: each, tables: func() map[int]*tracefmt.Sites { return nil }}
	each(func(st *reconstruct.ReplayStep) error {
		sp.Length += HopWeight(st)
		return nil
	})
	return sp
}

// foldAllocs folds sp and returns the bytes the fold allocated in all and
// the bytes of heap still held with the fold.
func foldAllocs(t *testing.T, sp *StepPath) (total, held uint64, f *Folded) {
	t.Helper()
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f, err := sp.Fold()
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&b)
	runtime.KeepAlive(f)
	return b.TotalAlloc - a.TotalAlloc, b.HeapAlloc - min(a.HeapAlloc, b.HeapAlloc), f
}

// The fold of a long path holds a byte a vertex (its function) and
// allocates in all at most 3.5 bytes a vertex, whatever the path's length:
// folded at 1x and 4x its length, what the fold allocates grows by at most
// that much a vertex added. Besides the functions, that is the signatures
// SameStep reads when it folds the whole path (a byte each, in a buffer
// grown by doubling), and where the path merges, the merged level's
// sequence (a byte a merged step, made twice on a path of over bigFold
// vertices) and one step's first vertex in mergedEvery. Before, it held
// 13 bytes a vertex and 12 more a step while folding (the links and
// hashes), and 8 a merged step.
func TestFoldMemoryPerVertex(t *testing.T) {
	if testing.Short() {
		t.Skip("folds paths of millions of steps")
	}
	const n = 1 << 19
	for _, tc := range []struct {
		name         string
		noisy, merge bool
		level        int
	}{
		{name: "noisy", noisy: true, level: SameFunction},
		{name: "clean", level: SameStep},
		{name: "merged", merge: true, level: Merged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var total, held [2]uint64
			for k, m := range []int{1, 4} {
				sp := longPath(m*n, tc.noisy, tc.merge)
				var f *Folded
				total[k], held[k], f = foldAllocs(t, sp)
				if f.Level != tc.level || fold.Leaves(f.Nodes) > FoldTarget/3 {
					t.Fatalf("%d steps fold at level %d to %d vertices, want level %d and at most %d", m*n, f.Level, fold.Leaves(f.Nodes), tc.level, FoldTarget/3)
				}
				rep, err := SummarizeRepetition(f)
				if err != nil || rep == nil || rep.Vertices < m*n-20 {
					t.Fatalf("repetition %+v %v", rep, err)
				}
			}
			added := float64(3 * n)
			perTotal := (float64(total[1]) - float64(total[0])) / added
			perHeld := (float64(held[1]) - float64(held[0])) / added
			t.Logf("%s: allocated %d and %d bytes, held %d and %d: %.2f and %.2f bytes a vertex added", tc.name, total[0], total[1], held[0], held[1], perTotal, perHeld)
			if perTotal > 3.5 {
				t.Errorf("the fold allocates %.2f bytes a vertex added, want at most 3.5", perTotal)
			}
			if perHeld > 1.25 {
				t.Errorf("the fold holds %.2f bytes a vertex added, want at most 1.25", perHeld)
			}
		})
	}
}

// BenchmarkFoldLongPath folds a path of 4 M steps (MPITRACE_BENCH_FOLD_STEPS
// sets another length: 20000000 for issue 17's target) generated as it is
// read, from the pass over the path that makes its functions to the fold
// taken; the repetition's weight (a pass more) is not timed.
//
//	go test ./analysis/critpath -run '^$' -bench FoldLongPath -benchtime 3x -cpu 1
func BenchmarkFoldLongPath(b *testing.B) {
	n := 1 << 22
	if s := os.Getenv("MPITRACE_BENCH_FOLD_STEPS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name         string
		noisy, merge bool
	}{{"noisy", true, false}, {"clean", false, false}, {"merged", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			sp := longPath(n, tc.noisy, tc.merge)
			var f *Folded
			cpu := benchtrace.CPUTime()
			for b.Loop() {
				var err error
				if f, err = sp.Fold(); err != nil {
					b.Fatal(err)
				}
			}
			cpu = benchtrace.CPUTime() - cpu
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "steps/s")
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			b.Logf("%d steps fold at level %d to %d vertices", n, f.Level, fold.Leaves(f.Nodes))
		})
	}
}

// The merged level finds each step's vertices from one kept in
// mergedEvery, in order or not, as a table of every step's would.
func TestMergedStepVertices(t *testing.T) {
	for _, names := range [][]string{longBody, {"MPI_Wait", "MPI_Wait", "MPI_Test", "MPI_Test", "MPI_Test", "MPI_Send", "MPI_Wait"}} {
		for _, wide := range []bool{false, true} {
			var fn fnSeq
			x := uint64(7)
			var starts []int
			for i := range 5000 {
				x = x*6364136223846793005 + 1442695040888963407
				k := int(x>>33) % len(names)
				if wide {
					k += 300 // indices of two bytes
				}
				if i == 0 || k != fn.at(i-1) {
					starts = append(starts, i)
				}
				fn.add(k)
			}
			seq, m := merge(&fn, len(starts))
			if m == nil || seq.len() != len(starts) || m.steps != len(starts) {
				t.Fatalf("%d merged steps, want %d", seq.len(), len(starts))
			}
			vertices := func(i int) [2]int {
				end := fn.len()
				if i+1 < len(starts) {
					end = starts[i+1]
				}
				return [2]int{starts[i], end}
			}
			order := make([]int, 0, 3*len(starts))
			for i := range starts {
				order = append(order, i)
			}
			for range 2 * len(starts) {
				x = x*6364136223846793005 + 1442695040888963407
				order = append(order, int(x>>33)%len(starts))
			}
			for _, i := range order {
				if a, b := m.vertices(i); [2]int{a, b} != vertices(i) {
					t.Fatalf("step %d: vertices [%d, %d), want %v", i, a, b, vertices(i))
				}
				if seq.at(i) != fn.at(starts[i]) {
					t.Fatalf("merged step %d is function %d, want %d", i, seq.at(i), fn.at(starts[i]))
				}
			}
		}
	}
}
