package tracefmt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/internal/allocs"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the named fuzz seeds in testdata/fuzz")

// fuzzMaxBlock is the block size bound of the fuzz bodies: it keeps every
// allocation small.
const fuzzMaxBlock = 1 << 20

// fuzzOptions are FuzzReader's reader options: blocks of at most 1 MiB, and
// a budget for decompressed blocks of 1 MiB + 256 × the input's size.
var fuzzOptions = ReaderOptions{MaxBlockSize: fuzzMaxBlock}

// The bound on what decoding an input may allocate (runtime TotalAlloc),
// which bounds its peak memory: what the budget for decompressed blocks
// lets the reader hold (the 1 MiB floor and 256 per input byte), twice for
// growing buffers geometrically, and as much again eight times over for the
// events' lists (a list element takes at least one byte of a block and at
// most 8 bytes of memory; a completion 5 and 40); plus the zstd decoders.
const (
	fuzzAllocPerByte = 2 * (1 + 8) * DefaultMaxRatio
	fuzzAllocConst   = 2*(1+8)*fuzzMaxBlock + 8<<20
)

// readerSeeds are the named seeds of FuzzReader.
func readerSeeds(t testing.TB) map[string][]byte {
	twoThreads := newStream()
	for i := 0; i < 40; i++ {
		ev := call([]spec.Kind{spec.Send, spec.Irecv, spec.Complete, spec.Coll}[i%4], i%2, int64(i%5), int64(3+i%3))
		ev.F[spec.Peer] = int64(i % 3)
		ev.F[spec.Req] = int64(i)
		if ev.Kind == spec.Complete {
			ev.Completions = []Completion{{Req: uint64(i - 1), Src: 1, Tag: 7, Bytes: 64}}
		}
		twoThreads.add(ev)
	}
	valid := writeFile(t, 0, 2, twoThreads.evs, &WriterOptions{Compression: NoCompression, BlockSize: 64}, nil)
	validZstd := writeFile(t, 1, 2, twoThreads.evs, &WriterOptions{BlockSize: 64}, nil)

	fs := scanFrames(t, valid)
	ev := framesOfType(fs, spec.BlockEvents)
	last, mid := ev[len(ev)-1], ev[len(ev)/2]

	truncated := valid[:last.off+spec.BlockHeaderSize+int64(last.f.stored)/2]
	bitflip := bytes.Clone(valid)
	bitflip[mid.off+spec.BlockHeaderSize+3] ^= 0x04
	hugeLength := bytes.Clone(valid)
	binary.LittleEndian.PutUint32(hugeLength[mid.off+8:], 0xffffff00)
	seqGap := append(bytes.Clone(valid[:mid.off]), valid[mid.end():]...)

	hdr := rawBlock(spec.BlockHeader, headerPayload("rank", "0", "size", "1", "run_id", "fuzz"))
	strs := rawBlock(spec.BlockStrings, append(uvarints(1, 1), "MPI_Startall"...))
	hugeList := rawFile(1, hdr, strs, rawBlock(spec.BlockEvents,
		append(uvarints(0, 0, 1, 100), uvarints(uint64(spec.Start), 1, 2, 3, 1<<62, 5, 6)...)))

	neg := newStream()
	neg.add(call(spec.Call, 0, 1000, 10))
	neg.add(call(spec.Call, 0, -500, 10))
	neg.add(call(spec.Send, 0, -1<<40, 10))
	negativeGap := writeFile(t, 0, 1, neg.evs, &WriterOptions{Compression: NoCompression}, nil)

	wrongVersion := bytes.Clone(valid)
	binary.LittleEndian.PutUint16(wrongVersion[len(spec.Magic):], spec.Current+1)

	every := everyKindSmall()
	return map[string][]byte{
		"valid-two-threads":      valid,
		"valid-two-threads-zstd": validZstd,
		"truncated-last-block":   truncated,
		"bitflip-block":          bitflip,
		"huge-length":            hugeLength,
		"huge-list-count":        hugeList,
		"negative-gap":           negativeGap,
		"wrong-version":          wrongVersion,
		"not-mpitrace":           []byte("\x7fELF\x02\x01\x01\x00mpitrace\x00\x01\x00"),
		"missing-end":            writeFile(t, 0, 1, twoThreads.evs[:5], &WriterOptions{Compression: NoCompression}, noEnd),
		"seq-gap":                seqGap,
		"every-kind":             writeFile(t, 2, 4, every, &WriterOptions{Compression: NoCompression, BlockSize: 256}, nil),
		"pending-mpi-error":      binaryOf(t, pendingText),
		"sites":                  binaryOf(t, sitesText),
	}
}

// everyKindSmall is everyKindStream without its 100k-element lists.
func everyKindSmall() []Event {
	var out []Event
	for _, e := range everyKindStream().evs {
		if len(e.Ranks)+len(e.Reqs)+len(e.Completions)+len(e.Values) < 1000 {
			out = append(out, e)
		}
	}
	return out
}

// textSeeds are the named seeds of FuzzTextRoundTrip.
func textSeeds(t testing.TB) map[string][]byte {
	small := newStream()
	e := call(spec.Send, 0, 1520, 312)
	e.F[spec.Peer], e.F[spec.Tag], e.F[spec.Comm], e.F[spec.Bytes] = 1, 7, 1, 4096
	small.add(e)
	e = call(spec.Complete, 1, 10, 20)
	e.Completions = []Completion{{Req: 3, Src: 1, Tag: 7, Bytes: 4096}}
	small.add(e)
	return map[string][]byte{
		"dump-small":      []byte(textOf(t, writeFile(t, 0, 2, small.evs, nil, nil))),
		"dump-every-kind": []byte(textOf(t, writeFile(t, 2, 4, everyKindSmall(), nil, nil))),
		"dump-sites":      []byte(textOf(t, binaryOf(t, sitesText))),
		"hand-written": []byte("# by hand\nrank 0\nmeta run_id=\"r\"\nSend fn=MPI_Send peer=1 tag=7 bytes=8\n" +
			"t=100 thr=1 CommNew fn=MPI_Comm_split parent=1 comm=3 gid=9 ranks=[1,0]\n" +
			"t=90 gap=-4 Complete fn=#3 completions=[{req=1},{req=2 src=-1 stag=-1}]\nend reason=exit\n" +
			"rank 1\nmeta \"odd key\"=\"\\xff\"\nstring 1 \"MPI_Send\"\nstring 2 \"MPI_Send\"\nCall fn=#2\n"),
	}
}

func seedFile(data []byte) []byte {
	return []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data))
}

// TestFuzzSeeds checks that the named seeds are checked in and up to date;
// -update-seeds rewrites them.
func TestFuzzSeeds(t *testing.T) {
	for fuzz, seeds := range map[string]map[string][]byte{"FuzzReader": readerSeeds(t), "FuzzTextRoundTrip": textSeeds(t)} {
		dir := filepath.Join("testdata", "fuzz", fuzz)
		for name, data := range seeds {
			path := filepath.Join(dir, name)
			if *updateSeeds {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, seedFile(data), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("seed %s missing (go test ./tracefmt -run TestFuzzSeeds -update-seeds): %v", path, err)
				continue
			}
			// The zstd output may change with the library version; only the
			// uncompressed seeds must match byte for byte.
			if !bytes.Equal(got, seedFile(data)) && !strings.Contains(name, "zstd") && !strings.HasPrefix(name, "dump-") {
				t.Errorf("seed %s is stale (go test ./tracefmt -run TestFuzzSeeds -update-seeds)", path)
			}
		}
	}
}

// FuzzReader feeds arbitrary bytes to the reader: it must never panic, must
// classify every open failure as one of the documented errors, must bound
// its allocations, and what it decodes must survive the text round trip.
func FuzzReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var (
			h         Header
			r         *RankReader
			herr, err error
			long      bool
		)
		n, elems := 0, 0
		alloc := allocs.Bytes(func() {
			// The header-only path (OpenDir) must cope as well, and agree.
			h, herr = readHeader(bytes.NewReader(data), int64(len(data)), "fuzz", fuzzOptions)
			if r, err = NewRankReaderWith(bytes.NewReader(data), "fuzz", fuzzOptions); err != nil {
				return
			}
			// A few bytes of zstd can hold a megabyte of events; stop
			// early so that each input runs quickly under coverage
			// instrumentation.
			for n < 50_000 && r.Next() {
				ev := r.Event()
				l := len(ev.Ranks) + len(ev.Reqs) + len(ev.Completions)
				long = long || l > fuzzMaxBlock
				elems += l
				n++
			}
		})
		if limit := fuzzAllocPerByte*len(data) + fuzzAllocConst; alloc > uint64(limit) {
			t.Fatalf("decoding %d bytes allocated %d bytes (%.0f per byte); the bound is %d per byte + %d", len(data), alloc,
				float64(alloc)/float64(len(data)), fuzzAllocPerByte, fuzzAllocConst)
		}
		if err != nil {
			var ve *VersionError
			if !errors.Is(err, ErrNotMpitrace) && !errors.As(err, &ve) && !errors.Is(err, ErrBrokenTrace) {
				t.Fatalf("open: unclassified error %v", err)
			}
			return
		}
		defer r.Close()
		if herr != nil || h.Rank != r.Rank() || h.Size != r.Header().Size {
			t.Fatalf("ReadHeader gives %+v, %v; the reader rank %d size %d", h, herr, r.Rank(), r.Header().Size)
		}
		if long {
			t.Fatalf("list longer than a block")
		}
		if err := r.Err(); err != nil {
			t.Fatalf("in-memory reader failed: %v", err)
		}
		// Every buffer the reader holds is bounded by the block size bound:
		// one compressed payload, one raw payload and one event per thread.
		held := cap(r.cbuf) + cap(r.scanBuf)
		for _, c := range r.cursors {
			held += cap(c.buf) + 8*cap(c.ev.Ranks) + 8*cap(c.ev.Reqs) + 40*cap(c.ev.Completions)
		}
		if limit := (len(r.cursors)+2)*(fuzzMaxBlock+1024) + 40*fuzzMaxBlock; held > limit {
			t.Fatalf("reader holds %d bytes of buffers (limit %d)", held, limit)
		}
		if len(r.blocks) > len(data)/spec.BlockHeaderSize {
			t.Fatalf("%d blocks indexed from %d bytes", len(r.blocks), len(data))
		}
		if n > 20000 || elems > 100000 {
			return // keep the in-memory round trip small
		}
		// A reader spooling its blocks reads the same.
		sp := NewSpool("")
		defer sp.Close()
		if want, got := readCanonical(t, data, fuzzOptions, nil), readCanonical(t, data, fuzzOptions, sp); got != want {
			t.Fatalf("spooled reading differs:\n%s", firstDiff(got, want))
		}
		// What was decoded must be representable: text → binary → text.
		r2, err := NewRankReaderWith(bytes.NewReader(data), "fuzz", fuzzOptions)
		if err != nil {
			t.Fatalf("second open failed: %v", err)
		}
		defer r2.Close()
		var t1 bytes.Buffer
		if err := WriteText(&t1, r2); err != nil {
			t.Fatal(err)
		}
		checkTextStable(t, t1.String())
	})
}

// checkTextStable parses canonical text, converts it to binary and back,
// and requires the same text.
func checkTextStable(t *testing.T, t1 string) {
	ranks, err := ParseText(strings.NewReader(t1))
	if err != nil {
		t.Fatalf("WriteText output does not parse: %v\n%s", err, head(t1))
	}
	var t2 strings.Builder
	for _, rd := range ranks {
		var bin bytes.Buffer
		if err := rd.WriteBinary(&bin, &WriterOptions{Compression: NoCompression, BlockSize: 200}); err != nil {
			t.Fatalf("text → binary: %v", err)
		}
		r, err := NewRankReader(bytes.NewReader(bin.Bytes()), "roundtrip")
		if err != nil {
			t.Fatalf("reading text → binary: %v", err)
		}
		if err := WriteText(&t2, r); err != nil {
			t.Fatal(err)
		}
		// A re-encoded file has no damage; diagnostics about its end record
		// (kept as it was) may remain.
		for _, code := range []string{CodeTruncatedBlock, CodeCRCMismatch, CodeBadFrame, CodeUnrecognisedBytes,
			CodeUndecodableBlock, CodeSeqGap, CodeSeqOverlap, CodeTrailingBytes, CodeDuplicateString} {
			if r.Diagnostics().CountCode(code) != 0 {
				t.Fatalf("damage in a re-encoded file:\n%s", diagStrings(r.Diagnostics()))
			}
		}
	}
	if t1 != t2.String() {
		t.Fatalf("text changed in a round trip:\n%s", firstDiff(t1, t2.String()))
	}
}

// FuzzTextRoundTrip parses arbitrary text; whatever parses must convert to
// binary and back to text, and that text must be stable.
func FuzzTextRoundTrip(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		ranks, err := ParseText(bytes.NewReader(data))
		if err != nil {
			return
		}
		total := 0
		for _, rd := range ranks {
			total += len(rd.Events)
		}
		if total > 20000 {
			return
		}
		var t1 strings.Builder
		for _, rd := range ranks {
			var bin bytes.Buffer
			if err := rd.WriteBinary(&bin, nil); err != nil {
				t.Fatalf("parsed text → binary: %v", err)
			}
			r, err := NewRankReader(bytes.NewReader(bin.Bytes()), "text")
			if err != nil {
				t.Fatalf("reading parsed text: %v", err)
			}
			if err := WriteText(&t1, r); err != nil {
				t.Fatal(err)
			}
		}
		checkTextStable(t, t1.String())
	})
}
