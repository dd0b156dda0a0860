package critpath

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// Unit is a time unit of the critPath.out computation edges: its length
// in nanoseconds.
type Unit int64

const (
	Nanosecond  Unit = 1
	Microsecond Unit = 1000
	Millisecond Unit = 1000_000
	Second      Unit = 1000_000_000
)

// ParseUnit parses "ns", "us" (or "µs"), "ms" or "s".
func ParseUnit(s string) (Unit, error) {
	switch s {
	case "ns":
		return Nanosecond, nil
	case "us", "µs":
		return Microsecond, nil
	case "ms":
		return Millisecond, nil
	case "s":
		return Second, nil
	}
	return 0, fmt.Errorf("unknown time unit %q (want ns, us, ms or s)", s)
}

func (u Unit) String() string {
	switch u {
	case Nanosecond:
		return "ns"
	case Microsecond:
		return "us"
	case Millisecond:
		return "ms"
	case Second:
		return "s"
	}
	return strconv.FormatInt(int64(u), 10) + "ns"
}

// Round converts ns to the unit, rounded to the nearest integer (halves
// away from zero).
func (u Unit) Round(ns float64) int64 {
	if u <= 0 {
		u = Nanosecond
	}
	return int64(math.Round(ns / float64(u)))
}

// WriteCritPathOut writes p in the critPath.out format (SPEC §5): one item
// per line, alternating vertex and edge, from "MPI_Init -1" to
// "MPI_Finalize -1". A vertex is its MPI function name, one space and its
// rank (-1 for MPI_Init, MPI_Finalize and every collective). A
// computation edge (every kind but Message: the computation between two
// calls, and a collective's fan-in and fan-out) is its measured time
// rounded to an integer in unit; a message edge is the message's bytes.
// Lines end with "\n", the last one too.
func WriteCritPathOut(w io.Writer, p *Path, unit Unit) error {
	return writeCritPathOut(w, p, unit, nil)
}

// WriteCritPathOutSummary writes critPath.out as WriteCritPathOut does and
// returns what Summarize(g, p, top) returns for p's graph g, in one pass
// over the path. The summary is nil when writing fails.
func WriteCritPathOutSummary(w io.Writer, p *Path, unit Unit, top int) (*Summary, error) {
	sz := newSummarizer(p.g, p, top)
	if err := writeCritPathOut(w, p, unit, sz); err != nil {
		return nil, err
	}
	return sz.finish(), nil
}

// outFlush is when writeCritPathOut hands its buffer to the writer.
const outFlush = 64 << 10

// writeCritPathOut writes critPath.out, and feeds each vertex and hop to
// sz when it is not nil. A vertex's line is formatted once per function
// name and rank, and kept while the path stays on that rank.
func writeCritPathOut(w io.Writer, p *Path, unit Unit, sz *summarizer) error {
	g := p.g
	type line struct {
		rank int
		b    []byte
	}
	lines := make([]line, len(g.Names())+2) // by Describe's nameIdx
	buf := make([]byte, 0, outFlush+256)
	// The hop into vertex i (taskgraph.Path.EdgeAt(i-1)).
	var inKind taskgraph.EdgeKind
	var inRank int
	var inWeight, inBytes int64
	n := p.NumVertices()
	for i := 0; i < n; i++ {
		kind, rank, name, idx := g.Describe(p.p.Node(i))
		if idx >= 0 && idx < len(lines) {
			l := &lines[idx]
			if l.b == nil || l.rank != rank {
				l.rank, l.b = rank, vertexLine(l.b[:0], name, rank)
			}
			buf = append(buf, l.b...)
		} else {
			buf = vertexLine(buf, name, rank)
		}
		if sz != nil {
			if i == 0 {
				sz.vertex(kind, rank, name, idx)
			} else {
				sz.step(i, kind, rank, name, idx, inKind, inRank, inWeight, inBytes)
			}
		}
		if i+1 < n {
			if inKind, inRank, inWeight, inBytes = p.p.EdgeAt(i); inKind == taskgraph.Message {
				buf = strconv.AppendInt(buf, inBytes, 10)
			} else {
				buf = strconv.AppendInt(buf, unit.roundInt(inWeight), 10)
			}
			buf = append(buf, '\n')
		}
		var err error
		if buf, err = flushFull(w, buf); err != nil {
			return err
		}
	}
	_, err := w.Write(buf)
	return err
}

// flushFull writes buf to w once it holds outFlush bytes, and returns it
// emptied then.
func flushFull(w io.Writer, buf []byte) ([]byte, error) {
	if len(buf) < outFlush {
		return buf, nil
	}
	if _, err := w.Write(buf); err != nil {
		return nil, err
	}
	return buf[:0], nil
}

// WriteCritPathOutSteps writes critPath.out, as WriteCritPathOut, of a
// path the streaming replay found: steps calls its function for each
// step from MPI_Init to MPI_Finalize (reconstruct.ReplayResult.Steps).
func WriteCritPathOutSteps(w io.Writer, steps func(func(*reconstruct.ReplayStep) error) error, unit Unit) error {
	buf := make([]byte, 0, outFlush+256)
	first := true
	err := steps(func(st *reconstruct.ReplayStep) error {
		if !first {
			if st.In.Kind == taskgraph.Message {
				buf = strconv.AppendInt(buf, st.In.Bytes, 10)
			} else {
				buf = strconv.AppendInt(buf, unit.roundInt(st.In.Weight), 10)
			}
			buf = append(buf, '\n')
		}
		first = false
		buf = vertexLine(buf, st.Name, st.Rank)
		var err error
		buf, err = flushFull(w, buf)
		return err
	})
	if err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}

// ModelWeights weighs the streaming replay with model m as Compute weighs
// the graph: a message by the model at its bytes, a collective by the
// model at its name, bytes and members (negative or NaN times count as 0;
// a nil model weighs everything 0).
func ModelWeights(m Model) reconstruct.ReplayWeights {
	if m == nil {
		m = zeroModel{}
	}
	return &modelWeights{w: weigher{m: m}}
}

type modelWeights struct{ w weigher }

func (mw *modelWeights) Message(bytes int64) float64 { return mw.w.Message(bytes) }

func (mw *modelWeights) Collective(c taskgraph.CollectiveInfo) float64 {
	ns, _ := mw.w.m.CollectiveOrFallback(c.Name, c.Bytes, c.Procs)
	return finite(ns)
}

// vertexLine appends a vertex's critPath.out line to b.
func vertexLine(b []byte, name string, rank int) []byte {
	b = append(b, name...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(rank), 10)
	return append(b, '\n')
}

// roundInt is Round(float64(ns)), in integers where that is exact: for
// 0 <= ns < 2^50, float64(ns)/u is within ns/u * 2^-53 < 1/(2u) of the
// quotient, so it lies on the same side of every half-integer other than
// an exact one (which it is, and rounds away from zero like the integer
// formula).
func (u Unit) roundInt(ns int64) int64 {
	if u > 0 && ns >= 0 && ns < 1<<50 {
		return (ns + int64(u)/2) / int64(u)
	}
	return u.Round(float64(ns))
}
