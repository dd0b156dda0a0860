// Package loops analyses the loop events of a trace (format version 3):
// per loop and calling context, over all ranks and threads, how often it
// ran, its iterations, the time and counters of its sampled iterations,
// and how well the samples estimate the time it took.
//
// # What is recorded
//
// Per thread, loop events nest: LoopBegin (IterBegin ... IterEnd)*
// LoopEnd. Every execution of a top-level loop is recorded, with its exact
// iteration total (LoopEnd's count); each iteration is sampled with a
// chance p (IterBegin/IterEnd around it, with counter increments). A loop
// nested in another is recorded only inside a sampled iteration of its
// parent, so at depth d its executions are seen with probability p^d.
//
// # Estimates from the samples
//
// For the executions recorded, with N their iterations and n sampled
// iterations of mean time m and sample standard deviation s, the
// estimated time is m·N and its 95% confidence interval
//
//	m·N ± t(n-1) · N · s/√n · √(1 - n/N)
//
// (Student's t quantile; the finite population correction makes the
// interval vanish when every iteration is sampled). The measured time is
// the sum of LoopEnd - LoopBegin: it also holds the time between
// iterations (the loop's own control and the markers), so at chance 1 the
// estimate is slightly below it. Quality is estimate / measured, and the
// report says whether the measured time lies in the interval.
//
// # Run-wide estimates of nested loops
//
// A nested loop's recorded figures cover only the sampled iterations of
// its parent. Its run-wide figures are estimated by inverse-probability
// weighting with the observed inclusion rate: if the parent ran N
// iterations of which m were sampled (for a parent that is itself nested,
// N is its own run-wide estimate), each recorded parent iteration stands
// for N/m of them, and
//
//	total = direct + N/m · Σ y_j
//
// where y_j is what the nested loop did (time, iterations, executions)
// inside the j-th sampled parent iteration (0 when it did not run there)
// and direct is what it did between the parent's iterations, where it is
// always recorded. The observed rate m/N is used rather than the nominal
// p^d: the trace need not say p (loop_chance "instrumented" leaves it to
// each marker), and conditioning on m removes the variance of the number
// of samples. The 95% interval treats the m parent iterations as a simple
// random sample of the N (one-stage cluster sampling):
//
//	N/m·Σy ± t(m-1) · N · s_y/√m · √(1 - m/N)
//
// with s_y the standard deviation of the y_j; the uncertainty of N itself
// (at depth 2 and more) is not propagated, so the deeper intervals are
// too narrow.
//
// # Memory and determinism
//
// An Aggregator keeps per loop and calling context a fixed-size tally:
// moments of the iteration times (Welford), counter sums, and a quantile
// sketch that holds the samples exactly up to 4096 and a log-bucketed
// histogram beyond (relative error under 0.5%, at most a few thousand
// buckets). Ranks are aggregated independently (concurrently) and merged in
// rank order, so the output does not depend on the reading order.
package loops
