package testgen

// Serial builds a one-rank run of about calls MPI calls between MPI_Init
// and MPI_Finalize, the trace with the longest critical path for its size:
// one rank has one chain, so the path has a step per call. Each iteration
// of 10 calls makes 7 local calls (MPI_Comm_rank, MPI_Wtime,
// MPI_Comm_size), each after a jittered computation, then sends itself a
// message (MPI_Irecv, MPI_Send, MPI_Wait: a message edge); in every 10th
// iteration the last local call is an MPI_Allreduce of 8 bytes on the
// one-rank world (a collective vertex). calls is rounded up to a multiple
// of 10. The same seed gives the same trace.
func Serial(calls int, seed uint64) *Builder {
	b := New(1)
	rnd := newRand(seed)
	local := [...]string{"MPI_Comm_rank", "MPI_Wtime", "MPI_Comm_size", "MPI_Comm_rank", "MPI_Wtime", "MPI_Comm_rank", "MPI_Wtime"}
	r := b.Rank(0)
	r.Call("MPI_Init")
	for it := 0; it*10 < calls; it++ {
		for i, fn := range local {
			r.Compute(int64(200 + rnd(2_000)))
			r.Dur = int64(20 + rnd(100))
			if i == len(local)-1 && it%10 == 9 {
				r.Dur = int64(500 + rnd(1_000))
				r.Allreduce(8)
				continue
			}
			r.Call(fn)
		}
		bytes := uint64(8 << rnd(10))
		r.Dur = int64(100 + rnd(200))
		q := r.Irecv(0, 5, bytes)
		r.Send(0, 5, bytes)
		r.Wait(q)
	}
	r.Call("MPI_Finalize")
	return b
}
