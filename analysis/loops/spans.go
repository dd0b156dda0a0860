package loops

import "github.com/mpitrace/mpitrace/analysis/internal/spanset"

// newRankSpans gathers where a rank's loops ran, by location (all calling
// contexts and threads together), with each location's least depth and
// its parent location.
func newRankSpans(nodes []node, locs []string, depth []int) *spanset.Rank {
	rs := spanset.NewRank()
	for i := range nodes {
		n := &nodes[i]
		par := ""
		if n.parent >= 0 {
			par = locs[n.parent]
		}
		rs.Add(locs[i], par, depth[i], n.spans)
	}
	rs.Finish()
	return rs
}

// Spans are where every rank's loops ran: the critical path's attribution
// to loops (critpath.Spans). Build it from ranks aggregated with
// KeepSpans. Partial: nested loops were recorded (only inside sampled
// iterations of their parent).
type Spans struct{ *spanset.Index }

// NewSpans gathers the spans of ranks aggregated with KeepSpans.
func NewSpans(ranks []*RankLoops) *Spans {
	s := &Spans{spanset.NewIndex()}
	for _, r := range ranks {
		if r.spans == nil {
			continue
		}
		s.Add(r.Rank, r.spans)
		if r.nested {
			s.SetPartial()
		}
	}
	return s
}
