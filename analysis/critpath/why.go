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

// WhyThreshold is the ratio of the model path to the measured run below
// which the summary says where the difference went.
const WhyThreshold = 0.8

// RunInfo is what the measured weights add to a summary: the run's span
// on rank 0's clock (the measured path's length), the wait states, what
// was clamped and the clock-sync uncertainty.
type RunInfo struct {
	Span int64 `json:"span_ns"`
	// InitSkew is how far apart the ranks left MPI_Init (on rank 0's
	// clock): the span counts it, the per-rank measured run does not.
	InitSkew   int64       `json:"init_skew_ns"`
	WaitStates []WaitState `json:"wait_states"`
	Clamped    Clamps      `json:"clamped"`
	ClockErr   int64       `json:"clock_err_ns"`
	// sites says the wait states are labelled by call site (LabelSites).
	sites bool
}

// Host is one host of the run: its ranks, and its CPU count when known
// (0: not recorded in the trace).
type Host struct {
	Name  string `json:"name"`
	Ranks int    `json:"ranks"`
	CPUs  int    `json:"cpus,omitempty"`
	// CPUsFrom says where CPUs comes from: "recorded" (the headers'
	// cpus), or "this machine" (the trace's host is the one analysing it).
	CPUsFrom string `json:"cpus_from,omitempty"`
}

// Why says where the difference between the model's path and the
// measured run went. The run's path (measured weights) is weighed again
// with the model: the difference per element (measured − model) is
// grouped by cause; the model's own path is longer than its weight of the
// run's path by OtherRoute. So Run − ModelLength = sum(ByCause) −
// OtherRoute.
type Why struct {
	ModelLength float64 `json:"model_length_ns"`
	Run         float64 `json:"run_ns"` // the measured path's length
	// ModelOfRun is the model's weight of the run's path.
	ModelOfRun float64    `json:"model_of_run_path_ns"`
	OtherRoute float64    `json:"other_route_ns"`
	ByCause    []WhyCause `json:"by_cause"`
	// BySite splits ByCause by call site, the largest differences first
	// (at most Explain's top); only for a trace with call sites, and only
	// the elements that have one (not MPI_Init's skew nor MPI_Finalize).
	BySite   []WhyCause `json:"by_callsite,omitempty"`
	Largest  []WhyItem  `json:"largest"`
	Hosts    []Host     `json:"hosts"`
	ClockErr int64      `json:"clock_err_ns"`
}

// WhyCause is the time of one cause beyond the model on the run's path:
// "inside" (time inside the calls of Function that no wait explains,
// which the model weighs 0: the computation before each call is on both
// and in neither column), "message" (messages received by Function:
// measured minus the model's latency), "collective" (the collective
// Function: measured minus model), "skew" (MPI_Init ending at different
// times on different ranks).
type WhyCause struct {
	Cause    string  `json:"cause"`
	Function string  `json:"function"`
	Site     string  `json:"site,omitempty"` // BySite's
	Count    int     `json:"count"`
	Measured float64 `json:"measured_ns"`
	Model    float64 `json:"model_ns"`
}

// WhyItem is one element of the run's path with its measured and model
// weights.
type WhyItem struct {
	Cause string `json:"cause"`
	From  string `json:"from"`
	To    string `json:"to"`
	// FromSite and ToSite are the call sites of From and To, for a trace
	// with call sites ("" for MPI_Init and MPI_Finalize).
	FromSite string  `json:"from_site,omitempty"`
	ToSite   string  `json:"to_site,omitempty"`
	Bytes    int64   `json:"bytes,omitempty"`
	Measured float64 `json:"measured_ns"`
	Model    float64 `json:"model_ns"`
}

// siteOn returns the call site of node v as rank r saw it: an operation's
// own, r's call of a collective (the lowest participant's when r did not
// take part or r < 0); none (-1, 0) for MPI_Init and MPI_Finalize.
func siteOn(g *taskgraph.Graph, v taskgraph.NodeID, r int) (int, uint32) {
	if r >= 0 && g.Kind(v) == taskgraph.KindCollective {
		if s := g.PartSite(v, r); s != 0 {
			return r, s
		}
	}
	return VertexSite(g, v)
}

// siteLabels labels call sites once each; a nil one labels nothing.
type siteLabels struct {
	label SiteLabel
	seen  map[[2]int64]string
}

// of returns the label of the call site (r, site) of siteOn: "" without
// a labeller or for no call site, UnknownSite for an unknown one.
func (l *siteLabels) of(r int, site uint32) string {
	if l.label == nil || r < 0 {
		return ""
	}
	k := [2]int64{int64(r), int64(site)}
	s, ok := l.seen[k]
	if !ok {
		if site != 0 {
			s = l.label(r, site)
		}
		if s == "" {
			s = UnknownSite
		}
		if l.seen == nil {
			l.seen = map[[2]int64]string{}
		}
		l.seen[k] = s
	}
	return s
}

// Explain weighs meas, the path under measured weights, with the model of
// model (a path of the same graph under the model's weights), and groups
// the differences; top is how many single elements (and, with names of
// the call sites of a trace that has them, call sites) to list.
func Explain(model, meas *Path, top int, names SiteLabel) *Why {
	why, _ := ExplainSteps(model.Length, model.w.m, meas.StepPath(), top, names) // a graph's path never fails
	return why
}

// ExplainSteps is Explain of meas read as its steps, the model's path
// being modelLength long under model m.
func ExplainSteps(modelLength float64, m Model, meas *StepPath, top int, names SiteLabel) (*Why, error) {
	why := &Why{ModelLength: modelLength, Run: meas.Length}
	if run := meas.RunInfo(0); run != nil {
		why.ClockErr = run.ClockErr
	}
	mw := &weigher{m: m, colls: make(map[taskgraph.CollectiveInfo]collW)}
	labels := &siteLabels{label: names}
	type key struct{ cause, fn, site string }
	causes := map[key]*WhyCause{}
	bySite := map[key]*WhyCause{}
	sum := func(m map[key]*WhyCause, k key, measured, modelNS float64) {
		x := m[k]
		if x == nil {
			x = &WhyCause{Cause: k.cause, Function: k.fn, Site: k.site}
			m[k] = x
		}
		x.Count++
		x.Measured += measured
		x.Model += modelNS
	}
	heavy := newHeaviest(top)
	admit := func(c candidate, it func() WhyItem) {
		if heavy.admits(c) {
			x := it()
			x.Model = x.Measured - c.weight // (as the summary has always had it, to the last bit)
			c.why = &x
			heavy.add(c)
		}
	}
	// add adds an element of the run's path, of cause at a call of fn
	// made at call site (sr, site).
	add := func(cause, fn string, sr int, site uint32, measured, modelNS float64) {
		sum(causes, key{cause, fn, ""}, measured, modelNS)
		if l := labels.of(sr, site); l != "" {
			sum(bySite, key{cause, fn, l}, measured, modelNS)
		}
		why.ModelOfRun += modelNS
	}
	var prev reconstruct.ReplayStep
	i := -1 // st's index on the path
	err := meas.Steps(func(st *reconstruct.ReplayStep) error {
		i++
		defer func() { prev = *st }()
		if st.Kind == taskgraph.KindCollective {
			w, mod := st.Weight, mw.collOf(taskgraph.CollectiveInfo{Name: st.Name, Bytes: st.Bytes, Procs: st.Procs}).ns
			add("collective", st.Name, st.SiteRank, st.Site, w, mod)
			admit(candidate{weight: w - mod, index: i}, func() WhyItem {
				l, s := stepLabel(st), labels.of(st.SiteRank, st.Site)
				return WhyItem{Cause: "collective", From: l, To: l, Measured: w, Model: mod, FromSite: s, ToSite: s}
			})
		}
		if i == 0 {
			return nil
		}
		h := &st.In
		w := HopWeight(st)
		// The sites of the hop's ends as its rank saw them.
		from := &prev
		fr, fs := from.SiteRank, from.Site
		if from.Kind == taskgraph.KindCollective && h.FromSite != 0 {
			fr, fs = h.Rank, h.FromSite
		}
		tr, ts := st.SiteRank, st.Site
		if st.Kind == taskgraph.KindCollective && h.ToSite != 0 {
			tr, ts = h.Rank, h.ToSite
		}
		item := func(mod float64) func() WhyItem {
			return func() WhyItem {
				return WhyItem{Cause: h.Kind.String(), From: stepLabel(from), To: stepLabel(st), Bytes: h.Bytes, Measured: w, Model: mod,
					FromSite: labels.of(fr, fs), ToSite: labels.of(tr, ts)}
			}
		}
		switch {
		case h.Kind == taskgraph.Message:
			mod := mw.Message(h.Bytes)
			add("message", st.Name, tr, ts, w, mod)
			admit(candidate{weight: w - mod, hop: true, index: i - 1}, item(mod))
		case h.Kind == taskgraph.CollOut && st.Cross:
			add("collective", from.Name, fr, fs, w, 0)
			admit(candidate{weight: w, hop: true, index: i - 1}, item(0))
		default:
			mod := float64(h.Orig)
			if w == mod { // the computation itself is on both
				why.ModelOfRun += mod
				return nil
			}
			// The measured chain edge adds the time inside the call it
			// leads into that no wait explains, and the time inside the
			// call it leaves from after that call took effect (a send's
			// own duration).
			shift := float64(h.FromShift)
			fromCause := "inside"
			switch from.Kind {
			case taskgraph.KindInit:
				fromCause = "skew"
			case taskgraph.KindCollective:
				fromCause = "collective"
			}
			if shift != 0 {
				add(fromCause, from.Name, fr, fs, shift, 0)
			}
			// The computation before the call (mod, on both) is not the
			// call's: the row says the time inside the call alone, which
			// the model weighs 0 (it once said the computation too, as
			// miniFE's "inside MPI_Comm_size ... 372726.943 us" where the
			// call took 40.7 µs).
			why.ModelOfRun += mod
			add("inside", st.Name, tr, ts, w-shift-mod, 0)
			admit(candidate{weight: w - mod, hop: true, index: i - 1}, item(mod))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	why.OtherRoute = max(0, modelLength-why.ModelOfRun)
	why.ByCause = sortedCauses(causes)
	if names != nil {
		for _, x := range sortedCauses(bySite) {
			if len(why.BySite) == top {
				break
			}
			if x.Measured > x.Model {
				why.BySite = append(why.BySite, x)
			}
		}
	}
	why.Largest = []WhyItem{}
	for _, c := range heavy.sorted() {
		why.Largest = append(why.Largest, *c.why)
	}
	return why, nil
}

// sortedCauses returns the causes of m, the largest difference first.
func sortedCauses[K comparable](m map[K]*WhyCause) []WhyCause {
	out := make([]WhyCause, 0, len(m))
	for _, x := range m {
		out = append(out, *x)
	}
	slices.SortFunc(out, func(a, b WhyCause) int {
		return cmp.Or(cmp.Compare(b.Measured-b.Model, a.Measured-a.Model), cmp.Compare(a.Cause, b.Cause),
			cmp.Compare(a.Function, b.Function), cmp.Compare(a.Site, b.Site))
	})
	return out
}

// nodeTimes are node v's start and end on rank r's clock: an operation's
// or r's call of a collective, the end of r's MPI_Init, the start of its
// MPI_Finalize.
func nodeTimes(g *taskgraph.Graph, v taskgraph.NodeID, r int) (start, end int64) {
	switch g.Kind(v) {
	case taskgraph.KindInit:
		e, _, _, _ := g.RankEnds(r)
		return e, e
	case taskgraph.KindFinalize:
		_, _, s, _ := g.RankEnds(r)
		return s, s
	case taskgraph.KindOp:
		return g.OpTimes(v)
	}
	start, end, _ = g.PartTimes(v, r)
	return start, end
}

// origChain is the model's (the graph as built) weight of the chain edge
// from → to of rank r: the computation between the two calls.
func origChain(g *taskgraph.Graph, from, to taskgraph.NodeID, r int) int64 {
	// A rank without MPI_Init (or MPI_Finalize) recorded has no such end.
	if _, hasInit, _, hasFin := g.RankEnds(r); g.Kind(from) == taskgraph.KindInit && !hasInit || g.Kind(to) == taskgraph.KindFinalize && !hasFin {
		return 0
	}
	_, end := nodeTimes(g, from, r)
	start, _ := nodeTimes(g, to, r)
	return max(0, start-end)
}

// RunInfo returns what the measured weights found of the run (nil for a
// path under the model's weights).
func (p *Path) RunInfo(measured int64) *RunInfo {
	m := p.w.meas
	if m == nil {
		return nil
	}
	run := m.Span
	if run <= 0 {
		run = measured
	}
	return &RunInfo{Span: m.Span, InitSkew: m.InitSkew, WaitStates: m.waitStates(run), Clamped: m.clamps, ClockErr: m.clocks.MaxErr()}
}

// maxWaitRows is the most wait states the text summary lists (the
// largest; --json has them all): one per rank, state, function and call
// site adds up to hundreds on a real code.
const maxWaitRows = 20

// writeRun writes the measured weights' part of the summary: the run's
// span, the wait states, what was clamped.
func (r *RunInfo) writeText(w io.Writer, t func(float64) string) {
	fmt.Fprintf(w, "\nthe run on rank 0's clock (first MPI_Init end to last MPI_Finalize start): %s; ranks left MPI_Init up to %s apart", t(float64(r.Span)), t(float64(r.InitSkew)))
	if r.ClockErr > 0 {
		fmt.Fprintf(w, ", clock-sync error up to %s", t(float64(r.ClockErr)))
	}
	fmt.Fprintln(w)
	if c := r.Clamped; c.Messages > 0 || c.EarlyExits > 0 {
		fmt.Fprintf(w, "clamped at 0: %d messages completed before they were sent (%s, clock error); %d collective exits before the collective was done (%s: clock error, or a rooted collective's member that did not wait, over-counted on the path)\n",
			c.Messages, t(float64(c.MessagesNS)), c.EarlyExits, t(float64(c.EarlyExitsNS)))
	}
	fmt.Fprintf(w, "\nwait states (Scalasca's; %% of the run):\n")
	if len(r.WaitStates) == 0 {
		fmt.Fprintf(w, "  none\n")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	states, rest := r.WaitStates, 0
	if len(states) > maxWaitRows {
		states, rest = states[:maxWaitRows], len(states)-maxWaitRows
	}
	defer func() {
		if rest > 0 {
			fmt.Fprintf(w, "  ... %d more, each at most %.1f%% of the run (--json lists them all)\n", rest, 100*r.WaitStates[maxWaitRows].Share)
		}
	}()
	if r.sites {
		// The call site, left-aligned, last: labels vary in width.
		fmt.Fprintf(tw, "state\trank\tfunction\tcalls\ttime\tshare\t  call site\n")
		for _, x := range states {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%5.1f%%\t  %s\n", x.State, x.Rank, x.Function, x.Count, t(float64(x.Time)), 100*x.Share, x.Site)
		}
	} else {
		fmt.Fprintf(tw, "state\trank\tfunction\tcalls\ttime\tshare\t\n")
		for _, x := range states {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%5.1f%%\t\n", x.State, x.Rank, x.Function, x.Count, t(float64(x.Time)), 100*x.Share)
		}
	}
	tw.Flush()
}

var causeText = map[string]string{
	"inside":     "inside %s, not waiting (the model weighs calls 0)",
	"message":    "messages into %s (measured minus the model's latency)",
	"collective": "collective %s (measured minus the model)",
	"skew":       "ranks leaving MPI_Init after the first one did",
}

// causeShort names a cause in the by-call-site rows (MPI_Init's skew has
// no call site).
var causeShort = map[string]string{
	"inside":     "inside %s",
	"message":    "messages into %s",
	"collective": "collective %s",
}

// at is "MPI_Recv 0 at latesender.c:25 main", or the vertex alone
// without a call site.
func at(vertex, site string) string {
	if site == "" {
		return vertex
	}
	return vertex + " at " + site
}

// causeLine describes cause c.
func causeLine(c *WhyCause) string {
	f := causeText[c.Cause]
	if c.Cause == "skew" {
		return f
	}
	return fmt.Sprintf(f, c.Function)
}

// writeText writes where the difference went.
func (why *Why) writeText(w io.Writer, measured int64, t func(float64) string) {
	ew := &textout.ErrWriter{W: w}
	run := float64(measured)
	if run <= 0 {
		run = why.Run
	}
	fmt.Fprintf(ew, "\nwhy the model path is %.1f%% of the measured run (%s of %s):\n", 100*why.ModelLength/run, t(why.ModelLength), t(run))
	fmt.Fprintf(ew, "  the run's path (measured weights) is %s; the model weighs the same path %s\n", t(why.Run), t(why.ModelOfRun))
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  beyond the model, by cause\tcount\tmeasured\tmodel\tdifference\t\n")
	for _, c := range why.ByCause {
		d := c.Measured - c.Model
		if d == 0 {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t\n", causeLine(&c), c.Count, t(c.Measured), t(c.Model), t(d))
	}
	if len(why.BySite) > 0 {
		fmt.Fprintf(tw, "  the largest by call site\tcount\tmeasured\tmodel\tdifference\t\n")
		for _, c := range why.BySite {
			fmt.Fprintf(tw, "  %s: %s\t%d\t%s\t%s\t%s\t\n", c.Site, fmt.Sprintf(causeShort[c.Cause], c.Function), c.Count, t(c.Measured), t(c.Model), t(c.Measured-c.Model))
		}
	}
	tw.Flush()
	if len(why.Largest) > 0 {
		fmt.Fprintf(ew, "  largest single contributions (measured − model):\n")
		for _, it := range why.Largest {
			what := it.Cause
			if it.Cause == "message" {
				what = fmt.Sprintf("message %d bytes", it.Bytes)
			}
			from, to := at(it.From, it.FromSite), at(it.To, it.ToSite)
			if it.From == it.To {
				fmt.Fprintf(ew, "    %s  %s: %s\n", t(it.Measured-it.Model), what, from)
			} else {
				fmt.Fprintf(ew, "    %s  %s: %s -> %s\n", t(it.Measured-it.Model), what, from, to)
			}
		}
	}
	if why.OtherRoute > 0 {
		fmt.Fprintf(ew, "  the model's own path takes another route, %s longer than its weight of the run's path\n", t(why.OtherRoute))
	}
	for _, h := range why.Hosts {
		switch {
		case h.CPUs > 0 && h.Ranks > h.CPUs:
			fmt.Fprintf(ew, "  host %s: %d ranks on %d CPUs (%s): ranks share cores, and time inside MPI includes waiting for a core\n", h.Name, h.Ranks, h.CPUs, h.CPUsFrom)
		case h.CPUs > 0:
			fmt.Fprintf(ew, "  host %s: %d ranks on %d CPUs (%s)\n", h.Name, h.Ranks, h.CPUs, h.CPUsFrom)
		default:
			fmt.Fprintf(ew, "  host %s: %d ranks (its CPU count is not recorded in the trace)\n", h.Name, h.Ranks)
		}
	}
	if why.ClockErr > 0 {
		fmt.Fprintf(ew, "  clock sync: offsets known within %s, which bounds the error of each message's measured time\n", t(float64(why.ClockErr)))
	} else {
		fmt.Fprintf(ew, "  clock sync: no offset uncertainty recorded (ranks of one host share its clock)\n")
	}
}

// writeRunWhy writes the measured weights' part of the summary and where
// the difference to the model went, when the summary has them.
func (s *Summary) writeRunWhy(w io.Writer, t func(float64) string) {
	if s.Run != nil {
		s.Run.writeText(w, t)
	}
	if s.Why != nil {
		s.Why.writeText(w, s.Measured, t)
	}
}

// NeedsWhy reports whether a model path of length modelLength is far
// enough below the measured run for the summary to say why.
func (s *Summary) NeedsWhy(modelLength float64) bool {
	return s.Measured > 0 && modelLength < WhyThreshold*float64(s.Measured)
}
