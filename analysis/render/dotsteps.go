package render

import (
	"cmp"
	"errors"
	"io"
	"slices"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// WriteStepsDOT writes the critical path sp the streaming replay found as
// WriteDOT writes the graph with CriticalOnly, without the graph: the
// same picture, byte for byte, its vertices named by their graph ids. It
// needs a path whose steps carry those ids (sp.Shape.IDs) and draws no
// part (o.Ranks and o.Window nil); it returns the vertices drawn.
func WriteStepsDOT(w io.Writer, sp *critpath.StepPath, m critpath.Model, o DOTOptions) (int, error) {
	if o.Unit <= 0 {
		o.Unit = critpath.Microsecond
	}
	o.CriticalOnly = true
	if sp.Shape == nil || !sp.Shape.IDs {
		return 0, errors.New("render: the path's steps do not name the graph's vertices")
	}
	if o.Ranks != nil || o.Window != nil {
		return 0, errors.New("render: a part of the graph needs the graph")
	}
	if n := sp.NumSteps; o.MaxVertices > 0 && n > o.MaxVertices {
		return n, &TooBigError{Vertices: n, Max: o.MaxVertices}
	}
	steps := make([]reconstruct.ReplayStep, 0, sp.NumSteps)
	if err := sp.Steps(func(st *reconstruct.ReplayStep) error {
		steps = append(steps, *st)
		return nil
	}); err != nil {
		return 0, err
	}
	d := &drawer{m: m, o: &o}
	sh := sp.Shape
	c := labelCounts{size: sh.Size, ops: sh.Ops, colls: sh.Collectives, msgs: sh.Messages, allEdges: sh.Edges,
		path: true, length: sp.Length, vertices: len(steps), keptEdges: max(len(steps)-1, 0)}
	pic := &picture{vertices: len(steps)}
	// The edges, by the vertex they leave (the graph's order).
	for i := 1; i < len(steps); i++ {
		from, st := &steps[i-1], &steps[i]
		e := taskgraph.Edge{Kind: st.In.Kind, From: from.ID, To: st.ID, Rank: st.In.Rank, Weight: st.In.Weight, Bytes: st.In.Bytes}
		pic.edges = append(pic.edges, pedge{drawnEdge: drawnEdge{e, -1, -1}, label: d.edgeLabel(e), onPath: true,
			dotted: e.Kind == taskgraph.CollIn && st.Kind == taskgraph.KindCollective && st.Nonblocking ||
				e.Kind == taskgraph.CollOut && from.Kind == taskgraph.KindCollective && from.Nonblocking})
	}
	slices.SortFunc(pic.edges, func(a, b pedge) int { return cmp.Compare(a.From, b.From) })
	// The vertices: operations by rank, then the shared ones, by id.
	slices.SortFunc(steps, func(a, b reconstruct.ReplayStep) int {
		ka, kb := a.Kind == taskgraph.KindOp, b.Kind == taskgraph.KindOp
		switch {
		case ka && !kb:
			return -1
		case kb && !ka:
			return 1
		case ka:
			if c := cmp.Compare(a.Rank, b.Rank); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.ID, b.ID)
	})
	for i := range steps {
		st := &steps[i]
		switch st.Kind {
		case taskgraph.KindOp:
			c.keptOps++
			org, first, _ := sp.Origin(st.Rank)
			if n := len(pic.clusters); n == 0 || pic.clusters[n-1].rank != st.Rank {
				pic.clusters = append(pic.clusters, cluster{rank: st.Rank})
			}
			cl := &pic.clusters[len(pic.clusters)-1]
			cl.nodes = append(cl.nodes, d.opNode(st.ID, st.Name, st.Rank, int(st.ID-first), st.Start-org, st.End-st.Start, st.Bytes,
				d.siteTipAt(st.Kind, st.SiteRank, st.Site), true))
		case taskgraph.KindCollective:
			c.keptColls++
			pic.shared = append(pic.shared, d.collNode(st.ID, st.Name, st.Procs, st.Participants, st.Bytes,
				d.siteTipAt(st.Kind, st.SiteRank, st.Site), true))
		default:
			pic.shared = append(pic.shared, endNode(st.ID, st.Name, true))
		}
	}
	pic.label = d.labelOf(c)
	return len(steps), pic.write(w)
}
