package driver

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/analysis/baseline"
	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/analysis/stats"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

var stencil = filepath.Join("..", "..", "fixtures", "traces", "v5", "stencil")

func open(t *testing.T, dir string) *tracefmt.Trace {
	t.Helper()
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestAnalyzeModel: the model given weighs the path, names it, and lands
// in the baseline's fingerprint; the default model's does not.
func TestAnalyzeModel(t *testing.T) {
	def, err := Analyze(open(t, stencil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := def.NeedPath(); err != nil || def.Path == nil {
		t.Fatalf("no path: %v", err)
	}
	m := latency.Default()
	for i := range m.PointToPoint.Segments {
		m.PointToPoint.Segments[i].A += 1e6
	}
	file := filepath.Join(t.TempDir(), "slow.json")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	slow, err := Analyze(open(t, stencil), Options{Model: file})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(slow.ModelName, file+" ") || def.ModelName == slow.ModelName {
		t.Errorf("model names %q and %q", def.ModelName, slow.ModelName)
	}
	if slow.Path.Length < def.Path.Length+1e6 {
		t.Errorf("a path of %.0f ns under messages 1 ms slower, %.0f under the default", slow.Path.Length, def.Path.Length)
	}
	prof, err := stats.OfTrace(open(t, stencil))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a  *Analysis
		fp string
	}{{def, ""}, {slow, m.Fingerprint()}} {
		b, err := c.a.Baseline("name", prof)
		if err != nil {
			t.Fatal(err)
		}
		if b.Model != c.fp || b.Trace != "name" {
			t.Errorf("baseline of %s: model %q trace %q, want %q", c.a.ModelName, b.Model, b.Trace, c.fp)
		}
		if got, want := b.Times[baseline.CritpathLength], int64(math.Round(c.a.Path.Length)); got != want {
			t.Errorf("baseline of %s: path %d ns, want %d", c.a.ModelName, got, want)
		}
	}
}

func TestLoadModelErrors(t *testing.T) {
	_, _, err := LoadModel(filepath.Join(t.TempDir(), "none.json"))
	if err == nil || !strings.Contains(err.Error(), "--model") || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing model: %v", err)
	}
	if _, err := Analyze(open(t, stencil), Options{Model: "/nonexistent/m.json"}); err == nil {
		t.Error("Analyze with a missing model: no error")
	}
}

// TestMeasuredOnce: the measured path is computed once and differs from
// nothing but its weighting.
func TestMeasuredOnce(t *testing.T) {
	var lengths []float64
	for _, stream := range []bool{false, true} {
		a, err := Analyze(open(t, stencil), Options{Stream: stream})
		if err != nil {
			t.Fatal(err)
		}
		if (a.Graph == nil) != stream || a.Steps == nil {
			t.Fatalf("stream %v: graph %v, steps %v", stream, a.Graph != nil, a.Steps != nil)
		}
		p1, err1 := a.MeasuredPath()
		p2, err2 := a.MeasuredPath()
		if err1 != nil || err2 != nil || p1 != p2 || p1 == a.Steps {
			t.Errorf("MeasuredPath: %p %v, %p %v (model path %p)", p1, err1, p2, err2, a.Steps)
		}
		f1, err1 := a.Folded()
		f2, err2 := a.Folded()
		if err1 != nil || err2 != nil || f1 != f2 {
			t.Error("Folded folds twice", err1, err2)
		}
		if errors.Is(a.NeedPath(), ErrNoMPI) || a.NoMPI() {
			t.Error("an MPI trace taken for a program without MPI")
		}
		lengths = append(lengths, a.Steps.Length, p1.Length)
		a.Close()
	}
	if lengths[0] != lengths[2] || lengths[1] != lengths[3] {
		t.Errorf("the graph's paths weigh %v and %v, the replay's %v and %v", lengths[0], lengths[1], lengths[2], lengths[3])
	}
}

func TestParseRecorderOptions(t *testing.T) {
	got := parseRecorderOptions("chance=0.01 exclude=MPI_Recv MPI_Send include= sites=1")
	want := map[string]string{"chance": "0.01", "exclude": "MPI_Recv MPI_Send", "include": "", "sites": "1"}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// TestStreamAsGraph: on every stored trace of a real run, the analysis
// with the streaming replay (where it does not decline) writes the
// critPath.out and makes the summary the graph's analysis makes, under
// the model and measured weights, with the same baseline.
func TestStreamAsGraph(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "fixtures", "traces", "v*", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatal(dirs, err)
	}
	streamed := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		var outs, sums, bases [2]string
		for k, stream := range []bool{false, true} {
			a, err := Analyze(open(t, dir), Options{Stream: stream, Measured: stream})
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			if a.NeedPath() != nil {
				outs[k] = "no path"
				continue
			}
			if stream && a.Graph == nil {
				streamed++
				if a.mpath == nil {
					t.Errorf("%s: the measured path was not replayed beside the model's", dir)
				}
			}
			prof, err := stats.OfTrace(open(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			b, err := a.Baseline("x", prof)
			if err != nil {
				t.Fatal(err)
			}
			bases[k] = fmt.Sprint(b)
			mp, err := a.MeasuredPath()
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			for _, sp := range []*critpath.StepPath{a.Steps, mp} {
				var out strings.Builder
				sum, err := a.Report(sp, &out, critpath.Microsecond, 10)
				if err != nil {
					t.Fatalf("%s: %v", dir, err)
				}
				if err := a.Explain(sum); err != nil {
					t.Fatalf("%s: %v", dir, err)
				}
				js, err := json.MarshalIndent(sum, "", " ")
				if err != nil {
					t.Fatal(err)
				}
				outs[k] += out.String()
				sums[k] += string(js)
			}
			a.Close()
		}
		if outs[0] != outs[1] {
			t.Errorf("%s: critPath.out of the graph\n%s\nof the replay\n%s", dir, outs[0], outs[1])
		}
		if sums[0] != sums[1] {
			t.Errorf("%s: summary of the graph\n%s\nof the replay\n%s", dir, sums[0], sums[1])
		}
		if bases[0] != bases[1] {
			t.Errorf("%s: baseline of the graph\n%s\nof the replay\n%s", dir, bases[0], bases[1])
		}
	}
	if streamed < len(dirs)/2 {
		t.Errorf("the replay analysed %d of %d traces", streamed, len(dirs))
	}
	t.Logf("%d of %d traces replayed", streamed, len(dirs))
}

// TestFallbackProgress: a trace the replay declines (a rank's second
// thread calls while the first is in a call) is analysed with the graph,
// and the reading's progress (Trace.OnRead) starts again for it: what it
// is told adds up to the trace's bytes once, not twice.
func TestFallbackProgress(t *testing.T) {
	b := testgen.New(2)
	for r := range 2 {
		rk := b.Rank(r)
		rk.Call("MPI_Init")
		rk.Compute(1000)
		rk.Barrier()
	}
	b.Rank(1).Thread(1).Compute(100).Call("MPI_Comm_rank")
	for r := range 2 {
		b.Rank(r).Call("MPI_Finalize")
	}
	dir := filepath.Join(t.TempDir(), "traces")
	if err := b.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	tr := open(t, dir)
	var read atomic.Int64 // OnRead is told from several goroutines
	tr.OnRead = func(n int) { read.Add(int64(n)) }
	a, err := Analyze(tr, Options{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Graph == nil {
		t.Fatal("the replay took a trace with overlapping calls")
	}
	if read.Load() != tr.FileBytes() {
		t.Errorf("progress told %d bytes, the trace has %d", read.Load(), tr.FileBytes())
	}
}

// TestReplayPanic: a panic in the replay (an internal error) does not end
// the analysis: the graph finds the path, and the note says what
// happened, to be reported.
func TestReplayPanic(t *testing.T) {
	defer func(f func(*tracefmt.Trace, reconstruct.ReplayWeights, reconstruct.Options) (*reconstruct.ReplayResult, error)) {
		replayTrace = f
	}(replayTrace)
	replayTrace = func(*tracefmt.Trace, reconstruct.ReplayWeights, reconstruct.Options) (*reconstruct.ReplayResult, error) {
		panic("a test's")
	}
	a, err := Analyze(open(t, stencil), Options{Stream: true, Measured: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Graph == nil || a.Path == nil {
		t.Fatal("no graph after the replay panicked")
	}
	if !strings.Contains(a.Note, "internal error in the streaming replay: a test's") || !strings.Contains(a.Note, "please report") {
		t.Errorf("note %q", a.Note)
	}
	if _, err := a.MeasuredPath(); err != nil {
		t.Error(err)
	}
}

// TestWhyBeside: for the "why" block, the measured replay starts beside
// the model's once the model's path so far is far below the run so far,
// is kept when the whole path is too and stopped when not, and the
// summary is the one the measured replay after the model's gives.
func TestWhyBeside(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "traces", "v5", "*"))
	// 4 ranks in a ring x 8,000 iterations (96,000 events): 1 us of
	// computation and an exchange whose MPI_Waitall takes 100 us, which
	// the model weighs at a few: the path is far below the run. Then the
	// same with 10 s of computation before MPI_Finalize, which the path
	// holds; and the generator's halo (the path near the run).
	ring := func(name string, last int64) string {
		b := testgen.New(4)
		for r := range 4 {
			b.Rank(r).Call("MPI_Init")
		}
		for range 8_000 {
			for r := range 4 {
				rk := b.Rank(r)
				rk.Compute(1000)
				q1 := rk.Irecv(int64((r+3)%4), 0, 8)
				q2 := rk.Isend(int64((r+1)%4), 0, 8)
				rk.Dur = 100_000
				rk.Waitall(q1, q2)
				rk.Dur = 500
			}
		}
		b.Rank(0).Compute(last)
		for r := range 4 {
			b.Rank(r).Call("MPI_Finalize")
		}
		dir := filepath.Join(t.TempDir(), name)
		if err := b.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	halo := filepath.Join(t.TempDir(), "halo")
	if err := testgen.Halo(4, 5_000, 3).WriteDir(halo); err != nil {
		t.Fatal(err)
	}
	type whyCase struct {
		dir                    string
		started, kept, stopped bool
	}
	cases := []whyCase{
		{ring("waits", 0), true, true, false},
		// Held until the model's path says it is not needed: stopped
		// before it reads (Options.Stop within the replay:
		// reconstruct.TestReplayStop).
		{ring("waits-then-work", 10_000_000_000), true, false, true},
		{halo, false, false, false},
	}
	for _, d := range dirs {
		cases = append(cases, whyCase{d, false, false, false}) // under 65,536 events: told nothing before the end
	}
	why := func(c whyCase, guess bool) (sum string, got whyCase, told int) {
		t.Helper()
		dir := c.dir
		old := besideRanks
		if !guess {
			besideRanks = -1
		}
		besideGuessed = func(s, k, st bool) { told++; got = whyCase{dir, s, k, st} }
		if c.stopped {
			besideHold = func(stop *atomic.Bool) {
				for deadline := time.Now().Add(time.Minute); !stop.Load() && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
			}
		}
		defer func() { besideRanks, besideGuessed, besideHold = old, nil, nil }()
		a, err := Analyze(open(t, dir), Options{Stream: true, Why: true})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		if a.Graph != nil {
			t.Fatalf("%s: the replay declined the trace", dir)
		}
		sm, err := a.Report(a.Steps, nil, critpath.Microsecond, 5)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Explain(sm); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(sm)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), got, told
	}
	for _, c := range cases {
		after, _, told := why(c, false)
		if told > 0 {
			t.Errorf("%s: a measured replay guessed beside the model's with besideRanks -1", c.dir)
		}
		beside, got, told := why(c, true)
		if told != 1 || got != c {
			t.Errorf("%s: told %d times: %+v; want once, %+v", c.dir, told, got, c)
		}
		if beside != after {
			t.Errorf("%s: the summary with the measured replay beside:\n%s\nafter:\n%s", c.dir, beside, after)
		}
		if has := strings.Contains(after, `"why"`); got.started && got.kept != has {
			t.Errorf("%s: the measured replay beside kept %v, the summary's why block %v", c.dir, got.kept, has)
		}
	}
}

// TestClockOffsets: ClockOffsets, which reads only the ends of the logs,
// finds the offsets the analysis observes reading them whole, on every
// stored trace and on logs of many blocks whose one synchronisation is in
// MPI_Init, in MPI_Finalize, or none; a synchronisation in the middle of a
// log without one in MPI_Init it does not find (the replay beside is
// then dropped: TestMeasuredAfter's paths are the same).
func TestClockOffsets(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "traces", "v*", "*"))
	gen := func(name string, at int) string {
		b := testgen.New(3)
		b.Options.BlockSize = 256
		for r := range 3 {
			rk := b.Rank(r)
			rk.Call("MPI_Init")
			if at == 0 {
				rk.ClockSync(spec.PhaseInit, int64(1000*r), 5)
			}
			for i := range 300 {
				rk.Compute(100).Call("MPI_Comm_rank")
				if at == 1 && i == 150 {
					rk.ClockSync(spec.PhaseInit+1, int64(2000*r), 5) // not MPI_Init's
				}
			}
			if at == 2 {
				rk.ClockSync(spec.PhaseFinalize, int64(3000*r), 5)
			}
			rk.Call("MPI_Finalize")
		}
		dir := filepath.Join(t.TempDir(), name)
		if err := b.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	cases := map[string]bool{gen("init", 0): true, gen("middle", 1): false, gen("finalize", 2): true, gen("none", -1): true}
	for _, d := range dirs {
		cases[d] = true
	}
	for dir, same := range cases {
		a, err := Analyze(open(t, dir), Options{Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		got, want := ClockOffsets(a.Trace), *a.clockOffsets()
		if eq := maps.Equal(got.Offset, want.Offset) && maps.Equal(got.Err, want.Err); eq != same {
			t.Errorf("%s: offsets %v, errors %v; the analysis observed %v, %v (want the same: %v)", dir, got.Offset, got.Err, want.Offset, want.Err, same)
		}
		a.Close()
	}
}

// TestMeasuredAfter: beyond besideRanks ranks the measured replay runs
// after the model's, when asked, and gives the path it gives beside it.
func TestMeasuredAfter(t *testing.T) {
	dir := t.TempDir()
	if err := testgen.Halo(12, 20, 3).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	var outs [2]string
	for k, beside := range []int{4096, 8} {
		old := besideRanks
		besideRanks = beside
		a, err := Analyze(open(t, dir), Options{Stream: true, Measured: true})
		besideRanks = old
		if err != nil {
			t.Fatal(err)
		}
		if a.Graph != nil || (a.mpath != nil) != (k == 0) {
			t.Fatalf("beside %d ranks: graph %v, measured path replayed beside %v", beside, a.Graph != nil, a.mpath != nil)
		}
		mp, err := a.MeasuredPath()
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if _, err := a.Report(mp, &out, critpath.Microsecond, 10); err != nil {
			t.Fatal(err)
		}
		outs[k] = out.String()
		a.Close()
	}
	if outs[0] != outs[1] {
		t.Errorf("the measured path replayed beside:\n%s\nafter:\n%s", outs[0], outs[1])
	}
}

// TestFewOpenFiles: with the process allowed 6 open rank files, both
// replays of a 40-rank trace run (the measured one beside the model's)
// and give the paths they give with every file open, holding no more
// than 6 open at once.
func TestFewOpenFiles(t *testing.T) {
	dir := t.TempDir()
	b := testgen.Halo(40, 30, 5)
	b.Options.BlockSize = 512
	if err := b.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	var outs [2]string
	for k, n := range []int{1 << 20, 6} {
		old := tracefmt.SetOpenFiles(n)
		tracefmt.OpenFiles()
		a, err := Analyze(open(t, dir), Options{Stream: true, Measured: true})
		if err != nil {
			t.Fatal(err)
		}
		if a.Graph != nil || a.mpath == nil {
			t.Fatalf("%d files: the graph was built (%v) or the measured path not replayed beside (%v)", n, a.Graph != nil, a.mpath == nil)
		}
		for _, sp := range []*critpath.StepPath{a.Steps, a.mpath} {
			var out strings.Builder
			if _, err := a.Report(sp, &out, critpath.Microsecond, 10); err != nil {
				t.Fatal(err)
			}
			outs[k] += out.String()
		}
		a.Close()
		tracefmt.SetOpenFiles(old)
		if _, peak := tracefmt.OpenFiles(); peak > n || n < 40 && peak < n {
			t.Errorf("%d files allowed: %d open at once", n, peak)
		}
	}
	if outs[0] != outs[1] {
		t.Errorf("with every file open:\n%s\nwith 6:\n%s", outs[0], outs[1])
	}
}
