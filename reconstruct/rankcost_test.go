package reconstruct_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// liveHeap returns the bytes of heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC() // sync.Pool keeps what it held through one collection
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// buildHeap builds the graph of testgen.Halo(ranks, iters), decoding one
// rank at a time, and returns the heap in use above what was in use before
// when the last rank's pass begins (every other rank's pass done, kept for
// the cross-rank phases: the peak of a world of short ranks) and once the
// graph is built; and the events of a rank.
func buildHeap(t *testing.T, ranks, iters int) (passes, graph int64, events int64) {
	t.Helper()
	dir := t.TempDir()
	if err := testgen.Halo(ranks, iters, 1).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := int64(liveHeap())
	var atLast int64
	seen := 0
	g, _, err := reconstruct.Build(tr, reconstruct.Options{Workers: 1, Observe: func(*tracefmt.Header, *tracefmt.Strings) func(*tracefmt.Event) {
		if seen++; seen == ranks {
			atLast = int64(liveHeap())
			return func(*tracefmt.Event) { events++ }
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	after := int64(liveHeap())
	runtime.KeepAlive(g)
	runtime.KeepAlive(tr)
	return atLast - base, after - base, events
}

// TestRankFixedCost: what reconstruction keeps per rank, for a world of
// many short ranks (16,384 ranks of 255 events each took 219 KB a rank
// before: a whole 64 KiB chunk of operations and two 4096-record chunks of
// messages per rank, whatever its length). The cost per rank is the slope
// between a world of 128 ranks and one of 1024 (the same halo exchange), so
// that what does not depend on the ranks (decompressors, name tables) is
// left out; it must stay within a fixed 4 KiB plus a cost per event.
func TestRankFixedCost(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("builds worlds of 1024 ranks; not a test of concurrency")
	}
	const small, large = 128, 1024
	const fixed = 4096
	for _, c := range []struct {
		iters              int
		passEvent, graphEv int64 // bytes an event, during the passes and in the graph
	}{
		{1, 64, 48},
		{10, 64, 48},
	} {
		t.Run(fmt.Sprint(c.iters), func(t *testing.T) {
			p1, g1, _ := buildHeap(t, small, c.iters)
			p2, g2, ev := buildHeap(t, large, c.iters)
			pass, graph := (p2-p1)/(large-small), (g2-g1)/(large-small)
			t.Logf("%d events a rank: %d B a rank while the ranks are read, %d B in the graph", ev, pass, graph)
			if lim := fixed + c.passEvent*ev; pass > lim {
				t.Errorf("%d events a rank: %d bytes a rank while the ranks are read, want at most %d (4 KiB + %d B an event)", ev, pass, lim, c.passEvent)
			}
			if lim := fixed + c.graphEv*ev; graph > lim {
				t.Errorf("%d events a rank: %d bytes a rank in the graph, want at most %d (4 KiB + %d B an event)", ev, graph, lim, c.graphEv)
			}
		})
	}
}
