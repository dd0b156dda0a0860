// Package calibrate builds and runs the latency benchmark behind
// `mpitrace calibrate` and reads its output.
//
// The benchmark is an MPI C program (c/calibrate.c, embedded) compiled with
// the MPI's own compiler wrapper (Build) and started under the user's
// launcher (Run). It measures:
//
//   - point-to-point latency: ranks 0 and 1 ping-pong (0 sends then
//     receives, 1 receives then sends) for every size from Config.P2PMin
//     doubling up to Config.P2PMax; the one-way latency of a batch is its
//     time / repetitions / 2, and the point is the median over the trials;
//   - collectives (MPI_Barrier, MPI_Bcast, MPI_Scatter, MPI_Gather,
//     MPI_Reduce, MPI_Allreduce, MPI_Allgather, MPI_Alltoall) for every size
//     from Config.CollMin doubling up to Config.CollMax and every process
//     count p from 2 to Config.MaxProcs (all counts up to 8, then powers of
//     two, then the maximum): the first p ranks form a sub-communicator
//     (MPI_Comm_split) while the others wait at a barrier; each timed batch
//     starts after a barrier, its per-call time is the maximum over the
//     ranks, and the point is the median over the trials.
//
// Each (operation, size, process count) gets a warm-up that doubles the
// number of calls until a batch lasts a quarter of Config.Target; the
// fastest per-call time seen sets the repetitions of the timed batches so
// each lasts about Config.Target, clamped to [Config.MinReps,
// Config.MaxReps]. Large messages therefore run few repetitions and a run
// stays short; CIConfig is a configuration that finishes in about a second.
//
// # What "bytes" means
//
// A point's Bytes is the size of the per-process block the call moves, as
// the caller passes it (count × datatype size): the message for
// point-to-point, the buffer for MPI_Bcast, MPI_Reduce and MPI_Allreduce
// (MPI_INT elements, so a multiple of 4), the block each process sends or
// receives for MPI_Scatter, MPI_Gather, MPI_Allgather and MPI_Alltoall (the
// root's whole buffer, and each all-to-all send buffer, is Bytes × p), and 0
// for MPI_Barrier. Task-graph weighting must ask the model with the same
// measure.
//
// # Output format (version 1)
//
// Rank 0 writes one record per line on stdout:
//
//	mpitrace-calibrate version=1 procs=4 cpus=2 host="node01" mpi="Open MPI v4.1.4, ..."
//	config p2p_min=4 p2p_max=4194304 coll_min=4 coll_max=65536 reps=10000 min_reps=3 trials=5 max_procs=4 target_us=5000 collectives="MPI_Barrier,MPI_Bcast"
//	p2p bytes=1024 procs=2 reps=5000 ns=1834.2
//	coll name=MPI_Allreduce bytes=64 procs=4 reps=800 ns=2210.8
//	end points=2
//
// A record is a kind followed by key=value fields separated by spaces;
// string values are double-quoted with Go escapes (\" \\ \n \t \xHH), since
// MPI library strings span lines. Lines before the header (a launcher's
// banner) and after the end record are ignored; between them every line
// must be a well-formed record, and a missing end record means the
// benchmark stopped early. Parse reads this format and Result.WriteText
// writes it.
package calibrate
