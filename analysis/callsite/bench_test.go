package callsite

import (
	"debug/elf"
	"os"
	"testing"
)

// benchBinary is a large real binary with separate debug information
// (Debian's libc6-dbg installs it under /usr/lib/debug/.build-id); override
// with MPITRACE_CALLSITE_BENCH_BINARY.
func benchBinary() string {
	if p := os.Getenv("MPITRACE_CALLSITE_BENCH_BINARY"); p != "" {
		return p
	}
	return "/lib/x86_64-linux-gnu/libc.so.6"
}

// benchSites returns mappings of path as if loaded at a random base, and
// one return address per function symbol (4 bytes into it).
func benchSites(b *testing.B, path string) ([]Mapping, []uint64) {
	f, err := elf.Open(path)
	if err != nil {
		b.Skipf("%s: %v", path, err)
	}
	defer f.Close()
	id := buildIDOf(f)
	const bias = 0x7f3a12000000
	var maps []Mapping
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			maps = append(maps, Mapping{Start: bias + p.Vaddr&^0xfff, End: bias + p.Vaddr + p.Memsz, Offset: p.Off &^ 0xfff, Path: path, BuildID: id})
		}
	}
	var rets []uint64
	for _, s := range symbolsOf(f) {
		if s.size > 8 {
			rets = append(rets, bias+s.addr+5)
		}
	}
	if len(rets) == 0 {
		b.Skipf("%s has no function symbols", path)
	}
	return maps, rets
}

// BenchmarkResolve measures call sites resolved per second: cold (a new
// Resolver, so opening the binary and parsing the units hit is included)
// and warm (units parsed).
func BenchmarkResolve(b *testing.B) {
	maps, rets := benchSites(b, benchBinary())
	b.Run("cold", func(b *testing.B) {
		known := 0
		for b.Loop() {
			r := NewResolver()
			known = 0
			for _, a := range rets {
				if r.Resolve(maps, a).FileLine() != "" {
					known++
				}
			}
		}
		b.ReportMetric(float64(len(rets))*float64(b.N)/b.Elapsed().Seconds(), "sites/s")
		b.ReportMetric(float64(len(rets)), "sites")
		b.ReportMetric(float64(known), "with-line")
	})
	b.Run("warm", func(b *testing.B) {
		r := NewResolver()
		for _, a := range rets {
			r.Resolve(maps, a)
		}
		b.ResetTimer()
		for b.Loop() {
			for _, a := range rets {
				r.Resolve(maps, a)
			}
		}
		b.ReportMetric(float64(len(rets))*float64(b.N)/b.Elapsed().Seconds(), "sites/s")
	})
}
