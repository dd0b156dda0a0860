package spanset

import (
	"maps"
	"slices"
	"testing"
)

func TestUnionOverlap(t *testing.T) {
	u := Union([]Span{{50, 60}, {0, 10}, {5, 20}, {30, 30}, {20, 25}, {55, 58}})
	if !slices.Equal(u, []Span{{0, 25}, {50, 60}}) {
		t.Fatalf("union %v", u)
	}
	for _, c := range []struct{ a, b, want int64 }{{-5, 100, 35}, {10, 52, 17}, {25, 50, 0}, {59, 61, 1}, {3, 4, 1}} {
		if got := Overlap(u, c.a, c.b); got != c.want {
			t.Errorf("overlap [%d,%d): %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// A key seen under two parents has none; its depth is the least.
func TestIndex(t *testing.T) {
	a, b := NewRank(), NewRank()
	a.Add("x", "", 0, []Span{{0, 10}, {5, 20}})
	a.Add("y", "x", 1, []Span{{2, 4}})
	b.Add("y", "z", 2, []Span{{100, 110}})
	b.Add("z", "", 0, []Span{{90, 120}})
	a.Finish()
	b.Finish()
	x := NewIndex()
	if !x.Empty() {
		t.Fatal("new index not empty")
	}
	x.Add(0, a)
	x.Add(1, b)
	if d, p := x.Describe("y"); d != 1 || p != "" {
		t.Errorf("y: depth %d parent %q", d, p)
	}
	if d, p := x.Describe("x"); d != 0 || p != "" {
		t.Errorf("x: depth %d parent %q", d, p)
	}
	got := map[string]int64{}
	x.Overlap(0, 3, 15, func(k string, ns int64) { got[k] += ns })
	x.Overlap(1, 0, 105, func(k string, ns int64) { got[k] += ns })
	x.Overlap(2, 0, 105, func(k string, ns int64) { got[k] += ns })
	if want := map[string]int64{"": 12 + 15, "x": 12, "y": 1 + 5, "z": 15}; !maps.Equal(got, want) {
		t.Errorf("overlap %v, want %v", got, want)
	}
	if x.Partial() {
		t.Error("partial")
	}
}

// A rank read back from its bytes is the rank, nil too; bytes cut short
// are an error, never a panic, and what follows a rank is left.
func TestAppendReadRank(t *testing.T) {
	r := NewRank()
	r.Add("x", "", 0, []Span{{-5, 10}, {5, 20}, {1 << 40, 1<<40 + 3}})
	r.Add("y", "\x00", 3, []Span{{2, 4}})
	r.Add("", "x", 1, nil)
	r.Finish()
	b := append(AppendRank(AppendRank(nil, nil), r), 7)
	got0, rest, err := ReadRank(b)
	if got0 != nil || err != nil {
		t.Fatalf("nil rank read as %v, %v", got0, err)
	}
	got, rest, err := ReadRank(rest)
	if err != nil || !slices.Equal(rest, []byte{7}) {
		t.Fatalf("read: %v, rest %v", err, rest)
	}
	if !slices.Equal(got.keys, r.keys) || !maps.Equal(got.depth, r.depth) || !maps.Equal(got.parent, r.parent) ||
		!slices.Equal(got.any, r.any) || !maps.EqualFunc(got.byKey, r.byKey, slices.Equal) {
		t.Errorf("read %+v, want %+v", got, r)
	}
	whole := AppendRank(nil, r)
	for n := 1; n < len(whole); n++ {
		if _, _, err := ReadRank(whole[:n]); err == nil {
			t.Errorf("%d of %d bytes read without an error", n, len(whole))
		}
	}
}
