package wrap

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Param is one formal parameter of an MPI function declaration.
//
// The declarator is kept as the text before and after the parameter's name,
// so any C declarator (pointers, arrays such as "int ranges[][3]", function
// pointers such as "void (*fn)(int)") can be re-emitted with a new name by
// [Param.Formal].
type Param struct {
	// Type is the full C type with the name removed, spelled canonically:
	// "const void *", "int", "MPI_Datatype", "int []", "int [][3]",
	// "char *[]", "MPI_User_function *", "void (*)(int)".
	Type string
	// Name is the parameter's name in the header, or "" if it has none.
	Name string
	// Base is the type with qualifiers, pointers and array dimensions
	// removed: "void", "int", "MPI_Status", "MPI_User_function".
	Base string
	// Const reports whether the base type is const-qualified
	// ("const void *buf", "const MPI_Datatype types[]").
	Const bool
	// Pointers is the number of '*' in the declarator (outside any function
	// pointer parentheses).
	Pointers int
	// Array reports whether the declarator has array dimensions.
	Array bool
	// Dims is the array part of the declarator: "[]", "[][3]", or "".
	Dims string
	// FuncPtr reports a function-pointer declarator written out in full
	// ("int (*fn)(void)"); typedef'd function types such as
	// "MPI_User_function *" have FuncPtr false and Pointers 1.
	FuncPtr bool

	prefix, suffix string // declarator text before and after the name
}

// Formal renders the parameter as a C formal parameter named name, e.g.
// "const void *arg_0", "int arg_3[][3]", "void (*arg_1)(int)".
func (p Param) Formal(name string) string {
	return joinDecl(p.prefix, name) + p.suffix
}

// CompactType is the type spelled as wrap.py's {{types}} macro spells it:
// without a space before '*', '[' or '(' ("const void*", "int[][3]").
func (p Param) CompactType() string { return compactType(p.Type) }

// IsPointerLike reports whether the parameter is passed by address: a
// pointer or an array (which C adjusts to a pointer).
func (p Param) IsPointerLike() bool { return p.Pointers > 0 || p.Array || p.FuncPtr }

// Func is one MPI function declaration from mpi.h.
type Func struct {
	Name     string  // "MPI_Send"
	Ret      string  // return type: "int", "double", "MPI_Aint"
	Params   []Param // the fixed parameters; "..." is not among them
	Variadic bool    // the parameter list ends in "..." (MPI_Pcontrol)

	// File and Line locate the declaration in the original header, from the
	// preprocessor's line markers; informational only.
	File string
	Line int
}

// ArgName is the name the generated code gives parameter i: "arg_i", or,
// with headerNames, the header's name when there is one (wrap.py's rule).
func (f Func) ArgName(i int, headerNames bool) string {
	if headerNames && f.Params[i].Name != "" {
		return f.Params[i].Name
	}
	return "arg_" + strconv.Itoa(i)
}

// ArgNames returns the names of all fixed parameters (see [Func.ArgName]).
func (f Func) ArgNames(headerNames bool) []string {
	names := make([]string, len(f.Params))
	for i := range f.Params {
		names[i] = f.ArgName(i, headerNames)
	}
	return names
}

// Formals returns the formal parameter declarations, with "..." last for a
// variadic function.
func (f Func) Formals(headerNames bool) []string {
	out := make([]string, 0, len(f.Params)+1)
	for i, p := range f.Params {
		out = append(out, p.Formal(f.ArgName(i, headerNames)))
	}
	if f.Variadic {
		out = append(out, "...")
	}
	return out
}

// Prototype renders the declaration without a trailing semicolon, with the
// given function name (use "P"+f.Name for the profiling entry point).
func (f Func) Prototype(name string, headerNames bool) string {
	formals := f.Formals(headerNames)
	if len(formals) == 0 {
		formals = []string{"void"}
	}
	return f.Ret + " " + name + "(" + strings.Join(formals, ", ") + ")"
}

// String is the declaration as -d prints it: header names where the header
// has them, arg_N elsewhere.
func (f Func) String() string { return f.Prototype(f.Name, true) }

// Dump writes one declaration per line, in the order given, as wrap.py -d
// does.
func Dump(w io.Writer, funcs []Func) error {
	var b strings.Builder
	for _, f := range funcs {
		b.WriteString(f.String())
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Exclusion is a family of mpi.h functions that [ParseHeader] leaves out.
type Exclusion struct {
	Name   string         // short label
	Match  *regexp.Regexp // matched against the function name
	Reason string         // why it is excluded
}

// DefaultExclusions are the functions wrap.py does not wrap, which
// [ParseHeader] leaves out too:
//
//   - "tool": MPI_T_* (the MPI tool information interface). wrap.py excludes
//     any declaration mentioning "MPI_T_" (llnl/wrap pull request #9): these
//     functions may be called before MPI_Init and after MPI_Finalize and are
//     not part of the application's MPI usage.
//   - "spawn": MPI_Comm_spawn and MPI_Comm_spawn_multiple. wrap.py excludes
//     "MPI_Comm_spawn" (same pull request) because of their argv-style
//     parameters (char *argv[], char **array_of_argv[]).
//   - "conversion": the handle and status conversion functions MPI_*_c2f,
//     MPI_*_f2c and the MPI-4 status conversions (c2f08, f082c, f082f,
//     f2f08). wrap.py excludes declarations containing "c2f" or "f2c"; the
//     f082f/f2f08 names contain neither, so wrap.py would keep them by
//     accident: we exclude all conversion functions.
//
// Not excluded, as in wrap.py: MPI_Pcontrol (variadic; its wrapper forwards
// only the fixed argument), MPI_Wtime/MPI_Wtick (double),
// MPI_Aint_add/MPI_Aint_diff (MPI_Aint; Open MPI defines these as macros, so
// they only appear with MPI libraries that declare them), the MPI-4 "_c"
// large-count variants and MPI_Session_*. PMPI_* and MPIX_* never match
// because only names beginning with "MPI_" are considered; typedefs are not
// declarations and are skipped.
var DefaultExclusions = []Exclusion{
	{"tool", regexp.MustCompile(`^MPI_T_`), "MPI tool information interface (excluded by wrap.py)"},
	{"spawn", regexp.MustCompile(`^MPI_Comm_spawn`), "MPI_Comm_spawn* (excluded by wrap.py)"},
	{"conversion", regexp.MustCompile(`c2f|f2c|f082c|f082f|f2f08`), "handle/status conversion function (excluded by wrap.py)"},
}

// ParseHeader extracts the MPI function declarations from preprocessed C
// text (the output of "mpicc -E" on a file containing #include <mpi.h>),
// minus [DefaultExclusions]. A function declared more than once is reported
// once, at its first declaration. It is an error if no declaration is found
// or if an MPI_ declaration cannot be parsed.
//
// The result is in header order, the order wrap.py -d prints; [Generate]
// sorts by name where it iterates over all functions ({{fnall}},
// {{forallfn}}), as wrap.py does.
//
// Declarations are recognised by structure rather than by wrap.py's
// line-based regular expressions: GCC attributes and asm labels anywhere,
// leftover declaration macros (OMPI_DECLSPEC, MPICH_API_PUBLIC,
// MPICH_ATTR_POINTER_WITH_TYPE_TAG(1,3)), function-pointer and array
// parameters, unnamed parameters, (void), "...", declarations spread over
// several lines and preprocessor line markers are all handled, and any
// return type is accepted (wrap.py looks only for int, double and
// MPI_Aint).
func ParseHeader(src string) ([]Func, error) {
	return ParseHeaderExcluding(src, DefaultExclusions)
}

// ParseHeaderExcluding is [ParseHeader] with a caller-chosen exclusion list
// (nil keeps every MPI_ function).
func ParseHeaderExcluding(src string, exclude []Exclusion) ([]Func, error) {
	toks, err := tokenizeC(src)
	if err != nil {
		return nil, err
	}
	var funcs []Func
	seen := map[string]bool{}
	var perr error
	splitStatements(toks, func(stmt []ctok) bool {
		f, ok, err := parseDeclaration(stmt)
		if err != nil {
			perr = err
			return false
		}
		if !ok || seen[f.Name] {
			return true
		}
		for _, e := range exclude {
			if e.Match.MatchString(f.Name) {
				return true
			}
		}
		seen[f.Name] = true
		funcs = append(funcs, f)
		return true
	})
	if perr != nil {
		return nil, perr
	}
	if len(funcs) == 0 {
		return nil, fmt.Errorf("no MPI function declarations found in the preprocessed mpi.h")
	}
	return funcs, nil
}

// ---------------------------------------------------------------------------
// A small tokenizer for preprocessed C.

type ctok struct {
	text string
	file string
	line int
}

func (t ctok) pos() string { return fmt.Sprintf("%s:%d", t.file, t.line) }

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func isWord(s string) bool { return s != "" && (isIdentChar(s[0]) || s[0] == '"' || s[0] == '\'') }

// lineMarker matches the preprocessor's "# 123 "file" flags" lines.
var lineMarker = regexp.MustCompile(`^#\s*(?:line\s+)?(\d+)(?:\s+"((?:[^"\\]|\\.)*)")?`)

// tokenizeC splits preprocessed C into tokens, dropping comments and
// directive lines and tracking the original file and line from line markers.
func tokenizeC(src string) ([]ctok, error) {
	var toks []ctok
	file, line := "<mpi.h>", 1
	atLineStart := true
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			atLineStart = true
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
			line++
			continue
		case c == '#' && atLineStart:
			end := strings.IndexByte(src[i:], '\n')
			if end < 0 {
				end = len(src) - i
			}
			directive := src[i : i+end]
			if m := lineMarker.FindStringSubmatch(directive); m != nil {
				if n, err := strconv.Atoi(m[1]); err == nil {
					line = n - 1 // the newline ending the marker advances it
					if m[2] != "" {
						file = m[2]
					}
				}
			}
			i += end
			continue
		}
		atLineStart = false
		start := i
		switch {
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("%s:%d: unterminated comment in preprocessed mpi.h", file, line)
			}
			line += strings.Count(src[i:i+2+end+2], "\n")
			i += 2 + end + 2
			continue
		case isIdentStart(c):
			for i < len(src) && isIdentChar(src[i]) {
				i++
			}
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9'):
			for i < len(src) && (isIdentChar(src[i]) || src[i] == '.' ||
				((src[i] == '+' || src[i] == '-') && strings.ContainsRune("eEpP", rune(src[i-1])))) {
				i++
			}
		case c == '"' || c == '\'':
			i++
			for i < len(src) && src[i] != c && src[i] != '\n' {
				if src[i] == '\\' && i+1 < len(src) {
					i++
				}
				i++
			}
			if i >= len(src) || src[i] != c {
				return nil, fmt.Errorf("%s:%d: unterminated literal in preprocessed mpi.h", file, line)
			}
			i++
		case strings.HasPrefix(src[i:], "..."):
			i += 3
		default:
			i++
		}
		toks = append(toks, ctok{src[start:i], file, line})
	}
	return toks, nil
}

// splitStatements calls fn with each top-level declaration (the tokens up to
// a ';' outside any brackets). Function definitions (a parenthesis followed
// by a brace-enclosed body) are skipped; struct/union/enum bodies are kept as
// a single "{...}" token so the declarators after them stay in the
// statement. fn returns false to stop.
func splitStatements(toks []ctok, fn func([]ctok) bool) {
	var stmt []ctok
	depth := 0 // () and [] nesting
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.text {
		case "(", "[":
			depth++
		case ")", "]":
			if depth > 0 {
				depth--
			}
		case ";":
			if depth == 0 {
				if len(stmt) > 0 && !fn(stmt) {
					return
				}
				stmt = stmt[:0:0]
				continue
			}
		case "{":
			if depth == 0 {
				end := matchBrace(toks, i)
				if len(stmt) > 0 && stmt[len(stmt)-1].text == ")" {
					// A function definition: skip its body entirely.
					stmt = nil
					i = end
					continue
				}
				stmt = append(stmt, ctok{"{...}", t.file, t.line})
				i = end
				continue
			}
		}
		stmt = append(stmt, t)
	}
	if len(stmt) > 0 {
		fn(stmt)
	}
}

// matchBrace returns the index of the '}' closing the '{' at toks[i] (or
// the last index if it is unbalanced).
func matchBrace(toks []ctok, i int) int {
	n := 0
	for j := i; j < len(toks); j++ {
		switch toks[j].text {
		case "{":
			n++
		case "}":
			n--
			if n == 0 {
				return j
			}
		}
	}
	return len(toks) - 1
}

// matchParen returns the index of the bracket closing the one at toks[i],
// or -1.
func matchParen(toks []ctok, i int) int {
	open := toks[i].text
	close := map[string]string{"(": ")", "[": "]"}[open]
	n := 0
	for j := i; j < len(toks); j++ {
		switch toks[j].text {
		case open:
			n++
		case close:
			n--
			if n == 0 {
				return j
			}
		}
	}
	return -1
}

// Identifiers that introduce a parenthesised group to be dropped from a
// declaration: GCC attributes, asm labels, MSVC declspecs.
var attrWords = map[string]bool{
	"__attribute__": true, "__attribute": true, "__declspec": true,
	"__asm__": true, "__asm": true, "asm": true, "_Alignas": true, "alignas": true,
}

// Words dropped from declarations: storage classes and GCC noise.
var noiseWords = map[string]bool{
	"extern": true, "static": true, "inline": true, "__inline": true, "__inline__": true,
	"_Noreturn": true, "__extension__": true, "register": true, "__thread": true,
	"_Thread_local": true, "auto": true, "volatile__": true,
}

// Type qualifiers (kept in the type, but never a parameter name).
var qualifiers = map[string]bool{
	"const": true, "volatile": true, "restrict": true, "__restrict": true,
	"__restrict__": true, "__const": true, "_Atomic": true,
}

// C keywords that are part of a type (never a parameter name).
var typeKeywords = map[string]bool{
	"void": true, "char": true, "short": true, "int": true, "long": true, "float": true,
	"double": true, "signed": true, "unsigned": true, "_Bool": true, "bool": true,
	"_Complex": true, "__int128": true, "struct": true, "union": true, "enum": true,
	"__signed__": true, "__unsigned__": true,
}

// stripNoise removes attributes, asm labels and storage-class words.
func stripNoise(toks []ctok) []ctok {
	out := make([]ctok, 0, len(toks))
	for i := 0; i < len(toks); i++ {
		t := toks[i].text
		if attrWords[t] {
			j := i + 1
			for j < len(toks) && (toks[j].text == "volatile" || toks[j].text == "__volatile__") {
				j++
			}
			if j < len(toks) && toks[j].text == "(" {
				if end := matchParen(toks, j); end > 0 {
					i = end
					continue
				}
			}
			continue
		}
		if noiseWords[t] {
			continue
		}
		out = append(out, toks[i])
	}
	return out
}

// isLeftoverMacro reports identifiers that look like unexpanded
// declaration-decorating macros (OMPI_DECLSPEC, MPICH_API_PUBLIC, ...):
// all upper case, at least one letter.
func isLeftoverMacro(s string) bool {
	letter := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9' || c == '_':
		default:
			return false
		}
	}
	return letter && len(s) > 1
}

// parseDeclaration recognises "RET MPI_Name(params) [attributes]" in one
// top-level statement. ok is false for anything else.
func parseDeclaration(stmt []ctok) (f Func, ok bool, err error) {
	if len(stmt) == 0 || stmt[0].text == "typedef" ||
		(stmt[0].text == "__extension__" && len(stmt) > 1 && stmt[1].text == "typedef") {
		return f, false, nil
	}
	// Find the declarator "MPI_xxx (" at bracket depth 0.
	depth, at := 0, -1
	for i, t := range stmt {
		switch t.text {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		case "=", "{...}":
			if depth == 0 {
				return f, false, nil // an initialised variable or an aggregate
			}
		}
		if depth == 0 && strings.HasPrefix(t.text, "MPI_") && i+1 < len(stmt) && stmt[i+1].text == "(" {
			if i > 0 && attrWords[stmt[i-1].text] {
				continue
			}
			at = i
			break
		}
	}
	if at < 0 {
		return f, false, nil
	}
	name := stmt[at]
	// The return type: what precedes the name, minus noise, minus
	// macro-call leftovers such as __mpi_interface_deprecated__("...").
	var ret []ctok
	pre := stripNoise(stmt[:at])
	for i := 0; i < len(pre); i++ {
		if i+1 < len(pre) && isIdentStart(pre[i].text[0]) && pre[i+1].text == "(" &&
			!typeKeywords[pre[i].text] && !qualifiers[pre[i].text] {
			if end := matchParen(pre, i+1); end > 0 {
				i = end
				continue
			}
		}
		if pre[i].text == "," {
			return f, false, nil // several declarators: not a plain prototype
		}
		ret = append(ret, pre[i])
	}
	// Drop leftover all-caps macros in front of the real type.
	for len(ret) > 1 && isLeftoverMacro(ret[0].text) {
		ret = ret[1:]
	}
	if len(ret) == 0 {
		return f, false, nil // a macro invocation, not a declaration
	}
	for _, t := range ret {
		if !isWord(t.text) && t.text != "*" {
			return f, false, nil
		}
	}
	closeIdx := matchParen(stmt, at+1)
	if closeIdx < 0 {
		return f, false, fmt.Errorf("%s: malformed declaration of %s: unbalanced parentheses", name.pos(), name.text)
	}
	f = Func{Name: name.text, Ret: renderTokens(ret), File: name.file, Line: name.line}
	params, variadic, err := parseParams(stmt[at+2:closeIdx], name)
	if err != nil {
		return f, false, err
	}
	f.Params, f.Variadic = params, variadic
	return f, true, nil
}

// parseParams parses the tokens between a declaration's parentheses.
func parseParams(toks []ctok, fn ctok) ([]Param, bool, error) {
	var groups [][]ctok
	depth, start := 0, 0
	for i, t := range toks {
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case ",":
			if depth == 0 {
				groups = append(groups, toks[start:i])
				start = i + 1
			}
		}
	}
	groups = append(groups, toks[start:])
	if len(groups) == 1 {
		g := stripNoise(groups[0])
		if len(g) == 0 || (len(g) == 1 && g[0].text == "void") {
			return nil, false, nil
		}
	}
	var params []Param
	variadic := false
	for i, g := range groups {
		g = stripNoise(g)
		if len(g) == 1 && g[0].text == "..." {
			if i != len(groups)-1 {
				return nil, false, fmt.Errorf("%s: malformed declaration of %s: '...' is not last", fn.pos(), fn.text)
			}
			variadic = true
			continue
		}
		p, err := parseParam(g)
		if err != nil {
			return nil, false, fmt.Errorf("%s: malformed declaration of %s, parameter %d: %v", fn.pos(), fn.text, i+1, err)
		}
		params = append(params, p)
	}
	return params, variadic, nil
}

// parseParam splits one parameter declaration into the text before and
// after its name.
func parseParam(g []ctok) (Param, error) {
	if len(g) == 0 {
		return Param{}, fmt.Errorf("empty parameter")
	}
	text := make([]string, len(g))
	for i, t := range g {
		text[i] = t.text
	}
	var p Param
	nameAt, insertAt := -1, len(text) // name index, or where an unnamed one goes

	// A '(' at depth 0 means a function declarator.
	paren := -1
	for i, t := range text {
		if t == "(" {
			paren = i
			break
		}
		if t == "[" {
			break
		}
	}
	switch {
	case paren >= 0 && paren+1 < len(text) && (text[paren+1] == "*" || text[paren+1] == "^"):
		// ret (*name)(args) or ret (*)(args)
		p.FuncPtr = true
		end := matchParenText(text, paren)
		if end < 0 {
			return p, fmt.Errorf("unbalanced parentheses in %q", strings.Join(text, " "))
		}
		insertAt = end
		for i := paren + 1; i < end; i++ {
			if isIdentStart(text[i][0]) && !qualifiers[text[i]] {
				nameAt = i
				break
			}
		}
	case paren > 0:
		// ret name(args): a function type, adjusted to a pointer.
		p.FuncPtr = true
		insertAt = paren
		if paren > 1 && isIdentStart(text[paren-1][0]) && !typeKeywords[text[paren-1]] && !qualifiers[text[paren-1]] {
			nameAt = paren - 1
		}
	default:
		arr := len(text)
		for i, t := range text {
			if t == "[" {
				arr = i
				break
			}
		}
		insertAt = arr
		if arr > 1 {
			cand := text[arr-1]
			prev := text[arr-2]
			hasType := false
			for _, t := range text[:arr-1] {
				if isIdentStart(t[0]) && !qualifiers[t] {
					hasType = true
				}
			}
			if isIdentStart(cand[0]) && !typeKeywords[cand] && !qualifiers[cand] && hasType &&
				prev != "struct" && prev != "union" && prev != "enum" {
				nameAt = arr - 1
			}
		}
	}
	var before, after []string
	if nameAt >= 0 {
		p.Name = text[nameAt]
		before, after = text[:nameAt], text[nameAt+1:]
	} else {
		before, after = text[:insertAt], text[insertAt:]
	}
	p.prefix = renderTokenStrings(before)
	p.suffix = renderTokenStrings(after)
	if p.prefix == "" {
		return p, fmt.Errorf("no type in %q", strings.Join(text, " "))
	}
	p.Type = p.prefix
	if p.suffix != "" {
		p.Type = joinDecl(p.prefix, "") + p.suffix
		if endsWord(p.prefix) {
			p.Type = p.prefix + " " + p.suffix
		}
	}
	p.Type = strings.TrimSpace(p.Type)
	// Base, Const, Pointers, Dims.
	var base []string
	for _, t := range before {
		switch {
		case t == "*":
			if !p.FuncPtr {
				p.Pointers++
			}
		case t == "const" && p.Pointers == 0:
			p.Const = true
		case qualifiers[t]:
		case t == "(" || t == "^":
		default:
			if !(p.FuncPtr && (t == "(" || t == ")")) {
				base = append(base, t)
			}
		}
	}
	if p.FuncPtr {
		// The base of a function pointer is its return type.
		base = base[:0]
		for _, t := range text {
			if t == "(" {
				break
			}
			if t != "*" && !qualifiers[t] {
				base = append(base, t)
			}
		}
	}
	p.Base = strings.Join(base, " ")
	if !p.FuncPtr && strings.HasPrefix(p.suffix, "[") {
		p.Array = true
		p.Dims = p.suffix
	}
	return p, nil
}

func matchParenText(text []string, i int) int {
	n := 0
	for j := i; j < len(text); j++ {
		switch text[j] {
		case "(":
			n++
		case ")":
			n--
			if n == 0 {
				return j
			}
		}
	}
	return -1
}

func renderTokens(toks []ctok) string {
	s := make([]string, len(toks))
	for i, t := range toks {
		s[i] = t.text
	}
	return renderTokenStrings(s)
}

// renderTokenStrings joins C tokens with the usual spacing: a space between
// words, before a '*' that follows a word, after commas; none elsewhere.
func renderTokenStrings(toks []string) string {
	var b strings.Builder
	prev := ""
	for _, t := range toks {
		if prev != "" {
			switch {
			case isWord(prev) && isWord(t):
				b.WriteByte(' ')
			case (isWord(prev) || prev == ")") && t == "*":
				b.WriteByte(' ')
			case isWord(prev) && t == "(":
				b.WriteByte(' ')
			case prev == ",":
				b.WriteByte(' ')
			}
		}
		b.WriteString(t)
		prev = t
	}
	return b.String()
}

func endsWord(s string) bool { return s != "" && isIdentChar(s[len(s)-1]) }

// joinDecl appends name to a declarator prefix: "int" + "x" = "int x",
// "void *" + "x" = "void *x", "void (*" + "x" = "void (*x".
func joinDecl(prefix, name string) string {
	if name == "" {
		return prefix
	}
	if endsWord(prefix) {
		return prefix + " " + name
	}
	return prefix + name
}

// compactType removes the spaces before '*', '[' and '(' and after '*'
// ("const void *" -> "const void*"), as wrap.py spells types.
func compactType(t string) string {
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c == ' ' {
			next := byte(0)
			if i+1 < len(t) {
				next = t[i+1]
			}
			prev := byte(0)
			if i > 0 {
				prev = t[i-1]
			}
			if next == '*' || next == '[' || next == '(' || next == ')' || prev == '*' || prev == '(' {
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// normalizeType canonicalises a user-written type for comparison: runs of
// whitespace collapse and spaces around punctuation disappear.
func normalizeType(t string) string {
	return compactType(strings.Join(strings.Fields(t), " "))
}
