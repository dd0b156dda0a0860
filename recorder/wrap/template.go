package wrap

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Input is one template (".w") file.
type Input struct {
	Name string // used in error messages ("file.w:LINE: ...")
	Text string
}

// Options are wrap.py's command-line switches that affect generation.
type Options struct {
	// Fortran (-f) also generates Fortran bindings for every function
	// wrapped with {{fn}}/{{fnall}}; see fortran.go.
	Fortran bool
	// Guards (-g) generates reentry guards: an MPI call made while a
	// wrapper is already running on the same thread goes straight to PMPI.
	// The guard flag is thread-local (wrap.py's is a process-wide static).
	Guards bool
	// NoFrontMatter (-s) omits the #includes and #defines written before
	// the first template, for non-C output. It also turns off the C comment
	// and literal awareness of the template lexer.
	NoFrontMatter bool
	// NoDeprecationWarnings (-w) wraps the PMPI calls the generated code
	// makes in WRAP_MPI_CALL_PREFIX/WRAP_MPI_CALL_POSTFIX, which silence
	// -Wdeprecated-declarations on GCC and clang.
	NoDeprecationWarnings bool
	// PMPIInit (-i) is the Fortran pmpi_init binding that a statically
	// linked wrapper library calls: one of PMPI_INIT, pmpi_init,
	// pmpi_init_, pmpi_init__. Empty means pmpi_init_ (wrap.py's default).
	// Its mangling is also used for pmpi_init_thread and the other Fortran
	// PMPI bindings a static library calls (see fortran.go). Shared
	// libraries (compiled with -fPIC) find the bindings themselves.
	PMPIInit string
	// FortranManglings selects the Fortran entry points -f writes for every
	// function (MPI_SEND, mpi_send, mpi_send_, mpi_send__); zero means all
	// four, as wrap.py writes.
	FortranManglings Mangling
	// SkipUnknown makes {{fn}} and {{foreachfn}} skip functions the header
	// does not declare, instead of failing (wrap.py fails). A name written
	// with a trailing '?' ("MPI_Send_c?") is optional even without it.
	SkipUnknown bool
	// HeaderNames names the generated formal parameters as mpi.h does,
	// falling back to arg_N for unnamed ones, exactly like wrap.py. By
	// default every parameter is arg_0, arg_1, ..., which cannot collide
	// with identifiers in the template's code and is identical across MPI
	// implementations.
	HeaderNames bool
	// FortranEnter and FortranLeave, when not empty, are C statements
	// written in every Fortran entry point before and after it calls the
	// binding (the template's code runs in between): e.g. to note the
	// Fortran caller's return address, which the C wrapper cannot see.
	// FortranEnter may declare variables FortranLeave uses.
	FortranEnter, FortranLeave string
}

// PMPIInitBindings are the accepted values of [Options.PMPIInit].
var PMPIInitBindings = []string{"PMPI_INIT", "pmpi_init", "pmpi_init_", "pmpi_init__"}

// returnVal is the variable holding the PMPI call's result, named as in
// wrap.py so that templates using it literally keep working.
const returnVal = "_wrap_py_return_val"

// Limits that keep a hostile or mistaken template from exhausting memory.
var (
	maxOutput     = 1 << 30 // bytes of generated text
	maxValueBytes = 1 << 26 // bytes in one macro value
	maxDepth      = 200     // nesting of body macros at run time
	maxSteps      = 1 << 27 // evaluated nodes (bounds nested iteration)
)

// Generate expands the templates in order against the declarations funcs
// and writes the result to w. Output is written only if generation
// succeeds; the error is a single line "file.w:LINE: message".
//
// {{fileno}} is the index of the input in inputs, from 0; {{fn_num}}
// counts across all inputs.
func Generate(w io.Writer, funcs []Func, inputs []Input, opts Options) error {
	if opts.PMPIInit == "" {
		opts.PMPIInit = "pmpi_init_"
	}
	valid := false
	for _, b := range PMPIInitBindings {
		valid = valid || b == opts.PMPIInit
	}
	if !valid {
		return fmt.Errorf("pmpi_init binding %q must be one of %s", opts.PMPIInit, strings.Join(PMPIInitBindings, ", "))
	}
	g := &gen{opts: opts, funcs: map[string]*Func{}, regexps: map[string]*regexp.Regexp{}}
	for i := range funcs {
		f := &funcs[i]
		if _, dup := g.funcs[f.Name]; !dup {
			g.funcs[f.Name] = f
			g.sorted = append(g.sorted, f.Name)
		}
	}
	sort.Strings(g.sorted)

	// Parse everything first so that a syntax error in a later file does
	// not leave half an output behind.
	parsed := make([][]*node, len(inputs))
	for i, in := range inputs {
		nodes, err := parseTemplate(in.Name, in.Text, !opts.NoFrontMatter)
		if err != nil {
			return err
		}
		parsed[i] = nodes
	}

	if !opts.NoFrontMatter {
		g.out.WriteString(frontMatter(opts))
	}
	if opts.NoDeprecationWarnings {
		g.out.WriteString(deprecationMacros)
	}
	for i, nodes := range parsed {
		g.file = inputs[i].Name
		root := &scope{vars: map[string]value{"fileno": strValue(strconv.Itoa(i))}}
		fileScope := &scope{vars: map[string]value{}, parent: root}
		for _, n := range nodes {
			if err := g.evaluate(n, fileScope); err != nil {
				return err
			}
		}
	}
	_, err := w.Write(g.out.Bytes())
	return err
}

// gen is the state of one Generate call.
type gen struct {
	opts    Options
	funcs   map[string]*Func
	sorted  []string // function names in name order
	out     bytes.Buffer
	file    string
	fnNum   int
	depth   int
	steps   int
	regexps map[string]*regexp.Regexp
}

// valueKind distinguishes the values macros produce.
type valueKind int

const (
	noValue valueKind = iota
	stringValue
	listValue
	funcValue
)

// value is what a macro evaluates to: nothing, a string, a list of strings
// (printed comma-separated) or a callable macro.
type value struct {
	kind valueKind
	s    string
	list []string
	fn   macroFunc
}

// macroFunc implements a callable macro. call is the macro's node (for its
// line), args are its evaluated arguments.
type macroFunc func(g *gen, sc *scope, call *node, args []value) (value, error)

func strValue(s string) value  { return value{kind: stringValue, s: s} }
func listOf(l []string) value  { return value{kind: listValue, list: l} }
func funcOf(f macroFunc) value { return value{kind: funcValue, fn: f} }
func (v value) String() string { return v.stringify() }
func (v value) isString() bool { return v.kind == stringValue }
func (v value) isList() bool   { return v.kind == listValue }
func (v value) describeKind() string {
	return [...]string{"nothing", "a string", "a list", "a macro"}[v.kind]
}

func (v value) stringify() string {
	switch v.kind {
	case stringValue:
		return v.s
	case listValue:
		return strings.Join(v.list, ", ")
	}
	return ""
}

func (v value) size() int {
	n := len(v.s)
	for _, s := range v.list {
		n += len(s) + 2
	}
	return n
}

// scope maps names to values; lookups fall back to the enclosing scope.
type scope struct {
	vars   map[string]value
	parent *scope
	fn     *Func // the function being iterated over, if any
	// wrapper is set on the scope of a function of {{fn}}/{{fnall}}, whose
	// body is a C wrapper ({{vardecl}} declares its variables).
	wrapper bool
}

func (s *scope) lookup(name string) (value, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v, true
		}
	}
	if f, ok := builtins[name]; ok {
		return funcOf(f), true
	}
	return value{}, false
}

// function returns the innermost function being iterated over.
func (s *scope) function() *Func {
	for ; s != nil; s = s.parent {
		if s.fn != nil {
			return s.fn
		}
	}
	return nil
}

func (g *gen) errorf(n *node, sc *scope, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if f := sc.function(); f != nil {
		msg += " (while expanding " + f.Name + ")"
	}
	return &SyntaxError{g.file, n.line, msg}
}

func (g *gen) write(n *node, sc *scope, s string) error {
	if g.out.Len()+len(s) > maxOutput {
		return g.errorf(n, sc, "output exceeds %d bytes", maxOutput)
	}
	g.out.WriteString(s)
	return nil
}

// evaluate runs a node and writes its value.
func (g *gen) evaluate(n *node, sc *scope) error {
	if g.steps++; g.steps > maxSteps {
		return g.errorf(n, sc, "template expansion exceeds %d steps", maxSteps)
	}
	if !n.isMacro {
		return g.write(n, sc, n.text)
	}
	v, err := g.exec(n, sc)
	if err != nil {
		return err
	}
	if v.kind == stringValue || v.kind == listValue {
		return g.write(n, sc, v.stringify())
	}
	return nil
}

// exec runs a macro node and returns its value. Body macros write their
// output directly and return nothing.
func (g *gen) exec(n *node, sc *scope) (value, error) {
	if _, ok := bodyMacros[n.name]; ok && !n.index {
		g.depth++
		defer func() { g.depth-- }()
		if g.depth > maxDepth {
			return value{}, g.errorf(n, sc, "body macros nested more than %d deep", maxDepth)
		}
		return value{}, g.bodyMacro(n, sc)
	}
	name := n.name
	if n.index {
		name = "args"
	}
	v, ok := sc.lookup(name)
	if !ok {
		if n.index {
			return value{}, g.errorf(n, sc, "{{%s}} names a function argument but is used outside fn, fnall, foreachfn and forallfn", n.name)
		}
		return value{}, g.errorf(n, sc, "unknown macro '%s'", n.name)
	}
	var args []value
	if n.index {
		if len(n.args) > 0 {
			return value{}, g.errorf(n, sc, "{{%s}} takes no arguments", n.name)
		}
		args = []value{strValue(n.name)}
	} else {
		for _, a := range n.args {
			if a.macro == nil {
				args = append(args, strValue(a.word))
				continue
			}
			av, err := g.exec(a.macro, sc)
			if err != nil {
				return value{}, err
			}
			args = append(args, av)
		}
	}
	switch v.kind {
	case funcValue:
		r, err := v.fn(g, sc, n, args)
		if err == nil && r.size() > maxValueBytes {
			err = g.errorf(n, sc, "value of '%s' exceeds %d bytes", n.name, maxValueBytes)
		}
		return r, err
	case listValue:
		return g.indexList(n, sc, name, v.list, args)
	default:
		if len(args) > 0 {
			return value{}, g.errorf(n, sc, "'%s' is %s and takes no arguments", n.name, v.describeKind())
		}
		return v, nil
	}
}

// indexList implements {{LIST}} (the whole list) and {{LIST N}} (one
// element; negative N counts from the end, as in Python).
func (g *gen) indexList(n *node, sc *scope, name string, list []string, args []value) (value, error) {
	if len(args) == 0 {
		return listOf(list), nil
	}
	if len(args) != 1 {
		return value{}, g.errorf(n, sc, "'%s' takes at most one argument, an index", name)
	}
	if !args[0].isString() {
		return value{}, g.errorf(n, sc, "index into '%s' must be a number, not %s", name, args[0].describeKind())
	}
	idx := strings.ReplaceAll(strings.TrimSpace(args[0].s), "_", "")
	i, err := strconv.Atoi(idx)
	if err != nil || !indexName.MatchString(strings.TrimSpace(args[0].s)) {
		return value{}, g.errorf(n, sc, "invalid index '%s' into '%s'", args[0].s, name)
	}
	j := i
	if j < 0 {
		j += len(list)
	}
	if j < 0 || j >= len(list) {
		return value{}, g.errorf(n, sc, "index %d out of range for '%s' (%d elements)", i, name, len(list))
	}
	return strValue(list[j]), nil
}

// functionNames flattens the arguments of a body macro after its iterator
// variable into function names.
func (g *gen) functionNames(n *node, sc *scope, args []value) ([]string, error) {
	var names []string
	for _, a := range args {
		switch a.kind {
		case stringValue:
			names = append(names, a.s)
		case listValue:
			names = append(names, a.list...)
		case noValue:
		default:
			return nil, g.errorf(n, sc, "{{%s}} expects function names, not %s", n.name, a.describeKind())
		}
	}
	return names, nil
}

// bodyMacro runs fn, fnall, foreachfn and forallfn.
func (g *gen) bodyMacro(n *node, sc *scope) error {
	var args []value
	for _, a := range n.args {
		if a.macro == nil {
			args = append(args, strValue(a.word))
			continue
		}
		v, err := g.exec(a.macro, sc)
		if err != nil {
			return err
		}
		args = append(args, v)
	}
	if len(args) == 0 || !args[0].isString() || args[0].s == "" {
		return g.errorf(n, sc, "{{%s}} needs an iterator variable name, then function names", n.name)
	}
	iter := args[0].s
	names, err := g.functionNames(n, sc, args[1:])
	if err != nil {
		return err
	}
	var list []string
	switch n.name {
	case "fnall", "forallfn":
		except := map[string]bool{}
		for _, name := range names {
			except[strings.TrimSuffix(name, "?")] = true
		}
		for _, name := range g.sorted {
			if !except[name] {
				list = append(list, name)
			}
		}
	default:
		for _, name := range names {
			optional := strings.HasSuffix(name, "?")
			name = strings.TrimSuffix(name, "?")
			if _, ok := g.funcs[name]; !ok {
				if optional || g.opts.SkipUnknown {
					continue
				}
				return g.errorf(n, sc, "%s is not an MPI function declared in mpi.h", name)
			}
			list = append(list, name)
		}
	}
	wrapper := n.name == "fn" || n.name == "fnall"
	for _, name := range list {
		f := g.funcs[name]
		fs := g.functionScope(sc, iter, f)
		if wrapper {
			if err := g.writeWrapper(n, fs, f); err != nil {
				return err
			}
			continue
		}
		for _, child := range n.body {
			if err := g.evaluate(child, fs); err != nil {
				return err
			}
		}
	}
	return nil
}

// functionScope makes the scope a body macro's children see for f.
func (g *gen) functionScope(parent *scope, iter string, f *Func) *scope {
	hn := g.opts.HeaderNames
	args := f.ArgNames(hn)
	formals := f.Formals(hn)
	types := make([]string, 0, len(f.Params)+1)
	for _, p := range f.Params {
		types = append(types, p.CompactType())
	}
	if f.Variadic {
		types = append(types, "...")
	}
	vars := map[string]value{
		"ret_type":      strValue(f.Ret),
		"retType":       strValue(f.Ret),
		"args":          listOf(args),
		"nargs":         strValue(strconv.Itoa(len(args))),
		"types":         listOf(types),
		"formals":       listOf(formals),
		"argList":       strValue("(" + strings.Join(args, ", ") + ")"),
		"argTypeList":   strValue("(" + strings.Join(formals, ", ") + ")"),
		"get_arg":       funcOf(macroGetArg),
		"apply_to_type": funcOf(macroApplyToType),
		"applyToType":   funcOf(macroApplyToType),
	}
	// The iterator variable is set first in wrap.py and may be shadowed by
	// the per-function names; keep that precedence.
	if _, taken := vars[iter]; !taken {
		vars[iter] = strValue(f.Name)
	}
	return &scope{vars: vars, parent: parent, fn: f}
}

// pmpiCall is the statement {{callfn}} expands to (without -f's MPI_Init
// special case).
func (g *gen) pmpiCall(f *Func) string {
	call := returnVal + " = P" + f.Name + "(" + strings.Join(f.ArgNames(g.opts.HeaderNames), ", ") + ");"
	if g.opts.NoDeprecationWarnings {
		return "WRAP_MPI_CALL_PREFIX\n" + call + "\nWRAP_MPI_CALL_POSTFIX"
	}
	return call
}

// writeWrapper writes the C wrapper (and with -f the Fortran bindings) for
// one function of {{fn}}/{{fnall}}:
//
//	/* ================== C Wrappers for MPI_X ================== */
//	_EXTERN_C_ int PMPI_X(formals);
//	_EXTERN_C_ int MPI_X(formals) {
//	    int _wrap_py_return_val = 0;
//	<body>
//	    return _wrap_py_return_val;
//	}
//
// A function without parameters is written "(void)" where wrap.py writes
// "()", which C compilers flag as an old-style declaration.
func (g *gen) writeWrapper(n *node, fs *scope, f *Func) error {
	hn := g.opts.HeaderNames
	fs.wrapper = true
	fs.vars["ret_val"] = strValue(returnVal)
	fs.vars["returnVal"] = strValue(returnVal)
	fs.vars["callfn"] = strValue(g.pmpiCall(f))
	var pre strings.Builder
	delegated := g.opts.Fortran && fortranDelegated(f)
	if delegated {
		fs.vars["callfn"] = strValue(g.fortranCallfn(f))
		pre.WriteString(g.fortranDelegatePre(f))
	}
	pre.WriteString("/* ================== C Wrappers for " + f.Name + " ================== */\n")
	pre.WriteString("_EXTERN_C_ " + f.Prototype("P"+f.Name, hn) + ";\n")
	pre.WriteString("_EXTERN_C_ " + f.Prototype(f.Name, hn) + " { \n")
	pre.WriteString("    " + f.Ret + " " + returnVal + " = 0;\n")
	if delegated {
		pre.WriteString(g.fortranPrologue(f))
	}
	if g.opts.Guards {
		call := "P" + f.Name + "(" + strings.Join(f.ArgNames(hn), ", ") + ")"
		if g.opts.NoDeprecationWarnings {
			pre.WriteString("    if (in_wrapper) {\nWRAP_MPI_CALL_PREFIX\n        " + returnVal + " = " + call +
				";\nWRAP_MPI_CALL_POSTFIX\n        return " + returnVal + ";\n    }\n")
		} else {
			pre.WriteString("    if (in_wrapper) return " + call + ";\n")
		}
		pre.WriteString("    in_wrapper = 1;\n")
	}
	if err := g.write(n, fs, pre.String()); err != nil {
		return err
	}
	for _, child := range n.body {
		if err := g.evaluate(child, fs); err != nil {
			return err
		}
	}
	var post strings.Builder
	if b := g.out.Bytes(); len(b) > 0 && b[len(b)-1] != '\n' {
		// Unlike wrap.py, end the body's last line before the epilogue.
		post.WriteByte('\n')
	}
	if g.opts.Guards {
		post.WriteString("    in_wrapper = 0;\n")
	}
	post.WriteString("    return " + returnVal + ";\n}\n\n")
	if g.opts.Fortran {
		post.WriteString(g.fortranWrappers(f))
	}
	return g.write(n, fs, post.String())
}
