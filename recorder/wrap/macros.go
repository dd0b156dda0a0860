package wrap

import (
	"regexp"
	"strconv"
	"strings"
)

// builtins are the macros available everywhere. The per-function names
// (args, types, formals, ret_type, callfn, ...) are set by functionScope
// and writeWrapper; fileno by Generate.
var builtins map[string]macroFunc

func init() {
	builtins = map[string]macroFunc{
		"def":     macroDef,
		"list":    macroList,
		"zip":     macroZip,
		"filter":  macroFilter,
		"sub":     macroSub,
		"fn_num":  macroFnNum,
		"vardecl": macroVardecl,
	}
}

// macroDef is {{def NAME VALUE}}: binds NAME in the current scope (the
// function iteration inside a body macro, else the rest of the file).
// It prints nothing.
func macroDef(g *gen, sc *scope, n *node, args []value) (value, error) {
	if len(args) != 2 {
		return value{}, g.errorf(n, sc, "'def' takes exactly 2 arguments, a name and a value (got %d)", len(args))
	}
	if !args[0].isString() || args[0].s == "" {
		return value{}, g.errorf(n, sc, "the name given to 'def' must be a word, not %s", args[0].describeKind())
	}
	if args[1].kind == funcValue {
		return value{}, g.errorf(n, sc, "'def' cannot bind a macro")
	}
	sc.vars[args[0].s] = args[1]
	return value{}, nil
}

// macroList is {{list A B ...}}: a list of its arguments, with list
// arguments spliced in.
func macroList(g *gen, sc *scope, n *node, args []value) (value, error) {
	out := []string{}
	for _, a := range args {
		switch a.kind {
		case listValue:
			out = append(out, a.list...)
		case stringValue:
			out = append(out, a.s)
		case funcValue:
			return value{}, g.errorf(n, sc, "'list' cannot hold a macro")
		}
	}
	return listOf(out), nil
}

// macroZip is {{zip A B}}: pairs the elements of two lists into "a b"
// strings, stopping at the shorter list.
func macroZip(g *gen, sc *scope, n *node, args []value) (value, error) {
	if len(args) != 2 {
		return value{}, g.errorf(n, sc, "'zip' takes exactly 2 arguments (got %d)", len(args))
	}
	if !args[0].isList() || !args[1].isList() {
		return value{}, g.errorf(n, sc, "the arguments of 'zip' must be lists")
	}
	a, b := args[0].list, args[1].list
	out := make([]string, 0, min(len(a), len(b)))
	for i := 0; i < len(a) && i < len(b); i++ {
		out = append(out, a[i]+" "+b[i])
	}
	return listOf(out), nil
}

// macroFilter is {{filter RE LIST}}: the elements of LIST in which the
// regular expression RE matches somewhere (Python's re.search).
func macroFilter(g *gen, sc *scope, n *node, args []value) (value, error) {
	if len(args) != 2 {
		return value{}, g.errorf(n, sc, "'filter' takes exactly 2 arguments, a regular expression and a list (got %d)", len(args))
	}
	if !args[0].isString() {
		return value{}, g.errorf(n, sc, "the regular expression of 'filter' must be a string, not %s", args[0].describeKind())
	}
	if !args[1].isList() {
		return value{}, g.errorf(n, sc, "the second argument of 'filter' must be a list, not %s", args[1].describeKind())
	}
	re, err := g.regexp(n, sc, args[0].s)
	if err != nil {
		return value{}, err
	}
	out := []string{}
	for _, s := range args[1].list {
		if re.MatchString(s) {
			out = append(out, s)
		}
	}
	return listOf(out), nil
}

// macroSub has two forms:
//
//	{{sub STRING RE REPL}}       the value of STRING (a string or a list,
//	                             element-wise) with every match of RE
//	                             replaced by REPL (wrap.py's code)
//	{{sub NEW OLD RE REPL}}      binds NEW to that substitution applied to
//	                             the value named OLD, printing nothing
//	                             (wrap.py's README). OLD is looked up as a
//	                             name; if no such name exists it is used as
//	                             the text itself.
//
// RE is a Python regular expression and REPL a Python replacement string
// (\1, \g<name>); see pyRegexp.
func macroSub(g *gen, sc *scope, n *node, args []value) (value, error) {
	var target value
	var newName string
	switch len(args) {
	case 3:
		target = args[0]
	case 4:
		if !args[0].isString() || args[0].s == "" {
			return value{}, g.errorf(n, sc, "the name given to 'sub' must be a word, not %s", args[0].describeKind())
		}
		newName = args[0].s
		target = args[1]
		if target.isString() && (len(n.args) < 2 || n.args[1].macro == nil) {
			if v, ok := sc.lookup(target.s); ok && v.kind != funcValue {
				target = v
			}
		}
		args = args[1:]
	default:
		return value{}, g.errorf(n, sc, "'sub' takes 3 arguments (STRING RE REPL) or 4 (NEW OLD RE REPL), got %d", len(args))
	}
	if !args[1].isString() {
		return value{}, g.errorf(n, sc, "the regular expression of 'sub' must be a string, not %s", args[1].describeKind())
	}
	if !args[2].isString() {
		return value{}, g.errorf(n, sc, "the replacement of 'sub' must be a string, not %s", args[2].describeKind())
	}
	re, err := g.regexp(n, sc, args[1].s)
	if err != nil {
		return value{}, err
	}
	parts, err := parsePyRepl(args[2].s, re)
	if err != nil {
		return value{}, g.errorf(n, sc, "%v", err)
	}
	var result value
	switch target.kind {
	case stringValue:
		result = strValue(pySub(re, parts, target.s))
	case listValue:
		out := make([]string, len(target.list))
		for i, s := range target.list {
			out[i] = pySub(re, parts, s)
		}
		result = listOf(out)
	default:
		return value{}, g.errorf(n, sc, "'sub' cannot substitute in %s", target.describeKind())
	}
	if newName != "" {
		if result.size() > maxValueBytes {
			return value{}, g.errorf(n, sc, "value of '%s' exceeds %d bytes", newName, maxValueBytes)
		}
		sc.vars[newName] = result
		return value{}, nil
	}
	return result, nil
}

// macroFnNum is {{fn_num}}: 0 the first time it is used, then 1, 2, ...
// across all input files.
func macroFnNum(g *gen, sc *scope, n *node, args []value) (value, error) {
	if len(args) != 0 {
		return value{}, g.errorf(n, sc, "'fn_num' takes no arguments")
	}
	v := g.fnNum
	g.fnNum++
	return strValue(strconv.Itoa(v)), nil
}

// macroGetArg is {{get_arg N}} (and, without N, the list of argument
// names).
func macroGetArg(g *gen, sc *scope, n *node, args []value) (value, error) {
	f := sc.function()
	v, _ := sc.lookup("args")
	list := f.ArgNames(g.opts.HeaderNames)
	if v.isList() {
		list = v.list
	}
	return g.indexList(n, sc, "get_arg", list, args)
}

// macroApplyToType is {{apply_to_type TYPE CALLABLE}} (alias applyToType):
// writes "CALLABLE(arg);" on its own line for every parameter whose type
// is TYPE (compared with spacing normalised, so "MPI_Comm *" and
// "MPI_Comm*" are the same type).
func macroApplyToType(g *gen, sc *scope, n *node, args []value) (value, error) {
	if len(args) != 2 || !args[0].isString() || !args[1].isString() {
		return value{}, g.errorf(n, sc, "'%s' takes 2 arguments, a type and a macro or function name", n.name)
	}
	f := sc.function()
	want := normalizeType(args[0].s)
	var b strings.Builder
	for i, p := range f.Params {
		if normalizeType(p.Type) == want {
			b.WriteString(args[1].s + "(" + f.ArgName(i, g.opts.HeaderNames) + ");\n")
		}
	}
	return value{}, g.write(n, sc, b.String())
}

// regexp compiles (and caches) a Python regular expression.
func (g *gen) regexp(n *node, sc *scope, pat string) (*regexp.Regexp, error) {
	if re, ok := g.regexps[pat]; ok {
		return re, nil
	}
	re, err := pyRegexp(pat)
	if err != nil {
		return nil, g.errorf(n, sc, "%v", err)
	}
	g.regexps[pat] = re
	return re, nil
}

// vardeclPrefix decorates the names {{vardecl}} declares. Parameters are
// arg_N or mpi.h's names, the generator's own identifiers start with
// _wrap_py_ or wrap_: none can start with this.
const vardeclPrefix = "_wrap_var_"

var (
	vardeclName = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)((?:\[[0-9]*\])*)$`)
	vardeclType = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_]*\s+)*[A-Za-z_][A-Za-z0-9_]*(?:\s*\*(?:\s*const)?)*\s*$`)
)

// macroVardecl is {{vardecl TYPE NAME...}}, which wrap.py's README sketches
// but wrap.py never implemented: inside the body of {{fn}}/{{fnall}} it
// declares local variables of the wrapper being generated, at the place of
// the macro ("int _wrap_var_n; int _wrap_var_m[4];"), and binds each NAME to
// the decorated identifier for the rest of that wrapper's body, so that
// {{NAME}} refers to it. TYPE is one word, quoted when it has spaces or
// pointers ('unsigned long', 'MPI_Request *'); a NAME may carry array
// dimensions (buf[16]). The decorated names cannot collide with the
// wrapper's parameters, its return variable or the generator's own
// variables; declaring a name twice in one wrapper, shadowing a macro, or
// using vardecl outside a wrapper body is an error.
func macroVardecl(g *gen, sc *scope, n *node, args []value) (value, error) {
	if len(args) < 2 {
		return value{}, g.errorf(n, sc, "'vardecl' takes a type and at least one variable name (got %d arguments)", len(args))
	}
	var ws *scope
	for s := sc; s != nil; s = s.parent {
		if s.fn != nil {
			ws = s
			break
		}
	}
	if ws == nil || !ws.wrapper {
		return value{}, g.errorf(n, sc, "'vardecl' can only be used in the body of fn or fnall")
	}
	for _, a := range args {
		if !a.isString() {
			return value{}, g.errorf(n, sc, "the arguments of 'vardecl' must be words, not %s", a.describeKind())
		}
	}
	typ := strings.Join(strings.Fields(args[0].s), " ")
	if !vardeclType.MatchString(typ) {
		return value{}, g.errorf(n, sc, "'%s' is not a type 'vardecl' can declare (a type name, then any '*')", args[0].s)
	}
	var decls []string
	for _, a := range args[1:] {
		m := vardeclName.FindStringSubmatch(a.s)
		if m == nil {
			return value{}, g.errorf(n, sc, "'%s' is not a variable name 'vardecl' can declare", a.s)
		}
		name := m[1]
		_, isBuiltin := builtins[name]
		_, isBody := bodyMacros[name]
		_, isEnd := endTags[name]
		switch {
		case isBuiltin || isBody || isEnd || name == "vardecl":
			return value{}, g.errorf(n, sc, "'vardecl' cannot declare '%s': it is the name of a macro", name)
		case ws.vars[name].kind != noValue:
			return value{}, g.errorf(n, sc, "'vardecl' cannot declare '%s': the name is already defined in this wrapper", name)
		}
		ws.vars[name] = strValue(vardeclPrefix + name)
		decls = append(decls, joinDecl(typ, vardeclPrefix+name)+m[2]+";")
	}
	return strValue(strings.Join(decls, " ")), nil
}
