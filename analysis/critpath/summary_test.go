package critpath

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// sortTop is the brute force the heap replaces: every candidate, in the
// order Summarize adds them, stably sorted by weight, heaviest first, and
// cut to top (all when top < 0).
func sortTop(all []candidate, top int) []candidate {
	s := slices.Clone(all)
	slices.SortStableFunc(s, func(a, b candidate) int { return cmp.Compare(b.weight, a.weight) })
	if top >= 0 && len(s) > top {
		s = s[:top]
	}
	return s
}

// TestHeaviestMatchesSort: the bounded heap keeps what sorting every
// candidate keeps, in the same order, on random inputs with many equal
// weights; and the result does not depend on the order candidates arrive
// in.
func TestHeaviestMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 3000; i++ {
		var all []candidate // as Summarize adds them: collectives, then hops, in path order
		weights := 1 + rng.IntN(6)
		for v := range rng.IntN(40) {
			if rng.IntN(3) == 0 {
				all = append(all, candidate{weight: float64(rng.IntN(weights)), index: v})
			}
		}
		for h := range rng.IntN(60) {
			all = append(all, candidate{weight: float64(rng.IntN(weights)), hop: true, index: h})
		}
		top := rng.IntN(len(all)+4) - 1 // -1 (all) to past the end
		want := sortTop(all, top)
		for round, order := range [][]candidate{all, shuffled(rng, all)} {
			h := newHeaviest(top)
			for _, c := range order {
				h.add(c)
			}
			if got := h.sorted(); !slices.Equal(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("case %d (round %d), top %d of %v:\n got %v\nwant %v", i, round, top, all, got, want)
			}
		}
	}
}

func shuffled(rng *rand.Rand, s []candidate) []candidate {
	s = slices.Clone(s)
	rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

// TestSummaryTopMatchesBruteForce: Summarize's top items are those of a
// labelled item per collective vertex and hop, stably sorted by weight, on
// random graphs whose edges often weigh the same.
func TestSummaryTopMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	models := []Model{nil, randModel{perByte: 0, coll: map[string]float64{}}, randModel{perByte: 2, coll: map[string]float64{"MPI_Barrier": 40}}}
	randomPaths(t, rng, 400, 30, models, func(i int, g *taskgraph.Graph, p *Path) {
		var all []Item
		for v := range p.NumVertices() {
			if x := p.Vertex(v); x.Kind == taskgraph.KindCollective {
				all = append(all, Item{Kind: "collective", Index: v, From: label(&x), To: label(&x), Rank: -1, Weight: x.Weight, Model: x.Model})
			}
		}
		for h := range p.NumVertices() - 1 {
			x, from, to := p.Hop(h), p.Vertex(h), p.Vertex(h+1)
			all = append(all, Item{Kind: x.Kind.String(), Index: h, From: label(&from), To: label(&to), Rank: x.Rank, Weight: x.Weight, Bytes: x.Bytes})
		}
		slices.SortStableFunc(all, func(a, b Item) int { return cmp.Compare(b.Weight, a.Weight) })
		for _, top := range []int{-1, 0, 1, 2, 5, len(all)} {
			want := all
			if top >= 0 && len(want) > top {
				want = want[:top]
			}
			want = slices.Clone(want)
			for j := range want {
				if p.Length > 0 {
					want[j].Share = want[j].Weight / p.Length
				}
			}
			if got := Summarize(p, top).Top; !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("graph %d, top %d:\n got %+v\nwant %+v", i, top, got, want)
			}
		}
	})
}

// randomPaths calls f with each of n graphs randomGraph(rng, 3+rng.IntN(size))
// that has operations, and its path under models in turn.
func randomPaths(t *testing.T, rng *rand.Rand, n, size int, models []Model, f func(i int, g *taskgraph.Graph, p *Path)) {
	t.Helper()
	for i := 0; i < n; i++ {
		g, err := randomGraph(rng, 3+rng.IntN(size))
		if err != nil {
			t.Fatalf("graph %d: %v", i, err)
		}
		if g.NumOps() == 0 && g.NumCollectives() == 0 {
			continue
		}
		p, err := Compute(g, models[i%len(models)])
		if err != nil {
			t.Fatalf("graph %d: %v", i, err)
		}
		f(i, g, p)
	}
}

// TestWriteCritPathOutSummaryMatches: the one-pass WriteCritPathOutSummary
// writes what a plain walk of Vertex and Hop writes, and returns what
// Summarize returns, on random graphs, for every unit and several --top.
func TestWriteCritPathOutSummaryMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	models := []Model{nil, randModel{perByte: 0.5, coll: map[string]float64{"MPI_Barrier": 70, "MPI_Allreduce": 300}}}
	randomPaths(t, rng, 300, 200, models, func(i int, g *taskgraph.Graph, p *Path) {
		for _, unit := range []Unit{Nanosecond, Microsecond, Millisecond, Second} {
			var want bytes.Buffer
			for v := range p.NumVertices() {
				x := p.Vertex(v)
				fmt.Fprintf(&want, "%s %d\n", x.Name, x.Rank)
				if v+1 < p.NumVertices() {
					if h := p.Hop(v); h.Kind == taskgraph.Message {
						fmt.Fprintf(&want, "%d\n", h.Bytes)
					} else {
						fmt.Fprintf(&want, "%d\n", unit.Round(float64(h.Measured)))
					}
				}
			}
			var plain bytes.Buffer
			if err := WriteCritPathOut(&plain, p, unit); err != nil {
				t.Fatal(err)
			}
			if plain.String() != want.String() {
				t.Fatalf("graph %d, unit %s: WriteCritPathOut\n%s\nwant\n%s", i, unit, plain.String(), want.String())
			}
			for _, top := range []int{-1, 0, 1, 3, 10} {
				var b bytes.Buffer
				sum, err := WriteCritPathOutSummary(&b, p, unit, top)
				if err != nil {
					t.Fatal(err)
				}
				if b.String() != want.String() {
					t.Fatalf("graph %d, unit %s, top %d: WriteCritPathOutSummary\n%s\nwant\n%s", i, unit, top, b.String(), want.String())
				}
				if ref := Summarize(p, top); !reflect.DeepEqual(sum, ref) {
					t.Fatalf("graph %d, top %d: summary\n%+v\nwant\n%+v", i, top, sum, ref)
				}
			}
		}
	})
}

// TestRoundInt: Unit.roundInt is Unit.Round of the integer, halves and
// their neighbours included, up to where it falls back to floats.
func TestRoundInt(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, u := range []Unit{Nanosecond, Microsecond, Millisecond, Second, 7, 0, -3} {
		check := func(ns int64) {
			if got, want := u.roundInt(ns), u.Round(float64(ns)); got != want {
				t.Fatalf("%d ns in %v: %d, want %d", ns, u, got, want)
			}
		}
		for _, ns := range []int64{0, 1, -1, -500, 499, 500, 501, 1499, 1500, 1<<50 - 1, 1 << 50, math.MaxInt64, math.MinInt64} {
			check(ns)
		}
		for range 100000 {
			ns := rng.Int64N(1 << (1 + rng.IntN(52)))
			if u > 1 {
				ns = ns/int64(u)*int64(u) + int64(u)/2 + rng.Int64N(3) - 1 // about a half
			}
			check(ns)
		}
	}
}
