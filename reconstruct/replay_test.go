package reconstruct_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// replayWeights weigh the same way for the graph's Longest and for
// Replay: messages and collectives by a formula of their sizes, with
// fractions, so that sums depend on the order of additions.
type replayWeights struct{ g *taskgraph.Graph }

func (replayWeights) Message(bytes int64) float64 { return 700.25 + float64(bytes)/3 }

func (w replayWeights) Collective(c taskgraph.CollectiveInfo) float64 {
	return 301.5*float64(c.Procs) + float64(c.Bytes)/7 + float64(len(c.Name))
}

type graphWeights struct{ replayWeights }

func (w graphWeights) Collective(v taskgraph.NodeID) float64 {
	ci, _ := w.g.Collective(v)
	return w.replayWeights.Collective(ci)
}

// replayStepsOf describes the graph's path as Replay does.
func replayStepsOf(g *taskgraph.Graph, p *taskgraph.Path, w graphWeights) []reconstruct.ReplayStep {
	out := make([]reconstruct.ReplayStep, p.Len())
	for i := range out {
		n := g.Node(p.Node(i))
		s := reconstruct.ReplayStep{Kind: n.Kind, Name: n.Name, Rank: n.Rank, Event: taskgraph.EventRef{Rank: -1, Index: -1, Completion: -1},
			ID: p.Node(i)}
		if i > 0 {
			e := p.Edge(i - 1)
			s.In = reconstruct.ReplayEdge{Kind: e.Kind, Rank: e.Rank, Weight: e.Weight, Bytes: e.Bytes, End: g.EdgeEnd(e), Orig: e.Weight}
			if e.Kind == taskgraph.Message {
				s.In.Cross = w.Message(e.Bytes)
			}
			s.In.FromEvent, s.In.ToEvent = -1, -1
			if ev, ok := g.PartEvent(e.From, e.Rank); ok {
				s.In.FromSite, s.In.FromEvent = g.PartSite(e.From, e.Rank), ev
			}
			if ev, ok := g.PartEvent(e.To, e.Rank); ok {
				s.In.ToSite, s.In.ToEvent = g.PartSite(e.To, e.Rank), ev
			}
		}
		s.SiteRank, s.Site = critpath.VertexSite(g, p.Node(i))
		if n.Kind == taskgraph.KindCollective {
			s.Start, s.End, s.Bytes = n.Start, n.End, n.Bytes
			s.GID, s.Procs, s.Participants, s.Nonblocking = n.GID, n.Procs, n.Participants, n.Nonblocking
			s.Weight = w.Collective(p.Node(i))
		}
		if n.Kind == taskgraph.KindOp {
			s.Event = n.Event
			// (From a collective, the nodes say which edge it is.)
			s.Cross = i > 0 && p.Edge(i-1).Kind == taskgraph.Message
			s.Start, s.End, s.Bytes = n.Start, n.End, n.Bytes
			if s.Cross {
				s.MsgBytes = p.Edge(i - 1).Bytes
			}
		}
		out[i] = s
	}
	return out
}

// compareReplay builds the graph of srcs() and finds its longest path,
// replays srcs() again, and reports how they differ: "" when they agree,
// "declined" when Replay declined.
func compareReplay(srcs func() []tracefmt.Source) (string, error) {
	g, diags, err := reconstruct.BuildFromSources(srcs(), reconstruct.Options{Workers: 1})
	if err != nil {
		return "", err
	}
	gw := graphWeights{replayWeights{g}}
	length, path, gerr := g.Longest(gw)
	res, rerr := reconstruct.ReplaySources(srcs(), gw.replayWeights, reconstruct.Options{})
	steps, diff, done, err := settle(res, rerr, gerr, diags)
	if done || err != nil {
		return diff, err
	}
	defer res.Close()
	if length != res.Length {
		return fmt.Sprintf("length %v, replay %v", length, res.Length), nil
	}
	if run := critpath.RunTime(g); res.RunTime != run {
		return fmt.Sprintf("run time %d, replay %d", run, res.RunTime), nil
	}
	if d := compareShape(g, res); d != "" {
		return d, nil
	}
	// The collectives' own steps are the path's, at their index.
	var colls []int
	if err := res.Collectives(func(i int, st *reconstruct.ReplayStep) error {
		if i < 0 || i >= len(steps) || *st != steps[i] {
			return fmt.Errorf("collective step %d: %+v, the path's %+v", i, *st, steps[min(max(i, 0), len(steps)-1)])
		}
		colls = append(colls, i)
		return nil
	}); err != nil {
		return err.Error(), nil
	}
	var want []int
	for i := range steps {
		if steps[i].Kind == taskgraph.KindCollective {
			want = append(want, i)
		}
	}
	if !slices.Equal(colls, want) {
		return fmt.Sprintf("collective steps at %v, want %v", colls, want), nil
	}
	return compareSteps(g, path, gw, steps, res.Shape.IDs)
}

// compareShape compares the graph's counts and origins with what the
// replay counted.
func compareShape(g *taskgraph.Graph, res *reconstruct.ReplayResult) string {
	edges := 0
	for range g.Edges {
		edges++
	}
	want := reconstruct.GraphShape{Size: g.Size(), Ops: g.NumOps(), Collectives: g.NumCollectives(),
		Messages: g.NumMessages(), Edges: edges, IDs: res.Shape.IDs}
	if res.Shape != want {
		return fmt.Sprintf("graph shape %+v, replay %+v", want, res.Shape)
	}
	if want.NumNodes() != g.NumNodes() {
		return fmt.Sprintf("graph of %d vertices, replay %d", g.NumNodes(), want.NumNodes())
	}
	for _, r := range g.Ranks() {
		initEnd, _, ok := g.RankSpan(r)
		org := initEnd
		if first, n := g.RankOps(r); !ok && initEnd == 0 && n > 0 {
			org = g.Node(first).Start
		}
		if got := res.Origin(r); got != org {
			return fmt.Sprintf("rank %d: origin %d, replay %d", r, org, got)
		}
	}
	return ""
}

// compareSteps compares the replay's steps with the graph's path.
// ids: the replay's steps carry the graph's ids (else they are not
// compared).
func compareSteps(g *taskgraph.Graph, path *taskgraph.Path, gw graphWeights, steps []reconstruct.ReplayStep, ids bool) (string, error) {
	want := replayStepsOf(g, path, gw)
	if len(want) != len(steps) {
		return fmt.Sprintf("%d steps, replay %d:\n%v\n%v", len(want), len(steps), want, steps), nil
	}
	for i := range want {
		if i > 0 && steps[i-1].Kind == taskgraph.KindCollective {
			steps[i].Cross = false
		}
		if !ids {
			steps[i].ID = want[i].ID
		}
		if want[i] != steps[i] {
			return fmt.Sprintf("step %d: %+v, replay %+v\n%v\n%v", i, want[i], steps[i], want, steps), nil
		}
	}
	return "", nil
}

func dataSources(ranks []*tracefmt.RankData) func() []tracefmt.Source {
	return func() []tracefmt.Source {
		srcs := make([]tracefmt.Source, len(ranks))
		for i, d := range ranks {
			srcs[i] = d.Source()
		}
		return srcs
	}
}

// TestReplayGolden: on every golden trace Replay finds the graph's
// longest path, step by step and to the last bit of its length, or
// declines (lost events, overlapping calls).
func TestReplayGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.test")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	declined := 0
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".test")
		ranks := goldenRanks(t, file)
		diff, err := compareReplay(dataSources(ranks))
		if err != nil {
			continue // Build fails: nothing to compare
		}
		switch diff {
		case "":
		case "declined":
			declined++
			t.Logf("%s: declined", name)
		default:
			t.Errorf("%s: %s", name, diff)
		}
	}
	if declined > len(files)/2 {
		t.Errorf("declined %d of %d", declined, len(files))
	}
}

// TestReplayCases compares Replay with the graph on the cases of
// testdata/replay (the golden format; their expect sections are not
// read): traces where the two once differed.
func TestReplayCases(t *testing.T) {
	files, err := filepath.Glob("testdata/replay/*.test")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	for _, file := range files {
		ranks := goldenRanks(t, file)
		if diff, err := compareReplay(dataSources(ranks)); err != nil || diff != "" && diff != "declined" {
			t.Errorf("%s: %v %s", file, err, diff)
		}
	}
}

// TestReplayRandom compares Replay with the graph on random traces
// (TestRandomEvents' generator): messages, requests, wildcards,
// collectives and bad data of every kind, a third of them with empty
// channels swept and unsettled messages compacted all the time.
func TestReplayRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	n := 3000
	if testing.Short() {
		n = 500
	}
	declined := 0
	defer func(old, u, y int) {
		*reconstruct.SweepMin, *reconstruct.UnsettledMin, *reconstruct.YieldTurns = old, u, y
	}(*reconstruct.SweepMin, *reconstruct.UnsettledMin, *reconstruct.YieldTurns)
	for i := 0; i < n; i++ {
		// A third with the tables compacted all the time; every other
		// with the ranks' replays interleaved an operation at a time
		// (the path and diagnostics do not depend on the order).
		*reconstruct.SweepMin = []int{4096, 4096, 0}[i%3]
		*reconstruct.UnsettledMin = []int{1024, 1024, 1}[i%3]
		*reconstruct.YieldTurns = []int{4096, 1}[i%2]
		ranks := randomRanks(rng)
		diff, err := compareReplay(dataSources(ranks))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		switch diff {
		case "":
		case "declined":
			declined++
		default:
			var sb strings.Builder
			for _, d := range ranks {
				_ = tracefmt.WriteText(&sb, d.Source())
			}
			t.Fatalf("case %d: %s\n%s", i, diff, sb.String())
		}
	}
	t.Logf("%d of %d declined", declined, n)
}

// TestReplayGenerated compares Replay with the graph on the benchmarks'
// generated traces read from their files, with the replay's records in
// memory and in temporary files.
func TestReplayGenerated(t *testing.T) {
	t.Run("memory", testReplayGenerated)
	t.Run("spilled", func(t *testing.T) {
		old := *reconstruct.SpillMem
		*reconstruct.SpillMem = 1024
		defer func() { *reconstruct.SpillMem = old }()
		testReplayGenerated(t)
	})
}

func testReplayGenerated(t *testing.T) {
	for _, c := range []struct {
		name string
		b    *testgen.Builder
	}{
		{"halo", testgen.Halo(6, 40, 3)},
		{"serial", testgen.Serial(3000, 5)},
	} {
		dir := t.TempDir()
		if err := c.b.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		tr, err := tracefmt.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var open []*tracefmt.RankReader
		srcs := func() []tracefmt.Source {
			var out []tracefmt.Source
			for _, f := range tr.Files {
				rr, err := tr.OpenRank(f.Rank)
				if err != nil {
					t.Fatal(err)
				}
				open = append(open, rr)
				out = append(out, rr)
			}
			return out
		}
		diff, err := compareReplay(srcs)
		for _, rr := range open {
			rr.Close()
		}
		if err != nil || diff != "" {
			t.Errorf("%s: %v %s", c.name, err, diff)
		}
	}
}

// TestReplayMemory: the replay's live heap does not grow with events per
// rank. The same 4 ranks, 4× the events: the most live heap seen (after
// a collection every 65,536 events read), above what was live before the
// readers read, stays within 1.2× (and 256 KiB). Likewise when rank 2's
// log is cut after its first block, as a job killed at its time limit
// leaves it: every receive from rank 2 after the cut matches no message
// and no receive takes any message to it, 4× as many in the larger run,
// which the replay does not keep (only the first of them, for the
// diagnostics), under either weighting; when its receives are waited for
// out of order; when rank 2 has no log at all; and in a ring one way, where
// rank 3, with nothing from the cut rank 2 to wait for, would run ahead of
// rank 0, the replay holding its messages until rank 0 takes them.
func TestReplayMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("writes and replays 2.4 M events")
	}
	old := *reconstruct.SpillMem
	*reconstruct.SpillMem = 0 // every store in a file from the start, in both runs
	defer func() { *reconstruct.SpillMem = old; *reconstruct.ReplayEvery = nil }()
	// Two groups (ReplayGroups) send each other 1,024 messages a round at
	// most: the rounds then hold less than the events of a run.
	defer func(b int) { *reconstruct.BatchFull = b }(*reconstruct.BatchFull)
	*reconstruct.BatchFull = 1024
	peak := func(iters int, damage string, measured bool, groups int) uint64 {
		dir := t.TempDir()
		var body func(rk *testgen.Rank, r int)
		if damage == "reversed" || damage == "one way" {
			// A ring both ways whose two receives from the left are
			// waited for the later first (the one from the right paces
			// rank 3, whose left neighbour is cut); or one way, where
			// nothing paces rank 3 but the replay's turns.
			body = func(rk *testgen.Rank, r int) {
				left, right := int64((r+3)%4), int64((r+1)%4)
				a, b := rk.Irecv(left, 0, 8), rk.Irecv(left, 0, 8)
				if damage == "one way" {
					rk.Send(right, 0, 8).Send(right, 0, 8)
					rk.Wait(b).Wait(a)
					return
				}
				c := rk.Irecv(right, 1, 8)
				rk.Send(right, 0, 8).Send(right, 0, 8).Send(left, 1, 8)
				rk.Wait(b).Wait(a).Wait(c)
			}
		}
		if err := fourRanks(iters, body).WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		rank2 := filepath.Join(dir, "rank-00002.mpit")
		switch damage {
		case "cut", "reversed", "one way":
			if err := os.Truncate(rank2, 100<<10); err != nil {
				t.Fatal(err)
			}
		case "missing":
			if err := os.Remove(rank2); err != nil {
				t.Fatal(err)
			}
		}
		cut := damage != ""
		srcs, done := spooledSources(t, dir)
		defer done()
		most := heapPeak()
		var res *reconstruct.ReplayResult
		var err error
		switch {
		case groups > 1:
			res, err = reconstruct.ReplayGroups(srcs, replayWeights{}, reconstruct.Options{}, groups)
		case measured:
			res, err = reconstruct.ReplayMeasured(srcs, nil, reconstruct.Options{})
		default:
			res, err = reconstruct.ReplaySources(srcs, replayWeights{}, reconstruct.Options{})
		}
		if err != nil {
			t.Fatal(err)
		}
		if !cut && res.NumSteps < iters {
			t.Fatalf("a path of %d steps", res.NumSteps)
		}
		if n := res.Diags.CountCode(reconstruct.CodeUnmatchedRecv); cut && n < iters/4 {
			t.Fatalf("rank 2 %s: %d receives unmatched, want at least %d", damage, n, iters/4)
		}
		res.Close()
		return most()
	}
	for _, c := range []struct {
		damage   string
		measured bool
		groups   int
	}{{"", false, 1}, {"cut", false, 1}, {"cut", true, 1}, {"missing", false, 1}, {"reversed", false, 1}, {"one way", false, 1},
		{"cut", false, 2}, {"missing", false, 2}, {"reversed", false, 2}, {"one way", false, 2}} {
		small, large := peak(24_000, c.damage, c.measured, c.groups), peak(96_000, c.damage, c.measured, c.groups)
		t.Logf("%q, measured %v, %d groups: live heap: %d KiB at 24,000 iterations, %d KiB at 96,000", c.damage, c.measured, c.groups, small>>10, large>>10)
		if large > small*12/10+256<<10 {
			t.Errorf("%q, measured %v, %d groups: live heap grows with the events: %d KiB, %d KiB with 4x the events", c.damage, c.measured, c.groups, small>>10, large>>10)
		}
	}
}

// fourRanks is a trace of 4 ranks that call body (nil: Halo's
// exchange) iters times, in blocks of 64 KiB (the readers' buffers are
// the size of the largest block).
func fourRanks(iters int, body func(rk *testgen.Rank, r int)) *testgen.Builder {
	gen := testgen.New(4)
	gen.Options.BlockSize = 64 << 10
	if body == nil {
		return gen.Halo(iters, 9)
	}
	for r := range 4 {
		gen.Rank(r).Call("MPI_Init")
	}
	for range iters {
		for r := range 4 {
			body(gen.Rank(r), r)
		}
	}
	for r := range 4 {
		gen.Rank(r).Call("MPI_Finalize")
	}
	return gen
}

// heapPeak starts measuring the live heap's peak, after a collection
// every 65,536 events a replay reads (reconstruct.ReplayEvery), and
// returns the function that says it, above what was live before.
func heapPeak() func() uint64 {
	// The writer's pooled encoders go with the second collection.
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	most := base
	var mu sync.Mutex // the groups of ReplayGroups read at once
	*reconstruct.ReplayEvery = func() {
		mu.Lock()
		defer mu.Unlock()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		most = max(most, ms.HeapAlloc)
	}
	return func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		return most - base
	}
}

// spooledSources opens every rank of the trace directory dir, reading
// them all at once as Replay does: their blocks spooled, each reader
// holding a window of them, not the block (whose size testgen makes grow
// with the rank's length). done closes them.
func spooledSources(tb testing.TB, dir string) (srcs []tracefmt.Source, done func()) {
	tb.Helper()
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	sp := tracefmt.NewSpool("")
	// 32 MiB of windows in all, 1 to 256 KiB each.
	sp.SetWindow(min(max((32<<20)/max(len(tr.Files), 1), 1<<10), 256<<10))
	var open []*tracefmt.RankReader
	done = func() {
		for _, rr := range open {
			rr.Close()
		}
		sp.Close()
	}
	for _, f := range tr.Files {
		rr, err := tr.OpenRank(f.Rank)
		if err != nil {
			done()
			tb.Fatal(err)
		}
		rr.SpoolTo(sp)
		open = append(open, rr)
		srcs = append(srcs, rr)
	}
	return srcs, done
}

// TestReplayStoredTraces compares Replay with the graph on the stored
// traces of real runs (fixtures/traces: every format version, Open MPI
// and MPICH).
func TestReplayStoredTraces(t *testing.T) {
	dirs, err := filepath.Glob("../fixtures/traces/v*/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, dir := range dirs {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.mpit")); len(m) == 0 {
			continue
		}
		n++
		var open []func()
		srcs := func() []tracefmt.Source {
			s, done := spooledSources(t, dir)
			open = append(open, done)
			return s
		}
		diff, err := compareReplay(srcs)
		for _, done := range open {
			done()
		}
		if err != nil || diff != "" {
			t.Errorf("%s: %v %s", dir, err, diff)
		}
	}
	if n < 11 {
		t.Errorf("only %d traces", n)
	}
}

// TestReplayObserve: Options.Observe sees every event of every rank, in
// order, as with Build.
func TestReplayObserve(t *testing.T) {
	ranks := dataSources(func() []*tracefmt.RankData {
		var out []*tracefmt.RankData
		b := testgen.Halo(3, 20, 4)
		for r := 0; r < 3; r++ {
			data, err := b.Bytes(r)
			if err != nil {
				t.Fatal(err)
			}
			rd, err := tracefmt.ReadAll(mustOpen(t, data))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rd)
		}
		return out
	}())
	seen := func(build bool) map[int][]int64 {
		m := map[int][]int64{}
		var mu sync.Mutex
		o := reconstruct.Options{Workers: 1, Observe: func(h *tracefmt.Header, _ *tracefmt.Strings) func(*tracefmt.Event) {
			return func(ev *tracefmt.Event) {
				mu.Lock()
				m[h.Rank] = append(m[h.Rank], ev.Start)
				mu.Unlock()
			}
		}}
		if build {
			if _, _, err := reconstruct.BuildFromSources(ranks(), o); err != nil {
				t.Fatal(err)
			}
			return m
		}
		res, err := reconstruct.ReplaySources(ranks(), replayWeights{}, o)
		if err != nil {
			t.Fatal(err)
		}
		res.Close()
		return m
	}
	want, got := seen(true), seen(false)
	if len(want) != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("observed %d ranks, want the %d Build observes, with the same events", len(got), len(want))
	}
}

func mustOpen(t *testing.T, data []byte) *tracefmt.RankReader {
	t.Helper()
	rr, err := tracefmt.NewRankReader(bytes.NewReader(data), "rank")
	if err != nil {
		t.Fatal(err)
	}
	return rr
}

// settle compares what the replay and the graph have in common whatever
// the weights: a decline ("declined"), failures (failedAlike), the
// diagnostics. done says there is nothing more to compare (and res is
// closed); else it returns the replay's steps, and the caller closes res.
func settle(res *reconstruct.ReplayResult, rerr, gerr error, diags *tracefmt.Diagnostics) (steps []reconstruct.ReplayStep, diff string, done bool, err error) {
	var ns *reconstruct.NotStreamableError
	switch {
	case errors.As(rerr, &ns):
		return nil, "declined", true, nil
	case gerr != nil || rerr != nil:
		return nil, failedAlike(gerr, rerr), true, nil
	}
	steps, err = stepsOf(res.Steps)
	switch {
	case err != nil:
		done = true
	case fmt.Sprint(res.Diags.All()) != fmt.Sprint(diags.All()):
		diff, done = fmt.Sprintf("diagnostics:\n%s\nreplay:\n%s", diags.All(), res.Diags.All()), true
	}
	if done {
		res.Close()
		return nil, diff, true, err
	}
	return steps, "", false, nil
}

// failedAlike says how two engines that did not both succeed differ: ""
// when both failed for the same reason (a cycle, or no operations).
func failedAlike(gerr, rerr error) string {
	var ce *taskgraph.CycleError
	switch {
	case (gerr == nil) != (rerr == nil),
		errors.As(gerr, &ce) != strings.Contains(rerr.Error(), "has a cycle"),
		strings.Contains(gerr.Error(), "no operations") != strings.Contains(rerr.Error(), "no operations"):
		return fmt.Sprintf("graph: %v, replay: %v", gerr, rerr)
	}
	return ""
}

// stepsOf returns the steps of a replay's path.
func stepsOf(each func(func(*reconstruct.ReplayStep) error) error) ([]reconstruct.ReplayStep, error) {
	var steps []reconstruct.ReplayStep
	err := each(func(st *reconstruct.ReplayStep) error {
		steps = append(steps, *st)
		return nil
	})
	return steps, err
}

// sitesAddUp says how sp's path by call site differs from sum's by
// function: "" when each function's computation and communication over its
// call sites add up to its share.
func sitesAddUp(sp *critpath.StepPath, sum *critpath.Summary) (string, error) {
	sites, err := sp.AttributeSites(-1, func(rank int, site uint32) string { return fmt.Sprintf("r%d@%d", rank, site) })
	if err != nil {
		return "", err
	}
	type tot struct{ comp, comm float64 }
	by := map[string]tot{}
	for _, x := range sites.BySite {
		t := by[x.Function]
		t.comp += x.Computation
		t.comm += x.Communication
		by[x.Function] = t
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(a), math.Abs(b)) }
	for _, f := range sum.ByFunction {
		if t := by[f.Name]; !near(t.comp, f.Computation) || !near(t.comm, f.Communication) {
			return fmt.Sprintf("%s: by call site %v computation, %v communication; by function %v, %v", f.Name, t.comp, t.comm, f.Computation, f.Communication), nil
		}
	}
	return "", nil
}

// sameFold says how the folds of two paths of one trace differ ("" when
// they fold alike, with the same repetition), and checks that the steps of
// the first weigh its length.
func sameFold(a, b *critpath.StepPath) (string, error) {
	fa, err := a.Fold()
	if err != nil {
		return "", err
	}
	fb, err := b.Fold()
	if err != nil {
		return "", err
	}
	if fa.Level != fb.Level || fmt.Sprint(fa.Nodes) != fmt.Sprint(fb.Nodes) {
		return fmt.Sprintf("fold at level %d: %v; replay at %d: %v", fa.Level, fa.Nodes, fb.Level, fb.Nodes), nil
	}
	ra, err := critpath.SummarizeRepetition(fa)
	if err != nil {
		return "", err
	}
	rb, err := critpath.SummarizeRepetition(fb)
	if err != nil {
		return "", err
	}
	if fmt.Sprintf("%+v", ra) != fmt.Sprintf("%+v", rb) {
		return fmt.Sprintf("repetition %+v, replay %+v", ra, rb), nil
	}
	if w := fa.Weight(0, fa.Steps()); math.Abs(w-a.Length) > 1e-9*max(1, a.Length) {
		return fmt.Sprintf("the fold's steps weigh %v, the path %v", w, a.Length), nil
	}
	return "", nil
}

// jsonOf is v as indented JSON.
func jsonOf(t testing.TB, v any) string {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// clocksOf are the ranks' clock offsets as the driver takes them: each
// rank's MPI_Init ClockSync, else its first.
func clocksOf(ranks []*tracefmt.RankData) *critpath.Clocks {
	c := &critpath.Clocks{Offset: map[int]int64{}, Err: map[int]int64{}}
	for _, d := range ranks {
		found := false
		for i := range d.Events {
			ev := &d.Events[i]
			if ev.Kind != spec.ClockSync {
				continue
			}
			if ev.Phase() == spec.PhaseInit || !found {
				c.Offset[d.Header.Rank] = ev.Offset()
				if found = true; ev.Phase() == spec.PhaseInit {
					break
				}
			}
		}
	}
	return c
}

// compareMeasured compares ReplayMeasured with critpath.ComputeMeasured
// as compareReplay compares ReplaySources with Longest.
func compareMeasured(ranks []*tracefmt.RankData) (string, error) {
	srcs := dataSources(ranks)
	g, diags, err := reconstruct.BuildFromSources(srcs(), reconstruct.Options{Workers: 1})
	if err != nil {
		return "", err
	}
	clocks := clocksOf(ranks)
	p, gerr := critpath.ComputeMeasured(g, clocks)
	res, rerr := reconstruct.ReplayMeasured(srcs(), clocks.Offset, reconstruct.Options{})
	steps, diff, done, err := settle(res, rerr, gerr, diags)
	if done || err != nil {
		return diff, err
	}
	defer res.Close()
	if p.Length != res.Length {
		return fmt.Sprintf("measured length %v, replay %v", p.Length, res.Length), nil
	}
	if run := critpath.RunTime(g); res.RunTime != run {
		return fmt.Sprintf("measured: run time %d, replay %d", run, res.RunTime), nil
	}
	if got, want := runOf(res.Run), runInfoOf(p.RunInfo(0)); got != want {
		return fmt.Sprintf("measured run:\n%s\nreplay:\n%s", want, got), nil
	}
	// The graph's path read as steps is the replay's, and so are their
	// summaries.
	gp, rp := p.StepPath(), critpath.ReplayPath(res, critpath.WeightsMeasured, nil, clocks)
	if want, err := stepsOf(gp.Steps); err != nil || !slices.Equal(want, steps) {
		return fmt.Sprintf("measured steps (%v)\n%v\nreplay:\n%v", err, want, steps), nil
	}
	wsum, werr := gp.Summarize(-1)
	gsum, rerr := rp.Summarize(-1)
	if werr != nil || rerr != nil {
		return "", errors.Join(werr, rerr)
	}
	// The path by call site adds up, per function, to the path by function.
	if diff, err := sitesAddUp(rp, gsum); diff != "" || err != nil {
		return "measured: " + diff, err
	}
	if diff, err := sameFold(gp, rp); diff != "" || err != nil {
		return "measured: " + diff, err
	}
	// The why block from the replay's steps is the graph's.
	label := func(rank int, site uint32) string { return fmt.Sprintf("r%d@%d", rank, site) }
	wwhy, werr := critpath.ExplainSteps(p.Length/2, latency.Default(), gp, 3, label)
	gwhy, rerr := critpath.ExplainSteps(p.Length/2, latency.Default(), rp, 3, label)
	if werr != nil || rerr != nil {
		return "", errors.Join(werr, rerr)
	}
	if w, g := fmt.Sprintf("%+v", *wwhy), fmt.Sprintf("%+v", *gwhy); w != g {
		return fmt.Sprintf("measured why\n%s\nreplay:\n%s", w, g), nil
	}
	wrun, grun := *wsum.Run, *gsum.Run
	wsum.Run, gsum.Run = nil, nil
	if w, g := fmt.Sprintf("%+v %+v", *wsum, wrun), fmt.Sprintf("%+v %+v", *gsum, grun); w != g {
		return fmt.Sprintf("measured summary\n%s\nreplay:\n%s", w, g), nil
	}
	rg := p.Graph()
	if p.NumVertices() != len(steps) {
		return fmt.Sprintf("measured: %d steps, replay %d", p.NumVertices(), len(steps)), nil
	}
	for i := range steps {
		v := p.Vertex(i)
		n := rg.Node(v.ID)
		got := steps[i]
		want := fmt.Sprintf("%v %s %d", n.Kind, n.Name, n.Rank)
		have := fmt.Sprintf("%v %s %d", got.Kind, got.Name, got.Rank)
		if n.Kind == taskgraph.KindOp {
			want += fmt.Sprintf(" %v [%d %d]", n.Event, n.Start, n.End)
			have += fmt.Sprintf(" %v [%d %d]", got.Event, got.Start, got.End)
		}
		if n.Kind == taskgraph.KindCollective {
			want += fmt.Sprintf(" %d bytes, %d of %d, nb %v, w %v", n.Bytes, n.Participants, n.Procs, n.Nonblocking, v.Weight)
			have += fmt.Sprintf(" %d bytes, %d of %d, nb %v, w %v", got.Bytes, got.Participants, got.Procs, got.Nonblocking, got.Weight)
		}
		if i > 0 {
			h := p.Hop(i - 1)
			want += fmt.Sprintf(" in %v r%d w%d b%d end %d", h.Kind, h.Rank, h.Measured, h.Bytes, rg.EdgeEnd(taskgraph.Edge{Kind: h.Kind, From: h.From, To: h.To, Rank: h.Rank, Weight: h.Measured, Bytes: h.Bytes}))
			have += fmt.Sprintf(" in %v r%d w%d b%d end %d", got.In.Kind, got.In.Rank, got.In.Weight, got.In.Bytes, got.In.End)
			if h.Kind == taskgraph.Message || h.Kind == taskgraph.CollOut && got.Cross {
				// A cross edge's measured weight.
				want += fmt.Sprintf(" x%v", h.Weight)
				have += fmt.Sprintf(" x%v", got.In.Cross)
			}
		}
		if want != have {
			return fmt.Sprintf("measured step %d: %s, replay %s", i, want, have), nil
		}
	}
	return "", nil
}

// runOf and runInfoOf describe a replay's measured run and critpath's
// alike: span, skew, clamps, and the wait states in one order.
func runOf(r *reconstruct.MeasuredRun) string {
	if r == nil {
		return "no run"
	}
	var ws []string
	for _, w := range r.Waits {
		ws = append(ws, fmt.Sprintf("%s r%d %s @%d x%d %dns", w.State, w.Rank, w.Function, w.Site, w.Count, w.Time))
	}
	slices.Sort(ws)
	return fmt.Sprintf("span %d skew %d clamped %d/%d %d/%d\n%s", r.Span, r.InitSkew, r.Messages, r.MessagesNS, r.EarlyExits, r.EarlyExitsNS, strings.Join(ws, "\n"))
}

func runInfoOf(r *critpath.RunInfo) string {
	var ws []string
	for _, w := range r.WaitStates {
		ws = append(ws, fmt.Sprintf("%s r%d %s @%d x%d %dns", w.State, w.Rank, w.Function, w.SiteID, w.Count, w.Time))
	}
	slices.Sort(ws)
	c := r.Clamped
	return fmt.Sprintf("span %d skew %d clamped %d/%d %d/%d\n%s", r.Span, r.InitSkew, c.Messages, c.MessagesNS, c.EarlyExits, c.EarlyExitsNS, strings.Join(ws, "\n"))
}

// TestReplayMeasured compares ReplayMeasured with critpath.ComputeMeasured
// on the goldens, random and MPI-like traces and the stored traces of real
// runs: the same length to the bit, the same steps with their measured
// times and edges, or a decline.
func TestReplayMeasured(t *testing.T) {
	compared, declined := 0, 0
	check := func(name string, ranks []*tracefmt.RankData) {
		t.Helper()
		diff, err := compareMeasured(ranks)
		switch {
		case err != nil:
		case diff == "declined":
			declined++
		case diff != "":
			var sb strings.Builder
			for _, d := range ranks {
				_ = tracefmt.WriteText(&sb, d.Source())
			}
			t.Fatalf("%s: %s\n%s", name, diff, sb.String())
		default:
			compared++
		}
	}
	forEachCase(t, 1000, 41, check)
	t.Logf("%d compared, %d declined", compared, declined)
}

// TestReplayTrace: ReplayTrace on the stored traces of real runs, and on
// a generated one with a rank file missing and a rank ended without its
// end record, gives Build's diagnostics (the directory's and the readers'
// first), the length of Longest's path and the calls that never returned.
func TestReplayTrace(t *testing.T) {
	dirs, _ := filepath.Glob("../fixtures/traces/v*/*")
	gen := t.TempDir()
	b := testgen.Halo(4, 30, 5)
	b.Rank(2).NoEnd()
	if err := b.WriteDir(gen); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(gen, "rank-00003.mpit")); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, dir := range append(dirs, gen) {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.mpit")); len(m) == 0 {
			continue
		}
		n++
		tr, g, diags := buildDir(t, dir, reconstruct.Options{})
		length, _, err := g.Longest(graphWeights{replayWeights{g}})
		if err != nil {
			t.Fatal(err)
		}
		tr2, err := tracefmt.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		res, err := reconstruct.ReplayTrace(tr2, replayWeights{}, reconstruct.Options{})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		res.Close()
		if dir == gen && (diags.Count(tracefmt.DataLoss) == 0 || diags.CountCode(tracefmt.CodeMissingRank) == 0) {
			t.Errorf("the generated trace has no missing rank and data loss: %s", diags.Summary())
		}
		if got, want := fmt.Sprint(res.Diags.All()), fmt.Sprint(diags.All()); got != want || res.Length != length {
			t.Errorf("%s: length %v, diagnostics\n%s\nwant %v,\n%s", dir, res.Length, got, length, want)
		}
		if got, want := fmt.Sprint(tr2.Unfinished()), fmt.Sprint(tr.Unfinished()); got != want {
			t.Errorf("%s: unfinished calls %s, want %s", dir, got, want)
		}
	}
	if n < 11 {
		t.Errorf("only %d traces", n)
	}
}

// TestReplayStop: a replay whose Options.Stop is true from the start, or
// turns true in its Options.Partial, stops there with ErrStopped, under
// either weighting; one never told runs to the end and finds what a
// replay without Stop finds. Partial is told growing figures.
func TestReplayStop(t *testing.T) {
	dir := t.TempDir()
	if err := testgen.Halo(4, 20_000, 5).WriteDir(dir); err != nil { // 400,000 events
		t.Fatal(err)
	}
	replay := func(measured bool, o reconstruct.Options) (*reconstruct.ReplayResult, error) {
		tr, err := tracefmt.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if measured {
			return reconstruct.ReplayTraceMeasured(tr, nil, o)
		}
		return reconstruct.ReplayTrace(tr, replayWeights{}, o)
	}
	for _, measured := range []bool{false, true} {
		plain, err := replay(measured, reconstruct.Options{})
		if err != nil {
			t.Fatal(err)
		}
		plain.Close()
		for _, when := range []string{"never", "at once", "at the second call"} {
			var stop atomic.Bool
			stop.Store(when == "at once")
			calls := 0
			var lastPath float64
			var lastRun int64
			o := reconstruct.Options{Stop: &stop, Partial: func(path float64, run int64) {
				calls++
				if path <= 0 || run <= 0 || path < lastPath || run < lastRun {
					t.Errorf("measured %v: call %d of Partial: path %v, run %d after %v, %d", measured, calls, path, run, lastPath, lastRun)
				}
				lastPath, lastRun = path, run
				if when == "at the second call" && calls == 2 {
					stop.Store(true)
				}
			}}
			res, err := replay(measured, o)
			want := map[string]int{"never": 400_000 >> 16, "at once": 1, "at the second call": 2}[when]
			switch {
			case when != "never" && !errors.Is(err, reconstruct.ErrStopped):
				t.Errorf("measured %v: stopped %s: %v, want ErrStopped", measured, when, err)
			case when == "never" && err != nil:
				t.Errorf("measured %v: %v", measured, err)
			case calls != want:
				t.Errorf("measured %v: stopped %s: Partial called %d times, want %d", measured, when, calls, want)
			}
			if res != nil {
				if when != "never" {
					t.Errorf("measured %v: a result from a replay stopped %s", measured, when)
				} else if res.Length != plain.Length {
					t.Errorf("measured %v: length %v with Stop never set, %v without", measured, res.Length, plain.Length)
				}
				res.Close()
			}
		}
	}
}

// TestReplayPolling: a receiver that polls (MPI_Test) until a message a
// sender sends after polling itself (MPI_Iprobe) thousands of times, as a
// recorded run did: the replay lets the sender's replay go on rather than
// read its polling ahead into memory (it once held all of it), and finds
// the graph's path, under both weightings.
func TestReplayPolling(t *testing.T) {
	const polls = 20_000
	b := testgen.New(2)
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.Call("MPI_Init")
	r1.Call("MPI_Init")
	q := r0.IrecvStatus(1, 0, 8, 1, 0, 8)
	for range polls {
		r0.Complete("MPI_Test", 0)
		r1.Call("MPI_Iprobe")
	}
	r1.Send(0, 0, 8)
	r0.Wait(q)
	r0.Call("MPI_Finalize")
	r1.Call("MPI_Finalize")
	var ranks []*tracefmt.RankData
	for r := 0; r < 2; r++ {
		data, err := b.Bytes(r)
		if err != nil {
			t.Fatal(err)
		}
		d, err := tracefmt.ReadAll(mustOpen(t, data))
		if err != nil {
			t.Fatal(err)
		}
		ranks = append(ranks, d)
	}
	if diff, err := compareReplay(dataSources(ranks)); err != nil || diff != "" {
		t.Fatalf("model: %v %s", err, diff)
	}
	if diff, err := compareMeasured(ranks); err != nil || diff != "" {
		t.Fatalf("measured: %v %s", err, diff)
	}
	for _, measured := range []bool{false, true} {
		var res *reconstruct.ReplayResult
		var err error
		if measured {
			res, err = reconstruct.ReplayMeasured(dataSources(ranks)(), nil, reconstruct.Options{})
		} else {
			res, err = reconstruct.ReplaySources(dataSources(ranks)(), replayWeights{}, reconstruct.Options{})
		}
		if err != nil {
			t.Fatal(err)
		}
		res.Close()
		if res.MaxQueued > 16 {
			t.Errorf("measured %v: read %d operations ahead on a rank", measured, res.MaxQueued)
		}
	}
}

// TestReplayHugeWorld: logs of ranks 0 and 5 of a world that claims 2^24
// ranks (testgen.HugeWorld): Build's path and diagnostics, and nothing
// sized by the world (a table by world rank would take 64 MiB).
func TestReplayHugeWorld(t *testing.T) {
	dir := t.TempDir()
	if err := testgen.WriteHugeWorld(dir, 1<<24, 0, 5); err != nil {
		t.Fatal(err)
	}
	var open []func()
	srcs := func() []tracefmt.Source {
		s, done := spooledSources(t, dir)
		open = append(open, done)
		return s
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	diff, err := compareReplay(srcs)
	runtime.ReadMemStats(&m1)
	for _, done := range open {
		done()
	}
	if err != nil || diff != "" {
		t.Fatalf("%v %s", err, diff)
	}
	if grew := m1.TotalAlloc - m0.TotalAlloc; grew > 48<<20 {
		t.Errorf("built and replayed with %d MiB allocated", grew>>20)
	}
}

// TestReplayManyUnsettled: a rank with more than a thousand sends whose
// requests no one has yet asked about (their receiver, rank 2, is read at
// the end) compacts its list of messages not yet known uncancelled; a
// later message, to rank 1, already known settled stood behind each.
// Settling the first cleared the settled ones behind it while the
// compaction went through them (make test from a fresh clone, MPICH
// threads and nonblocking calls): the replay read a nil message and
// panicked.
func TestReplayManyUnsettled(t *testing.T) {
	const n = 700
	var r0, r1, r2 strings.Builder
	r0.WriteString("rank 0\nt=0 Call fn=MPI_Init dur=100\n")
	r1.WriteString("rank 1\nt=0 Call fn=MPI_Init dur=100\n")
	r2.WriteString("rank 2\nt=0 Call fn=MPI_Init dur=100\n")
	tm := 1000
	for i := range n {
		a, b := 2*i+1, 2*i+2
		fmt.Fprintf(&r0, "t=%d Send fn=MPI_Isend dur=5 peer=2 tag=5 comm=1 bytes=8 req=%d\n", tm, a)
		fmt.Fprintf(&r0, "t=%d Send fn=MPI_Isend dur=5 peer=1 tag=6 comm=1 bytes=8 req=%d\n", tm+10, b)
		fmt.Fprintf(&r0, "t=%d Complete fn=MPI_Wait dur=5 flag=1 completions=[{req=%d src=0 stag=0 sbytes=0 flags=0}]\n", tm+20, a)
		fmt.Fprintf(&r0, "t=%d Complete fn=MPI_Wait dur=5 flag=1 completions=[{req=%d src=0 stag=0 sbytes=0 flags=0}]\n", tm+30, b)
		fmt.Fprintf(&r0, "t=%d Recv fn=MPI_Recv dur=5 peer=1 tag=9 comm=1 bytes=8 src=1 stag=9 sbytes=8\n", tm+40)
		fmt.Fprintf(&r1, "t=%d Recv fn=MPI_Recv dur=5 peer=0 tag=6 comm=1 bytes=8 src=0 stag=6 sbytes=8\n", tm+15)
		fmt.Fprintf(&r1, "t=%d Send fn=MPI_Send dur=5 peer=0 tag=9 comm=1 bytes=8 req=0\n", tm+25)
		tm += 100
	}
	// Rank 2 waits first for rank 0's last message: it reads its receives
	// of the others only then.
	fmt.Fprintf(&r0, "t=%d Send fn=MPI_Send dur=5 peer=2 tag=4 comm=1 bytes=8 req=0\n", tm)
	fmt.Fprintf(&r2, "t=%d Recv fn=MPI_Recv dur=5 peer=0 tag=4 comm=1 bytes=8 src=0 stag=4 sbytes=8\n", tm+10)
	tm += 100
	for range n {
		fmt.Fprintf(&r2, "t=%d Recv fn=MPI_Recv dur=5 peer=0 tag=5 comm=1 bytes=8 src=0 stag=5 sbytes=8\n", tm)
		tm += 10
	}
	text := ""
	for _, b := range []*strings.Builder{&r0, &r1, &r2} {
		fmt.Fprintf(b, "t=%d Call fn=MPI_Finalize dur=100\nend reason=finalize\n", tm)
		text += b.String()
	}
	ranks, err := tracefmt.ParseText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if diff, err := compareReplay(dataSources(ranks)); err != nil || diff != "" {
		t.Fatalf("%v %s", err, diff)
	}
	if diff, err := compareMeasured(ranks); err != nil || diff != "" {
		t.Fatalf("measured: %v %s", err, diff)
	}
}

// TestReplayBeforeInit: a rank's calls before MPI_Init wait in memory for
// MPI_Init to drop them; a log that makes more than PreInitMax of them
// (one without MPI_Init: a hostile file's 0.94 M MPI_Test calls held 190
// MB) is declined, and under the limit replayed as Build does.
func TestReplayBeforeInit(t *testing.T) {
	defer func(n int) { *reconstruct.PreInitMax = n }(*reconstruct.PreInitMax)
	*reconstruct.PreInitMax = 100
	for _, calls := range []int{99, 101} {
		for _, init := range []bool{false, true} {
			var sb strings.Builder
			sb.WriteString("rank 0\n")
			for i := range calls {
				fmt.Fprintf(&sb, "t=%d Call fn=MPI_Initialized dur=1\n", 10*i)
			}
			if init {
				fmt.Fprintf(&sb, "t=%d Call fn=MPI_Init dur=100\n", 10*calls)
			}
			fmt.Fprintf(&sb, "t=%d Call fn=MPI_Barrier dur=5\nt=%d Call fn=MPI_Finalize dur=100\nend reason=finalize\n", 10*calls+200, 10*calls+300)
			ranks, err := tracefmt.ParseText(strings.NewReader(sb.String()))
			if err != nil {
				t.Fatal(err)
			}
			diff, err := compareReplay(dataSources(ranks))
			if want := map[bool]string{false: "", true: "declined"}[calls > 100]; err != nil || diff != want {
				t.Errorf("%d calls before MPI_Init (MPI_Init %v): %v %q, want %q", calls, init, err, diff, want)
			}
		}
	}
}

// TestReplayMeasuredReadAhead: a nonblocking instance's first exit is
// found without reading ahead the participants whose completing calls
// cannot change it: a blocking member of a mixed instance, a request
// freed (either was read to the end of its log, 2,000 calls, as a review
// found).
func TestReplayMeasuredReadAhead(t *testing.T) {
	rank0 := "t=0 Call fn=MPI_Init dur=100\n" +
		"t=1000 Coll fn=MPI_Ibarrier dur=100 comm=1 root=-3 req=4\n" +
		"t=2000 Complete fn=MPI_Wait dur=100 completions=[{req=4 src=0 stag=0 sbytes=0 flags=0}]\n" +
		"t=90000 Call fn=MPI_Finalize dur=100\n"
	for name, call := range map[string]string{
		"mixed": "t=1000 Coll fn=MPI_Barrier dur=100 comm=1 root=-3\n",
		"freed": "t=1000 Coll fn=MPI_Ibarrier dur=100 comm=1 root=-3 req=4\nt=1500 ReqFree fn=MPI_Request_free dur=10 req=4\n",
	} {
		var sb strings.Builder
		sb.WriteString("rank 0\n" + rank0 + "end reason=finalize\nrank 1\nt=0 Call fn=MPI_Init dur=100\n" + call)
		for i := range 2000 {
			fmt.Fprintf(&sb, "t=%d Call fn=MPI_Wtime dur=1\n", 3000+10*i)
		}
		sb.WriteString("t=90000 Call fn=MPI_Finalize dur=100\nend reason=finalize\n")
		ranks, err := tracefmt.ParseText(strings.NewReader(sb.String()))
		if err != nil {
			t.Fatal(err)
		}
		if diff, err := compareMeasured(ranks); err != nil || diff != "" {
			t.Fatalf("%s: %v %s", name, err, diff)
		}
		res, err := reconstruct.ReplayMeasured(dataSources(ranks)(), nil, reconstruct.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res.Close()
		if res.MaxQueued > 16 {
			t.Errorf("%s: read %d operations ahead on a rank", name, res.MaxQueued)
		}
	}
}

// goldenRanks returns the ranks of a case in the golden format.
func goldenRanks(t *testing.T, file string) []*tracefmt.RankData {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c := parseGolden(string(data))
	text, err := c.ranksText()
	if err != nil {
		t.Fatal(err)
	}
	ranks, err := tracefmt.ParseText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return ranks
}

// TestReplayCritPathOut: critPath.out written from the replay's steps
// (critpath.WriteCritPathOutSteps, weighed by critpath.ModelWeights) is
// byte for byte the one written from the graph's path (critpath.Compute,
// WriteCritPathOut), with the tests' model and the embedded one, in µs and
// ns, on the goldens, random and MPI-like traces and the stored traces.
func TestReplayCritPathOut(t *testing.T) {
	compared := 0
	check := func(name string, ranks []*tracefmt.RankData) {
		t.Helper()
		g, _, err := reconstruct.BuildFromSources(dataSources(ranks)(), reconstruct.Options{Workers: 1})
		if err != nil {
			return
		}
		for _, m := range []critpath.Model{testModel{}, latency.Default()} {
			p, gerr := critpath.Compute(g, m)
			res, rerr := reconstruct.ReplaySources(dataSources(ranks)(), critpath.ModelWeights(m), reconstruct.Options{})
			var ns *reconstruct.NotStreamableError
			if errors.As(rerr, &ns) {
				return
			}
			if gerr != nil || rerr != nil {
				if (gerr == nil) != (rerr == nil) {
					t.Fatalf("%s: graph %v, replay %v", name, gerr, rerr)
				}
				return
			}
			gp, rp := p.StepPath(), critpath.ReplayPath(res, critpath.WeightsModel, m, nil)
			// The graph's path read as steps is the replay's, step by step.
			want, err := stepsOf(gp.Steps)
			if err != nil {
				t.Fatal(err)
			}
			got, err := stepsOf(res.Steps)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(want, got) {
				t.Fatalf("%s (%T): steps\n%v\nreplay:\n%v", name, m, want, got)
			}
			for _, unit := range []critpath.Unit{critpath.Microsecond, critpath.Nanosecond} {
				var want, got bytes.Buffer
				wsum, err := gp.WriteCritPathOutSummary(&want, unit, -1)
				if err != nil {
					t.Fatal(err)
				}
				gsum, err := rp.WriteCritPathOutSummary(&got, unit, -1)
				if err != nil {
					t.Fatal(err)
				}
				if got.String() != want.String() || p.Length != res.Length {
					t.Fatalf("%s (%T, %v): length %v, replay %v; critPath.out\n%s\nreplay:\n%s", name, m, unit, p.Length, res.Length, want.String(), got.String())
				}
				if w, g := jsonOf(t, wsum), jsonOf(t, gsum); w != g {
					t.Fatalf("%s (%T): summary\n%s\nreplay:\n%s", name, m, w, g)
				}
				if diff, err := sameFold(gp, rp); diff != "" || err != nil {
					t.Fatalf("%s (%T): %s %v", name, m, diff, err)
				}
			}
			res.Close()
			compared++
		}
	}
	forEachCase(t, 500, 51, check)
	t.Logf("%d compared", compared)
	want := 1000
	if raceEnabled {
		want = 100 // forEachCase's random cases are a tenth
	}
	if compared < want {
		t.Errorf("only %d compared", compared)
	}
}

// readDir reads every rank of the trace directory dir into memory.
func readDir(t *testing.T, dir string) []*tracefmt.RankData {
	t.Helper()
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ranks []*tracefmt.RankData
	for _, f := range tr.Files {
		rr, err := tr.OpenRank(f.Rank)
		if err != nil {
			t.Fatal(err)
		}
		d, err := tracefmt.ReadAll(rr)
		rr.Close()
		if err != nil {
			t.Fatal(err)
		}
		ranks = append(ranks, d)
	}
	return ranks
}

// forEachCase calls check for every golden and replay case, n random
// traces and n MPI-like ones (from seed: PCG(seed, seed+1) and
// PCG(seed+2, seed+3)) and every stored trace of a real run.
func forEachCase(t *testing.T, n int, seed uint64, check func(name string, ranks []*tracefmt.RankData)) {
	t.Helper()
	files, _ := filepath.Glob("testdata/*.test")
	more, _ := filepath.Glob("testdata/replay/*.test")
	for _, file := range append(files, more...) {
		check(file, goldenRanks(t, file))
	}
	if raceEnabled {
		n /= 10 // the random cases are the first run's; the race detector looks at the goroutines
	}
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for i := 0; i < n; i++ {
		check(fmt.Sprintf("random %d", i), randomRanks(rng))
	}
	rng = rand.New(rand.NewPCG(seed+2, seed+3))
	for i := 0; i < n; i++ {
		ranks, err := tracefmt.ParseText(strings.NewReader(mutate(rng, genText(rng))))
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("MPI-like %d", i), ranks)
	}
	dirs, _ := filepath.Glob("../fixtures/traces/v*/*")
	for _, dir := range dirs {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.mpit")); len(m) > 0 {
			check(dir, readDir(t, dir))
		}
	}
}

// TestStepHeads: the heads of a path's steps are its steps' names, ranks
// and in-edge kinds, in order, on paths of many blocks: one long rank's
// (operations) and a halo exchange's (messages, collectives).
func TestStepHeads(t *testing.T) {
	for _, b := range []*testgen.Builder{testgen.Serial(30000, 1), testgen.Halo(6, 3000, 1)} {
		tr := openBuilt(t, b)
		res, err := reconstruct.ReplayTrace(tr, replayWeights{}, reconstruct.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var want []reconstruct.StepHead
		kinds := map[taskgraph.NodeKind]bool{}
		if err := res.Steps(func(st *reconstruct.ReplayStep) error {
			want = append(want, reconstruct.StepHead{Name: st.Name, Rank: st.Rank, In: st.In.Kind})
			kinds[st.Kind] = true
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		i := 0
		if err := res.StepHeads(func(h *reconstruct.StepHead) error {
			if i >= len(want) || *h != want[i] {
				return fmt.Errorf("step %d: head %+v, want %+v", i, *h, want[min(i, len(want)-1)])
			}
			i++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if i != len(want) || len(want) < 20000 {
			t.Errorf("%d heads of %d steps", i, len(want))
		}
		if len(tr.Files) > 1 && !kinds[taskgraph.KindCollective] {
			t.Errorf("the halo's path has no collective")
		}
		res.Close()
	}
}
