package tracefmt

import (
	"fmt"
	"math"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// extremes are the values every field is tried with.
var (
	uExtremes = []int64{0, 1, 127, 128, math.MaxInt64, -1 /* MaxUint64 */, math.MinInt64 /* 1<<63 */}
	sExtremes = []int64{0, 1, -1, spec.ProcNull, spec.RootNone, spec.RootSelf, spec.Undefined, 63, -64, 64, -65,
		math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
)

// everyKindStream returns events of every kind, each field taking each
// extreme value in turn, with empty, small and 100k-element lists.
func everyKindStream() *stream {
	s := newStream()
	for k := spec.Kind(1); k < spec.NumKinds; k++ {
		ki := &kindTab[k]
		if !ki.ok {
			continue
		}
		for fi, f := range ki.fields {
			vals := uExtremes
			if ki.codes[fi]&signedBit != 0 {
				vals = sExtremes
			}
			for _, v := range vals {
				ev := call(k, int(v&1), 10, 5)
				ev.F[f] = v
				s.add(ev)
			}
		}
		if ki.list == spec.NoList {
			continue
		}
		for _, n := range []int{0, 1, 3, 100_000} {
			ev := call(k, 2, 7, 3)
			switch ki.list {
			case spec.ListRanks:
				for i := 0; i < n; i++ {
					r := []int64{0, math.MaxInt64, math.MinInt64, -1, int64(i), spec.Undefined}[i%6]
					ev.Ranks = append(ev.Ranks, r)
				}
			case spec.ListReqs:
				for i := 0; i < n; i++ {
					ev.Reqs = append(ev.Reqs, []uint64{0, math.MaxUint64, uint64(i), 1 << 63}[i%4])
				}
			case spec.ListValues:
				for i := 0; i < n; i++ {
					ev.Values = append(ev.Values, []uint64{math.MaxUint64, 0, uint64(i) * 977, 1 << 40}[i%4])
				}
			case spec.ListCompletions:
				for i := 0; i < n; i++ {
					ev.Completions = append(ev.Completions, Completion{
						Req: uint64(i) * 0x9e3779b97f4a7c15, Src: []int64{math.MinInt64, -1, math.MaxInt64, int64(i)}[i%4],
						Tag: []int64{spec.AnyTag, math.MaxInt64, math.MinInt64}[i%3], Bytes: math.MaxUint64 - uint64(i), Flags: uint64(i % 8)})
				}
			}
			s.add(ev)
		}
	}
	// Durations that wrap (above MaxInt64) and negative gaps.
	ev := call(spec.Send, 0, -1000, 0)
	ev.F[spec.Dur] = -5
	s.add(ev)
	s.add(call(spec.Recv, 0, math.MinInt64, 1))
	return s
}

func TestRoundTripEveryKind(t *testing.T) {
	want := everyKindStream().evs
	// A discontinuity (Start not previous end + gap), as after a lost block.
	jump := call(spec.Call, 0, 5, 5)
	jump.Start, jump.End = 123456789, 123456794
	want = append(want, jump)
	after := call(spec.Call, 0, 1, 1)
	after.Start, after.End = jump.End+1, jump.End+2
	want = append(want, after)

	for _, opts := range []*WriterOptions{
		nil,
		{Compression: NoCompression},
		{BlockSize: 64},
		{Compression: NoCompression, BlockSize: 1},
	} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			data := writeFile(t, 3, 8, want, opts, nil)
			r, got := readEvents(t, data)
			if d := r.Diagnostics(); d.Len() != 0 {
				t.Fatalf("diagnostics on a clean file:\n%s", diagStrings(d))
			}
			// Per thread, the events must come back identical and in order.
			perThread := func(evs []Event) map[int][]Event {
				m := map[int][]Event{}
				for _, e := range evs {
					m[e.Thread] = append(m[e.Thread], e)
				}
				return m
			}
			wm, gm := perThread(want), perThread(got)
			if len(got) != len(want) {
				t.Fatalf("got %d events, want %d", len(got), len(want))
			}
			for th, ws := range wm {
				gs := gm[th]
				if len(gs) != len(ws) {
					t.Fatalf("thread %d: got %d events, want %d", th, len(gs), len(ws))
				}
				for i := range ws {
					if !gs[i].Equal(&ws[i]) {
						t.Fatalf("thread %d event %d:\n got %+v\nwant %+v", th, i, summary(&gs[i]), summary(&ws[i]))
					}
				}
			}
			h := r.Header()
			if h.Rank != 3 || h.Size != 8 || h.RunID != "run-1" || h.Hostname != "node7" || h.Version != spec.Current {
				t.Errorf("header = %+v", h)
			}
			if r.Strings().Name(3) != "MPI_Waitall" || r.Strings().Len() != 3 {
				t.Errorf("strings: %v", r.Strings().IDs())
			}
			if e := r.End(); e == nil || e.Events != uint64(len(want)) || e.Reason != spec.EndFinalize {
				t.Errorf("end = %+v", e)
			}
		})
	}
}

// summary shortens an event with a long list for failure messages.
func summary(e *Event) string {
	return fmt.Sprintf("%s thr=%d start=%d end=%d F=%v lists=%d/%d/%d", e.Name(), e.Thread, e.Start, e.End, e.F,
		len(e.Ranks), len(e.Reqs), len(e.Completions))
}

func TestMergeOrder(t *testing.T) {
	// Three threads with interleaved times, ties between threads, and
	// blocks small enough that each thread has many.
	s := newStream()
	for i := 0; i < 300; i++ {
		th := i % 3
		gap := int64(1 + (i*7)%5)
		if i%10 == 0 {
			gap = 0
		}
		s.add(call(spec.Send, th, gap, int64(1+i%4)))
	}
	// Thread 5 starts late but its events must still merge in.
	for i := 0; i < 20; i++ {
		s.add(call(spec.Call, 5, 3, 2))
	}
	// Ties: two threads' events at identical times.
	s.add(call(spec.Call, 7, 100, 0))
	s.add(call(spec.Call, 6, 100, 0))
	for _, bs := range []int{1, 40, 1 << 20} {
		data := writeFile(t, 0, 1, s.evs, &WriterOptions{BlockSize: bs}, nil)
		r, got := readEvents(t, data)
		if len(got) != len(s.evs) {
			t.Fatalf("block size %d: got %d events, want %d", bs, len(got), len(s.evs))
		}
		if r.Diagnostics().Len() != 0 {
			t.Fatal(diagStrings(r.Diagnostics()))
		}
		for i := 1; i < len(got); i++ {
			a, b := got[i-1], got[i]
			if a.Start > b.Start || (a.Start == b.Start && a.Thread > b.Thread) {
				t.Fatalf("block size %d: event %d (t=%d thr=%d) after (t=%d thr=%d)", bs, i, b.Start, b.Thread, a.Start, a.Thread)
			}
		}
		// Per-thread order is file order.
		next := map[int]int{}
		for _, g := range got {
			idx := next[g.Thread]
			n := 0
			for _, w := range s.evs {
				if w.Thread != g.Thread {
					continue
				}
				if n == idx {
					if !w.Equal(&g) {
						t.Fatalf("thread %d event %d differs", g.Thread, idx)
					}
					break
				}
				n++
			}
			next[g.Thread]++
		}
		if th := r.Threads(); len(th) != 6 {
			t.Errorf("threads = %v", th)
		}
	}
}

func TestWriterErrors(t *testing.T) {
	var buf []byte
	h := NewHeader(0, 1, "r")
	w, err := NewWriter(sliceWriter{&buf}, &h, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := call(spec.Send, 0, 1, 1)
	ev.Kind = spec.NumKinds
	if err := w.WriteEvent(&ev); err == nil {
		t.Error("unknown kind written")
	}
	ev = call(spec.Send, -1, 1, 1)
	if err := w.WriteEvent(&ev); err == nil {
		t.Error("negative thread written")
	}
	if err := w.DefineString(0, "x"); err == nil {
		t.Error("string id 0 accepted")
	}
	w.DefineString(1, "x")
	if err := w.DefineString(1, "y"); err == nil {
		t.Error("string id defined twice")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteEvent(&Event{Kind: spec.Call}); err == nil {
		t.Error("write after close")
	}
}

type sliceWriter struct{ b *[]byte }

func (w sliceWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }
