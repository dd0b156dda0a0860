// Package latency is the latency model the critical-path analysis weights
// the task graph with: the one-way latency of a point-to-point message of
// b bytes (message edges) and the time of a collective with b bytes per
// process on p processes (collective vertices). Fit builds a model from the
// points of the calibration benchmark (recorder/calibrate); Default is a
// model embedded in mpitrace for use before any calibration. This is the
// only package of mpitrace that uses gonum.
//
// All times are nanoseconds. A point's Bytes is the per-process block
// (count × datatype size) as the recorder sees it: the message for
// point-to-point, the buffer for MPI_Bcast/MPI_Reduce/MPI_Allreduce, the
// block each process sends or receives for MPI_Scatter/MPI_Gather/
// MPI_Allgather/MPI_Alltoall, 0 for MPI_Barrier.
//
// # Fitting criterion
//
// Sizes span six orders of magnitude, so every fit minimises the squared
// relative error Σ ((y − ŷ)/y)², i.e. weighted least squares with weights
// 1/y². Under noise of constant relative size (what a benchmark shows)
// this is the maximum-likelihood fit, and it keeps the 4-byte latency from
// being swamped by the 4-MiB bandwidth term. Coefficients are constrained
// to be non-negative (a latency or an inverse bandwidth is never negative):
// each fit is an exact non-negative least-squares solve, trying every
// subset of the basis and solving each with gonum's SVD (mat.SVD), keeping
// the best feasible one. R² is the coefficient of determination of this
// weighted fit (gonum stat.RSquaredFrom) and RelRMS the root mean square
// relative error; on a segment where the latency barely changes R² is
// small however good the fit, and RelRMS is the better guide.
//
// # Point-to-point: piecewise linear
//
// latency(b) = a + b_i·b on segment i. MPI libraries switch protocols with
// the size (eager, copy-in/copy-out, rendezvous, single-copy), so the line
// is piecewise, with up to MaxBreakpoints breakpoints between consecutive
// measured sizes and at least MinSegmentSizes distinct sizes per segment.
// Every segmentation with 0, 1 and 2 breakpoints is tried and the one with
// the lowest Bayesian information criterion, with a doubled penalty, wins:
//
//	BIC = n·ln(max(SSE/n, NoiseFloor²)) + PenaltyFactor·(k·s + s − 1)·ln(n)
//
// where SSE is the total squared relative error, n the number of points, s
// the number of segments and k the coefficients per segment (breakpoints
// count as parameters too). The penalty is doubled (PenaltyFactor 2)
// because each breakpoint's position is picked from many candidates, which
// fits noise better than the plain BIC assumes: on a straight line with
// 2–10 % noise at 21 sizes the plain BIC splits a quarter of the time, the
// doubled one about 1 %. A breakpoint with k = 2 must therefore cut the
// error by a factor of n^(6/n) (2.4× for 21 sizes) to be kept, and once a
// fit is within NoiseFloor (1 %) RMS relative error nothing is split.
// Breakpoints[i] is the largest measured size of
// segment i: a message of b bytes uses the first segment whose breakpoint
// is at least b, and sizes outside the measured range extend the first or
// last segment.
//
// # Collectives: two variables
//
// Each collective is modelled from the cost of the algorithms MPI
// libraries use for it (Thakur, Rabenseifner and Gropp, "Optimization of
// collective communication operations in MPICH", 2005), with p the process
// count and b the bytes per process:
//
//   - tree-shaped (MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allreduce, and
//     the default for other names): binomial trees and recursive doubling
//     take log2(p) rounds of messages of b bytes:
//     t = c0 + c1·log2(p) + c2·b + c3·b·log2(p);
//   - gather-like (MPI_Scatter, MPI_Gather, MPI_Allgather): log2(p) rounds
//     (binomial, recursive doubling, Bruck) but the root, or every process,
//     moves all p−1 other blocks: t = c0 + c1·log2(p) + c2·b + c3·b·(p−1);
//   - all-to-all (MPI_Alltoall): pairwise exchange, p−1 rounds moving one
//     block each: t = c0 + c1·(p−1) + c2·b + c3·b·(p−1).
//
// c0 and c2 catch the per-call overhead and local copies that do not
// depend on p. Collectives switch protocols with the size as point-to-point
// messages do, so the model is piecewise in b with the breakpoint search
// and criterion above (the size axis pooled over all process counts).
//
// Fallbacks when the data cannot separate the terms: with one process
// count p0 ≥ 2 the terms are collinear, so the model keeps only the terms
// that depend on p (c1 and c3 above) and drops c0 and c2: the measured
// curve is then scaled to other process counts by the algorithms'
// structure (log2(p)/log2(p0), (p−1)/(p0−1)) instead of being measured,
// and the model's Note says so. With one size (MPI_Barrier, whose size is
// always 0) the terms in b are dropped. With p0 = 1 the p terms are
// dropped instead.
//
// # Outliers
//
// Benchmark noise is one-sided: a descheduled rank only ever slows a batch
// down, and on a busy machine a point can be a hundred times too slow.
// Within each series (a kind and a process count, by increasing size) a
// point more than OutlierFactor times slower than both its neighbours is
// left out of the fit (the first and last points are compared with their
// one neighbour, the last allowing for the size ratio); a protocol switch
// lifts every larger size as well and is not a spike. At most a quarter of
// a series is dropped. The model lists these points in Outliers.
//
// # Predictions
//
// Model.P2P and Model.Collective evaluate the model and clamp negative
// values at 0. Model.Collective reports ok=false for a collective the
// model has no fit for; Model.CollectiveOrFallback then uses a related
// collective's fit (documented there) and says which.
//
// # Model file
//
// Write produces indented JSON with a stable field order, collectives
// sorted by name and points sorted, so the same model writes the same
// bytes; Read and Load check the version (ModelVersion), reject unknown
// fields and validate every field, and their errors name the file and the
// field. The embedded default (default_model.json) was produced by
// gen_default.go with Open MPI on the development machine; its Source is
// DefaultSource so that tools can say which model they used.
package latency
