package taskgraph

import (
	"bufio"
	"io"
	"strconv"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// WriteText writes a deterministic, line-oriented rendering of the graph:
// a summary line, one line per node in id order, then one line per edge
// (the outgoing edges of each node in id order, as Out gives them):
//
//	graph ranks=2 ops=4 collectives=1 messages=1
//	node 2 op MPI_Send rank=0 t=1000..1500 kind=Send bytes=8 ev=1
//	node 5 op MPI_Wait rank=1 t=3000..3200 kind=Complete bytes=8 ev=4#0
//	node 6 collective MPI_Barrier rank=-1 t=4000..4800 gid=1 procs=2 parts=2 bytes=0 members=0,1
//	edge 2 -> 3 compute rank=0 w=700
//	edge 2 -> 5 message rank=1 bytes=8
//
// ev=4#0 is event 4 of the rank, completion 0 (a part of an expanded
// MPI_Waitall). Golden tests compare it.
func (g *Graph) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	var b []byte
	b = append(b, "graph ranks="...)
	b = strconv.AppendInt(b, int64(g.size), 10)
	b = append(b, " ops="...)
	b = strconv.AppendInt(b, int64(g.numOps), 10)
	b = append(b, " collectives="...)
	b = strconv.AppendInt(b, int64(len(g.colls)), 10)
	b = append(b, " messages="...)
	b = strconv.AppendInt(b, int64(g.NumMessages()), 10)
	b = append(b, '\n')
	bw.Write(b)
	for v := NodeID(0); int(v) < g.NumNodes(); v++ {
		n := g.Node(v)
		b = b[:0]
		b = append(b, "node "...)
		b = strconv.AppendUint(b, uint64(v), 10)
		b = append(b, ' ')
		b = append(b, n.Kind.String()...)
		b = append(b, ' ')
		b = append(b, n.Name...)
		b = append(b, " rank="...)
		b = strconv.AppendInt(b, int64(n.Rank), 10)
		if n.Kind == KindOp || n.Kind == KindCollective {
			b = append(b, " t="...)
			b = strconv.AppendInt(b, n.Start, 10)
			b = append(b, ".."...)
			b = strconv.AppendInt(b, n.End, 10)
		}
		switch n.Kind {
		case KindOp:
			b = append(b, " kind="...)
			b = append(b, kindName(n.EventKind)...)
			b = append(b, " bytes="...)
			b = strconv.AppendInt(b, n.Bytes, 10)
			b = append(b, " ev="...)
			b = strconv.AppendInt(b, n.Event.Index, 10)
			if n.Event.Completion >= 0 {
				b = append(b, '#')
				b = strconv.AppendInt(b, int64(n.Event.Completion), 10)
			}
		case KindCollective:
			b = append(b, " gid="...)
			b = strconv.AppendUint(b, n.GID, 10)
			b = append(b, " procs="...)
			b = strconv.AppendInt(b, int64(n.Procs), 10)
			b = append(b, " parts="...)
			b = strconv.AppendInt(b, int64(n.Participants), 10)
			b = append(b, " bytes="...)
			b = strconv.AppendInt(b, n.Bytes, 10)
			if n.Nonblocking {
				b = append(b, " nonblocking"...)
			}
			b = append(b, " members="...)
			for i := range n.Procs {
				if i > 0 {
					b = append(b, ',')
				}
				m := int64(i) // MPI_COMM_WORLD's members are not listed
				if n.Members != nil {
					m = int64(n.Members[i])
				}
				b = strconv.AppendInt(b, m, 10)
				if len(b) > 4096 {
					bw.Write(b)
					b = b[:0]
				}
			}
		}
		b = append(b, '\n')
		bw.Write(b)
	}
	for e := range g.Edges {
		b = b[:0]
		b = append(b, "edge "...)
		b = strconv.AppendUint(b, uint64(e.From), 10)
		b = append(b, " -> "...)
		b = strconv.AppendUint(b, uint64(e.To), 10)
		b = append(b, ' ')
		b = append(b, e.Kind.String()...)
		b = append(b, " rank="...)
		b = strconv.AppendInt(b, int64(e.Rank), 10)
		if e.Kind == Message {
			b = append(b, " bytes="...)
			b = strconv.AppendInt(b, e.Bytes, 10)
		} else {
			b = append(b, " w="...)
			b = strconv.AppendInt(b, e.Weight, 10)
		}
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func kindName(k spec.Kind) string {
	if k < spec.NumKinds && spec.Kinds[k].Name != "" {
		return spec.Kinds[k].Name
	}
	return "kind" + strconv.Itoa(int(k))
}
