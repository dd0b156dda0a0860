package latency

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// sizes returns lo, 2·lo, ..., up to hi.
func sizes(lo, hi int64) []int64 {
	var s []int64
	for b := lo; b <= hi; b *= 2 {
		s = append(s, b)
	}
	return s
}

// p2pPoints samples f at every size, with multiplicative Gaussian noise of
// relative size noise (0: exact), deterministically from seed.
func p2pPoints(f func(b float64) float64, noise float64, seed uint64) []Point {
	r := rand.New(rand.NewPCG(seed, 42))
	var pts []Point
	for _, b := range sizes(4, 4<<20) {
		pts = append(pts, Point{Kind: KindP2P, Bytes: b, Procs: 2, Nanos: f(float64(b)) * (1 + noise*r.NormFloat64())})
	}
	return pts
}

func near(got, want, relTol float64) bool {
	return math.Abs(got-want) <= relTol*math.Abs(want)
}

func TestFitP2PSingleLine(t *testing.T) {
	for _, tc := range []struct {
		noise, tolA, tolB float64
	}{
		{0, 1e-6, 1e-6},
		{0.03, 0.10, 0.05},
	} {
		for seed := range uint64(5) {
			m, err := Fit(p2pPoints(func(b float64) float64 { return 500 + 0.1*b }, tc.noise, seed))
			if err != nil {
				t.Fatal(err)
			}
			p := m.PointToPoint
			if len(p.Segments) != 1 || len(p.Breakpoints) != 0 {
				t.Fatalf("noise %v seed %d: %d segments, breakpoints %v; want one line", tc.noise, seed, len(p.Segments), p.Breakpoints)
			}
			s := p.Segments[0]
			if !near(s.A, 500, tc.tolA) || !near(s.B, 0.1, tc.tolB) {
				t.Errorf("noise %v seed %d: a=%v b=%v, want 500 and 0.1", tc.noise, seed, s.A, s.B)
			}
			if s.R2 < 0.99 {
				t.Errorf("noise %v seed %d: R² = %v", tc.noise, seed, s.R2)
			}
			if s.FirstBytes != 4 || s.LastBytes != 4<<20 || s.Points != 21 {
				t.Errorf("segment range %d..%d (%d points)", s.FirstBytes, s.LastBytes, s.Points)
			}
		}
	}
}

// A straight line with noise is rarely split.
func TestFitP2PNoFalseBreakpoints(t *testing.T) {
	split := 0
	const trials = 100
	for seed := range uint64(trials) {
		m, err := Fit(p2pPoints(func(b float64) float64 { return 800 + 0.25*b }, 0.05, seed))
		if err != nil {
			t.Fatal(err)
		}
		if len(m.PointToPoint.Segments) > 1 {
			split++
		}
	}
	if split > trials/20 {
		t.Errorf("%d of %d noisy straight lines split; want at most 5 %%", split, trials)
	}
}

func eagerRendezvous(b float64) float64 {
	if b <= 8192 {
		return 300 + 0.5*b
	}
	return 6000 + 0.08*b
}

func TestFitP2PTwoSegments(t *testing.T) {
	for _, tc := range []struct {
		noise, tol float64
	}{{0, 1e-6}, {0.02, 0.12}} {
		for seed := range uint64(5) {
			m, err := Fit(p2pPoints(eagerRendezvous, tc.noise, seed))
			if err != nil {
				t.Fatal(err)
			}
			p := m.PointToPoint
			if !slices.Equal(p.Breakpoints, []int64{8192}) {
				t.Fatalf("noise %v seed %d: breakpoints %v, want [8192]", tc.noise, seed, p.Breakpoints)
			}
			s0, s1 := p.Segments[0], p.Segments[1]
			if !near(s0.A, 300, tc.tol) || !near(s0.B, 0.5, tc.tol) || !near(s1.A, 6000, 2*tc.tol) || !near(s1.B, 0.08, tc.tol) {
				t.Errorf("noise %v seed %d: segments %+v %+v", tc.noise, seed, s0, s1)
			}
			if s0.LastBytes != 8192 || s1.FirstBytes != 16384 {
				t.Errorf("segment ranges %d..%d, %d..%d", s0.FirstBytes, s0.LastBytes, s1.FirstBytes, s1.LastBytes)
			}
			for _, s := range p.Segments {
				if s.R2 < 0.98 {
					t.Errorf("noise %v seed %d: R² %v", tc.noise, seed, s.R2)
				}
			}
			// Predictions follow the right segment on both sides.
			for _, b := range []int64{4, 1000, 8192, 8193, 1 << 20, 64 << 20} {
				if got, want := m.P2P(b), eagerRendezvous(float64(b)); !near(got, want, 3*tc.tol+1e-9) {
					t.Errorf("noise %v: P2P(%d) = %v, want %v", tc.noise, b, got, want)
				}
			}
		}
	}
}

func TestFitP2PThreeSegments(t *testing.T) {
	f := func(b float64) float64 {
		switch {
		case b <= 256:
			return 200 + 0.2*b
		case b <= 65536:
			return 2000 + 0.3*b
		}
		return 30000 + 0.07*b
	}
	m, err := Fit(p2pPoints(f, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.PointToPoint.Breakpoints; !slices.Equal(got, []int64{256, 65536}) {
		t.Fatalf("breakpoints %v, want [256 65536]", got)
	}
	for _, b := range sizes(4, 4<<20) {
		if got, want := m.P2P(b), f(float64(b)); !near(got, want, 1e-6) {
			t.Errorf("P2P(%d) = %v, want %v", b, got, want)
		}
	}
}

func TestFitP2PNonNegative(t *testing.T) {
	// Unconstrained, these points give a negative intercept.
	pts := []Point{
		{KindP2P, 1000, 2, 50}, {KindP2P, 2000, 2, 200}, {KindP2P, 4000, 2, 500}, {KindP2P, 8000, 2, 1100},
	}
	m, err := Fit(pts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range m.PointToPoint.Segments {
		if s.A < 0 || s.B < 0 {
			t.Errorf("segment %+v has a negative coefficient", s)
		}
	}
}

func TestPredictionsClampedAtZero(t *testing.T) {
	m := &Model{
		Version: ModelVersion,
		PointToPoint: P2PModel{Segments: []Segment{
			{A: -500, B: 0.1},
		}},
		Collectives: []CollectiveModel{{
			Name:     "MPI_Allreduce",
			Segments: []CollectiveSegment{{Terms: []Term{{TermConst, 100}, {TermLog2P, -1000}}}},
		}},
	}
	if got := m.P2P(8); got != 0 {
		t.Errorf("P2P(8) = %v, want 0", got)
	}
	if got := m.P2P(10000); !near(got, 500, 1e-12) {
		t.Errorf("P2P(10000) = %v, want 500", got)
	}
	if got, ok := m.Collective("MPI_Allreduce", 8, 16); !ok || got != 0 {
		t.Errorf("Collective = %v, %v; want 0, true", got, ok)
	}
	if got, _ := m.CollectiveOrFallback("MPI_Iallreduce", 8, 16); got != 0 {
		t.Errorf("CollectiveOrFallback = %v, want 0", got)
	}
}

func TestFitErrors(t *testing.T) {
	good := p2pPoints(func(b float64) float64 { return 100 + b }, 0, 0)
	for _, tc := range []struct {
		name string
		pts  []Point
		want string
	}{
		{"no points", nil, "point-to-point: too few points"},
		{"collectives only", []Point{{"MPI_Barrier", 0, 2, 1000}}, "point-to-point: too few points"},
		{"two p2p points", good[:2], "too few points: need at least 3"},
		{"one size", []Point{{KindP2P, 8, 2, 1}, {KindP2P, 8, 2, 2}, {KindP2P, 8, 2, 3}}, "at 2 or more message sizes"},
		{"NaN", append(slices.Clone(good), Point{KindP2P, 8, 2, math.NaN()}), "point 21 (p2p bytes=8 procs=2): time not a finite number"},
		{"negative time", append(slices.Clone(good), Point{KindP2P, 8, 2, -1}), "negative time"},
		{"negative bytes", append(slices.Clone(good), Point{"MPI_Bcast", -8, 2, 1}), "negative bytes"},
		{"no procs", append(slices.Clone(good), Point{"MPI_Bcast", 8, 0, 1}), "procs below 1"},
		{"no kind", append(slices.Clone(good), Point{"", 8, 2, 1}), "no kind"},
	} {
		_, err := Fit(tc.pts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// collPoints samples f over process counts and sizes.
func collPoints(name string, procs []int, szs []int64, f func(b, p float64) float64, noise float64, seed uint64) []Point {
	r := rand.New(rand.NewPCG(seed, 7))
	var pts []Point
	for _, p := range procs {
		for _, b := range szs {
			pts = append(pts, Point{name, b, p, f(float64(b), float64(p)) * (1 + noise*r.NormFloat64())})
		}
	}
	return pts
}

func withP2P(pts []Point) []Point {
	return append(p2pPoints(func(b float64) float64 { return 400 + 0.1*b }, 0, 0), pts...)
}

func coefs(s CollectiveSegment) map[string]float64 {
	m := map[string]float64{}
	for _, t := range s.Terms {
		m[t.Name] = t.Coef
	}
	return m
}

func TestFitCollectiveTwoVariables(t *testing.T) {
	procs := []int{2, 3, 4, 6, 8, 16}
	szs := sizes(4, 64<<10)
	for _, tc := range []struct {
		name string
		want map[string]float64
	}{
		{"MPI_Allreduce", map[string]float64{TermConst: 300, TermLog2P: 900, TermBytes: 0.05, TermBytesLog2P: 0.4}},
		{"MPI_Allgather", map[string]float64{TermConst: 200, TermLog2P: 700, TermBytes: 0.1, TermBytesPMinus: 0.3}},
		{"MPI_Alltoall", map[string]float64{TermConst: 1000, TermPMinus1: 400, TermBytes: 0.02, TermBytesPMinus: 0.25}},
	} {
		basis := Basis(tc.name)
		f := func(b, p float64) float64 {
			var t float64
			for _, n := range basis {
				t += tc.want[n] * terms[n].f(b, p)
			}
			return t
		}
		for _, noise := range []float64{0, 0.02} {
			m, err := Fit(withP2P(collPoints(tc.name, procs, szs, f, noise, 1)))
			if err != nil {
				t.Fatal(err)
			}
			c := m.Collectives[0]
			if c.Name != tc.name || !slices.Equal(c.Procs, procs) || c.Note != "" {
				t.Fatalf("%s: model %+v", tc.name, c)
			}
			if len(c.Segments) != 1 {
				t.Fatalf("%s noise %v: %d segments, want 1", tc.name, noise, len(c.Segments))
			}
			s := c.Segments[0]
			got := coefs(s)
			tol := map[float64]float64{0: 1e-6, 0.02: 0.25}[noise]
			for _, n := range basis {
				// The small terms are hard to see in noise: compare
				// each term's contribution at a typical point instead.
				scale := terms[n].f(1024, 8)
				if d := math.Abs(got[n]-tc.want[n]) * scale; d > tol*f(1024, 8) {
					t.Errorf("%s noise %v: %s = %v, want %v", tc.name, noise, n, got[n], tc.want[n])
				}
			}
			if s.R2 < 0.99 {
				t.Errorf("%s noise %v: R² %v", tc.name, noise, s.R2)
			}
			for _, p := range []int{2, 5, 16} {
				for _, b := range []int64{8, 4096, 65536} {
					got, ok := m.Collective(tc.name, b, p)
					if want := f(float64(b), float64(p)); !ok || !near(got, want, 0.05+tol/5) {
						t.Errorf("%s noise %v: Collective(%d B, %d procs) = %v, %v; want %v", tc.name, noise, b, p, got, ok, want)
					}
				}
			}
		}
	}
}

func TestFitCollectiveProtocolSwitch(t *testing.T) {
	f := func(b, p float64) float64 {
		if b <= 2048 {
			return 200*math.Log2(p) + 0.3*b*math.Log2(p)
		}
		return 5000*math.Log2(p) + 0.1*b*math.Log2(p)
	}
	m, err := Fit(withP2P(collPoints("MPI_Bcast", []int{2, 4, 8}, sizes(4, 64<<10), f, 0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	c := m.Collectives[0]
	if !slices.Equal(c.Breakpoints, []int64{2048}) {
		t.Fatalf("breakpoints %v, want [2048]", c.Breakpoints)
	}
	for _, b := range []int64{4, 2048, 4096, 1 << 20} {
		if got, _ := m.Collective("MPI_Bcast", b, 32); !near(got, f(float64(b), 32), 1e-6) {
			t.Errorf("Collective(%d, 32) = %v, want %v", b, got, f(float64(b), 32))
		}
	}
}

func TestFitCollectiveOneProcessCount(t *testing.T) {
	f := func(b, p float64) float64 { return 600 + 0.2*b }
	pts := collPoints("MPI_Allreduce", []int{2}, sizes(4, 4096), f, 0, 0)
	pts = append(pts, Point{"MPI_Barrier", 0, 2, 450})
	m, err := Fit(withP2P(pts))
	if err != nil {
		t.Fatal(err)
	}
	ar := m.Collectives[slices.IndexFunc(m.Collectives, func(c CollectiveModel) bool { return c.Name == "MPI_Allreduce" })]
	if got := coefs(ar.Segments[0]); len(got) != 2 || !near(got[TermLog2P], 600, 1e-6) || !near(got[TermBytesLog2P], 0.2, 1e-6) {
		t.Errorf("terms %v, want log2(p) 600 and bytes*log2(p) 0.2 only", ar.Segments[0].Terms)
	}
	if !strings.Contains(ar.Note, "one process count (2)") {
		t.Errorf("note %q does not explain the dropped terms", ar.Note)
	}
	// Measured at p=2; scaled by log2(p) elsewhere.
	if got, _ := m.Collective("MPI_Allreduce", 1024, 2); !near(got, f(1024, 2), 1e-6) {
		t.Errorf("at p=2: %v, want %v", got, f(1024, 2))
	}
	if got, _ := m.Collective("MPI_Allreduce", 1024, 16); !near(got, 4*f(1024, 2), 1e-6) {
		t.Errorf("at p=16: %v, want %v", got, 4*f(1024, 2))
	}
	bar := m.Collectives[slices.IndexFunc(m.Collectives, func(c CollectiveModel) bool { return c.Name == "MPI_Barrier" })]
	if len(bar.Segments) != 1 || len(bar.Segments[0].Terms) != 1 || bar.Segments[0].Terms[0].Name != TermLog2P || bar.Segments[0].R2 != 1 {
		t.Errorf("barrier model %+v", bar)
	}
	if !strings.Contains(bar.Note, "one size (0 bytes)") {
		t.Errorf("barrier note %q", bar.Note)
	}
	if got, _ := m.Collective("MPI_Barrier", 0, 8); !near(got, 3*450, 1e-9) {
		t.Errorf("barrier at p=8: %v, want %v", got, 3*450)
	}
}

func TestFitOutliers(t *testing.T) {
	f := func(b float64) float64 { return 500 + 0.1*b }
	pts := p2pPoints(f, 0, 0)
	pts[3].Nanos *= 100  // 32 bytes, a descheduled batch
	pts[20].Nanos *= 100 // the last point
	m, err := Fit(pts)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Outliers) != 2 || m.Outliers[0].Bytes != 32 || m.Outliers[1].Bytes != 4<<20 {
		t.Fatalf("outliers %v, want the points at 32 and 4194304 bytes", m.Outliers)
	}
	if len(m.Points) != 21 {
		t.Errorf("model keeps %d points, want all 21", len(m.Points))
	}
	if s := m.PointToPoint.Segments; len(s) != 1 || !near(s[0].A, 500, 1e-6) || !near(s[0].B, 0.1, 1e-6) {
		t.Errorf("segments %+v", s)
	}
	// A protocol switch is not an outlier.
	m, err = Fit(p2pPoints(eagerRendezvous, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Outliers) != 0 {
		t.Errorf("outliers %v in clean data with a protocol switch", m.Outliers)
	}
}

func TestCollectiveOrFallback(t *testing.T) {
	mk := func(name string, c float64) CollectiveModel {
		return CollectiveModel{Name: name, Segments: []CollectiveSegment{{Terms: []Term{{TermConst, c}}}}}
	}
	m := &Model{
		Version:      ModelVersion,
		PointToPoint: P2PModel{Segments: []Segment{{A: 100, B: 1}}},
		Collectives:  []CollectiveModel{mk("MPI_Allreduce", 1), mk("MPI_Alltoall", 2), mk("MPI_Barrier", 3), mk("MPI_Gather", 4)},
	}
	for _, tc := range []struct {
		name  string
		bytes int64
		used  string
		ns    float64
	}{
		{"MPI_Allreduce", 8, "MPI_Allreduce", 1},
		{"MPI_Iallreduce", 8, "MPI_Allreduce", 1},
		{"MPI_Allreduce_init", 8, "MPI_Allreduce", 1},
		{"MPI_Allreduce_c", 8, "MPI_Allreduce", 1},
		{"MPI_Alltoallv", 8, "MPI_Alltoall", 2},
		{"MPI_Ialltoallw", 8, "MPI_Alltoall", 2},
		{"MPI_Gatherv", 8, "MPI_Gather", 4},
		{"MPI_Ibarrier", 0, "MPI_Barrier", 3},
		{"MPI_Reduce_scatter", 8, "MPI_Allreduce", 1},
		{"MPI_Bcast", 8, "MPI_Allreduce", 1}, // not in this model
		{"MPI_Comm_dup", 0, "MPI_Allreduce", 1},
		{"MPI_Something_new", 0, "MPI_Barrier", 3},
		{"MPI_Something_new", 16, "MPI_Allreduce", 1},
	} {
		ns, used := m.CollectiveOrFallback(tc.name, tc.bytes, 4)
		if used != tc.used || ns != tc.ns {
			t.Errorf("CollectiveOrFallback(%s, %d) = %v, %s; want %v, %s", tc.name, tc.bytes, ns, used, tc.ns, tc.used)
		}
	}
	if _, ok := m.Collective("MPI_Bcast", 8, 4); ok {
		t.Error("Collective(MPI_Bcast) ok in a model without it")
	}
	m.Collectives = nil
	ns, used := m.CollectiveOrFallback("MPI_Allreduce", 100, 8)
	if used != KindP2P || ns != 3*200 {
		t.Errorf("without collectives: %v, %s; want 600 (3 rounds of 200 ns), p2p", ns, used)
	}
}

func TestBasis(t *testing.T) {
	for name, want := range map[string]string{
		"MPI_Bcast":     TermBytesLog2P,
		"MPI_Barrier":   TermBytesLog2P,
		"MPI_Gather":    TermBytesPMinus,
		"MPI_Igatherv":  TermBytesPMinus,
		"MPI_Alltoall":  TermPMinus1,
		"MPI_Alltoallw": TermPMinus1,
		"MPI_Unknown":   TermLog2P,
	} {
		if b := Basis(name); !slices.Contains(b, want) || len(b) != 4 {
			t.Errorf("Basis(%s) = %v, want 4 terms with %s", name, b, want)
		}
	}
}

func TestNNLSRankDeficient(t *testing.T) {
	// Two identical columns: the fit still works and the coefficients
	// are finite.
	x := []float64{1, 2, 3, 4}
	y := []float64{2, 4, 6, 8}
	coef, sse, ok := nnls([][]float64{x, x}, y, relWeights(y))
	if !ok || sse > 1e-20 || math.Abs(coef[0]+coef[1]-2) > 1e-9 {
		t.Errorf("nnls = %v, %v, %v", coef, sse, ok)
	}
}
