package tracefmt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/klauspost/compress/zstd"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Compression selects the codec of the blocks a Writer writes.
type Compression uint8

const (
	// Zstd compresses every block as one zstd frame (spec.CodecZstd). It is
	// the default.
	Zstd Compression = iota
	// NoCompression stores payloads as they are (spec.CodecNone).
	NoCompression
)

// DefaultBlockSize is the events block size a Writer aims at by default.
const DefaultBlockSize = 1 << 20

// WriterOptions configure a Writer. The zero value (or nil) is the default.
type WriterOptions struct {
	Compression Compression
	// BlockSize is the uncompressed payload size at which a thread's events
	// block is written (DefaultBlockSize when 0). A block always holds at
	// least one event.
	BlockSize int
}

// Writer writes one rank file exactly as docs/format.md specifies: the magic
// and version, the header block (written by NewWriter), strings blocks,
// events blocks (one stream per thread, each with seq, count and base) and
// the end block.
//
// Events are buffered per thread and written as a block when the thread's
// buffer reaches the block size, or by Flush. Strings defined with
// DefineString are written before the next events block, so they always
// precede the events that use them.
//
// The writer derives each event's End from Start and Dur (it ignores
// Event.End). An event whose Start is not the previous event's End (of its
// thread) plus its gap begins a new block whose base makes both its Start
// and its gap hold; so any sequence of events, also one decoded from a file
// with lost blocks, is written losslessly.
//
// A Writer is not safe for concurrent use. It never closes the underlying
// io.Writer.
type Writer struct {
	w         io.Writer
	codec     uint8
	blockSize int

	threads map[int]*writerThread
	strings Strings
	// pendingStrings is the body of the next strings block and its count.
	pendingStrings []byte
	nPending       int

	events, blocks uint64
	lastTime       int64
	haveTime       bool

	scratch []byte
	comp    []byte
	err     error
	closed  bool
}

type writerThread struct {
	id      int
	seq     uint64 // seq of the buffered block's first event
	count   uint64
	base    int64
	prevEnd int64
	body    []byte
}

// maxEventsPrefix bounds the thread, seq, count and base varints.
const maxEventsPrefix = 4 * binary.MaxVarintLen64

// NewWriter writes the file header and the header block of h to w and
// returns a Writer for the rest of the file. h.Version is ignored: the
// writer produces spec.Current.
func NewWriter(w io.Writer, h *Header, opts *WriterOptions) (*Writer, error) {
	var o WriterOptions
	if opts != nil {
		o = *opts
	}
	wr := &Writer{w: w, threads: make(map[int]*writerThread)}
	switch o.Compression {
	case Zstd:
		wr.codec = spec.CodecZstd
	case NoCompression:
		wr.codec = spec.CodecNone
	default:
		return nil, fmt.Errorf("tracefmt: unknown compression %d", o.Compression)
	}
	wr.blockSize = o.BlockSize
	if wr.blockSize <= 0 {
		wr.blockSize = DefaultBlockSize
	}
	wr.blockSize = min(wr.blockSize, spec.MaxBlockSize-maxEventsPrefix)

	file := append([]byte(spec.Magic), 0, 0)
	binary.LittleEndian.PutUint16(file[len(spec.Magic):], spec.Current)
	if _, err := w.Write(file); err != nil {
		return nil, err
	}
	meta := h.normalized()
	body := binary.AppendUvarint(nil, uint64(len(meta)))
	for _, kv := range meta {
		body = appendString(body, kv.Key)
		body = appendString(body, kv.Value)
	}
	if len(body) > spec.MaxBlockSize {
		return nil, fmt.Errorf("tracefmt: header block of %d bytes exceeds the block limit", len(body))
	}
	if err := wr.writeBlock(spec.BlockHeader, body); err != nil {
		return nil, err
	}
	return wr, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// writeBlock compresses (per the codec) and writes one block.
func (w *Writer) writeBlock(typ uint8, raw []byte) error {
	if w.err != nil {
		return w.err
	}
	payload := raw
	if w.codec == spec.CodecZstd {
		// The encoder is borrowed per block, so that many open writers
		// (testgen's ranks) do not each hold an encoder's tables.
		enc := encoderPool.Get().(*zstd.Encoder)
		w.comp = enc.EncodeAll(raw, w.comp[:0])
		encoderPool.Put(enc)
		payload = w.comp
		if len(payload) > spec.MaxBlockSize {
			return w.fail(fmt.Errorf("tracefmt: compressed block of %d bytes exceeds the block limit", len(payload)))
		}
	}
	w.scratch = AppendBlock(w.scratch[:0], typ, w.codec, len(raw), payload)
	if _, err := w.w.Write(w.scratch); err != nil {
		return w.fail(err)
	}
	return nil
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// DefineString adds a string to the table. It is written in a strings block
// before the next events block.
func (w *Writer) DefineString(id uint64, s string) error {
	if w.err != nil {
		return w.err
	}
	if err := w.strings.Define(id, s); err != nil {
		return fmt.Errorf("tracefmt: %w", err)
	}
	entry := appendString(binary.AppendUvarint(nil, id), s)
	if len(entry)+binary.MaxVarintLen64 > spec.MaxBlockSize {
		return fmt.Errorf("tracefmt: string %d of %d bytes exceeds the block limit", id, len(s))
	}
	if len(w.pendingStrings)+len(entry)+binary.MaxVarintLen64 > w.blockSize {
		if err := w.flushStrings(); err != nil {
			return err
		}
	}
	w.pendingStrings = append(w.pendingStrings, entry...)
	w.nPending++
	return nil
}

// Strings returns the strings defined so far.
func (w *Writer) Strings() *Strings { return &w.strings }

func (w *Writer) flushStrings() error {
	if w.nPending == 0 {
		return nil
	}
	body := binary.AppendUvarint(make([]byte, 0, len(w.pendingStrings)+10), uint64(w.nPending))
	body = append(body, w.pendingStrings...)
	w.pendingStrings = w.pendingStrings[:0]
	w.nPending = 0
	return w.writeBlock(spec.BlockStrings, body)
}

// WriteEvent appends ev to its thread's stream. Only the fields of ev's kind
// and its kind's list are written.
func (w *Writer) WriteEvent(ev *Event) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("tracefmt: WriteEvent after Close")
	}
	if ev.Kind >= spec.NumKinds || !kindTab[ev.Kind].ok || kindTab[ev.Kind].since > spec.Current {
		return fmt.Errorf("tracefmt: cannot write event of unknown kind %d", ev.Kind)
	}
	if ev.Thread < 0 || ev.Thread > math.MaxInt32 {
		return fmt.Errorf("tracefmt: thread index %d out of range", ev.Thread)
	}
	ki := &kindTab[ev.Kind]
	th := w.threads[ev.Thread]
	if th == nil {
		th = &writerThread{id: ev.Thread}
		w.threads[ev.Thread] = th
	}
	gap := ev.F[spec.Gap]
	if th.count > 0 && ev.Start != th.prevEnd+gap {
		if err := w.flushThread(th); err != nil {
			return err
		}
	}
	if th.count == 0 {
		th.base = ev.Start - gap
	}
	mark := len(th.body)
	th.body = appendEvent(th.body, ev, ki)
	if len(th.body) > spec.MaxBlockSize-maxEventsPrefix {
		th.body = th.body[:mark]
		return fmt.Errorf("tracefmt: %s event of %d bytes exceeds the block limit", ki.name, len(th.body)-mark)
	}
	th.count++
	end := ev.Start
	if ki.hasDur {
		end += ev.F[spec.Dur]
	}
	th.prevEnd = end
	if !w.haveTime || end > w.lastTime {
		w.lastTime, w.haveTime = end, true
	}
	w.events++
	if len(th.body) >= w.blockSize {
		return w.flushThread(th)
	}
	return nil
}

// Skip makes thread's stream lose n events where it is: the thread's
// buffered events are written as a block, and its next block starts n
// sequence numbers later, as if the blocks between had been lost (a reader
// reports the loss there, see Loss). The n events count in the end record
// Close writes, so that a loss after a thread's last block is seen too.
// It is for tests and for rewriting a damaged log as it was read.
func (w *Writer) Skip(thread int, n uint64) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("tracefmt: Skip after Close")
	}
	if thread < 0 || thread > math.MaxInt32 {
		return fmt.Errorf("tracefmt: thread index %d out of range", thread)
	}
	th := w.threads[thread]
	if th == nil {
		th = &writerThread{id: thread}
		w.threads[thread] = th
	}
	if err := w.flushThread(th); err != nil {
		return err
	}
	th.seq += n
	w.events += n
	return nil
}

// appendEvent encodes one event (kind, fields, list) per the spec table.
func appendEvent(b []byte, ev *Event, ki *kindInfo) []byte {
	b = binary.AppendUvarint(b, uint64(ev.Kind))
	for _, c := range ki.codes {
		v := ev.F[c&^signedBit]
		if c&signedBit != 0 {
			b = binary.AppendVarint(b, v)
		} else {
			b = binary.AppendUvarint(b, uint64(v))
		}
	}
	switch ki.list {
	case spec.ListRanks:
		b = binary.AppendUvarint(b, uint64(len(ev.Ranks)))
		var prev int64
		for _, r := range ev.Ranks {
			b = binary.AppendVarint(b, r-prev)
			prev = r
		}
	case spec.ListReqs, spec.ListValues:
		list := ev.Reqs
		if ki.list == spec.ListValues {
			list = ev.Values
		}
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, r := range list {
			b = binary.AppendUvarint(b, r)
		}
	case spec.ListCompletions:
		b = binary.AppendUvarint(b, uint64(len(ev.Completions)))
		for i := range ev.Completions {
			c := &ev.Completions[i]
			for _, code := range compCodes {
				v := getCompletion(c, spec.Field(code&^signedBit))
				if code&signedBit != 0 {
					b = binary.AppendVarint(b, v)
				} else {
					b = binary.AppendUvarint(b, uint64(v))
				}
			}
		}
	}
	return b
}

// flushThread writes the thread's buffered events as one block.
func (w *Writer) flushThread(th *writerThread) error {
	if th.count == 0 {
		return nil
	}
	if err := w.flushStrings(); err != nil {
		return err
	}
	raw := w.scratchPrefix(th)
	raw = append(raw, th.body...)
	if err := w.writeBlock(spec.BlockEvents, raw); err != nil {
		return err
	}
	w.blocks++
	th.seq += th.count
	th.count = 0
	th.body = th.body[:0]
	return nil
}

func (w *Writer) scratchPrefix(th *writerThread) []byte {
	p := make([]byte, 0, maxEventsPrefix+len(th.body))
	p = binary.AppendUvarint(p, uint64(th.id))
	p = binary.AppendUvarint(p, th.seq)
	p = binary.AppendUvarint(p, th.count)
	return binary.AppendUvarint(p, uint64(th.base))
}

// Flush writes pending strings and every thread's buffered events, in
// thread order. It does not write an end record.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if err := w.flushStrings(); err != nil {
		return err
	}
	ids := make([]int, 0, len(w.threads))
	for id := range w.threads {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := w.flushThread(w.threads[id]); err != nil {
			return err
		}
	}
	return nil
}

// Events returns the number of events written so far.
func (w *Writer) Events() uint64 { return w.events }

// Blocks returns the number of events blocks written so far.
func (w *Writer) Blocks() uint64 { return w.blocks }

// Close flushes and writes an end record for a normal finish: reason
// spec.EndFinalize, the events and blocks written, the latest event end as
// the time, nothing dropped.
func (w *Writer) Close() error {
	if err := w.Flush(); err != nil {
		return err
	}
	t := w.lastTime
	if t < 0 {
		t = 0
	}
	return w.CloseWithEnd(&End{Reason: spec.EndFinalize, Events: w.events, Blocks: w.blocks, Time: t})
}

// CloseWithEnd flushes and writes end as the end record, as given; with a
// nil end it writes none (a file whose recorder stopped before its final
// flush).
func (w *Writer) CloseWithEnd(end *End) error {
	if w.closed {
		return w.err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	w.closed = true
	if end != nil {
		var b []byte
		for _, v := range []uint64{end.Reason, end.Signal, end.Events, end.Blocks, uint64(end.Time), end.Dropped, end.Code, end.Fn} {
			b = binary.AppendUvarint(b, v)
		}
		b = binary.AppendUvarint(b, uint64(len(end.Message)))
		b = append(b, end.Message...)
		if err := w.writeBlock(spec.BlockEnd, b); err != nil {
			return err
		}
	}
	return w.err
}

// WritePending writes a pending block: an MPI call that had begun, and not
// returned, when it was written. Events buffered before it are flushed
// first, as the recorder does.
func (w *Writer) WritePending(p *Pending) error {
	if err := w.Flush(); err != nil {
		return err
	}
	var b []byte
	for _, v := range []uint64{uint64(p.Thread), p.Seq, p.Fn, uint64(p.Start), uint64(p.Time)} {
		b = binary.AppendUvarint(b, v)
	}
	return w.writeBlock(spec.BlockPending, b)
}
