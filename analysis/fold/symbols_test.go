package fold

import (
	"math/rand"
	"slices"
	"testing"
)

// The fold depends only on which steps are equal, not on the symbols'
// values: a symbol too large for the table of last positions when it first
// occurs (kept in a map) must stay linked to its next occurrence after the
// table has grown past it. Here 1100 >= len(seq)+1024 goes to the map at
// position 0, 600 and 1000 then grow the table to 1202 entries, and the
// 1100 at position 3 was looked up in the table only: position 0 lost its
// link and the sequence no longer folded as 2 x (1100 600 1000).
func TestFindLargeSymbolsLinked(t *testing.T) {
	seq := []uint32{1100, 600, 1000, 1100, 600, 1000}
	want := []Node{{Start: 0, Period: 3, Count: 2, Body: []Node{{Start: 0, Period: 3, Count: 1}}}}
	if got := Find(seq); !slices.EqualFunc(got, want, sameNode) {
		t.Errorf("Find(%v) = %v, want %v", seq, got, want)
	}
	// As critpath's signatures at SameFunction and Merged (a function's
	// index shifted left by 9): F4 first, then F2 and F3 for the first
	// time, then F4 again.
	var loop []uint32
	loop = append(loop, 5<<9) // MPI_Init's index is len(names)
	for range 300 {
		loop = append(loop, 4<<9, 2<<9, 3<<9)
	}
	loop = append(loop, 0, 1<<9, 6<<9)
	nodes := Find(loop)
	if len(nodes) < 2 || nodes[1].Start != 1 || nodes[1].Period != 3 || nodes[1].Count != 300 {
		t.Errorf("a path of 300 iterations of (F4 F2 F3) folds as %v", nodes)
	}
	var fd Finder
	for _, f := range []func([]uint32) []Node{Find, func(s []uint32) []Node { n, _ := fd.FindWithin(s, -1); return n }} {
		if got := f(loop); !slices.EqualFunc(got, nodes, sameNode) {
			t.Errorf("Find and Finder.FindWithin differ: %v, %v", got, nodes)
		}
	}
}

// Renaming the symbols (keeping which are equal) does not change the fold,
// whatever their values: small, around the sequence's length + 1024, or
// huge.
func TestFindRenamed(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	for k := range 3000 {
		n := []int{rnd.Intn(12), rnd.Intn(300), 500 + rnd.Intn(1500)}[k%3]
		alpha := 1 + rnd.Intn(10)
		names := make([]uint32, alpha)
		for i := range names {
			switch rnd.Intn(3) {
			case 0:
				names[i] = uint32(rnd.Intn(alpha))
			case 1:
				names[i] = uint32(rnd.Intn(n + 3000))
			default:
				names[i] = uint32(rnd.Intn(12)) << 9
			}
		}
		seq := make([]uint32, 0, n)
		for len(seq) < n {
			body := make([]uint32, 1+rnd.Intn(6))
			for i := range body {
				body[i] = uint32(rnd.Intn(alpha))
			}
			for range 1 + rnd.Intn(40) {
				seq = append(seq, body...)
				if rnd.Intn(8) == 0 {
					seq = append(seq, uint32(rnd.Intn(alpha)))
				}
			}
		}
		seq = seq[:n]
		// dense: the symbols numbered in the order they first occur.
		dense := make([]uint32, n)
		ids := map[uint32]uint32{}
		renamed := make([]uint32, n)
		for i, s := range seq {
			id, ok := ids[s]
			if !ok {
				id = uint32(len(ids))
				ids[s] = id
			}
			dense[i] = id
			renamed[i] = names[s]
		}
		// names may give two symbols one value: rename only when they do not.
		seen := map[uint32]uint32{}
		inj := true
		for s, v := range names {
			if u, ok := seen[v]; ok && u != uint32(s) {
				inj = false
			}
			seen[v] = uint32(s)
		}
		if !inj {
			continue
		}
		want := Find(dense)
		if got := Find(renamed); !slices.EqualFunc(got, want, sameNode) {
			t.Fatalf("case %d: %v folds as %v, numbered as they first occur as %v", k, renamed, got, want)
		}
	}
}
