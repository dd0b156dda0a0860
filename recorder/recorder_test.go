package recorder

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
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
