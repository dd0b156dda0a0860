package recorder

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Reading shell scripts, to find the launcher a script runs: `mpitrace
// record -- ./run.sh` where run.sh calls mpirun. The reading is a best
// effort and never runs the script: it splits the text into simple
// commands, expands the variables the script assigns literal values to
// (and those of the environment), and leaves everything else as it is.

// maxScriptSize bounds the text read from a script.
const maxScriptSize = 1 << 20

var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "ksh": true, "zsh": true, "mksh": true, "ash": true}

// shellScript returns the text of the shell script that argv runs: argv[0]
// a file whose #! line names a shell, or a shell given a script file or
// -c TEXT. name says where the text is from; dir is the script's directory
// ("" for -c).
func shellScript(argv []string, dir string) (text, name, scriptDir string, ok bool) {
	if len(argv) == 0 {
		return "", "", "", false
	}
	if shells[filepath.Base(argv[0])] {
		return shellOperand(argv[1:], dir)
	}
	path := resolveProgram(argv[0], dir)
	if path == "" {
		return "", "", "", false
	}
	text, ok = readScript(path)
	if !ok {
		return "", "", "", false
	}
	return text, argv[0], filepath.Dir(path), true
}

// shellOperand reads a shell's arguments: its options, then -c TEXT or
// the script file.
func shellOperand(args []string, dir string) (text, name, scriptDir string, ok bool) {
	command := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-":
			i++
		case a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file":
			i++
			continue
		case strings.HasPrefix(a, "--"):
			continue
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			command = command || a[0] == '-' && strings.ContainsRune(a[1:], 'c')
			continue
		}
		if i >= len(args) {
			return "", "", "", false
		}
		if command {
			return args[i], "sh -c", "", true
		}
		path := resolveFile(args[i], dir)
		if path == "" {
			return "", "", "", false
		}
		text, ok := readText(path)
		return text, args[i], filepath.Dir(path), ok
	}
	return "", "", "", false
}

// readScript returns the text of path when it starts with a #! line
// naming a shell (directly or through env).
func readScript(path string) (string, bool) {
	file, err := os.Open(path)
	if err != nil {
		return "", false
	}
	var magic [2]byte
	_, err = io.ReadFull(file, magic[:])
	file.Close()
	if err != nil || string(magic[:]) != "#!" {
		return "", false // a program, not a script: not read further
	}
	text, ok := readText(path)
	if !ok || !strings.HasPrefix(text, "#!") {
		return "", false
	}
	first, _, _ := strings.Cut(text[2:], "\n")
	f := strings.Fields(first)
	if len(f) > 0 && filepath.Base(f[0]) == "env" {
		f = f[1:]
		for len(f) > 0 && (strings.HasPrefix(f[0], "-") || isAssignment(f[0])) {
			f = f[1:]
		}
	}
	if len(f) == 0 || !shells[filepath.Base(f[0])] {
		return "", false
	}
	return text, true
}

// readText reads a regular file of text, at most maxScriptSize bytes of it.
func readText(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", false
	}
	b, err := io.ReadAll(io.LimitReader(bufio.NewReader(f), maxScriptSize))
	if err != nil || strings.IndexByte(string(b), 0) >= 0 {
		return "", false
	}
	return string(b), true
}

// wordPart is a piece of a shell word: literal text, or a parameter
// expansion ($NAME, ${NAME}, ${NAME:-alt}).
type wordPart struct {
	text   string
	param  string // the parameter's name; "" for literal text
	alt    string // ${NAME:-alt}, ${NAME-alt}, ${NAME:=alt}
	hasAlt bool
}

type shellWord []wordPart

// shellCommand is one simple command of a script.
type shellCommand struct {
	line  int // 1-based line of its first word
	words []shellWord
}

// unknownParam stands for an expansion that cannot be known without
// running the script ($1, $(...), $((...))).
const unknownParam = "?"

// shellLexer splits a script into simple commands.
type shellLexer struct {
	src      string
	i        int
	line     int
	cmds     []shellCommand
	cmd      shellCommand
	word     shellWord
	text     strings.Builder
	inWord   bool
	dropNext bool // the next word is a redirection's target
	heredocs []heredoc
}

type heredoc struct {
	delim string
	tabs  bool // <<- strips leading tabs
}

// parseShell returns the simple commands of a script.
func parseShell(src string) []shellCommand {
	lx := &shellLexer{src: src, line: 1}
	lx.cmd.line = 1
	for lx.i < len(lx.src) {
		lx.step()
	}
	lx.endCommand()
	return lx.cmds
}

func (lx *shellLexer) flushText() {
	if lx.text.Len() > 0 {
		lx.word = append(lx.word, wordPart{text: lx.text.String()})
		lx.text.Reset()
	}
}

func (lx *shellLexer) endWord() {
	lx.flushText()
	if lx.inWord {
		if lx.dropNext {
			lx.dropNext = false
		} else {
			if len(lx.cmd.words) == 0 {
				lx.cmd.line = lx.line
			}
			lx.cmd.words = append(lx.cmd.words, lx.word)
		}
	}
	lx.word, lx.inWord = nil, false
}

func (lx *shellLexer) endCommand() {
	lx.endWord()
	lx.dropNext = false
	if len(lx.cmd.words) > 0 {
		lx.cmds = append(lx.cmds, lx.cmd)
	}
	lx.cmd = shellCommand{line: lx.line}
}

func (lx *shellLexer) peek(k int) byte {
	if lx.i+k < len(lx.src) {
		return lx.src[lx.i+k]
	}
	return 0
}

func (lx *shellLexer) step() {
	c := lx.src[lx.i]
	switch {
	case c == '\\':
		if lx.peek(1) == '\n' {
			lx.i += 2
			lx.line++
			return
		}
		if lx.i+1 < len(lx.src) {
			lx.text.WriteByte(lx.src[lx.i+1])
		}
		lx.inWord = true
		lx.i += 2
	case c == '\'':
		end := strings.IndexByte(lx.src[lx.i+1:], '\'')
		if end < 0 {
			end = len(lx.src) - lx.i - 1
		}
		s := lx.src[lx.i+1 : lx.i+1+end]
		lx.text.WriteString(s)
		lx.line += strings.Count(s, "\n")
		lx.inWord = true
		lx.i += end + 2
	case c == '"':
		lx.inWord = true
		lx.i++
		lx.doubleQuoted()
	case c == '$':
		lx.inWord = true
		lx.dollar()
	case c == '`':
		lx.endCommand()
		lx.i++
	case c == '#' && !lx.inWord:
		for lx.i < len(lx.src) && lx.src[lx.i] != '\n' {
			lx.i++
		}
	case c == ' ' || c == '\t' || c == '\r':
		lx.endWord()
		lx.i++
	case c == '\n':
		lx.endCommand()
		lx.i++
		lx.line++
		lx.readHeredocs()
	case c == '<' || c == '>' || c == '&' && lx.peek(1) == '>':
		lx.redirection()
	case c == ';' || c == '&' || c == '|' || c == '(' || c == ')':
		lx.endCommand()
		lx.i++
	default:
		lx.text.WriteByte(c)
		lx.inWord = true
		lx.i++
	}
}

// doubleQuoted reads the inside of "...", from after the opening quote.
func (lx *shellLexer) doubleQuoted() {
	for lx.i < len(lx.src) {
		c := lx.src[lx.i]
		switch {
		case c == '"':
			lx.i++
			return
		case c == '\\' && strings.IndexByte("$`\"\\\n", lx.peek(1)) >= 0 && lx.peek(1) != 0:
			if lx.peek(1) == '\n' {
				lx.line++
			} else {
				lx.text.WriteByte(lx.peek(1))
			}
			lx.i += 2
		case c == '$':
			lx.dollar()
		default:
			if c == '\n' {
				lx.line++
			}
			lx.text.WriteByte(c)
			lx.i++
		}
	}
}

// dollar reads an expansion at lx.i ('$').
func (lx *shellLexer) dollar() {
	rest := lx.src[lx.i+1:]
	switch {
	case strings.HasPrefix(rest, "(("):
		end := strings.Index(rest, "))")
		if end < 0 {
			end = len(rest) - 2
		}
		lx.unknown()
		lx.i += 1 + end + 2
	case strings.HasPrefix(rest, "("):
		// A command substitution: its command is read like any other;
		// the word it was part of is unknown.
		lx.unknown()
		lx.endCommand()
		lx.i += 2
	case strings.HasPrefix(rest, "{"):
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			end = len(rest)
		}
		body := rest[1:min(end, len(rest))]
		lx.i += 1 + end + 1
		name, alt := body, ""
		hasAlt := false
		for _, op := range []string{":-", ":=", "-", "="} {
			if k := strings.Index(body, op); k > 0 {
				name, alt, hasAlt = body[:k], body[k+len(op):], true
				break
			}
		}
		if !isName(name) {
			lx.unknown()
			return
		}
		lx.flushText()
		lx.word = append(lx.word, wordPart{param: name, alt: alt, hasAlt: hasAlt})
	default:
		n := 0
		for n < len(rest) && (rest[n] == '_' || isAlnum(rest[n])) && !(n == 0 && rest[n] >= '0' && rest[n] <= '9') {
			n++
		}
		switch {
		case n > 0:
			lx.flushText()
			lx.word = append(lx.word, wordPart{param: rest[:n]})
			lx.i += 1 + n
		case len(rest) > 0 && strings.IndexByte("@*#?$!-0123456789", rest[0]) >= 0:
			lx.unknown()
			lx.i += 2
		default:
			lx.text.WriteByte('$')
			lx.i++
		}
	}
}

func (lx *shellLexer) unknown() {
	lx.flushText()
	lx.word = append(lx.word, wordPart{param: unknownParam})
}

// redirection reads a redirection operator at lx.i and arranges for its
// target to be left out of the command's words.
func (lx *shellLexer) redirection() {
	if lx.inWord && len(lx.word) == 0 && isNumber(lx.text.String()) {
		lx.text.Reset() // the descriptor number (2>file)
		lx.inWord = false
	}
	lx.endWord()
	if strings.HasPrefix(lx.src[lx.i:], "<<") && !strings.HasPrefix(lx.src[lx.i:], "<<<") {
		lx.i += 2
		h := heredoc{}
		if lx.peek(0) == '-' {
			h.tabs = true
			lx.i++
		}
		for lx.i < len(lx.src) && (lx.src[lx.i] == ' ' || lx.src[lx.i] == '\t') {
			lx.i++
		}
		start := lx.i
		for lx.i < len(lx.src) && strings.IndexByte(" \t\n;&|<>()", lx.src[lx.i]) < 0 {
			lx.i++
		}
		h.delim = strings.NewReplacer("'", "", `"`, "", `\`, "").Replace(lx.src[start:lx.i])
		lx.heredocs = append(lx.heredocs, h)
		return
	}
	for lx.i < len(lx.src) && strings.IndexByte("<>&|", lx.src[lx.i]) >= 0 {
		lx.i++
	}
	lx.dropNext = true
}

// readHeredocs skips the bodies of the here-documents of the line just
// ended.
func (lx *shellLexer) readHeredocs() {
	for _, h := range lx.heredocs {
		for lx.i < len(lx.src) {
			end := strings.IndexByte(lx.src[lx.i:], '\n')
			if end < 0 {
				end = len(lx.src) - lx.i
			}
			line := lx.src[lx.i : lx.i+end]
			lx.i += end + 1
			lx.line++
			if h.tabs {
				line = strings.TrimLeft(line, "\t")
			}
			if line == h.delim {
				break
			}
		}
	}
	lx.heredocs = nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isName(s string) bool { return isAssignment(s + "=") }

// shellVars expands words with the variables a script assigned so far,
// then the environment.
type shellVars map[string]string

func (v shellVars) lookup(name string) (string, bool) {
	if x, ok := v[name]; ok {
		return x, true
	}
	return os.LookupEnv(name)
}

// expand returns a word's text; known is false when a part of it cannot
// be known without running the script.
func (v shellVars) expand(w shellWord) (text string, known bool) {
	var b strings.Builder
	known = true
	for _, p := range w {
		switch {
		case p.param == "":
			b.WriteString(p.text)
		case p.param == unknownParam:
			known = false
		default:
			x, ok := v.lookup(p.param)
			switch {
			case ok && (x != "" || !p.hasAlt):
				b.WriteString(x)
			case p.hasAlt:
				b.WriteString(p.alt)
			default:
				known = false
			}
		}
	}
	return b.String(), known
}

// keywords a command may start with before its command word.
var shellKeywords = map[string]bool{"if": true, "then": true, "else": true, "elif": true, "while": true, "until": true,
	"do": true, "!": true, "{": true, "}": true, "fi": true, "done": true, "exec": true, "command": true,
	"builtin": true, "time": true, "-p": true}

// declarations assign variables: `export NP=4`.
var shellDeclarations = map[string]bool{"export": true, "declare": true, "typeset": true, "local": true, "readonly": true}

// commandWords returns a command's words after expansion, without its
// leading keywords and assignments (which it records in v). Words that
// cannot be known are kept as they are written ($X).
func (v shellVars) commandWords(c shellCommand) []string {
	var words []string
	declaring := false
	for _, w := range c.words {
		text, known := v.expand(w)
		if len(words) == 0 {
			if shellKeywords[text] && known {
				continue
			}
			if shellDeclarations[text] {
				declaring = true
				continue
			}
			if name, value, ok := strings.Cut(text, "="); ok && isName(name) {
				if known {
					v[name] = value
				} else {
					delete(v, name)
				}
				continue
			}
			if declaring {
				continue
			}
		}
		if !known {
			text = "$?"
		}
		words = append(words, text)
	}
	return words
}
