package loops

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Report is the loops of a trace, over all ranks.
type Report struct {
	Ranks int `json:"ranks"`
	// Counters are the names of the sampled iterations' counters (the
	// header's loop_counters; "" when only the clock was available).
	Counters []string `json:"counters"`
	// Chance and Seed are the header's loop_chance and loop_seed, the
	// ranks' values joined by "," where they differ.
	Chance string `json:"chance"`
	Seed   string `json:"seed"`
	// Skipped and Open count, over ranks, the loop events that did not
	// nest and the executions still open at the end (see Aggregator).
	Skipped uint64 `json:"skipped_events"`
	Open    uint64 `json:"open_executions"`
	// Loops in depth-first order: each loop after its parent, siblings by
	// file, line and column.
	Loops []*Loop `json:"loops"`
}

// Loop is one loop in one calling context (its chain of enclosing
// instrumented loops): the same source loop reached from two parents is
// two Loops.
type Loop struct {
	Site
	// Location is "file:line:col".
	Location string `json:"location"`
	Depth    int    `json:"depth"` // 0 for a top-level loop
	// Parent is the enclosing loop's location, nil for a top-level loop.
	Parent *string `json:"parent"`
	Figures
	// PerRank are the same figures for each rank that ran the loop.
	PerRank []RankFigures `json:"per_rank"`

	key       string
	parentKey string
	width     int // of the text tables' loop column
	parent    *Loop
	all       tally
	ranks     map[int]*tally
}

// RankFigures are a loop's figures on one rank.
type RankFigures struct {
	Rank int `json:"rank"`
	Figures
}

// Figures are what a loop did over some executions, and the estimates
// its sampled iterations give.
type Figures struct {
	// Executions, Iterations: the recorded executions and their iteration
	// totals (exact; for a nested loop, only the executions inside sampled
	// iterations of its parent are recorded).
	Executions uint64 `json:"executions"`
	Iterations uint64 `json:"iterations"`
	Sampled    uint64 `json:"sampled_iterations"`
	// SamplingRate is Sampled / Iterations.
	SamplingRate float64 `json:"sampling_rate"`
	Unwound      uint64  `json:"unwound_executions,omitempty"`
	Uncounted    uint64  `json:"uncounted_executions,omitempty"`

	Time     *IterTime       `json:"time_per_iteration_ns"`
	Counters []CounterFigure `json:"counters_per_iteration,omitempty"`

	// Estimated is the mean iteration time × Iterations, with its 95%
	// confidence interval (nil with fewer than 2 samples).
	Estimated float64     `json:"estimated_total_ns"`
	CI95      *[2]float64 `json:"ci95_ns"`
	// Measured is the sum over executions of LoopEnd - LoopBegin.
	Measured int64 `json:"measured_ns"`
	// Quality is Estimated / Measured (0 when either is 0); InCI whether
	// Measured lies in CI95 (nil without an interval, or when every
	// iteration was sampled and the estimate is their exact sum).
	Quality float64 `json:"quality"`
	InCI    *bool   `json:"measured_in_ci"`

	// RunWide estimates, for a nested loop, what it did over the whole
	// run, unsampled parent iterations included (nil for a top-level
	// loop, which is recorded in full).
	RunWide *RunWide `json:"run_wide,omitempty"`
}

// IterTime is the time of the sampled iterations.
type IterTime struct {
	Mean   float64 `json:"mean"`
	P50    float64 `json:"p50"`
	P95    float64 `json:"p95"`
	StdDev float64 `json:"stddev"`
	// Exact is true when P50 and P95 are samples; false when they come
	// from the bounded histogram (within 0.5%).
	Exact bool `json:"exact"`
}

// CounterFigure is a counter's mean increment over a sampled iteration.
type CounterFigure struct {
	Name string  `json:"name"`
	Mean float64 `json:"mean"`
}

// RunWide is the inverse-probability-weighted estimate of a nested loop's
// whole-run figures (see the package documentation).
type RunWide struct {
	Method string `json:"method"` // "ipw"
	// Inclusion is the estimated chance that an iteration of the parent
	// was sampled, i.e. that this loop was recorded there.
	Inclusion  float64     `json:"inclusion"`
	Executions float64     `json:"executions"`
	Iterations float64     `json:"iterations"`
	TimeNs     float64     `json:"time_ns"`
	CI95       *[2]float64 `json:"ci95_ns"`
}

// Merge merges ranks' loops (in rank order, so that the result does not
// depend on the order they were read in) into a report.
func Merge(ranks []*RankLoops) *Report {
	ranks = slices.Clone(ranks)
	slices.SortFunc(ranks, func(a, b *RankLoops) int { return cmp.Compare(a.Rank, b.Rank) })
	rep := &Report{Ranks: len(ranks), Counters: []string{}, Loops: []*Loop{}}
	var counters, chance, seed []string
	byKey := map[string]*Loop{}
	for _, r := range ranks {
		counters = appendNew(counters, r.Counters)
		chance = appendNew(chance, r.Chance)
		seed = appendNew(seed, r.Seed)
		rep.Skipped += r.Skipped
		rep.Open += r.Open
		for _, k := range r.order {
			rl := r.loops[k]
			l := byKey[k]
			if l == nil {
				l = &Loop{Site: rl.site, Location: rl.site.String(), Depth: rl.depth, key: k, parentKey: rl.parent, ranks: map[int]*tally{}}
				byKey[k] = l
			}
			l.all.merge(&rl.tally)
			s := l.ranks[r.Rank]
			if s == nil {
				s = &tally{}
				l.ranks[r.Rank] = s
			}
			s.merge(&rl.tally)
		}
	}
	if len(counters) > 0 && counters[0] != "" {
		rep.Counters = strings.Split(counters[0], ",")
	}
	rep.Chance, rep.Seed = strings.Join(chance, ","), strings.Join(seed, ",")

	// The tree: a parent's key is its children's parent key.
	children := map[string][]*Loop{}
	for _, l := range byKey {
		pk := l.parentKey
		if p := byKey[pk]; p != nil {
			l.parent = p
			l.Parent = &p.Location
		}
		children[pk] = append(children[pk], l)
	}
	var walk func(pk string)
	walk = func(pk string) {
		cs := children[pk]
		slices.SortFunc(cs, func(a, b *Loop) int {
			return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col), cmp.Compare(a.key, b.key))
		})
		for _, c := range cs {
			rep.Loops = append(rep.Loops, c)
			walk(c.key)
		}
	}
	walk("")
	for _, l := range rep.Loops { // parents first: run-wide estimates build on the parent's
		l.Figures = figures(&l.all, l.parent, func(p *Loop) (*tally, *Figures) { return &p.all, &p.Figures }, rep.Counters)
		ranks := make([]int, 0, len(l.ranks))
		for r := range l.ranks {
			ranks = append(ranks, r)
		}
		slices.Sort(ranks)
		for _, r := range ranks {
			f := figures(l.ranks[r], l.parent, func(p *Loop) (*tally, *Figures) {
				for i := range p.PerRank {
					if p.PerRank[i].Rank == r {
						return p.ranks[r], &p.PerRank[i].Figures
					}
				}
				return nil, nil
			}, rep.Counters)
			l.PerRank = append(l.PerRank, RankFigures{Rank: r, Figures: f})
		}
	}
	return rep
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// figures computes a loop's figures from its tally; parentOf gives the
// parent's tally and (already computed) figures in the same scope.
func figures(s *tally, parent *Loop, parentOf func(*Loop) (*tally, *Figures), names []string) Figures {
	f := Figures{Executions: s.execs, Iterations: s.iters, Sampled: s.times.n, Unwound: s.unwound,
		Uncounted: s.uncounted, Measured: s.measured}
	if s.iters > 0 {
		f.SamplingRate = float64(s.times.n) / float64(s.iters)
	}
	if s.times.n > 0 {
		f.Time = &IterTime{Mean: s.times.mean, P50: s.sk.quantile(0.5), P95: s.sk.quantile(0.95),
			StdDev: math.Sqrt(s.times.variance()), Exact: s.sk.Exact()}
		for i, c := range s.counters {
			name := "counter" + strconv.Itoa(i)
			if i < len(names) {
				name = names[i]
			}
			if c.n > 0 {
				f.Counters = append(f.Counters, CounterFigure{Name: name, Mean: c.sum / float64(c.n)})
			}
		}
		n, N := float64(s.times.n), float64(s.iters)
		f.Estimated = s.times.mean * N
		if s.times.n >= 2 && N > 0 {
			fpc := max(1-n/N, 0)
			h := t975(s.times.n-1) * N * math.Sqrt(s.times.variance()/n*fpc)
			f.CI95 = &[2]float64{f.Estimated - h, f.Estimated + h}
			// Every iteration sampled: the estimate is the iterations' own
			// sum, not a sample's, and the measured time differs from it
			// only by what lies between the iterations; no interval to test.
			if fpc > 0 {
				in := float64(f.Measured) >= f.CI95[0] && float64(f.Measured) <= f.CI95[1]
				f.InCI = &in
			}
		}
		if f.Measured > 0 && f.Estimated > 0 {
			f.Quality = f.Estimated / float64(f.Measured)
		}
	}
	if parent != nil {
		if ps, pf := parentOf(parent); ps != nil {
			f.RunWide = runWide(s, ps, pf)
		}
	}
	return f
}

// runWide is the inverse-probability-weighted estimate of a nested loop's
// run: its executions outside the parent's sampled iterations as they are,
// plus what it did inside the m sampled parent iterations scaled by N/m,
// N the parent's (estimated, when nested itself) iteration total. The
// interval treats the m sampled iterations as a simple random sample of
// the N (cluster sampling, with the finite population correction) and N
// as known.
func runWide(s, ps *tally, pf *Figures) *RunWide {
	N := float64(ps.iters)
	if pf.RunWide != nil {
		N = pf.RunWide.Iterations
	}
	m := float64(ps.clusters)
	if m == 0 || N == 0 {
		return nil
	}
	N = max(N, m)
	w := N / m
	rw := &RunWide{Method: "ipw", Inclusion: m / N,
		Executions: float64(s.direct.execs) + w*s.yExecs,
		Iterations: float64(s.direct.iters) + w*s.yIters,
		TimeNs:     float64(s.direct.time) + w*s.yTime}
	if ps.clusters >= 2 {
		v := max((s.yTime2-s.yTime*s.yTime/m)/(m-1), 0)
		h := t975(ps.clusters-1) * N * math.Sqrt(v/m*max(1-m/N, 0))
		rw.CI95 = &[2]float64{rw.TimeNs - h, rw.TimeNs + h}
	}
	return rw
}
