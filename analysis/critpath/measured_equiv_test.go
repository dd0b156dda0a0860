package critpath

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// randomWaitGraph is randomGraph with what the measured weights look at:
// calls of several operations (one event: a Waitall's requests), blocking
// and nonblocking sends and receives, rooted collectives, call sites, and
// times far apart (more than 4.29 s: a chunk's wide starts) or long calls.
// long makes a rank of more than one chunk of operations.
func randomWaitGraph(rng *rand.Rand, maxNodes int, long bool) (*taskgraph.Graph, error) {
	size := 1 + rng.IntN(6)
	b := taskgraph.NewBuilder(size)
	members := make([]int32, size)
	for i := range members {
		members[i] = int32(i)
	}
	names := []taskgraph.NameID{b.Name("MPI_Send"), b.Name("MPI_Recv"), b.Name("MPI_Isend"), b.Name("MPI_Irecv"),
		b.Name("MPI_Wait"), b.Name("MPI_Waitall"), b.Name("MPI_Sendrecv"), b.Name("MPI_Ssend_c")}
	collNames := []taskgraph.NameID{b.Name("MPI_Barrier"), b.Name("MPI_Allreduce"), b.Name("MPI_Bcast"), b.Name("MPI_Reduce"), b.Name("MPI_Iallreduce"), b.Name("MPI_Scan")}
	blocking := []int{0, 1, 2, 3, 5}
	var (
		ops   []opRef
		msgs  []msg
		colls []coll
		clock = make([]int64, size)
		nOps  = make([]int, size)
		ev    = make([]int64, size) // the rank's next event
		lastN = make([]taskgraph.NameID, size)
	)
	for r := range clock {
		b.Rank(r).SetInit(int64(rng.IntN(100)))
		clock[r] = 100
		ev[r] = 1
	}
	budget := maxNodes - 2
	pendingNB := []int{}
	for budget > 0 {
		switch x := rng.IntN(20); {
		case x < 15 || long && x < 19: // an op
			r := rng.IntN(size)
			if long {
				r = 0
			}
			gap := int64(rng.IntN(50)) - 10
			if rng.IntN(50) == 0 {
				gap += 5e9 // far apart: wide starts
			}
			dur := int64(rng.IntN(30))
			if rng.IntN(80) == 0 {
				dur += 5e9 // a long call
			}
			start := clock[r] + gap
			end := start + dur
			same := nOps[r] > 0 && rng.IntN(3) == 0 // another operation of the rank's last call
			name := names[rng.IntN(len(names))]
			if same {
				ev[r]--
				name = lastN[r]
				start, end = b.Rank(r).Times(uint32(nOps[r] - 1))
			}
			clock[r] = max(clock[r], end)
			local := b.Rank(r).AddOp(taskgraph.Op{Name: name, Kind: spec.Call, Start: start, End: end, Event: ev[r],
				Bytes: uint64(rng.IntN(100)), Expanded: same})
			if rng.IntN(2) == 0 {
				b.Rank(r).SetSite(ev[r], uint64(1+rng.IntN(3)))
			}
			ev[r]++
			lastN[r] = name
			nOps[r]++
			me := opRef{r, local}
			used := false
			for _, ci := range pendingNB {
				c := &colls[ci]
				for j, p := range c.parts {
					if p.Rank == r && c.done[j].local == ^uint32(0) && p.At < local && !used && rng.IntN(2) == 0 {
						c.done[j] = me
						used = true
					}
				}
			}
			if !used && len(ops) > 0 && rng.IntN(3) > 0 {
				msgs = append(msgs, msg{from: ops[rng.IntN(len(ops))], to: me, b: uint64(rng.IntN(100))})
			}
			ops = append(ops, me)
			budget--
		case x < 19: // a blocking collective
			c := coll{name: collNames[blocking[rng.IntN(len(blocking))]], root: -1}
			for r := 0; r < size; r++ {
				if rng.IntN(3) > 0 {
					start := clock[r] + int64(rng.IntN(40))
					end := start + int64(rng.IntN(20))
					clock[r] = end
					c.parts = append(c.parts, taskgraph.Part{Rank: r, At: uint32(nOps[r]), Start: start, End: end, Event: ev[r]})
					if rng.IntN(2) == 0 {
						b.Rank(r).SetSite(ev[r], uint64(1+rng.IntN(3)))
					}
					ev[r]++
				}
			}
			if len(c.parts) > 0 {
				if rng.IntN(3) > 0 {
					c.root = c.parts[rng.IntN(len(c.parts))].Rank
				}
				colls = append(colls, c)
				budget--
			}
		default: // a nonblocking collective posted by each member's latest op
			c := coll{name: collNames[1+3*rng.IntN(2)], nb: true, root: -1}
			for r := 0; r < size; r++ {
				if nOps[r] > 0 && rng.IntN(3) > 0 {
					c.parts = append(c.parts, taskgraph.Part{Rank: r, Nonblocking: true, At: uint32(nOps[r] - 1), Event: ev[r] - 1})
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

// TestMeasuredMatchesReference: the measured weights found in one walk of
// each rank (RankOps) are those of the reference (measured_ref_test.go):
// the same retimed graph, edge weights, wait states, clamps, span and
// path, on random graphs with random clock offsets.
func TestMeasuredMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	n := 600
	if testing.Short() {
		n = 150
	}
	for it := range n {
		maxNodes, long := 3+rng.IntN(60), false
		switch it % 50 {
		case 0:
			maxNodes = 2000 + rng.IntN(3000)
		case 1:
			maxNodes, long = 9000+rng.IntN(3000), true // several chunks of operations
		}
		g, err := randomWaitGraph(rng, maxNodes, long)
		if err != nil {
			t.Fatal(err)
		}
		var clocks *Clocks
		if rng.IntN(4) > 0 {
			clocks = &Clocks{Offset: map[int]int64{}, Err: map[int]int64{}}
			for _, r := range g.Ranks() {
				if rng.IntN(3) > 0 {
					clocks.Offset[r], clocks.Err[r] = int64(rng.IntN(200))-100, int64(rng.IntN(10))
				}
			}
		}
		compareMeasured(t, it, g, clocks)
		if t.Failed() {
			return
		}
	}
}

func compareMeasured(t *testing.T, it int, g *taskgraph.Graph, clocks *Clocks) {
	t.Helper()
	ref := refWeigh(g, clocks)
	refG := g.Retimed(ref)
	ref.g = refG
	m := weighMeasured(g, clocks)
	if ref.T0 != m.T0 || ref.Span != m.Span || ref.InitSkew != m.InitSkew || ref.clamps != m.clamps {
		t.Fatalf("graph %d: T0, span, init skew, clamps %d %d %d %+v, want %d %d %d %+v", it,
			m.T0, m.Span, m.InitSkew, m.clamps, ref.T0, ref.Span, ref.InitSkew, ref.clamps)
	}
	if !reflect.DeepEqual(ref.last, m.last) || !reflect.DeepEqual(ref.done, m.done) {
		t.Fatalf("graph %d: collectives' last arrivals and ends differ", it)
	}
	got, want := map[WaitKey]WaitState{}, map[WaitKey]WaitState{}
	for _, x := range m.waits {
		got[WaitKey{x.State, x.Rank, x.Function, x.SiteID}] = *x
	}
	for k, x := range ref.waits {
		want[k] = *x
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("graph %d: wait states\n%v\nwant\n%v", it, got, want)
	}
	for v := taskgraph.NodeID(0); int(v) < g.NumNodes(); v++ {
		if a, b := m.g.Node(v), refG.Node(v); !reflect.DeepEqual(a, b) {
			t.Fatalf("graph %d: retimed node %d %+v, want %+v", it, v, a, b)
		}
		if g.Kind(v) == taskgraph.KindCollective {
			if a, b := m.Collective(v), ref.Collective(v); a != b {
				t.Fatalf("graph %d: collective %d weighs %v, want %v", it, v, a, b)
			}
			for _, r := range g.Participants(v) {
				s, e, _ := m.g.PartTimes(v, r)
				rs, re, _ := refG.PartTimes(v, r)
				if s != rs || e != re {
					t.Fatalf("graph %d: collective %d rank %d retimed %d-%d, want %d-%d", it, v, r, s, e, rs, re)
				}
			}
		}
	}
	for _, r := range g.Ranks() {
		a1, a2, a3, a4 := m.g.RankEnds(r)
		b1, b2, b3, b4 := refG.RankEnds(r)
		if a1 != b1 || a2 != b2 || a3 != b3 || a4 != b4 {
			t.Fatalf("graph %d: rank %d's ends differ", it, r)
		}
	}
	var edges, refEdges []taskgraph.Edge
	m.g.Edges(func(e taskgraph.Edge) bool { edges = append(edges, e); return true })
	refG.Edges(func(e taskgraph.Edge) bool { refEdges = append(refEdges, e); return true })
	if !reflect.DeepEqual(edges, refEdges) {
		t.Fatalf("graph %d: the retimed graphs' edges differ", it)
	}
	for _, e := range edges {
		if e.Kind == taskgraph.Message || e.Kind == taskgraph.CollOut && g.IsNonblocking(e.From) {
			if a, b := m.Cross(e.From, e.To, e.Bytes), ref.Cross(e.From, e.To, e.Bytes); a != b {
				t.Fatalf("graph %d: cross edge %+v weighs %v, want %v", it, e, a, b)
			}
		}
	}
	p, err := ComputeMeasured(g, clocks)
	refLen, refPath, refErr := refG.Longest(ref)
	if (err != nil) != (refErr != nil) {
		t.Fatalf("graph %d: error %v, want %v", it, err, refErr)
	}
	if err != nil {
		return
	}
	if p.Length != refLen || p.NumVertices() != refPath.Len() {
		t.Fatalf("graph %d: path of %v ns, %d vertices, want %v, %d", it, p.Length, p.NumVertices(), refLen, refPath.Len())
	}
	for i := range refPath.Len() {
		if p.p.Node(i) != refPath.Node(i) {
			t.Fatalf("graph %d: path vertex %d is %d, want %d", it, i, p.p.Node(i), refPath.Node(i))
		}
	}
}
