package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"weak"

	"github.com/mpitrace/mpitrace/analysis/render"
	"github.com/mpitrace/mpitrace/internal/textdiff"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// chromeContent is what a viewer shows of an export, one line per
// element, sorted: slices and names with their args, and flows by the
// places their ends attach to (their ids left out). With noPath it
// leaves out the critical path: the args.critical of the slices and the
// track of pid size.
func chromeContent(t *testing.T, data []byte, noPath bool, size int) []string {
	t.Helper()
	f, _, _ := checkChrome(t, data)
	var out []string
	starts := map[uint64]chromeEvent{}
	for _, e := range f.TraceEvents {
		if noPath && e.Pid == size {
			continue
		}
		args := []string{}
		for k, v := range e.Args {
			if !(noPath && k == "critical") {
				args = append(args, fmt.Sprintf("%s=%v", k, v))
			}
		}
		slices.Sort(args)
		switch e.Ph {
		case "X", "M":
			out = append(out, fmt.Sprintf("%s %d/%d %s %s ts=%d dur=%d %v", e.Ph, e.Pid, e.Tid, e.Name, e.Cat, ns(e.Ts), ns(e.Dur), args))
		case "s":
			starts[*e.ID] = e
		}
	}
	for _, e := range f.TraceEvents {
		if e.Ph == "f" {
			s := starts[*e.ID]
			out = append(out, fmt.Sprintf("flow %s %d/%d@%d -> %d/%d@%d", e.Cat, s.Pid, s.Tid, ns(s.Ts), e.Pid, e.Tid, ns(e.Ts)))
		}
	}
	slices.Sort(out)
	return out
}

// checkSameContent exports dir with and without --critical=false (and
// args) and checks that the files pass checkChrome and show the same
// slices and flows, the path apart: the path's marks and track are all
// the default mode adds.
func checkSameContent(t *testing.T, name, dir string, size int, args ...string) {
	t.Helper()
	want := chromeContent(t, exportOf(t, dir, args...), true, size)
	data := exportOf(t, dir, append(args, "--critical=false")...)
	got := chromeContent(t, data, false, size)
	if !slices.Equal(got, want) {
		t.Errorf("%s %v: --critical=false differs from the default, the path apart:\n%s", name, args, lineDiff(want, got))
	}
	if strings.Contains(string(data), `"critical"`) {
		t.Errorf("%s %v: --critical=false marks a path", name, args)
	}
	if again := exportOf(t, dir, append(args, "--critical=false")...); string(again) != string(data) {
		t.Errorf("%s %v: two streamed exports differ", name, args)
	}
}

// lineDiff lists the lines only in want (-) or only in got (+), at most 20.
func lineDiff(want, got []string) string {
	var b strings.Builder
	n := 0
	for _, l := range want {
		if !slices.Contains(got, l) && n < 20 {
			fmt.Fprintf(&b, "- %s\n", l)
			n++
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) && n < 20 {
			fmt.Fprintf(&b, "+ %s\n", l)
			n++
		}
	}
	return b.String()
}

// TestExportStream: --critical=false writes the same slices, names and
// flows as the default export (the path apart), on the export's own
// trace with its cuts, on the stored traces, and on generated ones.
func TestExportStream(t *testing.T) {
	dir := exportTrace(t)
	for _, args := range [][]string{nil, {"--ranks", "1-2"}, {"--window", "10us:30us"}, {"--ranks", "0,3", "--window", "5us:"}} {
		checkSameContent(t, "mix4", dir, 4, args...)
	}
	stored, _ := filepath.Glob(filepath.Join("..", "..", "..", "..", "fixtures", "traces", "v*", "*"))
	n := 0
	for _, d := range stored {
		tr, err := tracefmt.OpenDir(d)
		if err != nil {
			continue
		}
		n++
		checkSameContent(t, d, d, tr.Size)
	}
	if n == 0 {
		t.Errorf("no stored traces found")
	}
	halo := saveTrace(t, testgen.Halo(6, 25, 4))
	checkSameContent(t, "halo6", halo, 6)
	checkSameContent(t, "halo6", halo, 6, "--window", "20us:200us")
}

// TestExportStreamMemory: the streamed export's live heap does not grow
// with the trace's length: exporting a 4 times longer trace peaks at
// about the same live heap (sampled after a collection every 1/8 of the
// events), and far below what the events would take. The traces are
// written in blocks of 64 KiB, so that both are many blocks long (a
// rank's reader holds a block or two, and its decompressor a window of
// the same size: O(ranks), as are the export's own per-rank buffers).
func TestExportStreamMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("writes two exports of 0.4 M and 1.6 M events (run without -short and -race)")
	}
	const size = 8
	peak := func(iters int) (uint64, int64) {
		tr, ranks := blockedHalo(t, size, iters, 64<<10)
		events := int64(0)
		var max uint64
		sample := func() {
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			max = maxU(max, ms.HeapAlloc)
		}
		total := int64(size * (5*iters + iters/10))
		err := render.StreamChrome(io.Discard, render.StreamOptions{Size: tr.Size, Logged: ranks, Open: openRankOf(tr, nil, nil),
			Progress: func(n int64) {
				events = n
				if n%(total/8+1) < 1<<16 {
					sample()
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		sample()
		return max, events
	}
	small, n1 := peak(10_000)
	big, n4 := peak(40_000)
	t.Logf("peak live heap: %d events %.1f MiB, %d events %.1f MiB", n1, float64(small)/(1<<20), n4, float64(big)/(1<<20))
	if n4 < 3*n1 {
		t.Fatalf("the traces have %d and %d events", n1, n4)
	}
	// 4× the events, at most 1.1× the heap plus 1 MiB; and under 4 MiB a
	// rank (what the graph would take of the big trace: about 100 MiB).
	if big > small+small/10+1<<20 || big > size*4<<20 {
		t.Errorf("peak live heap %d B at %d events, %d B at %d events: it grows with the trace", small, n1, big, n4)
	}
}

// blockedHalo writes a testgen halo of size ranks and iters iterations in
// events blocks of block bytes, and returns it opened, with its ranks.
func blockedHalo(t *testing.T, size, iters, block int) (*tracefmt.Trace, []int) {
	b := testgen.New(size)
	b.Options.BlockSize = block
	tr, err := tracefmt.OpenDir(saveTrace(t, b.Halo(iters, 5)))
	if err != nil {
		t.Fatal(err)
	}
	var ranks []int
	for _, f := range tr.Files {
		ranks = append(ranks, f.Header.Rank)
	}
	return tr, ranks
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// TestExportPathReleasesGraph: the default export keeps of the path only
// what it marks (render.ChromePath). It builds no task graph for a trace
// the replay takes (halo6); for one the replay declines (mix4: a second
// thread's call), the graph it built is unreachable once exportPath
// returns (a weak pointer to it is cleared by a collection), and the file
// is written without it.
func TestExportPathReleasesGraph(t *testing.T) {
	for name, c := range map[string]struct {
		dir   string
		graph bool
	}{"mix4": {exportTrace(t), true}, "halo6": {saveTrace(t, testgen.Halo(6, 25, 4)), false}} {
		tr, err := tracefmt.OpenDir(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		var wg weak.Pointer[taskgraph.Graph]
		built := false
		exportGraphBuilt = func(g *taskgraph.Graph) { wg, built = weak.Make(g), true }
		a, err := analyze(tr, exportAnalysis(""), &Streams{Out: io.Discard, Err: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		cp, _, pathErr, done, err := exportPath(a)
		exportGraphBuilt = nil
		if err != nil || pathErr != nil || cp == nil {
			t.Fatalf("%s: exportPath: %v, %v", name, err, pathErr)
		}
		runtime.GC()
		if built != c.graph {
			t.Errorf("%s: exportPath built the task graph: %v, want %v", name, built, c.graph)
		}
		if wg.Value() != nil {
			t.Errorf("%s: the task graph is still reachable after exportPath", name)
		}
		if len(cp.Events(0)) == 0 {
			t.Errorf("%s: no call of rank 0 on the path", name)
		}
		runtime.KeepAlive(cp)
		done()
	}
}

// TestExportSpooled: an export whose second pass spools its readers'
// blocks (what it does from exportSpoolRanks ranks on) writes the same
// bytes, with the path and without, cut or not.
func TestExportSpooled(t *testing.T) {
	dirs := map[string]string{"mix4": exportTrace(t), "halo6": saveTrace(t, testgen.Halo(6, 25, 4))}
	for name, dir := range dirs {
		for _, args := range [][]string{nil, {"--critical=false"}, {"--window", "10us:30us"}, {"--critical=false", "--ranks", "1-2"}} {
			want := exportOf(t, dir, args...)
			saved := exportSpoolRanks
			exportSpoolRanks = 1
			got := exportOf(t, dir, args...)
			exportSpoolRanks = saved
			if string(got) != string(want) {
				t.Errorf("%s %v: the spooled export differs:\n%s", name, args, textdiff.Lines(string(want), string(got)))
			}
		}
	}
}

// TestExportSpoolMemory: with the recorder's 256 KiB blocks, the second
// pass holding every rank's current block holds a quarter MiB a rank;
// spooling, a window of a few KiB.
func TestExportSpoolMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("exports 32 ranks of 256 KiB blocks twice (run without -short and -race)")
	}
	const size = 32
	tr, ranks := blockedHalo(t, size, 6_000, 256<<10)
	peak := func(sp *tracefmt.Spool) uint64 {
		var max uint64
		sample := func() {
			var ms runtime.MemStats
			runtime.GC()
			runtime.GC() // the pools' victims too
			runtime.ReadMemStats(&ms)
			max = maxU(max, ms.HeapAlloc)
		}
		sample()
		base, last := max, int64(0)
		err := render.StreamChrome(io.Discard, render.StreamOptions{Size: tr.Size, Logged: ranks, Open: openRankOf(tr, nil, sp),
			Progress: func(n int64) {
				if n-last >= 1<<16 {
					last = n
					sample()
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		return max - base
	}
	whole := peak(nil)
	sp := tracefmt.NewSpool(t.TempDir())
	defer sp.Close()
	spooled := peak(sp)
	t.Logf("peak live heap over %d ranks: %.1f MiB holding the blocks, %.1f MiB spooling (%d MiB spooled)", size, float64(whole)/(1<<20), float64(spooled)/(1<<20), sp.Size()>>20)
	if whole < size*(200<<10) || spooled > whole/4 {
		t.Errorf("peak live heap %d B holding the blocks, %d B spooling: want under a quarter", whole, spooled)
	}
}
