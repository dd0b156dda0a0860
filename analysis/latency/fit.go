package latency

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

// Fitting constants (see the package documentation).
const (
	// MinSegmentSizes is the fewest distinct message sizes a segment
	// may hold.
	MinSegmentSizes = 3
	// MaxBreakpoints is the most protocol switches a fit looks for.
	MaxBreakpoints = 2
	// NoiseFloor is the relative error below which a fit is considered
	// exact: a breakpoint must beat noise of this size to be kept.
	NoiseFloor = 0.01
	// PenaltyFactor multiplies the BIC's parameter penalty: choosing a
	// breakpoint's position among many candidates fits noise better than
	// one fixed model would, which the plain BIC does not pay for. With 2,
	// a straight line with 2–10 % noise on 21 sizes is split in about 1 %
	// of trials (plain BIC: 25 %).
	PenaltyFactor = 2
	// OutlierFactor is how many times slower than both its neighbours
	// a measurement must be to be dropped as disturbed.
	OutlierFactor = 2
	// maxSearchSizes bounds the two-breakpoint search (quadratic in the
	// number of distinct sizes); above it only one breakpoint is tried.
	maxSearchSizes = 256
)

// Fit fits a model to points: the point-to-point points (Kind "p2p") give
// the piecewise line, and each collective's points (Kind its MPI name)
// give its two-variable model. The model's Source is SourceCalibrated and
// Created the current time; the caller fills in Machine, MPI, Procs and
// CPUs.
func Fit(points []Point) (*Model, error) {
	for i, p := range points {
		if err := p.validate(); err != nil {
			return nil, fmt.Errorf("point %d (%s bytes=%d procs=%d): %w", i, p.Kind, p.Bytes, p.Procs, err)
		}
	}
	m := &Model{
		Version: ModelVersion,
		Created: time.Now().UTC().Truncate(time.Second),
		Source:  SourceCalibrated,
		Points:  slices.Clone(points),
	}
	sortPoints(m.Points)
	kept, outliers := screenSpikes(m.Points)
	sortPoints(outliers)
	m.Outliers = outliers
	var p2p []Point
	byName := map[string][]Point{}
	for _, p := range kept {
		if p.Kind == KindP2P {
			p2p = append(p2p, p)
		} else {
			byName[p.Kind] = append(byName[p.Kind], p)
		}
	}
	var err error
	if m.PointToPoint, err = fitP2P(p2p); err != nil {
		return nil, fmt.Errorf("point-to-point: %w", err)
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c, err := fitCollective(n, byName[n])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		m.Collectives = append(m.Collectives, c)
	}
	return m, nil
}

// ---- outliers ----

// screenSpikes drops disturbed measurements from sorted points. Noise in a
// latency benchmark is one-sided (a descheduled rank only slows a batch
// down) and latency grows with the size, so within one series (a kind and
// a process count, by increasing size) a point more than OutlierFactor
// times slower than both its neighbours is a disturbed measurement, not a
// protocol switch (which lifts every larger size too). The first point is
// compared with the second, the last with the one before it, allowing for
// the size ratio between them. The worst spike goes first and the series
// is checked again, up to a quarter of its points; series of fewer than 4
// points are left alone.
func screenSpikes(sorted []Point) (kept, dropped []Point) {
	for start := 0; start < len(sorted); {
		end := start + 1
		for end < len(sorted) && sorted[end].Kind == sorted[start].Kind && sorted[end].Procs == sorted[start].Procs {
			end++
		}
		series := slices.Clone(sorted[start:end])
		for budget := len(series) / 4; budget > 0 && len(series) >= 4; budget-- {
			worst, ratio := -1, 1.0
			for i, p := range series {
				var ref float64
				switch {
				case i == 0:
					ref = series[1].Nanos
				case i == len(series)-1:
					prev := series[i-1]
					ref = prev.Nanos * max(1, float64(p.Bytes)/max(float64(prev.Bytes), 1))
				default:
					ref = max(series[i-1].Nanos, series[i+1].Nanos)
				}
				if r := p.Nanos / (OutlierFactor * max(ref, 1)); r > ratio {
					worst, ratio = i, r
				}
			}
			if worst < 0 {
				break
			}
			dropped = append(dropped, series[worst])
			series = slices.Delete(series, worst, worst+1)
		}
		kept = append(kept, series...)
		start = end
	}
	return kept, dropped
}

// ---- piecewise search ----

// series is one model's points sorted by size, with the index of each
// distinct size's first point.
type series struct {
	pts   []Point
	sizes []int64 // distinct sizes, increasing
	first []int   // first[i]: index in pts of sizes[i]'s first point; first[len(sizes)] == len(pts)
}

func newSeries(points []Point) *series {
	s := &series{pts: slices.Clone(points)}
	sort.SliceStable(s.pts, func(i, j int) bool {
		a, b := s.pts[i], s.pts[j]
		if a.Bytes != b.Bytes {
			return a.Bytes < b.Bytes
		}
		if a.Procs != b.Procs {
			return a.Procs < b.Procs
		}
		return a.Nanos < b.Nanos
	})
	for i, p := range s.pts {
		if len(s.sizes) == 0 || s.sizes[len(s.sizes)-1] != p.Bytes {
			s.sizes = append(s.sizes, p.Bytes)
			s.first = append(s.first, i)
		}
	}
	s.first = append(s.first, len(s.pts))
	return s
}

// piece is the fit of the sizes lo..hi (indices into series.sizes).
type piece struct {
	lo, hi int
	coef   []float64
	sse    float64
	ok     bool
}

// segments fits the terms on up to MaxBreakpoints+1 segments of
// consecutive sizes, each holding at least MinSegmentSizes sizes, and
// returns the segmentation with the lowest BIC (see the package doc).
func (s *series) segments(names []string) ([]piece, error) {
	cache := map[[2]int]piece{}
	seg := func(lo, hi int) piece {
		if f, ok := cache[[2]int{lo, hi}]; ok {
			return f
		}
		f := piece{lo: lo, hi: hi}
		f.coef, f.sse, f.ok = fitTerms(s.pts[s.first[lo]:s.first[hi+1]], names)
		cache[[2]int{lo, hi}] = f
		return f
	}
	n := float64(len(s.pts))
	k := len(names)
	bic := func(sse float64, segs int) float64 {
		return n*math.Log(max(sse/n, NoiseFloor*NoiseFloor)) + PenaltyFactor*float64(segs*k+segs-1)*math.Log(n)
	}
	D := len(s.sizes)
	whole := seg(0, D-1)
	if !whole.ok {
		return nil, fmt.Errorf("internal error: no least-squares solution for %d points", len(s.pts))
	}
	best, bestBIC := []piece{whole}, bic(whole.sse, 1)
	try := func(ends ...int) {
		var ps []piece
		var sse float64
		lo := 0
		for _, hi := range ends {
			f := seg(lo, hi)
			if !f.ok {
				return
			}
			ps = append(ps, f)
			sse += f.sse
			lo = hi + 1
		}
		if v := bic(sse, len(ps)); v < bestBIC {
			best, bestBIC = ps, v
		}
	}
	const m = MinSegmentSizes
	if MaxBreakpoints >= 1 {
		for s1 := m - 1; s1+m <= D-1; s1++ {
			try(s1, D-1)
		}
	}
	if MaxBreakpoints >= 2 && D <= maxSearchSizes {
		for s1 := m - 1; s1 < D; s1++ {
			for s2 := s1 + m; s2+m <= D-1; s2++ {
				try(s1, s2, D-1)
			}
		}
	}
	return best, nil
}

// ---- point-to-point ----

// fitP2P fits latency = a + b·bytes piecewise.
func fitP2P(points []Point) (P2PModel, error) {
	s := newSeries(points)
	if len(s.pts) < MinSegmentSizes || len(s.sizes) < 2 {
		return P2PModel{}, fmt.Errorf("too few points: need at least %d at 2 or more message sizes, have %d at %d", MinSegmentSizes, len(s.pts), len(s.sizes))
	}
	names := []string{TermConst, TermBytes}
	pieces, err := s.segments(names)
	if err != nil {
		return P2PModel{}, err
	}
	var m P2PModel
	for i, f := range pieces {
		sub := s.pts[s.first[f.lo]:s.first[f.hi+1]]
		r2, rel := quality(sub, names, f.coef)
		m.Segments = append(m.Segments, Segment{
			FirstBytes: s.sizes[f.lo], LastBytes: s.sizes[f.hi],
			A: f.coef[0], B: f.coef[1], R2: r2, RelRMS: rel, Points: len(sub),
		})
		if i < len(pieces)-1 {
			m.Breakpoints = append(m.Breakpoints, s.sizes[f.hi])
		}
	}
	return m, nil
}

// ---- collectives ----

// Term names: the basis functions of the models, of the message size b
// (bytes per process) and the process count p.
const (
	TermConst       = "1"
	TermLog2P       = "log2(p)"
	TermPMinus1     = "(p-1)"
	TermBytes       = "bytes"
	TermBytesLog2P  = "bytes*log2(p)"
	TermBytesPMinus = "bytes*(p-1)"
)

type termDef struct {
	usesBytes, usesProcs bool
	f                    func(b, p float64) float64
}

var terms = map[string]termDef{
	TermConst:       {false, false, func(b, p float64) float64 { return 1 }},
	TermLog2P:       {false, true, func(b, p float64) float64 { return math.Log2(p) }},
	TermPMinus1:     {false, true, func(b, p float64) float64 { return p - 1 }},
	TermBytes:       {true, false, func(b, p float64) float64 { return b }},
	TermBytesLog2P:  {true, true, func(b, p float64) float64 { return b * math.Log2(p) }},
	TermBytesPMinus: {true, true, func(b, p float64) float64 { return b * (p - 1) }},
}

// Bases of the three families of collectives (see the package doc).
var (
	basisTree     = []string{TermConst, TermLog2P, TermBytes, TermBytesLog2P}
	basisGather   = []string{TermConst, TermLog2P, TermBytes, TermBytesPMinus}
	basisAlltoall = []string{TermConst, TermPMinus1, TermBytes, TermBytesPMinus}
)

// Basis returns the basis functions of the model of the named collective
// (before terms are dropped for lack of data).
func Basis(name string) []string {
	switch baseCollective(name) {
	case "MPI_Scatter", "MPI_Gather", "MPI_Allgather":
		return slices.Clone(basisGather)
	case "MPI_Alltoall":
		return slices.Clone(basisAlltoall)
	}
	return slices.Clone(basisTree)
}

func fitCollective(name string, points []Point) (CollectiveModel, error) {
	s := newSeries(points)
	c := CollectiveModel{Name: name, Points: len(s.pts)}
	for _, p := range s.pts {
		if !slices.Contains(c.Procs, p.Procs) {
			c.Procs = append(c.Procs, p.Procs)
		}
	}
	slices.Sort(c.Procs)
	onePCount := len(c.Procs) == 1
	// With one process count the process terms and the others are
	// collinear: keep the process terms (the algorithms' structure),
	// unless p is 1 and they vanish.
	keepProcTerms := !onePCount || c.Procs[0] >= 2
	var names, dropped []string
	for _, t := range Basis(name) {
		d := terms[t]
		switch {
		case d.usesBytes && len(s.sizes) == 1,
			onePCount && d.usesProcs != keepProcTerms:
			dropped = append(dropped, t)
		default:
			names = append(names, t)
		}
	}
	var notes []string
	if onePCount && keepProcTerms {
		notes = append(notes, fmt.Sprintf("measured at one process count (%d): the dependence on the process count is assumed from the basis (%s), not measured", c.Procs[0], strings.Join(names, ", ")))
	} else if onePCount {
		notes = append(notes, "measured at one process: predictions do not depend on the process count")
	}
	if len(s.sizes) == 1 {
		notes = append(notes, fmt.Sprintf("measured at one size (%d bytes): predictions do not depend on the size", s.sizes[0]))
	}
	c.Note = strings.Join(notes, "; ")
	pieces, err := s.segments(names)
	if err != nil {
		return c, err
	}
	for i, f := range pieces {
		sub := s.pts[s.first[f.lo]:s.first[f.hi+1]]
		seg := CollectiveSegment{FirstBytes: s.sizes[f.lo], LastBytes: s.sizes[f.hi], Points: len(sub)}
		for j, t := range names {
			seg.Terms = append(seg.Terms, Term{Name: t, Coef: f.coef[j]})
		}
		seg.R2, seg.RelRMS = quality(sub, names, f.coef)
		c.Segments = append(c.Segments, seg)
		if i < len(pieces)-1 {
			c.Breakpoints = append(c.Breakpoints, s.sizes[f.hi])
		}
	}
	return c, nil
}

// ---- least squares ----

// relWeights are the weights 1/y² that make weighted least squares
// minimise the squared relative error (times below 1 ns count as 1 ns).
func relWeights(y []float64) []float64 {
	w := make([]float64, len(y))
	for i, v := range y {
		v = max(v, 1)
		w[i] = 1 / (v * v)
	}
	return w
}

// nnls solves min Σ w_i (y_i − Σ_j c_j cols[j][i])² subject to c ≥ 0 for a
// handful of columns, exactly: the solution is the unconstrained least
// squares solution on its support, so it tries every subset of columns
// (fewest first), solves each with gonum's SVD (columns scaled to unit
// maximum; rank-deficient subsets skipped) and keeps the best feasible one.
// Columns outside the chosen subset get 0. ok is false when no subset is
// solvable (no points).
func nnls(cols [][]float64, y, w []float64) (coef []float64, sse float64, ok bool) {
	k, n := len(cols), len(y)
	if k == 0 || k > 16 {
		return nil, 0, false
	}
	sw := make([]float64, n)
	b := mat.NewVecDense(max(n, 1), nil)
	for i := range n {
		sw[i] = math.Sqrt(w[i])
		b.SetVec(i, sw[i]*y[i])
	}
	masks := make([]int, 0, 1<<k-1)
	for m := 1; m < 1<<k; m++ {
		masks = append(masks, m)
	}
	sort.SliceStable(masks, func(i, j int) bool { return bits.OnesCount(uint(masks[i])) < bits.OnesCount(uint(masks[j])) })
	bestSSE := math.Inf(1)
	for _, mask := range masks {
		idx := make([]int, 0, k)
		for j := range k {
			if mask&(1<<j) != 0 {
				idx = append(idx, j)
			}
		}
		if n < len(idx) {
			continue
		}
		a := mat.NewDense(n, len(idx), nil)
		scale := make([]float64, len(idx))
		for jj, j := range idx {
			for i := range n {
				scale[jj] = max(scale[jj], math.Abs(sw[i]*cols[j][i]))
			}
			if scale[jj] == 0 || math.IsInf(scale[jj], 0) || math.IsNaN(scale[jj]) {
				scale[jj] = -1
			}
		}
		if slices.Contains(scale, -1) {
			continue
		}
		for jj, j := range idx {
			for i := range n {
				a.Set(i, jj, sw[i]*cols[j][i]/scale[jj])
			}
		}
		var svd mat.SVD
		if !svd.Factorize(a, mat.SVDThin) {
			continue
		}
		vals := svd.Values(nil)
		if vals[len(vals)-1] <= vals[0]*1e-10 {
			continue // the columns are (nearly) dependent on these points
		}
		var x mat.VecDense
		svd.SolveVecTo(&x, b, len(idx))
		c := make([]float64, k)
		feasible := true
		for jj, j := range idx {
			v := x.AtVec(jj)
			if v < -1e-9 || math.IsNaN(v) || math.IsInf(v, 0) {
				feasible = false
				break
			}
			c[j] = max(v, 0) / scale[jj]
		}
		if !feasible {
			continue
		}
		var s float64
		for i := range n {
			var e float64
			for j := range k {
				e += c[j] * cols[j][i]
			}
			d := y[i] - e
			s += w[i] * d * d
		}
		// Fewer columns win ties (masks come fewest first).
		if s < bestSSE*(1-1e-9)-1e-300 || coef == nil {
			coef, bestSSE = c, s
		}
	}
	if coef == nil {
		return nil, 0, false
	}
	return coef, bestSSE, true
}

// fitTerms fits Σ coef_j·term_j(bytes, procs) to pts by nnls with the
// relative weights.
func fitTerms(pts []Point, names []string) (coef []float64, sse float64, ok bool) {
	cols := columns(pts, names)
	y := make([]float64, len(pts))
	for i, p := range pts {
		y[i] = p.Nanos
	}
	return nnls(cols, y, relWeights(y))
}

func columns(pts []Point, names []string) [][]float64 {
	cols := make([][]float64, len(names))
	for j, t := range names {
		cols[j] = make([]float64, len(pts))
		for i, p := range pts {
			cols[j][i] = terms[t].f(float64(p.Bytes), float64(p.Procs))
		}
	}
	return cols
}

// quality returns the coefficient of determination of the relative
// (1/y²-weighted) fit, computed with gonum's stat.RSquaredFrom, and the
// root mean square relative error. When the points do not vary (one point,
// or all equal) R² is 1 for an exact fit and 0 otherwise.
func quality(pts []Point, names []string, coef []float64) (r2, relRMS float64) {
	cols := columns(pts, names)
	y := make([]float64, len(pts))
	est := make([]float64, len(pts))
	for i, p := range pts {
		y[i] = p.Nanos
		for j := range names {
			est[i] += coef[j] * cols[j][i]
		}
	}
	w := relWeights(y)
	var sse float64
	for i := range y {
		d := y[i] - est[i]
		sse += w[i] * d * d
	}
	relRMS = math.Sqrt(sse / float64(len(y)))
	mean := stat.Mean(y, w)
	var tot float64
	for i := range y {
		d := y[i] - mean
		tot += w[i] * d * d
	}
	if len(y) < 2 || tot <= 1e-18*float64(len(y)) {
		if relRMS <= 1e-9 {
			return 1, relRMS
		}
		return 0, relRMS
	}
	r2 = stat.RSquaredFrom(est, y, w)
	if math.IsNaN(r2) || math.IsInf(r2, 0) {
		r2 = 0
	}
	return r2, relRMS
}
