package critpath

import "encoding/json"

// pathJSON is a Path as JSON: the vertices in order and the edges between
// them (edges[i] leads from vertices[i] to vertices[i+1]). Times are in ns.
type pathJSON struct {
	Vertices []vertexJSON `json:"vertices"`
	Edges    []edgeJSON   `json:"edges"`
	Length   float64      `json:"length_ns"`
}

type vertexJSON struct {
	Name string `json:"name"` // the MPI function
	Rank int    `json:"rank"` // -1 for MPI_Init, MPI_Finalize and collectives
	Kind string `json:"kind"` // init, finalize, op or collective
	// A collective's model time, the fit used and its inputs.
	Weight float64 `json:"weight_ns,omitempty"`
	Model  string  `json:"model,omitempty"`
	Bytes  int64   `json:"bytes,omitempty"`
	Procs  int     `json:"procs,omitempty"`
}

type edgeJSON struct {
	Kind string `json:"kind"` // compute, message, init_out, ...
	Rank int    `json:"rank"`
	// Weight is the edge's share of the path: a computation edge's
	// measured time, a message's model latency.
	Weight   float64 `json:"weight_ns"`
	Measured int64   `json:"measured_ns,omitempty"` // a computation edge's measured time
	Bytes    int64   `json:"bytes,omitempty"`       // a message's size
}

// MarshalJSON encodes the path as {"vertices": [...], "edges": [...],
// "length_ns": ...}, edges[i] leading from vertices[i] to vertices[i+1].
func (p *Path) MarshalJSON() ([]byte, error) {
	n := p.NumVertices()
	j := pathJSON{Vertices: make([]vertexJSON, n), Edges: make([]edgeJSON, n-1), Length: p.Length}
	for i := range n {
		v := p.Vertex(i)
		j.Vertices[i] = vertexJSON{Name: v.Name, Rank: v.Rank, Kind: v.Kind.String(), Weight: v.Weight, Model: v.Model, Bytes: v.Bytes, Procs: v.Procs}
		if i+1 < n {
			h := p.Hop(i)
			j.Edges[i] = edgeJSON{Kind: h.Kind.String(), Rank: h.Rank, Weight: h.Weight, Measured: h.Measured, Bytes: h.Bytes}
		}
	}
	return json.Marshal(j)
}
