package reconstruct_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Options.Observe sees every event of every rank, loop events included,
// and loop events make no operations.
func TestObserveAndLoopEvents(t *testing.T) {
	const text = `rank 0
meta size="2"
Call fn=MPI_Init
LoopBegin file=a.c line=1 col=1
IterBegin iter=1
Send fn=MPI_Send peer=1 tag=1 comm=1 bytes=8
IterEnd values=[5]
LoopEnd count=3
Call fn=MPI_Finalize
rank 1
meta size="2"
Call fn=MPI_Init
LoopBegin file=a.c line=1 col=1
LoopEnd count=0 flags=2
Recv fn=MPI_Recv peer=0 tag=1 comm=1 bytes=8 src=0 stag=1 sbytes=8
Call fn=MPI_Finalize
`
	ranks, err := tracefmt.ParseText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[int][]spec.Kind{}
	g, d, err := reconstruct.BuildFromRanks(ranks, reconstruct.Options{Observe: func(h *tracefmt.Header, _ *tracefmt.Strings) func(*tracefmt.Event) {
		rank := h.Rank
		return func(ev *tracefmt.Event) {
			mu.Lock()
			seen[rank] = append(seen[rank], ev.Kind)
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen[0]) != 7 || len(seen[1]) != 5 || seen[0][1] != spec.LoopBegin {
		t.Errorf("observed %v", seen)
	}
	if g.NumOps() != 2 || g.NumMessages() != 1 || d.Count(tracefmt.Error) != 0 {
		t.Errorf("%d operations, %d messages, diagnostics %s", g.NumOps(), g.NumMessages(), d.Summary())
	}
}
