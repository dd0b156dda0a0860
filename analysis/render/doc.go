// Package render draws mpitrace's analyses for people. WriteDOT writes an MPI
// task graph (package taskgraph) in Graphviz's DOT language with its critical
// path (package critpath) highlighted, for `dot -Tsvg` and `xdot -`.
//
// The package only reads the graph and the path: it never reconstructs or
// weighs anything itself beyond asking the latency model for the labels. It is
// the only package of mpitrace that imports github.com/emicklei/dot (the
// folded path is written directly).
//
// # The picture
//
//   - One cluster per rank, `subgraph cluster_rankN` labelled "rank N", holding
//     the rank's operations in program order (boxes). A vertex is labelled with
//     the MPI function name as MPI spells it and, on a second line, the call's
//     duration.
//   - The shared vertices are outside every cluster: MPI_Init and MPI_Finalize
//     (ellipses) and each collective instance (hexagons, labelled with the
//     collective's name and its model time).
//   - Edge labels carry the weights: a computation edge (the chain of a rank,
//     MPI_Init's fan-out, MPI_Finalize's fan-in, a collective's fan-in and
//     fan-out) its measured time, e.g. "12 us"; a message edge (dashed) the
//     model latency and the message's bytes, "1.8 us (4096)". Edges of
//     nonblocking collectives are dotted.
//   - The critical path's vertices and edges are red with penwidth 3; no other
//     element has a penwidth. The graph's label gives the path's length, the
//     latency model and what the options left out.
//
// Times are written in DOTOptions.Unit (us by default) with three
// significant digits, as integers from 100 on: 1234 us, 12.5 us, 1.8 us,
// 0.25 us.
//
// # Keeping big graphs viewable
//
// CriticalOnly keeps only the path's vertices and edges. Ranks keeps the
// clusters of a set of ranks and the shared vertices on their chains; a
// message between a kept rank and another rank is drawn to or from a small
// dashed "rank N" stub node standing for the other rank (one per rank), so
// that the communication stays visible; edges between two other ranks, and
// the fan-in and fan-out of collectives from other ranks, are left out.
// Window keeps the operations whose start lies in [Start, End), measured on
// each rank's own clock from the end of that rank's MPI_Init (from its first
// operation's start when it has no MPI_Init); a shared vertex stays when a
// kept operation is joined to it, and edges are drawn between kept vertices
// only. The options combine (each keeps less), and the graph's label says
// what was left out.
//
// # The folded path
//
// WriteFoldedDOT draws a critical path folded by critpath.Fold: each
// stretch of the path that repeats one body of steps is a cluster
// (`subgraph cluster_runN`) holding the body once, labelled with its
// repeat count, total time and share of the path, nested for nested
// loops; a vertex stands for all the steps at its place in the body. It
// writes as it goes (no graph in memory), with no rank clusters and no
// newrank, so that Graphviz lays out a path of millions of steps in well
// under a second once folded. GraphvizLimit is the size beyond which the
// command warns.
//
// # Determinism
//
// The output depends only on the graph, the path, the model and the options:
// vertices are created in node id order (clusters in rank order), edges in
// the order taskgraph.Graph.Edges gives them, and emicklei/dot writes
// attributes, nodes and subgraphs sorted, so the same input gives the same
// bytes.
package render
