package main_test

// End-to-end tests of the recorder as a Kokkos tool (docs/kokkos.md): real
// Kokkos programs (Debian's libtrilinos-kokkos-dev, Kokkos 3.4, Serial)
// recorded by `mpitrace record`, with MPI (fixtures/programs/kokkos_mpi.cpp,
// both MPIs, 2 ranks) and without (kokkos_serial.cpp), their logs read back
// with tracefmt.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Kokkos as Debian installs it.
const (
	kokkosInclude = "/usr/include/trilinos"
	kokkosHeader  = kokkosInclude + "/Kokkos_Core.hpp"
)

var kokkosLibs = []string{"-ltrilinos_kokkoscontainers", "-ltrilinos_kokkoscore", "-ldl"}

// requireKokkos fails the test when Kokkos is not installed, unless
// MPITRACE_SKIP_KOKKOS=1 says to skip the Kokkos tests.
func requireKokkos(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(kokkosHeader); err == nil {
		return
	}
	if os.Getenv("MPITRACE_SKIP_KOKKOS") == "1" {
		t.Skipf("%s not found and MPITRACE_SKIP_KOKKOS=1: Kokkos tests skipped", kokkosHeader)
	}
	t.Fatalf("%s not found: run 'make deps' (apt-get install libtrilinos-kokkos-dev), or set MPITRACE_SKIP_KOKKOS=1 to skip the Kokkos tests", kokkosHeader)
}

// compileKokkos builds fixtures/programs/NAME.cpp with the C++ compiler
// cxx (an MPI's wrapper, or g++) against Kokkos, once per run.
func compileKokkos(t *testing.T, cxx, name string) string {
	t.Helper()
	requireKokkos(t)
	if _, err := exec.LookPath(cxx); err != nil {
		t.Fatalf("%s is not installed: run 'make deps'", cxx)
	}
	compileMu.Lock()
	defer compileMu.Unlock()
	key := cxx + "/" + name
	if p, ok := compiled[key]; ok {
		return p
	}
	src, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "programs", name+".cpp"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(workDir, "bin", cxx, name)
	os.MkdirAll(filepath.Dir(out), 0o755)
	args := append([]string{"-O1", "-std=c++17", "-I", kokkosInclude, "-o", out, src}, kokkosLibs...)
	if b, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
		t.Fatalf("compiling %s with %s: %v\n%s", name, cxx, err, b)
	}
	compiled[key] = out
	return out
}

// kokkosLog is what one rank's log says, read as a tree: every event
// keyed by the path of the regions, kernels and copies open around it.
type kokkosLog struct {
	rank  int
	size  int
	tree  map[string]int // "R:iteration/R:reduce/K2:norm" → count; MPI calls by function name
	seq   []string       // the same keys, in order, the thread's first only
	bytes map[string]int64
	mpi   []string // MPI calls, in order
	flags []uint64 // the end flags of regions, kernels and copies that were not 0
	end   *tracefmt.End
	kokko int      // Kokkos and region events
	diags []string // the reader's diagnostics: none in a clean log
}

// readKokkos reads every rank of dir. Begin and end events must nest on
// each thread: an end closes the innermost open frame, of its own kind.
// Kernels named after the unlabelled functor's type (Square, in the
// compiler's spelling) are keyed "Square".
func readKokkos(t *testing.T, dir string) []*kokkosLog {
	t.Helper()
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatalf("opening %s: %v", dir, err)
	}
	var logs []*kokkosLog
	for _, f := range tr.Files {
		r, err := tr.OpenRank(f.Rank)
		if err != nil {
			t.Fatalf("rank %d: %v", f.Rank, err)
		}
		l := &kokkosLog{rank: f.Rank, size: r.Header().Size, tree: map[string]int{}, bytes: map[string]int64{}}
		stacks := map[int][]string{}
		events := 0
		str := func(ev *tracefmt.Event, fd spec.Field) string {
			s, ok := r.Strings().Lookup(uint64(ev.Get(fd)))
			if !ok {
				t.Fatalf("rank %d: %s with %s id %d not in the string table", f.Rank, ev.Name(), spec.Fields[fd].Name, ev.Get(fd))
			}
			if strings.Contains(s, "Square") {
				return "Square"
			}
			return s
		}
		for r.Next() {
			ev := r.Event()
			events++
			st := stacks[ev.Thread]
			key := func(k string) string {
				return strings.Join(append(st[:len(st):len(st)], k), "/")
			}
			add := func(k string) {
				l.tree[key(k)]++
				if ev.Thread == 0 {
					l.seq = append(l.seq, key(k))
				}
			}
			end := func(prefix string) {
				if len(st) == 0 || !strings.HasPrefix(st[len(st)-1], prefix) {
					t.Fatalf("rank %d thread %d: %s with %v open", f.Rank, ev.Thread, ev.Name(), st)
				}
				if fl := uint64(ev.Get(spec.Flags)); fl != 0 {
					l.flags = append(l.flags, fl)
				}
				stacks[ev.Thread] = st[:len(st)-1]
			}
			if ev.Kind >= spec.RegionBegin && ev.Kind <= spec.DualView {
				l.kokko++
			}
			if spec.Kinds[ev.Kind].IsCall {
				name, _ := r.Strings().Lookup(ev.Fn())
				l.mpi = append(l.mpi, name)
				add(name)
			}
			switch ev.Kind {
			case spec.RegionBegin:
				add("R:" + str(ev, spec.Name))
				stacks[ev.Thread] = append(st, "R:"+str(ev, spec.Name))
			case spec.KernelBegin:
				k := fmt.Sprintf("K%d:%s", ev.Get(spec.Type), str(ev, spec.Name))
				add(k)
				stacks[ev.Thread] = append(st, k)
			case spec.CopyBegin:
				k := fmt.Sprintf("C:%s<-%s", str(ev, spec.Name), str(ev, spec.SrcName))
				add(k)
				l.bytes[k] += ev.Get(spec.Bytes)
				stacks[ev.Thread] = append(st, k)
			case spec.RegionEnd:
				end("R:")
			case spec.KernelEnd:
				end("K")
			case spec.CopyEnd:
				end("C:")
			case spec.Alloc, spec.Free:
				k := ev.Name()[:1] + ":" + str(ev, spec.Name)
				add(k)
				l.bytes[k[2:]] += map[bool]int64{true: 1, false: -1}[ev.Kind == spec.Alloc] * ev.Get(spec.Bytes)
			}
		}
		if err := r.Err(); err != nil {
			t.Fatalf("rank %d: reading: %v", f.Rank, err)
		}
		for th, st := range stacks {
			if len(st) > 0 {
				t.Errorf("rank %d thread %d: %v still open at the end of the log", f.Rank, th, st)
			}
		}
		l.end = r.End()
		l.diags = diagCodes(r.Diagnostics())
		if l.end != nil && l.end.Events != uint64(events) {
			l.diags = append(l.diags, fmt.Sprintf("end record counts %d events, the log holds %d", l.end.Events, events))
		}
		r.Close()
		logs = append(logs, l)
	}
	return logs
}

// kokkosMPITree is what each rank of kokkos_mpi records: the kernels,
// regions, copies, allocations and MPI calls, by the path of the frames
// around them.
func kokkosMPITree() map[string]int {
	return map[string]int{
		"MPI_Init": 1, "MPI_Comm_rank": 1, "MPI_Finalize": 1,
		"A:a": 1, "A:b": 1, "A:prefix": 1,
		"K1:Kokkos::View::initialization [a]": 1, "K1:Kokkos::View::initialization [b]": 1,
		"K1:Kokkos::View::initialization [prefix]": 1,
		"R:iteration":                        3,
		"R:iteration/K1:init":                3,
		"R:iteration/K1:Square":              3,
		"R:iteration/R:reduce":               3,
		"R:iteration/R:reduce/K2:norm":       3,
		"R:iteration/R:reduce/MPI_Allreduce": 3,
		"R:iteration/K3:prefix":              3,
		"R:iteration/C:b<-a":                 3,
		"C:Scalar<-prefix":                   3,
		"F:a":                                1, "F:b": 1, "F:prefix": 1,
		// Kokkos' scratch space, allocated at the first reduce; Kokkos 3.4
		// frees it after it has finalized its tool.
		"R:iteration/R:reduce/K2:norm/A:Kokkos::Serial::scratch_mem": 1,
	}
}

// checkAllocs: every View's bytes are freed; only the scratch space,
// which Kokkos frees after its tool is finalized, stays.
func checkAllocs(t *testing.T, l *kokkosLog) {
	t.Helper()
	for label, n := range l.bytes {
		if strings.HasPrefix(label, "C:") {
			continue
		}
		if n != 0 && label != "Kokkos::Serial::scratch_mem" {
			t.Errorf("rank %d: %s: %d bytes allocated and not freed", l.rank, label, n)
		}
	}
}

func diffTree(got, want map[string]int) string {
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if got[k] != want[k] {
			fmt.Fprintf(&b, "\n  %s: %d, want %d", k, got[k], want[k])
		}
	}
	return b.String()
}

// A Kokkos + MPI program recorded on 2 ranks of each MPI: every kernel,
// region, copy and allocation lands in its rank's log, nested as the
// program nests them, with the MPI calls where they ran (the Allreduce
// inside region "reduce"); the output is the program's own. Without the
// flag the program's Kokkos is found and recorded, saying so; with
// --kokkos=false nothing Kokkos is recorded. Kokkos initialized before
// MPI_Init is recorded the same. When MPI_Finalize comes before Kokkos'
// finalisation, the events between are recorded and the log ends cleanly.
func TestKokkosMPI(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			bin := compileKokkos(t, strings.Replace(m.cc, "mpicc", "mpicxx", 1), "kokkos_mpi")
			dir := t.TempDir()
			plain := run(t, dir, m.launch(2, bin)...)
			if plain.code != 0 || !strings.Contains(plain.stdout, "iteration 2: sum 144825") {
				t.Fatalf("without the recorder: exit %d\n%s%s", plain.code, plain.stdout, plain.stderr)
			}

			out := filepath.Join(dir, "kokkos")
			res := record(t, out, []string{"--kokkos"}, m.launch(2, bin)...)
			if res.code != 0 || res.stdout != plain.stdout || strings.Contains(res.stderr, "links Kokkos") {
				t.Fatalf("record --kokkos: exit %d, stdout %q (want %q)\n%s", res.code, res.stdout, plain.stdout, res.stderr)
			}
			logs := readKokkos(t, out)
			if len(logs) != 2 {
				t.Fatalf("%d rank logs, want 2", len(logs))
			}
			for _, l := range logs {
				if d := diffTree(l.tree, kokkosMPITree()); d != "" {
					t.Errorf("rank %d:%s", l.rank, d)
				}
				if want := []string{"MPI_Init", "MPI_Comm_rank", "MPI_Allreduce", "MPI_Allreduce", "MPI_Allreduce", "MPI_Finalize"}; !reflect.DeepEqual(l.mpi, want) {
					t.Errorf("rank %d: MPI calls %v, want %v", l.rank, l.mpi, want)
				}
				if len(l.flags) != 0 || l.size != 2 || l.end == nil || l.end.Reason != spec.EndFinalize {
					t.Errorf("rank %d: end flags %v, size %d, end %+v; want no flags, 2, reason finalize", l.rank, l.flags, l.size, l.end)
				}
				if l.bytes["C:b<-a"] != 3*8000 {
					t.Errorf("rank %d: deep copies of a into b: %d bytes, want 3 × 8000", l.rank, l.bytes["C:b<-a"])
				}
				checkAllocs(t, l)
				checkClean(t, l)
			}
			checkKokkosRegions(t, out)

			// Kokkos found by itself: the same tree, said in one line.
			out = filepath.Join(dir, "auto")
			res = record(t, out, nil, m.launch(2, bin)...)
			if res.code != 0 || res.stdout != plain.stdout || !strings.Contains(res.stderr, "mpitrace: kokkos_mpi links Kokkos: its kernels and regions are recorded too (--kokkos=false turns this off)\n") {
				t.Fatalf("record (Kokkos found): exit %d, stdout %q\n%s", res.code, res.stdout, res.stderr)
			}
			for _, l := range readKokkos(t, out) {
				if d := diffTree(l.tree, kokkosMPITree()); d != "" {
					t.Errorf("Kokkos found: rank %d:%s", l.rank, d)
				}
			}

			// --kokkos=false: the MPI calls, nothing of Kokkos.
			out = filepath.Join(dir, "off")
			res = record(t, out, []string{"--kokkos=false"}, m.launch(2, bin)...)
			if res.code != 0 || res.stdout != plain.stdout || strings.Contains(res.stderr, "links Kokkos") {
				t.Fatalf("record --kokkos=false: exit %d, stdout %q\n%s", res.code, res.stdout, res.stderr)
			}
			for _, l := range readKokkos(t, out) {
				if l.kokko != 0 || len(l.mpi) != 6 {
					t.Errorf("--kokkos=false: rank %d: %d Kokkos events, MPI calls %v", l.rank, l.kokko, l.mpi)
				}
			}

			// Kokkos initialized before MPI_Init, finalized after
			// MPI_Finalize: its initialisation's events wait for the log.
			out = filepath.Join(dir, "first")
			res = record(t, out, []string{"--kokkos"}, m.launch(2, bin, "kokkos-first")...)
			if res.code != 0 || res.stdout != plain.stdout {
				t.Fatalf("kokkos-first: exit %d, stdout %q, want %q\n%s", res.code, res.stdout, plain.stdout, res.stderr)
			}
			for _, l := range readKokkos(t, out) {
				if d := diffTree(l.tree, kokkosMPITree()); d != "" {
					t.Errorf("kokkos-first: rank %d:%s", l.rank, d)
				}
				if l.end == nil || l.end.Reason != spec.EndFinalize || len(l.flags) != 0 {
					t.Errorf("kokkos-first: rank %d: end %+v, end flags %v; want reason finalize, no flags", l.rank, l.end, l.flags)
				}
				checkClean(t, l)
			}

			// Kokkos finalized after MPI_Finalize (a ScopeGuard).
			late := run(t, dir, m.launch(2, bin, "late-finalize")...)
			out = filepath.Join(dir, "late")
			res = record(t, out, []string{"--kokkos"}, m.launch(2, bin, "late-finalize")...)
			if late.code != 0 || res.code != 0 || res.stdout != late.stdout || !strings.Contains(res.stdout, "after MPI_Finalize") {
				t.Fatalf("late-finalize: exit %d (%d without the recorder), stdout %q, want %q\n%s", res.code, late.code, res.stdout, late.stdout, res.stderr)
			}
			for _, l := range readKokkos(t, out) {
				want := kokkosMPITree()
				for _, k := range []string{"A:c", "K1:Kokkos::View::initialization [c]", "K1:after-mpi", "F:c"} {
					want[k] = 1
				}
				if d := diffTree(l.tree, want); d != "" {
					t.Errorf("late-finalize: rank %d:%s", l.rank, d)
				}
				if l.end == nil || l.end.Reason != spec.EndFinalize || len(l.flags) != 0 {
					t.Errorf("late-finalize: rank %d: end %+v, end flags %v; want reason finalize, no flags", l.rank, l.end, l.flags)
				}
				if n := len(l.seq); n < 5 || !reflect.DeepEqual(l.seq[n-5:], []string{"MPI_Finalize", "A:c", "K1:Kokkos::View::initialization [c]", "K1:after-mpi", "F:c"}) {
					t.Errorf("late-finalize: rank %d ends with %v; want MPI_Finalize, then c's allocation, kernels and free", l.rank, l.seq[max(0, n-5):])
				}
				checkAllocs(t, l)
				checkClean(t, l)
			}
		})
	}
}

// A Kokkos program without MPI is recorded as one rank by the recorder
// without MPI; its output is its own. Another Kokkos tool named in the
// environment gives way to the recorder, in one warning line.
func TestKokkosSerial(t *testing.T) {
	bin := compileKokkos(t, "g++", "kokkos_serial")
	dir := t.TempDir()
	plain := run(t, dir, bin)
	if plain.code != 0 || plain.stdout != "sum 1501500\n" {
		t.Fatalf("without the recorder: exit %d, stdout %q", plain.code, plain.stdout)
	}
	out := filepath.Join(dir, "traces")
	res := record(t, out, []string{"--kokkos"}, bin)
	if res.code != 0 || res.stdout != plain.stdout {
		t.Fatalf("record --kokkos: exit %d, stdout %q\n%s", res.code, res.stdout, res.stderr)
	}
	logs := readKokkos(t, out)
	if len(logs) != 1 || logs[0].size != 1 || logs[0].rank != 0 {
		t.Fatalf("%d logs; want one, rank 0 of 1", len(logs))
	}
	l := logs[0]
	want := map[string]int{
		"A:a": 1, "A:b": 1, "F:a": 1, "F:b": 1,
		"K1:Kokkos::View::initialization [a]": 1, "K1:Kokkos::View::initialization [b]": 1,
		"R:step": 3, "R:step/K1:fill": 3, "R:step/R:reduce": 3, "R:step/R:reduce/K2:sum": 3, "R:step/C:b<-a": 3,
		"R:step/R:reduce/K2:sum/A:Kokkos::Serial::scratch_mem": 1,
	}
	if d := diffTree(l.tree, want); d != "" {
		t.Errorf("rank 0:%s", d)
	}
	if len(l.mpi) != 0 || len(l.flags) != 0 || l.end == nil || l.end.Reason != spec.EndExit {
		t.Errorf("MPI calls %v, end flags %v, end %+v; want none, none, reason exit", l.mpi, l.flags, l.end)
	}
	checkAllocs(t, l)
	checkClean(t, l)
	// regions: the tree of the one rank; no critical path without MPI.
	tree := regionsTree(t, out)
	if n := tree.nodes["step/reduce/sum"]; n == nil || n.Kind != "reduce" || n.Calls != 3 || len(tree.nodes) != 7 {
		t.Errorf("regions: %v", tree.nodes)
	}
	if res := run(t, dir, mpitraceBin, "regions", out); res.code != 0 || !strings.Contains(res.stdout, "No critical path") {
		t.Errorf("regions without MPI: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}

	// A tool named on the program's command line: Kokkos refuses a second
	// one, so record leaves Kokkos alone, in one line, and --kokkos is a
	// usage error.
	tool := filepath.Join(dir, "null_tool.so")
	src, _ := filepath.Abs(filepath.Join("..", "..", "bench", "programs", "kokkos_null_tool.c"))
	if b, err := exec.Command("cc", "-shared", "-fPIC", "-o", tool, src).CombinedOutput(); err != nil {
		t.Fatalf("compiling the null tool: %v\n%s", err, b)
	}
	res = record(t, filepath.Join(dir, "own"), nil, bin, "--kokkos-tools-library="+tool)
	if res.code != 0 || res.stdout != plain.stdout || !strings.Contains(res.stderr, "names its own Kokkos tool (--kokkos-tools-library="+tool+"): its kernels are not recorded") {
		t.Errorf("record with the program's own tool: exit %d, stdout %q\n%s", res.code, res.stdout, res.stderr)
	}
	res = record(t, filepath.Join(dir, "own2"), []string{"--kokkos"}, bin, "--kokkos-tools-library="+tool)
	if res.code != 2 || !strings.Contains(res.stderr, "--kokkos: the command line names its own Kokkos tool") {
		t.Errorf("record --kokkos with the program's own tool: exit %d\n%s", res.code, res.stderr)
	}

	// Another Kokkos tool in the environment: replaced, in one line.
	out = filepath.Join(dir, "replaced")
	other := "/nonexistent/libkp_kernel_timer.so"
	res = runEnv(t, dir, []string{"KOKKOS_PROFILE_LIBRARY=" + other, "KOKKOS_TOOLS_LIBS=" + other},
		mpitraceBin, "record", "-o", out, "--", bin)
	warn := "mpitrace: warning: --kokkos: the recorder replaces the Kokkos tool of your environment (KOKKOS_TOOLS_LIBS=" + other + ", KOKKOS_PROFILE_LIBRARY=" + other + ") for this run\n"
	if res.code != 0 || res.stdout != plain.stdout || !strings.Contains(res.stderr, warn) {
		t.Fatalf("record with another tool: exit %d, stdout %q\n%s", res.code, res.stdout, res.stderr)
	}
	if logs := readKokkos(t, out); len(logs) != 1 {
		t.Errorf("record with another tool: %d logs, want 1", len(logs))
	} else if d := diffTree(logs[0].tree, want); d != "" {
		t.Errorf("record with another tool:%s", d)
	}
}

// checkClean: the log reads without a diagnostic, and its end record
// counts every event in it.
func checkClean(t *testing.T, l *kokkosLog) {
	t.Helper()
	if len(l.diags) != 0 {
		t.Errorf("rank %d: %v", l.rank, l.diags)
	}
}

// checkKokkosRegions: mpitrace regions shows kokkos_mpi's tree over its 2
// ranks (Kokkos 3.4 names the host space "Host"), the unlabelled functor
// by its type's readable name, the Allreduce's time inside region
// "reduce"; critpath attributes the path's computation to region "iteration".
// iterationRow is region "iteration"'s row in critpath's table of the
// path in regions: at the top, some of the path in it.
var iterationRow = regexp.MustCompile(`(?m)^\s+iteration\s+region\s+0\s+[0-9.]+ us\s`)

func checkKokkosRegions(t *testing.T, dir string) {
	t.Helper()
	tree := regionsTree(t, dir)
	for path, w := range map[string]struct {
		kind  string
		calls uint64
	}{
		"iteration": {"region", 6}, "iteration/init": {"for", 6}, "iteration/Square": {"for", 6},
		"iteration/reduce": {"region", 6}, "iteration/reduce/norm": {"reduce", 6},
		"iteration/prefix": {"scan", 6}, "iteration/deep_copy Host:b <- Host:a": {"copy", 6},
	} {
		n, ok := tree.nodes[path]
		if !ok || n.Kind != w.kind || n.Calls != w.calls || n.Ranks != 2 {
			t.Errorf("regions: %s: %+v (present %v), want %s with %d calls on 2 ranks", path, n, ok, w.kind, w.calls)
		}
	}
	if n := tree.nodes["iteration/reduce"]; n == nil || n.MPINs <= 0 || tree.nodes["iteration/init"].MPINs != 0 {
		t.Errorf("regions: MPI time in reduce %+v, in init %+v", n, tree.nodes["iteration/init"])
	}
	// The path's share in the regions lists region "iteration" (which node
	// holds the most of the path depends on the run's times: on a loaded
	// machine the first kernel, View a's initialization, took more).
	res := run(t, dir, mpitraceBin, "critpath", dir, "-o", filepath.Join(t.TempDir(), "critPath.out"))
	if res.code != 0 || !strings.Contains(res.stdout, "\nin regions and kernels: ") || !iterationRow.MatchString(res.stdout) {
		t.Errorf("critpath: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}
