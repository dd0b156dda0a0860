package tracefmt_test

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/internal/zstdrle"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// hostileSeeds are FuzzReader's named seeds of files crafted to make a
// reader spend what they cannot justify (FuzzReader bounds what decoding
// any input allocates per input byte). They are small, so that the fuzzer
// runs them quickly; TestHostileAllocation reads them at full size.
func hostileSeeds(t *testing.T) map[string][]byte {
	huge, err := testgen.HugeWorld(0, 1<<24)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		"hostile-empty":           {},
		"hostile-huge-world":      huge,
		"hostile-block-bomb":      testgen.BlockBomb(16, 256<<10),
		"hostile-events-bomb":     testgen.EventsBomb(64, 256<<10),
		"hostile-header-bomb":     headerBomb(256 << 10),
		"hostile-list-growth":     listGrowth(20, 5000),
		"hostile-thread-sequence": threadSequence(8, 256<<10),
		"hostile-window":          windowFrames(4, 256<<10),
	}
}

// headerBomb is a header block of n zero bytes: n/2 empty keys and values.
func headerBomb(n int) []byte {
	return testgen.RawFile(testgen.RLEBlock(spec.BlockHeader, uvarints(uint64(n/2-8)), 0, n-16))
}

func stringsBlock(name string) []byte {
	p := append(uvarints(1, 1, uint64(len(name))), name...)
	return tracefmt.AppendBlock(nil, spec.BlockStrings, spec.CodecNone, len(p), p)
}

// listGrowth is one thread's blocks, each one MPI_Startall whose list of
// requests is step longer than the last: a reader growing the list to each
// length allocates quadratically.
func listGrowth(blocks, step int) []byte {
	bs := [][]byte{testgen.HeaderBlock(0, 1, "hostile"), stringsBlock("MPI_Startall")}
	for i := 1; i <= blocks; i++ {
		n := min(step*i, spec.MaxBlockSize-64)
		pfx := append(uvarints(0, uint64(i-1), 1, 1000), uvarints(uint64(spec.Start), 1, 0, 0, 1, uint64(n))...)
		bs = append(bs, testgen.RLEBlock(spec.BlockEvents, pfx, 0, n))
	}
	return testgen.RawFile(bs...)
}

// threadSequence is threads threads, each with a first block of two events,
// one early and one just before its block of raw bytes, and the threads'
// large blocks one after another in time: a reader giving each thread new
// storage allocates threads × raw bytes.
func threadSequence(threads, raw int) []byte {
	bs := [][]byte{testgen.HeaderBlock(0, 1, "hostile"), stringsBlock("MPI_Test")}
	const t0, step = 1_000_000_000, 1_000_000
	for th := uint64(0); th < uint64(threads); th++ {
		p := append(uvarints(th, 0, 2, 1000+th), 1, 1, 0, 0, 1, 1, 1)
		p = append(binary.AppendVarint(p, int64(t0+th*step-10-(1000+th))), 0, 1)
		bs = append(bs, tracefmt.AppendBlock(nil, spec.BlockEvents, spec.CodecNone, len(p), p))
	}
	for th := uint64(0); th < uint64(threads); th++ {
		n := raw - 64
		n -= n % testgen.CallBytes
		bs = append(bs, testgen.RLEBlock(spec.BlockEvents, uvarints(th, 2, uint64(n/testgen.CallBytes), t0+th*step), 1, n))
	}
	return testgen.RawFile(bs...)
}

// windowFrames is threads threads with one block of raw bytes each, whose
// zstd frame declares a 64 MiB window instead of being single-segment (a
// stream decoder keeps a window of the declared size).
func windowFrames(threads, raw int) []byte {
	bs := [][]byte{testgen.HeaderBlock(0, 1, "hostile"), stringsBlock("MPI_Test")}
	for th := uint64(0); th < uint64(threads); th++ {
		n := raw - 64
		n -= n % testgen.CallBytes
		pfx := uvarints(th, 0, uint64(n/testgen.CallBytes), 1000)
		z := zstdrle.WindowFrame(26, pfx, 1, n)
		bs = append(bs, tracefmt.AppendBlock(nil, spec.BlockEvents, spec.CodecZstd, len(pfx)+n, z))
	}
	return testgen.RawFile(bs...)
}

// The hostile files at full size: reading any of them allocates a few
// megabytes at most.
func TestHostileAllocation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		data  []byte
		bound uint64
	}{
		// 50 lists of up to 1 MiB elements: 8 MiB, a list of twice that
		// capacity when growing geometrically, their blocks' buffers.
		{"list-growth", listGrowth(50, 20000), 40 << 20},
		// 64 threads of 256 KiB blocks, one after another: one buffer.
		{"thread-sequence", threadSequence(64, 256<<10), 8 << 20},
		{"window", windowFrames(4, 1<<20), 8 << 20},
	} {
		_, n, alloc := readAll(t, tc.data, tracefmt.ReaderOptions{})
		t.Logf("%s: %d bytes, %d events, %d bytes allocated", tc.name, len(tc.data), n, alloc)
		if alloc > tc.bound {
			t.Errorf("%s: reading %d bytes allocated %d (bound %d)", tc.name, len(tc.data), alloc, tc.bound)
		}
	}
}

func uvarints(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

// TestHostileFuzzSeeds checks that the hostile seeds are checked in and up
// to date (-update-seeds rewrites them, as TestFuzzSeeds does the others).
func TestHostileFuzzSeeds(t *testing.T) {
	update := flag.Lookup("update-seeds").Value.String() == "true"
	dir := filepath.Join("testdata", "fuzz", "FuzzReader")
	for name, data := range hostileSeeds(t) {
		path := filepath.Join(dir, name)
		want := []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data))
		if update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
			t.Errorf("seed %s missing or stale (go test ./tracefmt -run HostileFuzzSeeds -update-seeds): %v", path, err)
		}
	}
}
