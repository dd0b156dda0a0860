package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/internal/golden"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// kokkosTrace writes 2 ranks of a Kokkos-like program: in region "main",
// 3 time steps (region "timestep"), each an axpy (parallel_for: 20 us on
// rank 0, 40 us on rank 1), a dot (parallel_reduce, 5 us), an
// MPI_Allreduce, a deep copy of x into halo and a message from rank 0 to
// rank 1; then a profile section "output", allocations, metadata, profile
// events and DualView activity.
func kokkosTrace(t *testing.T) string {
	t.Helper()
	b := testgen.New(2)
	for r := 0; r < 2; r++ {
		rk := b.Rank(r)
		rk.Call("MPI_Init")
		rk.Meta("kokkos.version", "4.2.0").Meta("kokkos.tool", "mpitrace")
		if r == 1 {
			rk.Meta("node.kind", "gpu")
		}
		rk.Compute(1_000).Alloc("HostSpace", "x", 80_000).Alloc("HostSpace", "halo", 4096)
		rk.Kernel(spec.KernelFor, "Kokkos::View::initialization [x]", 3_000)
		rk.RegionBegin("main")
		for step := 0; step < 3; step++ {
			rk.Compute(500).RegionBegin("timestep")
			rk.Compute(1_000).Kernel(spec.KernelFor, "axpy", int64(20_000*(1+r)))
			rk.Compute(500).Kernel(spec.KernelReduce, "dot", 5_000)
			rk.Compute(200).Allreduce(8)
			rk.Compute(300).CopyBegin("HostSpace", "halo", "HostSpace", "x", 4096).Compute(2_000).CopyEnd(0)
			if r == 0 {
				rk.Compute(100).Send(1, int64(step), 4096)
			} else {
				rk.Compute(100).Recv(0, int64(step), 4096)
			}
			rk.Compute(100).RegionEnd(0).Mark("step")
		}
		rk.RegionEnd(0)
		rk.Compute(500).SectionBegin(1, "output").Compute(int64(3_000 + 1_000*r)).SectionEnd(1)
		if r == 1 {
			rk.Alloc("HostSpace", "tmp", 1<<20).Compute(10).Free("HostSpace", "tmp", 1<<20)
		}
		rk.DualView("dv", spec.DualViewModify).DualView("dv", spec.DualViewDevice)
		rk.Free("HostSpace", "halo", 4096)
		rk.Compute(100).Call("MPI_Finalize")
	}
	return saveTrace(t, b)
}

func checkRegionsGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "regions", name), got, *updateLoops)
}

func TestRegionsGolden(t *testing.T) {
	dir := kokkosTrace(t)
	data := []byte(checkGoldens(t, "regions", "regions", dir, []goldenCase{
		{"kokkos2.regions.txt", nil},
		{"kokkos2.regions-by-rank.txt", []string{"--by", "rank"}},
		{"kokkos2.regions.json", []string{"--json"}},
	}))
	type node struct {
		Name      string  `json:"name"`
		Kind      string  `json:"kind"`
		Calls     int     `json:"calls"`
		Ranks     int     `json:"ranks"`
		Total     int64   `json:"total_ns"`
		Mean      float64 `json:"mean_ns"`
		Min       int64   `json:"min_ns"`
		Max       int64   `json:"max_ns"`
		MaxRank   int     `json:"max_rank"`
		Imbalance float64 `json:"imbalance"`
		Self      int64   `json:"self_ns"`
		MPI       int64   `json:"mpi_ns"`
		Bytes     int64   `json:"bytes"`
		OnPath    bool    `json:"on_critical_path"`
		PerRank   []struct {
			Rank  int   `json:"rank"`
			Total int64 `json:"total_ns"`
		} `json:"per_rank"`
		Children []json.RawMessage `json:"children"`
	}
	var doc struct {
		Ranks  int               `json:"ranks"`
		Nodes  []json.RawMessage `json:"nodes"`
		Memory []struct {
			Space string  `json:"space"`
			Max   int64   `json:"high_water_max_bytes"`
			Rank  int     `json:"max_rank"`
			Mean  float64 `json:"high_water_mean_bytes"`
		} `json:"memory"`
		Meta []struct {
			Key    string `json:"key"`
			Values []struct {
				Value string `json:"value"`
				Ranks string `json:"ranks"`
			} `json:"values"`
		} `json:"meta"`
		CriticalPath struct {
			Computed bool `json:"computed"`
		} `json:"critical_path"`
		Diagnostics struct {
			Counts map[string]int `json:"counts"`
		} `json:"diagnostics"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	parse := func(raw json.RawMessage) node {
		var n node
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if doc.Ranks != 2 || len(doc.Nodes) != 3 || !doc.CriticalPath.Computed {
		t.Fatalf("%d ranks, %d roots, path %v", doc.Ranks, len(doc.Nodes), doc.CriticalPath.Computed)
	}
	main := parse(doc.Nodes[0])
	if main.Name != "main" || main.Kind != "region" || main.Calls != 2 || !main.OnPath || len(main.Children) != 1 {
		t.Fatalf("main %+v", main)
	}
	step := parse(main.Children[0])
	if step.Name != "timestep" || step.Calls != 6 || step.MPI <= 0 || len(step.Children) != 3 {
		t.Fatalf("timestep %+v", step)
	}
	axpy, dot, cp := parse(step.Children[0]), parse(step.Children[1]), parse(step.Children[2])
	if axpy.Name != "axpy" || axpy.Kind != "for" || axpy.Calls != 6 || axpy.Total != 180_000 || axpy.Min != 60_000 || axpy.Max != 120_000 ||
		axpy.MaxRank != 1 || math.Abs(axpy.Imbalance-4.0/3) > 1e-12 || axpy.Self != axpy.Total || !axpy.OnPath || len(axpy.PerRank) != 2 {
		t.Errorf("axpy %+v", axpy)
	}
	if dot.Kind != "reduce" || dot.Total != 30_000 || dot.Imbalance != 1 {
		t.Errorf("dot %+v", dot)
	}
	if cp.Name != "deep_copy HostSpace:halo <- HostSpace:x" || cp.Kind != "copy" || cp.Bytes != 6*4096 || cp.Total != 12_000 {
		t.Errorf("copy %+v", cp)
	}
	if step.Self != step.Total-axpy.Total-dot.Total-cp.Total {
		t.Errorf("timestep self %d of %d", step.Self, step.Total)
	}
	output, init := parse(doc.Nodes[1]), parse(doc.Nodes[2])
	if init.Name != "Kokkos::View::initialization [x]" || output.Name != "output" || output.Kind != "section" || output.Total != 7_000 {
		t.Errorf("roots %+v %+v", init, output)
	}
	if len(doc.Memory) != 1 || doc.Memory[0].Max != 1<<20+84_096 || doc.Memory[0].Rank != 1 || doc.Memory[0].Mean != (84_096*2+1<<20)/2.0 {
		t.Errorf("memory %+v", doc.Memory)
	}
	if len(doc.Meta) != 3 || doc.Meta[2].Key != "node.kind" || doc.Meta[2].Values[0].Ranks != "1" || doc.Meta[0].Values[0].Ranks != "0-1" {
		t.Errorf("meta %+v", doc.Meta)
	}
	if doc.Diagnostics.Counts["error"] != 0 {
		t.Errorf("diagnostics %+v", doc.Diagnostics)
	}
}

// A trace without region events: one line that says what records them,
// exit 1.
func TestRegionsNone(t *testing.T) {
	dir := writeTrace(t)
	for _, args := range [][]string{{"regions", dir}, {"regions", dir, "--json"}} {
		code, out, errs := runCLI(t, args...)
		if code != ExitError || out != "" || lines(errs) != 1 || !strings.Contains(errs, "no region, kernel or allocation events") ||
			!strings.Contains(errs, "'mpitrace record --kokkos'") || !strings.Contains(errs, "mpitrace_region_push") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}

// A Kokkos program without MPI: the tree, and a note that there is no
// critical path; critpath itself says there is none.
func TestRegionsWithoutMPI(t *testing.T) {
	b := testgen.New(1)
	b.Meta = []tracefmt.KeyValue{{Key: tracefmt.KeyMPILibrary}, {Key: tracefmt.KeyMPIVersion}}
	rk := b.Rank(0)
	rk.RegionBegin("solve").Compute(100).Kernel(spec.KernelFor, "k", 1_000).Compute(50).RegionEnd(0)
	dir := saveTrace(t, b)
	code, out, errs := runCLI(t, "regions", dir)
	if code != 0 || errs != "" || !strings.Contains(out, "No critical path: a program without MPI") || strings.Contains(out, "*") ||
		!strings.Contains(out, "  solve  region      1  1.150 us") {
		t.Fatalf("regions: %d %q\n%s", code, errs, out)
	}
	code, out, _ = runCLI(t, "regions", dir, "--json")
	var doc struct {
		CriticalPath struct {
			Computed bool   `json:"computed"`
			Note     string `json:"note"`
		} `json:"critical_path"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || doc.CriticalPath.Computed || doc.CriticalPath.Note == "" {
		t.Errorf("--json: %d %v %+v", code, err, doc)
	}
	code, _, errs = runCLI(t, "critpath", dir, "-o", filepath.Join(t.TempDir(), "out"))
	if code != ExitError || !strings.Contains(errs, "a program without MPI") {
		t.Errorf("critpath: %d %q", code, errs)
	}
}

// Region events that do not nest: diagnostics on stderr, exit 1 for the
// errors, the rest analysed; bad flags are usage errors.
func TestRegionsUnbalanced(t *testing.T) {
	b := testgen.New(1)
	rk := b.Rank(0)
	rk.Call("MPI_Init")
	rk.KernelEnd(0)
	rk.RegionEnd(spec.EndUnmatched)
	rk.RegionBegin("a").Compute(10).RegionEnd(spec.EndUnwound)
	rk.RegionBegin("open")
	rk.Call("MPI_Finalize")
	dir := saveTrace(t, b)
	code, out, errs := runCLI(t, "regions", dir)
	if code != ExitError || !strings.Contains(errs, "[region_end_unopened]") || !strings.Contains(errs, "[region_unmatched]") ||
		!strings.Contains(errs, "[region_unclosed]") || strings.Contains(errs, "[region_unwound]") ||
		!strings.Contains(out, "Unbalanced region events: 1 ends made by the recorder (unwound), 1 pops without a region, 1 ends with nothing open") {
		t.Fatalf("regions: %d\n%s\n%s", code, out, errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"regions", dir, "--by", "thread"}, "--by"},
		{[]string{"regions", dir, "-o", ""}, "-o needs a file name"},
		{[]string{"regions", dir, dir}, "accepts at most 1 arg"},
	} {
		if code, _, errs := runCLI(t, c.args...); code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: %d %q", c.args, code, errs)
		}
	}
	code, _, errs = runCLI(t, "regions", filepath.Join(t.TempDir(), "none"))
	if code != ExitError || lines(errs) != 1 || !strings.Contains(errs, "no such trace directory") {
		t.Errorf("missing directory: %d %q", code, errs)
	}
}

func TestRegionsFlags(t *testing.T) {
	s := &Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
	var got *regionsOptions
	cmd := newRegionsCmd(s, func(_ context.Context, o *regionsOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"run3", "--json", "--by", "rank", "-o", "r.json", "--strict"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Dir != "run3" || !got.JSON || got.By != "rank" || got.Out != "r.json" || !got.Strict {
		t.Fatalf("regions options: %+v", got)
	}
}

// critpath names the regions and kernels its path's computation ran in,
// after the summary a trace without them gets.
func TestCritpathRegions(t *testing.T) {
	dir := kokkosTrace(t)
	out := filepath.Join(t.TempDir(), "critPath.out")
	code, sum, errs := runCLI(t, "critpath", dir, "-o", out)
	if code != 0 || errs != "" {
		t.Fatalf("critpath: %d %q", code, errs)
	}
	checkRegionsGolden(t, "kokkos2.critpath.txt", strings.NewReplacer(dir, "TRACEDIR", out, "OUT").Replace(sum))
	if !strings.Contains(sum, `of the path is in region "main", `) || !strings.Contains(sum, `in its region "timestep", `) ||
		!strings.Contains(sum, `in its kernel "axpy" (parallel_for)`) {
		t.Errorf("headline:\n%s", sum)
	}
	code, js, _ := runCLI(t, "critpath", dir, "--json")
	var doc struct {
		Summary struct {
			Computation float64 `json:"computation_ns"`
			Regions     *struct {
				In    float64    `json:"in_regions_ns"`
				Nodes []pathNode `json:"nodes"`
			} `json:"regions"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(js), &doc); code != 0 || err != nil {
		t.Fatalf("critpath --json: %d %v", code, err)
	}
	r := doc.Summary.Regions
	if r == nil || len(r.Nodes) < 3 || r.In <= 0 || r.In > doc.Summary.Computation {
		t.Fatalf("regions %+v", r)
	}
	byPath := map[string]int{}
	for i, n := range r.Nodes {
		byPath[strings.Join(n.Path, "/")] = i
	}
	m, s, a := r.Nodes[byPath["main"]], r.Nodes[byPath["main/timestep"]], r.Nodes[byPath["main/timestep/axpy"]]
	// The path runs through rank 1's axpy, 40 us per step.
	if a.Kind != "for" || a.Depth != 2 || a.Ns != 3*40_000 || a.Self != a.Ns || s.Ns < a.Ns || m.Ns < s.Ns || s.Self != s.Ns-childrenNs(r.Nodes, "main/timestep/") {
		t.Errorf("main %+v\ntimestep %+v\naxpy %+v", m, s, a)
	}
}

// pathNode is a node of critpath's summary.regions.
type pathNode struct {
	Kind  string   `json:"kind"`
	Name  string   `json:"name"`
	Path  []string `json:"path"`
	Depth int      `json:"depth"`
	Ns    float64  `json:"ns"`
	Self  float64  `json:"self_ns"`
}

// childrenNs sums the path time of the nodes right under prefix.
func childrenNs(nodes []pathNode, prefix string) float64 {
	var ns float64
	for _, n := range nodes {
		p := strings.Join(n.Path, "/")
		if strings.HasPrefix(p, prefix) && !strings.Contains(p[len(prefix):], "/") {
			ns += n.Ns
		}
	}
	return ns
}

// A damaged trace: what the logs kept is analysed, the loss is said on
// stderr and in the output, --strict exits 3; a file that is no trace at
// all is one line.
func TestRegionsDamaged(t *testing.T) {
	dir := kokkosTrace(t)
	file := filepath.Join(dir, tracefmt.RankFileName(1))
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data[:len(data)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "regions", dir)
	if code != 0 || !strings.Contains(errs, "data loss") || !strings.Contains(out, "Data lost:") || !strings.Contains(out, "main") {
		t.Errorf("regions on a truncated log: %d\n%s\n%s", code, out, errs)
	}
	if code, _, _ := runCLI(t, "regions", "--strict", dir); code != ExitDataLoss {
		t.Errorf("--strict: %d", code)
	}
	if err := os.WriteFile(file, []byte("not a trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, tracefmt.RankFileName(0)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runCLI(t, "regions", dir)
	if code != ExitError || lines(errs) != 1 {
		t.Errorf("regions on no usable log: %d %q", code, errs)
	}
}

// TestCritpathRegionsBetweenCollectives: a path that runs from one
// collective to the next through the slower rank's kernel is placed by
// that rank's calls of the collectives, so the kernel's whole time counts
// in its region and none is left unplaced.
func TestCritpathRegionsBetweenCollectives(t *testing.T) {
	b := testgen.New(2)
	for r := 0; r < 2; r++ {
		rk := b.Rank(r)
		rk.Call("MPI_Init")
		for step := 0; step < 4; step++ {
			rk.Compute(100).RegionBegin("solve")
			rk.Compute(200).Kernel(spec.KernelFor, "work", int64(10_000*(1+2*r)))
			rk.Compute(300).RegionEnd(0)
			rk.Compute(400).Allreduce(8)
		}
		rk.Compute(100).Call("MPI_Finalize")
	}
	dir := saveTrace(t, b)
	code, js, errs := runCLI(t, "critpath", dir, "--json")
	var doc struct {
		Summary struct {
			Regions *struct {
				Unplaced float64    `json:"unplaced_ns"`
				Nodes    []pathNode `json:"nodes"`
			} `json:"regions"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(js), &doc); code != 0 || err != nil || doc.Summary.Regions == nil {
		t.Fatalf("critpath --json: %d %v %q", code, err, errs)
	}
	r := doc.Summary.Regions
	got := map[string]float64{}
	for _, n := range r.Nodes {
		got[strings.Join(n.Path, "/")] = n.Ns
	}
	// Rank 1's steps: its kernel (30 us) and the 500 ns around it in the
	// region, 4 times, all on the path.
	if r.Unplaced != 0 || got["solve/work"] != 4*30_000 || got["solve"] != 4*30_500 {
		t.Errorf("unplaced %v, nodes %v", r.Unplaced, got)
	}
}
