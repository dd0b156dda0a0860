package reconstruct_test

import (
	"testing"

	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// replayPeak replays testgen.Halo(ranks, iters) from its directory, each
// reader's window the least (256 bytes, as from 23,170 ranks on), and returns the
// greatest heap in use above what was in use before, sampled after a
// collection every 4096 events.
func replayPeak(t *testing.T, ranks, iters int) int64 {
	t.Helper()
	return replayPeakOf(t, haloTrace(t, ranks, iters))
}

// replayPeakOf is replayPeak of trace tr.
func replayPeakOf(t *testing.T, tr *tracefmt.Trace) int64 {
	t.Helper()
	base := int64(liveHeap())
	var peak int64
	events := 0
	count := func(*tracefmt.Event) {
		if events++; events%4096 == 0 {
			peak = max(peak, int64(liveHeap())-base)
		}
	}
	res, err := reconstruct.ReplayTrace(tr, modelWeights{latency.Default()}, reconstruct.Options{Windows: 1,
		Observe: func(*tracefmt.Header, *tracefmt.Strings) func(*tracefmt.Event) { return count }})
	if err != nil {
		t.Fatal(err)
	}
	res.Close()
	return peak
}

// TestReplayRankCost: what the streaming replay holds per rank at its
// peak, for a world of many short ranks (issue 17: 16,384 ranks of 257
// events within 100 MB). Every rank's reader, pass and queue are live at
// once; the cost of a rank is the slope of the peak between 512 and 2048
// ranks of the same halo exchange (20 iterations, 104 events a rank),
// readers' windows of 256 bytes. 8.7 KB a rank measured; 9.9 KB with
// windows of 1 KiB and each reader's own copy of its header's keys, 12.2 KB
// before the channel tables without maps, the shared string tables and the
// 88-byte queued operations.
func TestReplayRankCost(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("replays worlds of 2048 ranks; not a test of concurrency")
	}
	// The item records go to a file from the start (they are what a rank
	// holds per event, not per rank: in memory, up to 4 MiB in all).
	defer func(m int64) { *reconstruct.SpillMem = m }(*reconstruct.SpillMem)
	*reconstruct.SpillMem = 0
	const small, large, iters = 512, 2048, 20
	const limit = 9200 // measured plus about 6%
	p1, p2 := replayPeak(t, small, iters), replayPeak(t, large, iters)
	per := (p2 - p1) / (large - small)
	t.Logf("peak %d B for %d ranks, %d B for %d: %d B a rank", p1, small, p2, large, per)
	if per > limit {
		t.Errorf("the replay holds %d B a rank at its peak, want at most %d", per, limit)
	}
}

// TestReplayManyTags: a program that sends each message on a new tag
// (tag = iteration) does not make the replay grow with its length: each
// rank's pass remembers a bounded number of channels (it used to keep
// every channel, about 100 bytes a tag).
func TestReplayManyTags(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("hundreds of thousands of messages")
	}
	peak := func(n int) int64 { return replayPeakOf(t, openBuilt(t, tagsTrace(n, true))) }
	small, large := peak(50_000), peak(200_000)
	t.Logf("peak heap %d KB at 50,000 tags, %d KB at 200,000", small>>10, large>>10)
	if large > small+small/2+256<<10 { // 3 times as much before
		t.Errorf("peak heap %d KB at 200,000 tags against %d KB at 50,000: the replay grows with the tags", large>>10, small>>10)
	}
}
