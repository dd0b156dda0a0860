package critpath

import (
	"cmp"
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
	for i := 0; i < 400; i++ {
		g, err := randomGraph(rng, 3+rng.IntN(30))
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
			if got := Summarize(g, p, top).Top; !reflect.DeepEqual(got, want) && len(got)+len(want) > 0 {
				t.Fatalf("graph %d, top %d:\n got %+v\nwant %+v", i, top, got, want)
			}
		}
	}
}
