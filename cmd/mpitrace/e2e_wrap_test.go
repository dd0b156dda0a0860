package main_test

// End-to-end tests of `mpitrace wrap`: tools generated from the .w files of
// fixtures/wrap, compiled with each MPI's compiler wrapper and preloaded
// into real runs.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// wrapFixture is the absolute path of fixtures/wrap/NAME.
func wrapFixture(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "wrap", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// np is the number of ranks of the wrap tests: 3 with Open MPI (a
// non-power of two), 2 with MPICH (oversubscribed MPICH ranks poll slowly).
func (m mpiImpl) np() int {
	if m.name == "mpich" {
		return 2
	}
	return 3
}

// preload is the launcher command line for np ranks of argv with lib
// preloaded into every rank.
func (m mpiImpl) preload(np int, lib string, argv ...string) []string {
	var env []string
	if m.name == "mpich" {
		env = []string{"-genv", "LD_PRELOAD", lib}
	} else {
		env = []string{"-x", "LD_PRELOAD=" + lib}
	}
	out := append([]string{m.run}, m.flags...)
	out = append(out, env...)
	out = append(out, "-np", strconv.Itoa(np))
	return append(out, argv...)
}

// mustRun runs argv in dir and fails the test unless it exits 0.
func mustRun(t *testing.T, dir string, argv ...string) result {
	t.Helper()
	r := run(t, dir, argv...)
	if r.code != 0 {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), r.code, firstLines(r.stdout, 40), firstLines(r.stderr, 40))
	}
	return r
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// buildTool generates a counting tool from count.w and macros.w (with
// names.h from names.w, generated with -s) with the given `mpitrace wrap`
// flags, and compiles it into a shared library. cflags are added to the
// compilation; with -w in flags, warnings are errors.
func (m mpiImpl) buildTool(t *testing.T, dir string, flags []string, cflags ...string) string {
	t.Helper()
	mustRun(t, dir, mpitraceBin, "wrap", "-s", "-c", m.cc, "-o", filepath.Join(dir, "wrap_names.h"), wrapFixture(t, "names.w"))
	src := filepath.Join(dir, "tool.c")
	args := append([]string{mpitraceBin, "wrap"}, flags...)
	args = append(args, "-c", m.cc, "-o", src, wrapFixture(t, "count.w"), wrapFixture(t, "macros.w"))
	mustRun(t, dir, args...)
	lib := filepath.Join(dir, "libtool.so")
	cc := []string{m.cc, "-shared", "-fPIC", "-I", dir, "-Wall", "-Wextra"}
	if slices.ContainsFunc(flags, func(f string) bool {
		return strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "--") && strings.Contains(f, "w")
	}) {
		cc = append(cc, "-Werror")
	}
	cc = append(cc, cflags...)
	mustRun(t, dir, append(cc, "-o", lib, src)...)
	return lib
}

var (
	callsMu  sync.Mutex
	callsBin = map[string]string{}
)

// callsProgram compiles fixtures/wrap/calls.c with m's compiler, once.
func (m mpiImpl) callsProgram(t *testing.T) string {
	t.Helper()
	callsMu.Lock()
	defer callsMu.Unlock()
	if p, ok := callsBin[m.name]; ok {
		return p
	}
	out := filepath.Join(workDir, "bin", m.name, "calls")
	os.MkdirAll(filepath.Dir(out), 0o755)
	if b, err := exec.Command(m.cc, "-Wall", "-Werror", "-o", out, wrapFixture(t, "calls.c")).CombinedOutput(); err != nil {
		t.Fatalf("compiling calls.c: %v\n%s", err, b)
	}
	callsBin[m.name] = out
	return out
}

// counts are the lines a run of calls.c under a counting tool prints.
type counts struct {
	expect, count map[string]int64 // "rank function" -> calls; "rank bytes" -> bytes sent
	fails         []string         // WRAPCHECK FAIL and CALLS WRONG lines
}

func parseCounts(out string) counts {
	c := counts{expect: map[string]int64{}, count: map[string]int64{}}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		switch {
		case strings.Contains(line, "WRAPCHECK FAIL"), strings.Contains(line, "CALLS WRONG"):
			c.fails = append(c.fails, line)
		case len(f) == 4 && f[0] == "EXPECT":
			n, _ := strconv.ParseInt(f[3], 10, 64)
			c.expect[f[1]+" "+f[2]] = n
		case len(f) == 4 && f[0] == "COUNT":
			n, _ := strconv.ParseInt(f[3], 10, 64)
			c.count[f[1]+" "+f[2]] = n
		case len(f) == 3 && f[0] == "EXPECTBYTES":
			n, _ := strconv.ParseInt(f[2], 10, 64)
			c.expect[f[1]+" bytes"] = n
		case len(f) == 3 && f[0] == "BYTES":
			n, _ := strconv.ParseInt(f[2], 10, 64)
			c.count[f[1]+" bytes"] = n
		}
	}
	return c
}

// check compares what the tool counted with what the program made.
func (c counts) check(t *testing.T, np int, out string) {
	t.Helper()
	if len(c.fails) > 0 {
		t.Errorf("checks failed:\n%s", strings.Join(c.fails, "\n"))
	}
	ranks := map[string]bool{}
	for k := range c.expect {
		ranks[strings.Fields(k)[0]] = true
	}
	if len(ranks) != np || len(c.expect) < 40*np {
		t.Fatalf("the program reported %d calls on %d ranks, want %d ranks\n%s", len(c.expect), len(ranks), np, firstLines(out, 40))
	}
	if !reflect.DeepEqual(c.expect, c.count) {
		for k, v := range c.expect {
			if c.count[k] != v {
				t.Errorf("%s: the tool counted %d, the program made %d", k, c.count[k], v)
			}
		}
		for k, v := range c.count {
			if _, ok := c.expect[k]; !ok {
				t.Errorf("%s: the tool counted %d calls the program did not make", k, v)
			}
		}
	}
}

// TestWrapCountsCalls generates a counting tool from count.w, macros.w and
// names.w (every macro of the template language between them) with each
// option, compiles it with each MPI's compiler wrapper, preloads it into a
// run of calls.c, and checks that it counts exactly the calls the program
// makes on every rank, and the bytes it sends.
func TestWrapCountsCalls(t *testing.T) {
	configs := [][]string{
		{},
		{"-g"},
		{"-w"},
		{"-f"},
		{"-fgw", "-i", "PMPI_INIT"},
	}
	for _, m := range mpis {
		for _, flags := range configs {
			t.Run(m.name+"/"+strings.Join(append([]string{"opts"}, flags...), ""), func(t *testing.T) {
				m.require(t)
				dir := t.TempDir()
				lib := m.buildTool(t, dir, flags)
				prog := m.callsProgram(t)
				r := mustRun(t, dir, m.preload(m.np(), lib, prog)...)
				parseCounts(r.stdout).check(t, m.np(), r.stdout)
			})
		}
	}
}

// TestWrapGuard: the wrapper of MPI_Get_count calls MPI_Comm_rank (count.w
// and macros.w compiled with -DWRAP_NESTED_CALL). calls.c calls each once:
// with -g the nested call goes straight to PMPI and MPI_Comm_rank is
// counted once; without -g, twice.
func TestWrapGuard(t *testing.T) {
	for _, m := range mpis {
		for _, guard := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/g=%v", m.name, guard), func(t *testing.T) {
				m.require(t)
				dir := t.TempDir()
				var flags []string
				if guard {
					flags = []string{"-g"}
				}
				lib := m.buildTool(t, dir, flags, "-DWRAP_NESTED_CALL")
				r := mustRun(t, dir, m.preload(m.np(), lib, m.callsProgram(t))...)
				c := parseCounts(r.stdout)
				for rank := 0; rank < m.np(); rank++ {
					key := fmt.Sprintf("%d MPI_Comm_rank", rank)
					want := c.expect[key]
					if !guard {
						want += c.expect[fmt.Sprintf("%d MPI_Get_count", rank)]
					}
					if c.expect[key] != 1 || c.count[key] != want {
						t.Errorf("rank %d: MPI_Comm_rank counted %d, the program called it %d times: want %d", rank, c.count[key], c.expect[key], want)
					}
				}
			})
		}
	}
}

// TestWrapOptions: -d dumps the declarations, one per line; -c may carry
// flags (here -include, which declares one more MPI function) and -I adds
// include directories (here the MPI's own, with a plain C compiler).
func TestWrapOptions(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			dir := t.TempDir()
			r := mustRun(t, dir, mpitraceBin, "wrap", "-d", "-c", m.cc)
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if len(lines) < 300 || !slices.Contains(lines, "int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)") ||
				!slices.Contains(lines, "double MPI_Wtime(void)") {
				t.Fatalf("-d printed %d lines:\n%s", len(lines), firstLines(r.stdout, 10))
			}
			for _, l := range lines {
				if strings.Contains(l, "MPI_T_") || strings.Contains(l, "c2f") || strings.Contains(l, "MPI_Comm_spawn") || !strings.HasSuffix(l, ")") {
					t.Errorf("-d printed %q", l)
				}
			}
			if m.name == "mpich" {
				for _, want := range []string{"MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp)", "int MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session)"} {
					if !slices.Contains(lines, want) {
						t.Errorf("-d lacks %q", want)
					}
				}
				if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "int MPI_Send_c(") }) {
					t.Errorf("-d lacks MPI_Send_c")
				}
			}

			// A plain C compiler, the MPI's include directories through
			// -I, and flags in -c: -include wrap_extra.h, found through
			// another -I, declares MPI_Wrap_extension.
			common := []string{"-c", "cc -include wrap_extra.h", "-I", filepath.Dir(wrapFixture(t, "wrap_extra.h"))}
			for _, d := range m.includeDirs(t) {
				common = append(common, "-I", d)
			}
			r = mustRun(t, dir, append([]string{mpitraceBin, "wrap", "-d"}, common...)...)
			got := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if !slices.Contains(got, "int MPI_Wrap_extension(int level, const char *what)") || len(got) != len(lines)+1 {
				t.Errorf("-c with flags and -I: %d declarations (want %d and MPI_Wrap_extension)", len(got), len(lines)+1)
			}
			tmpl := filepath.Join(dir, "ext.w")
			os.WriteFile(tmpl, []byte("{{fn f MPI_Wrap_extension}}{{callfn}}{{endfn}}\n"), 0o644)
			r = mustRun(t, dir, append(append([]string{mpitraceBin, "wrap"}, common...), tmpl)...)
			if !strings.Contains(r.stdout, "_wrap_py_return_val = PMPI_Wrap_extension(arg_0, arg_1);") {
				t.Errorf("no wrapper for the function declared through -c's flags:\n%s", firstLines(r.stdout, 20))
			}

			// Output is deterministic.
			a := mustRun(t, dir, mpitraceBin, "wrap", "-fgw", "-c", m.cc, wrapFixture(t, "count.w"), wrapFixture(t, "macros.w"))
			b := mustRun(t, dir, mpitraceBin, "wrap", "-fgw", "-c", m.cc, wrapFixture(t, "count.w"), wrapFixture(t, "macros.w"))
			if a.stdout != b.stdout || len(a.stdout) < 100000 {
				t.Errorf("two runs gave different output (%d and %d bytes)", len(a.stdout), len(b.stdout))
			}
			// -s: no front matter, macros in comments expanded.
			s := mustRun(t, dir, mpitraceBin, "wrap", "-s", "-c", m.cc, wrapFixture(t, "names.w"))
			if strings.Contains(s.stdout, "#include <mpi.h>") || !strings.Contains(s.stdout, "from input file 0 and") ||
				!strings.Contains(s.stdout, `"MPI_Send", /* MPI_Send takes 6 arguments */`) {
				t.Errorf("-s output:\n%s", firstLines(s.stdout, 12))
			}
		})
	}
}

// includeDirs are the include directories m's compiler wrapper passes.
func (m mpiImpl) includeDirs(t *testing.T) []string {
	t.Helper()
	flag := "-showme"
	if m.name == "mpich" {
		flag = "-show"
	}
	out, err := exec.Command(m.cc, flag).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", m.cc, flag, err)
	}
	var dirs []string
	for _, w := range strings.Fields(string(out)) {
		if strings.HasPrefix(w, "-I") {
			dirs = append(dirs, strings.TrimPrefix(w, "-I"))
		}
	}
	if len(dirs) == 0 {
		t.Fatalf("%s %s shows no -I: %s", m.cc, flag, out)
	}
	return dirs
}

// TestWrapErrors: every error is one line "file.w:LINE: message" (or, for
// a bad option, a message and the usage), the exit status is 1 (2 for bad
// options), and no output file is left, not even an older one.
func TestWrapErrors(t *testing.T) {
	m := mpis[0]
	m.require(t)
	dir := t.TempDir()
	tests := []struct {
		name, tmpl, want string
		args             []string
		code             int
	}{
		{"unknown macro", "int x;\n{{fn f MPI_Send}}\n  {{nosuch}}\n{{endfn}}\n", "bad.w:3: unknown macro 'nosuch' (while expanding MPI_Send)", nil, 1},
		{"unknown function", "\n\n{{fn f MPI_Send MPI_Sned}}{{callfn}}{{endfn}}\n", "bad.w:3: MPI_Sned is not an MPI function declared in mpi.h", nil, 1},
		{"bad index", "{{fn f MPI_Barrier}}\n{{callfn}}\n{{3}}\n{{endfn}}\n", "bad.w:3: index 3 out of range for 'args' (1 elements) (while expanding MPI_Barrier)", nil, 1},
		{"not an index", "{{foreachfn f MPI_Send}}{{args two}}{{endforeachfn}}\n", "bad.w:1: invalid index 'two' into 'args' (while expanding MPI_Send)", nil, 1},
		{"unclosed block", "/* tool */\n{{fnall f}}\n{{callfn}}\n", "bad.w:2: {{fnall}} is never closed: missing {{endfnall}}", nil, 1},
		{"unterminated macro", "{{fn f MPI_Send}}{{callfn}}{{endfn}}\n{{fn_num\n", "bad.w:2: unterminated macro: '{{' without '}}'", nil, 1},
		{"bad option", "{{fn_num}}\n", "mpitrace: unknown shorthand flag: 'x' in -x", []string{"-x"}, 2},
		{"bad binding", "{{fn_num}}\n", `mpitrace: -i "pmpi_start": the pmpi_init binding must be one of PMPI_INIT, pmpi_init, pmpi_init_, pmpi_init__`, []string{"-i", "pmpi_start"}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := filepath.Join(dir, "bad.w")
			os.WriteFile(in, []byte(tc.tmpl), 0o644)
			// A failed generation removes an older output; a usage error
			// writes none.
			out := filepath.Join(dir, "out.c")
			os.Remove(out)
			if tc.code == 1 {
				os.WriteFile(out, []byte("an older output\n"), 0o644)
			}
			args := append([]string{mpitraceBin, "wrap", "-c", m.cc, "-o", out}, tc.args...)
			r := run(t, dir, append(args, "bad.w")...)
			if r.code != tc.code || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q; want exit %d", r.code, r.stdout, tc.code)
			}
			lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
			if lines[0] != tc.want {
				t.Errorf("stderr:\n%s\nwant first line:\n%s", r.stderr, tc.want)
			}
			if tc.code == 1 && len(lines) != 1 {
				t.Errorf("%d lines on stderr, want 1:\n%s", len(lines), r.stderr)
			}
			if tc.code == 2 && (len(lines) != 3 || !strings.HasPrefix(lines[1], "usage: mpitrace wrap ")) {
				t.Errorf("a bad option prints the message and the usage:\n%s", r.stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("an output file is left after a failed run")
			}
		})
	}
}

// TestWrapCMake configures and builds a tiny CMake project that generates
// its tool with cmake/MpitraceWrap.cmake's add_wrapped_file(), passing
// several flags, and runs a program with the tool preloaded.
func TestWrapCMake(t *testing.T) {
	cmake, err := exec.LookPath("cmake")
	if err != nil {
		t.Fatal("cmake is not installed: run 'make deps' (apt-get install cmake)")
	}
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			build := t.TempDir()
			moduleDir, _ := filepath.Abs(filepath.Join("..", "..", "cmake"))
			mustRun(t, build, cmake, "-S", wrapFixture(t, "cmake"), "-B", build,
				"-DMPI_C_COMPILER="+m.cc, "-DMPITRACE_EXECUTABLE="+mpitraceBin, "-DCMAKE_MODULE_PATH="+moduleDir)
			mustRun(t, build, cmake, "--build", build)
			gen, err := os.ReadFile(filepath.Join(build, "tool.c"))
			if err != nil {
				t.Fatal(err)
			}
			// All three flags reached mpitrace wrap, not only the first.
			for flag, mark := range map[string]string{"-f": "Fortran Wrappers for MPI_Send", "-g": "static _WRAP_THREAD_LOCAL int in_wrapper", "-w": "-w: silence deprecation warnings"} {
				if !strings.Contains(string(gen), mark) {
					t.Errorf("the generated tool.c lacks %q: flag %s was not passed", mark, flag)
				}
			}
			lib := filepath.Join(build, "libcmaketool.so")
			prog := filepath.Join(build, "hello")
			r := mustRun(t, build, m.preload(2, lib, prog)...)
			if got := regexp.MustCompile(`(?m)^TOOL \d+ calls$`).FindAllString(r.stdout, -1); len(got) != 2 {
				t.Errorf("the tool's report is missing:\n%s", r.stdout)
			}
			// Regenerated when the template changes, not otherwise.
			r = mustRun(t, build, cmake, "--build", build)
			if strings.Contains(r.stdout, "Generating") {
				t.Errorf("a second build regenerated the tool:\n%s", r.stdout)
			}
		})
	}
}
