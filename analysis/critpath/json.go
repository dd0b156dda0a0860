package critpath

import (
	"bytes"
	"encoding/json"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// A Path as JSON is its vertices in order and the edges between them
// (edges[i] leads from vertices[i] to vertices[i+1]), and its length.
// Times are in ns.

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
func (p *Path) MarshalJSON() ([]byte, error) { return p.StepPath().MarshalJSON() }

// MarshalJSON encodes the path as Path.MarshalJSON does, from its steps.
func (sp *StepPath) MarshalJSON() ([]byte, error) {
	var vs, es bytes.Buffer
	vs.WriteString(`{"vertices":[`)
	es.WriteString(`],"edges":[`)
	first := true
	err := sp.Steps(func(st *reconstruct.ReplayStep) error {
		v := vertexJSON{Name: st.Name, Rank: st.Rank, Kind: st.Kind.String()}
		if st.Kind == taskgraph.KindCollective {
			v.Weight, v.Model, v.Bytes, v.Procs = st.Weight, sp.Fit(st), st.Bytes, st.Procs
		}
		if !first {
			vs.WriteByte(',')
			e := edgeJSON{Kind: st.In.Kind.String(), Rank: st.In.Rank, Weight: HopWeight(st), Bytes: st.In.Bytes}
			if st.In.Kind != taskgraph.Message {
				e.Measured = st.In.Weight
			}
			if es.Len() > len(`],"edges":[`) {
				es.WriteByte(',')
			}
			b, err := json.Marshal(e)
			if err != nil {
				return err
			}
			es.Write(b)
		}
		first = false
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		vs.Write(b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	length, err := json.Marshal(sp.Length)
	if err != nil {
		return nil, err
	}
	vs.Write(es.Bytes())
	vs.WriteString(`],"length_ns":`)
	vs.Write(length)
	vs.WriteByte('}')
	return vs.Bytes(), nil
}
