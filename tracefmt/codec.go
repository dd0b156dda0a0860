package tracefmt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// castagnoli is the CRC-32C table of the block checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fileHeaderSize is the magic and the version.
const fileHeaderSize = len(spec.Magic) + 2

// frame is a block's frame header (docs/format.md "File layout").
type frame struct {
	typ      uint8
	codec    uint8
	reserved uint16
	stored   uint32
	raw      uint32
	crc      uint32
}

// parseFrame decodes a frame header; ok is false when the sync marker is
// missing.
func parseFrame(h []byte) (f frame, ok bool) {
	if binary.LittleEndian.Uint32(h[0:]) != spec.BlockSync {
		return f, false
	}
	f.typ = h[4]
	f.codec = h[5]
	f.reserved = binary.LittleEndian.Uint16(h[6:])
	f.stored = binary.LittleEndian.Uint32(h[8:])
	f.raw = binary.LittleEndian.Uint32(h[12:])
	f.crc = binary.LittleEndian.Uint32(h[16:])
	return f, true
}

// check returns why the frame cannot be a block, or nil. maxBlock bounds
// the sizes; maxType is the highest block type of the file's version.
func (f *frame) check(maxBlock int, maxType uint8) error {
	switch {
	case f.typ < spec.BlockHeader || f.typ > maxType:
		return fmt.Errorf("unknown block type %d", f.typ)
	case f.codec != spec.CodecNone && f.codec != spec.CodecZstd:
		return fmt.Errorf("unknown codec %d", f.codec)
	case int64(f.stored) > int64(maxBlock):
		return fmt.Errorf("stored size %d exceeds the %d-byte block limit", f.stored, maxBlock)
	case int64(f.raw) > int64(maxBlock):
		return fmt.Errorf("raw size %d exceeds the %d-byte block limit", f.raw, maxBlock)
	case f.codec == spec.CodecNone && f.stored != f.raw:
		return fmt.Errorf("uncompressed block with stored size %d and raw size %d", f.stored, f.raw)
	}
	return nil
}

// crcStart is the checksum of the frame's type..raw bytes, to be continued
// over the payload.
func crcStart(h []byte) uint32 { return crc32.Update(0, castagnoli, h[4:16]) }

// AppendBlock appends one block to dst: its frame (sync marker, type,
// codec, the payload's stored size, raw size raw, checksum) and the payload
// as given, compressed or not. A Writer writes whole valid files; this is
// for tools and tests that craft blocks of their own (docs/format.md, "File
// layout").
func AppendBlock(dst []byte, typ, codec uint8, raw int, payload []byte) []byte {
	var h [spec.BlockHeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:], spec.BlockSync)
	h[4] = typ
	h[5] = codec
	binary.LittleEndian.PutUint32(h[8:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[12:], uint32(raw))
	crc := crc32.Update(crcStart(h[:]), castagnoli, payload)
	binary.LittleEndian.PutUint32(h[16:], crc)
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

// Pools of zstd coders. They hold no goroutines (concurrency 1), so a coder
// the pool drops is simply collected.
var (
	decoderPool = sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecodeAllCapLimit(true),
			// Every payload is covered by the block's CRC-32C already.
			zstd.IgnoreChecksum(true),
			zstd.WithDecoderMaxMemory(spec.MaxBlockSize),
			zstd.WithDecoderMaxWindow(spec.MaxBlockSize),
		)
		if err != nil {
			panic("internal error: tracefmt: zstd decoder: " + err.Error())
		}
		return d
	}}
	streamDecoderPool = sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(spec.MaxBlockSize),
			zstd.WithDecoderMaxWindow(spec.MaxBlockSize),
			zstd.WithDecodeBuffersBelow(0),
		)
		if err != nil {
			panic("internal error: tracefmt: zstd decoder: " + err.Error())
		}
		return d
	}}
	encoderPool = sync.Pool{New: func() any {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
		if err != nil {
			panic("internal error: tracefmt: zstd encoder: " + err.Error())
		}
		return e
	}}
)

var errRawSize = errors.New("payload does not decompress to the raw size in the frame")

// The first pass reads an events block's prefix (thread, seq, count, base)
// by decoding the first few zstd blocks of its frame, framed on their own
// with a window of prefixWindowLog: a stream decoder's memory then depends
// neither on the window nor on the content size the frame declares (it
// keeps a window of that size, and allocates it anew for each larger one).
const (
	prefixBlocks    = 4  // zstd blocks: legit encoders put 128 KiB in the first
	prefixWindowLog = 20 // above prefixBlocks × 128 KiB, so every match is in reach
)

// prefixFrame appends to dst[:0] a zstd frame of the first prefixBlocks
// blocks of the frame payload, whose header h describes.
func prefixFrame(dst, payload []byte, h *zstd.Header) ([]byte, error) {
	if h.Skippable || h.DictionaryID != 0 {
		return dst, errors.New("not a zstd frame without dictionary")
	}
	// No content size, no checksum, no dictionary; a window descriptor.
	dst = append(dst[:0], payload[:4]...)
	dst = append(dst, 0, (prefixWindowLog-10)<<3)
	p := h.HeaderSize
	for i := 0; i < prefixBlocks; i++ {
		if p+3 > len(payload) {
			return dst, io.ErrUnexpectedEOF
		}
		bh := uint32(payload[p]) | uint32(payload[p+1])<<8 | uint32(payload[p+2])<<16
		n := int(bh >> 3)
		switch typ := bh >> 1 & 3; typ {
		case 1: // run-length: one byte stored
			n = 1
		case 3:
			return dst, errors.New("zstd block of the reserved type")
		}
		if p+3+n > len(payload) {
			return dst, io.ErrUnexpectedEOF
		}
		if i == prefixBlocks-1 {
			bh |= 1 // the last block of this frame
		}
		dst = append(dst, byte(bh), byte(bh>>8), byte(bh>>16))
		dst = append(dst, payload[p+3:p+3+n]...)
		if bh&1 != 0 {
			break
		}
		p += 3 + n
	}
	return dst, nil
}

// rawSlack is the room decompress wants beyond a block's raw size.
const rawSlack = 64

// decompress decodes a zstd payload that must yield exactly raw bytes, into
// dst's storage when it is large enough.
func decompress(dec *zstd.Decoder, payload []byte, raw int, dst []byte) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(payload); err != nil {
		return dst[:0], fmt.Errorf("zstd frame header: %w", err)
	}
	if h.HasFCS && h.FrameContentSize != uint64(raw) {
		return dst[:0], fmt.Errorf("zstd frame holds %d bytes, the block frame says %d", h.FrameContentSize, raw)
	}
	// A little slack lets the decoder notice a frame without content size
	// that holds more than raw bytes.
	if cap(dst) < raw+rawSlack {
		dst = make([]byte, 0, raw+rawSlack)
	}
	out, err := dec.DecodeAll(payload, dst[:0])
	if err != nil {
		return out[:0], fmt.Errorf("zstd: %w", err)
	}
	if len(out) != raw {
		return out[:0], errRawSize
	}
	return out, nil
}
