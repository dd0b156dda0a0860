package critpath

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"

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
// It holds the whole encoding: WriteJSON streams it.
func (sp *StepPath) MarshalJSON() ([]byte, error) {
	var b, out bytes.Buffer
	if err := sp.WriteJSON(&b, "", ""); err != nil {
		return nil, err
	}
	if err := json.Compact(&out, b.Bytes()); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// WriteJSON writes the path as {"vertices": [...], "edges": [...],
// "length_ns": ...}, indented as json.Indent(MarshalJSON, prefix, indent)
// would (the first line not prefixed), as it reads its steps, twice: the
// vertices, then the edges. Its memory does not grow with the path.
func (sp *StepPath) WriteJSON(w io.Writer, prefix, indent string) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	keys, elems := prefix+indent, prefix+indent+indent // the object's keys, the arrays' elements
	var buf bytes.Buffer
	// elem writes one element of an array: after a comma but the first,
	// on its own line.
	elem := func(first bool, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if !first {
			bw.WriteByte(',')
		}
		bw.WriteString("\n" + elems)
		buf.Reset()
		if err := json.Indent(&buf, b, elems, indent); err != nil {
			return err
		}
		_, err = bw.Write(buf.Bytes())
		return err
	}
	// array writes the array of key, its elements from each.
	array := func(key string, each func(func(first bool, v any) error) error) error {
		bw.WriteString(keys + `"` + key + `": [`)
		n := 0
		if err := each(func(first bool, v any) error { n++; return elem(first, v) }); err != nil {
			return err
		}
		if n > 0 {
			bw.WriteString("\n" + keys)
		}
		bw.WriteString("],\n")
		return nil
	}
	bw.WriteString("{\n")
	if err := array("vertices", func(put func(bool, any) error) error {
		first := true
		return sp.Steps(func(st *reconstruct.ReplayStep) error {
			v := vertexJSON{Name: st.Name, Rank: st.Rank, Kind: st.Kind.String()}
			if st.Kind == taskgraph.KindCollective {
				v.Weight, v.Model, v.Bytes, v.Procs = st.Weight, sp.Fit(st), st.Bytes, st.Procs
			}
			err := put(first, v)
			first = false
			return err
		})
	}); err != nil {
		return err
	}
	if err := array("edges", func(put func(bool, any) error) error {
		i := 0
		return sp.Steps(func(st *reconstruct.ReplayStep) error {
			if i++; i == 1 {
				return nil
			}
			e := edgeJSON{Kind: st.In.Kind.String(), Rank: st.In.Rank, Weight: HopWeight(st), Bytes: st.In.Bytes}
			if st.In.Kind != taskgraph.Message {
				e.Measured = st.In.Weight
			}
			return put(i == 2, e)
		})
	}); err != nil {
		return err
	}
	length, err := json.Marshal(sp.Length)
	if err != nil {
		return err
	}
	bw.WriteString(keys + `"length_ns": `)
	bw.Write(length)
	bw.WriteString("\n" + prefix + "}")
	return bw.Flush()
}
