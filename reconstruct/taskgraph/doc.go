// Package taskgraph is the MPI task graph: a directed acyclic graph whose
// vertices are the MPI operations of a run and whose edges are the
// computation between consecutive operations of a rank, the messages
// between ranks, and the fan-in and fan-out of collectives. It is a pure
// data model: package reconstruct builds it from trace events, the
// analyses (critical path, DOT rendering) read it. It performs no I/O other
// than writing its text rendering to an io.Writer.
//
// # Nodes
//
// Node ids are stable and dense, so outputs that users diff are
// deterministic:
//
//	0                          Init: MPI_Init, shared by all ranks (rank -1)
//	1                          Finalize: MPI_Finalize, shared (rank -1)
//	2 ...                      the operations (KindOp) of rank 0 in program
//	                           order, then those of rank 1, ...
//	2+NumOps() ...             the collective instances (KindCollective),
//	                           shared by their members (rank -1), ordered by
//	                           the lowest participating rank and the position
//	                           of the call on that rank
//
// # Edges
//
// Each rank's operations form a chain Init → op → op → ... → Finalize in
// program order; a blocking collective sits on the chain of every member
// between the member's previous and next operation. Chain edges carry the
// wall-clock time, on that rank's own clock, from the end of one call to
// the start of the next, clamped at 0 (Compute; InitOut from Init, CollIn
// into a collective, CollOut out of one, FinalizeIn into Finalize).
// Cross edges join ranks: a Message from the send operation to the
// operation that completed the matching receive, carrying the message's
// bytes (its weight comes from a latency model), and for nonblocking
// collectives a CollIn edge from each member's posting operation to the
// collective and a CollOut edge from the collective to the operation that
// completed the member's request (both of weight 0). Every operation has
// at most one incoming cross edge.
//
// # Representation
//
// The graph is stored in per-rank chunks of columns with implicit chain
// edges, for the ranks with a log only (Ranks; the world may claim many
// more, which cost nothing): per operation its start, duration, bytes, event index and name
// (16 bytes; 24 in a chunk of 4096 spanning more than 4.29 s; a rank's
// first chunk starts with room for 8 and grows fourfold, so that a short rank
// costs little); per message 12 bytes; per collective participation about
// 40 bytes. Walk visits the nodes in a topological order in linear time with
// per-rank cursors, without building an adjacency list; Longest finds a
// longest path the same way keeping a distance per rank, per sending
// operation and per collective only; In and Out give the edges of one
// node.
package taskgraph
