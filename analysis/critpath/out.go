package critpath

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"

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
	bw := bufio.NewWriterSize(w, 64<<10)
	n := p.NumVertices()
	for i := 0; i < n; i++ {
		_, rank, name, _ := p.g.Describe(p.p.Node(i))
		b := append(bw.AvailableBuffer(), name...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(rank), 10)
		b = append(b, '\n')
		if i+1 < n {
			if e := p.p.Edge(i); e.Kind == taskgraph.Message {
				b = strconv.AppendInt(b, e.Bytes, 10)
			} else {
				b = strconv.AppendInt(b, unit.Round(float64(e.Weight)), 10)
			}
			b = append(b, '\n')
		}
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}
