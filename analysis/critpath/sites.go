package critpath

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/mpitrace/mpitrace/analysis/internal/textout"
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

type siteKey struct {
	site, fn string
}

type stepKey struct {
	kind     string
	from, to siteKey
}

// AttributeSites sums the path by call site, as Summarize sums it by
// function, and groups its hops by the call sites at their ends, keeping
// the top heaviest groups (all when top < 0).
func AttributeSites(g *taskgraph.Graph, p *Path, top int, label SiteLabel) *SiteSummary {
	labels := map[[2]int64]string{}
	keyOf := func(v taskgraph.NodeID) siteKey {
		kind, _, name, _ := g.Describe(v)
		if kind == taskgraph.KindInit || kind == taskgraph.KindFinalize {
			return siteKey{"", name}
		}
		r, s := VertexSite(g, v)
		if s == 0 {
			return siteKey{UnknownSite, name}
		}
		k := [2]int64{int64(r), int64(s)}
		l, ok := labels[k]
		if !ok {
			l = label(r, s)
			if l == "" {
				l = UnknownSite
			}
			labels[k] = l
		}
		return siteKey{l, name}
	}
	bySite := map[siteKey]*SiteShare{}
	share := func(k siteKey) *SiteShare {
		x, ok := bySite[k]
		if !ok {
			x = &SiteShare{Site: k.site, Function: k.fn}
			bySite[k] = x
		}
		return x
	}
	steps := map[stepKey]*StepGroup{}
	step := func(k stepKey, w float64, bytes int64) {
		x, ok := steps[k]
		if !ok {
			x = &StepGroup{Kind: k.kind, From: k.from.String(), To: k.to.String()}
			steps[k] = x
		}
		x.Count++
		x.Weight += w
		x.Max = max(x.Max, w)
		x.Bytes += bytes
	}
	n := p.NumVertices()
	prev := siteKey{}
	for i := 0; i < n; i++ {
		v := p.p.Node(i)
		k := keyOf(v)
		to := share(k)
		to.Count++
		if g.Kind(v) == taskgraph.KindCollective {
			w := p.Vertex(i).Weight
			to.Communication += w
			step(stepKey{"collective", k, k}, w, 0)
		}
		if i > 0 {
			ek, _, ew, eb := p.p.EdgeAt(i - 1)
			var w float64
			if ek == taskgraph.Message {
				w = p.w.Message(eb)
				to.Communication += w
			} else {
				w = float64(ew)
				to.Computation += w
				eb = 0
			}
			step(stepKey{ek.String(), prev, k}, w, eb)
		}
		prev = k
	}
	frac := func(x float64) float64 {
		if p.Length <= 0 {
			return 0
		}
		return x / p.Length
	}
	s := &SiteSummary{BySite: []SiteShare{}, Steps: []StepGroup{}}
	for _, x := range bySite {
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
