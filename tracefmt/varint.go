package tracefmt

import "errors"

var (
	errShort    = errors.New("unexpected end of payload")
	errOverflow = errors.New("varint overflows 64 bits")
)

// uvarint decodes an unsigned LEB128 varint at b[p:]. It returns the value
// and the position after it, or a negative position on error: -1 when b ends
// first, -2 when the varint does not fit 64 bits.
func uvarint(b []byte, p int) (uint64, int) {
	if p < 0 || p > len(b)-10 {
		return uvarintTail(b, p)
	}
	// At least 10 bytes are left: one bounds check for all of them.
	bb := b[p : p+10 : p+10]
	c := bb[0]
	if c < 0x80 {
		return uint64(c), p + 1
	}
	x := uint64(c & 0x7f)
	if c = bb[1]; c < 0x80 {
		return x | uint64(c)<<7, p + 2
	}
	x |= uint64(c&0x7f) << 7
	if c = bb[2]; c < 0x80 {
		return x | uint64(c)<<14, p + 3
	}
	x |= uint64(c&0x7f) << 14
	if c = bb[3]; c < 0x80 {
		return x | uint64(c)<<21, p + 4
	}
	x |= uint64(c&0x7f) << 21
	if c = bb[4]; c < 0x80 {
		return x | uint64(c)<<28, p + 5
	}
	x |= uint64(c&0x7f) << 28
	if c = bb[5]; c < 0x80 {
		return x | uint64(c)<<35, p + 6
	}
	x |= uint64(c&0x7f) << 35
	if c = bb[6]; c < 0x80 {
		return x | uint64(c)<<42, p + 7
	}
	x |= uint64(c&0x7f) << 42
	if c = bb[7]; c < 0x80 {
		return x | uint64(c)<<49, p + 8
	}
	x |= uint64(c&0x7f) << 49
	if c = bb[8]; c < 0x80 {
		return x | uint64(c)<<56, p + 9
	}
	x |= uint64(c&0x7f) << 56
	if c = bb[9]; c < 2 {
		return x | uint64(c)<<63, p + 10
	}
	return 0, -2
}

// uvarintTail is uvarint near the end of b.
func uvarintTail(b []byte, p int) (uint64, int) {
	if p < 0 {
		return 0, -1
	}
	var x uint64
	var s uint
	for i := 0; i < 10; i++ {
		if p >= len(b) {
			return 0, -1
		}
		c := b[p]
		p++
		if c < 0x80 {
			if i == 9 && c > 1 {
				return 0, -2
			}
			return x | uint64(c)<<s, p
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, -2
}

// varintErr converts uvarint's negative position to an error.
func varintErr(n int) error {
	if n == -2 {
		return errOverflow
	}
	return errShort
}

// unzigzag decodes a zigzag-encoded signed value.
func unzigzag(x uint64) int64 { return int64(x>>1) ^ -int64(x&1) }

// payloadReader reads varints and strings from a small payload (header,
// strings and end blocks), remembering the first error.
type payloadReader struct {
	b   []byte
	p   int
	err error
	// what names the field being read, for errors.
	what string
}

func (r *payloadReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	x, n := uvarint(r.b, r.p)
	if n < 0 {
		r.err = varintErr(n)
		r.what = what
		return 0
	}
	r.p = n
	return x
}

// count reads a list count and bounds it by the bytes left, given the
// smallest encoding of one element.
func (r *payloadReader) count(what string, elemMin int) int {
	n := r.uvarint(what)
	if r.err != nil {
		return 0
	}
	if left := uint64(len(r.b) - r.p); n > left/uint64(elemMin) {
		r.err = errors.New("count exceeds the bytes left in the block")
		r.what = what
		return 0
	}
	return int(n)
}

// fail records err as the error of field what.
func (r *payloadReader) fail(what string, err error) {
	if r.err == nil {
		r.err, r.what = err, what
	}
}

func (r *payloadReader) str(what string) string {
	n := r.uvarint(what)
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)-r.p) {
		r.err = errors.New("string length exceeds the bytes left in the block")
		r.what = what
		return ""
	}
	s := string(r.b[r.p : r.p+int(n)])
	r.p += int(n)
	return s
}
