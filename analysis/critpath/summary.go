package critpath

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/mpitrace/mpitrace/analysis/internal/textout"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// Summary describes a critical path for people (WriteText) and machines
// (encoding/json). Times are in ns; shares are fractions of Length.
type Summary struct {
	Length float64 `json:"length_ns"`
	// Measured is the run's measured time: the largest, over ranks with
	// both, of the time from the end of MPI_Init to the start of
	// MPI_Finalize on the rank's clock; 0 when no rank has both.
	Measured int64 `json:"measured_ns"`
	// Ratio is Length / Measured (0 when Measured is 0).
	Ratio float64 `json:"ratio"`
	// Weights says how the path was weighed: "model" (the seed's latency
	// model) or "measured" (what the run took).
	Weights Weighting `json:"weights"`
	// Run is, under measured weights, the run's span on rank 0's clock,
	// its wait states and what was clamped (measured.go).
	Run *RunInfo `json:"run,omitempty"`
	// Why says where the difference between the model's path and the
	// measured run went; set (SetWhy) when the model's path is below
	// WhyThreshold of the run.
	Why *Why `json:"why,omitempty"`

	// Computation is the path's computation edges; Communication its
	// message latencies and collective vertices. They add up to Length.
	Computation   float64 `json:"computation_ns"`
	Communication float64 `json:"communication_ns"`

	Vertices     int   `json:"vertices"`
	Messages     int   `json:"messages"`
	MessageBytes int64 `json:"message_bytes"`
	Collectives  int   `json:"collectives"`
	Ranks        int   `json:"ranks"` // ranks the path visits

	ByRank     []RankShare     `json:"by_rank"`
	ByFunction []FunctionShare `json:"by_function"`
	Top        []Item          `json:"top"`
	// Loops is the path's computation inside instrumented loops, set
	// (Report, with ReportOptions.Loops) only for a trace with loop events.
	Loops *LoopSummary `json:"loops,omitempty"`
	// Regions is the path's computation inside regions, kernels, deep
	// copies and sections, set (Report, with ReportOptions.Regions) only
	// for a trace with region events.
	Regions *RegionSummary `json:"regions,omitempty"`
	// Repetition is the heaviest repeated stretch of the path, set
	// (SummarizeRepetition) when it covers a tenth of the path or more.
	Repetition *Repetition `json:"repetition,omitempty"`
	// Sites is the path by call site, set (AttributeSites) only for a
	// trace with call sites.
	Sites *SiteSummary `json:"callsites,omitempty"`
}

// RankShare is the part of the path on one rank: its computation edges and
// the latency of the messages it receives. Collective vertices count for
// rank -1.
type RankShare struct {
	Rank          int     `json:"rank"`
	Computation   float64 `json:"computation_ns"`
	Communication float64 `json:"communication_ns"`
	Share         float64 `json:"share"`
}

// FunctionShare is the part of the path attributed to one MPI function:
// the computation edges leading into its vertices (the work done before
// calling it), the latency of the messages its vertices receive, and the
// model time of its collective vertices.
type FunctionShare struct {
	Name          string  `json:"name"`
	Count         int     `json:"count"` // vertices on the path
	Computation   float64 `json:"computation_ns"`
	Communication float64 `json:"communication_ns"`
	Share         float64 `json:"share"`
}

// Item is one of the heaviest elements of the path: an edge, or a
// collective vertex (Kind "collective", From and To both the vertex).
type Item struct {
	Kind   string  `json:"kind"`  // an edge kind (compute, message, ...) or "collective"
	Index  int     `json:"index"` // position on the path: the hop or vertex index
	From   string  `json:"from"`  // "MPI_Isend 3"
	To     string  `json:"to"`
	Rank   int     `json:"rank"`
	Weight float64 `json:"weight_ns"`
	Bytes  int64   `json:"bytes,omitempty"`
	Model  string  `json:"model,omitempty"` // the fit a collective used
	Share  float64 `json:"share"`
}

func label(v *Vertex) string { return v.Name + " " + strconv.Itoa(v.Rank) }

// Summarize summarises p with its top heaviest items (all when top < 0):
// SummarizeSteps of p's steps.
func Summarize(p *Path, top int) *Summary {
	s, _ := p.StepPath().Summarize(top) // a graph's path never fails
	return s
}

// Summarize summarises the path with its top heaviest items (all when
// top < 0). It reads the steps twice: the collective vertices first, then
// every vertex with the hop into it (the sums add up in the order they
// always did, to the last bit); it keeps only the top heaviest items (a
// bounded heap), so that its memory does not grow with the path.
// WriteCritPathOutSummary does the same while it writes critPath.out.
func (sp *StepPath) Summarize(top int) (*Summary, error) {
	sum, _, err := sp.Report(ReportOptions{Top: top})
	return sum, err
}

// summarizer sums a path for Summarize: newSummarizer visits the
// collective vertices, visit every vertex with the hop into it, in path
// order; finish makes the Summary.
type summarizer struct {
	s  *Summary
	sp *StepPath
	// By world rank, collectives at -1; not a table of Size() entries, which
	// a hostile log may claim in millions. Paths stay on a rank for a while.
	byRank   map[int]*RankShare
	lastRank *RankShare
	byFn     map[string]*FunctionShare
	lastFn   *FunctionShare
	heavy    *heaviest
	i        int // the vertex visit sees next
	// The vertex before it: its function and rank.
	prevName string
	prevRank int
}

func newSummarizer(sp *StepPath, top int) (*summarizer, error) {
	s := &Summary{Length: sp.Length, Vertices: sp.NumSteps, Weights: sp.Weights, Measured: sp.RunTime}
	if s.Measured > 0 {
		s.Ratio = sp.Length / float64(s.Measured)
	}
	sz := &summarizer{s: s, sp: sp, byRank: make(map[int]*RankShare), byFn: make(map[string]*FunctionShare), heavy: newHeaviest(top)}
	// Collective vertices first, then hops, each in path order.
	err := sp.collectives(func(i int, st *reconstruct.ReplayStep) error {
		w := st.Weight
		s.Collectives++
		s.Communication += w
		sz.rank(-1).Communication += w
		sz.fn(st.Name).Communication += w
		if c := (candidate{weight: w, index: i}); sz.heavy.admits(c) {
			l := stepLabel(st)
			c.item = Item{Kind: "collective", Index: i, From: l, To: l, Rank: -1, Weight: w, Model: sp.Fit(st)}
			sz.heavy.add(c)
		}
		return nil
	})
	return sz, err
}

// stepLabel is "MPI_Isend 3": a vertex's function and rank.
func stepLabel(st *reconstruct.ReplayStep) string { return st.Name + " " + strconv.Itoa(st.Rank) }

func (sz *summarizer) rank(r int) *RankShare {
	if sz.lastRank != nil && sz.lastRank.Rank == r {
		return sz.lastRank
	}
	x, ok := sz.byRank[r]
	if !ok {
		x = &RankShare{Rank: r}
		sz.byRank[r] = x
	}
	sz.lastRank = x
	return x
}

func (sz *summarizer) fn(name string) *FunctionShare {
	if sz.lastFn != nil && sz.lastFn.Name == name {
		return sz.lastFn
	}
	x, ok := sz.byFn[name]
	if !ok {
		x = &FunctionShare{Name: name}
		sz.byFn[name] = x
	}
	sz.lastFn = x
	return x
}

// visit counts the next vertex of the path, and the hop into it.
func (sz *summarizer) visit(st *reconstruct.ReplayStep) {
	i := sz.i
	sz.i++
	to := sz.fn(st.Name)
	to.Count++
	if st.Kind == taskgraph.KindOp {
		sz.rank(st.Rank)
	}
	prevName, prevRank := sz.prevName, sz.prevRank
	sz.prevName, sz.prevRank = st.Name, st.Rank
	if i == 0 {
		return
	}
	s := sz.s
	weight := HopWeight(st)
	if st.In.Kind == taskgraph.Message {
		s.Messages++
		s.MessageBytes += st.In.Bytes
		s.Communication += weight
		sz.rank(st.In.Rank).Communication += weight
		to.Communication += weight
	} else {
		s.Computation += weight
		sz.rank(st.In.Rank).Computation += weight
		to.Computation += weight
	}
	if c := (candidate{weight: weight, hop: true, index: i - 1}); sz.heavy.admits(c) {
		c.item = Item{Kind: st.In.Kind.String(), Index: i - 1, From: prevName + " " + strconv.Itoa(prevRank), To: stepLabel(st),
			Rank: st.In.Rank, Weight: weight, Bytes: st.In.Bytes}
		sz.heavy.add(c)
	}
}

func (sz *summarizer) finish() *Summary {
	s, sp := sz.s, sz.sp
	share := func(x float64) float64 {
		if sp.Length <= 0 {
			return 0
		}
		return x / sp.Length
	}
	for _, x := range sz.byRank {
		x.Share = share(x.Computation + x.Communication)
		s.ByRank = append(s.ByRank, *x)
		if x.Rank >= 0 {
			s.Ranks++
		}
	}
	slices.SortFunc(s.ByRank, func(a, b RankShare) int {
		if c := cmp.Compare(b.Computation+b.Communication, a.Computation+a.Communication); c != 0 {
			return c
		}
		return cmp.Compare(a.Rank, b.Rank)
	})
	for _, x := range sz.byFn {
		x.Share = share(x.Computation + x.Communication)
		s.ByFunction = append(s.ByFunction, *x)
	}
	slices.SortFunc(s.ByFunction, func(a, b FunctionShare) int {
		if c := cmp.Compare(b.Computation+b.Communication, a.Computation+a.Communication); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	s.Run = sp.RunInfo(s.Measured)
	kept := sz.heavy.sorted()
	s.Top = make([]Item, 0, len(kept)) // [] in JSON, not null, with --top 0
	for _, c := range kept {
		it := c.item
		it.Share = share(it.Weight)
		s.Top = append(s.Top, it)
	}
	return s
}

// A candidate is an item of the summary's Top before it is described:
// collective vertex index, or hop index.
type candidate struct {
	weight float64
	hop    bool
	index  int
	item   Item     // the summary's item, once admitted
	why    *WhyItem // or Explain's
}

// heavier reports whether a goes before b in Top: by weight, heaviest
// first, then collective vertices before hops, each in path order (the
// order of a stable sort of the vertices' items followed by the hops').
func heavier(a, b candidate) bool {
	if c := cmp.Compare(a.weight, b.weight); c != 0 {
		return c > 0
	}
	if a.hop != b.hop {
		return !a.hop
	}
	return a.index < b.index
}

// heaviest keeps the n heaviest candidates added (all when n < 0) in a
// heap whose root is the lightest kept: time O(log n) per candidate,
// memory O(n).
type heaviest struct {
	n int
	h []candidate
}

func newHeaviest(n int) *heaviest { return &heaviest{n: n} }

// admits reports whether add would keep c (for now).
func (t *heaviest) admits(c candidate) bool {
	return t.n < 0 || len(t.h) < t.n || t.n > 0 && heavier(c, t.h[0])
}

func (t *heaviest) add(c candidate) {
	if t.n >= 0 && len(t.h) == t.n {
		if t.n == 0 || !heavier(c, t.h[0]) {
			return
		}
		t.h[0] = c
		t.down(0)
		return
	}
	t.h = append(t.h, c)
	for i := len(t.h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !heavier(t.h[parent], t.h[i]) {
			break
		}
		t.h[parent], t.h[i] = t.h[i], t.h[parent]
		i = parent
	}
}

// down restores the heap below i: every parent lighter than its children.
func (t *heaviest) down(i int) {
	for {
		lightest := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(t.h) && heavier(t.h[lightest], t.h[c]) {
				lightest = c
			}
		}
		if lightest == i {
			return
		}
		t.h[i], t.h[lightest] = t.h[lightest], t.h[i]
		i = lightest
	}
}

// sorted returns the kept candidates, heaviest first.
func (t *heaviest) sorted() []candidate {
	out := slices.Clone(t.h)
	slices.SortFunc(out, func(a, b candidate) int {
		switch {
		case heavier(a, b):
			return -1
		case heavier(b, a):
			return 1
		}
		return 0
	})
	return out
}

// WriteText writes the summary as text tables, times in unit.
func (s *Summary) WriteText(w io.Writer, unit Unit) error {
	t := func(ns float64) string { return fmt.Sprintf("%.3f %s", ns/float64(unit), unit) }
	pct := func(f float64) string { return fmt.Sprintf("%5.1f%%", 100*f) }
	ew := &textout.ErrWriter{W: w}
	fmt.Fprintf(ew, "critical path: %s", t(s.Length))
	if s.Measured > 0 {
		fmt.Fprintf(ew, " (measured run: %s, ratio %.3f)", t(float64(s.Measured)), s.Ratio)
	}
	fmt.Fprintf(ew, "\n%d vertices on %d ranks, %d messages (%d bytes), %d collectives\n", s.Vertices, s.Ranks, s.Messages, s.MessageBytes, s.Collectives)
	if s.Length > 0 {
		fmt.Fprintf(ew, "computation %s (%s), communication %s (%s)\n", t(s.Computation), pct(s.Computation/s.Length), t(s.Communication), pct(s.Communication/s.Length))
	}
	if s.Repetition != nil && ew.Err == nil {
		ew.Err = s.Repetition.WriteText(ew)
	}
	s.writeRunWhy(ew, t)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(ew, "\nby rank:\n")
	fmt.Fprintf(tw, "rank\tcomputation\tcommunication\tshare\t\n")
	for _, x := range s.ByRank {
		r := strconv.Itoa(x.Rank)
		if x.Rank < 0 {
			r = "collective"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", r, t(x.Computation), t(x.Communication), pct(x.Share))
	}
	tw.Flush()
	fmt.Fprintf(ew, "\nby MPI function (computation before the call, communication into it):\n")
	fmt.Fprintf(tw, "function\tcount\tcomputation\tcommunication\tshare\t\n")
	for _, x := range s.ByFunction {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t\n", x.Name, x.Count, t(x.Computation), t(x.Communication), pct(x.Share))
	}
	tw.Flush()
	if s.Sites != nil && ew.Err == nil {
		// The heaviest steps grouped by call site replace the heaviest
		// single steps, which repeat per iteration.
		ew.Err = s.Sites.WriteText(ew, unit)
	} else if len(s.Top) > 0 {
		fmt.Fprintf(ew, "\nheaviest:\n")
		for _, it := range s.Top {
			what := it.Kind
			if it.Kind == "message" {
				what = fmt.Sprintf("message %d bytes", it.Bytes)
			} else if it.Kind == "collective" && it.Model != "" {
				what = "collective (model " + it.Model + ")"
			}
			if it.Kind == "collective" {
				fmt.Fprintf(ew, "  %s  %s  %s: %s\n", pct(it.Share), t(it.Weight), what, it.From)
			} else {
				fmt.Fprintf(ew, "  %s  %s  %s: %s -> %s\n", pct(it.Share), t(it.Weight), what, it.From, it.To)
			}
		}
	}
	if s.Loops != nil && ew.Err == nil {
		ew.Err = s.Loops.WriteText(ew, unit)
	}
	if s.Regions != nil && ew.Err == nil {
		ew.Err = s.Regions.WriteText(ew, unit)
	}
	return ew.Err
}
