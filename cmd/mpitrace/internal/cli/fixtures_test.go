package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/driver"
	"github.com/mpitrace/mpitrace/internal/golden"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// storedTraces is where the recorded traces of every format version are
// kept (fixtures/traces/README.md), and their goldens under golden/.
var storedTraces = filepath.Join("..", "..", "..", "..", "fixtures", "traces")

// TestStoredTraces runs every analysis command on every stored trace, of
// every format version ever written, and compares the outputs with the
// goldens under fixtures/traces/golden/vN/NAME/: the current reader must
// read and analyse each stored version identically, forever. The traces are
// never regenerated; the goldens are, by `make goldens` (this test with
// -update) when an output changes on purpose.
func TestStoredTraces(t *testing.T) {
	// The goldens must not depend on the machine running them: no host of
	// a stored trace is this machine.
	// (Cleanup, not defer: the subtests are parallel, they run after this
	// function returns.)
	saved := driver.ThisMachine
	t.Cleanup(func() { driver.ThisMachine = saved })
	driver.ThisMachine = func() (string, int) { return "", 0 }
	dirs, err := filepath.Glob(filepath.Join(storedTraces, "v*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]bool{}
	for _, dir := range dirs {
		version, name := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
		versions[version] = true
		t.Run(version+"/"+name, func(t *testing.T) {
			t.Parallel()
			checkStoredTrace(t, dir, filepath.Join(storedTraces, "golden", version, name))
		})
	}
	// Every version ever written has its set; a new version needs one too.
	for _, v := range spec.Versions {
		if !versions[fmt.Sprintf("v%d", v)] {
			t.Errorf("fixtures/traces has no traces of format version %d: record a set (fixtures/traces/README.md)", v)
		}
	}
}

// checkStoredTrace runs the commands on one trace directory and compares
// each output with its golden file in goldenDir.
func checkStoredTrace(t *testing.T, dir, goldenDir string) {
	tmp := t.TempDir()
	// Outputs name the trace directory and the temporary directory: both
	// become placeholders, so the goldens do not depend on where they ran.
	clean := func(s string) string {
		s = strings.ReplaceAll(s, tmp, "$TMP")
		return strings.ReplaceAll(s, dir, "$TRACE")
	}
	check := func(file, got string) {
		t.Helper()
		golden.Check(t, filepath.Join(goldenDir, file), got, *updateLoops)
	}
	// cmd runs mpitrace ARGS DIR, compares its stdout with the golden file
	// and its stderr (diagnostics; never progress, as stderr is no terminal)
	// with FILE.stderr when either is not empty, and returns the stdout.
	cmd := func(file string, args ...string) string {
		t.Helper()
		code, out, errs := runCLI(t, append(args, dir)...)
		if code != ExitOK {
			t.Fatalf("mpitrace %s %s: exit %d\n%s", strings.Join(args, " "), dir, code, errs)
		}
		out = clean(out)
		check(file, out)
		if _, err := os.Stat(filepath.Join(goldenDir, file+".stderr")); errs != "" || err == nil {
			check(file+".stderr", clean(errs))
		}
		return out
	}

	// Call sites resolve in no binary: the recorded paths are read under
	// an empty directory, so that the outputs do not depend on what this
	// machine holds at the recording machine's paths.
	sysroot := filepath.Join(tmp, "sysroot")
	if err := os.Mkdir(sysroot, 0o755); err != nil {
		t.Fatal(err)
	}
	dump := cmd("dump.txt", "dump", "--sysroot", sysroot)
	cmd("stats.json", "stats", "--json")
	cmd("stats-callsite.txt", "stats", "--by", "callsite", "--sysroot", sysroot)
	cp := filepath.Join(tmp, "critPath.out")
	cmd("critpath.txt", "critpath", "-o", cp, "--sysroot", sysroot)
	b, err := os.ReadFile(cp)
	if err != nil {
		t.Fatal(err)
	}
	check("critPath.out", clean(string(b)))
	cmd("critpath.json", "critpath", "--json", "--sysroot", sysroot)
	cmd("critpath-measured.txt", "critpath", "--weights", "measured", "--sysroot", sysroot, "-o", filepath.Join(tmp, "critPath-measured.out"))
	cmd("taskgraph.dot", "dot", "--sysroot", sysroot)

	// loops and regions only where the trace has their events; a golden
	// left without them means the reader lost them.
	kinds := eventKinds(dump)
	analyses := []struct {
		cmd, file string
		kinds     []string
	}{
		{"loops", "loops.txt", []string{"LoopBegin"}},
		{"regions", "regions.txt", []string{"RegionBegin", "KernelBegin", "Alloc"}},
	}
	for _, a := range analyses {
		has := slices.ContainsFunc(a.kinds, func(k string) bool { return kinds[k] })
		file := filepath.Join(goldenDir, a.file)
		if !has {
			if _, err := os.Stat(file); err == nil && !*updateLoops {
				t.Errorf("%s exists but the trace has no %s events any more", file, strings.Join(a.kinds, "/"))
			}
			continue
		}
		cmd(a.file, a.cmd)
		cmd(strings.TrimSuffix(a.file, ".txt")+".json", a.cmd, "--json")
	}
}

// eventKinds returns the kinds of the events in a dump's text ("t=... thr=N
// KIND ...").
func eventKinds(dump string) map[string]bool {
	kinds := map[string]bool{}
	for _, line := range strings.Split(dump, "\n") {
		if !strings.HasPrefix(line, "t=") {
			continue
		}
		if f := strings.Fields(line); len(f) >= 3 {
			kinds[f[2]] = true
		}
	}
	return kinds
}
