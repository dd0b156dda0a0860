package tracefmt_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/internal/allocs"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// readAll reads every event of data with options o and returns the reader
// (closed), the events read and the bytes allocated meanwhile.
func readAll(t *testing.T, data []byte, o tracefmt.ReaderOptions) (*tracefmt.RankReader, int, uint64) {
	t.Helper()
	var r *tracefmt.RankReader
	var err error
	n := 0
	alloc := allocs.Bytes(func() {
		r, err = tracefmt.NewRankReaderWith(bytes.NewReader(data), "bomb.mpit", o)
		if err != nil {
			return
		}
		for r.Next() {
			n++
		}
		err = r.Err()
		r.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, n, alloc
}

// 32 recorder threads each declaring a 1 MiB events block in a 3 KB file:
// the reader merging them by time would hold 32 MiB, and a reader in
// order would yield 32 MiB of events. The first pass keeps the blocks
// that fit the file's budget for all its events blocks together (here
// with a floor of 1 MiB: 1 MiB + 256 × 3 KB) and skips the rest with one
// data-loss line naming the first skipped block, how many and their
// events; the end record's count then says the same events are missing.
// (The command-line tests read 64 threads of 64 MiB with the default
// floor.)
func TestBlockBudget(t *testing.T) {
	const threads, raw, floor = 32, 1 << 20, 1 << 20
	data := testgen.BlockBomb(threads, raw)
	budget := int64(floor + tracefmt.DefaultMaxRatio*len(data))
	r, n, alloc := readAll(t, data, tracefmt.ReaderOptions{BudgetFloor: floor})
	t.Logf("%d-byte file: %d events, %d bytes allocated, budget %d", len(data), n, alloc, budget)
	if alloc > uint64(2*budget) {
		t.Errorf("reading a %d-byte file allocated %d bytes (budget %d)", len(data), alloc, budget)
	}
	perBlock := (raw - 4*binary.MaxVarintLen64) / testgen.CallBytes
	blockRaw := 10 + perBlock*testgen.CallBytes // its prefix (thread, seq, count, base), then its events
	kept := int(budget) / blockRaw
	d := r.Diagnostics()
	if kept < 1 || kept >= threads || n != kept*perBlock || d.Len() != 2 ||
		d.CountCode(tracefmt.CodeOverBudget) != 1 || d.CountCode(tracefmt.CodeEventsMissing) != 1 {
		t.Fatalf("%d events, want %d blocks of %d: %s", n, kept, perBlock, d.Summary())
	}
	for _, x := range d.All() {
		if x.Code == tracefmt.CodeOverBudget && (x.Rank != 0 || x.Block != 2+kept || x.File != "bomb.mpit" ||
			!strings.Contains(x.Message, fmt.Sprintf("%d events blocks from this one on (%d bytes decompressed)", threads-kept, (threads-kept)*blockRaw)) ||
			!strings.Contains(x.Message, fmt.Sprintf("budget of %d decompressed bytes (%d kept)", budget, kept*blockRaw)) ||
			!strings.Contains(x.Message, fmt.Sprintf("%d events lost", (threads-kept)*perBlock))) {
			t.Errorf("%v", x)
		}
	}
	// A larger allowance reads every block.
	r, n, _ = readAll(t, data, tracefmt.ReaderOptions{BudgetFloor: floor, MaxRatio: 1 << 20})
	if n != threads*perBlock || r.Diagnostics().Len() != 0 {
		t.Errorf("%d events: %s", n, r.Diagnostics().Summary())
	}
}

// One thread writing 24 events blocks of 16 MiB, each of the same event,
// in a 30 KB file: 67 M events that a reader in order would yield one
// block at a time, within any budget for what it holds at once. With the
// default budget the file yields 1 MiB + 256 × its size of events, a few
// hundred thousand, and one data-loss line for the rest.
func TestEventsBudget(t *testing.T) {
	const blocks, raw = 24, 16 << 20
	data := testgen.EventsBomb(blocks, raw)
	budget := int64(1<<20 + tracefmt.DefaultMaxRatio*len(data))
	r, n, alloc := readAll(t, data, tracefmt.ReaderOptions{})
	perBlock := (raw - 4*binary.MaxVarintLen64) / testgen.CallBytes
	t.Logf("%d-byte file of %d events: %d read, %d bytes allocated, budget %d", len(data), blocks*perBlock, n, alloc, budget)
	if blocks*perBlock < 60_000_000 || len(data) > 40_000 {
		t.Fatalf("the bomb has %d events in %d bytes", blocks*perBlock, len(data))
	}
	if n != 0 || alloc > uint64(2*budget) {
		// A 16 MiB block is past the budget of a 30 KB file: nothing read.
		t.Errorf("%d events read, %d bytes allocated (budget %d)", n, alloc, budget)
	}
	d := r.Diagnostics()
	if d.CountCode(tracefmt.CodeOverBudget) != 1 || !strings.Contains(d.All()[0].Message, fmt.Sprintf("%d events blocks from this one on", blocks)) {
		t.Errorf("diagnostics: %s\n%v", d.Summary(), d.All())
	}
	// Blocks small enough to fit: the file yields what its budget holds.
	data = testgen.EventsBomb(256, 256<<10)
	budget = int64(1<<20 + tracefmt.DefaultMaxRatio*len(data))
	r, n, _ = readAll(t, data, tracefmt.ReaderOptions{})
	perBlock = (256<<10 - 4*binary.MaxVarintLen64) / testgen.CallBytes
	blockRaw := 10 + perBlock*testgen.CallBytes
	if kept := int(budget) / blockRaw; kept < 1 || kept >= 256 || n != kept*perBlock {
		t.Errorf("%d-byte file: %d events read, want %d blocks of %d: %s", len(data), n, kept, perBlock, r.Diagnostics().Summary())
	}
}

// Real recordings compress at most about 22 times (docs/performance.md):
// such files of many threads read as they always did.
func TestBlockBudgetKeepsRealTraces(t *testing.T) {
	for _, bs := range []int{4 << 10, 256 << 10} {
		var buf bytes.Buffer
		h := tracefmt.NewHeader(0, 1, "jitter")
		w, err := tracefmt.NewWriter(&buf, &h, &tracefmt.WriterOptions{BlockSize: bs})
		if err != nil {
			t.Fatal(err)
		}
		w.DefineString(1, "MPI_Test")
		// A polling loop on 16 threads: durations and gaps with the jitter
		// of a real clock (a few ns), which bounds what zstd can do.
		x := uint64(1)
		const threads, perThread = 16, 30_000
		var prevEnd [threads]int64
		for i := 0; i < threads*perThread; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			th := i % threads
			ev := tracefmt.Event{Kind: spec.Call, Thread: th, Start: prevEnd[th] + 20 + int64(x%4)}
			ev.F[spec.Fn], ev.F[spec.Gap], ev.F[spec.Dur] = 1, ev.Start-prevEnd[th], 40+int64(x>>2%8)
			prevEnd[th] = ev.Start + ev.F[spec.Dur]
			if err := w.WriteEvent(&ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, n, _ := readAll(t, buf.Bytes(), tracefmt.ReaderOptions{})
		if n != threads*perThread || r.Diagnostics().Len() != 0 {
			t.Errorf("blocks of %d bytes: %d events: %s", bs, n, r.Diagnostics().Summary())
		}
	}
}

// A header block of zeros (empty keys and values, a thousandth of its size
// in zstd) is not a header; reading it costs no more than the block, and
// nothing when the block is beyond what the file justifies.
func TestHeaderBomb(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{
		{8 << 20, "header.count: 4194304 keys, more than 65536"},
		{32 << 20, "header block of 33554436 bytes (1044 stored) would take the decompressed blocks held at once past this 1075-byte file's budget"},
	} {
		data := testgen.RawFile(testgen.RLEBlock(spec.BlockHeader, binary.AppendUvarint(nil, uint64(tc.n/2)), 0, tc.n))
		var err error
		alloc := allocs.Bytes(func() { _, err = tracefmt.NewRankReader(bytes.NewReader(data), "bomb.mpit") })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v", err)
		}
		if alloc > uint64(2*min(tc.n, tracefmt.DefaultBudgetFloor)) {
			t.Errorf("a %d-byte file with a %d-byte header block allocated %d bytes", len(data), tc.n, alloc)
		}
	}
}

// A string table of 300,000 empty strings: the first 262,144 are kept.
func TestStringCount(t *testing.T) {
	const n = 300_000
	p := binary.AppendUvarint(nil, n)
	for id := uint64(1); id <= n; id++ {
		p = append(binary.AppendUvarint(p, id), 0)
	}
	data := testgen.RawFile(testgen.HeaderBlock(0, 1, "strings"), tracefmt.AppendBlock(nil, spec.BlockStrings, spec.CodecNone, len(p), p))
	r, err := tracefmt.NewRankReader(bytes.NewReader(data), "strings.mpit")
	if err != nil {
		t.Fatal(err)
	}
	if r.Strings().Len() != 1<<18 || r.Diagnostics().CountCode(tracefmt.CodeStringTableFull) != 1 {
		t.Errorf("%d strings: %s", r.Strings().Len(), r.Diagnostics().Summary())
	}
}
