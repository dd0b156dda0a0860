package tracefmt

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestUvarint(t *testing.T) {
	vals := []uint64{0, 1, 127, 128, 255, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<35 + 5, 1<<56 - 1, 1 << 56, 1<<63 - 1, 1 << 63, math.MaxUint64}
	for _, v := range vals {
		enc := binary.AppendUvarint(nil, v)
		for pad := 0; pad < 12; pad++ {
			b := append(append([]byte{0xaa}, enc...), make([]byte, pad)...)
			got, p := uvarint(b, 1)
			if got != v || p != 1+len(enc) {
				t.Fatalf("uvarint(%d) with %d bytes of padding = %d, %d", v, pad, got, p)
			}
			// Every truncation is short, never a wrong value.
			for cut := 1; cut < len(enc)+1; cut++ {
				if _, p := uvarint(b[:cut], 1); cut < 1+len(enc) && p != -1 {
					t.Fatalf("truncated uvarint(%d) at %d: %d", v, cut, p)
				}
			}
		}
	}
	over := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0}
	if _, p := uvarint(over, 0); p != -2 {
		t.Errorf("overflow: %d", p)
	}
	if _, p := uvarint(over[:10], 0); p != -2 {
		t.Errorf("overflow at the end: %d", p)
	}
	long := []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}
	if _, p := uvarint(long, 0); p != -2 {
		t.Errorf("11-byte varint: %d", p)
	}
	if _, p := uvarint(long[:10], 0); p != -2 {
		t.Errorf("10 continuation bytes: %d", p)
	}
	for _, x := range []int64{0, -1, 1, math.MinInt64, math.MaxInt64} {
		if got := unzigzag(uint64(x<<1) ^ uint64(x>>63)); got != x {
			t.Errorf("unzigzag(%d) = %d", x, got)
		}
	}
}
