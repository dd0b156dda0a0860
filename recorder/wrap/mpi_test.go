package wrap

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mpitrace/mpitrace/internal/mpijob"
)

// These tests use the MPI installations on the machine: Open MPI through
// mpicc/mpirun and MPICH through mpicc.mpich/mpirun.mpich. Each is skipped
// when its tools are missing.

type mpiImpl struct {
	name        string
	cc, fc, run []string // candidates, first found wins
	// launch returns the launcher arguments for a 2-rank run of prog with
	// lib preloaded into every rank.
	launch func(lib, prog string) []string
	env    []string
}

var mpiImpls = []mpiImpl{
	{
		name: "openmpi",
		cc:   []string{"mpicc.openmpi", "mpicc"},
		fc:   []string{"mpif90.openmpi", "mpifort.openmpi", "mpif90"},
		run:  []string{"mpirun.openmpi", "mpirun"},
		launch: func(lib, prog string) []string {
			return []string{"--oversubscribe", "-np", "2", "-x", "LD_PRELOAD=" + lib, prog}
		},
		env: []string{"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "OMPI_MCA_rmaps_base_oversubscribe=1"},
	},
	{
		name: "mpich",
		cc:   []string{"mpicc.mpich"},
		fc:   []string{"mpif90.mpich", "mpifort.mpich"},
		run:  []string{"mpirun.mpich", "mpiexec.mpich"},
		launch: func(lib, prog string) []string {
			return []string{"-np", "2", "-genv", "LD_PRELOAD", lib, prog}
		},
	},
}

func lookFirst(names []string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// compiler returns the implementation's compiler wrapper, or skips.
func (m mpiImpl) compiler(t *testing.T) string {
	t.Helper()
	cc := lookFirst(m.cc)
	if cc == "" {
		t.Skipf("%s: none of %v found", m.name, m.cc)
	}
	return cc
}

var (
	headerMu    sync.Mutex
	headerCache = map[string][]Func{}
)

// realFuncs preprocesses and parses the implementation's mpi.h (once).
func (m mpiImpl) realFuncs(t *testing.T) []Func {
	t.Helper()
	cc := m.compiler(t)
	headerMu.Lock()
	defer headerMu.Unlock()
	if fs, ok := headerCache[cc]; ok {
		return fs
	}
	src, err := Preprocess(context.Background(), cc, nil)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := ParseHeader(src)
	if err != nil {
		t.Fatal(err)
	}
	headerCache[cc] = fs
	return fs
}

// everyFunc is realFuncs with only the conversion functions left out.
func (m mpiImpl) everyFunc(t *testing.T) []Func {
	t.Helper()
	src, err := Preprocess(context.Background(), m.compiler(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var conversions []Exclusion
	for _, e := range DefaultExclusions {
		if e.Name == "conversion" {
			conversions = append(conversions, e)
		}
	}
	fs, err := ParseHeaderExcluding(src, conversions)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func byName(fs []Func) map[string]Func {
	m := map[string]Func{}
	for _, f := range fs {
		m[f.Name] = f
	}
	return m
}

func TestRealHeaders(t *testing.T) {
	for _, m := range mpiImpls {
		t.Run(m.name, func(t *testing.T) {
			fs := m.realFuncs(t)
			if len(fs) < 300 || len(fs) > 2000 {
				t.Errorf("%d functions, want a few hundred", len(fs))
			}
			funcs := byName(fs)
			send, ok := funcs["MPI_Send"]
			if !ok {
				t.Fatal("no MPI_Send")
			}
			wantSend := []string{"const void *", "int", "MPI_Datatype", "int", "int", "MPI_Comm"}
			if send.Ret != "int" || !reflect.DeepEqual(paramTypes(send), wantSend) {
				t.Errorf("MPI_Send: %s", send)
			}
			for _, name := range []string{"MPI_Wtime", "MPI_Wtick"} {
				if f := funcs[name]; f.Ret != "double" || len(f.Params) != 0 {
					t.Errorf("%s: %s", name, f)
				}
			}
			if w := funcs["MPI_Waitall"]; len(w.Params) != 3 || w.Params[2].Base != "MPI_Status" || !w.Params[2].IsPointerLike() ||
				w.Params[1].Base != "MPI_Request" || !w.Params[1].IsPointerLike() {
				t.Errorf("MPI_Waitall: %s", w)
			}
			if p := funcs["MPI_Pcontrol"]; !p.Variadic || len(p.Params) != 1 {
				t.Errorf("MPI_Pcontrol: %s", p)
			}
			if o := funcs["MPI_Op_create"]; len(o.Params) != 3 || o.Params[0].Type != "MPI_User_function *" {
				t.Errorf("MPI_Op_create: %s", o)
			}
			if g := funcs["MPI_Group_range_incl"]; len(g.Params) != 4 || g.Params[2].Type != "int [][3]" {
				t.Errorf("MPI_Group_range_incl: %s", g)
			}
			if k := funcs["MPI_Comm_create_keyval"]; len(k.Params) != 4 || k.Params[0].Type != "MPI_Comm_copy_attr_function *" {
				t.Errorf("MPI_Comm_create_keyval: %s", k)
			}
			for _, f := range fs {
				if !strings.HasPrefix(f.Name, "MPI_") || strings.HasPrefix(f.Name, "MPI_T_") ||
					strings.HasPrefix(f.Name, "MPI_Comm_spawn") || strings.Contains(f.Name, "c2f") || strings.Contains(f.Name, "f2c") {
					t.Errorf("%s should have been excluded", f.Name)
				}
				for _, r := range []string{"int", "double", "MPI_Aint"} {
					if f.Ret == r {
						goto ok
					}
				}
				t.Errorf("%s returns %q", f.Name, f.Ret)
			ok:
			}
			if m.name == "mpich" {
				sc, ok := funcs["MPI_Send_c"]
				if !ok || sc.Params[1].Type != "MPI_Count" {
					t.Errorf("MPI_Send_c: %s", sc)
				}
				if a := funcs["MPI_Aint_add"]; a.Ret != "MPI_Aint" || len(a.Params) != 2 {
					t.Errorf("MPI_Aint_add: %s", a)
				}
				if _, ok := funcs["MPI_Session_init"]; !ok {
					t.Error("no MPI_Session_init")
				}
			}
		})
	}
}

// compileC compiles src with the MPI compiler and returns its diagnostics.
func compileC(t *testing.T, cc, dir, name, src string, flags ...string) {
	t.Helper()
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-c", "-fPIC"}, flags...)
	args = append(args, c, "-o", filepath.Join(dir, name+".o"))
	out, err := exec.Command(cc, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, firstLines(string(out), 30))
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// TestCompileAllWrappers generates a pass-through wrapper for every
// function of each real mpi.h and compiles it.
func TestCompileAllWrappers(t *testing.T) {
	const tmpl = "{{fnall f}}{{callfn}}{{endfnall}}\n"
	strict := []string{"-Wall", "-Wextra", "-Werror"}
	configs := []struct {
		name  string
		opts  Options
		flags []string
	}{
		// Without -w, Open MPI's deprecated functions warn; only errors fail.
		{"plain", Options{}, []string{"-Wall"}},
		{"w", Options{NoDeprecationWarnings: true}, strict},
		{"gw", Options{Guards: true, NoDeprecationWarnings: true}, strict},
		{"g", Options{Guards: true}, []string{"-Wall"}},
		{"fgw", Options{Fortran: true, Guards: true, NoDeprecationWarnings: true}, strict},
		{"header-names", Options{HeaderNames: true, NoDeprecationWarnings: true}, strict},
		{"f-everything", Options{Fortran: true, NoDeprecationWarnings: true}, strict},
		{"fgw-headernames-static", Options{Fortran: true, Guards: true, NoDeprecationWarnings: true, HeaderNames: true, PMPIInit: "pmpi_init__"}, append([]string{"-DSTATIC"}, strict...)},
	}
	for _, m := range mpiImpls {
		for _, c := range configs {
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				fs := m.realFuncs(t)
				if c.name == "f-everything" {
					// MPI_T_* and MPI_Comm_spawn* too, as the recorder
					// wraps them.
					fs = m.everyFunc(t)
				}
				var b bytes.Buffer
				if err := Generate(&b, fs, []Input{{"passthrough.w", tmpl}}, c.opts); err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(b.String(), "/* ================== C Wrappers for "); n != len(fs) {
					t.Errorf("%d wrappers for %d functions", n, len(fs))
				}
				compileC(t, m.compiler(t), t.TempDir(), "wrappers", b.String(), c.flags...)
			})
		}
	}
}

// countingTemplate counts the calls of every function per rank and prints
// the counts at MPI_Finalize.
const countingTemplate = `#include <stdio.h>
static const char *count_names_{{fileno}}[] = {
{{forallfn f MPI_Finalize}}    "{{f}}",
{{endforallfn}}};
static long count_calls_{{fileno}}[sizeof(count_names_{{fileno}}) / sizeof(count_names_{{fileno}}[0])];
{{fnall f MPI_Finalize}}
    count_calls_{{fileno}}[{{fn_num}}]++;
    {{callfn}}
{{endfnall}}
{{fn f MPI_Finalize}}
    {
        int rank = -1;
        size_t i;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        for (i = 0; i < sizeof(count_calls_{{fileno}}) / sizeof(count_calls_{{fileno}}[0]); i++)
            if (count_calls_{{fileno}}[i])
                printf("COUNT %d %s %ld\n", rank, count_names_{{fileno}}[i], count_calls_{{fileno}}[i]);
        fflush(stdout);
    }
    {{callfn}}
{{endfn}}
`

const countingProgram = `#include <mpi.h>
int main(int argc, char **argv) {
    int rank, size, i, buf = 0, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 0; i < 3; i++) {
        if (rank == 0)
            MPI_Send(&i, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
        else if (rank == 1)
            MPI_Recv(&buf, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    (void)MPI_Wtime();
    MPI_Finalize();
    return size == 2 && sum == 1 ? 0 : 1;
}
`

// TestCountingWrappersRun builds the counting template into a shared
// library, preloads it into a 2-rank run of a small program and checks the
// counts each rank reports.
func TestCountingWrappersRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs MPI jobs")
	}
	for _, m := range mpiImpls {
		t.Run(m.name, func(t *testing.T) {
			cc := m.compiler(t)
			run := lookFirst(m.run)
			if run == "" {
				t.Skipf("none of %v found", m.run)
			}
			fs := m.realFuncs(t)
			dir := t.TempDir()
			var b bytes.Buffer
			if err := Generate(&b, fs, []Input{{"count.w", countingTemplate}}, Options{Guards: true, NoDeprecationWarnings: true}); err != nil {
				t.Fatal(err)
			}
			lib := filepath.Join(dir, "libcount.so")
			prog := filepath.Join(dir, "prog")
			for _, step := range [][]string{
				{"-shared", "-fPIC", "-Wall", "-Werror", "-o", lib, writeFile(t, dir, "count.c", b.String())},
				{"-o", prog, writeFile(t, dir, "prog.c", countingProgram)},
			} {
				if out, err := exec.Command(cc, step...).CombinedOutput(); err != nil {
					t.Fatalf("%s %v: %v\n%s", cc, step, err, firstLines(string(out), 30))
				}
			}
			counts, out := runJob(t, m, run, lib, prog)
			want := map[string]int{}
			for rank := 0; rank < 2; rank++ {
				for name, n := range map[string]int{"MPI_Init": 1, "MPI_Comm_rank": 1, "MPI_Comm_size": 1,
					"MPI_Barrier": 2, "MPI_Allreduce": 1, "MPI_Wtime": 1} {
					want[fmt.Sprintf("%d %s", rank, name)] = n
				}
			}
			want["0 MPI_Send"], want["1 MPI_Recv"], want["1 MPI_Send"], want["0 MPI_Recv"] = 3, 3, 0, 0
			for k, n := range want {
				if counts[k] != n {
					t.Errorf("rank/function %q: count %d, want %d", k, counts[k], n)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", firstLines(out, 60))
			}
		})
	}
}

// runJob runs prog on 2 ranks with lib preloaded and collects the
// "COUNT rank function n" lines the counting template prints.
func runJob(t *testing.T, m mpiImpl, run, lib, prog string) (map[string]int, string) {
	t.Helper()
	argv := append([]string{run}, m.launch(lib, prog)...)
	r := mpijob.Run(t, filepath.Dir(prog), m.env, argv...)
	out := r.Stdout + r.Stderr
	if r.Code != 0 {
		t.Fatalf("%s: exit status %d\n%s", mpijob.CommandLine(argv), r.Code, firstLines(out, 40))
	}
	counts := map[string]int{} // "rank name" -> count
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[0] == "COUNT" {
			n, _ := strconv.Atoi(f[3])
			counts[f[1]+" "+f[2]] = n
		}
	}
	return counts, out
}

const fortranProgram = `program p
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nranks, i, buf, total, plen
  integer :: status(MPI_STATUS_SIZE)
  character(len=MPI_MAX_PROCESSOR_NAME) :: pname
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  call MPI_GET_PROCESSOR_NAME(pname, plen, ierr)
  if (plen < 1 .or. len_trim(pname) /= plen) print *, 'BAD NAME ', plen, len_trim(pname)
  do i = 1, 3
    if (rank == 0) then
      call MPI_SEND(i, 1, MPI_INTEGER, 1, 7, MPI_COMM_WORLD, ierr)
    else
      call MPI_RECV(buf, 1, MPI_INTEGER, 0, 7, MPI_COMM_WORLD, status, ierr)
      if (status(MPI_SOURCE) /= 0 .or. status(MPI_TAG) /= 7 .or. buf /= i) print *, 'BAD STATUS'
    end if
  end do
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_ALLREDUCE(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (total /= 1 .or. ierr /= MPI_SUCCESS) print *, 'BAD SUM'
  call MPI_FINALIZE(ierr)
end program
`

// TestFortranWrappersRun preloads -f wrappers into a Fortran (mpif.h)
// program: the Fortran bindings must reach the C wrappers, convert
// handles, statuses and CHARACTER arguments, and initialise MPI through
// the Fortran PMPI_INIT (MPICH's calls back into the C MPI_Init).
func TestFortranWrappersRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs MPI jobs")
	}
	for _, m := range mpiImpls {
		t.Run(m.name, func(t *testing.T) {
			cc := m.compiler(t)
			fc, run := lookFirst(m.fc), lookFirst(m.run)
			if fc == "" || run == "" {
				t.Skipf("no Fortran compiler (%v) or launcher (%v)", m.fc, m.run)
			}
			fs := m.realFuncs(t)
			dir := t.TempDir()
			var b bytes.Buffer
			if err := Generate(&b, fs, []Input{{"count.w", countingTemplate}}, Options{Fortran: true, NoDeprecationWarnings: true}); err != nil {
				t.Fatal(err)
			}
			lib := filepath.Join(dir, "libcount.so")
			prog := filepath.Join(dir, "prog")
			if out, err := exec.Command(cc, "-shared", "-fPIC", "-Wall", "-Werror", "-o", lib, writeFile(t, dir, "count.c", b.String())).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", cc, err, firstLines(string(out), 30))
			}
			if out, err := exec.Command(fc, "-o", prog, writeFile(t, dir, "prog.f90", fortranProgram)).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", fc, err, firstLines(string(out), 30))
			}
			counts, out := runJob(t, m, run, lib, prog)
			if strings.Contains(out, "BAD") {
				t.Errorf("the program saw wrong values through the wrappers")
			}
			for rank := 0; rank < 2; rank++ {
				for name, n := range map[string]int{"MPI_Init": 1, "MPI_Comm_rank": 1, "MPI_Comm_size": 1,
					"MPI_Get_processor_name": 1, "MPI_Barrier": 1, "MPI_Allreduce": 1} {
					if k := fmt.Sprintf("%d %s", rank, name); counts[k] != n {
						t.Errorf("%q: count %d, want %d", k, counts[k], n)
					}
				}
			}
			if counts["0 MPI_Send"] != 3 || counts["1 MPI_Recv"] != 3 {
				t.Errorf("send/recv counts %d/%d, want 3/3", counts["0 MPI_Send"], counts["1 MPI_Recv"])
			}
			if t.Failed() {
				t.Logf("output:\n%s", firstLines(out, 60))
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
