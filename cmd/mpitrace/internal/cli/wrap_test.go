package cli

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeCompiler writes a shell script that stands for an MPI compiler
// wrapper: it records its arguments in args.txt and prints a small
// preprocessed mpi.h. It returns the script's path.
func fakeCompiler(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "fakecc")
	src := `#!/bin/sh
printf '%s\n' "$@" > "` + filepath.Join(dir, "args.txt") + `"
cat <<'EOF'
# 1 "mpi.h"
int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Barrier(MPI_Comm comm);
double MPI_Wtime(void);
int MPI_T_init_thread(int required, int *provided);
MPI_Fint MPI_Comm_c2f(MPI_Comm comm);
EOF
`
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

func TestWrapFlagParsing(t *testing.T) {
	tests := []struct {
		args []string
		want wrapOptions
	}{
		{[]string{"a.w"}, wrapOptions{Compiler: "mpicc", PMPIInit: "pmpi_init_", Files: []string{"a.w"}}},
		{[]string{"-fgd", "-s", "-w", "a.w", "b.w"}, wrapOptions{Dump: true, Fortran: true, Guards: true, NoFrontMatter: true, NoDeprecation: true,
			Compiler: "mpicc", PMPIInit: "pmpi_init_", Files: []string{"a.w", "b.w"}}},
		// -c may carry flags; -I repeats (commas are not separators);
		// options may follow the files, as with wrap.py's gnu_getopt.
		{[]string{"-c", "mpicc -DX -I/x", "a.w", "-I", "/inc/a,b", "-I/inc/c", "-i", "PMPI_INIT", "-o", "out.c"},
			wrapOptions{Compiler: "mpicc -DX -I/x", Includes: []string{"/inc/a,b", "/inc/c"}, PMPIInit: "PMPI_INIT", Output: "out.c", Files: []string{"a.w"}}},
		{[]string{"-d"}, wrapOptions{Dump: true, Compiler: "mpicc", PMPIInit: "pmpi_init_"}},
		{[]string{"--header-names", "a.w"}, wrapOptions{HeaderNames: true, Compiler: "mpicc", PMPIInit: "pmpi_init_", Files: []string{"a.w"}}},
	}
	for _, tc := range tests {
		var got *wrapOptions
		cmd := newWrapCmd(&Streams{}, func(_ context.Context, o *wrapOptions) error { got = o; return nil })
		cmd.SetArgs(tc.args)
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		if err := cmd.Execute(); err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if len(got.Files) == 0 {
			got.Files = nil
		}
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%v:\n got %+v\nwant %+v", tc.args, *got, tc.want)
		}
	}
}

func TestWrapGenerates(t *testing.T) {
	cc := fakeCompiler(t)
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "t.w")
	os.WriteFile(tmpl, []byte("// {{not expanded}}\n{{fnall f}}count({{fileno}});\n{{callfn}}\n{{endfnall}}\n"), 0o644)
	second := filepath.Join(dir, "u.w")
	os.WriteFile(second, []byte("int file_{{fileno}};\n"), 0o644)

	code, out, errs := runCLI(t, "wrap", "-c", cc+" -DFAKE", "-I", "/opt/mpi/include", tmpl, second)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"#include <mpi.h>", "// {{not expanded}}", "_EXTERN_C_ double MPI_Wtime(void) { ",
		"count(0);\n_wrap_py_return_val = PMPI_Barrier(arg_0);", "int file_1;\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// wrap.py's exclusions: MPI_T_*, conversions.
	if strings.Contains(out, "MPI_T_init_thread") || strings.Contains(out, "MPI_Comm_c2f") {
		t.Error("an excluded function was wrapped")
	}
	args, _ := os.ReadFile(filepath.Join(filepath.Dir(cc), "args.txt"))
	if a := strings.Fields(string(args)); len(a) != 4 || a[0] != "-DFAKE" || a[1] != "-E" || a[2] != "-I/opt/mpi/include" || !strings.HasSuffix(a[3], ".c") {
		t.Errorf("the compiler ran with %q", args)
	}

	// -o writes the file, and nothing to stdout; -g, -f, -w, -s change it.
	outFile := filepath.Join(dir, "w.c")
	code, out, errs = runCLI(t, "wrap", "-fgw", "-c", cc, "-o", outFile, tmpl)
	b, err := os.ReadFile(outFile)
	if code != 0 || out != "" || errs != "" || err != nil {
		t.Fatalf("exit %d, stdout %q, stderr %q, %v", code, out, errs, err)
	}
	for _, want := range []string{"static _WRAP_THREAD_LOCAL int in_wrapper = 0;", "_EXTERN_C_ void mpi_barrier_(MPI_Fint *arg_0, MPI_Fint *ierr) { ",
		"WRAP_MPI_CALL_PREFIX\n_wrap_py_return_val = PMPI_Send("} {
		if !strings.Contains(string(b), want) {
			t.Errorf("-fgw output lacks %q", want)
		}
	}
	// -s: no front matter, and comments are text like any other.
	os.WriteFile(second, []byte("// {{fileno}} {{foreachfn f MPI_Wtime}}{{ret_type}}{{endforeachfn}}\n"), 0o644)
	code, out, _ = runCLI(t, "wrap", "--header-names", "-c", cc, tmpl)
	if code != 0 || !strings.Contains(out, "_wrap_py_return_val = PMPI_Send(buf, count, datatype, dest, tag, comm);") {
		t.Errorf("--header-names: exit %d", code)
	}
	code, out, _ = runCLI(t, "wrap", "-s", "-c", cc, second)
	if code != 0 || out != "// 0 double\n" {
		t.Errorf("-s: exit %d\n%q", code, out)
	}
	code, _, errs = runCLI(t, "wrap", "-s", "-c", cc, tmpl)
	if code != 1 || errs != tmpl+":1: unknown macro 'not'\n" {
		t.Errorf("-s with a macro in a comment: exit %d, %q", code, errs)
	}

	// -d: one declaration per line, the exclusions left out.
	code, out, _ = runCLI(t, "wrap", "-d", "-c", cc)
	want := "int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)\nint MPI_Barrier(MPI_Comm comm)\ndouble MPI_Wtime(void)\n"
	if code != 0 || out != want {
		t.Errorf("-d: exit %d\n%s", code, out)
	}
}

// TestWrapErrorPaths: a template error is one line "file.w:LINE: message"
// on stderr with exit status 1; a bad option or argument exits 2 with the
// usage. No output file is left in either case, not even an older one.
func TestWrapErrorPaths(t *testing.T) {
	cc := fakeCompiler(t)
	dir := t.TempDir()
	tests := []struct {
		name, tmpl string
		args       []string
		code       int
		want       string // stderr's first line
	}{
		{"unknown macro", "x\n{{fn f MPI_Send}}\n{{nosuch 1}}\n{{endfn}}", nil, 1, "IN:3: unknown macro 'nosuch' (while expanding MPI_Send)"},
		{"unknown function", "{{fnall f}}{{endfnall}}\n{{foreachfn f MPI_Wtime\n MPI_Recv}}{{endforeachfn}}", nil, 1, "IN:2: MPI_Recv is not an MPI function declared in mpi.h"},
		{"bad index", "{{fn f MPI_Send}}\n{{get_arg 6}}{{endfn}}", nil, 1, "IN:2: index 6 out of range for 'get_arg' (6 elements) (while expanding MPI_Send)"},
		{"unclosed block", "{{fn f MPI_Send}}\n{{foreachfn g MPI_Wtime}}\n{{endfn}}", nil, 1, "IN:3: {{endfn}} does not close {{foreachfn}} opened at line 2 (expected {{endforeachfn}})"},
		{"never closed", "\n{{forallfn f}}\n", nil, 1, "IN:2: {{forallfn}} is never closed: missing {{endforallfn}}"},
		{"stray end", "{{endfnall}}", nil, 1, "IN:1: {{endfnall}} without a matching {{fnall}}"},
		{"bad option", "{{fileno}}", []string{"-q"}, 2, "mpitrace: unknown shorthand flag: 'q' in -q"},
		{"bad binding", "{{fileno}}", []string{"-i", "mpi_init"}, 2, `mpitrace: -i "mpi_init": the pmpi_init binding must be one of PMPI_INIT, pmpi_init, pmpi_init_, pmpi_init__`},
		{"missing argument", "{{fileno}}", []string{"-c"}, 2, "mpitrace: flag needs an argument: 'c' in -c"},
		{"missing compiler", "{{fileno}}", []string{"-c", filepath.Join(dir, "nocc")}, 1, "mpitrace: preprocessing mpi.h: compiler \"" + filepath.Join(dir, "nocc") + "\": no such file or directory (use -c to name the MPI compiler wrapper)"},
		{"compiler not on PATH", "{{fileno}}", []string{"-c", "no-such-mpicc -DX"}, 1, "mpitrace: preprocessing mpi.h: compiler \"no-such-mpicc\" not found in PATH (use -c to name the MPI compiler wrapper)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := filepath.Join(dir, "in.w")
			os.WriteFile(in, []byte(tc.tmpl), 0o644)
			// A failed generation removes an older output; a usage error
			// writes none.
			out := filepath.Join(dir, "out.c")
			os.Remove(out)
			if tc.code == 1 {
				os.WriteFile(out, []byte("an older output\n"), 0o644)
			}
			// Options after the file, as gnu_getopt allows.
			args := append([]string{"wrap", "-c", cc, "-o", out, in}, tc.args...)
			code, stdout, stderr := runCLI(t, args...)
			want := strings.ReplaceAll(tc.want, "IN:", in+":")
			first, _, _ := strings.Cut(stderr, "\n")
			if code != tc.code || stdout != "" || first != want {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d and:\n%s", code, stdout, stderr, tc.code, want)
			}
			if tc.code == 1 && lines(stderr) != 1 {
				t.Errorf("%d lines on stderr, want 1:\n%s", lines(stderr), stderr)
			}
			if tc.code == 2 && !strings.Contains(stderr, "\nusage: mpitrace wrap [-d] [-f] [-g] [-s] [-w] [-c CC] [-I DIR]... [-i BINDING] [-o FILE] FILE.w...\n") {
				t.Errorf("no usage line:\n%s", stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("an output file is left after a failed run")
			}
			if ents, _ := os.ReadDir(dir); len(ents) > 2 {
				t.Errorf("files left in the output directory: %v", ents)
			}
		})
	}
	// No template: a usage error.
	code, _, stderr := runCLI(t, "wrap", "-c", cc)
	if code != 2 || !strings.HasPrefix(stderr, "mpitrace: wrap needs at least one template file (FILE.w), or -d\nusage: ") {
		t.Errorf("no template: exit %d, %q", code, stderr)
	}
	// An unreadable template: exit 1, one line.
	code, _, stderr = runCLI(t, "wrap", "-c", cc, filepath.Join(dir, "missing.w"))
	if code != 1 || stderr != "mpitrace: reading "+filepath.Join(dir, "missing.w")+": no such file or directory\n" {
		t.Errorf("missing template: exit %d, %q", code, stderr)
	}
}
