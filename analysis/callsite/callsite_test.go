package callsite

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// build compiles sources (from testdata) into dir/name with compiler and
// flags, skipping the test when the compiler is absent.
func build(t *testing.T, compiler, dir, name string, flags []string, sources ...string) string {
	t.Helper()
	if _, err := exec.LookPath(compiler); err != nil {
		t.Skipf("%s not installed", compiler)
	}
	out := filepath.Join(dir, name)
	args := append(append([]string{}, flags...), "-o", out)
	for _, s := range sources {
		if strings.HasPrefix(s, "-") { // a flag among the sources: -xc
			args = append(args, s)
			continue
		}
		abs, err := filepath.Abs(filepath.Join("testdata", s))
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, abs)
	}
	cmd := exec.Command(compiler, args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", compiler, strings.Join(args, " "), err, b)
	}
	return out
}

// run runs a test program and returns its sites' return addresses and its
// executable mappings, with build ids.
func run(t *testing.T, exe string) (map[string]uint64, []Mapping) {
	t.Helper()
	out, err := exec.Command(exe).Output()
	if err != nil {
		t.Fatalf("%s: %v", exe, err)
	}
	sites := map[string]uint64{}
	var maps bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "site" {
			a, err := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", exe, sc.Text(), err)
			}
			sites[f[1]] = a
			continue
		}
		maps.WriteString(sc.Text() + "\n")
	}
	ms, err := ParseProcMaps(&maps)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ms {
		if ms[i].BuildID, err = BuildID(ms[i].Path); err != nil {
			t.Fatal(err)
		}
	}
	return sites, ms
}

// lineOf returns the line of testdata/file marked "site: name".
func lineOf(t *testing.T, file, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasSuffix(l, "site: "+name+" */") || strings.HasSuffix(l, "! site: "+name) || strings.HasSuffix(l, "// site: "+name) {
			return i + 1
		}
	}
	t.Fatalf("%s: no marker for site %s", file, name)
	return 0
}

func TestResolveC(t *testing.T) {
	for _, flags := range [][]string{
		{"-g", "-O0"},
		{"-g", "-O2"},
		{"-g", "-O2", "-no-pie"},
		{"-g", "-O2", "-gdwarf-4"},
		{"-g", "-O2", "-fPIE", "-pie", "-gz"}, // compressed debug sections
	} {
		t.Run(strings.Join(flags, ""), func(t *testing.T) {
			dir := t.TempDir()
			exe := build(t, "gcc", dir, "sites", flags, "sites.c")
			sites, maps := run(t, exe)
			r := NewResolver()
			check := func(site string, want ...Frame) {
				t.Helper()
				loc := r.Resolve(maps, sites[site])
				if loc.Problem != "" {
					t.Errorf("%s: problem %q", site, loc.Problem)
				}
				if len(loc.Frames) != len(want) {
					t.Fatalf("%s: got %s (%+v), want %d frames", site, loc, loc.Frames, len(want))
				}
				for i, w := range want {
					g := loc.Frames[i]
					if g.Func != w.Func || filepath.Base(g.File) != w.File || g.Line != w.Line {
						t.Errorf("%s: frame %d = %s %s:%d, want %s %s:%d", site, i, g.Func, g.File, g.Line, w.Func, w.File, w.Line)
					}
				}
			}
			check("main", Frame{"main", "sites.c", lineOf(t, "sites.c", "main")})
			{ // always_inline inlines at -O0 too
				check("inlined",
					Frame{"halo", "sites.c", lineOf(t, "sites.c", "inlined")},
					Frame{"exchange", "sites.c", lineOf(t, "sites.c", "caller")})
				loc := r.Resolve(maps, sites["inlined"])
				want := fmt.Sprintf("sites.c:%d halo < exchange", lineOf(t, "sites.c", "inlined"))
				if loc.String() != want {
					t.Errorf("String() = %q, want %q", loc.String(), want)
				}
				if !strings.HasPrefix(loc.Long(), filepath.Join(mustAbs(t, "testdata"), "sites.c")) {
					t.Errorf("Long() = %q, want the source's full path", loc.Long())
				}
			}
			if p := r.Problems(); len(p) != 0 {
				t.Errorf("problems: %q", p)
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestResolveFortran(t *testing.T) {
	for _, opt := range []string{"-O0", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			dir := t.TempDir()
			exe := build(t, "gfortran", dir, "sites", []string{"-g", opt}, "sites.f90", "rec.c")
			sites, maps := run(t, exe)
			r := NewResolver()
			for site, fn := range map[string]string{"modproc": "halo::exchange", "program": "sites"} {
				loc := r.Resolve(maps, sites[site])
				want := fmt.Sprintf("sites.f90:%d %s", lineOf(t, "sites.f90", site), fn)
				if got := loc.String(); got != want && !strings.HasPrefix(got, want+" <") {
					t.Errorf("%s: got %q, want %q", site, got, want)
				}
			}
		})
	}
}

func TestResolveCXX(t *testing.T) {
	dir := t.TempDir()
	exe := build(t, "g++", dir, "sites", []string{"-g", "-O2"}, "-xc++", "sites.cpp", "-xc", "rec.c")
	sites, maps := run(t, exe)
	r := NewResolver()
	for site, fn := range map[string]string{"method": "halo::Grid::exchange", "function": "halo::update"} {
		loc := r.Resolve(maps, sites[site])
		if want := fmt.Sprintf("sites.cpp:%d %s", lineOf(t, "sites.cpp", site), fn); loc.String() != want {
			t.Errorf("%s: got %q, want %q", site, loc.String(), want)
		}
	}
}

func TestProblems(t *testing.T) {
	if _, err := exec.LookPath("strip"); err != nil {
		t.Skip("strip not installed")
	}
	dir := t.TempDir()
	exe := build(t, "gcc", dir, "sites", []string{"-g", "-O2"}, "sites.c")
	sites, maps := run(t, exe)
	retarget := func(path string) []Mapping {
		ms := append([]Mapping(nil), maps...)
		for i := range ms {
			if ms[i].Path == exe {
				ms[i].Path = path
			}
		}
		return ms
	}

	// A stripped copy: no debug information, the location is an address.
	stripped := filepath.Join(dir, "stripped")
	if b, err := exec.Command("strip", "-o", stripped, exe).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v\n%s", err, b)
	}
	// A rebuilt binary: another build id.
	rebuilt := build(t, "gcc", dir, "rebuilt", []string{"-g", "-O1"}, "sites.c")
	oldID := maps[0].BuildID
	newID, err := BuildID(rebuilt)
	if err != nil {
		t.Fatal(err)
	}
	if oldID == newID {
		t.Fatalf("rebuilt binary has the same build id %s", oldID)
	}
	r := NewResolver()
	for _, c := range []struct {
		path, problem string
	}{
		{stripped, stripped + " has no debug information: rebuild with -g to see file:line"},
		{rebuilt, fmt.Sprintf("%s has changed since the run (build id %s, now %s): rebuild the binary that ran, or point --binary at a copy of it", rebuilt, oldID, newID)},
		{filepath.Join(dir, "gone"), filepath.Join(dir, "gone") + " is missing (it ran from there): point --binary at a copy of it to see its call sites"},
	} {
		for _, site := range []string{"main", "inlined"} {
			loc := r.Resolve(retarget(c.path), sites[site])
			if loc.Problem != c.problem {
				t.Errorf("%s %s: problem %q, want %q", c.path, site, loc.Problem, c.problem)
			}
			if loc.Known() {
				t.Errorf("%s %s: resolved to %s", c.path, site, loc)
			}
			if !strings.HasPrefix(loc.String(), filepath.Base(c.path)+"+0x") {
				t.Errorf("%s %s: String() = %q, want module+offset", c.path, site, loc.String())
			}
		}
	}
	if got := r.Problems(); len(got) != 3 {
		t.Errorf("Problems() = %q, want one line per binary", got)
	}

	// Paths points a recorded binary at a copy.
	cp := filepath.Join(dir, "copy")
	b, _ := os.ReadFile(exe)
	if err := os.WriteFile(cp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	r = NewResolver()
	r.Paths = map[string]string{"gone": cp}
	if loc := r.Resolve(retarget(filepath.Join(dir, "gone")), sites["main"]); loc.FileLine() != fmt.Sprintf("sites.c:%d", lineOf(t, "sites.c", "main")) || loc.Func() != "main" {
		t.Errorf("through Paths: %s (%s)", loc, loc.Problem)
	}

	// Root: the recorded paths are read under it.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, exe), b, 0o755); err != nil {
		t.Fatal(err)
	}
	r = NewResolver()
	r.Root = root
	if loc := r.Resolve(maps, sites["main"]); loc.Func() != "main" || loc.Problem != "" {
		t.Errorf("under Root: %s (%s)", loc, loc.Problem)
	}
	r = NewResolver()
	r.Root = t.TempDir()
	if loc := r.Resolve(maps, sites["main"]); loc.Known() || !strings.Contains(loc.Problem, r.Root+exe+" is missing") {
		t.Errorf("under an empty Root: %s (%s)", loc, loc.Problem)
	}

	// Addresses outside every mapping, and 0.
	if loc := r.Resolve(maps, 1); loc.Problem == "" || loc.Known() {
		t.Errorf("address 1: %+v", loc)
	}
	if loc := r.Resolve(maps, 0); loc.Problem == "" {
		t.Errorf("address 0: %+v", loc)
	}
}

func TestSymbolFallback(t *testing.T) {
	// Without DWARF but with a symbol table, the function is named.
	dir := t.TempDir()
	exe := build(t, "gcc", dir, "sites", []string{"-O0"}, "sites.c")
	sites, maps := run(t, exe)
	r := NewResolver()
	loc := r.Resolve(maps, sites["main"])
	if loc.Func() != "main" || loc.FileLine() != "" {
		t.Errorf("got %s, want main without a line", loc)
	}
	if want := exe + " has no debug information: rebuild with -g to see file:line"; loc.Problem != want {
		t.Errorf("problem %q, want %q", loc.Problem, want)
	}
	if got := loc.String(); got != "main (sites)" {
		t.Errorf("String() = %q", got)
	}
}

func TestSeparateDebugFile(t *testing.T) {
	if _, err := exec.LookPath("objcopy"); err != nil {
		t.Skip("objcopy not installed")
	}
	dir := t.TempDir()
	exe := build(t, "gcc", dir, "sites", []string{"-g", "-O2"}, "sites.c")
	sites, maps := run(t, exe)
	for _, args := range [][]string{
		{"--only-keep-debug", exe, exe + ".debug"},
		{"--strip-debug", "--add-gnu-debuglink=" + exe + ".debug", exe},
	} {
		cmd := exec.Command("objcopy", args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("objcopy %q: %v\n%s", args, err, b)
		}
	}
	r := NewResolver()
	loc := r.Resolve(maps, sites["main"])
	if loc.Problem != "" || loc.FileLine() != fmt.Sprintf("sites.c:%d", lineOf(t, "sites.c", "main")) {
		t.Errorf("through .gnu_debuglink: %s (%q)", loc, loc.Problem)
	}
}

func TestConcurrent(t *testing.T) {
	dir := t.TempDir()
	exe := build(t, "gcc", dir, "sites", []string{"-g", "-O2"}, "sites.c")
	sites, maps := run(t, exe)
	r := NewResolver()
	want := r.Resolve(maps, sites["inlined"]).String()
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := r
			for range 50 {
				if got := r.Resolve(maps, sites["inlined"]).String(); got != want {
					errs <- got
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("concurrent Resolve = %q, want %q", e, want)
	}
}

func TestParseProcMaps(t *testing.T) {
	in := `55d0c0a00000-55d0c0a01000 r--p 00000000 fe:00 1 /opt/app
55d0c0a01000-55d0c0a02000 r-xp 00001000 fe:00 1 /opt/app
7f0000000000-7f0000001000 r-xp 00000000 00:00 0 [vdso]
7f0000002000-7f0000003000 r-xp 00002000 fe:00 2 /opt/with space.so
7f0000004000-7f0000005000 rw-p 00000000 00:00 0
`
	got, err := ParseProcMaps(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{Start: 0x55d0c0a01000, End: 0x55d0c0a02000, Offset: 0x1000, Path: "/opt/app"},
		{Start: 0x7f0000002000, End: 0x7f0000003000, Offset: 0x2000, Path: "/opt/with space.so"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if _, err := ParseProcMaps(strings.NewReader("zz r-xp 0 0 0 /x\n")); err == nil {
		t.Error("bad range: no error")
	}
}
