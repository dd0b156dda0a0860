package tracefmt_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// benchEvents is the size of the benchmark trace.
const benchEvents = 10_000_000

// writeBenchRank writes rank 0 of a synthetic 100-rank stencil-like run
// with at least benchEvents events spread over threads, and returns its path.
func writeBenchRank(b *testing.B, dir string, threads int, comp tracefmt.Compression) string {
	g := testgen.New(100)
	g.Options.Compression = comp
	views := make([]*testgen.Rank, threads)
	views[0] = g.Rank(0)
	for t := 1; t < threads; t++ {
		views[t] = views[0].Thread(t)
	}
	x := uint64(88172645463325252) // xorshift: realistic, not too compressible
	rnd := func(n uint64) uint64 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return x % n
	}
	n := 0
	for n < benchEvents {
		r := views[rnd(uint64(threads))]
		r.Dur = int64(200 + rnd(3000))
		left, right := int64(99), int64(1)
		bytes := uint64(8 << rnd(12))
		q1 := r.Irecv(left, 7, bytes)
		q2 := r.Irecv(right, 7, bytes)
		q3 := r.Compute(int64(1000+rnd(100000))).Isend(right, 7, bytes)
		q4 := r.Isend(left, 7, bytes)
		r.Waitall(q1, q2, q3, q4)
		r.Allreduce(8)
		r.Call("MPI_Wtime")
		if rnd(4) == 0 {
			r.Send(int64(rnd(100)), int64(rnd(10)), bytes)
			r.Recv(spec.AnySource, 3, 64)
			n += 2
		}
		n += 7
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, tracefmt.RankFileName(0))
	data, err := g.Bytes(0)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// decodeAll opens and decodes a whole rank file, touching each event.
func decodeAll(b *testing.B, path string, sample func(n int)) int {
	r, err := tracefmt.OpenRank(path)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	var sum uint64
	for r.Next() {
		ev := r.Event()
		sum += uint64(ev.Start) + ev.Bytes()
		n++
		if sample != nil && n&0xffff == 0 {
			sample(n)
		}
	}
	if err := r.Err(); err != nil {
		b.Fatal(err)
	}
	if r.Diagnostics().Len() != 0 {
		b.Fatal(r.Diagnostics().Summary())
	}
	r.Close()
	if sum == 42 {
		b.Log(sum)
	}
	return n
}

// BenchmarkReader decodes a synthetic rank file of ≥10M events on one
// goroutine (zstd decompression included) and reports events/s, heap
// allocations per event, the reader's peak heap above the baseline, and
// the file's bytes per event.
//
//	go test ./tracefmt -run '^$' -bench BenchmarkReader -benchtime 3x
func BenchmarkReader(b *testing.B) {
	dir := b.TempDir()
	for _, c := range []struct {
		name    string
		threads int
		comp    tracefmt.Compression
	}{
		{"zstd-1thread", 1, tracefmt.Zstd},
		{"zstd-4threads", 4, tracefmt.Zstd},
		{"none-1thread", 1, tracefmt.NoCompression},
	} {
		path := writeBenchRank(b, filepath.Join(dir, c.name), c.threads, c.comp)
		runtime.GC()
		b.Run(c.name, func(b *testing.B) {
			st, _ := os.Stat(path)
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			events := 0
			for i := 0; i < b.N; i++ {
				events += decodeAll(b, path, nil)
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(events), "allocs/event")
			b.ReportMetric(float64(st.Size())/float64(events/b.N), "file-bytes/event")
			// Peak heap: one more decode, sampling the heap every 64k events.
			runtime.GC()
			var base, ms runtime.MemStats
			runtime.ReadMemStats(&base)
			peak := base.HeapAlloc
			decodeAll(b, path, func(int) {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			})
			b.ReportMetric(float64(peak-base.HeapAlloc)/(1<<20), "peak-heap-MB")
		})
	}
}
