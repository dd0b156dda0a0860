package fold

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// check verifies that nodes fold seq[lo:hi]: they cover it in order, every
// run's repetitions equal its first, and each body folds its first
// repetition. It returns the tree in a short notation: a leaf is its
// symbol, a run (body)xCount.
func check(t *testing.T, seq []uint32, nodes []Node, lo, hi int) string {
	t.Helper()
	var b strings.Builder
	pos := lo
	for k, n := range nodes {
		if n.Start != pos {
			t.Fatalf("node %d starts at %d, want %d", k, n.Start, pos)
		}
		if k > 0 {
			b.WriteByte(' ')
		}
		if !n.IsRun() {
			if n.Period < 1 || n.Count != 1 {
				t.Fatalf("leaves at %d: period %d count %d", n.Start, n.Period, n.Count)
			}
			if k > 0 && !nodes[k-1].IsRun() {
				t.Fatalf("leaves at %d follow leaves", n.Start)
			}
			for j := n.Start; j < n.End(); j++ {
				if j > n.Start {
					b.WriteByte(' ')
				}
				fmt.Fprint(&b, seq[j])
			}
		} else {
			if n.Count < 2 || n.Period < 1 {
				t.Fatalf("run at %d: period %d count %d", n.Start, n.Period, n.Count)
			}
			for j := n.Start + n.Period; j < n.End(); j++ {
				if seq[j] != seq[j-n.Period] {
					t.Fatalf("run at %d (period %d, count %d) is not periodic at %d", n.Start, n.Period, n.Count, j)
				}
			}
			fmt.Fprintf(&b, "(%s)x%d", check(t, seq, n.Body, n.Start, n.Start+n.Period), n.Count)
		}
		pos = n.End()
	}
	if pos != hi {
		t.Fatalf("nodes end at %d, want %d", pos, hi)
	}
	return b.String()
}

// syms turns "1 2 3" into a sequence.
func syms(s string) []uint32 {
	var out []uint32
	for _, f := range strings.Fields(s) {
		var x uint32
		fmt.Sscan(f, &x)
		out = append(out, x)
	}
	return out
}

func rep(s string, n int) string { return strings.TrimSpace(strings.Repeat(s+" ", n)) }

func TestFind(t *testing.T) {
	for _, tc := range []struct{ name, seq, want string }{
		{"empty", "", ""},
		{"one", "7", "7"},
		{"no repetition", "1 2 3 4 5", "1 2 3 4 5"},
		{"period 1", rep("4", 1000), "(4)x1000"},
		{"period 1 twice", "4 4", "(4)x2"},
		{"body of 6", rep("1 2 3 4 5 6", 200), "(1 2 3 4 5 6)x200"},
		{"prologue and epilogue", "9 8 " + rep("1 2 3", 50) + " 1 2 7", "9 8 (1 2 3)x50 1 2 7"},
		{"nested", rep(rep("1 2", 5)+" 3", 100), "((1 2)x5 3)x100"},
		{"nested twice", rep(rep(rep("1", 3)+" 2", 4)+" 5", 10), "(((1)x3 2)x4 5)x10"},
		{"symbol twice in body", rep("1 2 1 3", 30), "(1 2 1 3)x30"},
		{"inner run in body", rep("1 1 2", 100), "((1)x2 2)x100"},
		{"two loops", rep("1 2", 10) + " " + rep("3 4 5", 20), "(1 2)x10 (3 4 5)x20"},
		{"partial last repetition", rep("1 2 3", 10) + " 1 2", "(1 2 3)x10 1 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seq := syms(tc.seq)
			nodes := Find(seq)
			if got := check(t, seq, nodes, 0, len(seq)); got != tc.want {
				t.Errorf("Find(%s) = %s, want %s", tc.seq, got, tc.want)
			}
		})
	}
}

func TestFindLong(t *testing.T) {
	// A path of 10^6 steps: prologue, 50000 iterations of a 20-step body
	// with an inner loop, epilogue.
	var seq []uint32
	seq = append(seq, 100, 101)
	for range 50_000 {
		for k := range 4 {
			seq = append(seq, 1, 2, uint32(3+k%2))
		}
		seq = append(seq, 7, 8, 9, 10, 11, 12, 13, 14)
	}
	seq = append(seq, 200)
	nodes := Find(seq)
	got := check(t, seq, nodes, 0, len(seq))
	if want := "100 101 ((1 2 3 1 2 4)x2 7 8 9 10 11 12 13 14)x50000 200"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if l := Leaves(nodes); l != 3+6+8 {
		t.Errorf("Leaves = %d, want 17", l)
	}
}

func TestFindDeterministic(t *testing.T) {
	seq := syms(rep("1 2 3 2 1", 40) + " " + rep("5 6", 7))
	a, b := Find(seq), Find(slices.Clone(seq))
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("two folds of one sequence differ")
	}
}

func FuzzFind(f *testing.F) {
	f.Add([]byte{1, 2, 3, 1, 2, 3, 1, 2, 3})
	f.Add([]byte{1, 1, 1, 1})
	f.Add([]byte{})
	f.Add([]byte{0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		seq := make([]uint32, len(data))
		for i, c := range data {
			seq[i] = uint32(c % 5)
		}
		nodes := Find(seq)
		check(t, seq, nodes, 0, len(seq))
		if want, _ := refFindWithin(seq, -1); !slices.EqualFunc(nodes, want, sameNode) {
			t.Fatalf("%v folds as %v, by hashes %v", seq, nodes, want)
		}
		if l := Leaves(nodes); l > len(seq) {
			t.Fatalf("%d leaves for %d steps", l, len(seq))
		}
	})
}

// Thue-Morse sequences make polynomial hashes modulo 2^64 collide: the
// fold must stay exact (every run checked step by step).
func TestFindThueMorse(t *testing.T) {
	seq := make([]uint32, 1<<14)
	for i := range seq {
		c := 0
		for x := i; x > 0; x &= x - 1 {
			c++
		}
		seq[i] = uint32(c & 1)
	}
	nodes := Find(seq)
	check(t, seq, nodes, 0, len(seq))
	// Thue-Morse has no three consecutive equal blocks: no run above 2.
	var walk func([]Node)
	walk = func(ns []Node) {
		for _, n := range ns {
			if n.Count > 2 {
				t.Fatalf("run of %d x %d at %d in a cube-free sequence", n.Count, n.Period, n.Start)
			}
			walk(n.Body)
		}
	}
	walk(nodes)
}

func TestLeaves(t *testing.T) {
	seq := syms("9 8 " + rep("1 2 3", 50) + " 7")
	if l := Leaves(Find(seq)); l != 2+3+1 {
		t.Errorf("Leaves = %d, want 6", l)
	}
}

// sliceSource is a Source over a slice; last, when not nil, gives Last.
type sliceSource struct {
	seq   []uint32
	last  func(sym uint32) int
	reads int // the symbols filled
}

func (s *sliceSource) Len() int { return len(s.seq) }

func (s *sliceSource) Fill(dst []uint32, from int) {
	if from != s.reads {
		panic(fmt.Sprintf("Fill from %d after %d symbols", from, s.reads))
	}
	s.reads += copy(dst, s.seq[from:])
}

func (s *sliceSource) Last(sym uint32) int {
	if s.last == nil {
		return len(s.seq) - 1
	}
	return s.last(sym)
}

// testSeqs are sequences with loops, noise, rare symbols and symbols too
// large for a table.
func testSeqs() [][]uint32 {
	var out [][]uint32
	x := uint64(1)
	rnd := func(n int) int {
		x = x*6364136223846793005 + 1442695040888963407
		return int(x>>33) % n
	}
	for k := range 60 {
		var seq []uint32
		seq = append(seq, 1000+uint32(k)) // occurs once
		body := make([]uint32, 1+rnd(12))
		for i := range body {
			body[i] = uint32(rnd(1 + k%7))
			if k%5 == 4 {
				body[i] += 1 << 31
			}
		}
		for range 1 + rnd(300) {
			seq = append(seq, body...)
			if rnd(4+k%9) == 0 {
				seq = append(seq, uint32(rnd(20)))
			}
			if rnd(50) == 0 {
				body[rnd(len(body))] = uint32(rnd(9))
			}
		}
		seq = append(seq, 2000+uint32(k))
		out = append(out, seq)
	}
	return out
}

// The fold reads, links and hashes the sequence as it goes: in stretches
// of any length, from a slice or a Source (with or without Last), it
// folds as when all is read at once, and gives up at the same limits.
func TestFindLazy(t *testing.T) {
	defer func(n int) { firstChunk = n }(firstChunk)
	for k, seq := range testSeqs() {
		firstChunk = 1 << 30 // all at once
		want := Find(seq)
		check(t, seq, want, 0, len(seq))
		leaves := Leaves(want)
		var fd Finder
		for _, chunk := range []int{1, 3, 64} {
			firstChunk = chunk
			if got := Find(seq); !slices.EqualFunc(got, want, sameNode) {
				t.Fatalf("seq %d, stretches from %d: %v, want %v", k, chunk, got, want)
			}
			lastPos := map[uint32]int{}
			for i, s := range seq {
				lastPos[s] = i
			}
			for _, last := range []func(uint32) int{nil, func(s uint32) int { return lastPos[s] }} {
				for _, limit := range []int{-1, leaves, leaves - 1, 0, 5} {
					src := &sliceSource{seq: seq, last: last}
					got, ok := fd.FindSource(src, limit)
					if wantOK := limit < 0 || leaves <= limit; ok != wantOK || ok && !slices.EqualFunc(got, want, sameNode) {
						t.Fatalf("seq %d, stretches from %d, limit %d: %v %v, want %v %v", k, chunk, limit, got, ok, want, wantOK)
					}
					if ok && src.reads != len(seq) {
						t.Fatalf("seq %d: a fold read %d of %d symbols", k, src.reads, len(seq))
					}
					if got, ok2 := fd.FindWithin(seq, limit); ok2 != ok || ok && !slices.EqualFunc(got, want, sameNode) {
						t.Fatalf("seq %d, stretches from %d, limit %d: FindWithin %v %v, want %v %v", k, chunk, limit, got, ok2, want, ok)
					}
				}
			}
		}
	}
}

// A fold given up early reads little of a long Source.
func TestFindSourceGivesUp(t *testing.T) {
	seq := make([]uint32, 1<<20)
	x := uint32(7)
	for i := range seq {
		x = x*1103515245 + 12345
		seq[i] = x >> 28 // 16 symbols at random: few repetitions
	}
	seq[0] = 100 // occurs once
	src := &sliceSource{seq: seq, last: func(s uint32) int {
		if s == 100 {
			return 0
		}
		return len(seq) - 1
	}}
	var fd Finder
	if _, ok := fd.FindSource(src, 100); ok {
		t.Fatal("a random sequence folds to 100 leaves")
	}
	if src.reads > 1<<14 {
		t.Errorf("read %d symbols to give up after 100 leaves", src.reads)
	}
}

func sameNode(a, b Node) bool {
	return a.Start == b.Start && a.Period == b.Period && a.Count == b.Count && slices.EqualFunc(a.Body, b.Body, sameNode)
}

// The exact fold agrees with the fold by hashes it replaced (ref_test.go)
// on sequences with loops, noise and rare symbols, random ones over small
// alphabets, Thue-Morse, and long ones; as a slice of each width and as a
// Source whose symbols widen as it is read.
func TestFindMatchesHashed(t *testing.T) {
	seqs := testSeqs()
	x := uint64(3)
	rnd := func(n int) int {
		x = x*6364136223846793005 + 1442695040888963407
		return int(x>>33) % n
	}
	for k := range 400 {
		seq := make([]uint32, rnd(600))
		alpha := 1 + k%6
		for i := range seq {
			seq[i] = uint32(rnd(alpha))
		}
		seqs = append(seqs, seq)
	}
	tm := make([]uint32, 1<<12)
	for i := range tm {
		c := 0
		for x := i; x > 0; x &= x - 1 {
			c++
		}
		tm[i] = uint32(c & 1)
	}
	seqs = append(seqs, tm)
	var long []uint32
	long = append(long, 9)
	for it := range 20_000 {
		long = append(long, 1, 2, 1, 3, 1, 2, 1, 4)
		if it%1000 == 999 {
			long = append(long, 5)
		}
	}
	seqs = append(seqs, long)
	var fd Finder
	for k, seq := range seqs {
		want, _ := refFindWithin(seq, -1)
		if got := Find(seq); !slices.EqualFunc(got, want, sameNode) {
			t.Fatalf("seq %d (%d steps): %v, by hashes %v", k, len(seq), got, want)
		}
		dense, wide := renumber(seq)
		if !wide {
			s8 := make([]uint8, len(seq))
			for i, s := range dense {
				s8[i] = uint8(s)
			}
			if got, _ := FindSlice(&fd, s8, -1); !slices.EqualFunc(got, want, sameNode) {
				t.Fatalf("seq %d as bytes: %v, want %v", k, got, want)
			}
		}
		s16 := make([]uint16, len(seq))
		for i, s := range dense {
			s16[i] = uint16(s)
		}
		if got, _ := FindSlice(&fd, s16, -1); !slices.EqualFunc(got, want, sameNode) {
			t.Fatalf("seq %d as uint16: %v, want %v", k, got, want)
		}
		// A Source whose symbols grow past a byte, then past two, late.
		grown := slices.Clone(seq)
		for i := range grown {
			switch {
			case i > len(seq)*3/4:
				grown[i] += 1 << 20
			case i > len(seq)/2:
				grown[i] += 1 << 10
			}
		}
		wantG, _ := refFindWithin(grown, -1)
		for _, chunk := range []int{1, 5, 1 << 12} {
			firstChunk = chunk
			if got, ok := fd.FindSource(&sliceSource{seq: grown}, -1); !ok || !slices.EqualFunc(got, wantG, sameNode) {
				t.Fatalf("seq %d widened, stretches from %d: %v, want %v", k, chunk, got, wantG)
			}
		}
		firstChunk = 1 << 12
	}
}

// renumber numbers seq's symbols in the order they first occur, and says
// whether they need more than a byte.
func renumber(seq []uint32) ([]uint32, bool) {
	ids := map[uint32]uint32{}
	out := make([]uint32, len(seq))
	for i, s := range seq {
		id, ok := ids[s]
		if !ok {
			id = uint32(len(ids))
			ids[s] = id
		}
		out[i] = id
	}
	return out, len(ids) > 256
}
