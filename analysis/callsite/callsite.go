// Package callsite resolves the return addresses the recorder stores for MPI
// calls to function, file and line, from the DWARF of the executable and
// libraries that were mapped in the process.
//
// A return address is looked up at ret-1 (inside the call instruction), in
// the mapping that held it at run time; the mapping's file offset gives the
// address in the ELF file's own terms whatever the load address (ASLR, PIE,
// shared libraries). The line table gives file:line, the DIE tree the
// function and the chain of inlined calls. Without DWARF the ELF symbol
// table gives the function's name alone; separate debug files are looked for
// by build id and .gnu_debuglink.
//
// A Resolver opens each binary once and is safe for concurrent use. Problems
// with a binary (no debug information, changed or missing since the run) are
// reported once each by Problems, one line per binary.
package callsite

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Mapping is one file-backed executable mapping of the process, as recorded
// at MPI_Init.
type Mapping struct {
	Start, End, Offset uint64
	Path               string
	// BuildID is the GNU build id in hex, "" if the file has none.
	BuildID string
}

// Frame is one function in a location's chain of inlined calls.
type Frame struct {
	Func string
	File string // as DWARF gives it: absolute, or relative to the compilation directory
	Line int    // 0 when unknown
}

// Location is what a return address resolves to.
type Location struct {
	// Frames holds the innermost (inlined) function first and the function
	// that contains the code last; empty when nothing is known.
	Frames []Frame
	// Module is the mapped file's path and ModOffset the looked-up address
	// in the file's own terms (ret-1, load bias removed).
	Module    string
	ModOffset uint64
	// Problem says why the location is incomplete ("" when it is not).
	Problem string
}

// Known reports whether anything is known beyond the module.
func (l Location) Known() bool { return len(l.Frames) > 0 }

// String is the short form: "stencil.c:88 exchange", with the inlined
// callers after it ("stencil.c:88 halo < exchange"). Without a line it is
// "exchange (app)", without a function "app+0x1234".
func (l Location) String() string { return l.format(filepath.Base) }

// Long is the form with the file's directory.
func (l Location) Long() string { return l.format(func(s string) string { return s }) }

func (l Location) format(file func(string) string) string {
	if len(l.Frames) == 0 {
		if l.Module == "" {
			return "?"
		}
		return fmt.Sprintf("%s+%#x", filepath.Base(l.Module), l.ModOffset)
	}
	var b strings.Builder
	f := l.Frames[0]
	switch {
	case f.File != "" && f.Line > 0:
		fmt.Fprintf(&b, "%s:%d %s", file(f.File), f.Line, f.Func)
	case f.File != "":
		fmt.Fprintf(&b, "%s %s", file(f.File), f.Func)
	default:
		fmt.Fprintf(&b, "%s (%s)", f.Func, filepath.Base(l.Module))
	}
	for _, o := range l.Frames[1:] {
		b.WriteString(" < ")
		b.WriteString(o.Func)
	}
	return b.String()
}

// Func is the name of the innermost function, "" when unknown.
func (l Location) Func() string {
	if len(l.Frames) == 0 {
		return ""
	}
	return l.Frames[0].Func
}

// FileLine is "stencil.c:88" (short file name), "" when unknown.
func (l Location) FileLine() string {
	if len(l.Frames) == 0 || l.Frames[0].File == "" {
		return ""
	}
	f := l.Frames[0]
	if f.Line <= 0 {
		return filepath.Base(f.File)
	}
	return fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line)
}
