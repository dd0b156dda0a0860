package render

import (
	"errors"
	"io"
	"maps"
	"slices"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// Cut returns what a streaming replay is given to collect the part of
// the graph o draws (o.Ranks, o.Window), for WriteCutDOT; nil when o
// draws no part. A picture of the path through the part draws few of
// its operations: only one of all of them stops at o.MaxVertices.
func (o *DOTOptions) Cut() *reconstruct.Cut {
	if o.Ranks == nil && o.Window == nil {
		return nil
	}
	c := &reconstruct.Cut{}
	if !o.CriticalOnly {
		c.Max = o.MaxVertices
	}
	if o.Ranks != nil {
		c.Ranks = o.Ranks.Contains
	}
	if w := o.Window; w != nil {
		c.Window = &reconstruct.CutWindow{Start: int64(w.Start), End: int64(w.End)}
	}
	return c
}

// WriteCutDOT writes the part of the task graph a streaming replay
// collected (o.Cut's) as WriteDOT writes
// that part of the graph, without the graph: the same picture, byte for
// byte. sp is the replay's critical path, whose steps carry the graph's
// ids (sp.Shape.IDs); it returns the vertices drawn.
func WriteCutDOT(w io.Writer, cg *reconstruct.CutGraph, sp *critpath.StepPath, m critpath.Model, o DOTOptions) (int, error) {
	if o.Unit <= 0 {
		o.Unit = critpath.Microsecond
	}
	if sp.Shape == nil || !sp.Shape.IDs {
		return 0, errors.New("render: the path's steps do not name the graph's vertices")
	}
	if o.Ranks == nil && o.Window == nil {
		return 0, errors.New("render: a cut draws some ranks or a window")
	}
	if cg.Over {
		// More operations than MaxVertices (reconstruct.Cut.Max).
		return o.MaxVertices + 1, &TooBigError{Vertices: o.MaxVertices + 1, Max: o.MaxVertices, AtLeast: true}
	}
	// The vertices of the part, and those of the path among them.
	ops := make(map[taskgraph.NodeID]*reconstruct.CutOp, len(cg.Ops))
	for i := range cg.Ops {
		ops[cg.Ops[i].ID] = &cg.Ops[i]
	}
	colls := make(map[taskgraph.NodeID]*reconstruct.CutColl, len(cg.Colls))
	for i := range cg.Colls {
		colls[cg.Colls[i].ID] = &cg.Colls[i]
	}
	inPart := func(id taskgraph.NodeID) bool {
		return id == taskgraph.Init || id == taskgraph.Finalize || ops[id] != nil || colls[id] != nil
	}
	onPath := make(map[taskgraph.NodeID]bool)
	pathEdges := make(map[edgeKey]bool)
	var prev taskgraph.NodeID
	first := true
	if err := sp.Steps(func(st *reconstruct.ReplayStep) error {
		if inPart(st.ID) {
			onPath[st.ID] = true
		}
		if !first && (inPart(prev) || inPart(st.ID)) {
			pathEdges[edgeKey{prev, st.ID, st.In.Kind, st.In.Rank}] = true
		}
		prev, first = st.ID, false
		return nil
	}); err != nil {
		return 0, err
	}
	// What is kept, by selectView's rules.
	candidate := func(e *reconstruct.CutEdge) bool { return !o.CriticalOnly || pathEdges[keyOf(e.Edge)] }
	keep := make(map[taskgraph.NodeID]bool)
	for _, op := range cg.Ops {
		if !o.CriticalOnly || onPath[op.ID] {
			keep[op.ID] = true
		}
	}
	has := func(id taskgraph.NodeID) bool { return keep[id] }
	set := func(id taskgraph.NodeID) { keep[id] = true }
	for i := range cg.Edges {
		if e := &cg.Edges[i]; candidate(e) {
			o.keepShared(e.Edge, e.FromRank < 0, e.ToRank < 0, has, set)
		}
	}
	var edges []drawnEdge
	stubs := make(map[int]bool)
	for i := range cg.Edges {
		e := &cg.Edges[i]
		if !candidate(e) {
			continue
		}
		rank := func(id taskgraph.NodeID) int {
			if id == e.From {
				return e.FromRank
			}
			return e.ToRank
		}
		if de, ok := o.drawEdge(e.Edge, e.FromRank < 0, e.ToRank < 0, keep[e.From], keep[e.To], rank); ok {
			edges = append(edges, de)
			for _, r := range [2]int{de.stubFrom, de.stubTo} {
				if r >= 0 {
					stubs[r] = true
				}
			}
		}
	}
	vertices := len(keep) + len(stubs)
	if o.MaxVertices > 0 && vertices > o.MaxVertices {
		return vertices, &TooBigError{Vertices: vertices, Max: o.MaxVertices}
	}
	// The picture.
	d := &drawer{m: m, o: &o}
	sh := sp.Shape
	c := labelCounts{size: sh.Size, ops: sh.Ops, colls: sh.Collectives, msgs: sh.Messages, allEdges: sh.Edges,
		path: true, length: sp.Length, vertices: sp.NumSteps, keptEdges: len(edges)}
	pic := &picture{vertices: vertices}
	for i := range cg.Ops {
		op := &cg.Ops[i]
		if !keep[op.ID] {
			continue
		}
		c.keptOps++
		if n := len(pic.clusters); n == 0 || pic.clusters[n-1].rank != op.Rank {
			pic.clusters = append(pic.clusters, cluster{rank: op.Rank})
		}
		cl := &pic.clusters[len(pic.clusters)-1]
		cl.nodes = append(cl.nodes, d.opNode(op.ID, op.Name, op.Rank, int(op.Index), op.Start-op.Origin, op.End-op.Start, op.Bytes,
			d.siteTipAt(taskgraph.KindOp, op.Rank, op.Site), onPath[op.ID]))
	}
	for _, id := range []taskgraph.NodeID{taskgraph.Init, taskgraph.Finalize} {
		if keep[id] {
			name := cg.InitName
			if id == taskgraph.Finalize {
				name = cg.FinalizeName
			}
			pic.shared = append(pic.shared, endNode(id, name, onPath[id]))
		}
	}
	for i := range cg.Colls {
		cc := &cg.Colls[i]
		if !keep[cc.ID] {
			continue
		}
		c.keptColls++
		pic.shared = append(pic.shared, d.collNode(cc.ID, cc.Name, cc.Procs, cc.Participants, cc.Bytes,
			d.siteTipAt(taskgraph.KindCollective, cc.SiteRank, cc.Site), onPath[cc.ID]))
	}
	nonblocking := func(id taskgraph.NodeID) bool { cc := colls[id]; return cc != nil && cc.Nonblocking }
	for _, e := range edges {
		pic.edges = append(pic.edges, pedge{drawnEdge: e, label: d.edgeLabel(e.Edge),
			dotted: e.Kind == taskgraph.CollIn && nonblocking(e.To) || e.Kind == taskgraph.CollOut && nonblocking(e.From),
			onPath: pathEdges[keyOf(e.Edge)]})
	}
	pic.stubs = slices.Sorted(maps.Keys(stubs))
	pic.label = d.labelOf(c)
	return vertices, pic.write(w)
}
