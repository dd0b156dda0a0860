package wrap

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// wrap.py's {{sub}} and {{filter}} take Python regular expressions and
// Python re.sub replacement strings. Go's regexp package implements RE2,
// which shares most of Python's syntax; pyRegexp translates the rest and
// rejects, with a clear message, what RE2 cannot do.
//
// Translated: \Z (end of text) to \z; \uXXXX and \UXXXXXXXX to \x{...};
// octal escapes \0, \0oo and, in character classes, \ooo to \x{...}; \b in a
// character class (backspace) to \x08; {,n} to {0,n}; (?#comments) removed;
// the a (ASCII) and u (Unicode) flags dropped; (?<name>...) and
// (?P<name>...) named groups kept.
//
// Rejected: backreferences (\1, (?P=name)), lookahead and lookbehind
// ((?=, (?!, (?<=, (?<!), atomic groups, conditionals, the x (verbose) and L
// (locale) flags and \N{...} names.
//
// Known remaining differences: Python's $ also matches before a newline
// that ends the text, and Python 3 classes such as \d and \w match
// non-ASCII digits and letters, where Go's match ASCII only.
func pyRegexp(pat string) (*regexp.Regexp, error) {
	goPat, err := translatePyRegexp(pat)
	if err != nil {
		return nil, fmt.Errorf("bad regular expression '%s': %v", pat, err)
	}
	re, err := regexp.Compile(goPat)
	if err != nil {
		msg := err.Error()
		msg = strings.TrimPrefix(msg, "error parsing regexp: ")
		return nil, fmt.Errorf("bad regular expression '%s': %s", pat, msg)
	}
	return re, nil
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func translatePyRegexp(pat string) (string, error) {
	var b strings.Builder
	inClass := false
	classStart := 0 // index in pat just after '[' or '[^'
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case c == '\\':
			if i+1 >= len(pat) {
				return "", fmt.Errorf("trailing backslash")
			}
			e := pat[i+1]
			i++
			switch {
			case e == 'Z' && !inClass:
				b.WriteString(`\z`)
			case e == 'u' || e == 'U':
				n := 4
				if e == 'U' {
					n = 8
				}
				hex := pat[i+1 : min(i+1+n, len(pat))]
				if len(hex) != n {
					return "", fmt.Errorf("incomplete \\%c escape", e)
				}
				for j := 0; j < n; j++ {
					if !isHex(hex[j]) {
						return "", fmt.Errorf("incomplete \\%c escape", e)
					}
				}
				b.WriteString(`\x{` + hex + `}`)
				i += n
			case e == 'N':
				return "", fmt.Errorf("\\N{...} character names are not supported")
			case e == '0' || (inClass && isOctal(e)):
				j := i
				for j < len(pat) && j < i+3 && isOctal(pat[j]) {
					j++
				}
				v, _ := strconv.ParseUint(pat[i:j], 8, 32)
				fmt.Fprintf(&b, `\x{%x}`, v)
				i = j - 1
			case e >= '1' && e <= '9':
				// Three octal digits are an octal escape; otherwise a
				// backreference.
				if i+2 < len(pat) && isOctal(e) && isOctal(pat[i+1]) && isOctal(pat[i+2]) {
					v, _ := strconv.ParseUint(pat[i:i+3], 8, 32)
					fmt.Fprintf(&b, `\x{%x}`, v)
					i += 2
					break
				}
				return "", fmt.Errorf("backreferences (\\%c) are not supported by Go regular expressions", e)
			case e == 'b' && inClass:
				b.WriteString(`\x08`)
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		case inClass:
			if c == ']' && i > classStart {
				inClass = false
			}
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
			classStart = i + 1
			if classStart < len(pat) && pat[classStart] == '^' {
				b.WriteByte('^')
				i++
				classStart++
			}
		case c == '{' && strings.HasPrefix(pat[i:], "{,"):
			j := i + 2
			for j < len(pat) && pat[j] >= '0' && pat[j] <= '9' {
				j++
			}
			if j < len(pat) && pat[j] == '}' && j > i+2 {
				b.WriteString("{0," + pat[i+2:j] + "}")
				i = j
			} else {
				b.WriteString(`\{`)
			}
		case c == '(' && strings.HasPrefix(pat[i:], "(?"):
			rest := pat[i+2:]
			switch {
			case strings.HasPrefix(rest, "P<"), strings.HasPrefix(rest, ":"):
				b.WriteString("(?")
				i++
			case strings.HasPrefix(rest, "<") && !strings.HasPrefix(rest, "<=") && !strings.HasPrefix(rest, "<!"):
				b.WriteString("(?P")
				i++
			case strings.HasPrefix(rest, "P="):
				return "", fmt.Errorf("backreferences ((?P=name)) are not supported by Go regular expressions")
			case strings.HasPrefix(rest, "="), strings.HasPrefix(rest, "!"),
				strings.HasPrefix(rest, "<="), strings.HasPrefix(rest, "<!"):
				return "", fmt.Errorf("lookahead and lookbehind assertions are not supported by Go regular expressions")
			case strings.HasPrefix(rest, ">"):
				return "", fmt.Errorf("atomic groups are not supported by Go regular expressions")
			case strings.HasPrefix(rest, "("):
				return "", fmt.Errorf("conditional groups are not supported by Go regular expressions")
			case strings.HasPrefix(rest, "#"):
				end := strings.IndexByte(rest, ')')
				if end < 0 {
					return "", fmt.Errorf("unterminated (?# comment")
				}
				i += 2 + end
			default:
				// Inline flags: (?aiLmsux) or (?flags-flags:...).
				j := 0
				for j < len(rest) && rest[j] != ')' && rest[j] != ':' {
					j++
				}
				if j >= len(rest) {
					return "", fmt.Errorf("missing ) after (?")
				}
				var flags strings.Builder
				for _, f := range rest[:j] {
					switch f {
					case 'i', 'm', 's', '-':
						flags.WriteRune(f)
					case 'a', 'u':
					case 'x':
						return "", fmt.Errorf("verbose (?x) patterns are not supported")
					case 'L':
						return "", fmt.Errorf("the locale flag (?L) is not supported")
					default:
						return "", fmt.Errorf("unknown flag '%c' in (?%s", f, rest[:j+1])
					}
				}
				fl := strings.TrimSuffix(flags.String(), "-")
				if rest[j] == ')' {
					if fl != "" {
						b.WriteString("(?" + fl + ")")
					}
				} else {
					if fl == "" {
						b.WriteString("(?:")
					} else {
						b.WriteString("(?" + fl + ":")
					}
				}
				i += 2 + j
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// replPart is one piece of a parsed Python replacement template.
type replPart struct {
	lit   string
	group int // -1 for a literal
}

// parsePyRepl parses a Python re.sub replacement string for re: \1..\99
// and \g<n>/\g<name> group references, the escapes \n \t \r \f \v \a \b
// \\ and octal \0oo. Other escapes of ASCII letters are errors (as in
// Python 3.7+); a backslash before anything else is kept.
func parsePyRepl(repl string, re *regexp.Regexp) ([]replPart, error) {
	var parts []replPart
	var lit strings.Builder
	group := func(g int, ref string) error {
		if g < 0 || g > re.NumSubexp() {
			return fmt.Errorf("invalid group reference %s in replacement '%s'", ref, repl)
		}
		if lit.Len() > 0 {
			parts = append(parts, replPart{lit: lit.String(), group: -1})
			lit.Reset()
		}
		parts = append(parts, replPart{group: g})
		return nil
	}
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '\\' {
			lit.WriteByte(c)
			continue
		}
		if i+1 >= len(repl) {
			return nil, fmt.Errorf("bad escape (end of replacement) in '%s'", repl)
		}
		e := repl[i+1]
		i++
		switch {
		case e == 'g':
			if i+1 >= len(repl) || repl[i+1] != '<' {
				return nil, fmt.Errorf("missing < after \\g in replacement '%s'", repl)
			}
			end := strings.IndexByte(repl[i+2:], '>')
			if end < 0 {
				return nil, fmt.Errorf("missing > after \\g< in replacement '%s'", repl)
			}
			ref := repl[i+2 : i+2+end]
			g, err := strconv.Atoi(ref)
			if err != nil {
				g = re.SubexpIndex(ref)
				if g < 0 {
					return nil, fmt.Errorf("unknown group name '%s' in replacement '%s'", ref, repl)
				}
			}
			if err := group(g, `\g<`+ref+`>`); err != nil {
				return nil, err
			}
			i += 2 + end
		case e == '0':
			j := i
			for j < len(repl) && j < i+3 && isOctal(repl[j]) {
				j++
			}
			v, _ := strconv.ParseUint(repl[i:j], 8, 32)
			lit.WriteRune(rune(v))
			i = j - 1
		case e >= '1' && e <= '9':
			if i+2 < len(repl) && isOctal(e) && isOctal(repl[i+1]) && isOctal(repl[i+2]) {
				v, _ := strconv.ParseUint(repl[i:i+3], 8, 32)
				lit.WriteRune(rune(v))
				i += 2
				break
			}
			j := i + 1
			if j < len(repl) && repl[j] >= '0' && repl[j] <= '9' {
				j++
			}
			g, _ := strconv.Atoi(repl[i:j])
			if err := group(g, `\`+repl[i:j]); err != nil {
				return nil, err
			}
			i = j - 1
		case e == 'n':
			lit.WriteByte('\n')
		case e == 't':
			lit.WriteByte('\t')
		case e == 'r':
			lit.WriteByte('\r')
		case e == 'f':
			lit.WriteByte('\f')
		case e == 'v':
			lit.WriteByte('\v')
		case e == 'a':
			lit.WriteByte('\a')
		case e == 'b':
			lit.WriteByte('\b')
		case e == '\\':
			lit.WriteByte('\\')
		case (e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z'):
			return nil, fmt.Errorf("bad escape \\%c in replacement '%s'", e, repl)
		default:
			lit.WriteByte('\\')
			lit.WriteByte(e)
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, replPart{lit: lit.String(), group: -1})
	}
	return parts, nil
}

// pySub is Python's re.sub(re, repl, s) for a parsed replacement.
func pySub(re *regexp.Regexp, parts []replPart, s string) string {
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(s[last:m[0]])
		for _, p := range parts {
			if p.group < 0 {
				b.WriteString(p.lit)
			} else if m[2*p.group] >= 0 {
				b.WriteString(s[m[2*p.group]:m[2*p.group+1]])
			}
		}
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}
