package latency

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// ModelVersion is the version of the model file this package reads and
// writes.
const ModelVersion = 1

// KindP2P is the Kind of point-to-point points.
const KindP2P = "p2p"

// Sources of a model.
const (
	// SourceCalibrated marks a model fitted by Fit.
	SourceCalibrated = "calibrated"
	// DefaultSource marks the model embedded in mpitrace (Default).
	DefaultSource = "default (embedded; run mpitrace calibrate for this machine)"
)

// Point is one measurement: the one-way latency of a point-to-point
// message (Kind "p2p", Procs 2) or the per-call time of a collective (Kind
// its MPI name) with Bytes per process on Procs processes. Its fields are
// those of calibrate.Point, so latency.Point(p) converts one.
type Point struct {
	Kind  string  `json:"kind"`
	Bytes int64   `json:"bytes"`
	Procs int     `json:"procs"`
	Nanos float64 `json:"ns"`
}

func (p Point) validate() error {
	switch {
	case p.Kind == "":
		return errors.New("no kind")
	case p.Bytes < 0:
		return errors.New("negative bytes")
	case p.Procs < 1:
		return errors.New("procs below 1")
	case math.IsNaN(p.Nanos) || math.IsInf(p.Nanos, 0):
		return errors.New("time not a finite number")
	case p.Nanos < 0:
		return errors.New("negative time")
	}
	return nil
}

// Model is a fitted latency model. Times are in nanoseconds.
type Model struct {
	Version int       `json:"version"`
	Created time.Time `json:"created"`
	// Source says where the model comes from: SourceCalibrated,
	// DefaultSource, or what a tool wrote.
	Source  string `json:"source"`
	Machine string `json:"machine"` // host name of the calibration run's rank 0
	MPI     string `json:"mpi"`     // MPI library version string
	Procs   int    `json:"procs"`   // ranks of the calibration run
	// CPUs is the number of online CPUs of rank 0's host (0: unknown);
	// Procs > CPUs means the calibration was oversubscribed.
	CPUs         int               `json:"cpus,omitempty"`
	PointToPoint P2PModel          `json:"p2p"`
	Collectives  []CollectiveModel `json:"collectives"`
	// Points are the measurements, sorted; Outliers are those of them
	// the fit left out as disturbed (see the package documentation).
	Points   []Point `json:"points"`
	Outliers []Point `json:"outliers,omitempty"`
}

// P2PModel is the piecewise-linear point-to-point model.
type P2PModel struct {
	// Breakpoints[i] is the largest message size, in bytes, that
	// Segments[i] covers; the last segment covers every larger size.
	// len(Breakpoints) == len(Segments)-1.
	Breakpoints []int64   `json:"breakpoints"`
	Segments    []Segment `json:"segments"`
}

// Segment is latency = A + B·bytes over one protocol's range of sizes.
type Segment struct {
	FirstBytes int64   `json:"first_bytes"`   // smallest measured size in the segment
	LastBytes  int64   `json:"last_bytes"`    // largest measured size in the segment
	A          float64 `json:"a_ns"`          // latency, ns
	B          float64 `json:"b_ns_per_byte"` // inverse bandwidth, ns per byte
	R2         float64 `json:"r2"`            // R² of the relative fit
	RelRMS     float64 `json:"rel_rms"`       // RMS relative error of the fit
	Points     int     `json:"points"`
}

// CollectiveModel is the model of one collective: piecewise in the size
// like the point-to-point model, time = Σ Coef·term(bytes, procs) on each
// segment.
type CollectiveModel struct {
	Name string `json:"name"`
	// Breakpoints[i] is the largest size, in bytes per process, that
	// Segments[i] covers. len(Breakpoints) == len(Segments)-1.
	Breakpoints []int64             `json:"breakpoints"`
	Segments    []CollectiveSegment `json:"segments"`
	Procs       []int               `json:"procs"` // the process counts measured
	Points      int                 `json:"points"`
	// Note says which terms were dropped and what that means, or "".
	Note string `json:"note,omitempty"`
}

// CollectiveSegment is one range of sizes of a collective model.
type CollectiveSegment struct {
	FirstBytes int64   `json:"first_bytes"` // smallest measured size in the segment
	LastBytes  int64   `json:"last_bytes"`  // largest measured size in the segment
	Terms      []Term  `json:"terms"`
	R2         float64 `json:"r2"`      // R² of the relative fit
	RelRMS     float64 `json:"rel_rms"` // RMS relative error of the fit
	Points     int     `json:"points"`
}

// Term is one basis function and its coefficient; Name is one of the Term*
// constants.
type Term struct {
	Name string  `json:"term"`
	Coef float64 `json:"coef"`
}

// Fingerprint identifies what m weighs messages and collectives with,
// whatever else its file holds (the data points, the fits' R², notes, the
// machine) and however it is laid out: the first 16 hex digits of the
// SHA-256 of the point-to-point breakpoints and lines, and of each
// collective's name, breakpoints and terms, collectives in name order. Two
// models weigh every message and collective alike when their fingerprints
// are equal.
func (m *Model) Fingerprint() string {
	type line struct{ A, B float64 }
	type coll struct {
		Name        string
		Breakpoints []int64
		Terms       [][]Term
	}
	w := struct {
		Breakpoints []int64
		Lines       []line
		Colls       []coll
	}{Breakpoints: m.PointToPoint.Breakpoints}
	for _, s := range m.PointToPoint.Segments {
		w.Lines = append(w.Lines, line{s.A, s.B})
	}
	for _, c := range m.Collectives {
		k := coll{Name: c.Name, Breakpoints: c.Breakpoints}
		for _, s := range c.Segments {
			k.Terms = append(k.Terms, s.Terms)
		}
		w.Colls = append(w.Colls, k)
	}
	slices.SortFunc(w.Colls, func(a, b coll) int { return cmp.Compare(a.Name, b.Name) })
	data, err := json.Marshal(w)
	if err != nil {
		panic("internal error: a latency model that does not marshal: " + err.Error())
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// IsDefault reports whether m is the embedded default model.
func (m *Model) IsDefault() bool { return m.Source == DefaultSource }

// P2P returns the one-way latency in ns of a point-to-point message of the
// given size: the line of the segment that covers the size (sizes beyond
// the measured range extend the first or last segment), clamped at 0.
func (m *Model) P2P(bytes int64) float64 {
	segs := m.PointToPoint.Segments
	if len(segs) == 0 {
		return 0
	}
	bytes = max(bytes, 0)
	s := segs[segmentIndex(m.PointToPoint.Breakpoints, bytes, len(segs))]
	return max(s.A+s.B*float64(bytes), 0)
}

// Collective returns the per-call time in ns of the named collective (as
// MPI spells it) with bytes per process on procs processes, clamped at 0;
// ok is false when the model has no fit for the name.
func (m *Model) Collective(name string, bytes int64, procs int) (ns float64, ok bool) {
	c := m.collective(name)
	if c == nil {
		return 0, false
	}
	return c.Predict(bytes, procs), true
}

// Predict evaluates the collective model, clamped at 0. procs below 1
// count as 1 and negative bytes as 0.
func (c *CollectiveModel) Predict(bytes int64, procs int) float64 {
	if len(c.Segments) == 0 {
		return 0
	}
	bytes = max(bytes, 0)
	s := &c.Segments[segmentIndex(c.Breakpoints, bytes, len(c.Segments))]
	b, p := float64(bytes), float64(max(procs, 1))
	var t float64
	for _, term := range s.Terms {
		if d, ok := terms[term.Name]; ok {
			t += term.Coef * d.f(b, p)
		}
	}
	return max(t, 0)
}

// segmentIndex returns the segment covering bytes: the first whose
// breakpoint is at least bytes, else the last.
func segmentIndex(breakpoints []int64, bytes int64, segments int) int {
	i := sort.Search(len(breakpoints), func(i int) bool { return bytes <= breakpoints[i] })
	return min(i, segments-1)
}

func (m *Model) collective(name string) *CollectiveModel {
	for i := range m.Collectives {
		if m.Collectives[i].Name == name {
			return &m.Collectives[i]
		}
	}
	return nil
}

// collectiveAlias maps collectives the benchmark does not measure to the
// measured one that moves data the same way.
var collectiveAlias = map[string]string{
	"MPI_Gatherv":              "MPI_Gather",
	"MPI_Scatterv":             "MPI_Scatter",
	"MPI_Allgatherv":           "MPI_Allgather",
	"MPI_Alltoallv":            "MPI_Alltoall",
	"MPI_Alltoallw":            "MPI_Alltoall",
	"MPI_Reduce_scatter":       "MPI_Allreduce",
	"MPI_Reduce_scatter_block": "MPI_Allreduce",
	"MPI_Scan":                 "MPI_Allreduce",
	"MPI_Exscan":               "MPI_Allreduce",
	"MPI_Reduce_local":         "MPI_Reduce",
	"MPI_Neighbor_allgather":   "MPI_Allgather",
	"MPI_Neighbor_allgatherv":  "MPI_Allgather",
	"MPI_Neighbor_alltoall":    "MPI_Alltoall",
	"MPI_Neighbor_alltoallv":   "MPI_Alltoall",
	"MPI_Neighbor_alltoallw":   "MPI_Alltoall",
	"MPI_Comm_dup":             "MPI_Allreduce",
	"MPI_Comm_split":           "MPI_Allgather",
	"MPI_Comm_create":          "MPI_Allreduce",
	"MPI_Win_fence":            "MPI_Barrier",
}

// measured are the collectives the benchmark measures.
var measured = map[string]bool{
	"MPI_Barrier": true, "MPI_Bcast": true, "MPI_Scatter": true, "MPI_Gather": true,
	"MPI_Reduce": true, "MPI_Allreduce": true, "MPI_Allgather": true, "MPI_Alltoall": true,
}

// baseCollective strips the large-count suffix "_c", the persistent suffix
// "_init" and the nonblocking "I" (MPI_Iallreduce → MPI_Allreduce) and
// applies collectiveAlias.
func baseCollective(name string) string {
	name = strings.TrimSuffix(name, "_c")
	name = strings.TrimSuffix(name, "_init")
	if a, ok := collectiveAlias[name]; ok {
		return a
	}
	if strings.HasPrefix(name, "MPI_I") && len(name) > 5 {
		b := "MPI_" + strings.ToUpper(name[5:6]) + name[6:]
		if a, ok := collectiveAlias[b]; ok {
			return a
		}
		if measured[b] {
			return b
		}
	}
	return name
}

// CollectiveOrFallback is Collective with a documented fallback for
// collectives the model has no fit for; used names the fit it used:
//
//  1. the collective's own fit;
//  2. the fit of the measured collective it reduces to: nonblocking,
//     persistent and large-count forms (MPI_Iallreduce, MPI_Allreduce_init,
//     MPI_Allreduce_c) use the blocking collective's, v/w variants the
//     plain one's (MPI_Alltoallv → MPI_Alltoall), reduce-scatter and
//     scans MPI_Allreduce's, neighbourhood collectives MPI_Allgather's or
//     MPI_Alltoall's, MPI_Ibarrier and MPI_Win_fence MPI_Barrier's,
//     communicator constructors (MPI_Comm_dup, MPI_Comm_create: an
//     allreduce; MPI_Comm_split: an allgather) theirs;
//  3. otherwise MPI_Allreduce's fit when bytes > 0 and MPI_Barrier's when
//     bytes is 0 (each falling back to the other);
//  4. with neither, the point-to-point latency of bytes times
//     ceil(log2(procs)), the depth of a binomial tree (used "p2p").
func (m *Model) CollectiveOrFallback(name string, bytes int64, procs int) (ns float64, used string) {
	if ns, ok := m.Collective(name, bytes, procs); ok {
		return ns, name
	}
	if b := baseCollective(name); b != name {
		if ns, ok := m.Collective(b, bytes, procs); ok {
			return ns, b
		}
	}
	order := []string{"MPI_Allreduce", "MPI_Barrier"}
	if bytes <= 0 {
		order = []string{"MPI_Barrier", "MPI_Allreduce"}
	}
	for _, n := range order {
		if ns, ok := m.Collective(n, bytes, procs); ok {
			return ns, n
		}
	}
	depth := math.Ceil(math.Log2(float64(max(procs, 2))))
	return m.P2P(bytes) * depth, KindP2P
}

// Summary is a human-readable description of m, several lines.
func (m *Model) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "latency model (%s)", m.Source)
	if m.Machine != "" {
		fmt.Fprintf(&b, " of %s", m.Machine)
	}
	if m.Procs > 0 {
		fmt.Fprintf(&b, ", %d ranks", m.Procs)
		if m.CPUs > 0 && m.Procs > m.CPUs {
			fmt.Fprintf(&b, " on %d CPUs (oversubscribed: timings inflated)", m.CPUs)
		}
	}
	if m.MPI != "" {
		first, _, _ := strings.Cut(m.MPI, "\n")
		fmt.Fprintf(&b, ", %s", first)
	}
	b.WriteString("\npoint-to-point: latency = a + b*bytes\n")
	for _, s := range m.PointToPoint.Segments {
		fmt.Fprintf(&b, "  %9d..%-9d B  a=%.1f ns  b=%.4g ns/B  R2=%.3f  rel.err=%.1f%%\n",
			s.FirstBytes, s.LastBytes, s.A, s.B, s.R2, 100*s.RelRMS)
	}
	if bp := m.PointToPoint.Breakpoints; len(bp) > 0 {
		fmt.Fprintf(&b, "  breakpoints (largest size of a segment): %v B\n", bp)
	}
	for _, c := range m.Collectives {
		fmt.Fprintf(&b, "%s (p=%v):\n", c.Name, c.Procs)
		for _, s := range c.Segments {
			fmt.Fprintf(&b, "  %9d..%-9d B  t =", s.FirstBytes, s.LastBytes)
			for i, t := range s.Terms {
				if i > 0 {
					b.WriteString(" +")
				}
				if t.Name == TermConst {
					fmt.Fprintf(&b, " %.4g", t.Coef)
				} else {
					fmt.Fprintf(&b, " %.4g*%s", t.Coef, t.Name)
				}
			}
			fmt.Fprintf(&b, " ns  R2=%.3f  rel.err=%.1f%%\n", s.R2, 100*s.RelRMS)
		}
		if c.Note != "" {
			fmt.Fprintf(&b, "  note: %s\n", c.Note)
		}
	}
	return b.String()
}

func sortPoints(ps []Point) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Procs != b.Procs {
			return a.Procs < b.Procs
		}
		if a.Bytes != b.Bytes {
			return a.Bytes < b.Bytes
		}
		return a.Nanos < b.Nanos
	})
}
