package callsite

import (
	"cmp"
	"debug/dwarf"
	"slices"
	"sort"
)

// unit is one parsed compilation unit: its functions and inlined calls in
// DIE order, and its line table sorted by address.
type unit struct {
	scopes []scope
	tops   []topRange // the subprograms' ranges, sorted by lo
	rows   []row
}

// scope is a subprogram or an inlined subroutine. Its descendants are the
// scopes from its index + 1 up to end.
type scope struct {
	ranges   [][2]uint64
	end      int
	name     string
	callFile string // where an inlined subroutine was called
	callLine int
}

type topRange struct {
	lo, hi uint64
	scope  int
}

type row struct {
	addr   uint64
	file   string
	line   int
	endSeq bool
}

const maxDepth = 256 // bounds DIE nesting and reference chains from hostile input

// parseUnit reads the unit at off. b.mu is held.
func parseUnit(b *binary, off dwarf.Offset) *unit {
	u := &unit{}
	r := b.dw.Reader()
	r.Seek(off)
	es := entries{r: r}
	cu := es.next()
	if cu == nil {
		return u
	}
	var files []*dwarf.LineFile
	if lr, err := b.dw.LineReader(cu); err == nil && lr != nil {
		u.rows = readRows(lr)
		files = lr.Files() // the full table, after the last row
	}
	if !cu.Children {
		return u
	}
	// stack holds, per open DIE level, the index of the scope it opened
	// (-1 for DIEs that are not scopes).
	var stack []int
	depth := 1
	for depth > 0 {
		e := es.next()
		if e == nil {
			break
		}
		if e.Tag == 0 { // end of a DIE's children
			depth--
			if len(stack) > 0 {
				if s := stack[len(stack)-1]; s >= 0 {
					u.scopes[s].end = len(u.scopes)
				}
				stack = stack[:len(stack)-1]
			}
			continue
		}
		idx := -1
		if e.Tag == dwarf.TagSubprogram || e.Tag == dwarf.TagInlinedSubroutine {
			if rs, err := b.dw.Ranges(e); err == nil && len(rs) > 0 {
				idx = len(u.scopes)
				s := scope{ranges: rs, end: idx + 1, name: b.nameOf(e, 0)}
				if e.Tag == dwarf.TagInlinedSubroutine {
					if i, ok := e.Val(dwarf.AttrCallFile).(int64); ok && i >= 0 && i < int64(len(files)) && files[i] != nil {
						s.callFile = files[i].Name

					}
					if l, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
						s.callLine = int(l)
					}
				}
				u.scopes = append(u.scopes, s)
				if e.Tag == dwarf.TagSubprogram {
					for _, rg := range rs {
						u.tops = append(u.tops, topRange{rg[0], rg[1], idx})
					}
				}
			}
		}
		if e.Children {
			if depth >= maxDepth {
				r.SkipChildren()
				if idx >= 0 {
					u.scopes[idx].end = len(u.scopes)
				}
				continue
			}
			depth++
			stack = append(stack, idx)
		}
	}
	slices.SortFunc(u.tops, func(a, b topRange) int {
		return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(a.scope, b.scope))
	})
	return u
}

func readRows(lr *dwarf.LineReader) []row {
	var rows []row
	var le dwarf.LineEntry
	for {
		// Every row takes at least one opcode: a reader that returns a
		// row without moving would repeat it for ever.
		at := lr.Tell()
		if err := lr.Next(&le); err != nil || lr.Tell() == at {
			break
		}
		name := ""
		if le.File != nil {
			name = le.File.Name
		}
		rows = append(rows, row{le.Address, name, le.Line, le.EndSequence})
	}
	// Sequences may come in any order; at one address an end of sequence
	// sorts before the start of the next.
	slices.SortStableFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.addr, b.addr), -cmp.Compare(boolInt(a.endSeq), boolInt(b.endSeq)))
	})
	return rows
}

// line returns the line table's file and line for addr.
func (u *unit) line(addr uint64) (string, int) {
	i := sort.Search(len(u.rows), func(i int) bool { return u.rows[i].addr > addr }) - 1
	if i < 0 || u.rows[i].endSeq {
		return "", 0
	}
	return u.rows[i].file, u.rows[i].line
}

// frames returns addr's chain of functions, innermost first.
func (u *unit) frames(b *binary, addr uint64) []Frame {
	file, line := u.line(addr)
	top := -1
	i := sort.Search(len(u.tops), func(i int) bool { return u.tops[i].lo > addr }) - 1
	for n := 0; i >= 0 && n < 64; i, n = i-1, n+1 {
		if addr < u.tops[i].hi {
			top = u.tops[i].scope
			break
		}
	}
	if top < 0 {
		if file == "" {
			return nil
		}
		return []Frame{{Func: b.symbolAt(addr), File: file, Line: line}}
	}
	chain := []int{top}
	for i, end := top+1, u.scopes[top].end; i < end && i < len(u.scopes); {
		if contains(u.scopes[i].ranges, addr) {
			chain = append(chain, i)
			end = u.scopes[i].end
			i++
			continue
		}
		i = max(u.scopes[i].end, i+1)
	}
	frames := make([]Frame, len(chain))
	for k := range chain {
		s := &u.scopes[chain[len(chain)-1-k]]
		frames[k].Func = s.name
		if k == 0 {
			frames[k].File, frames[k].Line = file, line
		} else {
			in := &u.scopes[chain[len(chain)-k]]
			frames[k].File, frames[k].Line = in.callFile, in.callLine
		}
	}
	if frames[len(frames)-1].Func == "" {
		frames[len(frames)-1].Func = b.symbolAt(addr)
	}
	return frames
}

func contains(ranges [][2]uint64, addr uint64) bool {
	for _, r := range ranges {
		if r[0] <= addr && addr < r[1] {
			return true
		}
	}
	return false
}

// nameOf returns a function DIE's readable name, following the abstract
// origin and specification. b.mu is held.
func (b *binary) nameOf(e *dwarf.Entry, depth int) string {
	for _, a := range []dwarf.Attr{dwarf.AttrLinkageName, 0x2007 /* DW_AT_MIPS_linkage_name */} {
		if s, ok := e.Val(a).(string); ok && s != "" {
			if r := readable(s); r != s {
				return r
			}
		}
	}
	if s, ok := e.Val(dwarf.AttrName).(string); ok && s != "" {
		return s
	}
	if depth >= 8 {
		return ""
	}
	for _, a := range []dwarf.Attr{dwarf.AttrAbstractOrigin, dwarf.AttrSpecification} {
		if off, ok := e.Val(a).(dwarf.Offset); ok {
			return b.nameAt(off, depth+1)
		}
	}
	return ""
}

func (b *binary) nameAt(off dwarf.Offset, depth int) string {
	if n, ok := b.names[off]; ok {
		return n
	}
	r := b.dw.Reader()
	r.Seek(off)
	name := ""
	if e, err := r.Next(); err == nil && e != nil {
		name = b.nameOf(e, depth)
	}
	if b.names == nil {
		b.names = map[dwarf.Offset]string{}
	}
	b.names[off] = name
	return name
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
