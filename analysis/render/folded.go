package render

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/fold"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// GraphvizLimit is the number of vertices above which a DOT graph of
// rank clusters is more than Graphviz lays out in reasonable time: on
// Graphviz 2.42, a critical path of 1,019 vertices took 3.7 s and 101 MB,
// one of 2,053 vertices more than a minute (docs/performance.md).
const GraphvizLimit = 1000

// newrankLimit is the number of vertices up to which the full view sets
// newrank=true: it costs Graphviz 2.42 three times the memory (101 MB
// against 32 MB at 1,019 vertices) and is tied to its crashes on graphs
// of some 22,000 vertices.
const newrankLimit = GraphvizLimit

// FoldedVertices returns the number of vertices WriteFoldedDOT draws for f.
func FoldedVertices(f *critpath.Folded) int { return fold.Leaves(f.Nodes) }

// WriteFoldedDOT writes the critical path folded: each stretch of the path
// that repeats one body of steps is a cluster holding the body once,
// labelled with its repeat count, its total time and its share of the
// path; a body's own repetitions are clusters inside it. A vertex stands
// for all the steps at its place in the body: its label gives the MPI
// function, the rank, how many steps it stands for and their total time
// (the hop into each and, for a collective, its model time). Edges follow
// the path; a dashed edge is a message; a run's last vertex leads back to
// its first by a gray "repeat" edge. The output is written as it is made
// and depends only on the path: the same trace gives the same bytes.
// Only the Unit and Model of o are used.
func WriteFoldedDOT(w io.Writer, f *critpath.Folded, m critpath.Model, o DOTOptions) error {
	if o.Unit <= 0 {
		o.Unit = critpath.Microsecond
	}
	sp := f.StepPath()
	fw := &foldWriter{f: f, length: sp.Length, vertices: sp.NumSteps, o: &o, d: &drawer{o: &o}}
	fw.b = bufio.NewWriter(w)
	// Per leaf and run: what its steps add up to.
	fw.sum(f.Nodes, 0)
	// What the picture says of each leaf's first step, and of the hop
	// into it, read in one pass over the path.
	idx := make([]int, len(fw.leafStart))
	for k, j := range fw.leafStart {
		idx[k], _ = f.StepVertices(j)
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	steps, err := sp.StepsAt(idx)
	if err != nil {
		return err
	}
	fw.at = make(map[int]*reconstruct.ReplayStep, len(steps))
	for k := range steps {
		fw.at[idx[k]] = &steps[k]
	}
	b := fw.b
	fmt.Fprintf(b, "digraph critpath {\n")
	fmt.Fprintf(b, "\tlabel=%s;labelloc=\"t\";\n", dotQuote(fw.label(m)))
	fmt.Fprintf(b, "\tnode[color=%q,penwidth=%q];edge[color=%q,penwidth=%q];\n", CriticalColor, CriticalPenwidth, CriticalColor, CriticalPenwidth)
	fw.L, fw.R = 0, 0
	fw.nodes(f.Nodes, 1)
	// Edges: into each leaf from the one before it on the path's first
	// pass; back from each run's last leaf to its first.
	prev := -1
	fw.L = 0
	fw.edges(f.Nodes, &prev)
	fmt.Fprintf(b, "}\n")
	return b.Flush()
}

type foldWriter struct {
	f *critpath.Folded
	// the path's length and vertices, and its steps the picture names by
	// path vertex
	length   float64
	vertices int
	at       map[int]*reconstruct.ReplayStep
	o        *DOTOptions
	d        *drawer
	b        *bufio.Writer
	// Leaves and runs are numbered in the order of the tree (each body
	// once): L and R count them during a walk of the tree.
	L, R int
	// of each leaf: the path vertex of its first step, how many steps it
	// stands for and their weight.
	leafStart []int
	leafCount []int
	leafW     []float64
	leafRanks [][2]int // the lowest and highest rank of its steps
	// of each run: how many times its body is run in all, the weight of
	// all its steps.
	runTimes []int
	runW     []float64
}

// sum adds the steps of nodes, shifted by shift steps (a later repetition
// of an enclosing body), to their leaves' and runs' totals, numbering them
// (fw.L, fw.R) the first time, and returns their weight.
func (fw *foldWriter) sum(nodes []fold.Node, shift int) float64 {
	var total float64
	for i := range nodes {
		nd := &nodes[i]
		if !nd.IsRun() {
			for j := nd.Start; j < nd.End(); j++ {
				total += fw.leaf(j, shift)
			}
			continue
		}
		k := fw.R
		fw.R++
		if k == len(fw.runTimes) {
			fw.runTimes = append(fw.runTimes, 0)
			fw.runW = append(fw.runW, 0)
		}
		l0, r0 := fw.L, fw.R
		var w float64
		for r := range nd.Count {
			fw.L, fw.R = l0, r0
			w += fw.sum(nd.Body, shift+r*nd.Period)
		}
		fw.runTimes[k] += nd.Count
		fw.runW[k] += w
		total += w
	}
	return total
}

// leaf adds step j+shift to the totals of the next leaf, and returns its
// weight.
func (fw *foldWriter) leaf(j, shift int) float64 {
	k := fw.L
	fw.L++
	if k == len(fw.leafStart) {
		fw.leafStart = append(fw.leafStart, j)
		fw.leafCount = append(fw.leafCount, 0)
		fw.leafW = append(fw.leafW, 0)
		fw.leafRanks = append(fw.leafRanks, [2]int{math.MaxInt, math.MinInt})
	}
	lo, hi := fw.f.StepRanks(j + shift)
	fw.leafRanks[k] = [2]int{min(fw.leafRanks[k][0], lo), max(fw.leafRanks[k][1], hi)}
	w := fw.f.StepWeight(j + shift)
	first, end := fw.f.StepVertices(j + shift)
	fw.leafCount[k] += end - first
	fw.leafW[k] += w
	return w
}

func (fw *foldWriter) share(w float64) string { return pathShare(w, fw.length) }

// pathShare is w's share of a path's length, "12.3%".
func pathShare(w float64, length float64) string {
	if length <= 0 {
		return "0%"
	}
	return fmt.Sprintf("%.1f%%", 100*w/length)
}

// pathShape is the shape of a vertex of a picture of the path: a box for
// an operation, a hexagon for a collective, an ellipse for MPI_Init and
// MPI_Finalize.
func pathShape(k taskgraph.NodeKind) string {
	switch k {
	case taskgraph.KindCollective:
		return "hexagon"
	case taskgraph.KindInit, taskgraph.KindFinalize:
		return "ellipse"
	}
	return "box"
}

func (fw *foldWriter) label(m critpath.Model) string {
	lines := []string{
		fmt.Sprintf("critical path: %s, %d vertices", fw.d.time(fw.length), fw.vertices),
		fmt.Sprintf("folded: %d vertices drawn; a cluster is a stretch of the path repeating one body (count x steps), drawn once", len(fw.leafStart)),
		"steps folded together: " + fw.f.Likeness(),
		"latency model: " + describeModel(m, fw.o.Model),
		"'mpitrace dot --unfold' draws every vertex",
	}
	return strings.Join(lines, "\n")
}

func indent(depth int) string { return strings.Repeat("\t", depth) }

// nodes writes the leaves of nodes, each run as a cluster.
func (fw *foldWriter) nodes(nodes []fold.Node, depth int) {
	b, in := fw.b, indent(depth)
	for i := range nodes {
		nd := &nodes[i]
		if nd.IsRun() {
			k := fw.R
			fw.R++
			fmt.Fprintf(b, "%ssubgraph cluster_run%d {\n", in, k)
			what := fmt.Sprintf("%d x %d steps", nd.Count, nd.Period)
			if t := fw.runTimes[k]; t != nd.Count {
				what = fmt.Sprintf("%d x %d steps per repetition (%d in all)", nd.Count, nd.Period, t)
			}
			fmt.Fprintf(b, "%s\tcolor=\"gray40\";style=\"rounded\";penwidth=\"1\";label=%s;\n", in,
				dotQuote(what+"\n"+fw.d.time(fw.runW[k])+", "+fw.share(fw.runW[k])+" of the path"))
			fw.nodes(nd.Body, depth+1)
			fmt.Fprintf(b, "%s}\n", in)
			continue
		}
		for range nd.Period {
			fw.leafNode(in)
		}
	}
}

// leafNode writes the next leaf's vertex.
func (fw *foldWriter) leafNode(in string) {
	b := fw.b
	{
		k := fw.L
		fw.L++
		start, _ := fw.f.StepVertices(fw.leafStart[k])
		v := fw.at[start]
		shape := pathShape(v.Kind)
		label := v.Name
		if rr := fw.leafRanks[k]; rr[0] != rr[1] {
			label += fmt.Sprintf("\nranks %d-%d", rr[0], rr[1])
		} else if v.Rank >= 0 {
			label += fmt.Sprintf("\nrank %d", v.Rank)
		}
		tip := fmt.Sprintf("%s, first at vertex %d of the path (graph vertex v%d)%s", fw.f.StepLabel(fw.leafStart[k]), start, v.ID,
			fw.d.siteTipAt(v.Kind, v.SiteRank, v.Site))
		if c := fw.leafCount[k]; c > 1 {
			label += fmt.Sprintf("\n%d x, %s", c, fw.d.time(fw.leafW[k]))
			tip += fmt.Sprintf("; %d steps, %s in all, %s of the path", c, fw.d.time(fw.leafW[k]), fw.share(fw.leafW[k]))
		} else if start > 0 {
			label += "\n" + fw.d.time(fw.leafW[k])
		}
		fmt.Fprintf(b, "%ss%d[id=\"s%d\",label=%s,shape=%q,tooltip=%s];\n", in, k, k, dotQuote(label), shape, dotQuote(tip))
	}
}

// edges writes the edge into each leaf of nodes from *prev (the leaf
// before it on the path, -1 for none) and each run's edge back.
func (fw *foldWriter) edges(nodes []fold.Node, prev *int) {
	for i := range nodes {
		nd := &nodes[i]
		if nd.IsRun() {
			first := fw.L
			fw.edges(nd.Body, prev)
			fmt.Fprintf(fw.b, "\ts%d->s%d[color=\"gray40\",constraint=\"false\",label=%q,penwidth=\"1\",style=\"bold\"];\n",
				*prev, first, fmt.Sprintf("repeat (%d x)", nd.Count))
			continue
		}
		for j := nd.Start; j < nd.End(); j++ {
			k := fw.L
			fw.L++
			if *prev >= 0 {
				first, _ := fw.f.StepVertices(j)
				fw.edge(*prev, k, first)
			}
			*prev = k
		}
	}
}

// edge writes the edge from leaf a to leaf b, whose first step is path
// vertex i: its kind's style, a message's bytes.
func (fw *foldWriter) edge(a, b, i int) {
	h := &fw.at[i].In
	attrs := ""
	if h.Kind == taskgraph.Message {
		attrs = fmt.Sprintf(",label=%q,style=\"dashed\"", fmt.Sprintf("(%d)", h.Bytes))
	}
	fmt.Fprintf(fw.b, "\ts%d->s%d[id=\"%s_s%d\"%s];\n", a, b, h.Kind, b, attrs)
}
