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
// the reader merging them by time would hold 32 MiB. It holds at most its
// budget for decompressed blocks (here with a floor of 1 MiB: 1 MiB +
// 256 × 3 KB); the blocks beyond it are data loss, each named with its
// sizes. (The command-line tests read 64 threads of 64 MiB with the
// default floor.)
func TestBlockBudget(t *testing.T) {
	const threads, raw, floor = 32, 1 << 20, 1 << 20
	data := testgen.BlockBomb(threads, raw)
	budget := int64(floor + tracefmt.DefaultMaxRatio*len(data))
	r, n, alloc := readAll(t, data, tracefmt.ReaderOptions{BudgetFloor: floor})
	t.Logf("%d-byte file: %d events, %d bytes allocated, budget %d", len(data), n, alloc, budget)
	if alloc > uint64(2*budget) {
		t.Errorf("reading a %d-byte file allocated %d bytes (budget %d)", len(data), alloc, budget)
	}
	d := r.Diagnostics()
	over := d.CountCode(tracefmt.CodeOverBudget)
	perBlock := (raw - 4*binary.MaxVarintLen64) / testgen.CallBytes
	if over == 0 || over == threads || n != (threads-over)*perBlock || d.Len() != over {
		t.Fatalf("%d events, %d blocks over budget: %s", n, over, d.Summary())
	}
	for _, x := range d.All() {
		if x.Code == tracefmt.CodeOverBudget && (x.Rank != 0 || x.Block < 2 || x.File != "bomb.mpit" ||
			// The block: its 10-byte prefix (thread, seq, count, base), then its events.
			!strings.Contains(x.Message, fmt.Sprintf("events block of %d bytes (", 10+perBlock*testgen.CallBytes)) || !strings.Contains(x.Message, "stored)") ||
			!strings.Contains(x.Message, "thread ") || !strings.Contains(x.Message, fmt.Sprintf("%d events lost", perBlock))) {
			t.Errorf("%v", x)
		}
	}
	// A larger allowance reads every block.
	r, n, _ = readAll(t, data, tracefmt.ReaderOptions{BudgetFloor: floor, MaxRatio: 1 << 20})
	if n != threads*perBlock || r.Diagnostics().Len() != 0 {
		t.Errorf("%d events: %s", n, r.Diagnostics().Summary())
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
