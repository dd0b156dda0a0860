package taskgraph

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// sample builds a two-rank graph:
//
//	rank 0: Isend(→1) [Barrier] Iallreduce Wait#0 Wait#1
//	rank 1: Recv(←0)  [Barrier] Iallreduce Wait
//
// with the nonblocking collective completed by rank 0's second Wait and
// rank 1's Wait.
func sample(t *testing.T) *Graph {
	t.Helper()
	b := NewBuilder(2)
	isend, recv, wait, iall, barrier := b.Name("MPI_Isend"), b.Name("MPI_Recv"), b.Name("MPI_Wait"), b.Name("MPI_Iallreduce"), b.Name("MPI_Barrier")
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.SetInit(100)
	r1.SetInit(90)
	r0.AddOp(Op{Name: isend, Kind: spec.Send, Start: 200, End: 210, Bytes: 1 << 40, Event: 1})
	r0.AddOp(Op{Name: iall, Kind: spec.Coll, Start: 400, End: 410, Bytes: 8, Event: 3})
	r0.AddOp(Op{Name: wait, Kind: spec.Complete, Start: 500, End: 600, Event: 4, Expanded: true})
	r0.AddOp(Op{Name: wait, Kind: spec.Complete, Start: 600, End: 600, Event: 4, Expanded: true})
	r0.SetFinalize(700)
	r1.AddOp(Op{Name: recv, Kind: spec.Recv, Start: 150, End: 250, Bytes: 1 << 40, Event: 1})
	r1.AddOp(Op{Name: iall, Kind: spec.Coll, Start: 450, End: 460, Bytes: 8, Event: 3})
	r1.AddOp(Op{Name: wait, Kind: spec.Complete, Start: 470, End: 480, Event: 4})
	if err := b.Layout(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddCollective(Collective{Name: barrier, GID: 1, Members: []int32{0, 1},
		Parts: []Part{{Rank: 0, At: 1, Start: 300, End: 350, Event: 2}, {Rank: 1, At: 1, Start: 300, End: 340, Event: 2}}}); err != nil {
		t.Fatal(err)
	}
	nb, err := b.AddCollective(Collective{Name: iall, GID: 1, Members: []int32{0, 1}, Bytes: 8,
		Parts: []Part{{Rank: 0, Nonblocking: true, At: 1, Start: 400, End: 410, Event: 3}, {Rank: 1, Nonblocking: true, At: 1, Start: 450, End: 460, Event: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r1.AddIncoming(0, b.OpID(0, 0), 1<<40); err != nil {
		t.Fatal(err)
	}
	if err := r1.AddIncoming(2, nb, 0); err != nil {
		t.Fatal(err)
	}
	if err := r0.AddIncoming(3, nb, 0); err != nil {
		t.Fatal(err)
	}
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestNodes(t *testing.T) {
	g := sample(t)
	if g.NumNodes() != 2+7+2 || g.NumOps() != 7 || g.NumCollectives() != 2 || g.NumMessages() != 1 || g.Size() != 2 {
		t.Fatalf("%d nodes, %d ops, %d collectives, %d messages", g.NumNodes(), g.NumOps(), g.NumCollectives(), g.NumMessages())
	}
	if first, n := g.RankOps(1); first != 6 || n != 3 {
		t.Errorf("rank 1 ops %d+%d", first, n)
	}
	if a, b, ok := g.RankSpan(0); !ok || a != 100 || b != 700 {
		t.Errorf("rank 0 span %d %d %v", a, b, ok)
	}
	if _, _, ok := g.RankSpan(1); ok {
		t.Error("rank 1 has no MPI_Finalize, yet a span")
	}
	n := g.Node(2)
	if n.Name != "MPI_Isend" || n.Rank != 0 || n.Kind != KindOp || n.EventKind != spec.Send || n.Bytes != 1<<40 ||
		n.Start != 200 || n.End != 210 || n.Event != (EventRef{Rank: 0, Index: 1, Completion: -1}) {
		t.Errorf("node 2: %+v", n)
	}
	if n := g.Node(5); n.Name != "MPI_Wait" || n.Event.Completion != 1 || n.Event.Index != 4 {
		t.Errorf("node 5: %+v", n)
	}
	if n := g.Node(8); n.Event.Completion != -1 {
		t.Errorf("node 8 (a plain MPI_Wait): %+v", n)
	}
	c := g.Node(9)
	if c.Kind != KindCollective || c.Name != "MPI_Barrier" || c.Rank != -1 || c.Start != 300 || c.End != 350 || c.Procs != 2 || c.Participants != 2 || c.Nonblocking {
		t.Errorf("node 9: %+v", c)
	}
	if c := g.Node(10); !c.Nonblocking || c.Bytes != 8 {
		t.Errorf("node 10: %+v", c)
	}
	if got := g.Participants(10); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("participants %v", got)
	}
	if ci, ok := g.Collective(10); !ok || ci != (CollectiveInfo{Name: "MPI_Iallreduce", Bytes: 8, Procs: 2}) {
		t.Errorf("collective info %+v", ci)
	}
	if g.Node(Init).Start != 90 || g.Node(Finalize).Start != 700 {
		t.Errorf("init %+v finalize %+v", g.Node(Init), g.Node(Finalize))
	}
	if g.Rank(3) != 0 || g.Rank(7) != 1 || g.Rank(9) != -1 || g.Kind(11) != 0 {
		t.Error("Rank/Kind")
	}
}

func TestEdges(t *testing.T) {
	g := sample(t)
	in := g.In(6, nil) // rank 1's Recv
	want := []Edge{
		{Kind: InitOut, From: Init, To: 6, Rank: 1, Weight: 60},
		{Kind: Message, From: 2, To: 6, Rank: 1, Bytes: 1 << 40},
	}
	if !slices.Equal(in, want) {
		t.Errorf("In(6) = %+v", in)
	}
	in = g.In(9, nil) // the barrier
	want = []Edge{
		{Kind: CollIn, From: 2, To: 9, Rank: 0, Weight: 90},
		{Kind: CollIn, From: 6, To: 9, Rank: 1, Weight: 50},
	}
	if !slices.Equal(in, want) {
		t.Errorf("In(9) = %+v", in)
	}
	out := g.Out(9, nil)
	want = []Edge{
		{Kind: CollOut, From: 9, To: 3, Rank: 0, Weight: 50},
		{Kind: CollOut, From: 9, To: 7, Rank: 1, Weight: 110},
	}
	if !slices.Equal(out, want) {
		t.Errorf("Out(9) = %+v", out)
	}
	out = g.Out(10, nil) // the nonblocking collective
	want = []Edge{
		{Kind: CollOut, From: 10, To: 5, Rank: 0},
		{Kind: CollOut, From: 10, To: 8, Rank: 1},
	}
	if !slices.Equal(out, want) {
		t.Errorf("Out(10) = %+v", out)
	}
	out = g.Out(3, nil) // rank 0's Iallreduce
	want = []Edge{
		{Kind: Compute, From: 3, To: 4, Rank: 0, Weight: 90},
		{Kind: CollIn, From: 3, To: 10, Rank: 0},
	}
	if !slices.Equal(out, want) {
		t.Errorf("Out(3) = %+v", out)
	}
	fin := g.In(Finalize, nil)
	want = []Edge{
		{Kind: FinalizeIn, From: 5, To: Finalize, Rank: 0, Weight: 100},
		{Kind: FinalizeIn, From: 8, To: Finalize, Rank: 1}, // no MPI_Finalize: 0
	}
	if !slices.Equal(fin, want) {
		t.Errorf("In(Finalize) = %+v", fin)
	}
	// Walk visits every node once, after its predecessors, with In's edges.
	seen := make([]bool, g.NumNodes())
	var order []NodeID
	if err := g.Walk(func(v NodeID, in []Edge) {
		if seen[v] {
			t.Errorf("%d visited twice", v)
		}
		seen[v] = true
		order = append(order, v)
		if !slices.Equal(in, g.In(v, nil)) {
			t.Errorf("Walk's in edges of %d differ from In", v)
		}
		for _, e := range in {
			if !seen[e.From] {
				t.Errorf("%d before its predecessor %d", v, e.From)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(order) != g.NumNodes() || order[0] != Init || order[len(order)-1] != Finalize {
		t.Errorf("walk order %v", order)
	}
	var text bytes.Buffer
	if err := g.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"graph ranks=2 ops=7 collectives=2 messages=1\n",
		"node 5 op MPI_Wait rank=0 t=600..600 kind=Complete bytes=0 ev=4#1\n",
		"node 10 collective MPI_Iallreduce rank=-1 t=400..460 gid=1 procs=2 parts=2 bytes=8 nonblocking members=0,1\n",
		"edge 2 -> 6 message rank=1 bytes=1099511627776\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// TestDescribe: Describe agrees with Kind, Rank and Name, and its name
// numbers stand for the names.
func TestDescribe(t *testing.T) {
	g := sample(t)
	byIdx := map[int]string{}
	for v := NodeID(0); int(v) < g.NumNodes(); v++ {
		kind, rank, name, idx := g.Describe(v)
		if kind != g.Kind(v) || rank != g.Rank(v) || name != g.Node(v).Name {
			t.Errorf("node %d: Describe %v %d %q, Node %+v", v, kind, rank, name, g.Node(v))
		}
		if prev, ok := byIdx[idx]; ok && prev != name || idx < 0 || idx >= len(g.Names())+2 {
			t.Errorf("node %d: name number %d for %q (and %q)", v, idx, name, prev)
		}
		byIdx[idx] = name
	}
	if len(byIdx) != len(g.Names())+2 {
		t.Errorf("%d name numbers for %d names and Init, Finalize", len(byIdx), len(g.Names()))
	}
}

type unitWeights struct{}

func (unitWeights) Message(b int64) float64   { return 1000 }
func (unitWeights) Collective(NodeID) float64 { return 7 }

func TestLongest(t *testing.T) {
	g := sample(t)
	length, path, err := g.Longest(unitWeights{})
	if err != nil {
		t.Fatal(err)
	}
	// Init -(100)-> Isend -(1000)-> Recv -(50)-> Barrier(7) -(50)-> Iallreduce0
	// -(90)-> Wait#0 -(0)-> Wait#1 -(100)-> Finalize: 1397. The nonblocking
	// collective (1267 + 7 = 1274) arrives at Wait#1 before the chain (1297),
	// and rank 1's end is shorter (1277).
	if length != 1397 {
		t.Errorf("length %v", length)
	}
	var nodes []NodeID
	for i := range path.Len() {
		nodes = append(nodes, path.Node(i))
		if i+1 < path.Len() {
			if e := path.Edge(i); e.From != path.Node(i) || e.To != path.Node(i+1) {
				t.Errorf("edge %d %+v between nodes %d and %d", i, e, path.Node(i), path.Node(i+1))
			}
		}
	}
	if !slices.Equal(nodes, []NodeID{Init, 2, 6, 9, 3, 4, 5, Finalize}) {
		t.Errorf("path %v", nodes)
	}
}

// TestLongestLongPath: a path of several chunks, through messages that
// skip an operation, comes back in order with the right edges.
func TestLongestLongPath(t *testing.T) {
	const n = 3*pathLen + 5
	b := NewBuilder(1)
	fn := b.Name("MPI_Send")
	r := b.Rank(0)
	r.SetInit(0)
	const long = 5_000_000_000 // before the last operation: more than 32 bits of ns
	start := func(i int) int64 {
		if i == n-1 {
			return long + 10 + 10*int64(i)
		}
		return 10 + 10*int64(i)
	}
	for i := range n {
		r.AddOp(Op{Name: fn, Kind: spec.Send, Start: start(i), End: start(i) + 1, Event: int64(i)})
	}
	r.SetFinalize(start(n))
	if err := b.Layout(); err != nil {
		t.Fatal(err)
	}
	// A message from operation 3j to 3j+2 (1000) beats the chain (9 + 9);
	// the one into operation 5 carries more than 4 GiB.
	bytes := func(i uint32) uint64 {
		if i == 5 {
			return 1 << 33
		}
		return 64
	}
	for i := uint32(2); i < n; i += 3 {
		if err := r.AddIncoming(i, b.OpID(0, i-2), bytes(i)); err != nil {
			t.Fatal(err)
		}
	}
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	_, path, err := g.Longest(unitWeights{})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := g.RankOps(0)
	want := []NodeID{Init}
	for i := NodeID(0); i < n; i++ {
		if i%3 != 1 || i+1 == n { // the last operation has no message past it
			want = append(want, first+i)
		}
	}
	want = append(want, Finalize)
	if path.Len() != len(want) {
		t.Fatalf("path of %d nodes, want %d", path.Len(), len(want))
	}
	for i, v := range want {
		if path.Node(i) != v {
			t.Fatalf("node %d is %d, want %d", i, path.Node(i), v)
		}
		if i == 0 {
			continue
		}
		e := path.Edge(i - 1)
		kind := Compute
		switch {
		case i == 1:
			kind = InitOut
		case v == Finalize:
			kind = FinalizeIn
		case (v-first)%3 == 2:
			kind = Message
		}
		weight := int64(9)
		if v-first == n-1 {
			weight += long
		}
		if e.From != want[i-1] || e.To != v || e.Kind != kind || kind == Message && e.Bytes != int64(bytes(uint32(v-first))) || kind == Compute && e.Weight != weight {
			t.Fatalf("edge %d: %+v, want %v from %d to %d", i-1, e, kind, want[i-1], v)
		}
	}
}

func TestBuilderErrors(t *testing.T) {
	b := NewBuilder(2)
	n := b.Name("MPI_Send")
	if _, err := b.AddCollective(Collective{Name: n, Parts: []Part{{Rank: 0}}}); err == nil {
		t.Error("AddCollective before Layout")
	}
	b.Rank(0).AddOp(Op{Name: n, Kind: spec.Send})
	b.Rank(0).AddOp(Op{Name: n, Kind: spec.Send})
	if err := b.Layout(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Collective{
		{Name: n},
		{Name: n, Parts: []Part{{Rank: 1}, {Rank: 0}}},
		{Name: n, Parts: []Part{{Rank: 2}}},
		{Name: n, Parts: []Part{{Rank: 0, At: 3}}},
		{Name: n, Parts: []Part{{Rank: 1, Nonblocking: true, At: 0}}},
	} {
		if _, err := b.AddCollective(c); err == nil {
			t.Errorf("AddCollective(%+v) succeeds", c)
		}
	}
	if err := b.Rank(1).AddIncoming(0, 2, 0); err == nil {
		t.Error("an incoming edge to an operation rank 1 does not have")
	}
	if err := b.Rank(0).AddIncoming(1, 2, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Rank(0).AddIncoming(0, 3, 0); err == nil {
		t.Error("incoming edges out of order")
	}
	if err := b.Rank(0).AddIncoming(1, 3, 0); err == nil {
		t.Error("two incoming edges to one operation")
	}
	if err := b.Rank(1).AddIncoming(0, 2, 0); err == nil {
		t.Error("incoming edge out of range")
	}
	b2 := NewBuilder(1)
	b2.Rank(0).AddOp(Op{Name: b2.Name("x")})
	b2.Layout()
	b2.Rank(0).AddIncoming(0, 99, 0)
	if _, err := b2.Finish(); err == nil {
		t.Error("an edge from a node that does not exist")
	}
}

func TestCycle(t *testing.T) {
	b := NewBuilder(2)
	n := b.Name("MPI_Recv")
	for r := 0; r < 2; r++ {
		b.Rank(r).AddOp(Op{Name: n, Kind: spec.Recv, Event: 3})
		b.Rank(r).AddOp(Op{Name: n, Kind: spec.Send, Event: 4})
	}
	b.Layout()
	b.Rank(0).AddIncoming(0, b.OpID(1, 1), 8)
	b.Rank(1).AddIncoming(0, b.OpID(0, 1), 8)
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	var ce *CycleError
	if err := g.Walk(func(NodeID, []Edge) {}); !errors.As(err, &ce) || ce.Node != 2 || ce.Waits != 5 || ce.Rank != 0 {
		t.Errorf("Walk: %v", err)
	}
	if _, _, err := g.Longest(unitWeights{}); !errors.As(err, &ce) || ce.Node != 2 || ce.Waits != 5 {
		t.Errorf("Longest: %v", err)
	}
}

func TestOpStoreOverflow(t *testing.T) {
	var s opStore
	s.add(10, 10+math.MaxUint32+5, math.MaxUint32+1, 0, 1)
	s.add(20, 15, 3, 1<<40, 2) // negative duration, far event
	for i := 0; i < chunkLen; i++ {
		s.add(int64(i), int64(i)+1, uint64(i), int64(i)+(1<<40), 3)
	}
	if s.end(0) != 10+math.MaxUint32+5 || s.bytes(0) != math.MaxUint32+1 || s.event(0) != 0 {
		t.Errorf("op 0: %d %d %d", s.end(0), s.bytes(0), s.event(0))
	}
	if s.end(1) != 15 || s.event(1) != 1<<40 {
		t.Errorf("op 1: %d %d", s.end(1), s.event(1))
	}
	last := uint32(s.n - 1)
	if s.start(last) != chunkLen-1 || s.event(last) != chunkLen-1+(1<<40) || s.name(last) != 3 {
		t.Errorf("last op: %d %d", s.start(last), s.event(last))
	}
	s.truncate(1)
	if s.n != 1 || len(s.chunks) != 1 || len(s.bigEv) != 0 || s.end(0) != 10+math.MaxUint32+5 {
		t.Errorf("truncate: %d ops, %d chunks, %v", s.n, len(s.chunks), s.bigEv)
	}
}

// TestOpStoreStarts: starts are kept exactly in a chunk whose operations
// stay within 2^32 ns of its first, and in one that goes further or back in
// time, before and after the operation that widens it, in every chunk.
func TestOpStoreStarts(t *testing.T) {
	starts := []int64{
		5, 5 + math.MaxUint32, // the farthest that fits
		5 + math.MaxUint32 + 1, 7, -3, math.MinInt64, math.MaxInt64, 100, // widened
	}
	var s opStore
	var want []int64
	for c := 0; c < 3; c++ {
		base := int64(c) << 40
		for i := 0; i < chunkLen; i++ {
			st := base + int64(i)*1000
			if c > 0 && i >= 10 && i < 10+len(starts) {
				st = starts[i-10]
			}
			if c == 1 && i >= 10+len(starts) {
				st = base + int64(i)
			}
			s.add(st, st+1, 0, int64(len(want)), 1)
			want = append(want, st)
		}
	}
	for i, st := range want {
		if got := s.start(uint32(i)); got != st {
			t.Fatalf("op %d: start %d, want %d", i, got, st)
		}
		if got := s.end(uint32(i)); got != st+1 {
			t.Fatalf("op %d: end %d, want %d", i, got, st+1)
		}
	}
	if s.chunks[0].wide != nil || s.chunks[1].wide == nil || s.chunks[2].wide == nil {
		t.Errorf("wide chunks: %v %v %v", s.chunks[0].wide != nil, s.chunks[1].wide != nil, s.chunks[2].wide != nil)
	}
}

// TestPathWideRanks: a path's ranks past what 16 bits hold come back, in a
// chunk that also holds small ones, before and after the first large one.
func TestPathWideRanks(t *testing.T) {
	var p Path
	ranks := []int{0, 7, 65534, 65535, 1 << 20, 3, 0}
	for k := 0; k < 2*pathLen+10; k++ {
		r := k % 5
		if k >= pathLen && k < pathLen+len(ranks) {
			r = ranks[k-pathLen]
		}
		p.push(NodeID(k+1), Edge{Kind: Compute, Rank: r, Weight: int64(k)}, false)
	}
	for k := 0; k < p.n; k++ {
		want := k % 5
		if k >= pathLen && k < pathLen+len(ranks) {
			want = ranks[k-pathLen]
		}
		i := p.n - 2 - k // the edge into the step k
		if i < 0 {
			continue
		}
		if _, r, w, _ := p.EdgeAt(i); r != want || w != int64(k) {
			t.Fatalf("step %d: rank %d weight %d, want %d %d", k, r, w, want, k)
		}
		if e := p.Edge(i); e.Rank != want || e.To != NodeID(k+1) {
			t.Fatalf("step %d: %+v", k, e)
		}
	}
	if p.chunks[0].wideRank != nil || p.chunks[1].wideRank == nil || p.chunks[2].wideRank != nil {
		t.Error("wide ranks in the wrong chunks")
	}
}

// TestOpStoreFirstChunkGrows: a rank's first chunk starts small and
// grows up to a whole chunk, keeping every column, its whole starts once
// widened while small, and the overflow maps; a rank of a few operations
// keeps a few hundred bytes.
func TestOpStoreFirstChunkGrows(t *testing.T) {
	var s opStore
	type op struct {
		start, end int64
		bytes      uint64
		ev         int64
		name       opNameID
	}
	var want []op
	for i := 0; i < 2*chunkLen+5; i++ {
		o := op{start: int64(i) * 1000, end: int64(i)*1000 + 10, bytes: uint64(i), ev: int64(2 * i), name: opNameID(i % 7)}
		switch i {
		case 3: // widens the first chunk while it holds 8
			o.start, o.end = -5, 1
		case 20:
			o.end = o.start + math.MaxUint32 + 1
		case 21:
			o.bytes = math.MaxUint32 + 7
		case 22:
			o.ev = 1 << 40
		}
		s.add(o.start, o.end, o.bytes, o.ev, o.name)
		want = append(want, o)
		if i == 4 && len(s.chunks[0].dur) != firstChunkLen {
			t.Errorf("after 5 operations the first chunk holds %d", len(s.chunks[0].dur))
		}
	}
	if len(s.chunks) != 3 || len(s.chunks[0].dur) != chunkLen || len(s.chunks[0].wide) != chunkLen || len(s.chunks[1].dur) != chunkLen {
		t.Fatalf("%d chunks of %d, %d (wide %d)", len(s.chunks), len(s.chunks[0].dur), len(s.chunks[1].dur), len(s.chunks[0].wide))
	}
	for i, o := range want {
		j := uint32(i)
		if s.start(j) != o.start || s.end(j) != o.end || s.bytes(j) != int64(o.bytes) || s.event(j) != o.ev || s.name(j) != o.name {
			t.Fatalf("op %d: %d %d %d %d %d, want %+v", i, s.start(j), s.end(j), s.bytes(j), s.event(j), s.name(j), o)
		}
	}
}

// TestOpStoreTrim: trimming keeps the operations and leaves no room in
// the last chunk; operations added afterwards grow it again.
func TestOpStoreTrim(t *testing.T) {
	for _, n := range []int{0, 1, 5, 8, 9, chunkLen, chunkLen + 3} {
		var s opStore
		for i := 0; i < n+50; i++ {
			if i == n {
				s.trim()
				if k := len(s.chunks); k > 0 && n-(k-1)*chunkLen != len(s.chunks[k-1].dur) {
					t.Errorf("%d operations: last chunk of %d after trim", n, len(s.chunks[k-1].dur))
				}
			}
			st := int64(i) * 100
			if i == 2 {
				st = -1 // a chunk of whole starts
			}
			s.add(st, st+7, uint64(i), int64(i), opNameID(i%3))
		}
		for i := 0; i < s.n; i++ {
			st := int64(i) * 100
			if i == 2 {
				st = -1
			}
			j := uint32(i)
			if s.start(j) != st || s.end(j) != st+7 || s.bytes(j) != int64(i) || s.event(j) != int64(i) || s.name(j) != opNameID(i%3) {
				t.Fatalf("trim after %d: op %d: %d %d %d %d", n, i, s.start(j), s.end(j), s.bytes(j), s.event(j))
			}
		}
	}
}

// negWeights weigh every collective -5 µs, against the Weights contract.
type negWeights struct{}

func (negWeights) Message(int64) float64     { return 1000 }
func (negWeights) Collective(NodeID) float64 { return -5000 }

// TestLongestNegativeWeight: a weight that breaks the contract (not
// negative) is an error, not a path read back wrong: after a barrier
// weighing -5 µs, rank 0's send has a negative value, which the sign bit
// that marks a visited sender would turn positive.
func TestLongestNegativeWeight(t *testing.T) {
	b := NewBuilder(2)
	barrier, send, recv := b.Name("MPI_Barrier"), b.Name("MPI_Send"), b.Name("MPI_Recv")
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.SetInit(0)
	r1.SetInit(0)
	r0.AddOp(Op{Name: send, Kind: spec.Send, Start: 200, End: 210, Bytes: 8, Event: 2})
	r0.SetFinalize(300)
	r1.AddOp(Op{Name: recv, Kind: spec.Recv, Start: 150, End: 250, Bytes: 8, Event: 2})
	r1.SetFinalize(300)
	if err := b.Layout(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AddCollective(Collective{Name: barrier, GID: 1, Members: []int32{0, 1},
		Parts: []Part{{Rank: 0, At: 0, Start: 100, End: 110, Event: 1}, {Rank: 1, At: 0, Start: 100, End: 110, Event: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := r1.AddIncoming(0, b.OpID(0, 0), 8); err != nil {
		t.Fatal(err)
	}
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Longest(unitWeights{}); err != nil {
		t.Fatalf("with the contract kept: %v", err)
	}
	length, _, err := g.Longest(negWeights{})
	if err == nil || !strings.Contains(err.Error(), "negative or not a number") {
		t.Errorf("a collective of -5 µs: length %v, error %v", length, err)
	}
}
