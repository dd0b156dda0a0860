package tracefmt_test

import (
	"bytes"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// Reading a trace directory: open it, decode the ranks in parallel, and
// report the diagnostics counted along the way.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	b := testgen.New(2)
	b.Rank(0).Send(1, 7, 4096).Barrier()
	b.Rank(1).Recv(0, 7, 4096).Barrier()
	b.Rank(1).NoEnd() // as if rank 1 had been killed
	if err := b.WriteDir(dir); err != nil {
		fmt.Println(err)
		return
	}

	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	var sent atomic.Uint64
	err = tr.ForEachRank(0, func(r *tracefmt.RankReader) error {
		for r.Next() {
			if ev := r.Event(); ev.Kind == spec.Send {
				sent.Add(ev.Bytes())
			}
		}
		return r.Err()
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("bytes sent:", sent.Load())
	d := tr.Diagnostics()
	fmt.Println(d.Summary())
	for _, x := range d.All() {
		fmt.Println(x.Code, "on rank", x.Rank)
	}
	// Output:
	// bytes sent: 4096
	// 1 data loss (missing_end 1)
	// missing_end on rank 1
}

// The text form of one rank, as mpitrace dump prints it.
func ExampleWriteText() {
	b := testgen.New(2)
	b.Rank(0).Compute(500).Send(1, 7, 4096)
	data, _ := b.Bytes(0)
	r, _ := tracefmt.NewRankReader(bytes.NewReader(data), "rank-00000.mpit")
	d, _ := tracefmt.ReadAll(r)
	d.Header.Meta = d.Header.Meta[:3] // keep the example short
	d.Strings = tracefmt.Strings{}
	d.Strings.Define(3, "MPI_Send")
	tracefmt.WriteText(os.Stdout, d.Source())
	// Output:
	// rank 0
	// meta rank="0"
	// meta size="2"
	// meta run_id="testgen-run"
	// string 3 "MPI_Send"
	// t=1000000000 thr=0 Send fn=MPI_Send gap=500 dur=1000 peer=1 tag=7 comm=1 bytes=4096 req=0
	// end reason=finalize signal=0 events=1 blocks=1 time=1000001000 dropped=0
}
