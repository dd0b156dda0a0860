package critpath

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"

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

// Summarize summarises p, a critical path of g, with its top heaviest
// items (all when top < 0).
func Summarize(g *taskgraph.Graph, p *Path, top int) *Summary {
	s := &Summary{Length: p.Length, Vertices: len(p.Vertices)}
	for _, r := range g.Ranks() {
		if a, b, ok := g.RankSpan(r); ok {
			s.Measured = max(s.Measured, b-a)
		}
	}
	if s.Measured > 0 {
		s.Ratio = p.Length / float64(s.Measured)
	}
	byRank := make(map[int]*RankShare)
	rank := func(r int) *RankShare {
		if x, ok := byRank[r]; ok {
			return x
		}
		x := &RankShare{Rank: r}
		byRank[r] = x
		return x
	}
	byFn := make(map[string]*FunctionShare)
	fn := func(name string) *FunctionShare {
		if x, ok := byFn[name]; ok {
			return x
		}
		x := &FunctionShare{Name: name}
		byFn[name] = x
		return x
	}
	var items []Item
	for i := range p.Vertices {
		v := &p.Vertices[i]
		fn(v.Name).Count++
		if v.Kind == taskgraph.KindCollective {
			s.Collectives++
			s.Communication += v.Weight
			rank(-1).Communication += v.Weight
			fn(v.Name).Communication += v.Weight
			items = append(items, Item{Kind: "collective", Index: i, From: label(v), To: label(v), Rank: -1, Weight: v.Weight, Model: v.Model})
		}
		if v.Kind == taskgraph.KindOp {
			rank(v.Rank)
		}
	}
	for i := range p.Hops {
		h := &p.Hops[i]
		to := &p.Vertices[i+1]
		if h.Kind == taskgraph.Message {
			s.Messages++
			s.MessageBytes += h.Bytes
			s.Communication += h.Weight
			rank(h.Rank).Communication += h.Weight
			fn(to.Name).Communication += h.Weight
		} else {
			s.Computation += h.Weight
			rank(h.Rank).Computation += h.Weight
			fn(to.Name).Computation += h.Weight
		}
		items = append(items, Item{Kind: h.Kind.String(), Index: i, From: label(&p.Vertices[i]), To: label(to), Rank: h.Rank, Weight: h.Weight, Bytes: h.Bytes})
	}
	share := func(x float64) float64 {
		if p.Length <= 0 {
			return 0
		}
		return x / p.Length
	}
	for _, x := range byRank {
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
	for _, x := range byFn {
		x.Share = share(x.Computation + x.Communication)
		s.ByFunction = append(s.ByFunction, *x)
	}
	slices.SortFunc(s.ByFunction, func(a, b FunctionShare) int {
		if c := cmp.Compare(b.Computation+b.Communication, a.Computation+a.Communication); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	slices.SortStableFunc(items, func(a, b Item) int { return cmp.Compare(b.Weight, a.Weight) })
	if top >= 0 && len(items) > top {
		items = items[:top]
	}
	for i := range items {
		items[i].Share = share(items[i].Weight)
	}
	s.Top = items
	return s
}

// WriteText writes the summary as text tables, times in unit.
func (s *Summary) WriteText(w io.Writer, unit Unit) error {
	t := func(ns float64) string { return fmt.Sprintf("%.3f %s", ns/float64(unit), unit) }
	pct := func(f float64) string { return fmt.Sprintf("%5.1f%%", 100*f) }
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "critical path: %s", t(s.Length))
	if s.Measured > 0 {
		fmt.Fprintf(ew, " (measured run: %s, ratio %.3f)", t(float64(s.Measured)), s.Ratio)
	}
	fmt.Fprintf(ew, "\n%d vertices on %d ranks, %d messages (%d bytes), %d collectives\n", s.Vertices, s.Ranks, s.Messages, s.MessageBytes, s.Collectives)
	if s.Length > 0 {
		fmt.Fprintf(ew, "computation %s (%s), communication %s (%s)\n", t(s.Computation), pct(s.Computation/s.Length), t(s.Communication), pct(s.Communication/s.Length))
	}
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
	if len(s.Top) > 0 {
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
	return ew.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
