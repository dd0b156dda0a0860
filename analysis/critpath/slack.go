package critpath

import (
	"math"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// Slack returns, for every node of g, how much longer (in ns) the longest
// path through it could be before it became critical: the critical path's
// length minus the longest path from MPI_Init to MPI_Finalize through the
// node (0 for the nodes of the critical path, +Inf for a node from which
// MPI_Finalize cannot be reached, such as a nonblocking collective whose
// requests were never completed). It
// visits the graph forwards (taskgraph.Graph.Walk) and backwards, in time
// linear in its size but with about 20 bytes of memory per node, so it is
// meant for graphs that fit comfortably, not for every run.
func Slack(g *taskgraph.Graph, m Model) ([]float64, error) {
	if m == nil {
		m = zeroModel{}
	}
	w := &weigher{g: g, m: m, colls: make(map[taskgraph.CollectiveInfo]collW)}
	n := g.NumNodes()
	from := make([]float64, n) // longest path from Init to the end of v
	order := make([]taskgraph.NodeID, 0, n)
	err := g.Walk(func(v taskgraph.NodeID, in []taskgraph.Edge) {
		best := 0.0
		for i := range in {
			best = max(best, from[in[i].From]+w.edge(&in[i]))
		}
		from[v] = best + w.coll(v).ns
		order = append(order, v)
	})
	if err != nil {
		return nil, err
	}
	to := make([]float64, n) // longest path from the end of v to Finalize
	var buf []taskgraph.Edge
	for i := len(order) - 1; i >= 0; i-- {
		v := order[i]
		best := math.Inf(-1) // Finalize cannot be reached from v
		if v == taskgraph.Finalize {
			best = 0
		}
		buf = g.Out(v, buf[:0])
		for j := range buf {
			e := &buf[j]
			best = max(best, w.edge(e)+w.coll(e.To).ns+to[e.To])
		}
		to[v] = best
	}
	length := from[taskgraph.Finalize]
	slack := from // reuse: slack[v] = length - (from[v] + to[v])
	for v := range slack {
		slack[v] = max(0, length-(from[v]+to[v]))
	}
	return slack, nil
}
