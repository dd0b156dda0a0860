package main_test

// End-to-end tests of Fortran MPI programs (gfortran, mpif.h and "use mpi")
// under a tool generated with `mpitrace wrap -f` and under `mpitrace
// record`, with both MPIs.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// fortranInterfaces are the two ways a Fortran program gets MPI: the
// fixtures select them with -DMPI_MODULE (they are compiled with -cpp).
var fortranInterfaces = []struct {
	name  string
	flags []string
}{
	{"mpif.h", nil},
	{"use mpi", []string{"-DMPI_MODULE"}},
}

// compileFortran compiles fixtures/programs/NAME.f90 with m's Fortran
// compiler wrapper, once per flag set.
func (m mpiImpl) compileFortran(t *testing.T, name string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath(m.fortCC); err != nil {
		t.Fatalf("%s is not installed: run 'make deps' (apt-get install gfortran)", m.fortCC)
	}
	compileMu.Lock()
	defer compileMu.Unlock()
	key := m.name + "/" + name + ".f90" + strings.Join(flags, "")
	if p, ok := compiled[key]; ok {
		return p
	}
	src, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "programs", name+".f90"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(workDir, "bin", m.name, name+"-f90"+strings.Join(flags, ""))
	os.MkdirAll(filepath.Dir(out), 0o755)
	// mpif.h declares no interfaces: gfortran >= 10 needs
	// -fallow-argument-mismatch for buffers of different types (MPICH's
	// wrapper adds it, Open MPI's does not).
	args := append([]string{"-cpp", "-fallow-argument-mismatch", "-w"}, flags...)
	args = append(args, "-o", out, src)
	if b, err := exec.Command(m.fortCC, args...).CombinedOutput(); err != nil {
		t.Fatalf("compiling %s with %s: %v\n%s", name, m.fortCC, err, b)
	}
	compiled[key] = out
	return out
}

// compileWrapC compiles fixtures/wrap/NAME.c with m's compiler, once.
func (m mpiImpl) compileWrapC(t *testing.T, name string) string {
	t.Helper()
	compileMu.Lock()
	defer compileMu.Unlock()
	key := m.name + "/wrap/" + name
	if p, ok := compiled[key]; ok {
		return p
	}
	out := filepath.Join(workDir, "bin", m.name, name+"-c")
	os.MkdirAll(filepath.Dir(out), 0o755)
	if b, err := exec.Command(m.cc, "-Wall", "-Werror", "-o", out, wrapFixture(t, name+".c")).CombinedOutput(); err != nil {
		t.Fatalf("compiling %s.c with %s: %v\n%s", name, m.cc, err, b)
	}
	compiled[key] = out
	return out
}

// splitToolLines separates a run's output into the program's lines and the
// tool's (COUNT, BYTES), both sorted: ranks print in any order.
func splitToolLines(out string) (program, tool []string) {
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "COUNT ") || strings.HasPrefix(l, "BYTES ") {
			tool = append(tool, l)
		} else {
			program = append(program, l)
		}
	}
	sort.Strings(program)
	sort.Strings(tool)
	return program, tool
}

// TestWrapFortranTool preloads a tool generated with -f (count.w and
// macros.w) into ftwin.f90, which uses MPI_Init_thread, CHARACTER
// arguments (MPI_Comm_set_name/get_name, MPI_Get_processor_name,
// MPI_Error_string), MPI_STATUS_IGNORE, statuses, MPI_Waitall with an array
// of statuses, MPI_Message, MPI_IN_PLACE and MPI_Alltoallw. The program
// must print exactly what it prints without the tool, and the tool must
// count the same calls and bytes as in ftwin.c, the program's C twin.
func TestWrapFortranTool(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			dir := t.TempDir()
			lib := m.buildTool(t, dir, []string{"-fw"})
			twin := mustRun(t, dir, m.preload(m.np(), lib, m.compileWrapC(t, "ftwin"))...)
			_, twinCounts := splitToolLines(twin.stdout)
			if len(twinCounts) < 20*m.np() || strings.Contains(twin.stdout, "WRAPCHECK FAIL") {
				t.Fatalf("the C twin under the tool:\n%s", twin.stdout)
			}
			// A static tool: compiled without PIC semantics (-DSTATIC) and
			// linked into the program; it initialises MPI through the -i
			// binding, pmpi_init_ (gfortran's).
			t.Run("static", func(t *testing.T) {
				sdir := t.TempDir()
				mustRun(t, sdir, mpitraceBin, "wrap", "-s", "-c", m.cc, "-o", filepath.Join(sdir, "wrap_names.h"), wrapFixture(t, "names.w"))
				mustRun(t, sdir, mpitraceBin, "wrap", "-fw", "-i", "pmpi_init_", "-c", m.cc, "-o", filepath.Join(sdir, "tool.c"), wrapFixture(t, "count.w"), wrapFixture(t, "macros.w"))
				mustRun(t, sdir, m.cc, "-DSTATIC", "-I", sdir, "-Wall", "-Wextra", "-Werror", "-c", "-o", filepath.Join(sdir, "tool.o"), filepath.Join(sdir, "tool.c"))
				src, _ := filepath.Abs(filepath.Join("..", "..", "fixtures", "programs", "ftwin.f90"))
				prog := filepath.Join(sdir, "ftwin-static")
				mustRun(t, sdir, m.fortCC, "-cpp", "-fallow-argument-mismatch", "-w", "-o", prog, src, filepath.Join(sdir, "tool.o"))
				plain := mustRun(t, sdir, m.launch(m.np(), m.compileFortran(t, "ftwin"))...)
				linked := mustRun(t, sdir, m.launch(m.np(), prog)...)
				want, _ := splitToolLines(plain.stdout)
				got, counts := splitToolLines(linked.stdout)
				if !slices.Equal(got, want) || !slices.Equal(counts, twinCounts) {
					t.Errorf("with the tool linked in:\n%s\nwithout:\n%s\nthe C twin's counts:\n%s",
						linked.stdout, plain.stdout, strings.Join(twinCounts, "\n"))
				}
			})
			for _, fi := range fortranInterfaces {
				t.Run(fi.name, func(t *testing.T) {
					prog := m.compileFortran(t, "ftwin", fi.flags...)
					plain := mustRun(t, dir, m.launch(m.np(), prog)...)
					tool := mustRun(t, dir, m.preload(m.np(), lib, prog)...)
					want, _ := splitToolLines(plain.stdout)
					got, counts := splitToolLines(tool.stdout)
					if len(want) < 14*m.np() {
						t.Fatalf("the program printed too little:\n%s", plain.stdout)
					}
					if !slices.Equal(got, want) {
						t.Errorf("the program's output changed under the tool:\nwith the tool:\n%s\nwithout:\n%s",
							strings.Join(got, "\n"), strings.Join(want, "\n"))
					}
					if !slices.Equal(counts, twinCounts) {
						t.Errorf("the tool counted other calls than in the C twin:\nFortran:\n%s\nC:\n%s",
							strings.Join(counts, "\n"), strings.Join(twinCounts, "\n"))
					}
				})
			}
		})
	}
}

// TestRecordFortranMix records mix.f90, the Fortran twin of mix.c, through
// mpif.h and "use mpi", and checks every event of every rank with the
// checker of mix.c: peers, tags, bytes, communicators, requests and
// completions are those of the C program. Its output is mix.c's.
func TestRecordFortranMix(t *testing.T) {
	for _, m := range mpis {
		for _, fi := range fortranInterfaces {
			t.Run(m.name+"/"+fi.name, func(t *testing.T) {
				m.require(t)
				np := m.np()
				prog := m.compileFortran(t, "mix", fi.flags...)
				dir := t.TempDir()
				cRun := mustRun(t, dir, m.launch(np, m.compile(t, "mix"))...)
				out := filepath.Join(dir, "traces")
				rec := record(t, out, nil, m.launch(np, prog)...)
				if rec.code != 0 {
					t.Fatalf("record exited %d\nstderr:\n%s", rec.code, rec.stderr)
				}
				if !slices.Equal(sortedLines(rec.stdout), sortedLines(cRun.stdout)) {
					t.Errorf("the Fortran twin printed\n%s\nmix.c printed\n%s", rec.stdout, cRun.stdout)
				}
				checkMixTrace(t, out, np)
			})
		}
	}
}

// TestRecordFortranTwin records ftwin.f90 (mpif.h and "use mpi") and its C
// twin ftwin.c, and compares the events of every rank: the same functions
// in the same order with the same arguments (peers, tags, bytes,
// communicators, requests, completions and their statuses). MPI_Waitany
// completes its two requests in either order; runs of it are compared as
// sets.
func TestRecordFortranTwin(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			np := m.np()
			dir := t.TempDir()
			cOut := filepath.Join(dir, "c")
			if r := record(t, cOut, nil, m.launch(np, m.compileWrapC(t, "ftwin"))...); r.code != 0 {
				t.Fatalf("recording the C twin: exit %d\n%s", r.code, r.stderr)
			}
			_, cLogs := readTrace(t, cOut)
			for _, fi := range fortranInterfaces {
				t.Run(fi.name, func(t *testing.T) {
					fOut := filepath.Join(dir, strings.ReplaceAll(fi.name, " ", "_"))
					if r := record(t, fOut, nil, m.launch(np, m.compileFortran(t, "ftwin", fi.flags...))...); r.code != 0 {
						t.Fatalf("recording the Fortran program: exit %d\n%s", r.code, r.stderr)
					}
					_, fLogs := readTrace(t, fOut)
					if len(fLogs) != np || len(cLogs) != np {
						t.Fatalf("%d Fortran and %d C rank logs, want %d", len(fLogs), len(cLogs), np)
					}
					for r := 0; r < np; r++ {
						f, c := eventLines(fLogs[r]), eventLines(cLogs[r])
						if len(c) < 30 {
							t.Fatalf("rank %d: the C twin recorded only %d calls", r, len(c))
						}
						if !slices.Equal(f, c) {
							t.Errorf("rank %d: the Fortran program's events differ from the C twin's:\n%s", r, lineDiff(f, c))
						}
					}
				})
			}
		})
	}
}

// eventLines renders a rank's calls without their times, runs of
// MPI_Waitany sorted.
func eventLines(l *rankLog) []string {
	var out []string
	for i := range l.calls {
		out = append(out, l.calls[i].String())
	}
	for i := 0; i < len(out); {
		j := i
		for j < len(out) && strings.Contains(out[j], " MPI_Waitany ") {
			j++
		}
		if j > i {
			sort.Strings(out[i:j])
			i = j
		} else {
			i++
		}
	}
	return out
}

// lineDiff shows two line lists side by side from their first difference.
func lineDiff(a, b []string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	var s strings.Builder
	for k := max(0, i-2); k < i+4 && (k < len(a) || k < len(b)); k++ {
		x, y := "", ""
		if k < len(a) {
			x = a[k]
		}
		if k < len(b) {
			y = b[k]
		}
		mark := " "
		if x != y {
			mark = "!"
		}
		fmt.Fprintf(&s, "%s %d\n    Fortran: %s\n    C:       %s\n", mark, k, x, y)
	}
	return s.String()
}
