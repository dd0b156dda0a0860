// Package baseline holds a run's figures for regression checks in CI: the
// run's shape (ranks, calls per MPI function) and its times (the critical
// path's length and composition, the time per MPI function, per region and
// per loop), as a versioned JSON file, and compares two of them.
//
// It knows nothing of traces: the caller fills a Baseline from the
// analyses (mpitrace check does), so that the file, the comparison and its
// rules can be tested on their own.
package baseline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
)

// Version is the baseline file format this build writes and reads.
const Version = 1

// Baseline is a run's figures. Its JSON is the baseline file: keys sorted,
// times in integer nanoseconds, so that the same figures give the same
// bytes.
type Baseline struct {
	// Version is the file's format version (the key names the file).
	Version int `json:"mpitrace_baseline"`
	// Trace is the trace directory it was made from (informative).
	Trace string `json:"trace"`
	// Model is the fingerprint of the latency model the critical path's
	// figures were weighed with (latency.Model.Fingerprint), empty for the
	// default model embedded in mpitrace. Figures weighed with other
	// models do not compare.
	Model string `json:"model,omitempty"`
	Shape Shape  `json:"shape"`
	// Times are the figures compared, by name (see the Figure functions):
	// nanoseconds.
	Times map[string]int64 `json:"times_ns"`
}

// Shape is what a run did rather than how long it took: a run of another
// shape is another run, whose times do not compare.
type Shape struct {
	Ranks int `json:"ranks"`
	// Calls are the calls per MPI function, summed over ranks.
	Calls map[string]int64 `json:"calls"`
}

// The figures' names: one prefix per analysis.
const (
	CritpathLength        = "critical path length"
	CritpathComputation   = "critical path computation"
	CritpathCommunication = "critical path communication"
)

// CritpathFunction names the critical path's share attributed to an MPI
// function (its computation before the function's vertices and their
// communication).
func CritpathFunction(fn string) string { return "critical path in " + fn }

// MPIFunction names the time spent in an MPI function, summed over ranks.
func MPIFunction(fn string) string { return "time in " + fn }

// Region names a region's (kernel's, ...) inclusive time summed over
// ranks; path is its chain of nodes from the top, each "kind name".
func Region(path string) string { return "region " + path }

// Loop names a loop's measured time summed over ranks; path is its chain
// of locations from the outermost loop.
func Loop(path string) string { return "loop " + path }

// New returns an empty baseline of the current version.
func New(trace string, ranks int) *Baseline {
	return &Baseline{Version: Version, Trace: trace, Shape: Shape{Ranks: ranks, Calls: map[string]int64{}}, Times: map[string]int64{}}
}

// SetTime records a time in ns, rounded to the nanosecond.
func (b *Baseline) SetTime(name string, ns float64) { b.Times[name] = int64(math.Round(ns)) }

// Write writes b as indented JSON, keys sorted, with a final newline.
func (b *Baseline) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // figure names hold ">"
	enc.SetIndent("", "  ")
	return enc.Encode(b)
}

// ErrNotBaseline is the error of a file that is not a baseline.
var ErrNotBaseline = errors.New("not an mpitrace baseline (no \"mpitrace_baseline\" version key): write one with mpitrace check --write-baseline")

// Read decodes a baseline file, checking its version and its figures.
func Read(data []byte) (*Baseline, error) {
	var probe struct {
		Version *int `json:"mpitrace_baseline"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if probe.Version == nil {
		return nil, ErrNotBaseline
	}
	if *probe.Version != Version {
		return nil, fmt.Errorf("unsupported baseline version %d (this build reads %d): write it again with this mpitrace's check --write-baseline", *probe.Version, Version)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	b := &Baseline{}
	if err := dec.Decode(b); err != nil {
		return nil, fmt.Errorf("invalid baseline: %v", err)
	}
	if b.Shape.Ranks <= 0 {
		return nil, fmt.Errorf("invalid baseline: shape.ranks is %d", b.Shape.Ranks)
	}
	for name, n := range b.Shape.Calls {
		if n < 0 {
			return nil, fmt.Errorf("invalid baseline: shape.calls %q is negative (%d)", name, n)
		}
	}
	if len(b.Times) == 0 {
		return nil, errors.New("invalid baseline: no times_ns")
	}
	for name, ns := range b.Times {
		if ns < 0 {
			return nil, fmt.Errorf("invalid baseline: times_ns %q is negative (%d)", name, ns)
		}
	}
	if b.Shape.Calls == nil {
		b.Shape.Calls = map[string]int64{}
	}
	return b, nil
}

// Options are the rules of a comparison.
type Options struct {
	// Tolerance is the relative change that counts (0.05: 5%).
	Tolerance float64
	// Floor is the absolute change in ns below which nothing counts,
	// whatever its share: small times must not flap.
	Floor int64
}

// Change is a figure that moved beyond the tolerance and the floor.
type Change struct {
	Name     string
	Old, New int64
	// Ratio is (New - Old) / Old; +Inf for a figure the baseline did not
	// have (or had at 0).
	Ratio float64
	// Regression: the time grew.
	Regression bool
}

// ShapeChange is a difference in the runs' shapes.
type ShapeChange struct {
	What     string // "ranks" or an MPI function's name
	Old, New int64
}

// Result is a comparison's outcome.
type Result struct {
	// Shape lists how the run's shape changed; when it did, the times were
	// not compared (Compared is 0, Changes empty).
	Shape []ShapeChange
	// Compared counts the figures compared; Changes are those that moved,
	// regressions first, then by name.
	Compared    int
	Changes     []Change
	Regressions int
}

// Compare compares the figures of now with those of old.
func Compare(old, now *Baseline, o Options) *Result {
	r := &Result{Shape: compareShape(old.Shape, now.Shape)}
	if len(r.Shape) > 0 {
		return r
	}
	for _, name := range unionKeys(old.Times, now.Times) {
		a, b := old.Times[name], now.Times[name]
		r.Compared++
		d := b - a
		if abs(d) <= o.Floor {
			continue
		}
		ratio := math.Inf(1)
		if a != 0 {
			ratio = float64(d) / float64(a)
		}
		if math.Abs(ratio) <= o.Tolerance {
			continue
		}
		c := Change{Name: name, Old: a, New: b, Ratio: ratio, Regression: d > 0}
		if c.Regression {
			r.Regressions++
		}
		r.Changes = append(r.Changes, c)
	}
	sort.SliceStable(r.Changes, func(i, j int) bool {
		return r.Changes[i].Regression && !r.Changes[j].Regression
	})
	return r
}

func compareShape(old, now Shape) []ShapeChange {
	var out []ShapeChange
	if old.Ranks != now.Ranks {
		out = append(out, ShapeChange{What: "ranks", Old: int64(old.Ranks), New: int64(now.Ranks)})
	}
	for _, fn := range unionKeys(old.Calls, now.Calls) {
		if a, b := old.Calls[fn], now.Calls[fn]; a != b {
			out = append(out, ShapeChange{What: fn, Old: a, New: b})
		}
	}
	return out
}

// unionKeys returns the keys of a and b, sorted.
func unionKeys(a, b map[string]int64) []string {
	keys := slices.Concat(slices.Collect(maps.Keys(a)), slices.Collect(maps.Keys(b)))
	slices.Sort(keys)
	return slices.Compact(keys)
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
