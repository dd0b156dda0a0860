package tracefmt

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// readCanonical reads every event of data (spooling to sp when not nil)
// and returns the text of the events, with each event's loss, and the
// diagnostics.
func readCanonical(t testing.TB, data []byte, o ReaderOptions, sp *Spool) string {
	t.Helper()
	r, err := NewRankReaderWith(bytes.NewReader(data), "spool.mpit", o)
	if err != nil {
		return "open: " + err.Error()
	}
	defer r.Close()
	if sp != nil {
		r.SpoolTo(sp)
	}
	var b strings.Builder
	for r.Next() {
		ev := r.Event()
		fmt.Fprintf(&b, "%d %d %d %d %v %v %v %v %v %+v\n", ev.Kind, ev.Thread, ev.Start, ev.End, ev.F, ev.Ranks, ev.Reqs, ev.Completions, ev.Values, r.Lost())
	}
	fmt.Fprintf(&b, "end %+v err %v\n", r.Lost(), r.Err())
	for _, d := range r.Diagnostics().All() {
		fmt.Fprintf(&b, "%s\n", d)
	}
	return b.String()
}

// bigLists is a file of 3 recorder threads whose events blocks are
// 256 KiB, the recorder's default, with MPI_Waitall calls completing up to
// 3000 requests: events far larger than a spooling cursor's window.
func bigLists(t testing.TB, compression Compression, long bool) []byte {
	s := newStream()
	for i := 0; i < 30_000; i++ {
		ev := call(spec.Complete, i%3, int64(10+i%7), int64(20+i%5))
		n := 1 + i%4
		if long && i%500 == 0 {
			n = 3000
		}
		for k := 0; k < n; k++ {
			ev.Completions = append(ev.Completions, Completion{Req: uint64(i*8 + k), Src: int64(k % 5), Tag: 7, Bytes: uint64(64 * k)})
		}
		s.add(ev)
	}
	return writeFile(t, 0, 4, s.evs, &WriterOptions{BlockSize: 256 << 10, Compression: compression}, nil)
}

// TestSpoolSame: a reader spooling its blocks gives the events, losses
// and diagnostics of one that holds them, on valid, damaged and hostile
// files, the stored traces, and events larger than the window.
func TestSpoolSame(t *testing.T) {
	inputs := readerSeeds(t)
	inputs["big-lists"] = bigLists(t, Zstd, true)
	inputs["big-lists-uncompressed"] = bigLists(t, NoCompression, true)
	files, _ := filepath.Glob(filepath.Join("..", "fixtures", "traces", "v*", "*", "rank-*.mpit"))
	if len(files) < 20 {
		t.Fatalf("%d stored rank files", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs[f] = data
	}
	names := make([]string, 0, len(inputs))
	for n := range inputs {
		names = append(names, n)
	}
	sort.Strings(names)
	sp := NewSpool(t.TempDir())
	defer sp.Close()
	// The smallest windows too: events longer than a quarter of one are
	// decoded again from a window that starts at them.
	small := NewSpool(t.TempDir())
	defer small.Close()
	small.SetWindow(1)
	// Windows as large as the blocks: the compressed blocks are held whole
	// in their windows, none spooled.
	wide := NewSpool(t.TempDir())
	defer wide.Close()
	wide.SetWindow(1 << 20)
	// Windows between: a reader's cursor holds some blocks whole and
	// spools others, one after the other.
	var between []*Spool
	for _, w := range []int{512, 1024} {
		sp := NewSpool(t.TempDir())
		defer sp.Close()
		sp.SetWindow(w)
		between = append(between, sp)
	}
	for _, n := range names {
		want := readCanonical(t, inputs[n], ReaderOptions{}, nil)
		if got := readCanonical(t, inputs[n], ReaderOptions{}, sp); got != want {
			t.Errorf("%s: spooled reading differs:\n%s", n, firstDiff(got, want))
		}
		if got := readCanonical(t, inputs[n], ReaderOptions{}, small); got != want {
			t.Errorf("%s: spooled reading with the smallest windows differs:\n%s", n, firstDiff(got, want))
		}
		if got := readCanonical(t, inputs[n], ReaderOptions{}, wide); got != want {
			t.Errorf("%s: spooled reading with windows as large as the blocks differs:\n%s", n, firstDiff(got, want))
		}
		for _, sp := range between {
			if got := readCanonical(t, inputs[n], ReaderOptions{}, sp); got != want {
				t.Errorf("%s: spooled reading with windows of %d bytes differs:\n%s", n, sp.windowSize(), firstDiff(got, want))
			}
		}
	}
	if sp.Size() == 0 || small.Size() == 0 {
		t.Error("nothing spooled")
	}
	if wide.Size() != 0 {
		t.Errorf("%d bytes spooled with windows as large as the blocks, want none", wide.Size())
	}
}

// TestSpoolHolds: readers of 256 KiB blocks each hold the block of every
// thread while they read it; spooling, a window of a few KiB.
func TestSpoolHolds(t *testing.T) {
	data := bigLists(t, Zstd, false)
	const readers = 24
	held := func(sp *Spool) uint64 {
		var rs []*RankReader
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.GC() // the pools' victims too
		runtime.ReadMemStats(&m0)
		for i := 0; i < readers; i++ {
			r, err := NewRankReader(bytes.NewReader(data), "spool.mpit")
			if err != nil {
				t.Fatal(err)
			}
			if sp != nil {
				r.SpoolTo(sp)
			}
			for k := 0; k < 10 && r.Next(); k++ {
			}
			rs = append(rs, r)
		}
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m1)
		for _, r := range rs {
			r.Close()
		}
		return (m1.HeapAlloc - min(m1.HeapAlloc, m0.HeapAlloc)) / readers
	}
	whole := held(nil)
	sp := NewSpool(t.TempDir())
	defer sp.Close()
	spooled := held(sp)
	t.Logf("per reader: %d bytes holding its blocks, %d spooling", whole, spooled)
	if whole < 2*(256<<10) || spooled > 64<<10 {
		t.Errorf("per reader: %d bytes holding its blocks (3 threads of 256 KiB), %d spooling (want under 64 KiB)", whole, spooled)
	}
}

// eofAtEnd is a ReaderAt that says io.EOF with a read that reaches its
// end, as io.ReaderAt allows.
type eofAtEnd struct{ b []byte }

func (r eofAtEnd) ReadAt(p []byte, off int64) (int, error) {
	n, err := bytes.NewReader(r.b).ReadAt(p, off)
	if err == nil && off+int64(n) == int64(len(r.b)) {
		err = io.EOF
	}
	return n, err
}

// TestSpoolReadsToTheEnd: a log cut after an uncompressed events block
// (a rank killed before its end record) whose reader says io.EOF with the
// last bytes reads the same spooled: the window read from the file
// reaches its end.
func TestSpoolReadsToTheEnd(t *testing.T) {
	s := newStream()
	for i := 0; i < 3000; i++ {
		s.add(call(spec.Call, 0, 5, 3))
	}
	data := writeFile(t, 0, 1, s.evs, &WriterOptions{Compression: NoCompression, BlockSize: 16 << 10}, nil)
	ev := framesOfType(scanFrames(t, data), spec.BlockEvents)
	last := ev[len(ev)-1]
	data = data[:last.off+spec.BlockHeaderSize+int64(last.f.stored)] // no end block
	read := func(sp *Spool) string {
		r, err := newRankReader(eofAtEnd{data}, int64(len(data)), "cut.mpit", ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if sp != nil {
			r.SpoolTo(sp)
		}
		n := 0
		for r.Next() {
			n++
		}
		return fmt.Sprintf("%d events, err %v, %s", n, r.Err(), r.Diagnostics().Summary())
	}
	sp := NewSpool(t.TempDir())
	defer sp.Close()
	if want, got := read(nil), read(sp); got != want || !strings.HasPrefix(want, "3000 events, err <nil>") {
		t.Errorf("spooled: %s; holding the blocks: %s", got, want)
	}
}
