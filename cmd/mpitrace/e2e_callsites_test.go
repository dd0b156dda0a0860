package main_test

// End-to-end tests of call sites: C and Fortran programs whose MPI calls are
// on known lines (fixtures/programs/callsites.*, lines marked "site:
// NAME"), recorded with both MPIs; every call has a site, one per line, the
// same for every iteration, and each resolves to its line.

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/callsite"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// siteLine is a marked line of a fixture: the MPI function it calls.
type siteLine struct {
	name  string
	line  int
	fn    string // MPI_Irecv, as the trace names it
	calls int    // calls per rank
}

var (
	siteMark = regexp.MustCompile(`(?:/\*|!) site: ([a-z-]+)`)
	mpiCall  = regexp.MustCompile(`(?i)\bMPI_[A-Za-z_]+\(`)
)

// siteCalls is how many times each marked line runs per rank: the exchange
// 5 + 1 times, the reduction 5 times, the rest once.
var siteCalls = map[string]int{"halo-recv": 6, "halo-send": 6, "halo-wait": 6, "allreduce": 5}

// siteLines scans a fixture for its marked lines.
func siteLines(t *testing.T, src string) map[string]siteLine {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]siteLine{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		m := siteMark.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		c := mpiCall.FindString(sc.Text())
		if c == "" {
			t.Fatalf("%s:%d: a site mark without an MPI call", src, n)
		}
		// The trace names Fortran calls by their C function: MPI_Irecv.
		fn := "MPI_" + strings.ToUpper(c[4:5]) + strings.ToLower(c[5:len(c)-1])
		calls := siteCalls[m[1]]
		if calls == 0 {
			calls = 1
		}
		out[m[1]] = siteLine{name: m[1], line: n, fn: fn, calls: calls}
	}
	if len(out) < 3 {
		t.Fatalf("%s: only %d marked lines", src, len(out))
	}
	return out
}

func TestCallSites(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			for _, prog := range []struct {
				name, src string
				flags     []string
			}{
				{"c", "callsites.c", nil},
				{"mpif.h", "callsites.f90", nil},
				{"use-mpi", "callsites.f90", []string{"-DMPI_MODULE"}},
			} {
				t.Run(prog.name, func(t *testing.T) {
					src, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "programs", prog.src))
					if err != nil {
						t.Fatal(err)
					}
					bin := filepath.Join(workDir, "bin", m.name, "callsites-"+prog.name)
					os.MkdirAll(filepath.Dir(bin), 0o755)
					// -O0: a line's calls stay one call instruction (no
					// inlined or duplicated copies) and gfortran's line
					// table names every call's own line.
					cc, args := m.cc, []string{"-g", "-O0", "-o", bin, src}
					if strings.HasSuffix(prog.src, ".f90") {
						cc = m.fortCC
						args = append(append([]string{"-cpp", "-fallow-argument-mismatch", "-w"}, prog.flags...), args...)
					}
					if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
						t.Fatalf("compiling %s with %s: %v\n%s", prog.src, cc, err, b)
					}
					out := filepath.Join(workDir, "callsites-"+m.name+"-"+prog.name)
					if res := record(t, out, nil, m.launch(2, bin)...); res.code != 0 {
						t.Fatalf("record: exit %d\n%s%s", res.code, res.stdout, res.stderr)
					}
					checkSites(t, out, bin, siteLines(t, src))
				})
			}
		})
	}
}

// checkSites checks the call sites of a recorded callsites program.
func checkSites(t *testing.T, dir, bin string, lines map[string]siteLine) {
	t.Helper()
	tr, logs := readTrace(t, dir)
	if len(logs) != 2 {
		t.Fatalf("%d rank logs", len(logs))
	}
	// The validator finds nothing: every site used is defined, once.
	for _, f := range tr.Files {
		r, err := tr.OpenRank(f.Rank)
		if err != nil {
			t.Fatal(err)
		}
		d, err := tracefmt.Validate(r)
		r.Close()
		if err != nil || d.Len() != 0 {
			t.Errorf("rank %d: validate: %v %s", f.Rank, err, d.Summary())
		}
	}
	res := callsite.NewResolver()
	for _, l := range logs {
		if n := l.diags.Len(); n != 0 {
			t.Errorf("rank %d: %s", l.rank, l.diags.Summary())
		}
		maps := l.sites.Mappings()
		var cmaps []callsite.Mapping
		for _, mp := range maps {
			cmaps = append(cmaps, callsite.Mapping(mp))
		}
		if !slices.ContainsFunc(maps, func(mp tracefmt.Mapping) bool { return mp.Path == bin && len(mp.BuildID) >= 16 }) {
			t.Errorf("rank %d: no mapping of %s with a build id: %+v", l.rank, bin, maps)
		}
		// Every call has a site of the table; one function per site.
		bySite := map[uint64][]string{}
		for _, c := range l.calls {
			s := c.Site()
			if _, ok := l.sites.Addr(s); !ok {
				t.Errorf("rank %d: %s has site %d, not in the table", l.rank, c.fn, s)
				continue
			}
			bySite[s] = append(bySite[s], c.fn)
		}
		if len(bySite) != len(lines) || l.sites.Len() != len(lines) {
			t.Errorf("rank %d: %d sites used, %d in the table, want %d (one per marked line)", l.rank, len(bySite), l.sites.Len(), len(lines))
		}
		seen := map[string]bool{}
		for s, fns := range bySite {
			addr, _ := l.sites.Addr(s)
			// Each site is in the program, not in the MPI's bindings or the recorder.
			if !slices.ContainsFunc(maps, func(mp tracefmt.Mapping) bool {
				return mp.Path == bin && addr-1 >= mp.Start && addr-1 < mp.End
			}) {
				t.Errorf("rank %d: site %d (%s) at %#x is outside %s", l.rank, s, fns[0], addr, filepath.Base(bin))
			}
			loc := res.Resolve(cmaps, addr)
			if len(loc.Frames) == 0 {
				t.Errorf("rank %d: site %d (%s) at %#x does not resolve: %s", l.rank, s, fns[0], addr, loc.Problem)
				continue
			}
			f := loc.Frames[0]
			var want *siteLine
			for _, sl := range lines {
				if sl.line == f.Line {
					want = &sl
				}
			}
			if want == nil && f.Line == programLine(t, bin, lines) && (fns[0] == "MPI_Init" || fns[0] == "MPI_Finalize") {
				// gfortran gives the MPI_Init and MPI_Finalize statements
				// of a program using Open MPI's mpi module no line-table
				// row: their calls are in the program statement's line.
				// The address is the program's (checked above); match
				// by function.
				for _, sl := range lines {
					if sl.fn == fns[0] {
						want = &sl
					}
				}
				t.Logf("rank %d: site %d (%s) resolves to the program statement, line %d", l.rank, s, fns[0], f.Line)
			}
			switch {
			case want == nil || filepath.Base(f.File) != filepath.Base(filepath.Clean(srcOf(lines, bin))):
				t.Errorf("rank %d: site %d (%s) resolves to %s:%d, not a marked line", l.rank, s, fns[0], f.File, f.Line)
			case seen[want.name]:
				t.Errorf("rank %d: two sites resolve to line %d (%s)", l.rank, f.Line, want.name)
			default:
				seen[want.name] = true
				if slices.ContainsFunc(fns, func(fn string) bool { return fn != want.fn }) || len(fns) != want.calls {
					t.Errorf("rank %d: site %d (line %d, %s): calls %v, want %d × %s", l.rank, s, f.Line, want.name, fns, want.calls, want.fn)
				}
			}
		}
	}
}

// srcOf is the fixture's file name the resolved lines must be in.
func srcOf(lines map[string]siteLine, bin string) string {
	if strings.Contains(filepath.Base(bin), "-c") {
		return "callsites.c"
	}
	return "callsites.f90"
}

// programLine is the line of a Fortran fixture's program statement, 0 for C.
func programLine(t *testing.T, bin string, lines map[string]siteLine) int {
	if srcOf(lines, bin) != "callsites.f90" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "programs", "callsites.f90"))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "program ") {
			return i + 1
		}
	}
	return 0
}

// TestCallSitesDlopen: calls made from a library loaded with dlopen after
// MPI_Init have sites in that library, which the recorder maps when the
// first of them is made.
func TestCallSitesDlopen(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			src, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "programs", "dlsites.c"))
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(workDir, "bin", m.name)
			os.MkdirAll(dir, 0o755)
			lib, bin := filepath.Join(dir, "libdlsites.so"), filepath.Join(dir, "dlsites")
			for _, args := range [][]string{
				{"-g", "-O0", "-DPLUGIN", "-shared", "-fPIC", "-o", lib, src},
				{"-g", "-O0", "-o", bin, src, "-ldl"},
			} {
				if b, err := exec.Command(m.cc, args...).CombinedOutput(); err != nil {
					t.Fatalf("%s %v: %v\n%s", m.cc, args, err, b)
				}
			}
			out := filepath.Join(workDir, "dlsites-"+m.name)
			if res := record(t, out, nil, m.launch(2, bin, lib)...); res.code != 0 {
				t.Fatalf("record: exit %d\n%s%s", res.code, res.stdout, res.stderr)
			}
			lines := siteLines(t, src)
			_, logs := readTrace(t, out)
			res := callsite.NewResolver()
			for _, l := range logs {
				var libMap *tracefmt.Mapping
				var cmaps []callsite.Mapping
				for i, mp := range l.sites.Mappings() {
					if mp.Path == lib {
						libMap = &l.sites.Mappings()[i]
					}
					cmaps = append(cmaps, callsite.Mapping(mp))
				}
				if libMap == nil {
					t.Fatalf("rank %d: no mapping of %s", l.rank, lib)
				}
				n := 0
				for _, c := range l.calls {
					if c.fn != "MPI_Barrier" {
						continue
					}
					n++
					addr, ok := l.sites.Addr(c.Site())
					if !ok || addr-1 < libMap.Start || addr-1 >= libMap.End {
						t.Errorf("rank %d: MPI_Barrier site %d at %#x, not in %s [%#x, %#x)", l.rank, c.Site(), addr, lib, libMap.Start, libMap.End)
						continue
					}
					loc := res.Resolve(cmaps, addr)
					if len(loc.Frames) == 0 || filepath.Base(loc.Frames[0].File) != "dlsites.c" || loc.Frames[0].Line != lines["plugin-barrier"].line {
						t.Errorf("rank %d: MPI_Barrier resolves to %v (%s), want dlsites.c:%d", l.rank, loc, loc.Problem, lines["plugin-barrier"].line)
					}
				}
				if n != 2 {
					t.Errorf("rank %d: %d MPI_Barrier calls, want 2", l.rank, n)
				}
			}
		})
	}
}
