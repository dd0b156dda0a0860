package render

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// spanEnds pairs spans in memory, the straightforward way: the oracle of
// spanSpill.
type spanEnds struct {
	ends []int64 // by begin: the end, or -1
	open map[int][]spanOpen
}

func (s *spanEnds) Event(ev *tracefmt.Event) {
	switch k := ev.Kind; {
	case spanBegin(k):
		s.open[ev.Thread] = append(s.open[ev.Thread], spanOpen{k, len(s.ends)})
		s.ends = append(s.ends, -1)
	case spanEnd(k):
		st := s.open[ev.Thread]
		if n := len(st); n > 0 && st[n-1].kind == k-1 {
			s.ends[st[n-1].i] = ev.Start
			s.open[ev.Thread] = st[:n-1]
		}
	}
}

// TestSpanSpill: the spilled span ends are those paired in memory, in begin order, with
// spans open across many spills (patched in place), on several threads,
// with ends that do not nest (ignored) and spans never closed.
func TestSpanSpill(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	f, err := os.CreateTemp(t.TempDir(), "spans")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spill, want := newSpanSpill(f), &spanEnds{open: map[int][]spanOpen{}}
	kinds := []spec.Kind{spec.LoopBegin, spec.IterBegin, spec.RegionBegin, spec.KernelBegin, spec.CopyBegin, spec.SectionBegin}
	depth := map[int][]spec.Kind{}
	var ev tracefmt.Event
	feed := func() {
		spill.Event(&ev)
		want.Event(&ev)
	}
	// A loop on each thread around nearly everything: open across many
	// spills.
	for th := range 3 {
		ev.Kind, ev.Thread = spec.LoopBegin, th
		depth[th] = []spec.Kind{ev.Kind}
		feed()
	}
	for i := range 50_000 {
		ev.Start, ev.Thread = int64(i), rng.IntN(3)
		st := depth[ev.Thread]
		switch {
		case len(st) < 6 && rng.IntN(2) == 0 || len(st) == 1:
			ev.Kind = kinds[rng.IntN(len(kinds))]
			depth[ev.Thread] = append(st, ev.Kind)
		case rng.IntN(50) == 0:
			ev.Kind = kinds[rng.IntN(len(kinds))] + 1 // may not nest
		default:
			ev.Kind = st[len(st)-1] + 1
			depth[ev.Thread] = st[:len(st)-1]
		}
		feed()
	}
	for th := range 2 { // thread 2's stays open
		ev.Kind, ev.Thread = depth[th][0]+1, th
		for len(depth[th]) > 1 {
			ev.Kind = depth[th][len(depth[th])-1] + 1
			depth[th] = depth[th][:len(depth[th])-1]
			feed()
		}
		ev.Kind = spec.LoopEnd
		feed()
	}
	if err := spill.finish(); err != nil {
		t.Fatal(err)
	}
	if spill.n != int64(len(want.ends)) || spill.n < 3*spanWindow {
		t.Fatalf("%d spans spilled, %d paired", spill.n, len(want.ends))
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, spill.n*8))
	if err != nil {
		t.Fatal(err)
	}
	open := 0
	for i, end := range want.ends {
		if got := int64(binary.LittleEndian.Uint64(data[8*i:])); got != end {
			t.Fatalf("span %d: end %d spilled, %d paired", i, got, end)
		}
		if end < 0 {
			open++
		}
	}
	if spill.nPatched == 0 {
		t.Errorf("no span patched in place: the case is too easy")
	}
	if open == 0 {
		t.Errorf("no span left open: the case is too easy")
	}
}
