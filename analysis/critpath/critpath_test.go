package critpath

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// latency.Model must satisfy Model.
var _ Model = (*latency.Model)(nil)

// randModel weighs messages and collectives with arbitrary but fixed
// numbers.
type randModel struct {
	perByte float64
	coll    map[string]float64
}

func (m randModel) P2P(b int64) float64 { return 100 + m.perByte*float64(b) }
func (m randModel) CollectiveOrFallback(name string, b int64, p int) (float64, string) {
	return m.coll[name] + float64(b) + 10*float64(p), name
}

// randomGraph builds a random acyclic task graph of at most maxNodes
// nodes: ops are added in a random global order; a new op may receive one
// message from any earlier op; blocking collectives join a random subset of
// ranks at their current positions; nonblocking ones are posted by each
// member's latest op and completed by a later op.
func randomGraph(rng *rand.Rand, maxNodes int) (*taskgraph.Graph, error) {
	size := 1 + rng.IntN(3)
	if maxNodes > 20 {
		size = 1 + rng.IntN(8)
	}
	b := taskgraph.NewBuilder(size)
	members := make([]int32, size)
	for i := range members {
		members[i] = int32(i)
	}
	names := []taskgraph.NameID{b.Name("MPI_Send"), b.Name("MPI_Recv"), b.Name("MPI_Wait")}
	collNames := []taskgraph.NameID{b.Name("MPI_Barrier"), b.Name("MPI_Allreduce")}
	var (
		ops   []opRef
		msgs  []msg
		colls []coll
		clock = make([]int64, size)
		nOps  = make([]int, size)
	)
	for r := range clock {
		rb := b.Rank(r)
		rb.SetInit(int64(rng.IntN(100)))
		clock[r] = 100
	}
	budget := maxNodes - 2
	pendingNB := []int{} // nonblocking collectives with parts awaiting completion
	for budget > 0 {
		switch x := rng.IntN(10); {
		case x < 7: // an op
			r := rng.IntN(size)
			start := clock[r] + int64(rng.IntN(50)) - 10 // sometimes overlapping: clamped
			end := start + int64(rng.IntN(30))
			clock[r] = max(clock[r], end)
			local := b.Rank(r).AddOp(taskgraph.Op{Name: names[rng.IntN(len(names))], Kind: spec.Call, Start: start, End: end, Event: int64(nOps[r])})
			nOps[r]++
			me := opRef{r, local}
			used := false
			// Complete a pending nonblocking collective part of rank r?
			for _, ci := range pendingNB {
				c := &colls[ci]
				for j, p := range c.parts {
					if p.Rank == r && c.done[j].local == ^uint32(0) && p.At < local && !used && rng.IntN(2) == 0 {
						c.done[j] = me
						used = true
					}
				}
			}
			if !used && len(ops) > 0 && rng.IntN(2) == 0 {
				msgs = append(msgs, msg{from: ops[rng.IntN(len(ops))], to: me, b: uint64(rng.IntN(100))})
			}
			ops = append(ops, me)
			budget--
		case x < 9: // a blocking collective
			c := coll{name: collNames[rng.IntN(2)], root: -1}
			for r := 0; r < size; r++ {
				if rng.IntN(3) > 0 {
					start := clock[r] + int64(rng.IntN(40))
					end := start + int64(rng.IntN(20))
					clock[r] = end
					c.parts = append(c.parts, taskgraph.Part{Rank: r, At: uint32(nOps[r]), Start: start, End: end, Event: int64(1000 + len(colls))})
				}
			}
			if len(c.parts) > 0 {
				colls = append(colls, c)
				budget--
			}
		default: // a nonblocking collective posted by each member's latest op
			c := coll{name: collNames[rng.IntN(2)], nb: true, root: -1}
			for r := 0; r < size; r++ {
				if nOps[r] > 0 && rng.IntN(3) > 0 {
					c.parts = append(c.parts, taskgraph.Part{Rank: r, Nonblocking: true, At: uint32(nOps[r] - 1), Event: int64(nOps[r] - 1)})
					c.done = append(c.done, opRef{r, ^uint32(0)})
				}
			}
			if len(c.parts) > 0 {
				pendingNB = append(pendingNB, len(colls))
				colls = append(colls, c)
				budget--
			}
		}
	}
	return finishRandomGraph(rng, b, members, clock, nOps, msgs, colls)
}

// The parts of a random graph: an operation of a rank, a message, a
// collective instance.
type opRef struct {
	rank  int
	local uint32
}

type msg struct {
	from, to opRef
	b        uint64
}

type coll struct {
	name  taskgraph.NameID
	parts []taskgraph.Part
	done  []opRef // nonblocking: completing op per part (local ^0: none)
	nb    bool
	root  int // -1: none
}

// finishRandomGraph ends the ranks of b (most with an MPI_Finalize after
// clock), lays them out, and adds the collectives and the incoming edges
// of the messages and of the nonblocking collectives' completions.
func finishRandomGraph(rng *rand.Rand, b *taskgraph.Builder, members []int32, clock []int64, nOps []int, msgs []msg, colls []coll) (*taskgraph.Graph, error) {
	for r := range clock {
		if rng.IntN(4) > 0 {
			b.Rank(r).SetFinalize(clock[r] + int64(rng.IntN(100)))
		}
	}
	if err := b.Layout(); err != nil {
		return nil, err
	}
	ids := make([]taskgraph.NodeID, len(colls))
	for i, c := range colls {
		id, err := b.AddCollective(taskgraph.Collective{Name: c.name, GID: 1, Members: members, Bytes: int64(i * 8), MovesData: i > 0, Parts: c.parts,
			Root: c.root, HasRoot: c.root >= 0})
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	type in struct {
		from  taskgraph.NodeID
		bytes uint64
		ok    bool
	}
	incoming := make([][]in, len(clock))
	for r := range incoming {
		incoming[r] = make([]in, nOps[r])
	}
	for _, m := range msgs {
		incoming[m.to.rank][m.to.local] = in{b.OpID(m.from.rank, m.from.local), m.b, true}
	}
	for i, c := range colls {
		for _, d := range c.done {
			if d.local != ^uint32(0) {
				incoming[d.rank][d.local] = in{ids[i], 0, true}
			}
		}
	}
	for r := range incoming {
		for l, x := range incoming[r] {
			if x.ok {
				if err := b.Rank(r).AddIncoming(uint32(l), x.from, x.bytes); err != nil {
					return nil, err
				}
			}
		}
	}
	return b.Finish()
}

// slowLongest enumerates every path from Init to Finalize along Out edges.
func slowLongest(g *taskgraph.Graph, m Model) float64 {
	w := &weigher{g: g, m: m, colls: make(map[taskgraph.CollectiveInfo]collW)}
	best := math.Inf(-1)
	var walk func(v taskgraph.NodeID, acc float64)
	walk = func(v taskgraph.NodeID, acc float64) {
		if g.Kind(v) == taskgraph.KindCollective {
			acc += w.coll(v).ns
		}
		if v == taskgraph.Finalize {
			best = max(best, acc)
			return
		}
		for _, e := range g.Out(v, nil) {
			walk(e.To, acc+w.edge(&e))
		}
	}
	walk(taskgraph.Init, 0)
	return best
}

func TestComputeMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := randModel{perByte: 3, coll: map[string]float64{"MPI_Barrier": 50, "MPI_Allreduce": 500}}
	for i := 0; i < 600; i++ {
		g, err := randomGraph(rng, 3+rng.IntN(8))
		if err != nil {
			t.Fatalf("graph %d: %v", i, err)
		}
		if g.NumOps() == 0 && g.NumCollectives() == 0 {
			continue
		}
		p, err := Compute(g, m)
		if err != nil {
			t.Fatalf("graph %d: %v", i, err)
		}
		want := slowLongest(g, m)
		if math.Abs(p.Length-want) > 1e-9*max(1, want) {
			var b bytes.Buffer
			g.WriteText(&b)
			t.Fatalf("graph %d: Compute finds %v, brute force %v\n%s", i, p.Length, want, b.String())
		}
		checkPath(t, g, m, p)
	}
}

// checkPath checks that p is a path of g from Init to Finalize whose
// weights add up to its length.
func checkPath(t *testing.T, g *taskgraph.Graph, m Model, p *Path) {
	t.Helper()
	n := p.NumVertices()
	if p.Vertex(0).ID != taskgraph.Init || p.Vertex(n-1).ID != taskgraph.Finalize {
		t.Fatalf("path from %d to %d", p.Vertex(0).ID, p.Vertex(n-1).ID)
	}
	sum := 0.0
	for i := range n {
		v := p.Vertex(i)
		sum += v.Weight
		if i == n-1 {
			break
		}
		h := p.Hop(i)
		if h.From != v.ID || h.To != p.Vertex(i+1).ID {
			t.Fatalf("hop %d %d->%d between vertices %d and %d", i, h.From, h.To, v.ID, p.Vertex(i+1).ID)
		}
		found := false
		for _, e := range g.Out(v.ID, nil) {
			if e.To == h.To && e.Kind == h.Kind {
				found = true
			}
		}
		if !found {
			t.Fatalf("hop %d %d->%d is not an edge", i, h.From, h.To)
		}
		sum += h.Weight
	}
	if math.Abs(sum-p.Length) > 1e-6*max(1, p.Length) {
		t.Fatalf("path weights add up to %v, length %v", sum, p.Length)
	}
}

func TestComputeCycle(t *testing.T) {
	b := taskgraph.NewBuilder(2)
	n := b.Name("MPI_Recv")
	for r := 0; r < 2; r++ {
		b.Rank(r).AddOp(taskgraph.Op{Name: n, Kind: spec.Recv, Start: 10, End: 20})
		b.Rank(r).AddOp(taskgraph.Op{Name: n, Kind: spec.Send, Start: 30, End: 40, Event: 1})
	}
	b.Layout()
	// Rank 0's first op receives from rank 1's second, and vice versa.
	b.Rank(0).AddIncoming(0, b.OpID(1, 1), 8)
	b.Rank(1).AddIncoming(0, b.OpID(0, 1), 8)
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compute(g, nil)
	var ce *taskgraph.CycleError
	if !errors.As(err, &ce) {
		t.Fatalf("want a cycle error, got %v", err)
	}
	if ce.Node != 2 || ce.Waits != 5 || ce.Stuck != 2 || !strings.Contains(err.Error(), "node 2 (MPI_Recv on rank 0, event 0)") {
		t.Errorf("cycle error %+v: %v", ce, err)
	}
}

func TestComputeEmpty(t *testing.T) {
	g, err := taskgraph.NewBuilder(2).Finish()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compute(g, nil); !errors.Is(err, ErrEmpty) {
		t.Fatalf("want ErrEmpty, got %v", err)
	}
}

// specGraph is the task graph of SPEC §5's critPath.out example: rank 0
// sends 40000 bytes to rank 1, which computes 2 ms before a barrier.
func specGraph(t *testing.T) *taskgraph.Graph {
	b := taskgraph.NewBuilder(2)
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.SetInit(1000)
	r1.SetInit(1000)
	r0.AddOp(taskgraph.Op{Name: b.Name("MPI_Send"), Kind: spec.Send, Start: 1000, End: 1500, Bytes: 40000, Event: 1})
	r1.AddOp(taskgraph.Op{Name: b.Name("MPI_Recv"), Kind: spec.Recv, Start: 1000, End: 46000, Bytes: 40000, Event: 1})
	r0.SetFinalize(2101600)
	r1.SetFinalize(2101000)
	if err := b.Layout(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddCollective(taskgraph.Collective{Name: b.Name("MPI_Barrier"), GID: 1, Members: []int32{0, 1},
		Parts: []taskgraph.Part{{Rank: 0, At: 1, Start: 1600, End: 2101600, Event: 2}, {Rank: 1, At: 1, Start: 2046000, End: 2101000, Event: 2}}}); err != nil {
		t.Fatal(err)
	}
	r1.AddIncoming(0, b.OpID(0, 0), 40000)
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

type fixedModel struct{}

func (fixedModel) P2P(b int64) float64 { return 1000 + float64(b) }
func (fixedModel) CollectiveOrFallback(name string, b int64, p int) (float64, string) {
	return 5000, "MPI_Barrier"
}

func TestCritPathOutFormat(t *testing.T) {
	g := specGraph(t)
	p, err := Compute(g, fixedModel{})
	if err != nil {
		t.Fatal(err)
	}
	// 0 + 41000 (message) + 2000000 + 5000 (barrier) + 0
	if p.Length != 2046000 {
		t.Errorf("length %v, want 2046000", p.Length)
	}
	for _, tc := range []struct {
		unit Unit
		want string
	}{
		{Nanosecond, "MPI_Init -1\n0\nMPI_Send 0\n40000\nMPI_Recv 1\n2000000\nMPI_Barrier -1\n0\nMPI_Finalize -1\n"},
		{Microsecond, "MPI_Init -1\n0\nMPI_Send 0\n40000\nMPI_Recv 1\n2000\nMPI_Barrier -1\n0\nMPI_Finalize -1\n"},
		{Millisecond, "MPI_Init -1\n0\nMPI_Send 0\n40000\nMPI_Recv 1\n2\nMPI_Barrier -1\n0\nMPI_Finalize -1\n"},
		{Second, "MPI_Init -1\n0\nMPI_Send 0\n40000\nMPI_Recv 1\n0\nMPI_Barrier -1\n0\nMPI_Finalize -1\n"},
	} {
		var b bytes.Buffer
		if err := WriteCritPathOut(&b, p, tc.unit); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("unit %s:\n%q\nwant\n%q", tc.unit, b.String(), tc.want)
		}
	}
}

func TestUnit(t *testing.T) {
	for _, tc := range []struct {
		s    string
		ns   float64
		want int64
	}{{"ns", 1499.5, 1500}, {"us", 1499.5, 1}, {"us", 1500, 2}, {"µs", 2499, 2}, {"ms", 2_500_000, 3}, {"s", 499_999_999, 0}} {
		u, err := ParseUnit(tc.s)
		if err != nil {
			t.Fatal(err)
		}
		if got := u.Round(tc.ns); got != tc.want {
			t.Errorf("%v in %s: %d, want %d", tc.ns, tc.s, got, tc.want)
		}
	}
	if _, err := ParseUnit("min"); err == nil {
		t.Error("ParseUnit(min) succeeds")
	}
}

func TestSummary(t *testing.T) {
	g := specGraph(t)
	p, err := Compute(g, fixedModel{})
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(p, 2)
	check := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("length", s.Length, 2046000)
	if s.Measured != 2100600 {
		t.Errorf("measured %d, want 2100600 (rank 0)", s.Measured)
	}
	check("computation", s.Computation, 2000000)
	check("communication", s.Communication, 41000+5000)
	check("sum", s.Computation+s.Communication, s.Length)
	if s.Messages != 1 || s.MessageBytes != 40000 || s.Collectives != 1 || s.Vertices != 5 || s.Ranks != 2 {
		t.Errorf("counts %+v", s)
	}
	// By rank: rank 1 computes 2 ms and receives the 41 µs message; the
	// barrier is rank -1; rank 0 has nothing.
	byRank := map[int]RankShare{}
	for _, x := range s.ByRank {
		byRank[x.Rank] = x
	}
	check("rank 1 computation", byRank[1].Computation, 2000000)
	check("rank 1 communication", byRank[1].Communication, 41000)
	check("collective", byRank[-1].Communication, 5000)
	check("rank 0", byRank[0].Computation+byRank[0].Communication, 0)
	if s.ByRank[0].Rank != 1 {
		t.Errorf("by rank not sorted: %+v", s.ByRank)
	}
	total := 0.0
	for _, x := range s.ByFunction {
		total += x.Computation + x.Communication
	}
	check("by function total", total, s.Length)
	fns := map[string]FunctionShare{}
	for _, x := range s.ByFunction {
		fns[x.Name] = x
	}
	check("MPI_Recv communication", fns["MPI_Recv"].Communication, 41000)
	check("MPI_Barrier computation", fns["MPI_Barrier"].Computation, 2000000)
	check("MPI_Barrier communication", fns["MPI_Barrier"].Communication, 5000)
	if len(s.Top) != 2 || s.Top[0].Weight != 2000000 || s.Top[0].From != "MPI_Recv 1" || s.Top[1].Weight != 41000 || s.Top[1].Bytes != 40000 {
		t.Errorf("top %+v", s.Top)
	}
	check("top share", s.Top[0].Share, 2000000.0/2046000)
	if _, err := json.Marshal(s); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := s.WriteText(&b, Microsecond); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"critical path: 2046.000 us (measured run: 2100.600 us", "MPI_Recv 1 -> MPI_Barrier -1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary text lacks %q:\n%s", want, b.String())
		}
	}
}

func TestLatencyDefaultModel(t *testing.T) {
	p, err := Compute(specGraph(t), latency.Default())
	if err != nil {
		t.Fatal(err)
	}
	if p.Length < 2000000 || p.NumVertices() != 5 {
		t.Errorf("path %v", fmt.Sprint(p.Length, p.NumVertices()))
	}
}

// walkLongest is the longest path by dynamic programming over
// taskgraph.Graph.Walk, an independent implementation of what Longest does.
func walkLongest(t *testing.T, g *taskgraph.Graph, m Model) float64 {
	w := &weigher{g: g, m: m, colls: make(map[taskgraph.CollectiveInfo]collW)}
	dist := make([]float64, g.NumNodes())
	err := g.Walk(func(v taskgraph.NodeID, in []taskgraph.Edge) {
		best := 0.0
		for i := range in {
			best = max(best, dist[in[i].From]+w.edge(&in[i]))
		}
		dist[v] = best + w.coll(v).ns
	})
	if err != nil {
		t.Fatal(err)
	}
	return dist[taskgraph.Finalize]
}

func TestComputeMatchesWalkOnLargerGraphs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := randModel{perByte: 0.5, coll: map[string]float64{"MPI_Barrier": 70, "MPI_Allreduce": 300}}
	for i := 0; i < 200; i++ {
		g, err := randomGraph(rng, 20+rng.IntN(400))
		if err != nil {
			t.Fatal(err)
		}
		if g.NumOps() == 0 && g.NumCollectives() == 0 {
			continue
		}
		p, err := Compute(g, m)
		if err != nil {
			t.Fatalf("graph %d: %v", i, err)
		}
		if want := walkLongest(t, g, m); math.Abs(p.Length-want) > 1e-6*max(1, want) {
			t.Fatalf("graph %d: Compute %v, Walk %v", i, p.Length, want)
		}
		checkPath(t, g, m, p)
	}
}

func TestSlackMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := randModel{perByte: 2, coll: map[string]float64{"MPI_Barrier": 40, "MPI_Allreduce": 400}}
	for i := 0; i < 300; i++ {
		g, err := randomGraph(rng, 3+rng.IntN(8))
		if err != nil {
			t.Fatal(err)
		}
		if g.NumOps() == 0 && g.NumCollectives() == 0 {
			continue
		}
		slack, err := Slack(g, m)
		if err != nil {
			t.Fatal(err)
		}
		// Brute force: the longest path through each node.
		w := &weigher{g: g, m: m, colls: make(map[taskgraph.CollectiveInfo]collW)}
		through := make([]float64, g.NumNodes())
		for i := range through {
			through[i] = math.Inf(-1)
		}
		var visit []taskgraph.NodeID
		var walk func(v taskgraph.NodeID, acc float64)
		walk = func(v taskgraph.NodeID, acc float64) {
			acc += w.coll(v).ns
			visit = append(visit, v)
			if v == taskgraph.Finalize {
				for _, u := range visit {
					through[u] = max(through[u], acc)
				}
			}
			for _, e := range g.Out(v, nil) {
				walk(e.To, acc+w.edge(&e))
			}
			visit = visit[:len(visit)-1]
		}
		walk(taskgraph.Init, 0)
		length := through[taskgraph.Finalize]
		for v := range slack {
			if want := length - through[v]; !(math.IsInf(want, 1) && math.IsInf(slack[v], 1)) && math.Abs(slack[v]-want) > 1e-6*max(1, length) {
				t.Fatalf("graph %d node %d: slack %v, want %v", i, v, slack[v], want)
			}
		}
		p, _ := Compute(g, m)
		for j := range p.NumVertices() {
			if x := p.Vertex(j); slack[x.ID] > 1e-9*max(1, length) {
				t.Fatalf("graph %d: node %d on the critical path has slack %v", i, x.ID, slack[x.ID])
			}
		}
	}
}
