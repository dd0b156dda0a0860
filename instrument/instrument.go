//go:build cgo

package instrument

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Options control one rewrite.
type Options struct {
	// Path names the source in the markers and in the #line directive
	// (as the compiler would have named it).
	Path string
	// CPP parses the source as C++ (default: by Path's extension).
	CPP bool
	// Chance is the probability that an iteration is sampled, written
	// into every iteration marker (MPITRACE_LOOP_CHANCE overrides it at
	// run time).
	Chance float64
	// Preprocessed says the source is the preprocessor's output: line
	// markers name the original lines, and only the loops of Path (the
	// main file) are instrumented.
	Preprocessed bool
}

// Note says why a loop was left alone.
type Note struct {
	File string
	Line int
	Msg  string
}

func (n Note) String() string { return fmt.Sprintf("%s:%d: %s", n.File, n.Line, n.Msg) }

// Result is a rewritten source.
type Result struct {
	Out   []byte
	Loops int // loops instrumented
	Notes []Note
}

// DefaultChance is the iteration sampling probability when none is given.
const DefaultChance = 0.01

// Lang reports whether path names a C or C++ source, and which.
func Lang(path string) (cpp, ok bool) {
	switch filepath.Ext(path) {
	case ".c":
		return false, true
	case ".cc", ".cpp", ".cxx", ".C", ".c++", ".cp", ".CPP":
		return true, true
	}
	return false, false
}

// Source rewrites src.
func Source(src []byte, opt Options) *Result {
	in := &inst{src: src, opt: opt, path: opt.Path, covered: map[*node]bool{}, skipped: map[*node]bool{}}
	if in.path == "" {
		in.path = "<stdin>"
	}
	if opt.Preprocessed {
		in.lines = lineMap(src)
		if in.path == "<stdin>" && len(in.lines) > 0 {
			in.path = in.lines[0].file
		}
	}
	in.root = parse(src, opt.CPP)
	in.visit(in.root, 0, nil)
	return in.finish()
}

type inst struct {
	src   []byte
	opt   Options
	path  string
	root  *node
	lines []lineMark // preprocessed input: where its lines come from
	dirs  []directive
	// lineStarts are the offsets where lines begin (made on first use).
	lineStarts []int
	edits      []edit
	seq        int
	loops      int
	notes      []Note
	// covered holds the loops of an OpenMP worksharing nest (collapse):
	// they get no markers of their own.
	covered map[*node]bool
	// skipped holds the statements under `omp target` or OpenACC: no
	// markers anywhere inside.
	skipped map[*node]bool
}

type edit struct {
	pos   int
	close bool
	level int
	seq   int
	text  string
}

func isLoop(k string) bool {
	switch k {
	case "for_statement", "while_statement", "do_statement", "for_range_loop":
		return true
	}
	return false
}

// function is what the checks of a loop need to know of the function
// around it.
type function struct {
	node      *node
	constexpr bool
	// externInline: a C inline function that is not static, where
	// static objects are not allowed.
	externInline bool
	labels       map[string][]int // label -> where it stands
	gotos        []jump
	addrTaken    map[string]bool // labels whose address is taken (&&label)
}

var gotoRE = regexp.MustCompile(`\bgoto\s+([A-Za-z_][A-Za-z0-9_]*)`)

type jump struct {
	label string
	pos   int
}

func (in *inst) newFunction(n *node, outer *function) *function {
	f := &function{node: n, labels: map[string][]int{}, addrTaken: map[string]bool{}}
	var head []byte
	switch n.kind {
	case "function_definition":
		if d := n.child("declarator"); d != nil {
			head = in.src[n.start:d.start]
		}
	case "lambda_expression":
		if b := n.child("body"); b != nil {
			head = in.src[n.start:b.start]
		}
	}
	f.constexpr = outer != nil && outer.constexpr || hasWord(head, "constexpr") || hasWord(head, "consteval")
	f.externInline = !in.opt.CPP && n.kind == "function_definition" && !hasWord(head, "static") &&
		(hasWord(head, "inline") || hasWord(head, "__inline") || hasWord(head, "__inline__"))
	stack := []*node{n}
	for len(stack) > 0 {
		m := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if m.kind == "labeled_statement" {
			if l := m.child("label"); l != nil {
				name := string(in.src[l.start:l.end])
				f.labels[name] = append(f.labels[name], m.start)
			}
		}
		stack = append(stack, m.children...)
	}
	// The gotos, and the labels they name, are also read from the text:
	// code the parser could not read (an ERROR node) may hold them.
	body := in.src[n.start:n.end]
	for _, m := range gotoRE.FindAllSubmatchIndex(body, -1) {
		f.gotos = append(f.gotos, jump{string(body[m[2]:m[3]]), n.start + m[0]})
	}
	for _, g := range f.gotos {
		for i := 0; i < len(body); {
			j := bytes.Index(body[i:], []byte(g.label))
			if j < 0 {
				break
			}
			at := i + j
			end := at + len(g.label)
			i = end
			if at > 0 && isIdent(body[at-1]) || end < len(body) && isIdent(body[end]) {
				continue
			}
			rest := bytes.TrimLeft(body[end:], " \t")
			if len(rest) > 0 && rest[0] == ':' && (len(rest) == 1 || rest[1] != ':') {
				f.labels[g.label] = append(f.labels[g.label], n.start+at)
			}
		}
	}
	if len(f.labels) > 0 {
		for i := bytes.Index(body, []byte("&&")); i >= 0; {
			rest := bytes.TrimLeft(body[i+2:], " \t")
			j := 0
			for j < len(rest) && isIdent(rest[j]) {
				j++
			}
			f.addrTaken[string(rest[:j])] = true
			k := bytes.Index(body[i+2:], []byte("&&"))
			if k < 0 {
				break
			}
			i += 2 + k
		}
	}
	return f
}

// visit walks the tree; depth counts the loops around n.
func (in *inst) visit(n *node, depth int, fn *function) {
	switch n.kind {
	case "function_definition", "lambda_expression":
		fn = in.newFunction(n, fn)
	case "ERROR":
		// A function the parser lost track of (a macro it cannot
		// read): its well-formed loops at statement level are still
		// instrumented.
		if looksLikeFunction(n) {
			fn = in.newFunction(n, fn)
		}
	}
	if in.skipped[n] {
		return
	}
	if len(n.children) == 0 && n.end-n.start <= 5 && n.parent != nil && !isLoop(n.parent.kind) &&
		(n.kind == "for" || n.kind == "while" || n.kind == "do" || n.kind == "identifier") {
		// A loop keyword that did not become a loop: the parser lost
		// its way (an unknown macro).
		switch string(in.src[n.start:n.end]) {
		case "for", "while", "do":
			in.note(n, "the parser does not understand it (a macro or unknown syntax)")
		}
	}
	if isLoop(n.kind) && !in.covered[n] {
		in.loop(n, depth, fn)
		if in.skipped[n] {
			return
		}
	}
	d := depth
	if isLoop(n.kind) {
		d++
	}
	for _, c := range n.children {
		in.visit(c, d, fn)
	}
}

func (in *inst) add(pos int, close bool, level int, text string) {
	in.seq++
	in.edits = append(in.edits, edit{pos: pos, close: close, level: level, seq: in.seq, text: text})
}

func (in *inst) note(n *node, format string, args ...any) {
	file, line := in.where(in.rowOf(n.start))
	in.notes = append(in.notes, Note{File: file, Line: line, Msg: "loop not instrumented: " + fmt.Sprintf(format, args...)})
}

// rowOf returns the 0-based line of a byte offset.
func (in *inst) rowOf(pos int) int {
	if in.lineStarts == nil {
		in.lineStarts = []int{0}
		for i, c := range in.src {
			if c == '\n' {
				in.lineStarts = append(in.lineStarts, i+1)
			}
		}
	}
	return sort.SearchInts(in.lineStarts, pos+1) - 1
}

// colOf returns the 0-based column, in bytes, of a byte offset.
func (in *inst) colOf(pos int) int {
	return pos - in.lineStarts[in.rowOf(pos)]
}

// where maps a 0-based row of the input to the file and 1-based line it
// stands for.
func (in *inst) where(row int) (string, int) {
	if !in.opt.Preprocessed {
		return in.path, row + 1
	}
	i := sort.Search(len(in.lines), func(i int) bool { return in.lines[i].row > row }) - 1
	if i < 0 {
		return in.path, row + 1
	}
	m := in.lines[i]
	return m.file, m.line + (row - m.row - 1)
}

// loop instruments the loop n, or notes why not.
func (in *inst) loop(n *node, depth int, fn *function) {
	if in.opt.Preprocessed {
		if file, _ := in.where(in.rowOf(n.start)); file != in.path {
			return // a loop of an included header
		}
	}
	body := n.child("body")
	if body == nil || !wellFormed(n, body) {
		in.note(n, "the parser does not understand it (a macro or unknown syntax)")
		return
	}
	if why := in.placeProblem(n, fn); why != "" {
		in.note(n, "%s", why)
		return
	}
	if why := in.directiveProblem(n, body); why != "" {
		in.note(n, "%s", why)
		return
	}
	if why := jumpsInto(n, fn); why != "" {
		in.note(n, "%s", why)
		return
	}
	first, pragmas := pragmaGroup(n)
	kind := pragmaKind(in.src, pragmas)
	switch kind {
	case pragmaOffload:
		in.note(n, "it is offloaded (omp target or OpenACC)")
		in.skipped[n] = true
		return
	case pragmaMixed:
		in.note(n, "OpenMP parallel with other pragmas before it")
		return
	}
	row, col := in.rowOf(n.start), in.colOf(n.start)
	file, line := in.where(row)
	name := fmt.Sprintf("mpitrace_l%d_%d", row+1, col+1)
	site := fmt.Sprintf("%s, %d, %d", cQuote(file), line, col+1)
	level := 2 * depth
	if kind == pragmaWorkshare {
		// The pragma must stay directly before its loop: the marker
		// goes before the pragma, on a line of its own, and a #line
		// puts the pragma back on its line.
		pfile, pline := in.where(in.rowOf(first.start))
		in.add(first.start, false, level, fmt.Sprintf("{ MPITRACE_LOOP_UNCOUNTED(%s, %s);\n#line %d %s\n", name, site, pline, cQuote(pfile)))
		in.add(n.end, true, level, " }")
		in.loops++
		in.cover(n, collapse(in.src, pragmas))
		return
	}
	at := n.start
	open := fmt.Sprintf("{ MPITRACE_LOOP(%s, %s); ", name, site)
	if kind == pragmaLoop {
		pfile, pline := in.where(in.rowOf(first.start))
		at = first.start
		open = fmt.Sprintf("{ MPITRACE_LOOP(%s, %s);\n#line %d %s\n", name, site, pline, cQuote(pfile))
	}
	in.add(at, false, level, open)
	in.add(n.end, true, level, " }")
	iter := fmt.Sprintf("MPITRACE_ITER(mpitrace_i%d_%d, %s, %s);", row+1, col+1, name, strconv.FormatFloat(in.opt.Chance, 'g', -1, 64))
	if body.kind == "compound_statement" {
		in.add(body.start+1, false, level+1, " "+iter)
	} else {
		in.add(body.start, false, level+1, "{ "+iter+" ")
		in.add(body.end, true, level+1, " }")
	}
	in.loops++
}

// wellFormed reports whether the parser read the loop's structure: its
// own parts and, for a braced body, the braces and the statements in it
// (a macro the parser cannot read inside one of those statements does not
// move the places where markers go).
func wellFormed(n, body *node) bool {
	broken := func(c *node) bool { return c.kind == "ERROR" || c.bad && c.start == c.end }
	for _, c := range n.children {
		if c != body && broken(c) {
			return false
		}
	}
	if body.kind != "compound_statement" {
		return !body.bad
	}
	if len(body.children) < 2 || body.children[0].kind != "{" || body.children[len(body.children)-1].kind != "}" {
		return false
	}
	for _, c := range body.children {
		if broken(c) {
			return false
		}
	}
	return true
}

// cover marks the loops an OpenMP worksharing directive binds: n and the
// loops perfectly nested in it, count in all.
func (in *inst) cover(n *node, count int) {
	for i := 0; i < count && n != nil; i++ {
		in.covered[n] = true
		body := n.child("body")
		if body == nil {
			return
		}
		if body.kind == "compound_statement" {
			var inner *node
			for _, c := range body.children {
				if c.named && c.kind != "comment" {
					if inner != nil {
						inner = nil
						break
					}
					inner = c
				}
			}
			body = inner
		}
		if body == nil || !isLoop(body.kind) {
			return
		}
		n = body
	}
}

// placeProblem says why a loop cannot be wrapped where it stands.
func (in *inst) placeProblem(n *node, fn *function) string {
	if fn == nil {
		return "it is not inside a function"
	}
	switch n.parent.kind {
	case "compound_statement", "labeled_statement", "case_statement", "if_statement", "else_clause",
		"for_statement", "while_statement", "do_statement", "for_range_loop",
		"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef":
	case "ERROR":
		if !afterStatement(n) {
			return "the parser does not understand the code around it"
		}
	default:
		return "a declaration cannot go where it stands (inside " + strings.ReplaceAll(n.parent.kind, "_", " ") + ")"
	}
	if fn.constexpr {
		return "it is in a constexpr or consteval function"
	}
	if fn.externInline {
		return "it is in an inline function that is not static (C allows no static object there)"
	}
	return ""
}

// looksLikeFunction reports whether an ERROR node starts like a function
// definition: a function declarator, then a brace.
func looksLikeFunction(n *node) bool {
	decl := false
	for _, c := range n.children {
		switch c.kind {
		case "function_declarator":
			decl = true
		case "pointer_declarator", "reference_declarator":
			c.walk(func(m *node) bool {
				decl = decl || m.kind == "function_declarator"
				return !decl
			})
		case "{":
			return decl
		}
	}
	return false
}

// afterStatement reports whether the loop n, inside an ERROR node, stands
// where a statement may start: after a complete statement, a declaration,
// a brace, a label or a directive.
func afterStatement(n *node) bool {
	p := n.prevSibling()
	for p != nil && p.kind == "comment" {
		p = p.prevSibling()
	}
	if p == nil || p.bad {
		return false
	}
	switch p.kind {
	case ";", "{", "}", ":", "declaration":
		return true
	}
	return strings.HasSuffix(p.kind, "_statement") || strings.HasPrefix(p.kind, "preproc_")
}

// directive is a preprocessor directive line of the source.
type directive struct {
	pos  int    // its '#'
	word string // if, ifdef, else, endif, pragma, ...
}

// directives lists the source's directive lines (lines whose first
// non-blank character is '#'; one in a comment or string too, which only
// makes the checks more careful).
func directives(src []byte) []directive {
	var ds []directive
	for pos := 0; pos < len(src); {
		i := pos
		for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
			i++
		}
		if i < len(src) && src[i] == '#' {
			end := bytes.IndexByte(src[i:], '\n')
			if end < 0 {
				end = len(src) - i
			}
			ds = append(ds, directive{pos: i, word: directiveWord(src[i : i+end])})
		}
		nl := bytes.IndexByte(src[pos:], '\n')
		if nl < 0 {
			break
		}
		pos += nl + 1
	}
	return ds
}

// directiveProblem says why preprocessor directives inside the loop make
// it unsafe to rewrite: a conditional that opens or closes outside the
// body, or any directive in the loop's head or do-while tail.
func (in *inst) directiveProblem(n, body *node) string {
	if in.dirs == nil {
		in.dirs = directives(in.src)
	}
	i := sort.Search(len(in.dirs), func(i int) bool { return in.dirs[i].pos >= n.start })
	depth := 0
	for ; i < len(in.dirs) && in.dirs[i].pos < n.end; i++ {
		d := in.dirs[i]
		if d.pos < body.start || d.pos >= body.end {
			return "a preprocessor directive splits its head"
		}
		switch d.word {
		case "if", "ifdef", "ifndef":
			depth++
		case "endif":
			depth--
		case "else", "elif", "elifdef", "elifndef":
			if depth == 0 {
				depth = -1
			}
		}
		if depth < 0 {
			return "a preprocessor conditional splits it"
		}
	}
	if depth != 0 {
		return "a preprocessor conditional splits it"
	}
	return ""
}

func directiveWord(line []byte) string {
	s := strings.TrimLeft(string(line[1:]), " \t")
	i := 0
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z') {
		i++
	}
	return s[:i]
}

// jumpsInto says why code may enter the loop other than through its
// head: a goto from outside to a label inside, a label whose address is
// taken, or a case label of a switch outside (Duff's device).
func jumpsInto(n *node, fn *function) string {
	if n.strayCase {
		return "a case label inside it belongs to a switch around it (Duff's device)"
	}
	inside := func(label string) bool {
		for _, at := range fn.labels[label] {
			if at >= n.start && at < n.end {
				return true
			}
		}
		return false
	}
	for _, g := range fn.gotos {
		if (g.pos < n.start || g.pos >= n.end) && inside(g.label) {
			return "a goto outside it jumps to label " + g.label + " inside it"
		}
	}
	var taken []string
	for l := range fn.labels {
		if fn.addrTaken[l] && inside(l) {
			taken = append(taken, l)
		}
	}
	if len(taken) > 0 {
		sort.Strings(taken)
		return "the address of its label " + taken[0] + " is taken"
	}
	return ""
}

func isIdent(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

func hasWord(text []byte, w string) bool {
	for i := bytes.Index(text, []byte(w)); i >= 0; {
		end := i + len(w)
		if (i == 0 || !isIdent(text[i-1])) && (end == len(text) || !isIdent(text[end])) {
			return true
		}
		j := bytes.Index(text[end:], []byte(w))
		if j < 0 {
			return false
		}
		i = end + j
	}
	return false
}

// cQuote writes s as a C string literal.
func cQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\%03o", c)
		case c == '?':
			b.WriteString("\\?") // no trigraphs
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// finish applies the edits.
func (in *inst) finish() *Result {
	sort.Slice(in.edits, func(i, j int) bool {
		a, b := in.edits[i], in.edits[j]
		if a.pos != b.pos {
			return a.pos < b.pos
		}
		if a.close != b.close {
			return a.close // closing braces first
		}
		if a.level != b.level {
			if a.close {
				return a.level > b.level // inner scopes close first
			}
			return a.level < b.level // outer scopes open first
		}
		return a.seq < b.seq
	})
	var out bytes.Buffer
	out.Grow(len(in.src) + len(in.edits)*48 + 64)
	out.WriteString("#include \"mpitrace.h\"\n")
	if !in.opt.Preprocessed {
		fmt.Fprintf(&out, "#line 1 %s\n", cQuote(in.path))
	}
	pos := 0
	for _, e := range in.edits {
		out.Write(in.src[pos:e.pos])
		out.WriteString(e.text)
		pos = e.pos
	}
	out.Write(in.src[pos:])
	sort.SliceStable(in.notes, func(i, j int) bool { return in.notes[i].Line < in.notes[j].Line })
	return &Result{Out: out.Bytes(), Loops: in.loops, Notes: in.notes}
}
