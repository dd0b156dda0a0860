package recorder

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// The C recorder's event constants and encoders come from the Go spec
// table; the committed header must be what the table generates.
func TestEventsHeaderMatchesSpec(t *testing.T) {
	got, err := os.ReadFile("c/mpit_events.h")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, spec.CHeader()) {
		t.Fatal("recorder/c/mpit_events.h is stale: run go generate ./recorder")
	}
}

// Build compiles the recorder for each installed MPI; the library exports
// a wrapper for every function of the header, and a second Build comes
// from the cache.
func TestBuildBothMPIs(t *testing.T) {
	for _, cc := range []string{"mpicc.openmpi", "mpicc.mpich"} {
		t.Run(cc, func(t *testing.T) {
			if _, err := exec.LookPath(cc); err != nil {
				t.Fatalf("%s not installed: run make deps (apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev)", cc)
			}
			cache := t.TempDir()
			lib, err := Build(context.Background(), BuildOptions{MPICC: cc, CacheDir: cache})
			if err != nil {
				t.Fatal(err)
			}
			if lib.Cached || lib.Functions < 300 {
				t.Fatalf("first build: cached=%v functions=%d", lib.Cached, lib.Functions)
			}
			if len(lib.Names) != lib.Functions || !sort.StringsAreSorted(lib.Names) {
				t.Fatalf("%d names, sorted %v; want the %d functions' names, sorted", len(lib.Names), sort.StringsAreSorted(lib.Names), lib.Functions)
			}
			f, err := elf.Open(lib.Path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			syms, err := f.DynamicSymbols()
			if err != nil {
				t.Fatal(err)
			}
			exported := map[string]bool{}
			for _, s := range syms {
				if s.Section != elf.SHN_UNDEF && elf.ST_BIND(s.Info) == elf.STB_GLOBAL {
					exported[s.Name] = true
				}
			}
			n := 0
			for name := range exported {
				if len(name) > 4 && name[:4] == "MPI_" {
					n++
				}
			}
			if n != lib.Functions {
				t.Errorf("library exports %d MPI_ functions, the header declares %d wrapped ones", n, lib.Functions)
			}
			for _, want := range []string{"MPI_Init", "MPI_Send", "MPI_Waitall", "MPI_Comm_split", "MPI_Wtime", "MPI_T_init_thread", "MPI_Comm_spawn"} {
				if !exported[want] {
					t.Errorf("%s not exported", want)
				}
			}
			for name := range exported {
				if len(name) > 5 && name[:5] == "mpit_" {
					t.Errorf("internal symbol %s is exported", name)
				}
			}
			again, err := Build(context.Background(), BuildOptions{MPICC: cc, CacheDir: cache})
			if err != nil || !again.Cached || again.Path != lib.Path {
				t.Fatalf("second build: %+v, %v; want the cached %s", again, err, lib.Path)
			}
			// The same compiler by another name (its full path, a link to
			// it) shares the build.
			full, _ := exec.LookPath(cc)
			link := filepath.Join(t.TempDir(), "mpicc")
			if err := os.Symlink(full, link); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{full, link} {
				other, err := Build(context.Background(), BuildOptions{MPICC: name, CacheDir: cache})
				if err != nil || !other.Cached || other.Path != lib.Path {
					t.Errorf("build with %s: %+v, %v; want the cached %s", name, other, err, lib.Path)
				}
			}
			if _, err := os.Stat(filepath.Join(lib.Dir, "mpit_wrappers.c")); err != nil {
				t.Errorf("generated wrappers not kept next to the library: %v", err)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	_, err := Build(context.Background(), BuildOptions{MPICC: "no-such-mpicc-xyz", CacheDir: t.TempDir()})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("not found on PATH")) {
		t.Fatalf("missing compiler: got %v", err)
	}
}

// DetectLaunch tells launchers from applications by name, and picks the
// application's MPI from the libraries it is linked against.
func TestDetectLaunch(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "a.c")
	os.WriteFile(src, []byte("#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n"), 0o644)
	for _, tc := range []struct {
		cc, name string
		flavor   Flavor
	}{
		{"mpicc.openmpi", "app.openmpi", FlavorOpenMPI},
		{"mpicc.mpich", "app.mpich", FlavorMPICH},
	} {
		bin := filepath.Join(dir, tc.name)
		if out, err := exec.Command(tc.cc, "-o", bin, src).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", tc.cc, err, out)
		}
		if got := ELFFlavor(bin); got != tc.flavor {
			t.Errorf("ELFFlavor(%s) = %q, want %q", tc.name, got, tc.flavor)
		}
		// An application whose name ends like a launcher's is still the
		// application: a singleton run.
		l := DetectLaunch(context.Background(), []string{bin, "arg"}, "")
		if l.Kind != LauncherNone || l.Flavor != tc.flavor || l.App != bin {
			t.Errorf("DetectLaunch(%s): %+v", tc.name, l)
		}
	}
	for _, tc := range []struct {
		launcher string
		kind     LauncherKind
		flavor   Flavor
	}{
		{"mpirun.openmpi", LauncherOpenMPI, FlavorOpenMPI},
		{"mpiexec.openmpi", LauncherOpenMPI, FlavorOpenMPI},
		{"mpirun.mpich", LauncherHydra, FlavorMPICH},
		{"mpiexec.hydra", LauncherHydra, FlavorMPICH},
		{"mpirun", LauncherOpenMPI, FlavorOpenMPI}, // Debian's alternative points at Open MPI
	} {
		if _, err := exec.LookPath(tc.launcher); err != nil {
			continue
		}
		l := DetectLaunch(context.Background(), []string{tc.launcher, "-np", "2", filepath.Join(dir, "app.mpich")}, "")
		if l.Kind != tc.kind {
			t.Errorf("%s: kind %q, want %q", tc.launcher, l.Kind, tc.kind)
		}
		// The recorder must match the application's MPI, whatever the launcher.
		if l.Flavor != FlavorMPICH || !strings.Contains(l.MPICC, "mpich") {
			t.Errorf("%s with an MPICH application: flavor %q, mpicc %q", tc.launcher, l.Flavor, l.MPICC)
		}
		if tc.flavor != FlavorMPICH && l.Warning == "" {
			t.Errorf("%s is %s's launcher, the application MPICH's: no warning", tc.launcher, tc.flavor)
		}
	}
	// Command puts the environment where each launcher passes it on.
	env := []string{"LD_PRELOAD=/x/lib.so", "MPITRACE_DIR=/t"}
	argv := []string{"mpirun", "-np", "2", "./a"}
	if cmd, _ := (Launch{Kind: LauncherOpenMPI}).Command(argv, env); strings.Join(cmd, " ") != "mpirun -x LD_PRELOAD=/x/lib.so -x MPITRACE_DIR=/t -np 2 ./a" {
		t.Errorf("Open MPI: %v", cmd)
	}
	if cmd, _ := (Launch{Kind: LauncherHydra}).Command(argv, env); strings.Join(cmd, " ") != "mpirun -genv LD_PRELOAD /x/lib.so -genv MPITRACE_DIR /t -np 2 ./a" {
		t.Errorf("Hydra: %v", cmd)
	}
	if cmd, _ := (Launch{Kind: LauncherSlurm}).Command([]string{"srun", "-n", "2", "./a"}, env); strings.Join(cmd, " ") != "srun --export=ALL,LD_PRELOAD=/x/lib.so,MPITRACE_DIR=/t -n 2 ./a" {
		t.Errorf("srun: %v", cmd)
	}
	if cmd, childEnv := (Launch{Kind: LauncherNone}).Command([]string{"./a"}, env); len(cmd) != 1 || len(childEnv) != 2 {
		t.Errorf("no launcher: %v %v", cmd, childEnv)
	}
}
