package loops

import (
	"errors"

	"github.com/mpitrace/mpitrace/analysis/internal/spanset"
)

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

// AppendSpans appends to b where r's loops ran (r aggregated with
// KeepSpans or not), as SpansOf reads it: the analysis run as an MPI job
// gathers them from the process that read the rank.
func (r *RankLoops) AppendSpans(b []byte) []byte {
	nested := byte(0)
	if r.nested {
		nested = 1
	}
	return spanset.AppendRank(append(b, nested), r.spans)
}

// SpansOf reads what AppendSpans appended at the start of b: rank's
// loops with their spans only (for NewSpans), and the rest of b.
func SpansOf(rank int, b []byte) (*RankLoops, []byte, error) {
	if len(b) == 0 {
		return nil, nil, errors.New("internal error: a rank's loop spans cut short")
	}
	r := &RankLoops{Rank: rank, nested: b[0] == 1}
	var err error
	r.spans, b, err = spanset.ReadRank(b[1:])
	return r, b, err
}
