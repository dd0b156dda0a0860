// Package regions analyses the region events of a trace (format version
// 4): the named regions of a program (Kokkos profile regions, or
// mpitrace_region_push/pop), its Kokkos kernels and fences, deep copies
// and profile sections, as one call tree per rank and thread merged over
// threads and ranks; the memory its Kokkos Views held per memory space;
// and the metadata, profile events and DualView activity it declared.
//
// # The tree
//
// Per thread, regions, kernels (parallel_for, parallel_reduce,
// parallel_scan, fences) and deep copies nest: a node's parent is the
// innermost one open on the thread when it began. A node is identified by
// its path, the kinds and names from the top down to it; the same path on
// any thread of any rank is one node. A deep copy's name is
// "deep_copy DST_SPACE:DST_LABEL <- SRC_SPACE:SRC_LABEL". Profile sections
// need not nest: each is a node of kind "section" at the top, matched by
// its section id within its thread.
//
// Per node and rank: calls; inclusive time (the sum of end − begin);
// self time (inclusive less that of the nodes nested in it); and MPI time,
// the durations of the thread's MPI calls while the node was open. Over
// ranks: the sums, and the per-rank inclusive totals' mean, min and max
// over every rank of the report (a rank that never ran the node counts
// 0), the lowest rank with the max, the number of ranks that ran it, and
// imbalance = max / mean (1 when every rank took as long; the number of
// ranks when one rank did it all).
//
// Children are sorted by total time, most first, then by kind and name,
// so that equal inputs give equal outputs.
//
// # Events that do not nest
//
// An end closes the innermost open node of its kind (RegionEnd a region,
// KernelEnd a kernel or fence, CopyEnd a copy); nodes begun inside it and
// still open are closed with it, at the same time (Counts.Crossed). An end
// with nothing of its kind open, and a section stop for a section not
// started in its thread, are skipped; a pop the recorder flagged
// EndUnmatched closes nothing; an end flagged EndUnwound (the recorder
// closed the node at the thread's or the program's end, or at Kokkos'
// finalisation) counts as a call, and as unwound. What is still open when
// a thread's events end is closed at the end of its last event. All are
// counted (Counts); tracefmt.Validator names each.
//
// # Memory
//
// Per rank and memory space, Alloc adds bytes and Free removes them; the
// high-water mark is the most the running sum reaches, taking the events
// of every thread in the order of their start times (the reader's order
// between equal times). Over ranks: the largest mark, the lowest rank
// with it, and the mean over every rank (0 where a rank never allocated).
// An Aggregator keeps 16 bytes per allocation and deallocation until
// Finish, to take them in time order.
//
// # The critical path
//
// With KeepSpans, an Aggregator keeps every call's interval; Spans gives
// them to the critical path's attribution (critpath.StepPath.Report),
// whose result MarkCriticalPath marks on the report's nodes.
package regions
