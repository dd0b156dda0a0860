package recorder

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Flavor is an MPI implementation family.
type Flavor string

const (
	FlavorUnknown Flavor = ""
	FlavorOpenMPI Flavor = "Open MPI"
	FlavorMPICH   Flavor = "MPICH"
)

// LauncherKind says how a launcher passes environment variables to ranks.
type LauncherKind string

const (
	// LauncherNone: the command is the application itself (a singleton
	// MPI run, or a script): the recorder is preloaded through the
	// environment.
	LauncherNone LauncherKind = "none"
	// LauncherOpenMPI: Open MPI's mpirun/mpiexec, `-x NAME=VALUE`.
	LauncherOpenMPI LauncherKind = "openmpi"
	// LauncherHydra: MPICH's Hydra mpiexec, `-genv NAME VALUE`.
	LauncherHydra LauncherKind = "hydra"
	// LauncherSlurm: srun, `--export=ALL,NAME=VALUE`.
	LauncherSlurm LauncherKind = "slurm"
)

// Launch describes how to run a command with the recorder preloaded.
type Launch struct {
	Kind   LauncherKind
	Flavor Flavor // the MPI the recorder must be built for
	MPICC  string // its compiler wrapper
	App    string // the (first context's) application binary, when found
	// Apps are the application binaries found: one per context of an MPMD
	// command line, those of the job a script runs.
	Apps     []string
	Launcher string // the launcher's resolved path, when there is one
	// At is the index in argv of the launcher (or, for LauncherNone, of
	// the command) after the prefix commands that run it.
	At int
	// Prefixes are the prefix commands before it (env, nice, numactl,
	// ...), by name.
	Prefixes []string
	// Script names the shell script the launcher was found in, with the
	// line ("run.sh:12"), when it is not on the command line itself.
	Script  string
	Warning string // a mismatch worth telling the user, or ""
}

// DetectLaunch works out the launcher kind and the MPI of argv. mpicc, when
// not empty, is the user's choice of compiler wrapper and wins.
//
// The launcher may follow prefix commands (`env X=1 nice -n 5 mpirun ...`)
// and may be hidden in a shell script (`./run.sh`, `bash -c '...'`), which
// is read, never run. The MPI is the one the applications are linked
// against, else the launcher's.
func DetectLaunch(ctx context.Context, argv []string, mpicc string) Launch {
	l := Launch{Kind: LauncherNone, At: -1}
	if len(argv) == 0 {
		return l
	}
	l.At, l.Prefixes = skipPrefixes(argv)
	if l.At >= len(argv) {
		// The prefixes' options could not be followed: the command as a
		// whole is all there is.
		l.At, l.Prefixes = 0, nil
	}
	d := &detector{ctx: ctx, launchers: map[string]launcherClass{}}
	jobs := d.command(argv[l.At:], "", 0)
	if len(jobs) > 0 && jobs[0].where == "" {
		l.Kind = jobs[0].kind
	}
	for _, j := range jobs {
		if l.Launcher == "" && j.launcher != "" {
			l.Launcher = j.launcher
			if j.where != "" {
				l.Script = j.where
			}
		}
		for _, a := range j.apps {
			if a.path != "" {
				l.Apps = append(l.Apps, a.path)
			}
		}
	}
	if len(l.Apps) > 0 {
		l.App = l.Apps[0]
	}
	l.Flavor, l.Warning = decideFlavor(jobs)
	if mpicc != "" {
		l.MPICC = mpicc
		return l
	}
	l.MPICC = compilerFor(l.Flavor, l.Launcher)
	return l
}

// job is one MPI job found: on the command line, or in a script.
type job struct {
	kind           LauncherKind
	launcher       string // resolved path, "" for a singleton
	launcherName   string // as written
	launcherFlavor Flavor
	apps           []app  // one per context
	where          string // "run.sh:12" when found in a script
}

type app struct {
	word   string // as written
	path   string // resolved, "" when not found
	flavor Flavor
}

type launcherClass struct {
	kind     LauncherKind
	flavor   Flavor
	resolved string
}

// detector finds the jobs of a command.
type detector struct {
	ctx       context.Context
	launchers map[string]launcherClass // classifyLauncher's answers, by name
}

// maxScriptDepth bounds scripts that run scripts.
const maxScriptDepth = 3

func (d *detector) classify(name string) launcherClass {
	if c, ok := d.launchers[name]; ok {
		return c
	}
	var c launcherClass
	c.kind, c.flavor, c.resolved = classifyLauncher(d.ctx, name)
	d.launchers[name] = c
	return c
}

// command returns the jobs that words (a command after its prefixes) runs.
// dir is the directory of the script it is in ("" on the command line).
func (d *detector) command(words []string, dir string, depth int) []job {
	if len(words) == 0 {
		return nil
	}
	if c := d.classify(words[0]); c.kind != LauncherNone {
		return []job{d.launcherJob(c, words, dir)}
	}
	if depth < maxScriptDepth {
		if text, name, sdir, ok := shellScript(words, dir); ok {
			return d.script(text, name, sdir, depth+1)
		}
	}
	a := newApp(words[0], dir)
	return []job{{kind: LauncherNone, apps: []app{a}}}
}

// script returns the jobs a shell script starts: its launcher command
// lines, the scripts it runs, and the MPI programs it runs directly.
func (d *detector) script(text, name, dir string, depth int) []job {
	var jobs []job
	vars := shellVars{}
	for _, c := range parseShell(text) {
		words := vars.commandWords(c)
		at, _ := skipPrefixes(words)
		if at >= len(words) {
			continue
		}
		found := d.command(words[at:], dir, depth)
		for _, j := range found {
			if j.kind == LauncherNone && j.launcher == "" && (len(j.apps) == 0 || j.apps[0].flavor == FlavorUnknown) {
				continue // echo, cp, date...: not an MPI job
			}
			if j.where == "" {
				j.where = fmt.Sprintf("%s:%d", name, c.line)
			}
			jobs = append(jobs, j)
		}
	}
	return jobs
}

// launcherJob reads a launcher's command line: its contexts and their
// applications.
func (d *detector) launcherJob(c launcherClass, words []string, dir string) job {
	j := job{kind: c.kind, launcher: c.resolved, launcherName: words[0], launcherFlavor: c.flavor}
	s := launcherSyntax(c.kind)
	contexts := splitContexts(words[1:])
	for _, ctx := range contexts {
		if c.kind == LauncherSlurm && hasFlag(s, ctx, "multi-prog") {
			j.apps = append(j.apps, multiProgApps(s, ctx, dir)...)
			continue
		}
		var files []string
		if f, ok := optionValue(s, ctx, "configfile"); ok && c.kind == LauncherHydra {
			files = append(files, f)
		}
		if f, ok := optionValue(s, ctx, "app"); ok && c.kind == LauncherOpenMPI {
			files = append(files, f)
		}
		for _, f := range files {
			j.apps = append(j.apps, contextFileApps(s, f, dir)...)
		}
		if w, rest := contextApp(s, ctx); w != "" {
			j.apps = append(j.apps, contextAppFallback(newApp(w, dir), rest, dir))
		}
	}
	return j
}

// contextAppFallback: when the word taken for a context's application is
// no program (the value of an option the tables do not know, as in
// `mpirun --new-option 5 ./app`), a later word that is an MPI program is
// the application.
func contextAppFallback(a app, rest []string, dir string) app {
	if a.path != "" {
		return a
	}
	for _, w := range rest {
		if b := newApp(w, dir); !strings.HasPrefix(w, "-") && b.flavor != FlavorUnknown {
			return b
		}
	}
	return a
}

func launcherSyntax(k LauncherKind) *syntax {
	switch k {
	case LauncherHydra:
		return hydraSyntax
	case LauncherSlurm:
		return srunSyntax
	}
	return openMPISyntax
}

// hasFlag reports whether a context's options include --name.
func hasFlag(s *syntax, ctx []string, name string) bool {
	end := s.operand(ctx)
	if end < 0 {
		end = len(ctx)
	}
	for _, a := range ctx[:end] {
		if strings.TrimLeft(a, "-") == name {
			return true
		}
	}
	return false
}

// multiProgApps reads the programs of `srun --multi-prog CONF`: lines of
// "RANKS PROGRAM ARGS...".
func multiProgApps(s *syntax, ctx []string, dir string) []app {
	i := s.operand(ctx)
	if i < 0 {
		return nil
	}
	text, ok := readText(resolveFile(ctx[i], dir))
	if !ok {
		return nil
	}
	var apps []app
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		apps = append(apps, newApp(f[1], dir))
	}
	return apps
}

// contextFileApps reads the applications of a file of contexts, one per
// line: Open MPI's --app FILE, Hydra's -configfile FILE.
func contextFileApps(s *syntax, file, dir string) []app {
	text, ok := readText(resolveFile(file, dir))
	if !ok {
		return nil
	}
	var apps []app
	for _, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		contexts := splitContexts(strings.Fields(line))
		for _, ctx := range contexts {
			if w, _ := contextApp(s, ctx); w != "" {
				apps = append(apps, newApp(w, dir))
			}
		}
	}
	return apps
}

func newApp(word, dir string) app {
	a := app{word: word, path: resolveProgram(word, dir)}
	if a.path != "" {
		a.flavor = ELFFlavor(a.path)
	}
	return a
}

// decideFlavor picks the MPI of the jobs: the applications' first, else
// the launchers'. The warning names a disagreement.
func decideFlavor(jobs []job) (Flavor, string) {
	type evidence struct {
		flavor Flavor
		what   string
	}
	var apps, launchers []evidence
	for _, j := range jobs {
		where := ""
		if j.where != "" {
			where = " (" + j.where + ")"
		}
		for _, a := range j.apps {
			if a.flavor != FlavorUnknown {
				apps = append(apps, evidence{a.flavor, a.word + where})
			}
		}
		if j.launcherFlavor != FlavorUnknown {
			launchers = append(launchers, evidence{j.launcherFlavor, filepath.Base(j.launcherName) + where})
		}
	}
	// other returns the first evidence of another flavor than f's.
	other := func(list []evidence, f Flavor) (evidence, bool) {
		for _, e := range list {
			if e.flavor != f {
				return e, true
			}
		}
		return evidence{}, false
	}
	switch {
	case len(apps) > 0:
		first := apps[0]
		if e, ok := other(apps, first.flavor); ok {
			return first.flavor, fmt.Sprintf("the job runs programs of two MPIs: %s is linked against %s, %s against %s; recording %s (--mpicc chooses)",
				first.what, first.flavor, e.what, e.flavor, first.flavor)
		}
		if e, ok := other(launchers, first.flavor); ok {
			return first.flavor, fmt.Sprintf("%s is linked against %s but %s is %s's launcher; the run will likely fail",
				first.what, first.flavor, e.what, e.flavor)
		}
		return first.flavor, ""
	case len(launchers) > 0:
		first := launchers[0]
		if e, ok := other(launchers, first.flavor); ok {
			return first.flavor, fmt.Sprintf("the command starts jobs of two MPIs: %s is %s's launcher, %s %s's; recording %s (--mpicc chooses)",
				first.what, first.flavor, e.what, e.flavor, first.flavor)
		}
		return first.flavor, ""
	}
	return FlavorUnknown, ""
}

// resolveProgram returns the executable file a command word runs, "" when
// there is none: a word with a slash is a path (relative to the working
// directory, else to dir, the directory of the script it is in), any other
// word is looked up on PATH.
func resolveProgram(word, dir string) string {
	var p string
	if strings.Contains(word, "/") {
		p = resolveFile(word, dir)
	} else if lp, err := exec.LookPath(word); err == nil {
		p = lp
	}
	if p == "" {
		return ""
	}
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		return ""
	}
	return p
}

// resolveFile returns the path of an existing file named by word, relative
// to the working directory, else to dir; "" when there is none.
func resolveFile(word, dir string) string {
	if word == "" {
		return ""
	}
	candidates := []string{word}
	if dir != "" && !filepath.IsAbs(word) {
		candidates = append(candidates, filepath.Join(dir, word))
	}
	for _, p := range candidates {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// classifyLauncher looks at the launcher's name, then at what it resolves
// to, then at its --version output.
func classifyLauncher(ctx context.Context, name string) (LauncherKind, Flavor, string) {
	path, err := exec.LookPath(name)
	if err != nil {
		return LauncherNone, FlavorUnknown, ""
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		resolved = path
	}
	isMPILauncher := func(n string) bool { return strings.HasPrefix(n, "mpirun") || strings.HasPrefix(n, "mpiexec") }
	for _, n := range []string{filepath.Base(path), filepath.Base(resolved)} {
		switch {
		case n == "srun":
			return LauncherSlurm, FlavorUnknown, resolved
		case n == "orterun" || n == "prterun" || isMPILauncher(n) && strings.HasSuffix(n, ".openmpi"):
			return LauncherOpenMPI, FlavorOpenMPI, resolved
		case n == "mpiexec.hydra" || isMPILauncher(n) && strings.HasSuffix(n, ".mpich"):
			return LauncherHydra, FlavorMPICH, resolved
		}
	}
	// Anything else that is not called mpirun or mpiexec is the
	// application itself (or a script), not a launcher.
	if !isMPILauncher(filepath.Base(path)) {
		return LauncherNone, FlavorUnknown, ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	text := string(out)
	switch {
	case strings.Contains(text, "Open MPI") || strings.Contains(text, "OpenRTE"):
		return LauncherOpenMPI, FlavorOpenMPI, resolved
	case strings.Contains(text, "HYDRA") || strings.Contains(text, "Hydra"):
		return LauncherHydra, FlavorMPICH, resolved
	}
	return LauncherOpenMPI, FlavorUnknown, resolved
}

// ELFFlavor tells which MPI an executable is linked against, from the
// shared libraries it needs.
func ELFFlavor(path string) Flavor {
	libs, ok := neededLibraries(path)
	if !ok {
		return FlavorUnknown
	}
	for _, l := range libs {
		switch {
		// MPICH names its library libmpich (libmpi.so.12 on some systems);
		// Open MPI's is libmpi.so.40 with libmpi_mpifh/libmpi_usempi for Fortran.
		case strings.HasPrefix(l, "libmpich"), strings.HasPrefix(l, "libmpi.so.12"):
			return FlavorMPICH
		case strings.HasPrefix(l, "libmpi.so"), strings.HasPrefix(l, "libmpi_mpifh"), strings.HasPrefix(l, "libmpi_usempi"):
			return FlavorOpenMPI
		}
	}
	return FlavorUnknown
}

// compilerFor picks the compiler wrapper of a flavor, preferring the one
// installed next to the launcher.
func compilerFor(f Flavor, launcher string) string {
	var names []string
	switch f {
	case FlavorOpenMPI:
		names = []string{"mpicc.openmpi", "mpicc"}
	case FlavorMPICH:
		names = []string{"mpicc.mpich", "mpicc"}
	default:
		names = []string{"mpicc"}
	}
	if launcher != "" {
		dir := filepath.Dir(launcher)
		for _, n := range names {
			p := filepath.Join(dir, n)
			if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
				return p
			}
		}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return names[len(names)-1]
}

// WithoutMPI reports whether path is an ELF executable that does not link
// an MPI library (no libmpi* among its DT_NEEDED entries): a program with
// loop markers only, recorded by the core recorder as one rank. Anything
// that cannot be read as ELF (a script, a missing file) is not.
func WithoutMPI(path string) bool {
	libs, ok := neededLibraries(path)
	if !ok {
		return false
	}
	for _, l := range libs {
		if strings.HasPrefix(l, "libmpi") {
			return false
		}
	}
	return true
}

// neededLibraries returns the DT_NEEDED entries of an ELF file; false when
// path is no ELF file.
func neededLibraries(path string) ([]string, bool) {
	if path == "" {
		return nil, false
	}
	f, err := elf.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	return libs, err == nil
}
