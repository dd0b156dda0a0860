package reconstruct_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/analysis/render"
	"github.com/mpitrace/mpitrace/internal/textdiff"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// cutOptions are random --ranks and --window of graph g (nil: none),
// each window between two of a rank's operations' starts.
func cutOptions(rng *rand.Rand, g *taskgraph.Graph) (render.RankSet, *render.Window) {
	var rs render.RankSet
	var w *render.Window
	if rng.IntN(3) != 0 && g.Size() > 1 {
		a := rng.IntN(g.Size())
		b := a + rng.IntN(g.Size()-a)
		ranges := []render.RankRange{{First: a, Last: b}}
		if c := rng.IntN(g.Size()); c > b+1 {
			ranges = append(ranges, render.RankRange{First: c, Last: c})
		}
		rs = render.NewRankSet(ranges...)
	}
	if rng.IntN(3) != 0 {
		ranks := g.Ranks()
		if len(ranks) > 0 {
			r := ranks[rng.IntN(len(ranks))]
			first, n := g.RankOps(r)
			if n > 0 {
				org, _, _ := g.RankSpan(r)
				if org == 0 {
					org = g.Node(first).Start
				}
				t0 := g.Node(first+taskgraph.NodeID(rng.IntN(n))).Start - org
				t1 := g.Node(first+taskgraph.NodeID(rng.IntN(n))).Start - org
				t0, t1 = max(min(t0, t1), 0), max(t0, t1)
				w = &render.Window{Start: time.Duration(t0)}
				if rng.IntN(4) != 0 && t1 > t0 {
					w.End = time.Duration(t1)
				}
			}
		}
	}
	if rs == nil && w == nil {
		rs = render.NewRankSet(render.RankRange{First: 0, Last: 0})
	}
	return rs, w
}

// compareCut draws random parts of the trace srcs gives from its graph
// and from a replay's Cut: the same picture, byte for byte. It returns
// "" when they agree, "declined" when the replay cannot replace the
// graph, else the difference.
func compareCut(rng *rand.Rand, srcs func() []tracefmt.Source) (string, error) {
	g, _, err := reconstruct.BuildFromSources(srcs(), reconstruct.Options{Workers: 1})
	if err != nil {
		return "", err
	}
	for k := 0; k < 4; k++ {
		rs, w := cutOptions(rng, g)
		o := render.DOTOptions{Ranks: rs, Window: w, CriticalOnly: rng.IntN(4) == 0}
		if rng.IntN(3) == 0 {
			o.MaxVertices = 1 + rng.IntN(40)
		}
		if diff := drawBoth(srcs, g, o); diff != "" {
			return diff, nil
		}
	}
	return "", nil
}

// drawBoth draws the part o asks of graph g, and of a replay of srcs
// given o's Cut, as dot does: "" when they agree, "declined" when the replay cannot replace
// the graph, else the difference.
func drawBoth(srcs func() []tracefmt.Source, g *taskgraph.Graph, o render.DOTOptions) string {
	m := latency.Default()
	p, perr := critpath.Compute(g, m)
	cut := o.Cut()
	res, rerr := reconstruct.ReplaySources(srcs(), critpath.ModelWeights(m), reconstruct.Options{Cut: cut})
	var ns *reconstruct.NotStreamableError
	switch {
	case errors.As(rerr, &ns):
		return "declined"
	case perr != nil || rerr != nil:
		if (perr == nil) != (rerr == nil) {
			return fmt.Sprintf("graph: %v, replay: %v", perr, rerr)
		}
		return "declined"
	}
	defer res.Close()
	sp := critpath.ReplayPath(res, critpath.WeightsModel, m, nil)
	if !res.Shape.IDs {
		if cut.Graph != nil {
			return "a cut collected without the graph's ids"
		}
		return "declined"
	}
	var want, got bytes.Buffer
	n0, err0 := render.WriteDOTCount(&want, g, p, m, o)
	n1, err1 := render.WriteCutDOT(&got, cut.Graph, sp, m, o)
	var big0, big1 *render.TooBigError
	if errors.As(err0, &big0) && errors.As(err1, &big1) && big1.AtLeast {
		return "" // the cut stopped at the limit: the graph's picture is over it
	}
	if fmt.Sprint(err0) != fmt.Sprint(err1) || n0 != n1 || want.String() != got.String() {
		return fmt.Sprintf("ranks %v window %v critical-only %v: graph %d vertices (%v), cut %d (%v):\n%s",
			o.Ranks, o.Window, o.CriticalOnly, n0, err0, n1, err1, textdiff.Lines(want.String(), got.String()))
	}
	return ""
}

// TestReplayCutMixed: a collective called blocking on one rank and
// nonblocking on another (an error the trace reports, drawn all the
// same) is joined to the window by the operation that completes the
// nonblocking call, after every blocking member has passed it: its edge
// to the collective before it on the other rank is drawn.
func TestReplayCutMixed(t *testing.T) {
	const text = `rank 0
meta size="2"
t=0 Call fn=MPI_Init dur=100
t=200 Coll fn=MPI_Barrier dur=100 comm=1 root=-3 req=0
t=400 Coll fn=MPI_Barrier dur=100 comm=1 root=-3 req=0
t=5000 Call fn=MPI_Wtime dur=10
t=6000 Call fn=MPI_Finalize dur=100
end reason=finalize
rank 1
meta size="2"
t=0 Call fn=MPI_Init dur=100
t=150 Coll fn=MPI_Ibarrier dur=10 comm=1 root=-3 req=1
t=400 Coll fn=MPI_Barrier dur=100 comm=1 root=-3 req=0
t=5000 Complete fn=MPI_Wait dur=10 flag=1 completions=[{req=1 src=0 stag=0 sbytes=0 flags=0}]
t=6000 Call fn=MPI_Finalize dur=100
end reason=finalize
`
	ranks, err := tracefmt.ParseText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	srcs := dataSources(ranks)
	g, _, err := reconstruct.BuildFromSources(srcs(), reconstruct.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range []int{4096, 0} {
		*reconstruct.CutPruneMin = cp
		if diff := drawBoth(srcs, g, render.DOTOptions{Window: &render.Window{Start: time.Microsecond}}); diff != "" {
			t.Errorf("prune at %d: %s", cp, diff)
		}
	}
	*reconstruct.CutPruneMin = 4096
}

var initAtZero = regexp.MustCompile(`t=[0-9]+ Call fn=MPI_Init dur=[0-9]+ `)

// TestReplayCut: a part of the graph (dot --ranks, --window) drawn from
// what a replay collected is the part drawn from the graph, byte for
// byte, on random traces and MPI-like ones (wildcards, requests,
// nonblocking and back-to-back collectives, nonblocking ones in flight
// across rounds, damaged logs).
func TestReplayCut(t *testing.T) {
	n := 2000
	if testing.Short() || raceEnabled { // one goroutine: race finds nothing more
		n = 300
	}
	rng := rand.New(rand.NewPCG(41, 42))
	compared := 0
	defer func(old, y int) { *reconstruct.CutPruneMin, *reconstruct.YieldTurns = old, y }(*reconstruct.CutPruneMin, *reconstruct.YieldTurns)
	for i := 0; i < n; i++ {
		// Every other with the window's edges between collectives dropped
		// as soon as they can be, a third with the ranks' replays
		// interleaved an operation at a time.
		*reconstruct.CutPruneMin = []int{4096, 0}[i%2]
		*reconstruct.YieldTurns = []int{4096, 4096, 1}[i%3]
		var ranks []*tracefmt.RankData
		var text string
		if i%2 == 0 {
			ranks = randomRanks(rng)
		} else {
			if i%4 == 1 {
				text = mutate(rng, genText(rng))
			} else {
				text = mutate(rng, genInFlight(rng))
			}
			if rng.IntN(3) == 0 {
				// MPI_Init ending at 0: a rank's origin is then its first
				// operation's start unless it reaches MPI_Finalize.
				text = initAtZero.ReplaceAllString(text, "t=0 Call fn=MPI_Init dur=0 ")
			}
			var err error
			if ranks, err = tracefmt.ParseText(strings.NewReader(text)); err != nil {
				t.Fatalf("case %d: %v\n%s", i, err, text)
			}
		}
		diff, err := compareCut(rng, dataSources(ranks))
		switch {
		case err != nil || diff == "declined":
			continue
		case diff != "":
			if text == "" {
				var sb strings.Builder
				for _, d := range ranks {
					_ = tracefmt.WriteText(&sb, d.Source())
				}
				text = sb.String()
			}
			t.Fatalf("case %d: %s\n%s", i, diff, text)
		}
		compared++
	}
	t.Logf("%d of %d compared", compared, n)
	if compared < n/2 {
		t.Errorf("only %d of %d compared", compared, n)
	}
}

// TestReplayCutMemory: what a replay holds for a part of the graph does
// not grow with the trace: the same part (rank 1, or every rank, in
// the same 10 ms) of a run 4 times longer, within 1.2 times the heap;
// also when the ranks' chains hold collectives back to back, whose edges
// the part keeps until it knows whether it draws them, and with
// nonblocking collectives.
func TestReplayCutMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("writes and replays 2.4 M events")
	}
	old := *reconstruct.SpillMem
	*reconstruct.SpillMem = 0
	defer func() { *reconstruct.SpillMem = old; *reconstruct.ReplayEvery = nil }()
	window := &reconstruct.CutWindow{Start: 10e6, End: 20e6}
	peak := func(iters int, colls string, cut *reconstruct.Cut) uint64 {
		dir := t.TempDir()
		var body func(rk *testgen.Rank, r int)
		if colls != "" {
			// Times that vary, as a real run's: a log too regular
			// compresses past the reader's budget against bombs.
			rng := rand.New(rand.NewPCG(5, 6))
			body = func(rk *testgen.Rank, r int) {
				rk.Compute(20_000 + rng.Int64N(10_000))
				rk.Dur = 300 + rng.Int64N(700)
				rk.Send(int64((r+1)%4), 0, 8).Recv(int64((r+3)%4), 0, 8)
				if colls == "nonblocking" {
					q := rk.Icoll("MPI_Iallreduce", spec.RootNone, 8, 8)
					rk.Compute(1000).Wait(q)
					return
				}
				rk.Allreduce(8).Barrier().Allreduce(16)
			}
		}
		if err := fourRanks(iters, body).WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		srcs, done := spooledSources(t, dir)
		defer done()
		most := heapPeak()
		res, err := reconstruct.ReplaySources(srcs, replayWeights{}, reconstruct.Options{Cut: cut})
		if err != nil {
			t.Fatal(err)
		}
		res.Close()
		if cut.Graph == nil || len(cut.Graph.Ops) == 0 || len(cut.Graph.Edges) == 0 {
			t.Fatalf("the part is empty: %+v", cut.Graph)
		}
		if colls != "" && len(cut.Graph.Colls) == 0 {
			t.Fatal("the part has no collectives")
		}
		return most()
	}
	firstTwo := func() *reconstruct.Cut {
		return &reconstruct.Cut{Ranks: func(r int) bool { return r < 2 }, Window: window}
	}
	for _, c := range []struct {
		name  string
		colls string
		cut   func() *reconstruct.Cut
	}{
		{"rank 1", "", func() *reconstruct.Cut {
			return &reconstruct.Cut{Ranks: func(r int) bool { return r == 1 }, Window: window}
		}},
		{"every rank", "", func() *reconstruct.Cut { return &reconstruct.Cut{Window: window} }},
		{"collectives", "blocking", firstTwo},
		{"nonblocking collectives", "nonblocking", firstTwo},
	} {
		small, large := peak(24_000, c.colls, c.cut()), peak(96_000, c.colls, c.cut())
		t.Logf("%s: live heap: %d KiB at 24,000 iterations, %d KiB at 96,000", c.name, small>>10, large>>10)
		if large > small*12/10+256<<10 {
			t.Errorf("%s: live heap grows with the events: %d KiB, %d KiB with 4x the events", c.name, small>>10, large>>10)
		}
	}
}
