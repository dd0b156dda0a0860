package driver

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// pingPongTrace writes a ping-pong of n messages each way between ranks 0
// and 1, every time on one clock (each receive ends after its send
// began), whose rank 1 recorded a clock offset of off ns at MPI_Init
// (what an offset measured by messages on a loaded host looks like). With
// oneHost, both headers say they read one host's clock at one boot.
func pingPongTrace(t *testing.T, n int, off int64, oneHost bool) string {
	b := testgen.New(2)
	if oneHost {
		b.Meta = []tracefmt.KeyValue{{Key: tracefmt.KeyInitRealtimeNS, Value: "1790000000000000000"},
			{Key: tracefmt.KeyInitMonotonicNS, Value: "5000000000"}}
	}
	r0, r1 := b.Rank(0), b.Rank(1)
	for r, rk := range []*testgen.Rank{r0, r1} {
		rk.Call("MPI_Init")
		rk.ClockSync(spec.PhaseInit, int64(r)*off, uint64(r)*20_000) // rank 0's is the reference
	}
	// at makes rk's next call start at t, or after the default gap when
	// rk's clock is past it.
	at := func(rk *testgen.Rank, t int64) {
		rk.Compute(max(t-rk.Now(), b.Gap))
	}
	for i := 0; i < n; i++ {
		send := r0.Now() + 100_000
		r0.Compute(100_000).Send(1, 0, 8)
		at(r1, send) // the receive ends after the send began
		r1.Recv(0, 0, 8)
		send = r1.Now() + 70_000
		r1.Compute(70_000).Send(0, 0, 8)
		at(r0, send)
		r0.Recv(1, 0, 8)
	}
	fin := r0.Now() + b.Gap
	r0.Call("MPI_Finalize")
	at(r1, fin)
	r1.Call("MPI_Finalize")
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("pingpong-%v", oneHost))
	if err := b.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOneHostClock: ranks that read one clock (one host, one boot) need
// no offset between them, whatever the recorder measured: under measured
// weights no message completes before it was sent and the path is the
// run on that clock, never longer (issue: graph500 under MPICH on one
// host, a path of 1.661 times the run). The same trace without the
// headers' clock keys takes the recorded offset, 4.3 ms, and shows the
// error (what the test would see were the offsets not shared).
func TestOneHostClock(t *testing.T) {
	const off = 4_300_000
	for _, oneHost := range []bool{true, false} {
		for _, stream := range []bool{true, false} {
			a, err := Analyze(open(t, pingPongTrace(t, 50, off, oneHost)), Options{Stream: stream, Measured: true})
			if err != nil {
				t.Fatal(err)
			}
			sp, err := a.MeasuredPath()
			if err != nil || sp == nil {
				t.Fatalf("measured path: %v", err)
			}
			info := sp.RunInfo(sp.RunTime)
			clocks := a.clockOffsets()
			if oneHost {
				if info.Clamped.Messages != 0 || sp.Length > float64(info.Span) || clocks.Offset[1] != 0 || clocks.MaxErr() != 0 || info.ClockErr != 0 {
					t.Errorf("one host (stream %v): path %.0f ns, run %d ns on rank 0's clock, %d messages clamped, rank 1's offset %d ± %d",
						stream, sp.Length, info.Span, info.Clamped.Messages, clocks.Offset[1], clocks.Err[1])
				}
				// Both ranks' computations and the messages between them:
				// the whole run.
				if d := sp.Length - float64(info.Span); d < -1 || d > 1 {
					t.Errorf("one host (stream %v): path %.0f ns, run %d ns", stream, sp.Length, info.Span)
				}
			} else if info.Clamped.Messages == 0 || clocks.Offset[1] != off {
				t.Errorf("no clock keys (stream %v): rank 1's offset %d, %d messages clamped: the recorded offset was not taken", stream, clocks.Offset[1], info.Clamped.Messages)
			}
			a.Close()
		}
	}
}
