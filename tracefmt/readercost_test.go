package tracefmt_test

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// TestOpenReaderCost: what an open reader of a short rank costs, its
// first event decoded (a merge's state): the slope between 128 and 1024
// readers open at once, at most 4 KiB besides its decompressed block (it
// used to hold two zstd decoders as well, 134 KB of resident memory a rank
// in mpitrace export).
func TestOpenReaderCost(t *testing.T) {
	if testing.Short() {
		t.Skip("opens a thousand readers")
	}
	const small, large = 128, 1024
	dir := t.TempDir()
	b := testgen.New(large)
	b.Options.BlockSize = 512 // blocks of 512 bytes and an event
	if err := b.Halo(10, 1).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	const block = 1024 // a block of 512 bytes and an event, rounded up
	heap := func(n int) int64 {
		base := liveHeap()
		rs := make([]*tracefmt.RankReader, n)
		for i := range rs {
			r, err := tracefmt.OpenRank(filepath.Join(dir, tracefmt.RankFileName(i)))
			if err != nil {
				t.Fatal(err)
			}
			if !r.Next() {
				t.Fatalf("rank %d: no event: %v", i, r.Err())
			}
			rs[i] = r
		}
		used := liveHeap() - base
		for _, r := range rs {
			r.Close()
		}
		return used
	}
	per := (heap(large) - heap(small)) / (large - small)
	t.Logf("%d B an open reader", per)
	if lim := int64(4096 + block); per > lim {
		t.Errorf("%d B an open reader, want at most %d (4 KiB and a block of %d bytes)", per, lim, block)
	}
}

// liveHeap returns the bytes of heap in use after a collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC() // sync.Pool keeps what it held through one collection
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
