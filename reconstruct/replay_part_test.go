package reconstruct_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// compareGroups replays srcs() as one group and in 2, 3 and 5 groups
// (ReplayGroups) and reports how the results differ: "" when they agree.
func compareGroups(srcs func() []tracefmt.Source) (string, error) {
	return compareGroupsIn(srcs, []int{2, 3, 5})
}

// compareGroupsIn is compareGroups in each number of groups of gs.
func compareGroupsIn(srcs func() []tracefmt.Source, gs []int) (string, error) {
	return compareGroupsWith(srcs, gs, nil)
}

// compareGroupsWith is compareGroupsIn, under measured weights when
// offsets is not nil (compareGroupsMeasured).
func compareGroupsWith(srcs func() []tracefmt.Source, gs []int, offsets map[int]int64) (string, error) {
	replay := func(groups int) (*reconstruct.ReplayResult, error) {
		switch {
		case offsets == nil && groups == 1:
			return reconstruct.ReplaySources(srcs(), replayWeights{}, reconstruct.Options{})
		case offsets == nil:
			return reconstruct.ReplayGroups(srcs(), replayWeights{}, reconstruct.Options{}, groups)
		case groups == 1:
			return reconstruct.ReplayMeasured(srcs(), offsets, reconstruct.Options{})
		}
		return reconstruct.ReplayGroupsMeasured(srcs(), offsets, reconstruct.Options{}, groups)
	}
	one, err1 := replay(1)
	if one != nil {
		defer one.Close()
	}
	for _, groups := range gs {
		res, err := replay(groups)
		var ns1, ns *reconstruct.NotStreamableError
		if errors.As(err, &ns) && errors.As(err1, &ns1) {
			continue // declined both ways (for a reason each may find first)
		}
		if (err == nil) != (err1 == nil) || err != nil && err.Error() != err1.Error() {
			if res != nil {
				res.Close()
			}
			return fmt.Sprintf("%d groups: error %v, one group's %v", groups, err, err1), nil
		}
		if err != nil {
			continue
		}
		d, err := sameResult(one, res)
		if err == nil && d == "" && offsets != nil {
			// Its exported fields (a wait's function id is each engine's).
			a, _ := json.Marshal(one.Run)
			b, _ := json.Marshal(res.Run)
			if !bytes.Equal(a, b) {
				d = fmt.Sprintf("run %s\nwant %s", b, a)
			}
		}
		res.Close()
		if err != nil || d != "" {
			return fmt.Sprintf("%d groups: %s", groups, d), err
		}
	}
	return "", nil
}

// sameResult compares two replays' results (the ids of the steps apart).
func sameResult(a, b *reconstruct.ReplayResult) (string, error) {
	if a.Length != b.Length || a.NumSteps != b.NumSteps || a.RunTime != b.RunTime {
		return fmt.Sprintf("length %v, %d steps, run %d; want %v, %d, %d", b.Length, b.NumSteps, b.RunTime, a.Length, a.NumSteps, a.RunTime), nil
	}
	sa, sb := a.Shape, b.Shape
	sa.IDs, sb.IDs = false, false
	if sa != sb {
		return fmt.Sprintf("shape %+v, want %+v", sb, sa), nil
	}
	if da, db := a.Diags.All(), b.Diags.All(); !slices.Equal(da, db) {
		var sb strings.Builder
		for _, d := range db {
			fmt.Fprintln(&sb, "  ", d)
		}
		sb.WriteString("want\n")
		for _, d := range da {
			fmt.Fprintln(&sb, "  ", d)
		}
		return "diagnostics\n" + sb.String(), nil
	}
	steps := func(r *reconstruct.ReplayResult) ([]reconstruct.ReplayStep, error) {
		var out []reconstruct.ReplayStep
		err := r.Steps(func(st *reconstruct.ReplayStep) error {
			s := *st
			s.ID = 0
			out = append(out, s)
			return nil
		})
		return out, err
	}
	pa, err := steps(a)
	if err != nil {
		return "", err
	}
	pb, err := steps(b)
	if err != nil {
		return "", err
	}
	for i := range pa {
		if pa[i] != pb[i] {
			return fmt.Sprintf("step %d: %+v\nwant %+v", i, pb[i], pa[i]), nil
		}
	}
	return "", nil
}

// TestReplayGroupsGolden: in groups, the replay gives one group's result
// on every golden case and every case where the replay once differed.
func TestReplayGroupsGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.test")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	more, _ := filepath.Glob("testdata/replay/*.test")
	for _, file := range append(files, more...) {
		diff, err := compareGroups(dataSources(goldenRanks(t, file)))
		if err != nil || diff != "" {
			t.Errorf("%s: %v %s", file, err, diff)
		}
	}
}

// TestReplayGroupsRandom: in groups, the replay gives one group's result
// on random traces.
func TestReplayGroupsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	n := 2000
	if testing.Short() || raceEnabled {
		n = 300 // under the race detector, the groups' goroutines are what it looks at
	}
	for i := 0; i < n; i++ {
		ranks := randomRanks(rng)
		diff, err := compareGroups(dataSources(ranks))
		if err != nil || diff != "" {
			var sb strings.Builder
			for _, d := range ranks {
				_ = tracefmt.WriteText(&sb, d.Source())
			}
			t.Fatalf("case %d: %v %s\n%s", i, err, diff, sb.String())
		}
	}
}

// TestReplayGroupsMPILike: in 2, 3 and as many groups as ranks, the
// replay gives one group's result on generated MPI-like programs of up to
// 16 ranks (replay_gen_test.go's, with their mutations).
func TestReplayGroupsMPILike(t *testing.T) {
	defer func(n int) { genRanks = n }(genRanks)
	genRanks = 16
	rng := rand.New(rand.NewPCG(41, 42))
	n := 1500
	if testing.Short() || raceEnabled {
		n = 200 // under the race detector, the groups' goroutines are what it looks at
	}
	defer func(b int) { *reconstruct.BatchFull = b }(*reconstruct.BatchFull)
	for i := 0; i < n; i++ {
		// Every third with the groups' batches full at every message:
		// a group stops for the round at each.
		*reconstruct.BatchFull = []int{1 << 14, 1 << 14, 1}[i%3]
		text := mutate(rng, genText(rng))
		ranks, err := tracefmt.ParseText(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		diff, err := compareGroupsIn(dataSources(ranks), []int{2, 3, len(ranks)})
		if err != nil || diff != "" {
			t.Fatalf("case %d: %v %s\n%s", i, err, diff, text)
		}
	}
}

// TestReplayGroupsGenerated: in groups, the replay of generated traces
// and of the stored traces of real runs is one group's.
func TestReplayGroupsGenerated(t *testing.T) {
	forGeneratedTraces(t, []*testgen.Builder{testgen.Halo(7, 60, 3), testgen.Serial(2000, 5), testgen.Halo(40, 5, 1)},
		func(dir string, srcs func() []tracefmt.Source) {
			diff, err := compareGroups(srcs)
			if err != nil || diff != "" {
				t.Errorf("%s: %v %s", dir, err, diff)
			}
		})
}

// forGeneratedTraces calls check with the directory and a maker of the
// spooled sources of each trace written by builders and each stored
// trace of real runs; the sources made are closed after check.
func forGeneratedTraces(t *testing.T, builders []*testgen.Builder, check func(dir string, srcs func() []tracefmt.Source)) {
	t.Helper()
	var dirs []string
	for _, b := range builders {
		dir := t.TempDir()
		if err := b.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	stored, _ := filepath.Glob("../fixtures/traces/v*/*")
	for _, dir := range append(dirs, stored...) {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.mpit")); len(m) == 0 {
			continue
		}
		var open []func()
		check(dir, func() []tracefmt.Source {
			s, done := spooledSources(t, dir)
			open = append(open, done)
			return s
		})
		for _, done := range open {
			done()
		}
	}
}

// pairText: n ranks in pairs across the middle (rank r with r+n/2), each
// iteration an MPI_Isend to the partner, a blocking receive from it and
// the Isend's MPI_Wait: a receive pairs once its sender's Wait is read,
// which in groups is another group's reading ahead.
func pairText(n, iters int) string {
	var sb strings.Builder
	for r := 0; r < n; r++ {
		fmt.Fprintf(&sb, "rank %d\nmeta size=\"%d\"\n", r, n)
		t := int64(0)
		ev := func(s string) { fmt.Fprintf(&sb, "t=%d %s\n", t, s); t += 100 }
		ev("Call fn=MPI_Init dur=10")
		p := (r + n/2) % n
		for i := 0; i < iters; i++ {
			ev(fmt.Sprintf("Send fn=MPI_Isend dur=10 peer=%d tag=0 comm=1 bytes=8 req=1", p))
			ev(fmt.Sprintf("Recv fn=MPI_Recv dur=10 peer=%d tag=0 comm=1 bytes=8 src=%d stag=0 sbytes=8", p, p))
			ev("Complete fn=MPI_Wait dur=10 flag=1 completions=[{req=1 src=0 stag=0 sbytes=0 flags=0}]")
		}
		ev("Call fn=MPI_Finalize dur=10")
		sb.WriteString("end reason=finalize\n")
	}
	return sb.String()
}

// aheadText: rank 0's Isend to rank 2 is settled by its MPI_Wait only
// after k sends to rank 3, while rank 0 waits for rank 2's answer: rank 2
// needs rank 0 read k events ahead (one replay's resolve does it).
func aheadText(k int) string {
	var sb strings.Builder
	n := 4
	for r := 0; r < n; r++ {
		fmt.Fprintf(&sb, "rank %d\nmeta size=\"%d\"\n", r, n)
		t := int64(0)
		ev := func(s string) { fmt.Fprintf(&sb, "t=%d %s\n", t, s); t += 100 }
		ev("Call fn=MPI_Init dur=10")
		switch r {
		case 0:
			ev("Send fn=MPI_Isend dur=10 peer=2 tag=0 comm=1 bytes=8 req=1")
			ev("Recv fn=MPI_Recv dur=10 peer=2 tag=0 comm=1 bytes=8 src=2 stag=0 sbytes=8")
			for i := 0; i < k; i++ {
				ev("Send fn=MPI_Send dur=10 peer=3 tag=5 comm=1 bytes=8 req=0")
			}
			ev("Complete fn=MPI_Wait dur=10 flag=1 completions=[{req=1 src=0 stag=0 sbytes=0 flags=0}]")
		case 2:
			ev("Recv fn=MPI_Recv dur=10 peer=0 tag=0 comm=1 bytes=8 src=0 stag=0 sbytes=8")
			ev("Send fn=MPI_Send dur=10 peer=0 tag=0 comm=1 bytes=8 req=0")
		case 3:
			for i := 0; i < k; i++ {
				ev("Recv fn=MPI_Recv dur=10 peer=0 tag=5 comm=1 bytes=8 src=0 stag=5 sbytes=8")
			}
		}
		ev("Call fn=MPI_Finalize dur=10")
		sb.WriteString("end reason=finalize\n")
	}
	return sb.String()
}

// TestReplayGroupsReadAhead: a receive waiting for a record of another
// group's rank has that rank read ahead by its group, as one replay reads
// a waiting sender ahead: no global stall (every rank reading ahead), the
// same result. Before, each such wait was a global stall: one an
// iteration, or k for a sender k events behind.
func TestReplayGroupsReadAhead(t *testing.T) {
	for _, c := range []struct {
		name string
		text string
	}{{"pairs", pairText(8, 300)}, {"pairs-wide", pairText(64, 20)}, {"ahead", aheadText(3000)}} {
		ranks, err := tracefmt.ParseText(strings.NewReader(c.text))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range []int{2, 4} {
			res, err := reconstruct.ReplayGroups(dataSources(ranks)(), replayWeights{}, reconstruct.Options{}, g)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stalls != 0 {
				t.Errorf("%s, %d groups: %d global stalls", c.name, g, res.Stalls)
			}
			res.Close()
		}
		if diff, err := compareGroupsIn(dataSources(ranks), []int{2, 4}); err != nil || diff != "" {
			t.Errorf("%s: %v %s", c.name, err, diff)
		}
	}
}

// compareGroupsMeasured is compareGroupsIn under measured weights, the
// clocks aligned by offsets: the path, its diagnostics and the run (wait
// states, what was clamped) of ReplayGroupsMeasured are ReplayMeasured's.
func compareGroupsMeasured(srcs func() []tracefmt.Source, offsets map[int]int64, gs []int) (string, error) {
	if offsets == nil {
		offsets = map[int]int64{}
	}
	return compareGroupsWith(srcs, gs, offsets)
}

// nonblockingColl is a nonblocking collective call in the text form.
var nonblockingColl = regexp.MustCompile(`Coll fn=MPI_I(\w+) (.*)req=\d+`)

// randomOffsets gives the ranks of ranks clock offsets of up to ±2 µs.
func randomOffsets(rng *rand.Rand, ranks []*tracefmt.RankData) map[int]int64 {
	off := make(map[int]int64)
	for _, d := range ranks {
		off[d.Header.Rank] = rng.Int64N(4001) - 2000
	}
	return off
}

// TestReplayGroupsMeasured: under measured weights, in 2, 3 and 5 groups
// (as many as ranks for the MPI-like programs), the replay gives one
// group's path, diagnostics and run on the golden cases, random traces,
// generated MPI-like programs, generated traces and the stored traces of
// real runs, their clocks given random offsets: nonblocking collectives
// (the groups' agreement on when one was done; genInFlight's in flight
// across rounds) and blocking ones.
func TestReplayGroupsMeasured(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	cases := 0
	check := func(what string, ranks []*tracefmt.RankData, gs []int) {
		t.Helper()
		cases++
		diff, err := compareGroupsMeasured(dataSources(ranks), randomOffsets(rng, ranks), gs)
		if err != nil || diff != "" {
			var sb strings.Builder
			for _, d := range ranks {
				_ = tracefmt.WriteText(&sb, d.Source())
			}
			t.Fatalf("%s: %v %s\n%s", what, err, diff, sb.String())
		}
	}
	files, _ := filepath.Glob("testdata/*.test")
	more, _ := filepath.Glob("testdata/replay/*.test")
	for _, file := range append(files, more...) {
		check(file, goldenRanks(t, file), []int{2, 3, 5})
	}
	n := 600
	if testing.Short() || raceEnabled {
		n = 100
	}
	for i := range n {
		check(fmt.Sprintf("random case %d", i), randomRanks(rng), []int{2, 3, 5})
	}
	defer func(n int) { genRanks = n }(genRanks)
	genRanks = 16
	for i := range n {
		text := mutate(rng, genText(rng))
		if i%2 == 1 {
			// Its nonblocking collectives made blocking (their requests
			// then complete nothing).
			text = nonblockingColl.ReplaceAllString(text, "Coll fn=MPI_$1 ${2}req=0")
		}
		ranks, err := tracefmt.ParseText(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("MPI-like case %d", i), ranks, []int{2, 3, len(ranks)})
	}
	// Nonblocking collectives in flight across rounds, completed late or
	// never, by Test loops or in batches, ranks ending early.
	for i := range n / 2 {
		text := genInFlight(rng)
		if i%2 == 1 {
			text = mutate(rng, text)
		}
		ranks, err := tracefmt.ParseText(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("in-flight case %d", i), ranks, []int{2, 3, 5, len(ranks)})
	}
	// Generated traces and the stored traces of real runs.
	forGeneratedTraces(t, []*testgen.Builder{testgen.Halo(7, 60, 3), testgen.Halo(40, 5, 1)},
		func(dir string, srcs func() []tracefmt.Source) {
			off := make(map[int]int64)
			for _, s := range srcs() {
				off[s.Header().Rank] = rng.Int64N(4001) - 2000
			}
			cases++
			diff, err := compareGroupsMeasured(srcs, off, []int{2, 3, 5})
			if err != nil || diff != "" {
				t.Errorf("%s: %v %s", dir, err, diff)
			}
		})
	t.Logf("%d cases", cases)
}
