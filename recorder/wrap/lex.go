package wrap

import (
	"fmt"
	"regexp"
	"strings"
)

// The template language, as wrap.py defines it:
//
//   - Outside macros everything is text, copied to the output. In C mode
//     (the default, as in wrap.py without -s) C comments are text too, so
//     macros inside /* ... */ and // ... comments are left untouched.
//   - "{{" opens a macro and "}}" closes it. Inside, words are separated by
//     white space (newlines included); a word may be single- or
//     double-quoted to hold spaces (the quotes are removed, backslash
//     escapes are kept as written, which suits regular expressions); a
//     nested "{{...}}" is an argument whose value is that macro's value.
//   - The first word names the macro. A macro named by an integer,
//     {{N}}, is {{args N}}.
//   - fn, fnall, foreachfn and forallfn have bodies that end at
//     {{endfn}}, {{endfnall}}, {{endforeachfn}} and {{endforallfn}}.

// bodyMacros are the macros that own a body, with their end tags.
var bodyMacros = map[string]string{
	"fn":        "endfn",
	"fnall":     "endfnall",
	"foreachfn": "endforeachfn",
	"forallfn":  "endforallfn",
}

var endTags = map[string]string{
	"endfn":        "fn",
	"endfnall":     "fnall",
	"endforeachfn": "foreachfn",
	"endforallfn":  "forallfn",
}

// indexName matches the macro names that index the argument list, as
// Python's int() accepts them.
var indexName = regexp.MustCompile(`^[+-]?[0-9](?:_?[0-9])*$`)

// node is a parsed piece of a template: text, or a macro with arguments
// and (for body macros) children.
type node struct {
	text    string // for text nodes
	isMacro bool
	name    string // macro name
	index   bool   // {{N}}: name holds N
	args    []arg
	body    []*node
	line    int
}

// arg is one macro argument: a word or a nested macro.
type arg struct {
	word  string
	macro *node
}

// SyntaxError is a template error (a syntax error, an unknown macro or
// function, a bad index or argument) located at a line of an input file.
// [Generate] returns one for every template error.
type SyntaxError struct {
	File string // the input's name
	Line int    // from 1
	Msg  string
}

// Error is one line: newlines quoted from the template are escaped.
func (e *SyntaxError) Error() string {
	msg := strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(e.Msg)
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, msg)
}

type parser struct {
	file  string
	src   string
	pos   int
	line  int
	cmode bool // C comments and literals are recognised in text
	lit   byte // inside a C string (") or character (') literal
	depth int  // nesting of macros and bodies being parsed
}

// maxNesting bounds the nesting of macros and bodies in a template, so that
// no input can exhaust the stack.
const maxNesting = 500

func (p *parser) errorf(line int, format string, a ...any) error {
	return &SyntaxError{p.file, line, fmt.Sprintf(format, a...)}
}

// parseTemplate parses one input file.
func parseTemplate(file, src string, cmode bool) ([]*node, error) {
	p := &parser{file: file, src: src, line: 1, cmode: cmode}
	nodes, _, err := p.parseBody(nil)
	return nodes, err
}

// parseBody parses text and macros up to the end tag of open (or to the
// end of input when open is nil).
func (p *parser) parseBody(open *node) ([]*node, bool, error) {
	if open != nil {
		if p.depth++; p.depth > maxNesting {
			return nil, false, p.errorf(open.line, "macros nested more than %d deep", maxNesting)
		}
		defer func() { p.depth-- }()
	}
	var nodes []*node
	var text strings.Builder
	textLine := p.line
	flush := func() {
		if text.Len() > 0 {
			nodes = append(nodes, &node{text: text.String(), line: textLine})
			text.Reset()
		}
	}
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if strings.HasPrefix(p.src[p.pos:], "{{") {
			flush()
			start := p.line
			p.pos += 2
			n, err := p.parseMacro(start, false)
			if err != nil {
				return nil, false, err
			}
			if opener, ok := endTags[n.name]; ok {
				switch {
				case open == nil:
					return nil, false, p.errorf(start, "{{%s}} without a matching {{%s}}", n.name, opener)
				case bodyMacros[open.name] != n.name:
					return nil, false, p.errorf(start, "{{%s}} does not close {{%s}} opened at line %d (expected {{%s}})",
						n.name, open.name, open.line, bodyMacros[open.name])
				}
				return nodes, true, nil
			}
			if _, ok := bodyMacros[n.name]; ok && !n.index {
				body, closed, err := p.parseBody(n)
				if err != nil {
					return nil, false, err
				}
				if !closed {
					return nil, false, p.errorf(n.line, "{{%s}} is never closed: missing {{%s}}", n.name, bodyMacros[n.name])
				}
				n.body = body
			}
			nodes = append(nodes, n)
			textLine = p.line
			continue
		}
		if p.cmode {
			if p.lit != 0 {
				switch {
				case c == '\\' && p.pos+1 < len(p.src) && p.src[p.pos+1] != '\n':
					text.WriteString(p.src[p.pos : p.pos+2])
					p.pos += 2
					continue
				case c == p.lit || c == '\n':
					p.lit = 0
				}
			} else {
				switch {
				case c == '"' || c == '\'':
					p.lit = c
				case strings.HasPrefix(p.src[p.pos:], "/*"):
					end := strings.Index(p.src[p.pos+2:], "*/")
					if end < 0 {
						return nil, false, p.errorf(p.line, "unterminated /* comment")
					}
					comment := p.src[p.pos : p.pos+2+end+2]
					text.WriteString(comment)
					p.line += strings.Count(comment, "\n")
					p.pos += len(comment)
					continue
				case strings.HasPrefix(p.src[p.pos:], "//"):
					end := strings.IndexByte(p.src[p.pos:], '\n')
					if end < 0 {
						end = len(p.src) - p.pos
					}
					text.WriteString(p.src[p.pos : p.pos+end])
					p.pos += end
					continue
				}
			}
		}
		if c == '\n' {
			p.line++
		}
		text.WriteByte(c)
		p.pos++
	}
	flush()
	return nodes, false, nil
}

// parseMacro parses a macro after its "{{" up to and including "}}".
// nested is true for a macro that is another macro's argument.
func (p *parser) parseMacro(start int, nested bool) (*node, error) {
	if p.depth++; p.depth > maxNesting {
		return nil, p.errorf(start, "macros nested more than %d deep", maxNesting)
	}
	defer func() { p.depth-- }()
	n := &node{isMacro: true, line: start}
	first := true
	for {
		// Skip white space.
		for p.pos < len(p.src) && isSpace(p.src[p.pos]) {
			if p.src[p.pos] == '\n' {
				p.line++
			}
			p.pos++
		}
		if p.pos >= len(p.src) {
			return nil, p.errorf(start, "unterminated macro: '{{' without '}}'")
		}
		rest := p.src[p.pos:]
		var a arg
		switch {
		case strings.HasPrefix(rest, "}}"):
			p.pos += 2
			if first {
				return nil, p.errorf(start, "empty macro '{{}}'")
			}
			return n, nil
		case strings.HasPrefix(rest, "{{"):
			line := p.line
			p.pos += 2
			inner, err := p.parseMacro(line, true)
			if err != nil {
				return nil, err
			}
			if first {
				return nil, p.errorf(line, "a macro name must be a word, not a nested macro")
			}
			a.macro = inner
		case rest[0] == '\'' || rest[0] == '"':
			q := rest[0]
			line := p.line
			i := 1
			for i < len(rest) && rest[i] != q {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				i++
			}
			if i >= len(rest) {
				return nil, p.errorf(line, "unterminated quoted string in macro")
			}
			a.word = rest[1:i]
			p.line += strings.Count(rest[:i+1], "\n")
			p.pos += i + 1
		default:
			i := 0
			for i < len(rest) && !isSpace(rest[i]) && !strings.HasPrefix(rest[i:], "{{") && !strings.HasPrefix(rest[i:], "}}") {
				i++
			}
			a.word = rest[:i]
			p.pos += i
		}
		if first {
			first = false
			n.name = a.word
			if indexName.MatchString(n.name) {
				n.index = true
			}
			if nested {
				if _, ok := bodyMacros[n.name]; ok && !n.index {
					return nil, p.errorf(start, "{{%s}} has a body and cannot be used inside another macro", n.name)
				}
				if _, ok := endTags[n.name]; ok {
					return nil, p.errorf(start, "{{%s}} cannot be used inside another macro", n.name)
				}
			}
			continue
		}
		n.args = append(n.args, a)
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
