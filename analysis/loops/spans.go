package loops

import (
	"cmp"
	"slices"
	"sort"
)

// span is one loop execution's interval [start, end) on its rank's clock.
type span struct{ start, end int64 }

// rankSpans are where a rank's loops ran, by location (all calling
// contexts and threads together), each as disjoint sorted intervals.
type rankSpans struct {
	locs  []string          // sorted
	byLoc map[string][]span // merged
	any   []span            // the union of every loop's
	depth map[string]int    // least depth of the location
	// parent of the location: "" for a top-level loop, "\x00" when the
	// location was seen under more than one parent.
	parent map[string]string
	nested bool
}

func newRankSpans(nodes []node, locs []string, depth []int) *rankSpans {
	rs := &rankSpans{byLoc: map[string][]span{}, depth: map[string]int{}, parent: map[string]string{}}
	var all []span
	for i := range nodes {
		n := &nodes[i]
		loc := locs[i]
		par := ""
		if n.parent >= 0 {
			par = locs[n.parent]
			rs.nested = true
		}
		if d, ok := rs.depth[loc]; !ok || depth[i] < d {
			rs.depth[loc] = depth[i]
		}
		if p, ok := rs.parent[loc]; ok && p != par {
			rs.parent[loc] = "\x00"
		} else if !ok {
			rs.parent[loc] = par
			rs.locs = append(rs.locs, loc)
		}
		rs.byLoc[loc] = append(rs.byLoc[loc], n.spans...)
		all = append(all, n.spans...)
	}
	slices.Sort(rs.locs)
	for loc, s := range rs.byLoc {
		rs.byLoc[loc] = union(s)
	}
	rs.any = union(all)
	return rs
}

// union sorts s and merges its overlapping intervals.
func union(s []span) []span {
	slices.SortFunc(s, func(a, b span) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end)) })
	out := s[:0]
	for _, x := range s {
		if x.end <= x.start {
			continue
		}
		if k := len(out); k > 0 && x.start <= out[k-1].end {
			out[k-1].end = max(out[k-1].end, x.end)
			continue
		}
		out = append(out, x)
	}
	return slices.Clip(out)
}

// overlap is the time of [start, end) that the disjoint sorted s covers.
func overlap(s []span, start, end int64) int64 {
	i := sort.Search(len(s), func(i int) bool { return s[i].end > start })
	var t int64
	for ; i < len(s) && s[i].start < end; i++ {
		t += min(s[i].end, end) - max(s[i].start, start)
	}
	return t
}

// Spans are where every rank's loops ran: the critical path's attribution
// to loops (critpath.LoopSpans). Build it from ranks aggregated with
// KeepSpans.
type Spans struct {
	ranks  map[int]*rankSpans
	depth  map[string]int
	parent map[string]string
	nested bool
}

// NewSpans gathers the spans of ranks aggregated with KeepSpans.
func NewSpans(ranks []*RankLoops) *Spans {
	s := &Spans{ranks: map[int]*rankSpans{}, depth: map[string]int{}, parent: map[string]string{}}
	for _, r := range ranks {
		rs := r.spans
		if rs == nil {
			continue
		}
		s.ranks[r.Rank] = rs
		s.nested = s.nested || rs.nested
		for _, loc := range rs.locs {
			if d, ok := s.depth[loc]; !ok || rs.depth[loc] < d {
				s.depth[loc] = rs.depth[loc]
			}
			if p, ok := s.parent[loc]; !ok {
				s.parent[loc] = rs.parent[loc]
			} else if p != rs.parent[loc] {
				s.parent[loc] = "\x00"
			}
		}
	}
	return s
}

// Empty reports whether no rank ran an instrumented loop.
func (s *Spans) Empty() bool { return len(s.depth) == 0 }

// Overlap implements critpath.LoopSpans.
func (s *Spans) Overlap(rank int, start, end int64, add func(loop string, ns int64)) {
	rs := s.ranks[rank]
	if rs == nil || end <= start {
		return
	}
	if t := overlap(rs.any, start, end); t > 0 {
		add("", t)
	} else {
		return
	}
	for _, loc := range rs.locs {
		if t := overlap(rs.byLoc[loc], start, end); t > 0 {
			add(loc, t)
		}
	}
}

// Describe implements critpath.LoopSpans.
func (s *Spans) Describe(loop string) (depth int, parent string) {
	p := s.parent[loop]
	if p == "\x00" {
		p = ""
	}
	return s.depth[loop], p
}

// Partial implements critpath.LoopSpans: nested loops were recorded.
func (s *Spans) Partial() bool { return s.nested }
