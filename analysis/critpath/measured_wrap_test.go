package critpath_test

import (
	"math"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// TestMeasuredWrappedCollectiveLength: a damaged trace whose barrier calls
// last -1 ms, their ranks' clock offsets putting their starts just above
// math.MinInt64, so that their ends wrap past it: the barrier's measured
// weight (first exit minus last arrival, in int64) is -1 ms, and the
// values after it on the longest path go negative. Rank 0 then sends to
// rank 1. Whatever ComputeMeasured makes of it, a path it returns must
// weigh what its hops and vertices weigh (Path.Length). 9308526^ returned
// a cycle error here (a negative sender value read as "not visited");
// 9308526's Longest keeps a visited sender's value with its sign bit set
// as the "visited" mark and clears it when reading, so that -999.5 µs is
// read back as +999.5 µs: a path of 1000.5 µs whose weights add up to
// -998.5 µs (on such a trace written to disk, critpath --weights measured
// now prints a positive length with "communication -999.000 us (-99.8%)"
// and exits 0, where it printed the cycle and exited 1).
func TestMeasuredWrappedCollectiveLength(t *testing.T) {
	b := testgen.New(2)
	for r := 0; r < 2; r++ {
		rk := b.Rank(r)
		call(rk, 0, 1000, func(r *testgen.Rank) { r.Call("MPI_Init") })
		s := rk.Now() + 500 // the ClockSync's time, then the barrier's start
		var off int64 = math.MinInt64
		off += 500 - s // the barrier starts at math.MinInt64 + 500 on rank 0's clock
		rk.ClockSync(0, off, 0)
		call(rk, 0, -1_000_000, func(r *testgen.Rank) { r.Barrier() })
		call(rk, 0, 1000, func(r *testgen.Rank) {
			if r.ID() == 0 {
				r.Send(1, 5, 8)
			} else {
				r.Recv(0, 5, 8)
			}
		})
		finalize(rk, 0)
	}
	g, clocks := build(t, b)
	p, err := critpath.ComputeMeasured(g, clocks)
	if err != nil {
		return // 9308526^: the task graph has a cycle (rank 1 waits at MPI_Recv for rank 0's MPI_Send)
	}
	var sum float64
	for i := 0; i < p.NumVertices(); i++ {
		sum += p.Vertex(i).Weight
		if i+1 < p.NumVertices() {
			sum += p.Hop(i).Weight
		}
	}
	if sum != p.Length {
		t.Errorf("the path's length is %v ns, its hops and vertices weigh %v ns", p.Length, sum)
	}
}
