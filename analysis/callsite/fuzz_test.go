package callsite

import (
	"debug/elf"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// resolveFile resolves a few addresses in the file at path, mapped as a
// whole at 0x10000.
func resolveFile(path string, size uint64) {
	maps := []Mapping{{Start: 0x10000, End: 0x10000 + size + 0x1000, Path: path, BuildID: ""}}
	r := NewResolver()
	for _, a := range []uint64{0x10001, 0x10000 + size/2, 0x10000 + size/3, 0x10000 + size} {
		_ = r.Resolve(maps, a).String()
	}
	_ = r.Problems()
}

func FuzzResolve(f *testing.F) {
	f.Add([]byte("\x7fELF\x02\x01\x01\x00"))
	f.Add([]byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00\x3e\x00\x01\x00\x00\x00" +
		"\x00\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00"))
	f.Add([]byte("not an elf"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		p := filepath.Join(t.TempDir(), "app")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		resolveFile(p, uint64(len(data)))
	})
}

// TestCorruptBinary damages a real -g binary at random places, half the
// time inside its DWARF sections: resolving in it reports or resolves,
// never panics.
func TestCorruptBinary(t *testing.T) {
	dir := t.TempDir()
	exe := build(t, "gcc", dir, "sites", []string{"-g", "-O2"}, "sites.c")
	sites, maps := run(t, exe)
	for i := range maps {
		maps[i].BuildID = "" // the damage may hit the build id: resolve anyway
	}
	good, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	var debug [][2]int // file ranges of the .debug_* sections
	for _, s := range f.Sections {
		if strings.HasPrefix(s.Name, ".debug_") && s.Type != elf.SHT_NOBITS && s.Size > 0 {
			debug = append(debug, [2]int{int(s.Offset), int(s.Size)})
		}
	}
	f.Close()
	if len(debug) < 3 {
		t.Fatalf("%s has %d debug sections", exe, len(debug))
	}
	rng := rand.New(rand.NewSource(1))
	for i := range 300 {
		bad := append([]byte(nil), good...)
		for range 1 + i%16 {
			at := rng.Intn(len(bad))
			if i%2 == 0 {
				d := debug[rng.Intn(len(debug))]
				at = d[0] + rng.Intn(d[1])
			}
			bad[at] = byte(rng.Intn(256))
		}
		p := filepath.Join(dir, "bad")
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		resolveFile(p, uint64(len(bad)))
		// And as it was mapped in the run, at its real call sites.
		r := NewResolver()
		ms := append([]Mapping(nil), maps...)
		for j := range ms {
			if ms[j].Path == exe {
				ms[j].Path = p
			}
		}
		for _, a := range sites {
			_ = r.Resolve(ms, a).Long()
		}
	}
}
