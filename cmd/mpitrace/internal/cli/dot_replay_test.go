package cli

import (
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/internal/textdiff"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// TestDotReplay: the path drawn folded or merged from the streaming
// replay, without the graph, and a part of the graph drawn from what the
// replay collected of it (--ranks, --window), are byte for byte the
// pictures drawn from the graph (their vertex ids included), on the
// stored traces and on generated long ones; and the replay does draw the
// long ones.
func TestDotReplay(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(storedTraces, "v*", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatal(dirs, err)
	}
	long := map[string]bool{}
	for name, b := range map[string]*testgen.Builder{
		"halo":   testgen.Halo(6, 120, 3),
		"serial": testgen.Serial(2000, 5),
		"ring":   testgen.Halo(3, 400, 7),
		"random": randomSteps(900, 11),
	} {
		dir := filepath.Join(t.TempDir(), name)
		if err := b.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
		long[dir] = true
	}
	// Its collectives complete out of Build's order: the replay cannot name
	// the graph's vertices, and dot builds the graph.
	unordered := filepath.Join(t.TempDir(), "unordered")
	if err := unorderedColls().WriteDir(unordered); err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, unordered)
	// A graph too big to draw whole whose path is short: dot draws the
	// graph, record --critpath the path unfolded.
	wide := filepath.Join(t.TempDir(), "wide")
	if err := testgen.Halo(300, 2, 5).WriteDir(wide); err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, wide)
	defer func() { dotStream, dotReplayDrew = true, nil }()
	drew := 0
	dotReplayDrew = func() { drew++ }
	pictures := [][]string{{"dot", "--critical-only"}, {"dot"}, {"dot", "--critical-only", "--unfold", "--max-vertices", "0"},
		// Parts of the graph, from what the replay collected of them.
		{"dot", "--ranks", "0"}, {"dot", "--ranks", "1-2", "--window", "10us:2ms"}, {"dot", "--window", ":50us", "--critical-only"},
		{"dot", "--ranks", "0,2", "--window", "1ms:", "--max-vertices", "0"}}
	for _, dir := range dirs {
		for _, args := range pictures {
			part := slices.Contains(args, "--ranks") || slices.Contains(args, "--window")
			args := append(args, dir)
			dotStream = false
			code0, out0, errs0 := runCLI(t, args...)
			before := drew
			dotStream = true
			code1, out1, errs1 := runCLI(t, args...)
			if code0 != code1 || out0 != out1 || errs0 != errs1 {
				t.Errorf("mpitrace %v: from the replay, exit %d, from the graph %d; stdout:\n%s\nstderr:\n%s", args, code1, code0,
					textdiff.Lines(out0, out1), textdiff.Lines(errs0, errs1))
			}
			if long[dir] && code1 == 0 && drew == before {
				t.Errorf("mpitrace %v: the replay did not draw the picture", args)
			}
			if dir == unordered && drew != before {
				t.Errorf("mpitrace %v: the replay drew a path whose vertices it cannot name", args)
			}
			if want := map[bool]string{true: "merged by MPI function and rank", false: "folded: "}[filepath.Base(dir) == "random"]; long[dir] && !part && !slices.Contains(args, "--unfold") && !strings.Contains(out1, want) {
				t.Errorf("mpitrace %v: the picture is not %q:\n%s", args, want, out1)
			}
		}
	}
	// record --critpath's analysis (critPath.out, taskgraph.dot and the
	// summary) of the long traces.
	for _, dir := range append(slices.Sorted(maps.Keys(long)), wide) {
		var outs [2]string
		before := drew
		for i, stream := range []bool{false, true} {
			dotStream = stream
			var errb strings.Builder
			err := recordCritpath(&recordOptions{Out: dir}, dir, &Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errb})
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			for _, f := range []string{critPathFile, taskGraphDOT} {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				outs[i] += string(b)
			}
			outs[i] += errb.String()
		}
		if outs[0] != outs[1] {
			t.Errorf("record --critpath of %s: from the replay, from the graph:\n%s", dir, textdiff.Lines(outs[0], outs[1]))
		}
		if drew == before {
			t.Errorf("record --critpath of %s: the replay did not draw the path", dir)
		}
	}
	if drew == 0 {
		t.Error("the replay drew no picture")
	}
	t.Logf("the replay drew %d of %d pictures", drew, len(pictures)*len(dirs)+len(long)+1)
}

// randomSteps is a 2-rank program whose iterations pick one of five
// exchanges at random: its path does not fold, and is drawn merged; its
// messages and blocking and nonblocking collectives give the vertices
// ids of every kind.
func randomSteps(iters int, seed uint64) *testgen.Builder {
	rng := rand.New(rand.NewPCG(seed, seed))
	b := testgen.New(2)
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.Call("MPI_Init")
	r1.Call("MPI_Init")
	for range iters {
		switch rng.IntN(5) {
		case 0:
			r0.Compute(30_000).Send(1, 1, 4096)
			r1.Recv(0, 1, 4096)
		case 1:
			r1.Compute(20_000).Send(0, 2, 64)
			r0.Recv(1, 2, 64)
		case 2:
			q0 := r0.Compute(3_000).Icoll("MPI_Iallreduce", spec.RootNone, 8, 8)
			q1 := r1.Compute(9_000).Icoll("MPI_Iallreduce", spec.RootNone, 8, 8)
			r0.Compute(2_000).Wait(q0)
			r1.Compute(1_000).Wait(q1)
		case 3:
			s0, q1 := r0.Isend(1, 3, 1<<20), r1.Irecv(0, 3, 1<<20)
			r0.Compute(4_000).Wait(s0)
			r1.Compute(6_000).Waitall(q1)
		default:
			r0.Compute(5_000).Allreduce(8)
			r1.Compute(7_000).Allreduce(8)
		}
	}
	r0.Compute(1_000).Call("MPI_Finalize")
	r1.Compute(1_000).Call("MPI_Finalize")
	return b
}

// unorderedColls is a 2-rank program whose MPI_Ibarrier on a second
// communicator, rank 0's first collective call, completes after the
// MPI_Barrier both ranks make next: rank 1 posts it only after the
// barrier.
func unorderedColls() *testgen.Builder {
	b := testgen.New(2)
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.Call("MPI_Init")
	r1.Call("MPI_Init")
	c0 := r0.CommNew("MPI_Comm_dup", spec.CommWorld, 7, 0, 1)
	c1 := r1.CommNew("MPI_Comm_dup", spec.CommWorld, 7, 0, 1)
	q0 := r0.Compute(1_000).On(c0).Icoll("MPI_Ibarrier", spec.RootNone, 0, 0)
	r0.Compute(2_000).Barrier()
	r1.Compute(5_000).Barrier()
	q1 := r1.Compute(1_000).On(c1).Icoll("MPI_Ibarrier", spec.RootNone, 0, 0)
	r0.Compute(1_000).Wait(q0)
	r1.Compute(1_000).Wait(q1)
	r0.Compute(1_000).Call("MPI_Finalize")
	r1.Compute(1_000).Call("MPI_Finalize")
	return b
}
