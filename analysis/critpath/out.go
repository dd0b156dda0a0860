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
	return p.StepPath().WriteCritPathOut(w, unit)
}

// WriteCritPathOut writes the path in the critPath.out format, as
// WriteCritPathOut does.
func (sp *StepPath) WriteCritPathOut(w io.Writer, unit Unit) error {
	out := &outWriter{w: w, unit: unit, buf: make([]byte, 0, outFlush+256)}
	if err := sp.Steps(func(st *reconstruct.ReplayStep) error {
		out.visit(st)
		return out.flush(false)
	}); err != nil {
		return err
	}
	return out.flush(true)
}

// WriteCritPathOutSummary writes critPath.out as WriteCritPathOut does and
// returns what Summarize(p, top) returns. The summary is nil when writing
// fails.
func WriteCritPathOutSummary(w io.Writer, p *Path, unit Unit, top int) (*Summary, error) {
	return p.StepPath().WriteCritPathOutSummary(w, unit, top)
}

// WriteCritPathOutSummary writes critPath.out and returns the path's
// summary (Summarize), in one pass over the steps besides the collectives'.
func (sp *StepPath) WriteCritPathOutSummary(w io.Writer, unit Unit, top int) (*Summary, error) {
	sum, _, err := sp.Report(ReportOptions{Out: w, Unit: unit, Top: top})
	return sum, err
}

// outFlush is when critPath.out's writer hands its buffer on.
const outFlush = 64 << 10

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
