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
// any input allocates per input byte). Their blocks are at most 1 MiB, the
// fuzz bodies' block size bound.
func hostileSeeds(t *testing.T) map[string][]byte {
	huge, err := testgen.HugeWorld(0, 1<<24)
	if err != nil {
		t.Fatal(err)
	}
	const mib = 1 << 20
	header := testgen.HeaderBlock(0, 1, "hostile")
	strs := func(name string) []byte {
		p := append(uvarints(1, 1, uint64(len(name))), name...)
		return tracefmt.AppendBlock(nil, spec.BlockStrings, spec.CodecNone, len(p), p)
	}
	// One thread's blocks, each one MPI_Startall whose list of requests
	// is longer than the last: a reader growing the list to each length
	// allocates quadratically.
	growing := [][]byte{header, strs("MPI_Startall")}
	for i := 1; i <= 200; i++ {
		n := min(5000*i, mib-64)
		pfx := append(uvarints(0, uint64(i-1), 1, 1000), uvarints(uint64(spec.Start), 1, 0, 0, uint64(n))...)
		growing = append(growing, testgen.RLEBlock(spec.BlockEvents, pfx, 0, n))
	}
	// 64 threads, each with a first block of two events, one early and one
	// just before its 1 MiB block, and the threads' 1 MiB blocks one after
	// another in time: a reader giving each thread new storage allocates
	// 64 MiB.
	sequence := [][]byte{header, strs("MPI_Test")}
	const t0, step = 1_000_000_000, 1_000_000
	for th := uint64(0); th < 64; th++ {
		p := append(uvarints(th, 0, 2, 1000+th), 1, 1, 0, 0, 1, 1)
		p = append(binary.AppendVarint(p, int64(t0+th*step-10-(1000+th))), 0)
		sequence = append(sequence, tracefmt.AppendBlock(nil, spec.BlockEvents, spec.CodecNone, len(p), p))
	}
	for th := uint64(0); th < 64; th++ {
		n := mib - 64
		sequence = append(sequence, testgen.RLEBlock(spec.BlockEvents, uvarints(th, 2, uint64(n/4), t0+th*step), 1, n))
	}
	// Frames declaring a 64 MiB window rather than being single-segment.
	window := [][]byte{header, strs("MPI_Test")}
	for th := uint64(0); th < 4; th++ {
		pfx := uvarints(th, 0, (mib-64)/4, 1000)
		z := zstdrle.WindowFrame(26, pfx, 1, mib-64)
		window = append(window, tracefmt.AppendBlock(nil, spec.BlockEvents, spec.CodecZstd, len(pfx)+mib-64, z))
	}
	return map[string][]byte{
		"hostile-empty":           {},
		"hostile-huge-world":      huge,
		"hostile-block-bomb":      testgen.BlockBomb(64, mib),
		"hostile-header-bomb":     testgen.RawFile(testgen.RLEBlock(spec.BlockHeader, uvarints(mib/2-8), 0, mib-16)),
		"hostile-list-growth":     testgen.RawFile(growing...),
		"hostile-thread-sequence": testgen.RawFile(sequence...),
		"hostile-window":          testgen.RawFile(window...),
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
