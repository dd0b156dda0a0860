package callsite

import (
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/mpitrace/mpitrace/internal/cxxname"
)

// Resolver resolves return addresses. It opens each binary once (per path
// and build id) and is safe for concurrent use.
type Resolver struct {
	// DebugDirs are the roots searched for separate debug files
	// (<dir>/.build-id/xx/rest.debug, <dir>/<binary's dir>/<debuglink>);
	// NewResolver sets /usr/lib/debug.
	DebugDirs []string
	// Paths maps a recorded binary's path, or its base name, to the file to
	// read instead (the binary moved since the run). Set before resolving.
	Paths map[string]string
	// Root, when not "", is the directory the recorded paths (and the
	// debug directories) are under, as a debugger's sysroot: a trace
	// analysed on another machine, with the run's files copied under
	// Root. Paths' files are read as they are.
	Root string

	mu       sync.Mutex
	bins     map[binKey]*binary
	problems map[string]bool
}

type binKey struct{ path, buildID string }

// NewResolver returns a Resolver with the default debug directory.
func NewResolver() *Resolver {
	return &Resolver{DebugDirs: []string{"/usr/lib/debug"}}
}

// Resolve resolves the return address ret of a call made by a process with
// the given executable mappings. The location's Problem says what is
// missing when it is incomplete.
func (r *Resolver) Resolve(maps []Mapping, ret uint64) Location {
	if ret == 0 {
		return Location{Problem: "no return address recorded"}
	}
	pc := ret - 1
	m, ok := find(maps, pc)
	if !ok {
		return Location{Problem: fmt.Sprintf("address %#x lies in no executable mapping of the run", ret)}
	}
	b := r.binary(m)
	off := pc - m.Start + m.Offset
	loc := Location{Module: m.Path, ModOffset: off}
	if b.problem != "" {
		r.report(b.problem)
		loc.Problem = b.problem
	}
	if b.elfErr {
		return loc
	}
	addr, ok := b.vaddr(off)
	if !ok {
		loc.Problem = fmt.Sprintf("%s: file offset %#x lies in no loadable segment", m.Path, off)
		return loc
	}
	loc.ModOffset = addr
	loc.Frames = b.lookup(addr)
	return loc
}

// Problems returns the problems met so far, one line per binary, sorted.
func (r *Resolver) Problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.problems))
	for p := range r.problems {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func (r *Resolver) report(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.problems == nil {
		r.problems = map[string]bool{}
	}
	r.problems[p] = true
}

// find returns the mapping holding pc.
func find(maps []Mapping, pc uint64) (Mapping, bool) {
	for _, m := range maps {
		if m.Start <= pc && pc < m.End {
			return m, true
		}
	}
	return Mapping{}, false
}

func (r *Resolver) binary(m Mapping) *binary {
	k := binKey{m.Path, m.BuildID}
	r.mu.Lock()
	if r.bins == nil {
		r.bins = map[binKey]*binary{}
	}
	b, ok := r.bins[k]
	if !ok {
		b = &binary{}
		r.bins[k] = b
	}
	local := m.Path
	dirs := r.DebugDirs
	if r.Root != "" {
		local = filepath.Join(r.Root, m.Path)
		dirs = make([]string, len(r.DebugDirs))
		for i, d := range r.DebugDirs {
			dirs[i] = filepath.Join(r.Root, d)
		}
	}
	if p, ok := r.Paths[m.Path]; ok {
		local = p
	} else if p, ok := r.Paths[filepath.Base(m.Path)]; ok {
		local = p
	}
	r.mu.Unlock()
	b.once.Do(func() { b.load(m.Path, local, m.BuildID, dirs) })
	return b
}

// binary is one opened ELF file with what is needed to resolve addresses
// in it.
type binary struct {
	once    sync.Once
	problem string
	elfErr  bool // nothing can be resolved
	loads   []elf.ProgHeader
	dw      *dwarf.Data
	units   []unitRange // sorted by lo
	syms    []symbol    // sorted by addr

	mu     sync.Mutex
	parsed map[dwarf.Offset]*unit
	names  map[dwarf.Offset]string
}

type unitRange struct {
	lo, hi uint64
	off    dwarf.Offset
}

type symbol struct {
	addr, size uint64
	name       string
}

func (b *binary) load(recorded, local, buildID string, debugDirs []string) {
	defer func() {
		if e := recover(); e != nil {
			b.fail(fmt.Sprintf("%s: not a readable ELF file (%v)", recorded, e))
		}
	}()
	f, err := elf.Open(local)
	if err != nil {
		var fe *elf.FormatError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			b.fail(fmt.Sprintf("%s is missing (it ran from there): point --binary at a copy of it to see its call sites", local))
		case errors.As(err, &fe):
			b.fail(fmt.Sprintf("%s: not a readable ELF file (%v)", local, err))
		default:
			b.fail(fmt.Sprintf("%s: %v", local, err))
		}
		return
	}
	defer f.Close()
	if now := buildIDOf(f); buildID != "" && now != buildID {
		if now == "" {
			now = "none"
		}
		b.fail(fmt.Sprintf("%s has changed since the run (build id %s, now %s): rebuild the binary that ran, or point --binary at a copy of it", local, buildID, now))
		return
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			b.loads = append(b.loads, p.ProgHeader)
		}
	}
	b.syms = symbolsOf(f)
	dw := dwarfOf(f)
	if dw == nil {
		if df := separateDebug(f, local, debugDirs); df != nil {
			dw = dwarfOf(df)
			if len(b.syms) == 0 {
				b.syms = symbolsOf(df)
			}
			df.Close()
		}
	}
	if dw == nil {
		b.problem = fmt.Sprintf("%s has no debug information: rebuild with -g to see file:line", local)
		return
	}
	b.dw = dw
	b.units = unitsOf(dw)
	if len(b.units) == 0 {
		b.dw = nil
		b.problem = fmt.Sprintf("%s has no debug information: rebuild with -g to see file:line", local)
	}
}

func (b *binary) fail(p string) {
	b.problem, b.elfErr = p, true
	b.loads, b.syms, b.dw, b.units = nil, nil, nil, nil
}

// vaddr converts a file offset to the address the ELF file's symbols and
// DWARF use, through the loadable segment holding it.
func (b *binary) vaddr(off uint64) (uint64, bool) {
	for _, p := range b.loads {
		if p.Off <= off && off-p.Off < p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// buildIDOf returns the file's GNU build id in hex, "" if none.
func buildIDOf(f *elf.File) string {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		if id := noteBuildID(data, f.ByteOrder.Uint32); id != "" {
			return id
		}
	}
	return ""
}

// noteBuildID finds the NT_GNU_BUILD_ID note in a note section's data.
func noteBuildID(data []byte, u32 func([]byte) uint32) string {
	const ntGNUBuildID = 3
	for len(data) >= 12 {
		namesz, descsz, typ := uint64(u32(data[0:])), uint64(u32(data[4:])), u32(data[8:])
		data = data[12:]
		nameEnd := (namesz + 3) &^ 3
		descEnd := nameEnd + (descsz+3)&^3
		if nameEnd > uint64(len(data)) || descEnd > uint64(len(data)) || nameEnd+descsz > uint64(len(data)) {
			return ""
		}
		if typ == ntGNUBuildID && namesz == 4 && string(data[:3]) == "GNU" {
			return hex.EncodeToString(data[nameEnd : nameEnd+descsz])
		}
		data = data[descEnd:]
	}
	return ""
}

// dwarfOf returns the file's DWARF, nil when it has none.
func dwarfOf(f *elf.File) *dwarf.Data {
	if f.Section(".debug_info") == nil && f.Section(".zdebug_info") == nil {
		return nil
	}
	d, err := f.DWARF()
	if err != nil {
		return nil
	}
	return d
}

// separateDebug opens the file's separate debug file, found by build id or
// .gnu_debuglink, nil when there is none.
func separateDebug(f *elf.File, path string, dirs []string) *elf.File {
	var cands []string
	if id := buildIDOf(f); len(id) > 2 {
		for _, d := range dirs {
			cands = append(cands, filepath.Join(d, ".build-id", id[:2], id[2:]+".debug"))
		}
	}
	if s := f.Section(".gnu_debuglink"); s != nil {
		if data, err := s.Data(); err == nil {
			name, _, _ := strings.Cut(string(data), "\x00")
			if name != "" && !strings.Contains(name, "/") {
				dir := filepath.Dir(path)
				if abs, err := filepath.Abs(dir); err == nil {
					dir = abs
				}
				cands = append(cands, filepath.Join(dir, name), filepath.Join(dir, ".debug", name))
				for _, d := range dirs {
					cands = append(cands, filepath.Join(d, dir, name))
				}
			}
		}
	}
	for _, c := range cands {
		if c == path {
			continue
		}
		df, err := elf.Open(c)
		if err != nil {
			continue
		}
		if df.Section(".debug_info") != nil || df.Section(".zdebug_info") != nil {
			return df
		}
		df.Close()
	}
	return nil
}

// symbolsOf returns the file's function symbols, static and dynamic,
// sorted by address.
func symbolsOf(f *elf.File) []symbol {
	var out []symbol
	add := func(syms []elf.Symbol, err error) {
		if err != nil {
			return
		}
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && s.Section != elf.SHN_UNDEF {
				out = append(out, symbol{s.Value, s.Size, s.Name})
			}
		}
	}
	add(f.Symbols())
	add(f.DynamicSymbols())
	slices.SortFunc(out, func(a, b symbol) int {
		return cmp.Or(cmp.Compare(a.addr, b.addr), strings.Compare(a.name, b.name))
	})
	return out
}

// symbolAt returns the name of the function symbol holding addr.
func (b *binary) symbolAt(addr uint64) string {
	i := sort.Search(len(b.syms), func(i int) bool { return b.syms[i].addr > addr }) - 1
	fallback := ""
	for n := 0; i >= 0 && n < 8; i, n = i-1, n+1 {
		s := b.syms[i]
		if s.size == 0 {
			if n == 0 {
				fallback = s.name // an assembler symbol without a size
			}
			continue
		}
		if addr < s.addr+s.size {
			return readable(s.name)
		}
		break
	}
	return readable(fallback)
}

// readable makes a linker name readable: C++ demangled without parameters,
// a Fortran module procedure "__mod_MOD_proc" as "mod::proc".
func readable(name string) string {
	if strings.HasPrefix(name, "__") {
		if mod, proc, ok := strings.Cut(name[2:], "_MOD_"); ok && mod != "" && proc != "" {
			return mod + "::" + proc
		}
	}
	return cxxname.Symbol(name)
}

// unitsOf returns the address ranges of the compilation units.
func unitsOf(dw *dwarf.Data) []unitRange {
	var out []unitRange
	r := dw.Reader()
	es := entries{r: r}
	for {
		e := es.next()
		if e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			if rs, err := dw.Ranges(e); err == nil {
				for _, rg := range rs {
					if rg[0] < rg[1] {
						out = append(out, unitRange{rg[0], rg[1], e.Offset})
					}
				}
			}
		}
		r.SkipChildren()
	}
	slices.SortFunc(out, func(a, b unitRange) int {
		return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(a.off, b.off))
	})
	return out
}

// entries reads the entries of untrusted DWARF. debug/dwarf's reader can
// stand still: when a unit's data ends inside an abbreviation code whose
// LEB128 continuation bit is set, Next returns an empty (null) entry, moving
// nowhere and reporting no error, every time it is called (golang/go#79586),
// so a loop that waits for the end or an error spins for ever. A null entry
// cannot be told from a real one, but real ones in a row are bounded: each
// closes a level of nesting (at most maxDepth levels are entered; deeper
// children are skipped) or is padding. Every loop over entries reads
// through next.
type entries struct {
	r     *dwarf.Reader
	nulls int // null entries in a row
}

// maxNulls bounds the null entries in a row: the levels a reader may have
// entered, and room for padding no toolchain writes.
const maxNulls = maxDepth + 4096

// next returns the next entry, or nil at the end, on an error, or when
// the reader has returned more null entries in a row than real data holds.
func (es *entries) next() *dwarf.Entry {
	e, err := es.r.Next()
	if err != nil || e == nil {
		return nil
	}
	if e.Tag != 0 {
		es.nulls = 0
	} else if es.nulls++; es.nulls > maxNulls {
		return nil
	}
	return e
}

// lookup returns the frames of addr, innermost first.
func (b *binary) lookup(addr uint64) (frames []Frame) {
	defer func() {
		if e := recover(); e != nil {
			frames = nil
		}
	}()
	if b.dw != nil {
		if u := b.unitAt(addr); u != nil {
			if fr := u.frames(b, addr); len(fr) > 0 {
				return fr
			}
		}
	}
	if name := b.symbolAt(addr); name != "" {
		return []Frame{{Func: name}}
	}
	return nil
}

// unitAt returns the parsed compilation unit holding addr, nil if none.
func (b *binary) unitAt(addr uint64) *unit {
	i := sort.Search(len(b.units), func(i int) bool { return b.units[i].lo > addr }) - 1
	for n := 0; i >= 0 && n < 64; i, n = i-1, n+1 {
		if u := b.units[i]; addr < u.hi {
			return b.unit(u.off)
		}
	}
	return nil
}

func (b *binary) unit(off dwarf.Offset) *unit {
	b.mu.Lock()
	defer b.mu.Unlock()
	if u, ok := b.parsed[off]; ok {
		return u
	}
	if b.parsed == nil {
		b.parsed = map[dwarf.Offset]*unit{}
	}
	u := parseUnit(b, off)
	b.parsed[off] = u
	return u
}
