// Package reconstruct builds the MPI task graph (package taskgraph) of a
// trace: one vertex per MPI operation of each rank in program order, the
// messages matched from sends to the operations that completed their
// receives, one shared vertex per collective instance, and the shared
// MPI_Init and MPI_Finalize vertices. docs/reconstruction.md states the
// rules and every corner case.
//
//	t, err := tracefmt.OpenDir("traces")
//	g, diags, err := reconstruct.Build(t, reconstruct.Options{})
//	if err := reconstruct.Check(diags, strict); err != nil { ... }  // errors, or with strict data loss
//	path, err := critpath.Compute(g, latency.Default())
//
// Ranks are read in parallel, each by a single-pass consumer of its events;
// the cross-rank phases (communicator members, collective instances,
// point-to-point pairing) follow. The graph is deterministic: it does not
// depend on the number of workers or on the order ranks finish in.
//
// Reconstruction never stops at a problem in the data: the graph is always
// built, and every problem is a tracefmt.Diagnostic (codes Code*, listed
// with their severities in docs/reconstruction.md). The error results are
// for I/O failures and graphs too large to represent.
//
// Times stay on each rank's own clock; the critical path does not need the
// clocks of different ranks to agree.
package reconstruct
