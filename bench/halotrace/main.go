// Command halotrace writes a synthetic trace directory: testgen.Halo, the
// halo exchange of the benchmarks, on any number of ranks and iterations
// (5 events an iteration, an MPI_Allreduce every 10th, MPI_Init and
// MPI_Finalize: 50 iterations make 257 events a rank). It is what the
// measurements of many short ranks in docs/performance.md ran on.
//
//	go run ./bench/halotrace -ranks 16384 -iters 50 -o /tmp/wide16k
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

func main() {
	ranks := flag.Int("ranks", 16384, "ranks")
	iters := flag.Int("iters", 50, "iterations")
	seed := flag.Uint64("seed", 1, "seed of the jitter")
	out := flag.String("o", "", "trace directory to write (required)")
	flag.Parse()
	if *out == "" || *ranks < 1 || *iters < 0 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := testgen.Halo(*ranks, *iters, *seed).WriteDir(*out); err != nil {
		fmt.Fprintln(os.Stderr, "halotrace:", err)
		os.Exit(1)
	}
}
