//go:build cgo

package instrument

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// corpus returns the tricky sources of testdata/corpus.
func corpus(t *testing.T) []string {
	files, err := filepath.Glob("testdata/corpus/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	sort.Strings(files)
	return files
}

var expectRE = regexp.MustCompile(`expect: loops=(\d+) notes=(\d+)`)

// TestGolden compares the instrumented corpus with testdata/golden and
// checks the number of loops instrumented and left alone that each source
// announces in its "expect:" line.
func TestGolden(t *testing.T) {
	for _, f := range corpus(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cpp, _ := Lang(f)
			res := Source(src, Options{Path: f, CPP: cpp, Chance: DefaultChance})
			var got bytes.Buffer
			got.Write(res.Out)
			got.WriteString("\n/* notes:\n")
			for _, n := range res.Notes {
				fmt.Fprintf(&got, "%s\n", n)
			}
			got.WriteString("*/\n")
			goldenFile := filepath.Join("testdata/golden", filepath.Base(f)+".golden")
			golden.Check(t, goldenFile, got.String(), *update)
			m := expectRE.FindSubmatch(src)
			if m == nil {
				t.Fatalf("%s has no 'expect: loops=N notes=M' line", f)
			}
			loops, _ := strconv.Atoi(string(m[1]))
			notes, _ := strconv.Atoi(string(m[2]))
			if res.Loops != loops || len(res.Notes) != notes {
				t.Errorf("instrumented %d loops with %d notes, want %d and %d; notes:\n%v", res.Loops, len(res.Notes), loops, notes, res.Notes)
			}
			// Markers stay on the lines of their loops: the output has the
			// #include and #line lines more, and two lines per loop whose
			// marker goes before a pragma.
			moved := bytes.Count(res.Out, []byte(");\n#line "))
			if a, b := bytes.Count(src, []byte("\n")), bytes.Count(res.Out, []byte("\n")); b-a != 2+2*moved {
				t.Errorf("the output has %d lines more than the input; want %d", b-a, 2+2*moved)
			}
		})
	}
}

// compiler returns gcc or g++ and the flags for src, or skips the test.
func compiler(t *testing.T, path string, src []byte) []string {
	cpp, _ := Lang(path)
	cc := "gcc"
	if cpp {
		cc = "g++"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("%s not found", cc)
	}
	args := []string{cc, "-Wall", "-O1", "-I", "../recorder/c"}
	if bytes.Contains(src, []byte("#pragma omp")) {
		args = append(args, "-fopenmp")
	}
	return args
}

var warningRE = regexp.MustCompile(`(?m)^([^:\n]+):(\d+):\d+: warning: .*\[(-W[^\]]+)\]`)

// warnings returns the warnings of a compiler's output as file:line [-Wflag].
func warnings(out []byte) []string {
	var w []string
	for _, m := range warningRE.FindAllSubmatch(out, -1) {
		w = append(w, fmt.Sprintf("%s:%s %s", m[1], m[2], m[3]))
	}
	sort.Strings(w)
	return w
}

// build compiles path (named name in diagnostics) into exe and returns
// the compiler's warnings.
func build(t *testing.T, args []string, path, exe string) []string {
	cmd := exec.Command(args[0], append(append(args[1:], "-o", exe, path), "-ldl")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return warnings(out)
}

func runExe(t *testing.T, exe string) string {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=2")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", exe, err, out)
	}
	return string(out)
}

// TestCorpusRuns compiles every corpus source as it is and instrumented
// (as is, and through --preprocess) and checks that the instrumented
// program compiles without new warnings and prints what the original
// prints.
func TestCorpusRuns(t *testing.T) {
	for _, f := range corpus(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			args := compiler(t, f, src)
			dir := t.TempDir()
			orig := filepath.Join(dir, "orig")
			wantWarn := build(t, args, f, orig)
			want := runExe(t, orig)
			cpp, _ := Lang(f)
			for _, pre := range []bool{false, true} {
				text := src
				if pre {
					cmd := exec.Command(args[0], append(args[1:], "-E", f)...)
					text, err = cmd.Output()
					if err != nil {
						t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
					}
				}
				res := Source(text, Options{Path: f, CPP: cpp, Chance: 0.5, Preprocessed: pre})
				inst := filepath.Join(dir, fmt.Sprintf("pre%v_%s", pre, filepath.Base(f)))
				if err := os.WriteFile(inst, res.Out, 0o644); err != nil {
					t.Fatal(err)
				}
				gotWarn := build(t, args, inst, inst+".exe")
				if !pre && strings.Join(gotWarn, "\n") != strings.Join(wantWarn, "\n") {
					t.Errorf("warnings differ:\noriginal:\n%s\ninstrumented:\n%s", strings.Join(wantWarn, "\n"), strings.Join(gotWarn, "\n"))
				}
				if got := runExe(t, inst+".exe"); got != want {
					t.Errorf("preprocess=%v: the instrumented program prints\n%s\nthe original\n%s", pre, got, want)
				}
				// Through the preprocessor, the loops written as macros
				// are instrumented too (preproc.c has some).
				if n := countExpected(t, src); pre && (res.Loops < n || bytes.Contains(src, []byte("FOREACH(i, N)")) && res.Loops <= n) {
					t.Errorf("--preprocess instrumented %d loops; without it %d", res.Loops, n)
				}
			}
		})
	}
}

func countExpected(t *testing.T, src []byte) int {
	m := expectRE.FindSubmatch(src)
	if m == nil {
		t.Fatal("no expect: line")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
