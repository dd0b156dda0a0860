package tracefmt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"

	"github.com/klauspost/compress/zstd"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// ReaderOptions configure a RankReader. The zero value is the default.
type ReaderOptions struct {
	// MaxBlockSize bounds every block's stored and raw sizes: a frame
	// claiming more is treated as corrupt. 0 means spec.MaxBlockSize, which
	// is also the largest value honoured. Fuzzing lowers it to keep memory
	// small.
	MaxBlockSize int
	// BudgetFloor and MaxRatio bound the decompressed bytes the reader
	// holds at once — the current events block of every recorder thread
	// while it merges them by time, or a header or strings block — to
	// BudgetFloor + MaxRatio × the file's size: what a file can justify. A
	// block beyond it is skipped with a data-loss diagnostic
	// (CodeOverBudget). 0 means DefaultBudgetFloor (at most MaxBlockSize)
	// and DefaultMaxRatio.
	BudgetFloor int
	MaxRatio    int
}

const (
	// DefaultMaxRatio is the compression ratio a file's budget for
	// decompressed blocks allows: real recordings' blocks compress up to
	// 34 times, polling loops best (docs/performance.md); zstd's
	// run-length blocks reach 30000.
	DefaultMaxRatio = 256
	// DefaultBudgetFloor is the budget of even the smallest file: a block
	// as large as the recorder's largest buffer always fits.
	DefaultBudgetFloor = 16 << 20
	// eventsFloor is the floor of a file's budget for all its events
	// blocks together (at most BudgetFloor): a recording whose events
	// decompress to more compresses at most 34 times, well within
	// MaxRatio × its size.
	eventsFloor = 1 << 20
)

// RankReader decodes one rank file. See the package documentation for the
// two passes. Opening the file runs the first pass, so Header, Strings, End
// and most Diagnostics are known before the first event. Events are then
// read with Next and Event:
//
//	r, err := tracefmt.OpenRank(path)
//	if err != nil { ... }
//	defer r.Close()
//	for r.Next() {
//		ev := r.Event()
//		...
//	}
//	if err := r.Err(); err != nil { ... }   // I/O errors only
//	for _, d := range r.Diagnostics().All() { ... }
//
// Events come in per-rank order: a single thread's events in file order;
// several threads' streams merged by start time, ties broken by thread
// index. Damaged input never stops the reader: what cannot be used is
// skipped and reported as a Diagnostic. A RankReader is not safe for
// concurrent use; decode different ranks in different goroutines.
type RankReader struct {
	name     string
	ra       io.ReaderAt
	size     int64
	closer   io.Closer
	onRead   func(n int) // Trace.OnRead, told of each events block loaded
	maxBlock int

	version uint16
	kinds   *[spec.NumKinds]*kindInfo // the kinds of this version; nil: not in it
	// header and strings are allocated apart from the reader: whoever
	// keeps them (Header, Strings) does not keep the reader.
	header      *Header
	hdrOK       bool
	hdrErr      string
	strings     *Strings
	stringsFull bool
	end         *End
	afterEnd    bool
	diags       Diagnostics
	pending     []Pending // every pending block, in file order
	sites       Sites     // from the Site and Map events read so far
	unfinished  []Pending // per thread, the last call that never returned

	blocks  []eventsBlock
	threads []int
	cursors []*cursor
	heap    []*cursor
	cur     *cursor
	started bool
	ended   bool
	err     error

	// Losses (see Lost): loss gathers the events lost since the last event
	// delivered, curLoss is the current event's (or, at the end, the
	// trailing one), endMissing what the end record counts beyond the
	// blocks, placed where the first thread's stream ends.
	loss, curLoss Loss
	endMissing    uint64

	dec     *zstd.Decoder
	sdec    *zstd.Decoder
	cbuf    []byte
	scanBuf []byte // for findSync
	rawBuf  []byte // the first pass's decompressed header, strings and end blocks
	// pfxFrame is the first pass's frame of an events block's first zstd
	// blocks, to read the block's prefix from (see prefixFrame).
	pfxFrame []byte
	pfx      [maxEventsPrefix]byte
	budget   int64 // bytes of damage the first pass may still scan

	// rawBudget bounds rawHeld, the decompressed bytes held at once: the
	// capacity of rawBuf, spare and every cursor's buffer (see reserve).
	rawBudget, rawHeld int64
	// spool, when not nil, holds the decompressed events blocks (SpoolTo).
	spool *Spool
	// eventsBudget bounds eventsRaw, the decompressed bytes of all the
	// events blocks kept by the first pass: a file yields no more events
	// than its size justifies, whatever it claims. over counts the
	// blocks past it, from the first (its index idx, at offset off),
	// their decompressed bytes and their events.
	eventsBudget, eventsRaw int64
	over                    struct {
		blocks, events uint64
		idx            int
		off, raw       int64
	}
	// Storage given up by the threads whose stream ended, for the others:
	// a thread after another costs no new allocation.
	spare            []byte
	spareRanks       []int64
	spareReqs        []uint64
	spareValues      []uint64
	spareCompletions []Completion
}

// eventsBlock is the first pass's record of one events block.
type eventsBlock struct {
	index      int   // block index in the file
	off        int64 // offset of the frame
	f          frame
	thread     int
	seq, count uint64
	base       int64
	prefix     int // length of the thread..base prefix in the raw payload
}

// OpenRank opens and scans a rank file. Close releases it.
// Only regular files are read (see openRegular).
func OpenRank(path string) (*RankReader, error) {
	return openRank(path, nil)
}

// openRank is OpenRank telling onRead, when not nil, how far the reader
// got (see Trace.OnRead).
func openRank(path string, onRead func(n int)) (*RankReader, error) {
	f, size, err := rankFiles.openPooled(path)
	if err != nil {
		return nil, err
	}
	r, err := newRankReader(f, size, path, ReaderOptions{})
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	if onRead != nil {
		r.onRead = onRead
		rest := r.size
		for i := range r.blocks {
			rest -= spec.BlockHeaderSize + int64(r.blocks[i].f.stored)
		}
		onRead(int(rest))
	}
	return r, nil
}

// NewRankReader scans a rank file read from r; name (a path) is used in
// errors and diagnostics. When r is an io.ReaderAt whose size is known (it
// has a Size method, like *bytes.Reader and *io.SectionReader, or is an
// io.Seeker) blocks are read from it on demand; any other reader is read into
// memory first.
func NewRankReader(r io.Reader, name string) (*RankReader, error) {
	return NewRankReaderWith(r, name, ReaderOptions{})
}

// NewRankReaderWith is NewRankReader with options.
func NewRankReaderWith(r io.Reader, name string, o ReaderOptions) (*RankReader, error) {
	if ra, ok := r.(io.ReaderAt); ok {
		if size, ok := sizeOf(r); ok {
			return newRankReader(ra, size, name, o)
		}
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return newRankReader(bytes.NewReader(data), int64(len(data)), name, o)
}

func sizeOf(r io.Reader) (int64, bool) {
	switch v := r.(type) {
	case interface{ Size() int64 }:
		return v.Size(), true
	case *os.File:
		st, err := v.Stat()
		if err != nil || !st.Mode().IsRegular() {
			return 0, false
		}
		return st.Size(), true
	case io.Seeker:
		cur, err := v.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, false
		}
		end, err := v.Seek(0, io.SeekEnd)
		if _, err2 := v.Seek(cur, io.SeekStart); err != nil || err2 != nil {
			return 0, false
		}
		return end, true
	}
	return 0, false
}

// newReader returns a reader of size bytes of ra, not yet scanned.
func newReader(ra io.ReaderAt, size int64, name string, o ReaderOptions) *RankReader {
	r := &RankReader{name: name, ra: ra, size: size, maxBlock: spec.MaxBlockSize, header: &Header{Rank: -1}, strings: new(Strings)}
	if o.MaxBlockSize > 0 && o.MaxBlockSize < spec.MaxBlockSize {
		r.maxBlock = o.MaxBlockSize
	}
	floor, ratio := int64(min(DefaultBudgetFloor, r.maxBlock)), int64(DefaultMaxRatio)
	if o.BudgetFloor > 0 {
		floor = int64(o.BudgetFloor)
	}
	if o.MaxRatio > 0 {
		ratio = int64(o.MaxRatio)
	}
	r.rawBudget = floor + min(ratio, math.MaxInt64/max(size, 1)/2)*size
	r.eventsBudget = min(floor, eventsFloor) + min(ratio, math.MaxInt64/max(size, 1)/2)*size
	return r
}

func newRankReader(ra io.ReaderAt, size int64, name string, o ReaderOptions) (*RankReader, error) {
	r := newReader(ra, size, name, o)
	if err := r.readFileHeader(); err != nil {
		return nil, err
	}
	r.dec = decoderPool.Get().(*zstd.Decoder)
	r.sdec = streamDecoderPool.Get().(*zstd.Decoder)
	err := r.scan(false)
	r.unreserve(r.rawBuf)
	r.rawBuf = nil
	r.endScan()
	if err != nil {
		r.release()
		return nil, err
	}
	if !r.hdrOK {
		r.release()
		return nil, r.missingHeader()
	}
	r.finishScan()
	return r, nil
}

// ReadHeader reads only the header of a rank file: the magic, the version
// and the first valid header block. It is much cheaper than OpenRank. Only
// regular files are read.
func ReadHeader(path string) (Header, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return Header{}, err
	}
	defer f.Close()
	return readHeader(f, size, path, ReaderOptions{})
}

// readHeader is ReadHeader on any io.ReaderAt.
func readHeader(ra io.ReaderAt, size int64, name string, o ReaderOptions) (Header, error) {
	r := newReader(ra, size, name, o)
	if err := r.readFileHeader(); err != nil {
		return Header{}, err
	}
	r.dec = decoderPool.Get().(*zstd.Decoder)
	defer r.release()
	if err := r.scan(true); err != nil {
		return Header{}, err
	}
	if !r.hdrOK {
		return Header{}, r.missingHeader()
	}
	return *r.header, nil
}

func (r *RankReader) missingHeader() error {
	if r.hdrErr != "" {
		return brokenf("%s: no usable header block: %s", r.name, r.hdrErr)
	}
	return brokenf("%s: no header block (the file holds no complete block)", r.name)
}

// release returns the zstd decoders to their pools.
func (r *RankReader) release() {
	if r.dec != nil {
		decoderPool.Put(r.dec)
		r.dec = nil
	}
	if r.sdec != nil {
		r.sdec.Reset(nil)
		streamDecoderPool.Put(r.sdec)
		r.sdec = nil
	}
}

// Close releases the reader's resources and closes the file OpenRank opened.
func (r *RankReader) Close() error {
	r.release()
	r.cursors, r.heap, r.cur = nil, nil, nil
	r.cbuf, r.scanBuf, r.rawBuf, r.pfxFrame, r.blocks = nil, nil, nil, nil, nil
	r.spare, r.spareRanks, r.spareReqs, r.spareCompletions, r.spareValues = nil, nil, nil, nil, nil
	r.rawHeld = 0
	if r.closer != nil {
		err := r.closer.Close()
		r.closer = nil
		return err
	}
	return nil
}

// Name returns the file name given when opening.
func (r *RankReader) Name() string { return r.name }

// Rank returns the world rank from the header.
func (r *RankReader) Rank() int { return r.header.Rank }

// Version returns the file's format version.
func (r *RankReader) Version() uint16 { return r.version }

// Header returns the header block.
func (r *RankReader) Header() *Header { return r.header }

// Strings returns the string table (all strings blocks of the file).
func (r *RankReader) Strings() *Strings { return r.strings }

// End returns the end record, or nil when the file has none.
func (r *RankReader) End() *End { return r.end }

// Pending returns the file's pending blocks, in file order.
func (r *RankReader) Pending() []Pending { return r.pending }

// Unfinished returns, per thread, the MPI call that began and never
// returned in the log (its last pending block without an event), in thread
// order: where a rank hung, or was stopped.
func (r *RankReader) Unfinished() []Pending { return r.unfinished }

// Threads returns the thread indices that have events blocks, sorted.
func (r *RankReader) Threads() []int { return r.threads }

// Diagnostics returns the problems found so far: by the first pass when the
// reader is opened, and by Next as blocks are decoded.
func (r *RankReader) Diagnostics() *Diagnostics { return &r.diags }

// Err returns the I/O error that stopped Next, if any. Damaged data is never
// an error here; it is a diagnostic.
func (r *RankReader) Err() error { return r.err }

// Event returns the current event, valid until the next call to Next; nil
// before the first call to Next or after Next returned false.
func (r *RankReader) Event() *Event {
	if r.cur == nil {
		return nil
	}
	return &r.cur.ev
}

func (r *RankReader) diag(sev Severity, code string, block int, off int64, format string, args ...any) {
	r.diags.Add(Diagnostic{Severity: sev, Code: code, Rank: r.header.Rank, File: r.name, Block: block, Offset: off,
		Message: fmt.Sprintf(format, args...)})
}

// readAt reads len(p) bytes at off.
func (r *RankReader) readAt(p []byte, off int64) error {
	n, err := r.ra.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%s: reading %d bytes at offset %d: %w", r.name, len(p), off, err)
}

func (r *RankReader) readFileHeader() error {
	var b [fileHeaderSize]byte
	n, err := r.ra.ReadAt(b[:], 0)
	if err != nil && err != io.EOF && n < len(b) {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: empty file: %w", r.name, ErrNotMpitrace)
	}
	if n < len(spec.Magic) || string(b[:len(spec.Magic)]) != spec.Magic {
		return fmt.Errorf("%s: %w", r.name, ErrNotMpitrace)
	}
	if n < fileHeaderSize {
		return brokenf("%s: the file ends inside its format version", r.name)
	}
	r.version = binary.LittleEndian.Uint16(b[len(spec.Magic):])
	if !spec.Supported(r.version) {
		return &VersionError{File: r.name, Version: r.version}
	}
	r.header.Version = r.version
	r.kinds = kindPtrsOf(r.version)
	return nil
}

var syncBytes = binary.LittleEndian.AppendUint32(nil, spec.BlockSync)

// findSync returns the offset of the next block sync marker at or after
// from, or -1. The bytes scanned are charged to the damage budget.
func (r *RankReader) findSync(from int64) (int64, error) {
	const chunk = 64 << 10
	if r.scanBuf == nil {
		r.scanBuf = make([]byte, chunk+len(syncBytes)-1)
	}
	buf := r.scanBuf
	for off := from; off < r.size; off += chunk {
		n := min(int64(len(buf)), r.size-off)
		if err := r.readAt(buf[:n], off); err != nil {
			return -1, err
		}
		if i := bytes.Index(buf[:n], syncBytes); i >= 0 {
			r.budget -= int64(i)
			return off + int64(i), nil
		}
		r.budget -= min(chunk, n)
	}
	return -1, nil
}

// syncAt reports whether a block sync marker is at off.
func (r *RankReader) syncAt(off int64) bool {
	var b [4]byte
	return off+4 <= r.size && r.readAt(b[:], off) == nil && bytes.Equal(b[:], syncBytes)
}

var blockTypeNames = []string{spec.BlockHeader: "header", spec.BlockStrings: "strings", spec.BlockEvents: "events", spec.BlockEnd: "end", spec.BlockPending: "pending"}

func blockTypeName(t uint8) string {
	if int(t) < len(blockTypeNames) && blockTypeNames[t] != "" {
		return blockTypeNames[t]
	}
	return fmt.Sprintf("type-%d", t)
}

// scan is the first pass: it walks the block frames, checks the CRCs,
// decodes the header, strings and end blocks and indexes the events blocks.
// Damage is reported as diagnostics; only I/O errors are returned. With
// headerOnly it stops at the first valid header block.
func (r *RankReader) scan(headerOnly bool) error {
	pos := int64(fileHeaderSize)
	idx := 0
	r.budget = 4*r.size + 1<<20
	var hb [spec.BlockHeaderSize]byte
	// resync continues at the next sync marker after from; it reports
	// whether there is one.
	resync := func(from int64) (bool, error) {
		next, err := r.findSync(from)
		if err != nil {
			return false, err
		}
		if r.budget < 0 {
			r.diag(Error, CodeUnrecognisedBytes, -1, from, "too much damage: the rest of the file (%d bytes) is not read", r.size-from)
			return false, nil
		}
		if next < 0 {
			r.diag(DataLoss, CodeUnrecognisedBytes, -1, from, "%d bytes at the end of the file are not a block; skipped", r.size-from)
			return false, nil
		}
		pos = next
		return true, nil
	}
	for pos < r.size {
		if r.size-pos < spec.BlockHeaderSize {
			r.diag(DataLoss, CodeTruncatedBlock, idx, pos, "the file ends %d bytes into a block frame: the rank stopped while writing it; every block before it is read", r.size-pos)
			break
		}
		if err := r.readAt(hb[:], pos); err != nil {
			return err
		}
		f, ok := parseFrame(hb[:])
		if !ok {
			start := pos
			more, err := resync(pos)
			if err != nil {
				return err
			}
			if !more {
				break
			}
			r.diag(DataLoss, CodeUnrecognisedBytes, -1, start, "%d bytes that are not a block skipped (resuming at the block sync marker at offset %d)", pos-start, pos)
			continue
		}
		if err := f.check(r.maxBlock, spec.MaxBlockType(r.version)); err != nil {
			r.diag(DataLoss, CodeBadFrame, idx, pos, "bad block frame: %v; looking for the next block", err)
			idx++
			if more, err := resync(pos + 1); err != nil {
				return err
			} else if !more {
				break
			}
			continue
		}
		end := pos + spec.BlockHeaderSize + int64(f.stored)
		if end > r.size {
			next, err := r.findSync(pos + spec.BlockHeaderSize)
			if err != nil {
				return err
			}
			if next >= 0 && r.budget >= 0 {
				r.diag(DataLoss, CodeBadFrame, idx, pos, "%s block's stored size %d runs past the end of the file, yet a block follows at offset %d: the size is damaged; resuming there", blockTypeName(f.typ), f.stored, next)
				idx++
				pos = next
				continue
			}
			r.diag(DataLoss, CodeTruncatedBlock, idx, pos, "truncated %s block: the file ends %d bytes into its %d-byte payload (the rank stopped while writing it); every block before it is read", blockTypeName(f.typ), r.size-pos-spec.BlockHeaderSize, f.stored)
			break
		}
		if headerOnly && f.typ != spec.BlockHeader {
			idx++
			pos = end
			continue
		}
		payload, err := r.readPayload(pos, f)
		if err != nil {
			return err
		}
		if crc := crc32.Update(crcStart(hb[:]), castagnoli, payload); crc != f.crc {
			r.budget -= int64(f.stored)
			if end == r.size || r.syncAt(end) {
				r.diag(DataLoss, CodeCRCMismatch, idx, pos, "%s block checksum mismatch (frame says %08x, payload gives %08x): block skipped", blockTypeName(f.typ), f.crc, crc)
				idx++
				pos = end
				continue
			}
			r.diag(DataLoss, CodeCRCMismatch, idx, pos, "%s block checksum mismatch (frame says %08x, payload gives %08x) and no block follows it: its frame is damaged; looking for the next block", blockTypeName(f.typ), f.crc, crc)
			idx++
			if more, err := resync(pos + 1); err != nil {
				return err
			} else if !more {
				break
			}
			continue
		}
		r.block(idx, pos, f, payload)
		idx++
		pos = end
		if headerOnly && r.hdrOK {
			return nil
		}
	}
	return nil
}

// readPayload reads a block's stored payload into the reader's scratch.
func (r *RankReader) readPayload(off int64, f frame) ([]byte, error) {
	n := int(f.stored)
	if r.cbuf == nil {
		r.cbuf = getPayloadBuf()
	}
	if cap(r.cbuf) < n {
		r.cbuf = make([]byte, n)
	}
	p := r.cbuf[:n]
	return p, r.readAt(p, off+spec.BlockHeaderSize)
}

// rawPayload decompresses the payload of a header, strings or end block
// into rawBuf.
func (r *RankReader) rawPayload(f frame, payload []byte) ([]byte, error) {
	if f.codec == spec.CodecNone {
		return payload, nil
	}
	buf, ok := r.reserve(r.rawBuf, int(f.raw)+rawSlack)
	if !ok {
		return nil, r.overBudget(f)
	}
	out, err := decompress(r.dec, payload, int(f.raw), buf)
	r.rawBuf = out
	return out, err
}

// reserve returns buf emptied with room for n bytes, or false when the
// decompressed bytes the reader holds (rawHeld, which counts buf) would
// pass its budget. A larger buffer replaces buf, growing geometrically
// within the budget, so that blocks of growing sizes allocate at most
// twice what the budget allows.
func (r *RankReader) reserve(buf []byte, n int) ([]byte, bool) {
	if cap(buf) >= n {
		return buf[:0], true
	}
	if cap(r.spare) >= n {
		buf, r.spare = r.spare, buf // both stay held
		return buf[:0], true
	}
	r.unreserve(r.spare)
	r.spare = nil
	others := r.rawHeld - int64(cap(buf))
	room := r.rawBudget - others
	if int64(n) > room {
		return buf, false
	}
	c := max(int64(n), min(2*int64(cap(buf)), room, int64(r.maxBlock)+rawSlack))
	r.rawHeld = others + c
	return make([]byte, 0, c), true
}

// unreserve gives up buf's storage.
func (r *RankReader) unreserve(buf []byte) { r.rawHeld -= int64(cap(buf)) }

// retire keeps the storage of a cursor whose stream ended for the other
// threads: the larger of its buffer and the spare, and likewise its lists.
func (r *RankReader) retire(c *cursor) {
	if c.src != nil {
		c.buf, c.win, c.src = nil, nil, nil // a window, not reserved
	}
	if cap(c.buf) > cap(r.spare) {
		r.spare, c.buf = c.buf, r.spare
	}
	r.unreserve(c.buf)
	c.buf = nil
	ev := &c.ev
	ev.Ranks, r.spareRanks = nil, larger(ev.Ranks, r.spareRanks)
	ev.Reqs, r.spareReqs = nil, larger(ev.Reqs, r.spareReqs)
	ev.Completions, r.spareCompletions = nil, larger(ev.Completions, r.spareCompletions)
	ev.Values, r.spareValues = nil, larger(ev.Values, r.spareValues)
}

func larger[T any](a, b []T) []T {
	if cap(a) > cap(b) {
		return a
	}
	return b
}

// overBudget describes a block that does not fit the reader's budget for
// decompressed bytes.
func (r *RankReader) overBudget(f frame) error {
	return &budgetError{fmt.Sprintf("%s block of %d bytes (%d stored) would take the decompressed blocks held at once past this %d-byte file's budget of %d bytes",
		blockTypeName(f.typ), f.raw, f.stored, r.size, r.rawBudget)}
}

type budgetError struct{ msg string }

func (e *budgetError) Error() string { return e.msg }

// block handles one checked block of the first pass.
func (r *RankReader) block(idx int, off int64, f frame, payload []byte) {
	if r.end != nil && !r.afterEnd && f.typ != spec.BlockEnd {
		r.afterEnd = true
		r.diag(Warning, CodeDataAfterEnd, idx, off, "%s block after the end record (the end record is the recorder's last write)", blockTypeName(f.typ))
	}
	if f.typ == spec.BlockEvents {
		r.indexEvents(idx, off, f, payload)
		return
	}
	raw, err := r.rawPayload(f, payload)
	if err != nil {
		code, msg := CodeUndecodableBlock, fmt.Sprintf("decompressing %s block: %v", blockTypeName(f.typ), err)
		if errors.As(err, new(*budgetError)) {
			code, msg = CodeOverBudget, err.Error()+": block skipped"
		}
		if f.typ == spec.BlockHeader && !r.hdrOK {
			r.hdrErr = fmt.Sprintf("block %d at offset %d: %s", idx, off, msg)
		}
		r.diag(DataLoss, code, idx, off, "%s", msg)
		return
	}
	pr := &payloadReader{b: raw}
	switch f.typ {
	case spec.BlockHeader:
		if r.hdrOK {
			r.diag(Warning, CodeDuplicateHeader, idx, off, "second header block ignored")
			return
		}
		n := pr.count("header.count", 2)
		if n > maxHeaderKeys {
			pr.fail("header.count", fmt.Errorf("%d keys, more than %d", n, maxHeaderKeys))
		}
		h := Header{Version: r.version, Meta: make([]KeyValue, 0, min(n, 64))}
		for i := 0; i < n && pr.err == nil; i++ {
			k := pr.str(fmt.Sprintf("header[%d].key", i))
			v := pr.str(fmt.Sprintf("header[%d].value", i))
			h.Meta = append(h.Meta, KeyValue{k, v})
		}
		if pr.err != nil {
			r.hdrErr = fmt.Sprintf("block %d at offset %d: decoding %s: %v", idx, off, pr.what, pr.err)
			r.diag(Error, CodeUndecodableBlock, idx, off, "decoding %s: %v", pr.what, pr.err)
			return
		}
		if err := h.parseMeta(); err != nil {
			r.hdrErr = fmt.Sprintf("block %d at offset %d: %v", idx, off, err)
			r.diag(Error, CodeUndecodableBlock, idx, off, "invalid header: %v", err)
			return
		}
		*r.header = h
		r.hdrOK = true
	case spec.BlockStrings:
		n := pr.count("strings.count", 2)
		for i := 0; i < n && pr.err == nil; i++ {
			id := pr.uvarint(fmt.Sprintf("strings[%d].id", i))
			s := pr.str(fmt.Sprintf("strings[%d].string", i))
			if pr.err != nil {
				break
			}
			if r.strings.bytes+len(s) > maxStringBytes || r.strings.Len() >= maxStrings {
				if !r.stringsFull {
					r.stringsFull = true
					r.diag(DataLoss, CodeStringTableFull, idx, off, "string table exceeds %d strings or %d bytes; further strings ignored", maxStrings, maxStringBytes)
				}
				continue
			}
			if err := r.strings.Define(id, s); err != nil {
				r.diag(Warning, CodeDuplicateString, idx, off, "%v; the first definition is kept", err)
			}
		}
		if pr.err != nil {
			r.diag(DataLoss, CodeUndecodableBlock, idx, off, "decoding %s: %v; the block's remaining strings are lost", pr.what, pr.err)
		}
	case spec.BlockEnd:
		if r.end != nil {
			r.diag(Warning, CodeDuplicateEnd, idx, off, "second end record ignored")
			return
		}
		var e End
		e.Reason = pr.uvarint("end.reason")
		e.Signal = pr.uvarint("end.signal")
		e.Events = pr.uvarint("end.events")
		e.Blocks = pr.uvarint("end.blocks")
		e.Time = int64(pr.uvarint("end.time"))
		e.Dropped = pr.uvarint("end.dropped")
		if spec.EndFields(r.version) > 6 {
			e.Code = pr.uvarint("end.code")
			e.Fn = pr.uvarint("end.fn")
			e.Message = pr.str("end.message")
		}
		if pr.err != nil {
			r.diag(DataLoss, CodeUndecodableBlock, idx, off, "decoding %s: %v", pr.what, pr.err)
			return
		}
		r.end = &e
	case spec.BlockPending:
		p, err := decodePending(pr)
		if err != nil {
			r.diag(DataLoss, CodeUndecodableBlock, idx, off, "%v", err)
			return
		}
		r.pending = append(r.pending, p)
	}
}

// maxStringBytes and maxStrings bound a rank's string table: the recorder
// names the MPI functions a rank called, a few hundred.
const (
	maxStringBytes = spec.MaxBlockSize
	maxStrings     = 1 << 18
)

// maxHeaderKeys bounds a header block's keys (the recorder writes 14).
const maxHeaderKeys = 1 << 16

// indexEvents reads the prefix of an events block (thread, seq, count, base)
// and records the block for the second pass.
func (r *RankReader) indexEvents(idx int, off int64, f frame, payload []byte) {
	n := min(int(f.raw), maxEventsPrefix)
	var pfx []byte
	if f.codec == spec.CodecNone {
		pfx = payload[:n]
	} else {
		var h zstd.Header
		err := h.Decode(payload)
		if err == nil && h.HasFCS && h.FrameContentSize != uint64(f.raw) {
			err = fmt.Errorf("zstd frame holds %d bytes, the block frame says %d", h.FrameContentSize, f.raw)
		}
		if err == nil {
			r.pfxFrame, err = prefixFrame(r.pfxFrame, payload, &h)
		}
		if err == nil {
			err = r.sdec.Reset(bytes.NewReader(r.pfxFrame))
		}
		if err == nil {
			_, err = io.ReadFull(r.sdec, r.pfx[:n])
		}
		if err != nil {
			r.diag(DataLoss, CodeUndecodableBlock, idx, off, "decompressing events block: %v; block skipped", err)
			return
		}
		pfx = r.pfx[:n]
	}
	b := eventsBlock{index: idx, off: off, f: f}
	pr := &payloadReader{b: pfx}
	thread := pr.uvarint("events.thread")
	b.seq = pr.uvarint("events.seq")
	b.count = pr.uvarint("events.count")
	b.base = int64(pr.uvarint("events.base"))
	if pr.err != nil {
		r.diag(DataLoss, CodeUndecodableBlock, idx, off, "decoding %s: %v; block skipped", pr.what, pr.err)
		return
	}
	b.prefix = pr.p
	switch {
	case thread > math.MaxInt32:
		r.diag(DataLoss, CodeUndecodableBlock, idx, off, "decoding events.thread: thread index %d out of range; block skipped", thread)
		return
	case b.count > uint64(int(f.raw)-b.prefix)/uint64(minEventSize):
		r.diag(DataLoss, CodeUndecodableBlock, idx, off, "decoding events.count: %d events cannot fit in %d bytes; block skipped", b.count, int(f.raw)-b.prefix)
		return
	case b.seq > math.MaxUint64-b.count:
		r.diag(DataLoss, CodeUndecodableBlock, idx, off, "decoding events.seq: seq %d + count %d overflows; block skipped", b.seq, b.count)
		return
	}
	b.thread = int(thread)
	if r.over.blocks > 0 || int64(f.raw) > r.eventsBudget-r.eventsRaw {
		// Past the file's budget: this block and every later one are
		// skipped (one diagnostic, at the end of the scan).
		if r.over.blocks == 0 {
			r.over.idx, r.over.off = idx, off
		}
		r.over.blocks++
		r.over.events += b.count
		r.over.raw += int64(f.raw)
		return
	}
	r.eventsRaw += int64(f.raw)
	r.blocks = append(r.blocks, b)
}

// finishScan checks what the first pass found as a whole (sequence numbers,
// end record) and prepares the per-thread cursors.
func (r *RankReader) finishScan() {
	// Diagnostics found before the header know no rank yet.
	for i := range r.diags.list {
		if r.diags.list[i].Rank < 0 {
			r.diags.list[i].Rank = r.header.Rank
		}
	}
	if o := &r.over; o.blocks > 0 {
		r.diag(DataLoss, CodeOverBudget, o.idx, o.off, "%d events blocks from this one on (%d bytes decompressed) would take this %d-byte file's events past its budget of %d decompressed bytes (%d kept): skipped; %s lost",
			o.blocks, o.raw, r.size, r.eventsBudget, r.eventsRaw, nEvents(o.events))
	}
	byThread := make(map[int][]int)
	for i := range r.blocks {
		t := r.blocks[i].thread
		if _, ok := byThread[t]; !ok {
			r.threads = append(r.threads, t)
		}
		byThread[t] = append(byThread[t], i)
	}
	slices.Sort(r.threads)
	var counted uint64
	covered := make(map[int]uint64, len(r.threads))
	for _, t := range r.threads {
		var expect uint64
		for _, bi := range byThread[t] {
			b := &r.blocks[bi]
			switch {
			case b.seq > expect:
				r.diag(DataLoss, CodeSeqGap, b.index, b.off, "thread %d: %s lost before this block (it starts at seq %d, the thread's previous block ended at %d)", t, nEvents(b.seq-expect), b.seq, expect)
			case b.seq < expect:
				r.diag(Warning, CodeSeqOverlap, b.index, b.off, "thread %d: block starts at seq %d, before the end (%d) of the thread's previous block", t, b.seq, expect)
			}
			expect = b.seq + b.count
		}
		counted += expect
		covered[t] = expect
		r.cursors = append(r.cursors, &cursor{r: r, thread: t, blocks: byThread[t], ev: Event{Thread: t}})
	}
	r.unfinished = unfinished(r.pending, covered)
	last := int64(0)
	if r.end != nil {
		last = r.end.Time
	}
	r.reportUnfinished(last)
	if r.end == nil {
		r.diag(DataLoss, CodeMissingEnd, -1, -1, "no end record: the rank stopped before its final flush (killed, or still running); every complete block is read")
		return
	}
	e := r.end
	if e.Dropped > 0 {
		r.diag(DataLoss, CodeDroppedEvents, -1, -1, "the recorder dropped %s (counted in its end record)", nEvents(e.Dropped))
	}
	switch e.Reason {
	case spec.EndFinalize:
	case spec.EndSignal:
		r.diag(Warning, CodeAbnormalEnd, -1, -1, "the rank ended on signal %d", e.Signal)
	case spec.EndAbort:
		r.diag(Warning, CodeAbnormalEnd, -1, -1, "the rank called MPI_Abort (error code %d)", e.Code)
	case spec.EndMPIError:
		r.diag(Warning, CodeAbnormalEnd, -1, -1, "the rank ended by an MPI error%s: %s (error class %d)", r.inFn(e.Fn), firstLine(e.Message), e.Code)
	case spec.EndExit:
		// A process recorded without MPI (no MPI, or MPI_Init never
		// called: its header has no mpi_library) ends by exit.
		if _, mpi := r.header.Get(KeyMPILibrary); mpi {
			r.diag(Warning, CodeAbnormalEnd, -1, -1, "the rank ended by %s, not after MPI_Finalize", e.ReasonString())
		}
	default:
		r.diag(Warning, CodeAbnormalEnd, -1, -1, "the rank ended by %s, not after MPI_Finalize", e.ReasonString())
	}
	switch {
	case e.Events > counted:
		r.endMissing = e.Events - counted
		r.diag(DataLoss, CodeEventsMissing, -1, -1, "the end record counts %d events, the file's blocks account for %d: %s lost", e.Events, counted, nEvents(e.Events-counted))
	case e.Events < counted:
		r.diag(Warning, CodeEventCountHigh, -1, -1, "the end record counts %d events, but the file's blocks account for %d", e.Events, counted)
	}
}

// OnlyEnds makes each thread's stream hold only its first and its last
// events blocks: the blocks between are left out, neither delivered nor
// counted lost (nor diagnosed when they would fail to load; what the two
// blocks lose is counted). It is for a reader of what a log says at its
// start and at its end (its clock synchronisations) without reading it
// all. Call it before the first Next.
func (r *RankReader) OnlyEnds() {
	for _, c := range r.cursors {
		if n := len(c.blocks); n > 2 && c.bi == 0 && c.blk == nil {
			c.blocks = []int{c.blocks[0], c.blocks[n-1]}
			c.ends = true
		}
	}
}

// cursor decodes one thread's events, one block at a time.
type cursor struct {
	r      *RankReader
	thread int
	blocks []int // indices into r.blocks, file order
	bi     int   // next block to load
	// ends: the blocks between the first and the last were left out
	// (RankReader.OnlyEnds), not lost.
	ends    bool
	blk     *eventsBlock
	buf     []byte // raw payload of the current block (a window of it, spooling)
	pos     int    // in buf
	left    uint64 // events left in the current block
	n       uint64 // events decoded from the current block
	prevEnd int64
	ev      Event
	// expect is the seq of the thread's next event, as far as the blocks
	// before the current one tell; lost counts the events found lost
	// since the thread's last event (see Lost).
	expect uint64
	lost   Loss

	// winBase is buf's place in the block, rawLen the block's raw length
	// (0 and len(buf) unless spooling). Spooling (RankReader.SpoolTo),
	// buf is a window (win's storage) of the block read from src at
	// srcOff, moved on once pos passes refillAt (math.MaxInt: never).
	winBase, rawLen int
	refillAt        int
	win             []byte
	src             io.ReaderAt
	srcOff          int64
}

// lose records n events of the thread lost before block (an index in the
// file, -1 at the end of the thread's stream).
func (c *cursor) lose(n uint64, block int) {
	c.lost.add(Loss{Events: n, Thread: c.thread, Block: block})
}

// load decodes the thread's next usable block; false at the end.
func (c *cursor) load() bool {
	r := c.r
	if c.blk != nil {
		c.expect = c.blk.seq + c.n
	}
	for c.bi < len(c.blocks) {
		b := &r.blocks[c.blocks[c.bi]]
		c.bi++
		if r.spool != nil {
			if !c.spoolBlock(b) {
				if r.err != nil {
					return false
				}
				continue
			}
			if r.onRead != nil {
				r.onRead(spec.BlockHeaderSize + int(b.f.stored))
			}
			c.start(b)
			return true
		}
		buf, ok := r.reserve(c.buf, int(b.f.raw)+rawSlack)
		if !ok {
			r.diag(DataLoss, CodeOverBudget, b.index, b.off, "thread %d: %v: block skipped; %s lost", c.thread, r.overBudget(b.f), nEvents(b.count))
			continue
		}
		c.buf = buf
		payload, ok := r.eventsPayload(b, c.buf)
		if !ok {
			if r.err != nil {
				return false
			}
			continue
		}
		if r.onRead != nil {
			r.onRead(spec.BlockHeaderSize + int(b.f.stored))
		}
		if b.f.codec == spec.CodecNone {
			c.buf = payload
		} else {
			out, err := decompressPooled(payload, int(b.f.raw), c.buf)
			c.buf = out
			r.putPayloadBuf()
			if err != nil {
				r.diag(DataLoss, CodeUndecodableBlock, b.index, b.off, "decompressing events block: %v; thread %d: %s lost", err, c.thread, nEvents(b.count))
				continue
			}
		}
		c.rawLen, c.winBase, c.refillAt = len(c.buf), 0, math.MaxInt
		c.start(b)
		return true
	}
	// The thread's stream is over: the events of its blocks not delivered
	// (blocks skipped here, a block's undecodable rest) are lost after
	// its last event, and so are those the end record counts beyond every
	// block (of some thread: they are placed where the first stream ends).
	before := -1 // the last block read: the loss is after it
	if c.blk != nil {
		before = c.blk.index
	}
	c.leftOut(before) // when the last block was not loaded
	if n := len(c.blocks); n > 0 {
		last := &r.blocks[c.blocks[n-1]]
		if end := last.seq + last.count; end > c.expect {
			c.lose(end-c.expect, before)
		}
	}
	if r.endMissing > 0 {
		c.lost.add(Loss{Events: r.endMissing, Thread: -1, Block: before})
		r.endMissing = 0
	}
	// Its storage goes to the others.
	r.retire(c)
	c.blk = nil
	return false
}

// leftOut accounts, once, for the blocks OnlyEnds left out, when the
// stream reaches its last block or ends without it (block: where a loss
// goes): they are not lost, but what the first block lost is.
func (c *cursor) leftOut(block int) {
	if !c.ends {
		return
	}
	c.ends = false
	first, last := &c.r.blocks[c.blocks[0]], &c.r.blocks[c.blocks[len(c.blocks)-1]]
	if end := first.seq + first.count; c.expect < end {
		c.lose(end-c.expect, block)
		c.expect = end
	}
	c.expect = max(c.expect, last.seq)
}

// start begins the cursor's stream of block b, loaded.
func (c *cursor) start(b *eventsBlock) {
	c.blk = b
	c.pos = b.prefix
	c.left = b.count
	c.n = 0
	c.prevEnd = b.base
	if c.ends && b == &c.r.blocks[c.blocks[len(c.blocks)-1]] {
		c.leftOut(b.index)
	}
	if b.seq > c.expect {
		c.lose(b.seq-c.expect, b.index)
	}
	c.expect = b.seq
}

// eventsPayload reads the payload of events block b again, into buf when
// it is stored uncompressed (buf has room for it), else into the reader's
// payload buffer, and checks it; false when it does not match its
// checksum (diagnosed), and with r.err set on an I/O error.
func (r *RankReader) eventsPayload(b *eventsBlock, buf []byte) ([]byte, bool) {
	var payload []byte
	if b.f.codec == spec.CodecNone {
		payload = buf[:b.f.stored]
		if err := r.readAt(payload, b.off+spec.BlockHeaderSize); err != nil {
			r.err = err
			return nil, false
		}
	} else {
		var err error
		if payload, err = r.readPayload(b.off, b.f); err != nil {
			r.err = err
			return nil, false
		}
	}
	return payload, r.checkCRC(b, payload)
}

// checkCRC reports whether the payload of events block b read again
// matches its checksum, diagnosing it when not; false with r.err set on an
// I/O error.
func (r *RankReader) checkCRC(b *eventsBlock, payload []byte) bool {
	var hb [spec.BlockHeaderSize]byte
	if err := r.readAt(hb[:], b.off); err != nil {
		r.err = err
		return false
	}
	if crc := crc32.Update(crcStart(hb[:]), castagnoli, payload); crc != b.f.crc {
		r.diag(DataLoss, CodeCRCMismatch, b.index, b.off, "events block checksum mismatch on the second read (the file changed while being read?): %s lost", nEvents(b.count))
		return false
	}
	return true
}

// next advances to the thread's next event; false at the end of its
// stream. It handles the common case, another event in the current block;
// nextSlow the rest.
func (c *cursor) next() bool {
	if c.left > 1 && c.pos < c.refillAt && c.decodeEvent() == nil {
		c.left--
		c.n++
		return true
	}
	return c.nextSlow()
}

// nextSlow is next at the end of a block, or after a decoding error.
func (c *cursor) nextSlow() bool {
	for {
		if c.left > 0 {
			if c.pos >= c.refillAt && !c.refill(false) && c.r.err != nil {
				return false
			}
			err := c.decodeEvent()
			if err != nil && c.refill(true) {
				continue // the event went past the window
			}
			if c.r.err != nil {
				return false
			}
			if err == nil {
				c.left--
				c.n++
				if at := c.winBase + c.pos; c.left == 0 && at != c.rawLen {
					c.r.diag(Warning, CodeTrailingBytes, c.blk.index, c.blk.off, "thread %d: %d bytes after the block's %d events", c.thread, c.rawLen-at, c.blk.count)
				}
				return true
			}
			c.r.diag(DataLoss, CodeUndecodableBlock, c.blk.index, c.blk.off, "%v; thread %d: the block's remaining %s lost", err, c.thread, nEvents(c.left))
			c.left = 0
		}
		if !c.load() {
			return false
		}
	}
}

// Next advances to the next event of the rank; it returns false at the end
// or on an I/O error (see Err).
func (r *RankReader) Next() bool {
	if r.err != nil || r.ended {
		r.cur = nil
		return false
	}
	r.curLoss = Loss{}
	if len(r.cursors) == 1 {
		c := r.cursors[0]
		ok := c.next()
		if c.lost.Events != 0 {
			r.takeLoss(c)
		}
		if !ok {
			return r.stop()
		}
		r.cur = c
		if r.loss.Events != 0 {
			r.curLoss, r.loss = r.loss, Loss{}
		}
		r.noteSites()
		return true
	}
	if !r.started {
		r.started = true
		for _, c := range r.cursors {
			if c.next() {
				r.heap = append(r.heap, c)
			}
			r.takeLoss(c)
		}
		for i := len(r.heap)/2 - 1; i >= 0; i-- {
			r.siftDown(i)
		}
	} else if len(r.heap) > 0 {
		c := r.heap[0]
		if c.next() {
			r.siftDown(0)
		} else {
			last := len(r.heap) - 1
			r.heap[0] = r.heap[last]
			r.heap = r.heap[:last]
			r.siftDown(0)
		}
		r.takeLoss(c)
	}
	if r.err != nil || len(r.heap) == 0 {
		return r.stop()
	}
	r.cur = r.heap[0]
	if r.loss.Events != 0 {
		r.curLoss, r.loss = r.loss, Loss{}
	}
	r.noteSites()
	return true
}

// takeLoss moves the events c found lost to the rank's pending loss.
func (r *RankReader) takeLoss(c *cursor) {
	r.loss.add(c.lost)
	c.lost = Loss{}
}

// stop ends the stream: what was lost after the last event is the
// trailing loss.
func (r *RankReader) stop() bool {
	r.cur = nil
	if r.err != nil {
		return false
	}
	if r.endMissing > 0 { // no thread's stream to place them after
		r.loss.add(Loss{Events: r.endMissing, Thread: -1, Block: -1})
		r.endMissing = 0
	}
	r.ended = true
	r.curLoss, r.loss = r.loss, Loss{}
	return false
}

// Lost returns the events lost just before the current event (see Loss for
// where a loss is placed); after Next returned false, the events lost
// after the rank's last event. Events is 0 when none were.
func (r *RankReader) Lost() Loss { return r.curLoss }

// noteSites adds the current event to the call-site table when it is a
// Site or Map event.
func (r *RankReader) noteSites() {
	if k := r.cur.ev.Kind; k == spec.SiteDef || k == spec.Map {
		r.sites.Add(&r.cur.ev, r.strings)
	}
}

// Sites returns the rank's call-site table and mappings, from the Site and
// Map events read so far: complete once Next has returned false.
func (r *RankReader) Sites() *Sites { return &r.sites }

func cursorLess(a, b *cursor) bool {
	return a.ev.Start < b.ev.Start || (a.ev.Start == b.ev.Start && a.thread < b.thread)
}

func (r *RankReader) siftDown(i int) {
	h := r.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if rr := l + 1; rr < len(h) && cursorLess(h[rr], h[l]) {
			m = rr
		}
		if !cursorLess(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

var errUnknownKind = errors.New("unknown event kind")

// nEvents formats a count of events: "1 event", "5 events".
func nEvents(n uint64) string {
	if n == 1 {
		return "1 event"
	}
	return fmt.Sprintf("%d events", n)
}
