package taskgraph

import (
	"math"
	"reflect"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// shiftTimes retimes operation v to [start + 3v - k, end + far(v)]: some
// starts go back (a chunk's wide starts), some calls get longer than 2^32
// ns; parts and MPI_Init shift by 1.
type shiftTimes struct{ k int64 }

func far(v NodeID) int64 {
	if v%97 == 0 {
		return 1 << 33
	}
	return 0
}

func (s shiftTimes) Op(v NodeID, start, end int64) (int64, int64) {
	return start + 3*int64(v) - s.k, end + 3*int64(v) - s.k + far(v)
}

func (shiftTimes) Part(_ NodeID, _ int, start, end int64) (int64, int64) { return start + 1, end + 1 }

func (shiftTimes) InitEnd(_ int, end int64) int64 { return end + 1 }

// rankShift is shiftTimes retiming a rank at once.
type rankShift struct{ shiftTimes }

func (s rankShift) RankOps(v RankView, set *OpSetter) {
	for i := range v.Len() {
		set.Set(s.Op(v.Base()+NodeID(i), v.Start(i), func() int64 { _, e := v.Times(i); return e }()))
	}
}

// retimeGraph has a rank of three chunks of operations with events far
// apart, huge byte counts and long calls, and a short rank that receives
// messages from it.
func retimeGraph(t *testing.T) *Graph {
	t.Helper()
	b := NewBuilder(2)
	send, wait := b.Name("MPI_Isend"), b.Name("MPI_Waitall")
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.SetInit(10)
	r1.SetInit(20)
	n := 2*chunkLen + 100
	for i := 0; i < n; i++ {
		st := int64(100 + 10*i)
		if i%1000 == 999 {
			st += 1 << 33 // far from the chunk's first
		}
		ev := int64(i)
		if i%501 == 0 {
			ev += 1 << 40
		}
		dur := int64(5)
		if i%333 == 0 {
			dur = 1 << 33
		}
		bytes := uint64(i)
		if i%777 == 0 {
			bytes = 1 << 40
		}
		r0.AddOp(Op{Name: send, Kind: spec.Send, Start: st, End: st + dur, Bytes: bytes, Event: ev})
	}
	for i := 0; i < 10; i++ {
		r1.AddOp(Op{Name: wait, Kind: spec.Complete, Start: int64(1000 * i), End: int64(1000*i + 50), Event: int64(i / 2), Expanded: true})
	}
	r0.SetFinalize(1 << 40)
	r1.SetFinalize(1 << 40)
	if err := b.Layout(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := r1.AddIncoming(uint32(i), b.OpID(0, uint32(i*900)), uint64(i)); err != nil {
			t.Fatal(err)
		}
	}
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestRetimed: a retimed graph has the new times and the old bytes,
// events and names, whether the Times retime an operation at a time or a
// rank at a time.
func TestRetimed(t *testing.T) {
	g := retimeGraph(t)
	for _, tm := range []Times{shiftTimes{k: 50}, rankShift{shiftTimes{k: 50}}} {
		rg := g.Retimed(tm)
		for v := NodeID(0); int(v) < g.NumNodes(); v++ {
			want, got := g.Node(v), rg.Node(v)
			switch g.Kind(v) {
			case KindOp:
				want.Start, want.End = tm.Op(v, want.Start, want.End)
			case KindInit:
				want.Start, want.End = want.Start+1, want.End+1
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("%T: node %d is %+v, want %+v", tm, v, got, want)
			}
		}
		for _, r := range g.Ranks() {
			ie, _, _, _ := g.RankEnds(r)
			if got, _, _, _ := rg.RankEnds(r); got != ie+1 {
				t.Errorf("%T: rank %d's MPI_Init ends at %d, want %d", tm, r, got, ie+1)
			}
		}
	}
}

// badRank sets too few or too many operations.
type badRank struct {
	shiftTimes
	extra int
}

func (b badRank) RankOps(v RankView, set *OpSetter) {
	for range v.Len() + b.extra {
		set.Set(0, 0)
	}
}

func TestRetimedChecksRankOps(t *testing.T) {
	g := retimeGraph(t)
	for _, extra := range []int{-1, 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RankOps setting %+d operations: no panic", extra)
				}
			}()
			g.Retimed(badRank{extra: extra})
		}()
	}
}

// tableWeights give each cross edge a weight, by Cross or by CrossIn.
type tableWeights struct {
	g     *Graph
	table bool
}

func (tableWeights) Message(int64) float64     { return math.NaN() }
func (tableWeights) Collective(NodeID) float64 { return 3 }
func (w tableWeights) Cross(from, to NodeID, bytes int64) float64 {
	return float64(int64(from)*7%1000 + int64(to)%13 + bytes)
}

// crossTable is tableWeights with CrossIn.
type crossTable struct{ tableWeights }

func (w crossTable) CrossIn(r int) []float64 {
	v, _ := w.g.RankView(r)
	to, from := v.CrossIn()
	out := make([]float64, len(to))
	for x := range to {
		_, xx, ok := w.g.CrossInIndex(v.Base() + NodeID(to[x]))
		if !ok || xx != x {
			panic("CrossInIndex")
		}
		bytes := int64(0)
		if from[x] < w.g.collBase {
			bytes = w.g.ranks[v.ri].crossBytes(x)
		}
		out[x] = w.Cross(from[x], v.Base()+NodeID(to[x]), bytes)
	}
	return out
}

// TestLongestCrossTable: Longest finds the same path with the cross
// edges' weights read from CrossIn as with Cross.
func TestLongestCrossTable(t *testing.T) {
	for _, g := range []*Graph{sample(t), retimeGraph(t)} {
		l1, p1, err1 := g.Longest(tableWeights{g: g})
		l2, p2, err2 := g.Longest(crossTable{tableWeights{g: g}})
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if l1 != l2 || p1.Len() != p2.Len() {
			t.Fatalf("length %v (%d vertices) with CrossIn, %v (%d) with Cross", l2, p2.Len(), l1, p1.Len())
		}
		for i := range p1.Len() {
			if p1.Node(i) != p2.Node(i) {
				t.Fatalf("vertex %d: %d with CrossIn, %d with Cross", i, p2.Node(i), p1.Node(i))
			}
		}
	}
}
