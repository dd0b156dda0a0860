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
	Largest    []WhyItem  `json:"largest"`
	Hosts      []Host     `json:"hosts"`
	ClockErr   int64      `json:"clock_err_ns"`
}

// WhyCause is the time of one cause beyond the model on the run's path:
// "inside" (time inside the calls of Function that no wait explains,
// which the model weighs 0), "message" (messages received by Function:
// measured minus the model's latency), "collective" (the collective
// Function: measured minus model), "skew" (MPI_Init ending at different
// times on different ranks).
type WhyCause struct {
	Cause    string  `json:"cause"`
	Function string  `json:"function"`
	Count    int     `json:"count"`
	Measured float64 `json:"measured_ns"`
	Model    float64 `json:"model_ns"`
}

// WhyItem is one element of the run's path with its measured and model
// weights.
type WhyItem struct {
	Cause    string  `json:"cause"`
	From     string  `json:"from"`
	To       string  `json:"to"`
	Bytes    int64   `json:"bytes,omitempty"`
	Measured float64 `json:"measured_ns"`
	Model    float64 `json:"model_ns"`
}

// Explain weighs meas, the path under measured weights, with the model of
// model (a path of the same graph under the model's weights), and groups
// the differences; top is how many single elements to list.
func Explain(model, meas *Path, top int) *Why {
	why := &Why{ModelLength: model.Length, Run: meas.Length}
	if meas.w.meas != nil {
		why.ClockErr = meas.w.meas.clocks.MaxErr()
	}
	g, orig, mw := meas.g, meas.orig, model.w
	type key struct{ cause, fn string }
	causes := map[key]*WhyCause{}
	heavy := newHeaviest(top)
	add := func(cause, fn string, measured, modelNS float64, c candidate) {
		k := key{cause, fn}
		x := causes[k]
		if x == nil {
			x = &WhyCause{Cause: cause, Function: fn}
			causes[k] = x
		}
		x.Count++
		x.Measured += measured
		x.Model += modelNS
		why.ModelOfRun += modelNS
		if c.index >= 0 {
			c.weight = measured - modelNS
			heavy.add(c)
		}
	}
	n := meas.NumVertices()
	for i := 0; i < n; i++ {
		v := meas.p.Node(i)
		kind, _, name, _ := g.Describe(v)
		if kind == taskgraph.KindCollective {
			add("collective", name, meas.w.Collective(v), mw.Collective(v), candidate{index: i})
		}
		if i == 0 {
			continue
		}
		h := meas.Hop(i - 1)
		switch {
		case h.Kind == taskgraph.Message:
			add("message", name, h.Weight, mw.Message(h.Bytes), candidate{hop: true, index: i - 1})
		case h.Kind == taskgraph.CollOut && g.IsNonblocking(h.From):
			add("collective", g.Name(h.From), h.Weight, 0, candidate{hop: true, index: i - 1})
		default:
			m := float64(origChain(orig, h.From, h.To, h.Rank))
			if h.Weight == m { // the computation itself is on both
				why.ModelOfRun += m
				continue
			}
			// The measured chain edge adds the time inside the call it
			// leads into that no wait explains, and the time inside the
			// call it leaves from after that call took effect (a send's
			// own duration).
			_, oe := nodeTimes(orig, h.From, h.Rank)
			_, re := nodeTimes(g, h.From, h.Rank)
			from := oe - re
			fromCause, fromFn := "inside", g.Name(h.From)
			switch g.Kind(h.From) {
			case taskgraph.KindInit:
				fromCause = "skew"
			case taskgraph.KindCollective:
				fromCause = "collective"
			}
			if from != 0 {
				add(fromCause, fromFn, float64(from), 0, candidate{index: -1})
			}
			add("inside", name, h.Weight-float64(from), m, candidate{index: -1})
			heavy.add(candidate{hop: true, index: i - 1, weight: h.Weight - m})
		}
	}
	why.OtherRoute = max(0, model.Length-why.ModelOfRun)
	for _, x := range causes {
		why.ByCause = append(why.ByCause, *x)
	}
	slices.SortFunc(why.ByCause, func(a, b WhyCause) int {
		if c := cmp.Compare(b.Measured-b.Model, a.Measured-a.Model); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Cause, b.Cause); c != 0 {
			return c
		}
		return cmp.Compare(a.Function, b.Function)
	})
	why.Largest = []WhyItem{}
	for _, c := range heavy.sorted() {
		var it WhyItem
		if c.hop {
			h := meas.Hop(c.index)
			from, to := meas.Vertex(c.index), meas.Vertex(c.index+1)
			it = WhyItem{Cause: h.Kind.String(), From: label(&from), To: label(&to), Bytes: h.Bytes, Measured: h.Weight}
		} else {
			v := meas.Vertex(c.index)
			it = WhyItem{Cause: "collective", From: label(&v), To: label(&v), Measured: v.Weight}
		}
		it.Model = it.Measured - c.weight
		why.Largest = append(why.Largest, it)
	}
	return why
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
	initEnd, hasInit, finStart, hasFin := g.RankEnds(r)
	var end, start int64
	switch g.Kind(from) {
	case taskgraph.KindInit:
		if !hasInit {
			return 0
		}
		end = initEnd
	case taskgraph.KindOp:
		_, end = g.OpTimes(from)
	case taskgraph.KindCollective:
		_, end, _ = g.PartTimes(from, r)
	}
	switch g.Kind(to) {
	case taskgraph.KindFinalize:
		if !hasFin {
			return 0
		}
		start = finStart
	case taskgraph.KindOp:
		start, _ = g.OpTimes(to)
	case taskgraph.KindCollective:
		start, _, _ = g.PartTimes(to, r)
	}
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
	fmt.Fprintf(tw, "state\trank\tfunction\tcalls\ttime\tshare\t\n")
	for _, x := range r.WaitStates {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%5.1f%%\t\n", x.State, x.Rank, x.Function, x.Count, t(float64(x.Time)), 100*x.Share)
	}
	tw.Flush()
}

var causeText = map[string]string{
	"inside":     "inside %s, not waiting (the model weighs calls 0)",
	"message":    "messages into %s (measured minus the model's latency)",
	"collective": "collective %s (measured minus the model)",
	"skew":       "ranks leaving MPI_Init after the first one did",
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
	tw.Flush()
	if len(why.Largest) > 0 {
		fmt.Fprintf(ew, "  largest single contributions (measured − model):\n")
		for _, it := range why.Largest {
			what := it.Cause
			if it.Cause == "message" {
				what = fmt.Sprintf("message %d bytes", it.Bytes)
			}
			if it.From == it.To {
				fmt.Fprintf(ew, "    %s  %s: %s\n", t(it.Measured-it.Model), what, it.From)
			} else {
				fmt.Fprintf(ew, "    %s  %s: %s -> %s\n", t(it.Measured-it.Model), what, it.From, it.To)
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
