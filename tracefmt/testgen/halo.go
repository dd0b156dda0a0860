package testgen

// Halo builds a periodic 1-D halo exchange, the communication shape of many
// stencil codes and a realistic workload for benchmarks: in each of iters
// iterations every rank computes for a jittered time, posts MPI_Irecv from
// both neighbours, MPI_Isend to both (tag 1 rightwards, tag 2 leftwards, so
// every message has exactly one match), and waits for the four requests
// with MPI_Waitall; every 10th iteration ends with an MPI_Allreduce of 8
// bytes. Every rank starts with MPI_Init and ends with MPI_Finalize, as a
// recorded run does. That is 5 events per iteration (6 with the Allreduce),
// so Halo(100, 40_000, 1) holds about 20M events. The same seed gives the
// same trace.
func Halo(size, iters int, seed uint64) *Builder { return New(size).Halo(iters, seed) }

// Halo records Halo's iterations on b's ranks (which it creates; set b's
// options first) and returns b.
func (b *Builder) Halo(iters int, seed uint64) *Builder {
	size := b.Size
	rnd := newRand(seed)
	ranks := make([]*Rank, size)
	for r := range ranks {
		ranks[r] = b.Rank(r)
		ranks[r].Call("MPI_Init")
	}
	for it := 0; it < iters; it++ {
		bytes := uint64(1024 << rnd(6))
		for r, rk := range ranks {
			left, right := int64((r+size-1)%size), int64((r+1)%size)
			rk.Compute(int64(50_000 + rnd(20_000)))
			rk.Dur = int64(300 + rnd(700))
			q1 := rk.Irecv(left, 1, bytes)
			q2 := rk.Irecv(right, 2, bytes)
			q3 := rk.Isend(right, 1, bytes)
			q4 := rk.Isend(left, 2, bytes)
			rk.Dur = int64(1000 + rnd(10_000))
			rk.Waitall(q1, q2, q3, q4)
			if it%10 == 9 {
				rk.Dur = int64(2000 + rnd(5000))
				rk.Allreduce(8)
			}
		}
	}
	for _, rk := range ranks {
		rk.Call("MPI_Finalize")
	}
	return b
}

// newRand returns a xorshift64 generator of numbers in [0, n), seeded:
// the same seed gives the same sequence.
func newRand(seed uint64) func(n uint64) uint64 {
	x := seed | 1
	return func(n uint64) uint64 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return x % n
	}
}
