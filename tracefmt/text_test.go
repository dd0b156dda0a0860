package tracefmt

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// textOf renders a rank file as text.
func textOf(t testing.TB, data []byte) string {
	t.Helper()
	r, err := NewRankReader(bytes.NewReader(data), "x")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// textRoundTrip checks binary → text → binary → text: identical text and
// identical events.
func textRoundTrip(t testing.TB, data []byte, opts *WriterOptions) string {
	t.Helper()
	t1 := textOf(t, data)
	ranks, err := ParseText(strings.NewReader(t1))
	if err != nil {
		t.Fatalf("parsing our own text: %v\n%s", err, head(t1))
	}
	if len(ranks) != 1 {
		t.Fatalf("%d rank sections", len(ranks))
	}
	var buf bytes.Buffer
	if err := ranks[0].WriteBinary(&buf, opts); err != nil {
		t.Fatal(err)
	}
	t2 := textOf(t, buf.Bytes())
	if t1 != t2 {
		t.Fatalf("text differs after a round trip:\n%s", firstDiff(t1, t2))
	}
	_, e1 := readEvents(t, data)
	_, e2 := readEvents(t, buf.Bytes())
	eventsEqual(t.(*testing.T), e2, e1)
	return t1
}

func head(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return "line " + strconv.Itoa(i+1) + ":\n- " + head(la[i]) + "\n+ " + head(lb[i])
		}
	}
	return "lengths differ: " + strconv.Itoa(len(la)) + " vs " + strconv.Itoa(len(lb)) + " lines"
}

func TestTextRoundTrip(t *testing.T) {
	s := everyKindStream()
	evs := s.evs
	jump := call(spec.Call, 1, 5, 5)
	jump.Start, jump.End = 999, 1004
	evs = append(evs, jump)
	data := writeFile(t, 3, 8, evs, &WriterOptions{BlockSize: 100}, nil)
	textRoundTrip(t, data, &WriterOptions{BlockSize: 1 << 16})
	textRoundTrip(t, data, &WriterOptions{Compression: NoCompression})
}

func TestTextRoundTripOddHeaderAndStrings(t *testing.T) {
	var buf bytes.Buffer
	h := NewHeader(1, 2, "run \"x\"\n")
	h.Meta = append(h.Meta, KeyValue{"key with spaces=", "v"}, KeyValue{"", ""}, KeyValue{"bin", "\xff\x00é"},
		KeyValue{"run_id", "second run_id entry"}, KeyValue{"mpi_library", "Open MPI v4.1.4, package: Debian"})
	w, err := NewWriter(&buf, &h, &WriterOptions{Compression: NoCompression})
	if err != nil {
		t.Fatal(err)
	}
	// Duplicate names, names that are not tokens, a name looking like an id.
	for id, s := range map[uint64]string{1: "MPI_Send", 2: "MPI_Send", 3: "has space", 4: "#7", 5: "12", math.MaxUint64: "max", 9: ""} {
		if err := w.DefineString(id, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, fn := range []int64{1, 2, 3, 4, 5, -1, 9, 0, 77} {
		ev := call(spec.Call, 0, 1, 1)
		ev.F[spec.Fn] = fn
		ev.Start = 100 * fn
		if err := w.WriteEvent(&ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.CloseWithEnd(&End{Reason: 42, Signal: 9, Events: 1, Blocks: 2, Time: -1, Dropped: math.MaxUint64}); err != nil {
		t.Fatal(err)
	}
	txt := textRoundTrip(t, buf.Bytes(), nil)
	for _, want := range []string{
		`meta run_id="run \"x\"\n"`, `meta "key with spaces="="v"`, `meta ""=""`, `meta bin="\xff\x00é"`,
		`fn=#1 `, `fn=has`, `fn="has space"`, `fn="#7"`, `fn=12`, `fn=max`, `fn=#9`, `fn=#77`,
		"end reason=42 signal=9 events=1 blocks=2 time=18446744073709551615 dropped=18446744073709551615",
	} {
		if want == "fn=has" {
			if strings.Contains(txt, want) {
				t.Errorf("non-token name shown bare:\n%s", txt)
			}
			continue
		}
		if !strings.Contains(txt, want) {
			t.Errorf("text lacks %q:\n%s", want, txt)
		}
	}
}

func TestTextFormat(t *testing.T) {
	s := newStream()
	ev := call(spec.Send, 0, 1520, 312)
	ev.F[spec.Peer], ev.F[spec.Tag], ev.F[spec.Comm], ev.F[spec.Bytes] = 1, 7, 1, 4096
	s.add(ev)
	ev = call(spec.Complete, 0, 100, 40)
	ev.F[spec.Fn] = 3
	ev.F[spec.Flag] = 1
	ev.Completions = []Completion{{Req: 3, Src: 1, Tag: 7, Bytes: 4096}, {Req: 4, Src: -5, Tag: -1, Flags: 2}}
	s.add(ev)
	ev = call(spec.CommNew, 1, 5, 5)
	ev.F[spec.Fn] = 2
	ev.F[spec.Parent], ev.F[spec.Comm], ev.F[spec.GID] = 1, 3, 17
	ev.Ranks = []int64{0, 2, 4}
	s.add(ev)
	ev = call(spec.Start, 1, 5, 5)
	ev.Reqs = []uint64{}
	s.add(ev)
	s.add(call(spec.ClockSync, 0, 3, 0))
	data := writeFile(t, 0, 5, s.evs, nil, nil)
	got := textOf(t, data)
	want := `rank 0
meta rank="0"
meta size="5"
meta run_id="run-1"
meta hostname="node7"
string 1 "MPI_Send"
string 2 "MPI_Recv"
string 3 "MPI_Waitall"
t=5 thr=1 CommNew fn=MPI_Recv gap=5 dur=5 parent=1 comm=3 gid=17 remote=0 ranks=[0,2,4]
t=15 thr=1 Start fn=MPI_Send dur=5 reqs=[]
t=1520 thr=0 Send fn=MPI_Send gap=1520 dur=312 peer=1 tag=7 comm=1 bytes=4096 req=0
t=1932 thr=0 Complete fn=MPI_Waitall dur=40 flag=1 completions=[{req=3 src=1 stag=7 sbytes=4096 flags=0},{req=4 src=-5 stag=-1 sbytes=0 flags=2}]
t=1975 thr=0 ClockSync phase=0 offset=0 err=0
end reason=finalize signal=0 events=5 blocks=2 time=1975 dropped=0
`
	if got != want {
		t.Errorf("text:\n%s\nwant:\n%s\n%s", got, want, firstDiff(got, want))
	}
}

func TestParseTextHandWritten(t *testing.T) {
	in := `# two ranks, written by hand
rank 0
meta run_id="hand"
Send fn=MPI_Send peer=1 tag=7 bytes=8 comm=1
t=100 Recv fn=MPI_Recv dur=10 peer=1 tag=7 comm=1 src=1 stag=7

rank 1
meta size="2"
string 4 "MPI_Recv"
t=50 thr=2 Recv fn=MPI_Recv peer=0 tag=7 comm=1 src=0 stag=7 sbytes=8
Complete fn=MPI_Waitall completions=[ {req=1 src=0 stag=1 sbytes=2 flags=0} , {req=2} ]
end reason=signal signal=11
`
	ranks, err := ParseText(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(ranks) != 2 {
		t.Fatalf("%d ranks", len(ranks))
	}
	r0, r1 := ranks[0], ranks[1]
	if r0.Header.Rank != 0 || r0.Header.Size != 2 || r0.Header.RunID != "hand" || r1.Header.Size != 2 {
		t.Errorf("headers %+v %+v", r0.Header, r1.Header)
	}
	if len(r0.Events) != 2 || r0.Events[0].Start != 0 || r0.Events[0].End != 0 || r0.Events[1].Start != 100 ||
		r0.Events[1].Gap() != 100 || r0.Events[1].End != 110 || r0.Events[0].Bytes() != 8 {
		t.Errorf("rank 0 events %+v", r0.Events)
	}
	if r0.Strings.Name(r0.Events[0].Fn()) != "MPI_Send" || r0.Strings.Name(r0.Events[1].Fn()) != "MPI_Recv" {
		t.Errorf("fn names not auto-defined: %v", r0.Strings.IDs())
	}
	if r0.End != nil {
		t.Error("rank 0 has an end")
	}
	e1 := r1.Events
	if len(e1) != 2 || e1[0].Thread != 2 || e1[0].Fn() != 4 || e1[1].Thread != 0 || e1[1].Start != 0 || len(e1[1].Completions) != 2 ||
		e1[1].Completions[1] != (Completion{Req: 2}) || e1[1].Completions[0].Bytes != 2 {
		t.Errorf("rank 1 events %+v", e1)
	}
	if r1.End == nil || r1.End.Reason != spec.EndSignal || r1.End.Signal != 11 {
		t.Errorf("end %+v", r1.End)
	}
	// It converts to binary and back.
	for _, rd := range ranks {
		var buf bytes.Buffer
		if err := rd.WriteBinary(&buf, nil); err != nil {
			t.Fatal(err)
		}
		textRoundTrip(t, buf.Bytes(), nil)
	}
}

func TestParseTextErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Send fn=MPI_Send", `text line 1: expected "rank N"`},
		{"rank x", "not a rank"},
		{"rank 0\nBogus x=1", `unknown event kind "Bogus"`},
		{"rank 0\nSend nope=1", `Send has no field "nope"`},
		{"rank 0\nSend peer=1 peer=2", "peer given twice"},
		{"rank 0\nSend bytes=-1", `Send.bytes: "-1": not an unsigned integer`},
		{"rank 0\nSend tag=x", "not a signed integer"},
		{"rank 0\nSend Recv", "two kind names"},
		{"rank 0\nt=1", "event without a kind name"},
		{"rank 0\nStart reqs=[1,x]", "not a request id"},
		{"rank 0\nStart reqs=[1", "unterminated ["},
		{"rank 0\nComplete completions=[{req=1 bogus=2}]", "not a completion field"},
		{"rank 0\nComplete completions=[{req=1}{req=2}]", "expected , between completions"},
		{"rank 0\nCommNew ranks=5", "expected [...]"},
		{"rank 0\nCall thr=-1", "not a thread index"},
		{"rank 0\nstring 0 \"x\"", "string id 0"},
		{"rank 0\nstring 1 \"x\"\nstring 1 \"y\"", "defined twice"},
		{"rank 0\nstring 1 x", "bad quoted text"},
		{"rank 0\nmeta novalue", "expected key=value"},
		{"rank 0\nmeta rank=\"1\"", "disagrees"},
		{"rank 0\nmeta size=\"x\"", "not a world size"},
		{"rank 0\nend reason=nope", "unknown reason"},
		{"rank 0\nend\nend", "second end record"},
		{"rank 0\nend\nCall", "event after the end record"},
		{"rank 0\nCall fn=has space", "two kind names"},
		{"rank 0\nCall fn=#x", "not a string id"},
	} {
		_, err := ParseText(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseText(%q) = %v, want error containing %q", c.in, err, c.want)
		}
	}
}
