package render

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// WriteStepGraphDOT writes the critical path merged by call site
// (critpath.StepGraph): a vertex per call site the path passes through,
// labelled with its MPI function, call site, ranks, how many steps of the
// path it stands for and their time; an edge per pair of them the path
// hops between, labelled with how often and how long, drawn heavier the
// larger its share of the path. Loops of the program are cycles. The output
// depends only on the path. The Unit, Model and Sites of o are used.
func WriteStepGraphDOT(w io.Writer, s *critpath.StepGraph, m critpath.Model, o DOTOptions) error {
	if o.Unit <= 0 {
		o.Unit = critpath.Microsecond
	}
	d := &drawer{o: &o}
	b := bufio.NewWriter(w)
	label := strings.Join([]string{
		fmt.Sprintf("critical path: %s, %d vertices", d.time(s.Length), s.Vertices),
		fmt.Sprintf("merged by %s: %d vertices drawn; a vertex is every step of the path at one %s, an edge every hop between two (count x, time); cycles are the program's loops", s.By, len(s.Nodes), s.By),
		"the path does not repeat one sequence of steps, so it is merged rather than folded",
		"latency model: " + describeModel(m, o.Model),
		"'mpitrace dot --unfold' draws every vertex",
	}, "\n")
	fmt.Fprintf(b, "digraph critpath {\n")
	fmt.Fprintf(b, "\tlabel=%s;labelloc=\"t\";\n", dotQuote(label))
	fmt.Fprintf(b, "\tnode[color=%q];edge[color=%q];\n", CriticalColor, CriticalColor)
	for i := range s.Nodes {
		nd := &s.Nodes[i]
		shape := pathShape(nd.Kind)
		lines := []string{nd.Name}
		if o.Sites != nil {
			if r, site := s.Site(i); site != 0 {
				if l := o.Sites(r, site); l != "" {
					lines = append(lines, l)
				}
			}
		}
		switch {
		case nd.Rank < 0:
		case nd.Rank == nd.RankHi:
			lines = append(lines, fmt.Sprintf("rank %d", nd.Rank))
		default:
			lines = append(lines, fmt.Sprintf("ranks %d-%d", nd.Rank, nd.RankHi))
		}
		lines = append(lines, fmt.Sprintf("%d x, %s (%s)", nd.Count, d.time(nd.Weight), pathShare(nd.Weight, s.Length)))
		sr, site := s.Site(i)
		steps := "steps"
		if nd.Count == 1 {
			steps = "step"
		}
		tip := fmt.Sprintf("%s: %d %s of the path, first at vertex %d (graph vertex v%d), %s in all%s",
			nd.Name, nd.Count, steps, nd.First, nd.ID, d.time(nd.Weight), d.siteTipAt(nd.Kind, sr, site))
		fmt.Fprintf(b, "\tn%d[id=\"n%d\",label=%s,shape=%q,penwidth=%q,tooltip=%s];\n", i, i, dotQuote(strings.Join(lines, "\n")), shape, weightPen(nd.Weight, s.Length), dotQuote(tip))
	}
	for i := range s.Edges {
		e := &s.Edges[i]
		l := fmt.Sprintf("%d x, %s", e.Count, d.time(e.Weight))
		attrs := ""
		if e.Kind == taskgraph.Message {
			l += fmt.Sprintf("\n(%d)", e.Bytes)
			attrs = ",style=\"dashed\""
		}
		fmt.Fprintf(b, "\tn%d->n%d[id=\"%s_%d\",label=%s,penwidth=%q%s];\n", e.From, e.To, e.Kind, i, dotQuote(l), weightPen(e.Weight, s.Length), attrs)
	}
	fmt.Fprintf(b, "}\n")
	return b.Flush()
}

// weightPen is a pen width from 1 to 6 by share of the path.
func weightPen(w, total float64) string {
	if total <= 0 || w <= 0 {
		return "1"
	}
	return formatNum(1 + 5*min(w/total, 1))
}

// dotQuote quotes s as a DOT string that Graphviz shows as s: quotes and
// backslashes escaped, newlines as \n (a centred line break), other
// control characters as blanks and bytes that are not UTF-8 as U+FFFD
// (Go's %q writes \t and \xff, which Graphviz draws as their letters).
func dotQuote(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
