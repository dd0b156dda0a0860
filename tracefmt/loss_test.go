package tracefmt

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// readLosses reads data and returns, per event index, the loss reported
// before it, and the loss reported after the last event.
func readLosses(t *testing.T, data []byte) (map[int]Loss, Loss, []Event) {
	t.Helper()
	r, err := NewRankReader(bytes.NewReader(data), "rank-00003.mpit")
	if err != nil {
		t.Fatal(err)
	}
	at := map[int]Loss{}
	var evs []Event
	for r.Next() {
		if l := r.Lost(); l.Events > 0 {
			at[len(evs)] = l
		}
		evs = append(evs, r.Event().Clone())
	}
	tail := r.Lost()
	if r.Next() || r.Lost() != tail {
		t.Fatal("Next after the end changed the trailing loss")
	}
	return at, tail, evs
}

// TestLossMiddleBlock: a damaged block in the middle of a thread's stream
// is reported, with its events' count and the first block read after it,
// before the first event after it.
func TestLossMiddleBlock(t *testing.T) {
	data, _ := manyBlocks(t, WriterOptions{}, nil)
	fs := scanFrames(t, data)
	ev := framesOfType(fs, spec.BlockEvents)
	mid := len(ev) / 2
	before, count := blockSpan(t, data, mid)
	flipped := bytes.Clone(data)
	flipped[ev[mid].off+spec.BlockHeaderSize+int64(ev[mid].f.stored)/2] ^= 0x10
	next := -1
	for i, f := range fs {
		if f.off == ev[mid+1].off {
			next = i
		}
	}
	at, tail, _ := readLosses(t, flipped)
	want := map[int]Loss{before: {Events: uint64(count), Thread: 0, Block: next}}
	if len(at) != 1 || at[before] != want[before] || tail.Events != 0 {
		t.Fatalf("losses %v, after the end %v; want %v and none", at, tail, want)
	}
	// The text form's RankData carries it, and writes it back as lost
	// blocks that a reader reports at the same place.
	r, err := NewRankReader(bytes.NewReader(flipped), "x")
	if err != nil {
		t.Fatal(err)
	}
	d, err := ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Lost) != 1 || d.Lost[0].Event != before || d.Lost[0].Events != uint64(count) {
		t.Fatalf("RankData.Lost %v", d.Lost)
	}
	var bin bytes.Buffer
	if err := d.WriteBinary(&bin, &WriterOptions{BlockSize: 80}); err != nil {
		t.Fatal(err)
	}
	at2, _, _ := readLosses(t, bin.Bytes())
	if l := at2[before]; len(at2) != 1 || l.Events != uint64(count) || l.Thread != 0 {
		t.Fatalf("rewritten: losses %v", at2)
	}
}

// TestLossAtEnds: blocks lost at the start of the stream are reported
// before the first event; the last block, which no later block's seq
// accounts for, after the last event (from the end record's count).
func TestLossAtEnds(t *testing.T) {
	data, _ := manyBlocks(t, WriterOptions{}, nil)
	ev := framesOfType(scanFrames(t, data), spec.BlockEvents)
	_, first := blockSpan(t, data, 0)
	_, last := blockSpan(t, data, len(ev)-1)
	flipped := bytes.Clone(data)
	for _, i := range []int{0, len(ev) - 1} {
		flipped[ev[i].off+spec.BlockHeaderSize+1] ^= 0x01
	}
	at, tail, evs := readLosses(t, flipped)
	if len(at) != 1 || at[0].Events != uint64(first) || tail.Events != uint64(last) || len(evs) != 200-first-last {
		t.Fatalf("losses %v, after the end %v, %d events; want %d before the first, %d after the last", at, tail, len(evs), first, last)
	}
}

// TestLossThreads: a loss of one thread is reported with the first event
// delivered after that thread's last event before it, whichever thread's;
// the thread's own first event after it comes later.
func TestLossThreads(t *testing.T) {
	s := newStream()
	for i := 0; i < 60; i++ {
		s.add(call(spec.Send, 0, 10, 5))
		s.add(call(spec.Send, 1, 10, 5))
	}
	data := writeFile(t, 3, 4, s.evs, &WriterOptions{BlockSize: 40, Compression: NoCompression}, nil)
	var th1 []testFrame
	for _, f := range framesOfType(scanFrames(t, data), spec.BlockEvents) {
		pr := &payloadReader{b: data[f.off+spec.BlockHeaderSize:]}
		if pr.uvarint("thread") == 1 {
			th1 = append(th1, f)
		}
	}
	if len(th1) < 3 {
		t.Fatalf("thread 1 has %d blocks", len(th1))
	}
	flipped := bytes.Clone(data)
	flipped[th1[1].off+spec.BlockHeaderSize+2] ^= 0x04
	at, _, evs := readLosses(t, flipped)
	if len(at) != 1 {
		t.Fatalf("losses %v", at)
	}
	for i, l := range at {
		if l.Thread != 1 || i == 0 || evs[i-1].Thread != 1 {
			t.Fatalf("loss %v before event %d (thread %d), after event of thread %d", l, i, evs[i].Thread, evs[i-1].Thread)
		}
	}
}

// TestLostText: hand-written text says where events were lost.
func TestLostText(t *testing.T) {
	ranks, err := ParseText(strings.NewReader(`rank 0
t=0 Call fn=MPI_Init dur=10
lost thr=0 events=4 block=7
t=100 Call fn=MPI_Barrier dur=10
lost events=2
`))
	if err != nil {
		t.Fatal(err)
	}
	d := ranks[0]
	want := []LossAt{{1, Loss{Events: 4, Thread: 0, Block: 7}}, {2, Loss{Events: 2, Block: -1}}}
	if len(d.Lost) != 2 || d.Lost[0] != want[0] || d.Lost[1] != want[1] {
		t.Fatalf("Lost %v, want %v", d.Lost, want)
	}
	s := d.Source()
	var got []Loss
	for s.Next() {
		got = append(got, SourceLoss(s))
	}
	got = append(got, SourceLoss(s))
	if got[0].Events != 0 || got[1] != want[0].Loss || got[2] != want[1].Loss {
		t.Fatalf("source losses %v", got)
	}
	for _, bad := range []string{"lost", "lost events=0", "lost events=x", "lost thr=0 seq=3 events=1"} {
		if _, err := ParseText(strings.NewReader("rank 0\n" + bad + "\n")); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
