package reconstruct

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// What the replay records for the walk back (and the path it yields) goes
// to a spill: blocks of records, each block encoded with varints and
// appended to one store, memory while it is small, a temporary file
// beyond. A block is read back whole; what stays in memory is an index
// entry per block (about 4 KiB of records) and the block being filled.

// spillMem is how much a store keeps in memory before it moves to a
// temporary file.
var spillMem int64 = 4 << 20

// store is an append-only byte store. In a file, the last bytes appended
// wait in wbuf (from offset size-len(wbuf)) to be written in one go.
type store struct {
	mem  []byte
	f    *os.File
	wbuf []byte
	size int64
	err  error
}

// storeWrite is how much a store in a file writes at once.
const storeWrite = 64 << 10

func (s *store) append(b []byte) int64 {
	off := s.size
	s.size += int64(len(b))
	if s.err != nil {
		return off
	}
	if s.f == nil && s.size > spillMem {
		f, err := os.CreateTemp("", "mpitrace-replay-*")
		if err != nil {
			s.err = fmt.Errorf("the replay's temporary file: %w", err)
			return off
		}
		// Unlinked at once: nothing is left behind, whatever happens.
		os.Remove(f.Name())
		s.f = f
		if _, err := f.Write(s.mem); err != nil {
			s.err = fmt.Errorf("the replay's temporary file: %w", err)
		}
		s.mem = nil
		s.wbuf = make([]byte, 0, storeWrite)
	}
	if s.f != nil {
		if len(s.wbuf)+len(b) > cap(s.wbuf) {
			s.flushWrites()
		}
		if len(b) > cap(s.wbuf) {
			if _, err := s.f.Write(b); err != nil && s.err == nil {
				s.err = fmt.Errorf("the replay's temporary file: %w", err)
			}
			return off
		}
		s.wbuf = append(s.wbuf, b...)
		return off
	}
	s.mem = append(s.mem, b...)
	return off
}

// flushWrites writes the waiting bytes.
func (s *store) flushWrites() {
	if len(s.wbuf) == 0 {
		return
	}
	if _, err := s.f.Write(s.wbuf); err != nil && s.err == nil {
		s.err = fmt.Errorf("the replay's temporary file: %w", err)
	}
	s.wbuf = s.wbuf[:0]
}

func (s *store) readAt(p []byte, off int64) error {
	if s.err != nil {
		return s.err
	}
	if s.f == nil {
		copy(p, s.mem[off:])
		return nil
	}
	if w := s.size - int64(len(s.wbuf)); off+int64(len(p)) > w {
		s.flushWrites()
	}
	_, err := s.f.ReadAt(p, off)
	if err == io.EOF {
		err = nil
	}
	return err
}

func (s *store) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	s.mem = nil
	if s.err == nil {
		s.err = errClosed
	}
}

// errClosed is the error of reading a store after close (the steps of a
// ReplayResult after its Close).
var errClosed = errors.New("reconstruct: the replay's result was read after Close")

// blockIdx locates a block of records.
type blockIdx struct {
	off   int64
	n     uint32 // bytes
	first uint32 // index of its first record
}

// blocks is a sequence of records in blocks of a store.
type blocks struct {
	s     *store
	idx   []blockIdx
	cur   []byte // the block being filled
	count uint32 // records, the block being filled's included
	first uint32 // index of cur's first record
	limit int    // bytes a block holds
}

// add appends one encoded record: relative to the block's earlier ones
// only (begin says when the next starts a block).
func (b *blocks) add(rec []byte) {
	if b.cur == nil {
		b.cur = make([]byte, 0, b.limit+64) // a record is at most 64 bytes
	}
	b.cur = append(b.cur, rec...)
	b.count++
	if len(b.cur) >= b.limit {
		b.flush()
	}
}

// begin reports whether the next record starts a block.
func (b *blocks) begin() bool { return len(b.cur) == 0 }

func (b *blocks) flush() {
	if len(b.cur) == 0 {
		return
	}
	off := b.s.append(b.cur)
	b.idx = append(b.idx, blockIdx{off: off, n: uint32(len(b.cur)), first: b.first})
	b.cur = b.cur[:0]
	b.first = b.count
}

// block returns the index of the block holding record i, len(idx) for
// the block being filled.
func (b *blocks) block(i uint32) int {
	if i >= b.first {
		return len(b.idx)
	}
	k, ok := slices.BinarySearchFunc(b.idx, i, func(x blockIdx, i uint32) int {
		switch {
		case x.first < i:
			return -1
		case x.first > i:
			return 1
		}
		return 0
	})
	if !ok {
		k--
	}
	return k
}

// read returns block k's bytes (buf's storage when it is large enough)
// and its first record's index.
func (b *blocks) read(k int, buf []byte) ([]byte, uint32, error) {
	if k == len(b.idx) {
		return b.cur, b.first, nil
	}
	x := b.idx[k]
	buf = slices.Grow(buf[:0], int(x.n))[:x.n]
	return buf, x.first, b.s.readAt(buf, x.off)
}

// recDec decodes varints from a block.
type recDec struct {
	b   []byte
	bad bool
}

func (d *recDec) u() uint64 {
	if len(d.b) > 0 && d.b[0] < 0x80 { // most fields fit a byte
		v := uint64(d.b[0])
		d.b = d.b[1:]
		return v
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recDec) s() int64 {
	if len(d.b) > 0 && d.b[0] < 0x80 {
		x := int64(d.b[0]) // zigzag
		d.b = d.b[1:]
		return x>>1 ^ -(x & 1)
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Item records. An item's record holds what the walk back needs (how the
// path arrives at it) and what the path's step says (name, event, times,
// bytes). Times and event indices are relative to the previous item's in
// the block (the block's first to 0).

type itemEnc struct {
	buf           []byte
	prevEv, prevT int64
}

func (r *streamRank) logItem(rec *itemRec) {
	l := &r.log
	b := r.enc.buf[:0]
	if l.begin() {
		// A block starts with the local index of its first operation.
		r.enc.prevEv, r.enc.prevT = 0, 0
		b = binary.AppendUvarint(b, uint64(r.k))
	}
	orig := rec.ostart != rec.start || rec.oend != rec.end
	if orig {
		b = append(b, rec.kind|itemOrig)
	} else {
		b = append(b, rec.kind)
	}
	b = binary.AppendVarint(b, rec.ev-r.enc.prevEv)
	b = binary.AppendVarint(b, rec.start-r.enc.prevT)
	b = binary.AppendUvarint(b, uint64(rec.end-rec.start))
	if orig {
		b = binary.AppendVarint(b, rec.ostart-rec.start)
		b = binary.AppendVarint(b, rec.oend-rec.end)
	}
	r.enc.prevEv, r.enc.prevT = rec.ev, rec.end
	switch rec.kind {
	case itemPart:
		b = binary.AppendUvarint(b, uint64(rec.from))
		b = binary.AppendUvarint(b, math.Float64bits(rec.cw))
		b = binary.AppendUvarint(b, uint64(rec.psite))
	default:
		b = binary.AppendUvarint(b, uint64(rec.name))
		b = binary.AppendUvarint(b, uint64(rec.comp+1))
		b = binary.AppendUvarint(b, uint64(rec.site))
		b = binary.AppendUvarint(b, rec.bytes)
		switch rec.kind {
		case itemMsg:
			b = binary.AppendUvarint(b, uint64(rec.from))
			b = binary.AppendUvarint(b, uint64(rec.fitem))
			b = binary.AppendUvarint(b, rec.mbytes)
			b = binary.AppendUvarint(b, math.Float64bits(rec.xw))
		case itemCollIn:
			b = binary.AppendUvarint(b, uint64(rec.from))
			b = binary.AppendUvarint(b, math.Float64bits(rec.cw))
			b = binary.AppendUvarint(b, math.Float64bits(rec.xw))
			b = binary.AppendUvarint(b, uint64(rec.psite))
			b = binary.AppendVarint(b, rec.pev)
		}
	}
	r.enc.buf = b
	l.add(b)
}

// itemOrig marks, in an item record's kind, the times as recorded that
// follow its retimed ones (measured weights).
const itemOrig = 0x80

// decodeItems decodes a block of item records.
func decodeItems(b []byte, out []itemRec) ([]itemRec, error) {
	out = out[:0]
	d := recDec{b: b}
	op := uint32(d.u())
	var ev, t int64
	for len(d.b) > 0 {
		var rec itemRec
		rec.kind = d.b[0] &^ itemOrig
		orig := d.b[0]&itemOrig != 0
		d.b = d.b[1:]
		ev += d.s()
		rec.ev = ev
		rec.start = t + d.s()
		rec.end = rec.start + int64(d.u())
		rec.ostart, rec.oend = rec.start, rec.end
		if orig {
			rec.ostart += d.s()
			rec.oend += d.s()
		}
		t = rec.end
		switch rec.kind {
		case itemPart:
			rec.from = int32(d.u())
			rec.cw = math.Float64frombits(d.u())
			rec.psite = uint32(d.u())
		case itemOp, itemMsg, itemCollIn:
			rec.op = op
			op++
			rec.name = taskgraph.NameID(d.u())
			rec.comp = int32(d.u()) - 1
			rec.site = uint32(d.u())
			rec.bytes = d.u()
			switch rec.kind {
			case itemMsg:
				rec.from = int32(d.u())
				rec.fitem = uint32(d.u())
				rec.mbytes = d.u()
				rec.xw = math.Float64frombits(d.u())
			case itemCollIn:
				rec.from = int32(d.u())
				rec.cw = math.Float64frombits(d.u())
				rec.xw = math.Float64frombits(d.u())
				rec.psite = uint32(d.u())
				rec.pev = d.s()
			}
		default:
			d.bad = true
		}
		if d.bad {
			return nil, fmt.Errorf("internal error: reconstruct: a replay record does not decode")
		}
		ev, t = rec.ev, rec.end
		out = append(out, rec)
	}
	return out, nil
}
