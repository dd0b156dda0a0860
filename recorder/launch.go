package recorder

import (
	"context"
	"debug/elf"
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
	Kind     LauncherKind
	Flavor   Flavor // the MPI the recorder must be built for
	MPICC    string // its compiler wrapper
	App      string // the application binary, when found
	Launcher string // the launcher's resolved path, when there is one
	Warning  string // a mismatch worth telling the user, or ""
}

// DetectLaunch works out the launcher kind and the MPI of argv. mpicc, when
// not empty, is the user's choice of compiler wrapper and wins.
func DetectLaunch(ctx context.Context, argv []string, mpicc string) Launch {
	l := Launch{Kind: LauncherNone}
	if len(argv) == 0 {
		return l
	}
	var launcherFlavor Flavor
	l.Kind, launcherFlavor, l.Launcher = classifyLauncher(ctx, argv[0])
	appArgs := argv
	if l.Kind != LauncherNone {
		appArgs = argv[1:]
	}
	l.App = findApp(appArgs)
	appFlavor := FlavorUnknown
	if l.App != "" {
		appFlavor = ELFFlavor(l.App)
	}
	switch {
	case appFlavor != FlavorUnknown:
		l.Flavor = appFlavor
	default:
		l.Flavor = launcherFlavor
	}
	if appFlavor != FlavorUnknown && launcherFlavor != FlavorUnknown && appFlavor != launcherFlavor {
		l.Warning = l.App + " is linked against " + string(appFlavor) + " but " + filepath.Base(argv[0]) +
			" is " + string(launcherFlavor) + "'s launcher; the run will likely fail"
	}
	if mpicc != "" {
		l.MPICC = mpicc
		return l
	}
	l.MPICC = compilerFor(l.Flavor, l.Launcher)
	return l
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

// findApp returns the first argument that is an executable file.
func findApp(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		p := a
		if !strings.Contains(a, "/") {
			lp, err := exec.LookPath(a)
			if err != nil {
				continue
			}
			p = lp
		}
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
			continue
		}
		return p
	}
	return ""
}

// ELFFlavor tells which MPI an executable is linked against, from the
// shared libraries it needs.
func ELFFlavor(path string) Flavor {
	f, err := elf.Open(path)
	if err != nil {
		return FlavorUnknown
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
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

// Command returns argv with the launcher flags that give every rank the
// environment env (NAME=VALUE entries), and the environment entries the
// launcher process itself needs (for LauncherNone, the whole of env).
func (l Launch) Command(argv []string, env []string) (cmd []string, childEnv []string) {
	switch l.Kind {
	case LauncherOpenMPI:
		cmd = []string{argv[0]}
		for _, e := range env {
			cmd = append(cmd, "-x", e)
		}
		return append(cmd, argv[1:]...), nil
	case LauncherHydra:
		cmd = []string{argv[0]}
		for _, e := range env {
			name, value, _ := strings.Cut(e, "=")
			cmd = append(cmd, "-genv", name, value)
		}
		return append(cmd, argv[1:]...), nil
	case LauncherSlurm:
		return append([]string{argv[0], "--export=ALL," + strings.Join(env, ",")}, argv[1:]...), nil
	}
	return argv, env
}
