package critpath

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/mpitrace/mpitrace/analysis/internal/textout"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// SiteLabel names call site site of rank's table ("stencil.c:88
// exchange"); "" when unknown.
type SiteLabel func(rank int, site uint32) string

// VertexSite returns the call site of vertex v: the rank whose call-site
// table holds it and its id there; for a collective, the lowest
// participant's call. Site 0 is unknown (traces before format version 5).
func VertexSite(g *taskgraph.Graph, v taskgraph.NodeID) (rank int, site uint32) {
	switch g.Kind(v) {
	case taskgraph.KindOp:
		return g.OpSite(v)
	case taskgraph.KindCollective:
		if ps := g.Participants(v); len(ps) > 0 {
			return ps[0], g.PartSite(v, ps[0])
		}
	}
	return -1, 0
}

// UnknownSite labels the vertices whose call site is not known.
const UnknownSite = "(unknown call site)"

// SiteShare is the part of the path attributed to the calls of one MPI
// function at one call site, as FunctionShare is to a function.
type SiteShare struct {
	Site          string  `json:"site"`
	Function      string  `json:"function"`
	Count         int     `json:"count"`
	Computation   float64 `json:"computation_ns"`
	Communication float64 `json:"communication_ns"`
	Share         float64 `json:"share"`
}

// Label is "stencil.c:88 exchange: MPI_Waitall"; MPI_Init and
// MPI_Finalize, which have no call site on the path, are their name.
func (s *SiteShare) Label() string { return siteKey{s.Site, s.Function}.String() }

func (k siteKey) String() string {
	if k.site == "" {
		return k.fn
	}
	return k.site + ": " + k.fn
}

// StepGroup is every hop of the path of one kind between the same two
// call sites (and MPI functions): an iterative code's repeated step,
// counted once.
type StepGroup struct {
	Kind   string  `json:"kind"` // an edge kind, or "collective" (From and To both the vertex)
	From   string  `json:"from"` // "stencil.c:88 exchange: MPI_Waitall"
	To     string  `json:"to"`
	Count  int     `json:"count"`
	Weight float64 `json:"weight_ns"` // summed
	Max    float64 `json:"max_ns"`
	Bytes  int64   `json:"bytes,omitempty"` // summed, messages
	Share  float64 `json:"share"`
}

// SiteSummary is the path by call site: set (AttributeSites) only for a
// trace with call sites.
type SiteSummary struct {
	BySite []SiteShare `json:"by_callsite"`
	// Steps are the heaviest groups of steps, at most the summary's top.
	Steps []StepGroup `json:"heaviest_steps"`
}

// groupKey is a StepGroup's: the kind of its hops (or a collective
// vertex), and the shares of the call sites at their ends.
type groupKey struct {
	kind     taskgraph.EdgeKind
	coll     bool
	from, to int32
}

type siteKey struct {
	site, fn string
}

// AttributeSites sums p by call site (StepPath.AttributeSites).
func AttributeSites(p *Path, top int, label SiteLabel) *SiteSummary {
	s, _ := p.StepPath().AttributeSites(top, label) // a graph's path never fails
	return s
}

// AttributeSites sums the path by call site, as Summarize sums it by
// function, and groups its hops by the call sites at their ends, keeping
// the top heaviest groups (all when top < 0).
func (sp *StepPath) AttributeSites(top int, label SiteLabel) (*SiteSummary, error) {
	visit, finish := sp.siteVisitor(top, label)
	if err := sp.Steps(func(st *reconstruct.ReplayStep) error {
		visit(st)
		return nil
	}); err != nil {
		return nil, err
	}
	return finish(), nil
}

// siteVisitor returns AttributeSites' pass: visit sees each step in
// order, finish makes the summary.
func (sp *StepPath) siteVisitor(top int, label SiteLabel) (visit func(*reconstruct.ReplayStep), finish func() *SiteSummary) {
	// Each vertex's (rank, site, function) maps to a share by an integer
	// key; the shares and their labels are made once per distinct key.
	type vkey struct {
		rank int32
		site uint32
		name string
	}
	idx := map[vkey]int32{}
	byKey := map[siteKey]int32{}
	labels := map[[2]int64]string{}
	var shares []*SiteShare
	var keys []siteKey
	var last vkey
	lastIdx := int32(-1)
	shareOf := func(st *reconstruct.ReplayStep) int32 {
		vk := vkey{rank: -1, name: st.Name}
		if st.Kind != taskgraph.KindInit && st.Kind != taskgraph.KindFinalize {
			vk.rank, vk.site = int32(st.SiteRank), st.Site
		} else {
			vk.site = ^uint32(0) // no call site: the function alone
		}
		if lastIdx >= 0 && vk == last {
			return lastIdx
		}
		last = vk
		if i, ok := idx[vk]; ok {
			lastIdx = i
			return i
		}
		var k siteKey
		switch {
		case vk.site == ^uint32(0):
			k = siteKey{"", vk.name}
		case vk.site == 0:
			k = siteKey{UnknownSite, vk.name}
		default:
			lk := [2]int64{int64(vk.rank), int64(vk.site)}
			l, ok := labels[lk]
			if !ok {
				if l = label(int(vk.rank), vk.site); l == "" {
					l = UnknownSite
				}
				labels[lk] = l
			}
			k = siteKey{l, vk.name}
		}
		i, ok := byKey[k]
		if !ok {
			i = int32(len(shares))
			shares = append(shares, &SiteShare{Site: k.site, Function: k.fn})
			keys = append(keys, k)
			byKey[k] = i
		}
		idx[vk] = i
		lastIdx = i
		return i
	}
	type skey = groupKey
	steps := map[skey]*StepGroup{}
	step := func(k skey, w float64, bytes int64) {
		x, ok := steps[k]
		if !ok {
			kind := "collective"
			if !k.coll {
				kind = k.kind.String()
			}
			x = &StepGroup{Kind: kind, From: keys[k.from].String(), To: keys[k.to].String()}
			steps[k] = x
		}
		x.Count++
		x.Weight += w
		x.Max = max(x.Max, w)
		x.Bytes += bytes
	}
	prev := int32(-1)
	first := true
	visit = func(st *reconstruct.ReplayStep) {
		k := shareOf(st)
		to := shares[k]
		to.Count++
		if st.Kind == taskgraph.KindCollective {
			to.Communication += st.Weight
			step(skey{coll: true, from: k, to: k}, st.Weight, 0)
		}
		if !first {
			w := HopWeight(st)
			var bytes int64
			if st.In.Kind == taskgraph.Message {
				to.Communication += w
				bytes = st.In.Bytes
			} else {
				to.Computation += w
			}
			step(skey{kind: st.In.Kind, from: prev, to: k}, w, bytes)
		}
		first = false
		prev = k
	}
	return visit, func() *SiteSummary { return sp.siteSummary(shares, steps, top) }
}

// siteSummary sorts the shares and groups of steps of AttributeSites.
func (sp *StepPath) siteSummary(shares []*SiteShare, steps map[groupKey]*StepGroup, top int) *SiteSummary {
	frac := func(x float64) float64 {
		if sp.Length <= 0 {
			return 0
		}
		return x / sp.Length
	}
	s := &SiteSummary{BySite: []SiteShare{}, Steps: []StepGroup{}}
	for _, x := range shares {
		x.Share = frac(x.Computation + x.Communication)
		s.BySite = append(s.BySite, *x)
	}
	slices.SortFunc(s.BySite, func(a, b SiteShare) int {
		return cmp.Or(cmp.Compare(b.Computation+b.Communication, a.Computation+a.Communication),
			cmp.Compare(a.Site, b.Site), cmp.Compare(a.Function, b.Function))
	})
	for _, x := range steps {
		x.Share = frac(x.Weight)
		s.Steps = append(s.Steps, *x)
	}
	slices.SortFunc(s.Steps, func(a, b StepGroup) int {
		return cmp.Or(cmp.Compare(b.Weight, a.Weight), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
	})
	if top >= 0 && len(s.Steps) > top {
		s.Steps = s.Steps[:top]
	}
	return s
}

// WriteText writes the path by call site and its heaviest groups of steps.
func (s *SiteSummary) WriteText(w io.Writer, unit Unit) error {
	t := func(ns float64) string { return fmt.Sprintf("%.3f %s", ns/float64(unit), unit) }
	pct := func(f float64) string { return fmt.Sprintf("%5.1f%%", 100*f) }
	ew := &textout.ErrWriter{W: w}
	fmt.Fprintf(ew, "\nby call site (computation before the call, communication into it):\n")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "share\tcall site\tfunction\tcount\tcomputation\tcommunication\n")
	for _, x := range s.BySite {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", pct(x.Share), x.Site, x.Function, x.Count, t(x.Computation), t(x.Communication))
	}
	tw.Flush()
	if len(s.Steps) > 0 {
		fmt.Fprintf(ew, "\nheaviest steps by call site:\n")
		for _, x := range s.Steps {
			what := x.Kind
			switch {
			case x.Kind == "message" && x.Count > 1:
				what = fmt.Sprintf("messages, %d bytes in all", x.Bytes)
			case x.Kind == "message":
				what = fmt.Sprintf("message %d bytes", x.Bytes)
			}
			times := ""
			if x.Count > 1 {
				times = fmt.Sprintf(" x%d (max %s)", x.Count, t(x.Max))
			}
			if x.Kind == "collective" {
				fmt.Fprintf(ew, "  %s  %s%s  %s: %s\n", pct(x.Share), t(x.Weight), times, what, x.From)
			} else {
				fmt.Fprintf(ew, "  %s  %s%s  %s: %s -> %s\n", pct(x.Share), t(x.Weight), times, what, x.From, x.To)
			}
		}
	}
	return ew.Err
}
