package callsite

import (
	"debug/elf"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// resolveDeadline bounds the resolution of one damaged binary: it takes
// milliseconds, and a loop that makes no progress never ends.
const resolveDeadline = 30 * time.Second

// within runs f and fails the test, naming what, if f has not returned
// within resolveDeadline: a resolver that spins then names its input
// instead of hanging the test binary until go test's own timeout.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(resolveDeadline):
		t.Fatalf("%s: resolving has not returned after %v: a loop without progress", what, resolveDeadline)
	}
}

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
		within(t, fmt.Sprintf("a %d-byte input", len(data)), func() { resolveFile(p, uint64(len(data))) })
	})
}

// reproducible are the flags that make a binary's bytes independent of
// where the checkout is: its debug information names the sources and the
// compilation directory by their full paths, and the damage a test does at
// random offsets must hit the same bytes from every checkout.
func reproducible(t *testing.T) []string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"-ffile-prefix-map=" + wd + "=/src"}
}

// TestCorruptBinary damages a real -g binary at random places, half the
// time inside its DWARF sections: resolving in it reports or resolves,
// never panics and always returns.
func TestCorruptBinary(t *testing.T) {
	dir := t.TempDir()
	exe := build(t, "gcc", dir, "sites", append([]string{"-g", "-O2"}, reproducible(t)...), "sites.c")
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
		within(t, fmt.Sprintf("damage %d", i), func() {
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
		})
	}
}

// TestDebugInfoEndsInLEB128 damages the last byte of .debug_info, the null
// entry closing the last unit's children, into a byte whose LEB128
// continuation bit is set: the unit's data then ends inside an abbreviation
// code, and debug/dwarf's reader returns null entries for ever without
// moving or failing (golang/go#79586). Resolving must return, and the
// entries before the damage still name the function of a site.
func TestDebugInfoEndsInLEB128(t *testing.T) {
	dir := t.TempDir()
	exe := build(t, "gcc", dir, "sites", []string{"-g", "-O2"}, "sites.c")
	sites, maps := run(t, exe)
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Section(".debug_info")
	f.Close()
	if s == nil || s.Size == 0 {
		t.Fatalf("%s has no .debug_info", exe)
	}
	last := int(s.Offset + s.Size - 1)
	if data[last] != 0 {
		t.Fatalf(".debug_info ends in %#x, not the null entry closing its last unit", data[last])
	}
	for _, b := range []byte{0x80, 0xb6, 0xff} {
		data[last] = b
		bad := filepath.Join(dir, fmt.Sprintf("bad%x", b))
		if err := os.WriteFile(bad, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ms := append([]Mapping(nil), maps...)
		for j := range ms {
			if ms[j].Path == exe {
				ms[j].Path, ms[j].BuildID = bad, ""
			}
		}
		within(t, fmt.Sprintf("last byte of .debug_info %#x", b), func() {
			r := NewResolver()
			if loc := r.Resolve(ms, sites["main"]); len(loc.Frames) == 0 || loc.Frames[0].Func != "main" {
				t.Errorf("last byte %#x: main's site resolves to %s (%q)", b, loc, loc.Problem)
			}
			resolveFile(bad, uint64(len(data)))
		})
	}
}
