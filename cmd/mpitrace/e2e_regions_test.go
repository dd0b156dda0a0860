package main_test

// End-to-end tests of the named regions of the source-level API
// (mpitrace_region_push/pop of recorder/c/mpitrace.h and the Fortran module
// recorder/c/mpitrace.f90) in MPI programs, with both MPIs.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// readSequences reads every rank of a trace directory into one line per
// event and thread: the event's kind and its string-valued fields by name
// (a call as "MPI_Allreduce", a region as "RegionBegin step"), its other
// fields as name=value; clock synchronisations are left out. The logs must
// read without a diagnostic and end with an end record of a normal end. keep chooses
// the kinds to list (nil: all).
func readSequences(t *testing.T, dir string, keep func(spec.Kind) bool) map[int]map[int][]string {
	t.Helper()
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatalf("opening %s: %v", dir, err)
	}
	out := map[int]map[int][]string{}
	for _, f := range tr.Files {
		r, err := tr.OpenRank(f.Rank)
		if err != nil {
			t.Fatalf("rank %d: %v", f.Rank, err)
		}
		threads := map[int][]string{}
		for r.Next() {
			ev := r.Event()
			if ev.Kind == spec.ClockSync || ev.Kind == spec.SiteDef || ev.Kind == spec.Map || (keep != nil && !keep(ev.Kind)) {
				continue
			}
			var b strings.Builder
			if spec.Kinds[ev.Kind].IsCall {
				name, _ := r.Strings().Lookup(ev.Fn())
				b.WriteString(name)
			} else {
				b.WriteString(ev.Name())
				for _, fl := range spec.Kinds[ev.Kind].Fields {
					switch {
					case fl == spec.Gap:
					case spec.Fields[fl].Str:
						s, ok := r.Strings().Lookup(uint64(ev.Get(fl)))
						if !ok {
							t.Fatalf("rank %d: %s.%s id %d has no string", f.Rank, ev.Name(), spec.Fields[fl].Name, ev.Get(fl))
						}
						fmt.Fprintf(&b, " %s", s)
					default:
						fmt.Fprintf(&b, " %s=%d", spec.Fields[fl].Name, ev.Get(fl))
					}
				}
			}
			threads[ev.Thread] = append(threads[ev.Thread], b.String())
		}
		if err := r.Err(); err != nil {
			t.Fatalf("rank %d: reading: %v", f.Rank, err)
		}
		if d := r.Diagnostics(); d.Len() > 0 {
			t.Errorf("rank %d: diagnostics %v", f.Rank, diagCodes(d))
		}
		if e := r.End(); e == nil || e.Reason != spec.EndFinalize && e.Reason != spec.EndExit {
			t.Errorf("rank %d: end record %+v, want one for a normal end", f.Rank, e)
		}
		r.Close()
		out[f.Rank] = threads
	}
	return out
}

// recordSameOutput records argv with the flags and checks that it ran as
// it runs without the recorder: exit 0 and the same lines of output. It
// returns the trace directory.
func recordSameOutput(t *testing.T, flags []string, argv ...string) string {
	t.Helper()
	plain := run(t, t.TempDir(), argv...)
	dir := filepath.Join(t.TempDir(), "trace")
	res := record(t, dir, flags, argv...)
	if res.code != 0 || plain.code != 0 {
		t.Fatalf("record: exit %d, plain run: exit %d\n%s%s", res.code, plain.code, res.stderr, plain.stderr)
	}
	if got, want := sortedLines(res.stdout), sortedLines(plain.stdout); !slices.Equal(got, want) || len(got) == 0 {
		t.Errorf("output with the recorder %q, without %q", got, want)
	}
	return dir
}

// regionNode is a node of `mpitrace regions --json`.
type regionNode struct {
	Name     string        `json:"name"`
	Kind     string        `json:"kind"`
	Calls    uint64        `json:"calls"`
	Ranks    int           `json:"ranks"`
	MPINs    int64         `json:"mpi_ns"`
	Children []*regionNode `json:"children"`
}

// regionTree is `mpitrace regions --json` of a trace: its nodes by path
// of names ("main/step").
type regionTree struct {
	nodes     map[string]*regionNode
	unmatched int
	// unbalanced: every count of the unbalanced block (unmatched pops,
	// unclosed regions, ...) by name.
	unbalanced map[string]int
}

func regionsTree(t *testing.T, dir string) regionTree {
	t.Helper()
	res := run(t, dir, mpitraceBin, "regions", dir, "--json")
	var doc struct {
		Nodes      []*regionNode  `json:"nodes"`
		Unbalanced map[string]int `json:"unbalanced"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &doc); res.code != 0 || err != nil {
		t.Fatalf("mpitrace regions --json: exit %d, %v\n%s", res.code, err, res.stderr)
	}
	tr := regionTree{nodes: map[string]*regionNode{}, unmatched: doc.Unbalanced["unmatched"], unbalanced: doc.Unbalanced}
	var walk func(prefix string, ns []*regionNode)
	walk = func(prefix string, ns []*regionNode) {
		for _, n := range ns {
			tr.nodes[prefix+n.Name] = n
			walk(prefix+n.Name+"/", n.Children)
		}
	}
	walk("", doc.Nodes)
	return tr
}

// regionsOrColl keeps the region events and the MPI_Allreduce calls'
// kind (Coll).
func regionsOrColl(k spec.Kind) bool {
	return k == spec.RegionBegin || k == spec.RegionEnd || k == spec.Coll
}

// TestRegionsAPI: regions.c (C, two threads) and regions.f90 (the Fortran
// module) under both MPIs with 2 ranks: every push and pop lands in the
// log on its thread, nested as the program nests them, with the MPI calls
// inside; a pop too many is recorded as unmatched; the program prints the
// same with and without the recorder.
func TestRegionsAPI(t *testing.T) {
	inc, _ := filepath.Abs(filepath.Join("..", "..", "recorder", "c"))
	for _, m := range mpis {
		t.Run(m.name+"/c", func(t *testing.T) {
			m.require(t)
			bin := compileWith(t, m.cc, "regions")
			dir := recordSameOutput(t, nil, m.launch(2, bin)...)
			step := []string{"RegionBegin step", "RegionBegin compute", "RegionEnd flags=0",
				"RegionBegin exchange", "MPI_Allreduce", "RegionEnd flags=0", "RegionEnd flags=0"}
			want0 := []string{"RegionBegin main loop"}
			for i := 0; i < 4; i++ {
				want0 = append(want0, step...)
			}
			want0 = append(want0, "RegionEnd flags=0", "RegionEnd flags=2")
			var want1 []string
			for i := 0; i < 3; i++ {
				want1 = append(want1, "RegionBegin helper", "RegionEnd flags=0")
			}
			seqs := readSequences(t, dir, regionsOrColl)
			if len(seqs) != 2 {
				t.Fatalf("%d rank logs, want 2", len(seqs))
			}
			for rank, threads := range seqs {
				if got := threads[0]; !slices.Equal(got, want0) {
					t.Errorf("rank %d main thread:\n%s\nwant\n%s", rank, strings.Join(got, "\n"), strings.Join(want0, "\n"))
				}
				if got := threads[1]; !slices.Equal(got, want1) {
					t.Errorf("rank %d helper thread: %q, want %q", rank, got, want1)
				}
			}
			// mpitrace regions: the tree over both ranks, the MPI time in
			// "exchange" only, the pops too many counted.
			tree := regionsTree(t, dir)
			for path, calls := range map[string]uint64{"main loop": 2, "main loop/step": 8, "main loop/step/compute": 8,
				"main loop/step/exchange": 8, "helper": 6} {
				if n, ok := tree.nodes[path]; !ok || n.Calls != calls || n.Ranks != 2 || n.Kind != "region" {
					t.Errorf("regions: %s: %+v (present %v), want %d calls on 2 ranks", path, n, ok, calls)
				}
			}
			// A region around MPI_Init ... MPI_Finalize, and one after: the
			// log's end record waits for them (readSequences fails on data
			// after the end record).
			dir = recordSameOutput(t, nil, m.launch(2, bin, "around")...)
			wantAround := append([]string{"RegionBegin whole run"}, want0[:len(want0)-1]...) // no pop too many
			wantAround = append(wantAround, "RegionEnd flags=0", "RegionBegin after", "RegionEnd flags=0")
			for rank, threads := range readSequences(t, dir, regionsOrColl) {
				if got := threads[0]; !slices.Equal(got, wantAround) {
					t.Errorf("around: rank %d main thread:\n%s\nwant\n%s", rank, strings.Join(got, "\n"), strings.Join(wantAround, "\n"))
				}
			}
			if tree.nodes["main loop/step/exchange"].MPINs <= 0 || tree.nodes["main loop/step/compute"].MPINs != 0 || tree.unmatched != 2 || len(tree.nodes) != 5 {
				t.Errorf("regions: %+v, %d unmatched pops", tree.nodes, tree.unmatched)
			}
		})
		t.Run(m.name+"/fortran", func(t *testing.T) {
			m.require(t)
			if _, err := exec.LookPath(m.fortCC); err != nil {
				t.Fatalf("%s is not installed: run 'make deps' (apt-get install gfortran)", m.fortCC)
			}
			src, _ := filepath.Abs(filepath.Join("..", "..", "fixtures", "programs", "regions.f90"))
			bdir := t.TempDir()
			bin := filepath.Join(bdir, "regions-f")
			cmd := exec.Command(m.fortCC, "-fallow-argument-mismatch", "-w", "-J", bdir, "-o", bin,
				filepath.Join(inc, "mpitrace.f90"), src)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("compiling regions.f90 with %s: %v\n%s", m.fortCC, err, b)
			}
			dir := recordSameOutput(t, nil, m.launch(2, bin)...)
			// The padded name loses its trailing blanks.
			want := []string{"RegionBegin fortran loop"}
			for i := 0; i < 3; i++ {
				want = append(want, "RegionBegin step", "MPI_Allreduce", "RegionEnd flags=0")
			}
			want = append(want, "RegionEnd flags=0")
			for rank, threads := range readSequences(t, dir, regionsOrColl) {
				if got := threads[0]; !slices.Equal(got, want) || len(threads) != 1 {
					t.Errorf("rank %d: %q (%d threads), want %q", rank, got, len(threads), want)
				}
			}
		})
	}
}

// TestRecorderInclude: `mpitrace recorder include` prints a directory with
// the embedded header and Fortran module, as they are in the sources.
func TestRecorderInclude(t *testing.T) {
	res := run(t, t.TempDir(), mpitraceBin, "recorder", "include")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	dir := strings.TrimSpace(res.stdout)
	for _, n := range []string{"mpitrace.h", "mpitrace.f90"} {
		got, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(filepath.Join("..", "..", "recorder", "c", n))
		if string(got) != string(want) {
			t.Errorf("%s in %s differs from recorder/c/%s", n, dir, n)
		}
	}
}

// TestRegionsSignalHandler: regions pushed by a signal handler (signals
// sent without pause by another thread, and a profiling timer), while the
// program pushes 200,000 regions of distinct names (each name's first use
// takes the recorder's lock of names, and the buffer is written many
// times): the program neither hangs nor changes, and every region nests.
// A signal that lands while the recorder is pushing or popping the
// program's region must leave that region whole (it once took the frame's
// slot: the region's end was lost and every later region nested in it).
func TestRegionsSignalHandler(t *testing.T) {
	bin := compileWith(t, "cc", "regions_signal")
	dir := filepath.Join(t.TempDir(), "trace")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpitraceBin, "record", "-o", dir, "--", bin)
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatal("the recorded program hung (2 minutes)")
	}
	if err != nil || string(out) != "done: 200000 regions\n" {
		t.Fatalf("record: %v, output %q", err, out)
	}
	tree := regionsTree(t, dir)
	top, handler := 0, 0
	for path, n := range tree.nodes {
		switch {
		case !strings.Contains(path, "/") && strings.HasPrefix(path, "r"):
			top++
		case strings.HasSuffix(path, "in handler"):
			handler += int(n.Calls)
		}
	}
	unbalanced := 0
	for _, n := range tree.unbalanced {
		unbalanced += n
	}
	if top != 200000 || unbalanced != 0 || handler == 0 {
		t.Errorf("%d top-level regions r*, want 200000; unbalanced %v; %d pushed by the handler (want some)", top, tree.unbalanced, handler)
	}
}
