package reconstruct

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// TestUnmatchedSet: a rank's receives no message matched (or messages no
// receive took), held in bounded memory (the first
// tracefmt.MaxStoredPerCode by channel and place, and counts by peer),
// give the diagnostics all of them give, in any order of arrival, for
// fewer and for many more than the diagnostics store.
func TestUnmatchedSet(t *testing.T) {
	p := &rankPass{rank: 3, file: "rank-00003.mpit", keys: []commKey{{gid: 0}}}
	// Peers 0-2 have no log (an error), peer 4's log stops early (data
	// loss), the others are fine (a warning): severities differ by peer.
	missing := func(r int) (tracefmt.Severity, string) {
		switch {
		case r < 3:
			return tracefmt.Error, "; rank has no log"
		case r == 4:
			return tracefmt.DataLoss, "; rank's log is incomplete"
		}
		return tracefmt.Warning, ""
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for k, n := range []int{0, 7, tracefmt.MaxStoredPerCode, tracefmt.MaxStoredPerCode + 1, 5 * tracefmt.MaxStoredPerCode, 3000} {
		sends := k%2 == 1
		all := make([]unmatchedRec, n)
		for i := range all {
			peer := int32(rng.IntN(8))
			all[i] = unmatchedRec{ch: uint32(rng.IntN(5)), key: chanKey{peer: peer, tag: int64(rng.IntN(3))}, seq: uint32(i), ev: int64(10 * i), bytes: uint64(rng.IntN(100))}
		}
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		var u unmatchedSet
		for _, x := range all {
			u.add(x)
		}
		if len(u.first) > tracefmt.MaxStoredPerCode {
			t.Fatalf("%d receives: %d held", n, len(u.first))
		}
		var got, want tracefmt.Diagnostics
		diag := func(t *tracefmt.Diagnostics, x *unmatchedRec) {
			if sends {
				unmatchedSendDiag(t, p, x.key, x.ev, x.bytes, missing)
			} else {
				unmatchedRecvDiag(t, p, x.key, x.ev, missing)
			}
		}
		code := map[bool]string{false: CodeUnmatchedRecv, true: CodeUnmatchedSend}[sends]
		u.diags(&got, code, func(x *unmatchedRec) { diag(&got, x) }, missing)
		slices.SortFunc(all, func(a, b unmatchedRec) int {
			if a.before(&b) {
				return -1
			}
			if b.before(&a) {
				return 1
			}
			return 0
		})
		for i := range all {
			diag(&want, &all[i])
		}
		g := fmt.Sprint(got.All(), got.Summary(), got.Elided(), got.Len())
		w := fmt.Sprint(want.All(), want.Summary(), want.Elided(), want.Len())
		if g != w {
			t.Errorf("%d receives: the set's diagnostics\n%.600s\nwant\n%.600s", n, g, w)
		}
	}
}
