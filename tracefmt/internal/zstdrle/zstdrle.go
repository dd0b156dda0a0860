// Package zstdrle writes zstd frames (RFC 8878) by hand, made of run-length
// blocks: a few bytes that decompress to as many as 128 KiB each. The
// tests of what hostile files cost readers use them.
package zstdrle

import "encoding/binary"

// Frame returns one zstd frame that decompresses to prefix followed by n
// copies of b: a raw block, then run-length blocks of at most 128 KiB, four
// bytes each. The frame declares its content size and is single-segment
// (no window).
func Frame(prefix []byte, b byte, n int) []byte { return WindowFrame(0, prefix, b, n) }

// WindowFrame is Frame declaring a window of 2^windowLog bytes (10 to 41)
// instead of being single-segment; 0 is Frame.
func WindowFrame(windowLog int, prefix []byte, b byte, n int) []byte {
	z := binary.LittleEndian.AppendUint32(nil, 0xFD2FB528)
	// Frame header descriptor: an 8-byte content size, single segment or
	// a window descriptor, no checksum, no dictionary.
	if windowLog == 0 {
		z = append(z, 0xE0)
	} else {
		z = append(z, 0xC0, byte(windowLog-10)<<3)
	}
	z = binary.LittleEndian.AppendUint64(z, uint64(len(prefix)+n))
	block := func(typ, size int, last bool, data []byte) {
		h := uint32(size)<<3 | uint32(typ)<<1
		if last {
			h |= 1
		}
		z = append(z, byte(h), byte(h>>8), byte(h>>16))
		z = append(z, data...)
	}
	const rawBlock, rleBlock, maxBlock = 0, 1, 128 << 10
	block(rawBlock, len(prefix), n == 0, prefix)
	for left := n; left > 0; {
		s := min(left, maxBlock)
		left -= s
		block(rleBlock, s, left == 0, []byte{b})
	}
	return z
}
