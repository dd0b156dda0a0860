package reconstruct_test

import (
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

// haloTrace writes testgen.Halo(ranks, iters) to a directory and opens it.
func haloTrace(t *testing.T, ranks, iters int) *tracefmt.Trace {
	t.Helper()
	return openBuilt(t, testgen.Halo(ranks, iters, 1))
}

// openBuilt writes the trace b built to a directory and opens it.
func openBuilt(t *testing.T, b *testgen.Builder) *tracefmt.Trace {
	t.Helper()
	dir := t.TempDir()
	if err := b.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// buildHeap builds the graph of testgen.Halo(ranks, iters), decoding one
// rank at a time, and returns the heap in use above what was in use before
// when the last rank's pass begins (every other rank's pass done, kept for
// the cross-rank phases: the peak of a world of short ranks) and once the
// graph is built; and the events of a rank.
func buildHeap(t *testing.T, ranks, iters int) (passes, graph int64, events int64) {
	t.Helper()
	tr := haloTrace(t, ranks, iters)
	base := int64(liveHeap())
	var atLast int64
	seen := 0
	// Like mpitrace critpath's loops and regions, keep every rank's header
	// and string table.
	var headers []*tracefmt.Header
	var strs []*tracefmt.Strings
	g, _, err := reconstruct.Build(tr, reconstruct.Options{Workers: 1, Observe: func(h *tracefmt.Header, s *tracefmt.Strings) func(*tracefmt.Event) {
		headers, strs = append(headers, h), append(strs, s)
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
	runtime.KeepAlive(headers)
	runtime.KeepAlive(strs)
	return atLast - base, after - base, events
}

// TestRankFixedCost: what reconstruction keeps per rank, for a world of
// many short ranks (about 150 KB a rank before: a whole 64 KiB chunk of
// operations and two 4096-record chunks of messages per rank, whatever its
// length), with each rank's header and
// string table kept as mpitrace critpath's loops and regions keep them. The
// cost of a rank is the slope between a world of 128 ranks and one of 1024
// (the same halo exchange), so that what does not depend on the ranks
// (decompressors, name tables) is left out; measured at two lengths, it is
// a fixed cost plus a cost per event. The fixed cost must stay within
// 4 KiB, while the ranks are read and in the graph.
func TestRankFixedCost(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("builds worlds of 1024 ranks; not a test of concurrency")
	}
	const small, large = 128, 1024
	const fixed = 4096
	var pass, graph, events [2]int64
	for i, iters := range []int{1, 10} {
		p1, g1, _ := buildHeap(t, small, iters)
		p2, g2, ev := buildHeap(t, large, iters)
		pass[i], graph[i], events[i] = (p2-p1)/(large-small), (g2-g1)/(large-small), ev
		t.Logf("%d events a rank: %d B a rank while the ranks are read, %d B in the graph", ev, pass[i], graph[i])
	}
	for _, c := range []struct {
		what     string
		cost     [2]int64
		perEvent int64
	}{
		{"while the ranks are read", pass, 64},
		{"in the graph", graph, 48},
	} {
		slope := float64(c.cost[1]-c.cost[0]) / float64(events[1]-events[0])
		base := float64(c.cost[0]) - slope*float64(events[0])
		t.Logf("%s: %.0f B a rank and %.1f B an event", c.what, base, slope)
		if base > fixed || slope > float64(c.perEvent) {
			t.Errorf("%s: %.0f B a rank and %.1f B an event, want at most %d and %d", c.what, base, slope, fixed, c.perEvent)
		}
	}
}
