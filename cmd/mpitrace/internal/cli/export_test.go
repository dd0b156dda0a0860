package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/analysis/render"
	"github.com/mpitrace/mpitrace/internal/golden"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// exportTrace is a 4-rank trace with every kind of link the export draws:
// a Send/Recv, Isends and Irecvs completed by a Waitall, a Sendrecv ring,
// an Allreduce and a Barrier, a region and a loop around calls, a second
// thread, and clock offsets (ranks 1-3 run 1 ms, 2 ms, 3 ms behind).
func exportTrace(t *testing.T) string {
	t.Helper()
	return saveTrace(t, exportBuilder())
}

func exportBuilder() *testgen.Builder {
	b := testgen.New(4)
	rk := make([]*testgen.Rank, 4)
	for r := range rk {
		rk[r] = b.Rank(r)
		rk[r].Call("MPI_Init")
		rk[r].ClockSync(spec.PhaseInit, int64(r)*1_000_000, 100)
		rk[r].Compute(int64(1000 * (r + 1)))
	}
	rk[0].RegionBegin("setup")
	rk[0].Send(1, 9, 128)
	rk[0].RegionEnd(0)
	rk[1].Recv(0, 9, 128)
	for it := range 2 {
		for r := range rk {
			left, right := int64((r+3)%4), int64((r+1)%4)
			if r == 0 {
				rk[r].LoopBegin("halo.c", 10, 3)
				rk[r].IterBegin(uint64(it + 1))
			}
			rk[r].Compute(int64(5000 + 700*r))
			q1 := rk[r].Irecv(left, 1, 4096)
			q2 := rk[r].Irecv(right, 2, 4096)
			q3 := rk[r].Isend(right, 1, 4096)
			q4 := rk[r].Isend(left, 2, 4096)
			rk[r].Waitall(q1, q2, q3, q4)
			rk[r].Sendrecv(right, 3, 64, left, 3, 64)
			if r == 0 {
				rk[r].IterEnd()
				rk[r].LoopEnd(1, 0)
			}
		}
	}
	for r := range rk {
		rk[r].Compute(int64(2000 * (4 - r)))
		rk[r].Allreduce(8)
	}
	rk[1].Thread(1).Compute(100).Call("MPI_Comm_rank")
	for r := range rk {
		rk[r].Barrier()
		rk[r].Call("MPI_Finalize")
	}
	return b
}

type chromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	ID   *uint64        `json:"id"`
	BP   string         `json:"bp"`
	Args map[string]any `json:"args"`
}

type chromeFile struct {
	DisplayTimeUnit string        `json:"displayTimeUnit"`
	TraceEvents     []chromeEvent `json:"traceEvents"`
}

func ns(us float64) int64 { return int64(math.Round(us * 1000)) }

// checkChrome parses an export and checks what every export must hold:
// slices of dur >= 0 that nest properly on each track, and flows whose
// every start pairs with exactly one finish of its id, the start on a
// send's slice, the finish on the slice that completed the receive (or,
// for a collective, both on calls of the collective). It returns the file
// and the number of message and collective flows.
func checkChrome(t *testing.T, data []byte) (f chromeFile, messages, colls int) {
	t.Helper()
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("the export is not JSON: %v", err)
	}
	if f.DisplayTimeUnit == "" {
		t.Errorf("no displayTimeUnit")
	}
	type track struct{ pid, tid int }
	slicesOf := map[track][]chromeEvent{}
	for _, e := range f.TraceEvents {
		if e.Ph == "X" {
			if e.Dur < 0 {
				t.Errorf("slice %s at %v: dur %v < 0", e.Name, e.Ts, e.Dur)
			}
			slicesOf[track{e.Pid, e.Tid}] = append(slicesOf[track{e.Pid, e.Tid}], e)
		}
	}
	// A slice comes after the slices enclosing it in the file (viewers
	// order slices of one timestamp by their place in the file).
	for tr, ss := range slicesOf {
		for i, c := range ss {
			for _, p := range ss[i+1:] {
				if ns(p.Ts) <= ns(c.Ts) && ns(p.Ts)+ns(p.Dur) >= ns(c.Ts)+ns(c.Dur) && ns(p.Dur) > ns(c.Dur) {
					t.Errorf("track %v: %s at %v comes before %s, which encloses it", tr, c.Name, c.Ts, p.Name)
				}
			}
		}
	}
	for tr, ss := range slicesOf {
		slices.SortStableFunc(ss, func(a, b chromeEvent) int {
			if ns(a.Ts) != ns(b.Ts) {
				return int(ns(a.Ts) - ns(b.Ts))
			}
			return int(ns(b.Dur) - ns(a.Dur))
		})
		var stack []chromeEvent
		for _, s := range ss {
			for len(stack) > 0 && ns(stack[len(stack)-1].Ts)+ns(stack[len(stack)-1].Dur) <= ns(s.Ts) {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 {
				if p := stack[len(stack)-1]; ns(s.Ts)+ns(s.Dur) > ns(p.Ts)+ns(p.Dur) {
					t.Errorf("track %v: %s [%v+%v] overlaps %s [%v+%v] without nesting", tr, s.Name, s.Ts, s.Dur, p.Name, p.Ts, p.Dur)
				}
			}
			stack = append(stack, s)
		}
		slicesOf[tr] = ss
	}
	// The innermost slice of a track holding ts.
	at := func(pid, tid int, ts float64) *chromeEvent {
		var in *chromeEvent
		ss := slicesOf[track{pid, tid}]
		for i := range ss {
			if s := &ss[i]; ns(s.Ts) <= ns(ts) && ns(ts) <= ns(s.Ts)+ns(s.Dur) {
				in = s
			}
		}
		return in
	}
	starts, finishes := map[uint64][]chromeEvent{}, map[uint64][]chromeEvent{}
	for _, e := range f.TraceEvents {
		switch e.Ph {
		case "s", "f":
			if e.ID == nil {
				t.Fatalf("flow without id: %+v", e)
			}
			if e.Ph == "s" {
				starts[*e.ID] = append(starts[*e.ID], e)
			} else {
				if e.BP != "e" {
					t.Errorf("flow finish %d without bp:e", *e.ID)
				}
				finishes[*e.ID] = append(finishes[*e.ID], e)
			}
		}
	}
	sends := []string{"MPI_Send", "MPI_Isend", "MPI_Sendrecv", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend"}
	recvs := []string{"MPI_Recv", "MPI_Mrecv", "MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome", "MPI_Sendrecv"}
	for id, ss := range starts {
		fs := finishes[id]
		if len(ss) != 1 || len(fs) != 1 {
			t.Errorf("flow %d: %d starts and %d finishes", id, len(ss), len(fs))
			continue
		}
		s, fin := ss[0], fs[0]
		from, to := at(s.Pid, s.Tid, s.Ts), at(fin.Pid, fin.Tid, fin.Ts)
		if from == nil || to == nil {
			t.Errorf("flow %d: an end on no slice", id)
			continue
		}
		switch s.Cat {
		case "message":
			messages++
			if !slices.Contains(sends, from.Name) || !slices.Contains(recvs, to.Name) {
				t.Errorf("message flow %d from %s to %s", id, from.Name, to.Name)
			}
		case "collective":
			colls++
			if from.Name != to.Name || from.Pid == to.Pid {
				t.Errorf("collective flow %d from rank %d's %s to rank %d's %s", id, from.Pid, from.Name, to.Pid, to.Name)
			}
		default:
			t.Errorf("flow %d of category %q", id, s.Cat)
		}
	}
	for id := range finishes {
		if _, ok := starts[id]; !ok {
			t.Errorf("flow %d finishes without a start", id)
		}
	}
	return f, messages, colls
}

func exportOf(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "trace.json")
	code, _, errs := runCLI(t, append([]string{"export", dir, "-o", out}, args...)...)
	if code != 0 {
		t.Fatalf("export %v: exit %d: %s", args, code, errs)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestExportChrome(t *testing.T) {
	dir := exportTrace(t)
	data := exportOf(t, dir)
	f, messages, colls := checkChrome(t, data)

	_, g, path := exportGraph(t, dir)
	// 1 Send/Recv, 2×4×2 Isend/Irecv, 2×4 Sendrecv.
	if messages != g.NumMessages() || messages != 1+16+8 {
		t.Errorf("%d message flows, the graph has %d messages", messages, g.NumMessages())
	}
	// Allreduce and Barrier: 3 members each to the last.
	if colls != 6 {
		t.Errorf("%d collective flows, want 6", colls)
	}
	names := map[string]bool{}
	var pathSum int64
	critical := 0
	for _, e := range f.TraceEvents {
		if e.Ph == "M" {
			names[fmt.Sprintf("%d/%d %s", e.Pid, e.Tid, e.Args["name"])] = true
		}
		if e.Ph == "X" && e.Pid == 4 {
			pathSum += ns(e.Dur)
		}
		if e.Ph == "X" && e.Args["critical"] == true {
			critical++
		}
		// Clock offsets: rank r's MPI_Init begins at 1 s + r ms on the common clock.
		if e.Ph == "X" && e.Name == "MPI_Init" && ns(e.Ts) != 1_000_000_000+int64(e.Pid)*1_000_000 {
			t.Errorf("rank %d's MPI_Init at %v us, want its clock offset applied", e.Pid, e.Ts)
		}
	}
	for _, want := range []string{"0/0 rank 0", "3/0 rank 3", "1/1 thread 1", "0/0 thread 0", "4/0 critical path"} {
		if !names[want] {
			t.Errorf("no metadata %q", want)
		}
	}
	for _, want := range []string{`"region setup"`, `"loop halo.c:10:3"`, `"iteration"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("no slice %s", want)
		}
	}
	if d := pathSum - int64(math.Round(path.Length)); d < -1 || d > 1 {
		t.Errorf("critical path track: %d ns, critpath: %.1f ns", pathSum, path.Length)
	}
	if critical == 0 {
		t.Errorf("no slice marked critical")
	}
	// Same input, same bytes.
	if again := exportOf(t, dir); string(again) != string(data) {
		t.Errorf("two exports differ")
	}
	golden.Check(t, filepath.Join("testdata", "export", "mix4.chrome.json"), string(data), *updateLoops)
}

// --ranks and --window cut the tracks and the flows to the cut.
func TestExportCut(t *testing.T) {
	dir := exportTrace(t)
	whole, _, _ := checkChrome(t, exportOf(t, dir))
	f, messages, _ := checkChrome(t, exportOf(t, dir, "--ranks", "1-2"))
	for _, e := range f.TraceEvents {
		if e.Pid != 1 && e.Pid != 2 && e.Pid != 4 {
			t.Fatalf("--ranks 1-2: an event of pid %d", e.Pid)
		}
	}
	// Messages between 1 and 2: 2 iterations × 2 directions + 2 Sendrecvs 1→2.
	if messages != 6 {
		t.Errorf("--ranks 1-2: %d message flows, want 6", messages)
	}
	// The window is on each rank's clock from the end of its MPI_Init.
	initEnd := map[int]float64{}
	for _, e := range whole.TraceEvents {
		if e.Name == "MPI_Init" {
			initEnd[e.Pid] = e.Ts + e.Dur
		}
	}
	f, _, _ = checkChrome(t, exportOf(t, dir, "--window", "10us:30us"))
	n := 0
	for _, e := range f.TraceEvents {
		if e.Ph != "X" || e.Pid == 4 {
			continue
		}
		n++
		if rel := ns(e.Ts - initEnd[e.Pid]); rel < 10_000 || rel >= 30_000 {
			t.Errorf("--window 10us:30us: %s of rank %d starts %d ns after MPI_Init", e.Name, e.Pid, rel)
		}
	}
	if n == 0 {
		t.Errorf("--window 10us:30us: nothing kept")
	}
	// The path's track (pid 4) is laid out from the earliest end of
	// MPI_Init: the window keeps the steps placed within it.
	t0 := math.Inf(1)
	for _, ie := range initEnd {
		t0 = math.Min(t0, ie)
	}
	steps := func(f chromeFile) (in, all int) {
		for _, e := range f.TraceEvents {
			if e.Ph == "X" && e.Pid == 4 {
				all++
				if rel := ns(e.Ts - t0); rel >= 10_000 && rel < 30_000 {
					in++
				}
			}
		}
		return in, all
	}
	wantIn, whole4 := steps(whole)
	in, all := steps(f)
	if in != wantIn || all != in || wantIn == 0 || wantIn == whole4 {
		t.Errorf("--window 10us:30us: %d of the path's %d steps kept, %d within the window; want the %d of %d placed in it", all, whole4, in, wantIn, whole4)
	}
}

// Bad flags and input: one line, the documented exit status, no panic.
func TestExportBadInput(t *testing.T) {
	dir := exportTrace(t)
	out := filepath.Join(t.TempDir(), "x.json")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{dir, "-o", out, "--format", "svg"}, ExitUsage, `--format "svg": the only format is chrome`},
		{[]string{dir}, ExitUsage, "name the output: -o trace.json"},
		{[]string{dir, "-o", out, "--ranks", "9"}, ExitUsage, "--ranks 9: " + dir + " has ranks 0-3"},
		{[]string{dir, "-o", out, "--window", "2s:1s"}, ExitUsage, `--window "2s:1s": the end must be after the start`},
		{[]string{filepath.Join(dir, "nope"), "-o", out}, ExitError, "no such trace directory"},
		{[]string{dir, "-o", filepath.Join(dir, "no", "such", "x.json")}, ExitError, "no such file or directory"},
	} {
		code, stdout, errs := runCLI(t, append([]string{"export"}, c.args...)...)
		first, _, _ := strings.Cut(errs, "\n")
		if code != c.code || !strings.HasPrefix(first, "mpitrace: ") || !strings.Contains(first, c.want) || stdout != "" {
			t.Errorf("export %v: exit %d, stderr %q; want %d and %q", c.args, code, errs, c.code, c.want)
		}
		if c.code == ExitError && lines(errs) != 1 {
			t.Errorf("export %v: want one line, got %q", c.args, errs)
		}
	}
	// A damaged rank file: the export still parses, the loss is reported.
	p := filepath.Join(dir, "rank-00001.mpit")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, b[:len(b)*2/3], 0o644)
	for _, critical := range []string{"--critical=true", "--critical=false"} {
		code, stdout, errs := runCLI(t, "export", dir, "-o", "-", critical)
		if code != 0 && code != ExitError || errs == "" {
			t.Fatalf("truncated, %s: exit %d, stderr %q", critical, code, errs)
		}
		checkChrome(t, []byte(stdout))
	}
}

// FuzzExport damages a rank file of exportTrace (a flipped byte, a cut)
// and exports it, with the critical path and without (--critical=false): never a
// panic, a documented exit status, and when the export succeeds, a file
// that passes checkChrome.
func FuzzExport(f *testing.F) {
	src := filepath.Join(f.TempDir(), "traces")
	if err := exportBuilder().WriteDir(src); err != nil {
		f.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(src, "*"))
	f.Add(uint8(0), uint32(100), uint8(0x10), uint8(0))
	f.Add(uint8(1), uint32(0), uint8(0), uint8(128))
	f.Add(uint8(3), uint32(40), uint8(0xff), uint8(200))
	f.Fuzz(func(t *testing.T, file uint8, pos uint32, xor, cut uint8) {
		dir := filepath.Join(t.TempDir(), "traces")
		os.MkdirAll(dir, 0o755)
		for i, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if i == int(file)%len(files) && len(b) > 0 {
				b[int(pos)%len(b)] ^= xor
				if cut > 0 {
					b = b[:len(b)*int(cut)/256]
				}
			}
			os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o644)
		}
		for _, critical := range []string{"--critical=true", "--critical=false"} {
			code, stdout, errs := runCLI(t, "export", dir, "-o", "-", critical)
			switch code {
			case ExitOK:
				checkChrome(t, []byte(stdout))
			case ExitError, ExitDataLoss:
				if !strings.HasPrefix(errs, "mpitrace: ") {
					t.Fatalf("%s: exit %d with stderr %q", critical, code, errs)
				}
			default:
				t.Fatalf("%s: exit %d: %s", critical, code, errs)
			}
		}
	})
}

// TestExportCriticalMarks: the calls marked critical are exactly those
// of critpath's path: the operations that are its vertices, and the
// collective calls on the ranks of its hops into and out of collectives
// (each found here by its event in the rank's stream), on the export's
// trace, a generated halo, and the stored traces; with --ranks, those of
// the kept ranks.
func TestExportCriticalMarks(t *testing.T) {
	all := func(int) bool { return true }
	check := func(name, dir string, keep func(int) bool, args ...string) {
		t.Helper()
		tr, g, path := exportGraph(t, dir)
		onPath := map[[2]int64]bool{} // rank, event index
		for i := range path.NumVertices() {
			if v := path.Vertex(i).ID; g.Kind(v) == taskgraph.KindOp {
				n := g.Node(v)
				onPath[[2]int64{int64(n.Event.Rank), n.Event.Index}] = true
			}
			if i == path.NumVertices()-1 {
				break
			}
			h := path.Hop(i)
			for _, v := range []taskgraph.NodeID{h.From, h.To} {
				if g.Kind(v) == taskgraph.KindCollective {
					g.RankCollectives(h.Rank, func(c taskgraph.NodeID, ev int64) bool {
						if c == v {
							onPath[[2]int64{int64(h.Rank), ev}] = true
						}
						return true
					})
				}
			}
		}
		// Every rank's offset, those of ranks of one clock shared.
		offs := map[int]int64{}
		for _, f := range tr.Files {
			rr, err := tr.OpenRank(f.Header.Rank)
			if err != nil {
				t.Fatal(err)
			}
			var co render.ClockOffset
			for rr.Next() {
				co.Event(rr.Event())
			}
			if off, ok := co.Offset(); ok {
				offs[f.Header.Rank] = off
			}
			rr.Close()
		}
		tracefmt.ShareOffsets(tr.ClockGroups(), offs)
		var want []string
		for _, f := range tr.Files {
			r := f.Header.Rank
			if !keep(r) {
				continue
			}
			rr, err := tr.OpenRank(r)
			if err != nil {
				t.Fatal(err)
			}
			var evs []tracefmt.Event
			for rr.Next() {
				evs = append(evs, *rr.Event())
			}
			off := offs[r]
			for i, ev := range evs {
				if onPath[[2]int64{int64(r), int64(i)}] {
					fn, _ := rr.Strings().Lookup(ev.Fn())
					want = append(want, fmt.Sprintf("%d/%d %s ts=%d", r, ev.Thread, fn, ev.Start+off))
				}
			}
			rr.Close()
		}
		f, _, _ := checkChrome(t, exportOf(t, dir, args...))
		var got []string
		for _, e := range f.TraceEvents {
			if e.Ph == "X" && e.Args["critical"] == true {
				got = append(got, fmt.Sprintf("%d/%d %s ts=%d", e.Pid, e.Tid, e.Name, ns(e.Ts)))
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s %v: %d calls marked critical, %d on the path:\n%s", name, args, len(got), len(want), lineDiff(want, got))
		}
	}
	dir := exportTrace(t)
	check("mix4", dir, all)
	check("mix4", dir, func(r int) bool { return r == 1 || r == 2 }, "--ranks", "1-2")
	check("halo6", saveTrace(t, testgen.Halo(6, 25, 4)), all)
	stored, _ := filepath.Glob(filepath.Join("..", "..", "..", "..", "fixtures", "traces", "v*", "*"))
	for _, d := range stored {
		if tr, err := tracefmt.OpenDir(d); err == nil && tr.Size > 0 {
			check(d, d, all)
		}
	}
	if len(stored) == 0 {
		t.Errorf("no stored traces found")
	}
}

// exportGraph opens the trace of dir, its task graph and critical path
// (default model), as the export's first pass makes them.
func exportGraph(t *testing.T, dir string) (*tracefmt.Trace, *taskgraph.Graph, *critpath.Path) {
	t.Helper()
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := reconstruct.Build(tr, reconstruct.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path, err := critpath.Compute(g, latency.Default())
	if err != nil {
		t.Fatal(err)
	}
	return tr, g, path
}
