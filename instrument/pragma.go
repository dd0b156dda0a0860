//go:build cgo

package instrument

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
)

type pragmaClass int

const (
	pragmaNone      pragmaClass = iota // no pragma binds the loop: markers go at the loop
	pragmaLoop                         // pragmas that bind the next loop (GCC unroll, ivdep, ...): markers go before them
	pragmaWorkshare                    // an OpenMP worksharing or simd loop: uncounted, before the pragmas
	pragmaOffload                      // omp target or OpenACC: left alone
	pragmaMixed                        // omp parallel with other pragmas: left alone
)

// pragmaGroup returns the pragmas that stand directly before the loop n
// (comments between them allowed; a #if block that holds only pragmas
// counts as one), and the first node of the group.
func pragmaGroup(n *node) (first *node, pragmas []*node) {
	for p := n.prevSibling(); p != nil; p = p.prevSibling() {
		if p.kind == "comment" {
			continue
		}
		var found []*node
		if !pragmaOnly(p, &found) {
			break
		}
		first = p
		pragmas = append(found, pragmas...)
	}
	return first, pragmas
}

// pragmaOnly reports whether n is a #pragma, or a preprocessor
// conditional holding nothing but pragmas; it collects them.
func pragmaOnly(n *node, found *[]*node) bool {
	switch n.kind {
	case "preproc_call":
		if d := n.child("directive"); d != nil && d.end-d.start == len("#pragma") {
			*found = append(*found, n)
			return true
		}
		return false
	case "preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef":
		any := false
		for _, c := range n.children {
			if !c.named || c.field == "condition" || c.field == "name" || c.kind == "comment" {
				continue
			}
			if c.field == "alternative" || c.kind == "preproc_call" {
				if !pragmaOnly(c, found) {
					return false
				}
				any = true
				continue
			}
			return false
		}
		return any
	}
	return false
}

var parens = regexp.MustCompile(`\([^()]*\)`)

// pragmaWords returns the words of a pragma, without its #pragma and
// without parenthesized clause arguments.
func pragmaWords(src []byte, p *node) []string {
	arg := p.child("argument")
	if arg == nil {
		return nil
	}
	text := strings.ReplaceAll(string(src[arg.start:arg.end]), "\\\n", " ")
	for {
		t := parens.ReplaceAllString(text, " ")
		if t == text {
			break
		}
		text = t
	}
	return strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == '\n' })
}

func pragmaKind(src []byte, pragmas []*node) pragmaClass {
	if len(pragmas) == 0 {
		return pragmaNone
	}
	omp, ompLoop, other := false, false, false
	for _, p := range pragmas {
		w := pragmaWords(src, p)
		if len(w) == 0 {
			other = true
			continue
		}
		switch w[0] {
		case "acc":
			return pragmaOffload
		case "omp":
			omp = true
			for _, x := range w[1:] {
				switch x {
				case "target":
					return pragmaOffload
				case "for", "do", "simd", "taskloop", "distribute", "loop", "tile", "unroll":
					ompLoop = true
				}
			}
		default:
			other = true
		}
	}
	switch {
	case ompLoop:
		return pragmaWorkshare
	case omp && other:
		return pragmaMixed
	case omp:
		return pragmaNone
	}
	return pragmaLoop
}

var nestClause = regexp.MustCompile(`\b(collapse|ordered)\s*\(\s*([0-9]+)\s*\)`)

// collapse returns how many nested loops the pragmas bind (collapse(n),
// ordered(n)); at least 1.
func collapse(src []byte, pragmas []*node) int {
	n := 1
	for _, p := range pragmas {
		for _, m := range nestClause.FindAllSubmatch(src[p.start:p.end], -1) {
			if v, err := strconv.Atoi(string(m[2])); err == nil && v > n && v < 1000 {
				n = v
			}
		}
	}
	return n
}

// lineMark is a line marker of preprocessor output: the next row is line
// `line` of `file`.
type lineMark struct {
	row  int
	line int
	file string
}

var markRE = regexp.MustCompile(`^#\s*(?:line\s+)?([0-9]+)\s+"((?:[^"\\]|\\.)*)"`)

func lineMap(src []byte) []lineMark {
	var marks []lineMark
	row := 0
	for len(src) > 0 {
		line := src
		if i := bytes.IndexByte(src, '\n'); i >= 0 {
			line, src = src[:i], src[i+1:]
		} else {
			src = nil
		}
		if len(line) > 0 && line[0] == '#' {
			if m := markRE.FindSubmatch(line); m != nil {
				if v, err := strconv.Atoi(string(m[1])); err == nil {
					file, err := strconv.Unquote(`"` + string(m[2]) + `"`)
					if err != nil {
						file = string(m[2])
					}
					marks = append(marks, lineMark{row: row, line: v, file: file})
				}
			}
		}
		row++
	}
	return marks
}
