package tracefmt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// manyBlocks returns a file of one thread with 200 events in blocks of
// about 10 events, and the events.
func manyBlocks(t *testing.T, opts WriterOptions, end *End) ([]byte, []Event) {
	s := newStream()
	for i := 0; i < 200; i++ {
		ev := call(spec.Send, 0, int64(i%7), 3)
		ev.F[spec.Peer] = int64(i % 4)
		ev.F[spec.Tag] = int64(i)
		ev.F[spec.Bytes] = int64(i * 100)
		s.add(ev)
	}
	if opts.BlockSize == 0 {
		opts.BlockSize = 80
	}
	return writeFile(t, 3, 4, s.evs, &opts, end), s.evs
}

func eventsEqual(t *testing.T, got, want []Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i := range got {
		if !got[i].Equal(&want[i]) {
			t.Fatalf("event %d: got %s, want %s", i, summary(&got[i]), summary(&want[i]))
		}
	}
}

// blockEvents returns how many events precede events block i (in file
// order) and how many it holds, for a single-thread file.
func blockSpan(t *testing.T, data []byte, i int) (before, count int) {
	r, err := NewRankReader(bytes.NewReader(data), "x")
	if err != nil {
		t.Fatal(err)
	}
	b := r.blocks[i]
	return int(b.seq), int(b.count)
}

func TestNotMpitraceAndWrongVersion(t *testing.T) {
	good, _ := manyBlocks(t, WriterOptions{}, nil)
	cases := []struct {
		name string
		data []byte
		want string
		is   func(error) bool
	}{
		{"elf", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"), "f.mpit: not an mpitrace file?",
			func(err error) bool { return errors.Is(err, ErrNotMpitrace) }},
		{"empty", nil, "f.mpit: empty file: not an mpitrace file?",
			func(err error) bool { return errors.Is(err, ErrNotMpitrace) }},
		{"text", []byte("rank 0\nmeta rank=\"0\"\n"), "f.mpit: not an mpitrace file?",
			func(err error) bool { return errors.Is(err, ErrNotMpitrace) }},
		{"next version", rawFile(spec.Current + 1), fmt.Sprintf("f.mpit: unsupported format version %d (this build reads 1–%d)", spec.Current+1, spec.Current),
			func(err error) bool { var v *VersionError; return errors.As(err, &v) && v.Version == spec.Current+1 }},
		{"version 0 with blocks", append(rawFile(0), good[fileHeaderSize:]...), fmt.Sprintf("f.mpit: unsupported format version 0 (this build reads 1–%d)", spec.Current),
			func(err error) bool { var v *VersionError; return errors.As(err, &v) }},
		{"magic only", []byte(spec.Magic), "broken trace: f.mpit: the file ends inside its format version",
			func(err error) bool { return errors.Is(err, ErrBrokenTrace) }},
		{"no blocks", rawFile(1), "broken trace: f.mpit: no header block",
			func(err error) bool { return errors.Is(err, ErrBrokenTrace) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewRankReader(bytes.NewReader(c.data), "f.mpit")
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("error %q, want prefix %q", err, c.want)
			}
			if !c.is(err) {
				t.Errorf("error %q has the wrong type", err)
			}
		})
	}
	// The two distinct errors are not confused with each other.
	_, err := NewRankReader(bytes.NewReader(rawFile(9)), "f")
	if errors.Is(err, ErrNotMpitrace) || errors.Is(err, ErrBrokenTrace) {
		t.Errorf("wrong version reported as %v", err)
	}
}

func TestTruncatedLastBlock(t *testing.T) {
	for _, comp := range []Compression{Zstd, NoCompression} {
		data, want := manyBlocks(t, WriterOptions{Compression: comp}, nil)
		fs := scanFrames(t, data)
		evBlocks := framesOfType(fs, spec.BlockEvents)
		last := evBlocks[len(evBlocks)-1]
		before, _ := blockSpan(t, data, len(evBlocks)-1)
		// Cut inside the last events block's payload, inside its frame
		// header, and right after it (only the end block lost).
		for _, cut := range []int64{last.off + spec.BlockHeaderSize + int64(last.f.stored)/2, last.off + 7, last.end()} {
			r, got := readEvents(t, data[:cut])
			wantN := before
			if cut == last.end() {
				wantN = len(want)
			} else {
				d := findDiag(t, r.Diagnostics(), CodeTruncatedBlock)
				if d.Severity != DataLoss || d.Rank != 3 || d.Offset != last.off || d.File != "rank-00003.mpit" {
					t.Errorf("diagnostic %+v", d)
				}
				if !strings.Contains(d.String(), "rank 3: block ") || !strings.Contains(d.Message, "every block before it is read") {
					t.Errorf("diagnostic %q", d)
				}
			}
			eventsEqual(t, got, want[:wantN])
			md := findDiag(t, r.Diagnostics(), CodeMissingEnd)
			if md.Severity != DataLoss || !strings.Contains(md.Message, "no end record: the rank stopped before its final flush") {
				t.Errorf("missing end diagnostic %q", md)
			}
		}
	}
}

func TestBitFlipMiddleBlock(t *testing.T) {
	for _, comp := range []Compression{Zstd, NoCompression} {
		data, want := manyBlocks(t, WriterOptions{Compression: comp}, nil)
		fs := scanFrames(t, data)
		evBlocks := framesOfType(fs, spec.BlockEvents)
		mid := len(evBlocks) / 2
		bad := evBlocks[mid]
		before, count := blockSpan(t, data, mid)
		blockIndex := -1
		for i, f := range fs {
			if f.off == bad.off {
				blockIndex = i
			}
		}
		flipped := bytes.Clone(data)
		flipped[bad.off+spec.BlockHeaderSize+int64(bad.f.stored)/2] ^= 0x10
		r, got := readEvents(t, flipped)
		exp := append(append([]Event{}, want[:before]...), want[before+count:]...)
		eventsEqual(t, got, exp)
		d := findDiag(t, r.Diagnostics(), CodeCRCMismatch)
		if d.Rank != 3 || d.Block != blockIndex || d.Offset != bad.off || d.Severity != DataLoss {
			t.Errorf("crc diagnostic %+v, want rank 3 block %d offset %d", d, blockIndex, bad.off)
		}
		if s := d.String(); !strings.Contains(s, "rank 3: block ") || !strings.Contains(s, "block skipped") {
			t.Errorf("crc diagnostic %q", s)
		}
		g := findDiag(t, r.Diagnostics(), CodeSeqGap)
		if !strings.Contains(g.Message, "events lost") {
			t.Errorf("seq gap %q", g)
		}
		if n := r.Diagnostics().Count(DataLoss); n != 2 {
			t.Errorf("%d data-loss diagnostics, want 2:\n%s", n, diagStrings(r.Diagnostics()))
		}
	}
}

func TestDamagedFrameResync(t *testing.T) {
	data, want := manyBlocks(t, WriterOptions{Compression: NoCompression}, nil)
	fs := scanFrames(t, data)
	evBlocks := framesOfType(fs, spec.BlockEvents)
	mid := len(evBlocks) / 2
	bad := evBlocks[mid]
	before, count := blockSpan(t, data, mid)
	exp := append(append([]Event{}, want[:before]...), want[before+count:]...)
	for name, mutate := range map[string]func([]byte){
		"huge stored size":      func(b []byte) { binary.LittleEndian.PutUint32(b[bad.off+8:], 0xfffffff0) },
		"plausible wrong size":  func(b []byte) { binary.LittleEndian.PutUint32(b[bad.off+8:], bad.f.stored+3) },
		"size past end of file": func(b []byte) { binary.LittleEndian.PutUint32(b[bad.off+8:], uint32(len(b))) },
		"bad sync":              func(b []byte) { b[bad.off] = 'X' },
		"bad type":              func(b []byte) { b[bad.off+4] = 9 },
	} {
		t.Run(name, func(t *testing.T) {
			b := bytes.Clone(data)
			mutate(b)
			r, got := readEvents(t, b)
			eventsEqual(t, got, exp)
			if r.Diagnostics().Count(DataLoss) == 0 {
				t.Error("no data-loss diagnostic")
			}
			t.Log(diagStrings(r.Diagnostics()))
		})
	}
	t.Run("garbage inserted", func(t *testing.T) {
		b := append(bytes.Clone(data[:bad.off]), []byte("garbage!garbage!")...)
		b = append(b, data[bad.off:]...)
		r, got := readEvents(t, b)
		eventsEqual(t, got, want)
		findDiag(t, r.Diagnostics(), CodeUnrecognisedBytes)
	})
}

func TestMissingEnd(t *testing.T) {
	data, want := manyBlocks(t, WriterOptions{}, noEnd)
	r, got := readEvents(t, data)
	eventsEqual(t, got, want)
	if r.End() != nil {
		t.Error("end record found")
	}
	d := findDiag(t, r.Diagnostics(), CodeMissingEnd)
	if d.Severity != DataLoss || d.Rank != 3 || !strings.Contains(d.Message, "no end record: the rank stopped before its final flush") {
		t.Errorf("diagnostic %+v", d)
	}
	if r.Diagnostics().Len() != 1 {
		t.Error(diagStrings(r.Diagnostics()))
	}
}

func TestSeqGap(t *testing.T) {
	data, want := manyBlocks(t, WriterOptions{}, nil)
	fs := scanFrames(t, data)
	evBlocks := framesOfType(fs, spec.BlockEvents)
	cut := evBlocks[3]
	before, count := blockSpan(t, data, 3)
	b := append(bytes.Clone(data[:cut.off]), data[cut.end():]...)
	r, got := readEvents(t, b)
	exp := append(append([]Event{}, want[:before]...), want[before+count:]...)
	eventsEqual(t, got, exp)
	d := findDiag(t, r.Diagnostics(), CodeSeqGap)
	if d.Severity != DataLoss || !strings.Contains(d.Message, "thread 0: "+strconv.Itoa(count)+" events lost") {
		t.Errorf("diagnostic %q", d)
	}
	// The end record counts the lost events too.
	if r.Diagnostics().CountCode(CodeEventsMissing) != 0 {
		// Seq gaps already account for them; the end count agrees with seq+count.
		t.Error(diagStrings(r.Diagnostics()))
	}
}

func TestEndRecordDiagnostics(t *testing.T) {
	s := newStream()
	s.add(call(spec.Call, 0, 1, 1))
	data := writeFile(t, 1, 2, s.evs, nil, &End{Reason: spec.EndSignal, Signal: 11, Events: 5, Blocks: 1, Time: 9, Dropped: 7})
	r, _ := readEvents(t, data)
	d := findDiag(t, r.Diagnostics(), CodeDroppedEvents)
	if d.Severity != DataLoss || !strings.Contains(d.Message, "dropped 7 events") {
		t.Errorf("%q", d)
	}
	if d := findDiag(t, r.Diagnostics(), CodeAbnormalEnd); !strings.Contains(d.Message, "signal 11") {
		t.Errorf("%q", d)
	}
	if d := findDiag(t, r.Diagnostics(), CodeEventsMissing); !strings.Contains(d.Message, "4 events lost") {
		t.Errorf("%q", d)
	}
}

func TestHugeCounts(t *testing.T) {
	hdr := rawBlock(spec.BlockHeader, headerPayload("rank", "0", "size", "1"))
	// One Call: fn 1, gap 1 (zigzag 2), dur 3: start 101, end 104. Its seq
	// follows the damaged block's so that only the damage is reported.
	ok := rawBlock(spec.BlockEvents, append(uvarints(0, 1, 1, 100), uvarints(uint64(spec.Call), 1, 2, 3)...))
	cases := map[string][][]byte{
		// A Start event whose reqs list claims 2^60 elements.
		"list count": {hdr, rawBlock(spec.BlockEvents, append(uvarints(0, 0, 1, 100), uvarints(uint64(spec.Start), 1, 2, 3, 1<<60, 5)...))},
		// An events block claiming 2^62 events.
		"event count":  {hdr, rawBlock(spec.BlockEvents, uvarints(0, 0, 1<<62, 100))},
		"thread":       {hdr, rawBlock(spec.BlockEvents, uvarints(1<<40, 0, 1, 100))},
		"header count": {rawBlock(spec.BlockHeader, uvarints(1<<50)), hdr},
		"string count": {hdr, rawBlock(spec.BlockStrings, uvarints(1<<50, 1, 1))},
		"string len":   {hdr, rawBlock(spec.BlockStrings, uvarints(1, 1, 1<<50))},
		"varint overflow": {hdr, rawBlock(spec.BlockEvents, append(uvarints(0, 0, 1, 100),
			uint8(spec.Call), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0))},
		"unknown kind": {hdr, rawBlock(spec.BlockEvents, append(uvarints(0, 0, 1, 100), uvarints(99, 1, 2, 3)...))},
	}
	for name, blocks := range cases {
		t.Run(name, func(t *testing.T) {
			data := rawFile(1, append(blocks, ok)...)
			r, got := readEvents(t, data)
			if len(got) != 1 || got[0].Kind != spec.Call || got[0].Start != 101 || got[0].End != 104 {
				t.Errorf("events %v", got)
			}
			if r.Diagnostics().Count(DataLoss)+r.Diagnostics().Count(Error) == 0 {
				t.Error("no diagnostic")
			}
			t.Log(diagStrings(r.Diagnostics()))
		})
	}
}

func TestDecodeErrorNamesField(t *testing.T) {
	hdr := rawBlock(spec.BlockHeader, headerPayload("rank", "3", "size", "4"))
	// A Send whose payload ends after peer: decoding Send.tag fails.
	body := append(uvarints(0, 0, 2, 100), uvarints(uint64(spec.Call), 1, 2, 3)...)
	body = append(body, uvarints(uint64(spec.Send), 1, 2, 3, 4)...)
	data := rawFile(1, hdr, rawBlock(spec.BlockEvents, body))
	r, got := readEvents(t, data)
	if len(got) != 1 {
		t.Fatalf("got %d events", len(got))
	}
	d := findDiag(t, r.Diagnostics(), CodeUndecodableBlock)
	want := "rank-00003.mpit: rank 3: block 1 at offset 46: decoding Send.tag (event 1 of 2, payload byte"
	if s := d.String(); !strings.Contains(s, want) || !strings.Contains(s, "unexpected end of payload") {
		t.Errorf("diagnostic %q, want it to contain %q", s, want)
	}
}

func TestPlainReader(t *testing.T) {
	data, want := manyBlocks(t, WriterOptions{}, nil)
	r, err := NewRankReader(io.MultiReader(bytes.NewReader(data)), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for r.Next() {
		if !r.Event().Equal(&want[n]) {
			t.Fatalf("event %d differs", n)
		}
		n++
	}
	if n != len(want) {
		t.Fatalf("%d events", n)
	}
}

func TestMaxBlockSizeOption(t *testing.T) {
	data, _ := manyBlocks(t, WriterOptions{BlockSize: 4096}, nil)
	r, err := NewRankReaderWith(bytes.NewReader(data), "x", ReaderOptions{MaxBlockSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	if r.Diagnostics().CountCode(CodeBadFrame) == 0 {
		t.Error(diagStrings(r.Diagnostics()))
	}
}

func TestReadHeaderSkipsEarlierBlocks(t *testing.T) {
	// An events block (zstd) and garbage before the header block.
	data, _ := manyBlocks(t, WriterOptions{}, nil)
	fs := scanFrames(t, data)
	hdr := fs[0]
	ev := framesOfType(fs, spec.BlockEvents)[0]
	b := append([]byte{}, data[:fileHeaderSize]...)
	b = append(b, data[ev.off:ev.end()]...)
	b = append(b, "junk"...)
	b = append(b, data[hdr.off:hdr.end()]...)
	h, err := readHeader(bytes.NewReader(b), int64(len(b)), "x", ReaderOptions{})
	if err != nil || h.Rank != 3 || h.Size != 4 {
		t.Fatalf("header %+v, %v", h, err)
	}
	r, _ := readEvents(t, b)
	if r.Rank() != 3 {
		t.Fatal(r.Rank())
	}
	findDiag(t, r.Diagnostics(), CodeUnrecognisedBytes)
}

// TestOnlyEnds: a reader told OnlyEnds delivers, of each thread, the
// events of its first and last events blocks, in the order a full read
// delivers them, with nothing counted lost and the same diagnostics; when
// its first or last block fails to load, it loses what a full read loses.
func TestOnlyEnds(t *testing.T) {
	s := newStream()
	for i := 0; i < 300; i++ {
		ev := call(spec.Send, i%3/2, int64(i%7), 3) // threads 0 and 1, 2:1
		ev.F[spec.Peer] = int64(i % 4)
		ev.F[spec.Tag] = int64(i)
		ev.F[spec.Bytes] = int64(i * 100)
		s.add(ev)
	}
	for _, c := range []Compression{Zstd, NoCompression} {
		data := writeFile(t, 3, 4, s.evs, &WriterOptions{BlockSize: 80, Compression: c}, nil)
		read := func(ends bool) (lines []string, keep map[int][2][2]uint64, diags string) {
			r, err := NewRankReader(bytes.NewReader(data), "x")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			keep = map[int][2][2]uint64{}
			for _, c := range r.cursors {
				if len(c.blocks) < 4 {
					t.Fatalf("thread %d has %d blocks, want several", c.thread, len(c.blocks))
				}
				f, l := &r.blocks[c.blocks[0]], &r.blocks[c.blocks[len(c.blocks)-1]]
				keep[c.thread] = [2][2]uint64{{f.seq, f.seq + f.count}, {l.seq, l.seq + l.count}}
			}
			if ends {
				r.OnlyEnds()
			}
			seq := map[int]uint64{}
			for r.Next() {
				ev := r.Event()
				line := fmt.Sprintf("%d %d %d %d %v", ev.Thread, seq[ev.Thread], ev.Start, ev.End, ev.F)
				seq[ev.Thread]++
				if ends {
					line = fmt.Sprintf("%d %d %d %d %v", ev.Thread, -1, ev.Start, ev.End, ev.F)
				}
				if l := r.Lost(); l.Events != 0 {
					t.Errorf("ends %v: %v lost before %s", ends, l, line)
				}
				lines = append(lines, line)
			}
			if r.Err() != nil || r.Lost().Events != 0 {
				t.Errorf("ends %v: err %v, lost at the end %v", ends, r.Err(), r.Lost())
			}
			return lines, keep, fmt.Sprint(r.Diagnostics().All())
		}
		all, keep, diags := read(false)
		var want []string
		for _, l := range all {
			var th int
			var k uint64
			fmt.Sscanf(l, "%d %d", &th, &k)
			if b := keep[th]; k >= b[0][0] && k < b[0][1] || k >= b[1][0] && k < b[1][1] {
				_, rest, _ := strings.Cut(l[len(fmt.Sprint(th))+1:], " ")
				want = append(want, fmt.Sprintf("%d %d %s", th, -1, rest))
			}
		}
		got, _, gotDiags := read(true)
		if len(want) == 0 || len(want) >= len(all) || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("compression %v: %d events of %d with only the ends:\n%s\nwant %d:\n%s", c, len(got), len(all), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
		}
		if gotDiags != diags {
			t.Errorf("compression %v: diagnostics %s, want %s", c, gotDiags, diags)
		}
		// A last block (or a first) that fails its second read: what it
		// held is lost, as in a full read, and nothing of the blocks left
		// out.
		for _, which := range []string{"first", "last"} {
			lost := func(ends bool) uint64 {
				d := bytes.Clone(data)
				r, err := NewRankReader(bytes.NewReader(d), "x")
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				c0 := r.cursors[0]
				b := &r.blocks[c0.blocks[0]]
				if which == "last" {
					b = &r.blocks[c0.blocks[len(c0.blocks)-1]]
				}
				d[b.off+spec.BlockHeaderSize+int64(b.f.stored)/2] ^= 0x10 // changed after the scan
				if ends {
					r.OnlyEnds()
				}
				var n uint64
				for r.Next() {
					n += r.Lost().Events
				}
				return n + r.Lost().Events
			}
			if full, ends := lost(false), lost(true); full == 0 || ends != full {
				t.Errorf("compression %v: the %s block of thread 0 changed: %d events lost reading its ends, %d reading it all", c, which, ends, full)
			}
		}
	}
}
