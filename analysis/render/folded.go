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
	if err := fw.sum(f.Nodes); err != nil {
		return err
	}
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

// foldCursor walks a fold's tree in path order, a step at a time,
// numbering the leaves and runs the first time they are met (fw.L, fw.R)
// and adding up the runs' weights as their repetitions end: each run's
// total is the sum of its repetitions', each repetition's the sum, in
// order, of its steps' and inner runs' (the order of the additions
// decides the last bits of the sums).
type foldCursor struct {
	fw     *foldWriter
	frames []walkFrame
	acc    []runAcc // the runs the walk is in, innermost last
}

// walkFrame is a list of nodes walked at a shift (steps added by the
// enclosing runs' earlier repetitions), and the node it is at.
type walkFrame struct {
	nodes []fold.Node
	i, j  int // node; step within a leaf node
	shift int
	// the run node i, when its body is walked: its repetition, and the
	// leaf and run numbers its body starts at
	rep, l0, r0 int
}

type runAcc struct {
	run    int
	w, cur float64
}

func (fw *foldWriter) cursor(nodes []fold.Node) *foldCursor {
	return &foldCursor{fw: fw, frames: []walkFrame{{nodes: nodes}}}
}

// next returns the next step of the path and its leaf; false at the end.
func (c *foldCursor) next() (step, leaf int, ok bool) {
	fw := c.fw
	for len(c.frames) > 0 {
		f := &c.frames[len(c.frames)-1]
		if f.i == len(f.nodes) {
			c.frames = c.frames[:len(c.frames)-1]
			if len(c.frames) == 0 {
				return 0, 0, false
			}
			p := &c.frames[len(c.frames)-1]
			nd := &p.nodes[p.i]
			t := &c.acc[len(c.acc)-1]
			t.w += t.cur
			t.cur = 0
			if p.rep++; p.rep < nd.Count {
				fw.L, fw.R = p.l0, p.r0
				c.frames = append(c.frames, walkFrame{nodes: nd.Body, shift: p.shift + p.rep*nd.Period})
				continue
			}
			fw.runW[t.run] += t.w
			w := t.w
			c.acc = c.acc[:len(c.acc)-1]
			if len(c.acc) > 0 {
				c.acc[len(c.acc)-1].cur += w
			}
			p.i++
			continue
		}
		nd := &f.nodes[f.i]
		if !nd.IsRun() {
			if f.j >= nd.End()-nd.Start {
				f.i, f.j = f.i+1, 0
				continue
			}
			j := nd.Start + f.j
			f.j++
			k := fw.L
			fw.L++
			if k == len(fw.leafStart) {
				fw.leafStart = append(fw.leafStart, j)
				fw.leafCount = append(fw.leafCount, 0)
				fw.leafW = append(fw.leafW, 0)
				fw.leafRanks = append(fw.leafRanks, [2]int{math.MaxInt, math.MinInt})
			}
			return j + f.shift, k, true
		}
		k := fw.R
		fw.R++
		if k == len(fw.runTimes) {
			fw.runTimes = append(fw.runTimes, 0)
			fw.runW = append(fw.runW, 0)
		}
		fw.runTimes[k] += nd.Count
		c.acc = append(c.acc, runAcc{run: k})
		f.rep, f.l0, f.r0 = 0, fw.L, fw.R
		c.frames = append(c.frames, walkFrame{nodes: nd.Body, shift: f.shift})
	}
	return 0, 0, false
}

// add adds w to the repetition the walk is in.
func (c *foldCursor) add(w float64) {
	if len(c.acc) > 0 {
		c.acc[len(c.acc)-1].cur += w
	}
}

// sum adds up what each leaf's and run's steps weigh, in one pass over
// the path beside a walk of the fold's tree.
func (fw *foldWriter) sum(nodes []fold.Node) error {
	c := fw.cursor(nodes)
	var bad error
	err := fw.f.EachStep(func(i, first, end int, w float64, lo, hi int) {
		step, k, ok := c.next()
		if !ok || step != i {
			if bad == nil {
				bad = fmt.Errorf("render: internal error: the fold's tree has step %d (%v) where the path has %d", step, ok, i)
			}
			return
		}
		fw.leafRanks[k] = [2]int{min(fw.leafRanks[k][0], lo), max(fw.leafRanks[k][1], hi)}
		fw.leafCount[k] += end - first
		fw.leafW[k] += w
		c.add(w)
	})
	if step, _, ok := c.next(); ok && bad == nil {
		bad = fmt.Errorf("render: internal error: the fold's tree has step %d past the path's end", step)
	}
	if err != nil {
		return err
	}
	return bad
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
		tip := fmt.Sprintf("%s, first at vertex %d of the path (graph vertex v%d)%s", fw.f.StepLabelOf(fw.leafStart[k], v.Rank), start, v.ID,
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
