package taskgraph

import (
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

func TestNewBuilderForChecksRanks(t *testing.T) {
	for _, ranks := range [][]int{{1, 0}, {0, 0}, {-1}, {8}} {
		if _, err := NewBuilderFor(8, ranks); err == nil {
			t.Errorf("ranks %v of a world of 8 accepted", ranks)
		}
	}
	if _, err := NewBuilderFor(1<<40, nil); err == nil {
		t.Error("a world of 2^40 ranks accepted")
	}
}

// A graph of two ranks of a world that claims 2^24: the ranks without
// operations cost nothing, and every rank the graph reports is a world
// rank.
func TestSparseBuilder(t *testing.T) {
	const last = 1<<24 - 1
	b, err := NewBuilderFor(1<<24, []int{5, last})
	if err != nil {
		t.Fatal(err)
	}
	if b.Rank(0) != nil || b.Rank(6) != nil || b.OpID(6, 0) != None {
		t.Fatal("a rank without a log has a builder")
	}
	if i, ok := b.Index(last); !ok || i != 1 {
		t.Fatalf("Index(%d) = %d, %v", last, i, ok)
	}
	send, recv, barrier := b.Name("MPI_Send"), b.Name("MPI_Recv"), b.Name("MPI_Barrier")
	r5, rl := b.Rank(5), b.Rank(last)
	r5.SetInit(100)
	rl.SetInit(100)
	r5.AddOp(Op{Name: send, Kind: spec.Send, Start: 200, End: 210, Bytes: 8, Event: 1})
	rl.AddOp(Op{Name: recv, Kind: spec.Recv, Start: 150, End: 250, Bytes: 8, Event: 1})
	r5.SetFinalize(700)
	rl.SetFinalize(600)
	if err := b.Layout(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddCollective(Collective{Name: barrier, GID: 1, Procs: 1 << 24,
		Parts: []Part{{Rank: 5, At: 1, Start: 300, End: 350, Event: 2}, {Rank: 6, At: 0, Start: 300, End: 340, Event: 2}}}); err == nil {
		t.Fatal("a participant without a log accepted")
	}
	coll, err := b.AddCollective(Collective{Name: barrier, GID: 1, Procs: 1 << 24,
		Parts: []Part{{Rank: 5, At: 1, Start: 300, End: 350, Event: 2}, {Rank: last, At: 1, Start: 300, End: 340, Event: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rl.AddIncoming(0, b.OpID(5, 0), 8); err != nil {
		t.Fatal(err)
	}
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.Ranks(), []int{5, last}) || g.Size() != 1<<24 || g.HasChain(0) || !g.HasChain(last) {
		t.Fatalf("ranks %v of %d", g.Ranks(), g.Size())
	}
	if first, n := g.RankOps(last); n != 1 || g.Rank(first) != last || g.Node(first).Rank != last || g.Node(first).Event.Rank != last {
		t.Fatalf("rank %d's operation: %+v", last, g.Node(first))
	}
	if n := g.Node(coll); n.Members != nil || n.Procs != 1<<24 || !slices.Equal(g.Participants(coll), []int{5, last}) {
		t.Fatalf("the barrier: %+v, participants %v", n, g.Participants(coll))
	}
	ranks := map[int]bool{}
	for e := range g.Edges {
		ranks[e.Rank] = true
	}
	if len(ranks) != 2 || !ranks[5] || !ranks[last] {
		t.Errorf("edges on ranks %v", ranks)
	}
	_, path, err := g.Longest(unitWeights{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range path.Len() - 1 {
		if e := path.Edge(i); e.Rank != 5 && e.Rank != last {
			t.Errorf("path edge %+v", e)
		}
	}
	if err := g.Walk(func(v NodeID, in []Edge) {
		for _, e := range in {
			if e.Rank != 5 && e.Rank != last {
				t.Errorf("walk: edge %+v", e)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// MPI_COMM_WORLD's members are not listed; the text form lists them.
func TestWorldMembersText(t *testing.T) {
	b, err := NewBuilderFor(4, []int{2})
	if err != nil {
		t.Fatal(err)
	}
	b.Rank(2).AddOp(Op{Name: b.Name("MPI_Send"), Kind: spec.Send, Start: 10, End: 20})
	b.Layout()
	if _, err := b.AddCollective(Collective{Name: b.Name("MPI_Barrier"), GID: 1, Procs: 4, Parts: []Part{{Rank: 2, At: 1, Start: 30, End: 40}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddCollective(Collective{Name: b.Name("MPI_Barrier"), GID: 1, Procs: 3, Members: []int32{0, 2},
		Parts: []Part{{Rank: 2, At: 1, Start: 30, End: 40}}}); err == nil {
		t.Fatal("3 processes with 2 members listed accepted")
	}
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	var s strings.Builder
	g.WriteText(&s)
	if !strings.Contains(s.String(), "graph ranks=4 ") || !strings.Contains(s.String(), " procs=4 parts=1 bytes=0 members=0,1,2,3\n") {
		t.Errorf("%s", s.String())
	}
}
