package tracefmt

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// stream builds a sequence of events with consistent times: each event
// starts at its thread's previous end plus its gap.
type stream struct {
	evs     []Event
	prevEnd map[int]int64
}

func newStream() *stream { return &stream{prevEnd: map[int]int64{}} }

// add appends ev, computing Start and End from the thread's previous end.
func (s *stream) add(ev Event) *Event {
	ev.Start = s.prevEnd[ev.Thread] + ev.F[spec.Gap]
	ev.End = ev.Start
	if kindTab[ev.Kind].hasDur {
		ev.End += ev.F[spec.Dur]
	}
	s.prevEnd[ev.Thread] = ev.End
	s.evs = append(s.evs, ev)
	return &s.evs[len(s.evs)-1]
}

// call returns an event of kind k with fn 1 and the given gap and duration.
func call(k spec.Kind, thread int, gap, dur int64) Event {
	var ev Event
	ev.Kind = k
	ev.Thread = thread
	ev.F[spec.Gap] = gap
	if kindTab[k].hasDur {
		ev.F[spec.Dur] = dur
	}
	if spec.Kinds[k].IsCall {
		ev.F[spec.Fn] = 1
	}
	return ev
}

// writeFile writes a rank file of the given events.
func writeFile(t testing.TB, rank, size int, evs []Event, opts *WriterOptions, end *End) []byte {
	t.Helper()
	var buf bytes.Buffer
	h := NewHeader(rank, size, "run-1")
	h.Set(KeyHostname, "node7")
	w, err := NewWriter(&buf, &h, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []string{"MPI_Send", "MPI_Recv", "MPI_Waitall"} {
		if err := w.DefineString(uint64(i+1), n); err != nil {
			t.Fatal(err)
		}
	}
	for i := range evs {
		if err := w.WriteEvent(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if end == nil {
		err = w.Close()
	} else if end.Reason == 0 && end.Events == 0 {
		err = w.CloseWithEnd(nil)
	} else {
		err = w.CloseWithEnd(end)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// noEnd asks writeFile for a file without an end record.
var noEnd = &End{}

// readEvents opens data and reads every event.
func readEvents(t testing.TB, data []byte) (*RankReader, []Event) {
	t.Helper()
	r, err := NewRankReader(bytes.NewReader(data), "rank-00003.mpit")
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	for r.Next() {
		evs = append(evs, r.Event().Clone())
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return r, evs
}

// testFrame is one block frame found in a well-formed file.
type testFrame struct {
	off int64
	f   frame
}

func (tf testFrame) end() int64 { return tf.off + spec.BlockHeaderSize + int64(tf.f.stored) }

func scanFrames(t testing.TB, data []byte) []testFrame {
	t.Helper()
	var fs []testFrame
	for pos := int64(fileHeaderSize); pos < int64(len(data)); {
		f, ok := parseFrame(data[pos:])
		if !ok {
			t.Fatalf("no frame at offset %d", pos)
		}
		fs = append(fs, testFrame{pos, f})
		pos += spec.BlockHeaderSize + int64(f.stored)
	}
	return fs
}

func framesOfType(fs []testFrame, typ uint8) []testFrame {
	var out []testFrame
	for _, f := range fs {
		if f.f.typ == typ {
			out = append(out, f)
		}
	}
	return out
}

// findDiag returns the first diagnostic with the code, failing if none.
func findDiag(t testing.TB, d *Diagnostics, code string) Diagnostic {
	t.Helper()
	for _, x := range d.All() {
		if x.Code == code {
			return x
		}
	}
	var all []string
	for _, x := range d.All() {
		all = append(all, x.String())
	}
	t.Fatalf("no %s diagnostic; have:\n%s", code, strings.Join(all, "\n"))
	return Diagnostic{}
}

func diagStrings(d *Diagnostics) string {
	var all []string
	for _, x := range d.All() {
		all = append(all, x.String())
	}
	return strings.Join(all, "\n")
}

// rawFile assembles a file from the magic, a version and blocks.
func rawFile(version uint16, blocks ...[]byte) []byte {
	b := append([]byte(spec.Magic), 0, 0)
	binary.LittleEndian.PutUint16(b[len(spec.Magic):], version)
	for _, bl := range blocks {
		b = append(b, bl...)
	}
	return b
}

// rawBlock builds an uncompressed block.
func rawBlock(typ uint8, payload []byte) []byte {
	return AppendBlock(nil, typ, spec.CodecNone, len(payload), payload)
}

func headerPayload(kv ...string) []byte {
	b := binary.AppendUvarint(nil, uint64(len(kv)/2))
	for _, s := range kv {
		b = appendString(b, s)
	}
	return b
}

func uvarints(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}
