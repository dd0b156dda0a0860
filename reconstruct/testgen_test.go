package reconstruct_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/internal/textdiff"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// buildDir opens the trace directory dir and builds its task graph.
func buildDir(tb testing.TB, dir string, o reconstruct.Options) (*tracefmt.Trace, *taskgraph.Graph, *tracefmt.Diagnostics) {
	tb.Helper()
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	g, diags, err := reconstruct.Build(tr, o)
	if err != nil {
		tb.Fatal(err)
	}
	return tr, g, diags
}

// TestHaloFromDir builds the graph of a synthetic halo exchange written as
// a real trace directory, and checks its shape and that reading the
// directory in parallel, with one worker, or from memory gives the same
// graph.
func TestHaloFromDir(t *testing.T) {
	const ranks, iters = 8, 50
	dir := t.TempDir()
	if err := testgen.Halo(ranks, iters, 7).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	tr, g, diags := buildDir(t, dir, reconstruct.Options{Workers: 4})
	if diags.Len() != 0 {
		t.Errorf("diagnostics: %s", diags.Summary())
	}
	if err := reconstruct.Check(diags, true); err != nil {
		t.Errorf("Check(strict): %v", err)
	}
	// Per rank and iteration: 2 Irecv, 2 Isend, 4 Waits; 2 messages.
	if g.NumOps() != ranks*iters*8 || g.NumMessages() != ranks*iters*2 || g.NumCollectives() != iters/10 {
		t.Errorf("%d ops, %d messages, %d collectives", g.NumOps(), g.NumMessages(), g.NumCollectives())
	}
	for c := 0; c < g.NumCollectives(); c++ {
		n := g.Node(taskgraph.NodeID(2 + g.NumOps() + c))
		if n.Name != "MPI_Allreduce" || n.Procs != ranks || n.Participants != ranks || n.Bytes != 8 {
			t.Errorf("collective %+v", n)
		}
	}
	checkGraph(t, g)
	var want bytes.Buffer
	g.WriteText(&want)

	g1, _, err := reconstruct.Build(tr, reconstruct.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	g1.WriteText(&got)
	if got.String() != want.String() {
		t.Errorf("one worker gives another graph:\n%s", textdiff.Lines(want.String(), got.String()))
	}

	g2, _, err := reconstruct.BuildFromRanks(readRanks(t, tr), reconstruct.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got.Reset()
	g2.WriteText(&got)
	if got.String() != want.String() {
		t.Errorf("BuildFromRanks gives another graph:\n%s", textdiff.Lines(want.String(), got.String()))
	}

	p, err := critpath.Compute(g, testModel{})
	if err != nil {
		t.Fatal(err)
	}
	// The path crosses ranks through messages: with 50-70 µs of
	// computation per iteration on every rank, it is at least the
	// computation of one rank.
	s := critpath.Summarize(p, 5)
	if s.Messages == 0 || s.Computation < float64(iters)*50_000 {
		t.Errorf("summary %+v", s)
	}
}

// TestMissingRankFile: a rank without a file is data loss, and messages to
// it are unmatched sends counted as data loss.
func TestMissingRankFile(t *testing.T) {
	b := testgen.New(3)
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.Call("MPI_Init")
	r1.Call("MPI_Init")
	r0.Send(1, 1, 8)
	r0.Send(2, 1, 8) // rank 2's file goes missing
	r1.Recv(0, 1, 8)
	r0.Call("MPI_Finalize")
	r1.Call("MPI_Finalize")
	dir := t.TempDir()
	if err := b.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, tracefmt.RankFileName(2))); err != nil {
		t.Fatal(err)
	}
	_, g, diags := buildDir(t, dir, reconstruct.Options{})
	if diags.CountCode(tracefmt.CodeMissingRank) != 1 || diags.CountCode(reconstruct.CodeUnmatchedSend) != 1 || diags.Count(tracefmt.Error) != 0 {
		t.Errorf("diagnostics: %s", diags.Summary())
	}
	if !reconstruct.HasDataLoss(diags) || reconstruct.Check(diags, false) != nil || reconstruct.Check(diags, true) == nil {
		t.Errorf("data loss not reported as such: %s", diags.Summary())
	}
	if g.NumMessages() != 1 || g.HasChain(2) {
		t.Errorf("%d messages; rank 2 has a chain: %v", g.NumMessages(), g.HasChain(2))
	}
	if _, err := critpath.Compute(g, nil); err != nil {
		t.Fatal(err)
	}
}

// TestEventRefs: every operation points back to its event.
func TestEventRefs(t *testing.T) {
	b := testgen.New(2)
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.Call("MPI_Init").ClockSync(spec.PhaseInit, 5, 1)
	r1.Call("MPI_Init")
	q := r0.Irecv(1, 3, 16)
	q2 := r0.Isend(1, 4, 16)
	r0.Waitall(q, q2)
	r1.Send(0, 3, 16).Recv(0, 4, 16)
	r0.Call("MPI_Finalize")
	r1.Call("MPI_Finalize")
	var srcs []tracefmt.Source
	var all [][]tracefmt.Event
	for r := 0; r < 2; r++ {
		data, err := b.Bytes(r)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := tracefmt.NewRankReader(bytes.NewReader(data), "mem")
		if err != nil {
			t.Fatal(err)
		}
		d, err := tracefmt.ReadAll(rr)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, d.Source())
		all = append(all, d.Events)
	}
	g, diags, err := reconstruct.BuildFromSources(srcs, reconstruct.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diags.Len() != 0 {
		t.Errorf("diagnostics: %s", diags.Summary())
	}
	for r := 0; r < 2; r++ {
		first, n := g.RankOps(r)
		for v := first; v < first+taskgraph.NodeID(n); v++ {
			node := g.Node(v)
			ev := all[r][node.Event.Index]
			if ev.Start > node.Start || node.End > ev.End || node.Event.Rank != r {
				t.Errorf("node %+v does not come from event %+v", node, ev)
			}
		}
	}
	// Rank 0: Irecv, Isend, Wait#0, Wait#1.
	first, _ := g.RankOps(0)
	if n := g.Node(first + 3); n.Name != "MPI_Wait" || n.Event.Completion != 1 || n.Event.Index != 4 {
		t.Errorf("expanded wait %+v", n)
	}
}

// TestSerial: testgen.Serial, the benchmarks' long-path trace, is one
// chain whose critical path steps through every call.
func TestSerial(t *testing.T) {
	const calls = 200
	dir := t.TempDir()
	if err := testgen.Serial(calls, 3).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	_, g, diags := buildDir(t, dir, reconstruct.Options{})
	if diags.Len() != 0 {
		t.Errorf("diagnostics: %s", diags.Summary())
	}
	// 20 iterations: 20 messages to itself, 2 Allreduce instances.
	if g.NumOps() != calls-2 || g.NumMessages() != calls/10 || g.NumCollectives() != 2 {
		t.Errorf("%d ops, %d messages, %d collectives", g.NumOps(), g.NumMessages(), g.NumCollectives())
	}
	p, err := critpath.Compute(g, testModel{})
	if err != nil {
		t.Fatal(err)
	}
	if n := p.NumVertices(); n != calls+2 {
		t.Errorf("path of %d vertices, want every call and MPI_Init and MPI_Finalize: %d", n, calls+2)
	}
}
