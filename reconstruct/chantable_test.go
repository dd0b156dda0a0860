package reconstruct

import (
	"fmt"
	"testing"
)

// TestChanTableLimit: a table with a limit numbers channels in the order
// they come, gives a channel it holds its number again, and when full
// forgets them all and numbers on, a channel met again getting a new,
// greater number; without a limit (Build) a channel keeps its number.
func TestChanTableLimit(t *testing.T) {
	key := func(i int) chanKey { return chanKey{comm: 1, peer: int32(i % 3), tag: int64(i)} }
	for _, limit := range []int{3, 8, 9, 20} {
		tb := chanTable{limit: limit}
		last := uint32(0)
		for i := range 100 {
			id := tb.id(key(i))
			if i > 0 && id != last+1 {
				t.Fatalf("limit %d: channel %d numbered %d after %d", limit, i, id, last)
			}
			last = id
			if again := tb.id(key(i)); again != id {
				t.Fatalf("limit %d: channel %d numbered %d, then %d", limit, i, id, again)
			}
			if len(tb.keys) > limit {
				t.Fatalf("limit %d: the table holds %d channels", limit, len(tb.keys))
			}
		}
		if id := tb.id(key(0)); id != 100 {
			t.Errorf("limit %d: channel 0 met again numbered %d, want 100", limit, id)
		}
	}
	var tb chanTable
	for i := range 100 {
		tb.id(key(i))
	}
	if id := tb.id(key(7)); id != 7 || len(tb.keys) != 100 {
		t.Errorf("no limit: channel 7 numbered %d, %d channels held", id, len(tb.keys))
	}
}

// BenchmarkChanTable: a rank's channel lookups, cycling over n channels,
// with the hooked passes' limit and without (Build's).
//
//	go test ./reconstruct -run '^$' -bench ChanTable
func BenchmarkChanTable(b *testing.B) {
	for _, n := range []int{16, 255, 256, 300, 1024} {
		for _, limit := range []int{0, hookChans} {
			b.Run(fmt.Sprintf("channels=%d/limit=%d", n, limit), func(b *testing.B) {
				keys := make([]chanKey, n)
				for i := range keys {
					keys[i] = chanKey{comm: 1, peer: int32(i % 64), tag: int64(i)}
				}
				tb := chanTable{limit: limit}
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					tb.id(keys[i%n])
				}
			})
		}
	}
}
