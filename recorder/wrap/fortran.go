package wrap

import (
	"fmt"
	"strings"
)

// Fortran bindings (-f), a first version.
//
// For every function wrapped by {{fn}}/{{fnall}}, -f also writes a static
// "MPI_X_fortran_wrapper" that converts the Fortran arguments (everything by
// reference, handles as MPI_Fint) to C, calls the C wrapper MPI_X (so the
// template's code runs for Fortran callers too) and converts the results
// back, plus four entry points for the usual Fortran name manglings:
// MPI_X (upper case), mpi_x, mpi_x_ and mpi_x__. As in wrap.py:
//
//   - handles are converted with MPI_<Type>_f2c/_c2f (MPI_Type_ for
//     MPI_Datatype), statuses with MPI_Status_f2c/_c2f; ierr receives the
//     C return value; MPI_Wtime/MPI_Wtick (and MPI_Aint_add/diff) return
//     their value instead;
//   - arrays of handles whose length is given by another argument
//     (Waitall, Testsome, Startall, Type_create_struct, ...) are converted
//     element by element through temporary arrays;
//   - Fortran MPI_INIT takes no argc/argv: its wrapper calls the C wrapper
//     MPI_Init, whose {{callfn}} then calls the Fortran PMPI_INIT binding so
//     the Fortran runtime initialises (found through weak symbols in a
//     shared library, or the -i binding in a static one); MPI_INIT_THREAD
//     likewise.
//
// Beyond wrap.py: MPI_F_STATUS_IGNORE/MPI_F_STATUSES_IGNORE are honoured,
// status arrays are strided by the Fortran status size, CHARACTER
// arguments are converted with their hidden length arguments, Waitany/
// Testany/Waitsome/Testsome indices are made 1-based, MPI_Message and
// MPI_Session are handles, and the MPI-4 "_c" large-count variants, which
// have no mpif.h binding, get no Fortran wrapper.
//
// Known limits (to be hardened): MPI_BOTTOM/MPI_IN_PLACE buffer sentinels
// are passed through unchanged; handle arrays whose length is not another
// argument (MPI_Alltoallw's datatype arrays, whose length is the group
// size, and the neighbourhood variants) are passed unconverted, which is
// only correct where handles are integers (MPICH); LOGICAL is assumed to be
// C int; hidden CHARACTER lengths are int.

const fortranFrontMatter = `/* ---- Fortran bindings support (-f) ---- */
#if defined(MPI_STATUS_SIZE) && MPI_STATUS_SIZE > 0
#define WRAP_F_STATUS_SIZE MPI_STATUS_SIZE
#else
#define WRAP_F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
#endif

#if defined(__GNUC__)
#define WRAP_UNUSED __attribute__((unused))
#else
#define WRAP_UNUSED
#endif

/* A Fortran CHARACTER argument (blank padded, not terminated) as a new C
 * string of at least min_size bytes, leading and trailing blanks removed. */
static WRAP_UNUSED char *wrap_f2c_string(const char *fstr, int len, int min_size) {
    char *cstr;
    int size;
    while (len > 0 && fstr[len - 1] == ' ') len--;
    while (len > 0 && fstr[0] == ' ') { fstr++; len--; }
    size = len + 1 > min_size ? len + 1 : min_size;
    cstr = (char *)malloc((size_t)size);
    if (cstr == NULL) return NULL;
    memcpy(cstr, fstr, (size_t)len);
    cstr[len] = '\0';
    return cstr;
}

/* A C string back into a blank-padded Fortran CHARACTER argument. */
static WRAP_UNUSED void wrap_c2f_string(const char *cstr, char *fstr, int len) {
    int n;
    if (cstr == NULL) return;
    n = (int)strlen(cstr);
    if (n > len) n = len;
    memcpy(fstr, cstr, (size_t)n);
    if (len > n) memset(fstr + n, ' ', (size_t)(len - n));
}

/* Room for strings an MPI call writes (the largest MPI_MAX_* constant). */
#define WRAP_F_STRING_MIN 8193

#if defined(PIC) || defined(__PIC__)
/* In a shared library, find the Fortran PMPI_Init binding the application
 * links with through weak symbols (see the MPI_Init wrapper). */
#pragma weak pmpi_init
#pragma weak PMPI_INIT
#pragma weak pmpi_init_
#pragma weak pmpi_init__
#pragma weak pmpi_init_thread
#pragma weak PMPI_INIT_THREAD
#pragma weak pmpi_init_thread_
#pragma weak pmpi_init_thread__
#endif /* PIC */

_EXTERN_C_ void pmpi_init(MPI_Fint *ierr);
_EXTERN_C_ void PMPI_INIT(MPI_Fint *ierr);
_EXTERN_C_ void pmpi_init_(MPI_Fint *ierr);
_EXTERN_C_ void pmpi_init__(MPI_Fint *ierr);
_EXTERN_C_ void pmpi_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);
_EXTERN_C_ void PMPI_INIT_THREAD(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);
_EXTERN_C_ void pmpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);
_EXTERN_C_ void pmpi_init_thread__(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);

`

// handleConversions maps MPI handle types to the prefix of their
// _f2c/_c2f conversion functions.
var handleConversions = map[string]string{
	"MPI_Comm":       "MPI_Comm",
	"MPI_Datatype":   "MPI_Type",
	"MPI_Errhandler": "MPI_Errhandler",
	"MPI_File":       "MPI_File",
	"MPI_Group":      "MPI_Group",
	"MPI_Info":       "MPI_Info",
	"MPI_Message":    "MPI_Message",
	"MPI_Op":         "MPI_Op",
	"MPI_Request":    "MPI_Request",
	"MPI_Session":    "MPI_Session",
	"MPI_Win":        "MPI_Win",
}

// handleArrayCounts gives, for functions with arrays of handles or
// statuses, the parameter index holding each array's length (wrap.py's
// table, with MPI_Type_get_contents corrected: its datatype array is
// max_datatypes long).
var handleArrayCounts = map[string]map[int]int{
	"MPI_Startall":           {1: 0},
	"MPI_Testall":            {1: 0, 3: 0},
	"MPI_Testany":            {1: 0},
	"MPI_Testsome":           {1: 0, 4: 0},
	"MPI_Type_create_struct": {3: 0},
	"MPI_Type_get_contents":  {6: 3},
	"MPI_Type_struct":        {3: 0},
	"MPI_Waitall":            {1: 0, 2: 0},
	"MPI_Waitany":            {1: 0},
	"MPI_Waitsome":           {1: 0, 4: 0},
}

// indexOutputs are the 0-based indices MPI returns that Fortran expects
// 1-based: param index -> the index of the count of valid entries (-1 for
// a single index).
var indexOutputs = map[string]map[int]int{
	"MPI_Waitany":  {2: -1},
	"MPI_Testany":  {2: -1},
	"MPI_Waitsome": {3: 2},
	"MPI_Testsome": {3: 2},
}

// fortranSkipped reports functions that get no Fortran binding.
func fortranSkipped(f *Func) bool {
	return strings.HasSuffix(f.Name, "_c")
}

// fortranCall accumulates the pieces of one Fortran-to-C delegation.
type fortranCall struct {
	formals, hidden, names []string
	temps, copies, actuals []string
	writebacks, frees      []string
	needLoop               bool
}

// castType is the C type to cast an MPI_Fint* (or void*) argument to when
// passing it for parameter p: arrays decay to pointers.
func castType(p Param) string {
	t := p.Type
	if p.Array {
		dims := p.Dims
		first := strings.Index(dims, "]")
		rest := dims[first+1:]
		base := strings.TrimSpace(strings.TrimSuffix(t, dims))
		if rest == "" {
			return joinDecl(base, "") + " *"
		}
		return base + " (*)" + rest
	}
	return t
}

func (c *fortranCall) param(g *gen, f *Func, i int) {
	p := f.Params[i]
	nm := f.ArgName(i, g.opts.HeaderNames)
	temp := "temp_" + nm
	base := p.Base
	counts := handleArrayCounts[f.Name]
	countIdx, hasCount := counts[i]
	count := ""
	if hasCount {
		count = "*" + f.ArgName(countIdx, g.opts.HeaderNames)
	}
	conv, isHandle := handleConversions[base]
	c.names = append(c.names, nm)
	switch {
	case p.FuncPtr || strings.HasSuffix(base, "_function") || strings.HasSuffix(base, "_function_c"):
		// Callbacks are passed as they are.
		c.formals = append(c.formals, p.Formal(nm))
		c.actuals = append(c.actuals, nm)

	case base == "char" && p.Pointers == 1 && !p.Array:
		// A CHARACTER argument with its hidden length.
		c.formals = append(c.formals, "char *"+nm)
		c.hidden = append(c.hidden, "int "+nm+"_len")
		c.temps = append(c.temps, "char *"+temp+" = NULL;")
		minSize := "0"
		if !p.Const {
			minSize = "WRAP_F_STRING_MIN"
		}
		c.copies = append(c.copies, fmt.Sprintf("%s = wrap_f2c_string(%s, %s_len, %s);", temp, nm, nm, minSize))
		c.actuals = append(c.actuals, temp)
		if !p.Const {
			c.writebacks = append(c.writebacks, fmt.Sprintf("wrap_c2f_string(%s, %s, %s_len);", temp, nm, nm))
		}
		c.frees = append(c.frees, "free("+temp+");")

	case base == "MPI_Status" && p.IsPointerLike():
		c.formals = append(c.formals, "MPI_Fint *"+nm)
		if hasCount || p.Array {
			// An array of statuses, one Fortran status every
			// WRAP_F_STATUS_SIZE integers.
			n := count
			if n == "" {
				n = "1"
			}
			c.needLoop = true
			c.temps = append(c.temps, "MPI_Status *"+temp+" = NULL;")
			c.copies = append(c.copies, fmt.Sprintf("%s = (MPI_Status *)malloc(sizeof(MPI_Status) * (%s > 0 ? %s : 1));", temp, n, n))
			c.actuals = append(c.actuals, fmt.Sprintf("(%s == MPI_F_STATUSES_IGNORE) ? MPI_STATUSES_IGNORE : %s", nm, temp))
			c.writebacks = append(c.writebacks,
				fmt.Sprintf("if (%s != MPI_F_STATUSES_IGNORE)", nm),
				fmt.Sprintf("    for (wrap_i = 0; wrap_i < %s; wrap_i++) MPI_Status_c2f(&%s[wrap_i], &%s[wrap_i * WRAP_F_STATUS_SIZE]);", n, temp, nm))
			c.frees = append(c.frees, "free("+temp+");")
			break
		}
		c.temps = append(c.temps, "MPI_Status "+temp+";")
		c.copies = append(c.copies, fmt.Sprintf("if (%s != MPI_F_STATUS_IGNORE) MPI_Status_f2c(%s, &%s);", nm, nm, temp))
		c.actuals = append(c.actuals, fmt.Sprintf("(%s == MPI_F_STATUS_IGNORE) ? MPI_STATUS_IGNORE : &%s", nm, temp))
		if !p.Const {
			c.writebacks = append(c.writebacks, fmt.Sprintf("if (%s != MPI_F_STATUS_IGNORE) MPI_Status_c2f(&%s, %s);", nm, temp, nm))
		}

	case isHandle && !p.IsPointerLike():
		c.formals = append(c.formals, "MPI_Fint *"+nm)
		c.actuals = append(c.actuals, fmt.Sprintf("%s_f2c(*%s)", conv, nm))

	case isHandle && hasCount:
		c.formals = append(c.formals, "MPI_Fint *"+nm)
		c.needLoop = true
		c.temps = append(c.temps, base+" *"+temp+" = NULL;")
		c.copies = append(c.copies,
			fmt.Sprintf("%s = (%s *)malloc(sizeof(%s) * (%s > 0 ? %s : 1));", temp, base, base, count, count),
			fmt.Sprintf("for (wrap_i = 0; wrap_i < %s; wrap_i++) %s[wrap_i] = %s_f2c(%s[wrap_i]);", count, temp, conv, nm))
		c.actuals = append(c.actuals, temp)
		if !p.Const {
			c.writebacks = append(c.writebacks,
				fmt.Sprintf("for (wrap_i = 0; wrap_i < %s; wrap_i++) %s[wrap_i] = %s_c2f(%s[wrap_i]);", count, nm, conv, temp))
		}
		c.frees = append(c.frees, "free("+temp+");")

	case isHandle && p.Array:
		// Length unknown here: passed unconverted (see the package notes).
		c.formals = append(c.formals, "MPI_Fint *"+nm)
		c.actuals = append(c.actuals, fmt.Sprintf("(%s)(void *)%s /* unconverted handle array */", castType(p), nm))

	case isHandle:
		// A pointer to one handle: in, out or in-out.
		c.formals = append(c.formals, "MPI_Fint *"+nm)
		c.temps = append(c.temps, base+" "+temp+";")
		c.copies = append(c.copies, fmt.Sprintf("%s = %s_f2c(*%s);", temp, conv, nm))
		c.actuals = append(c.actuals, "&"+temp)
		if !p.Const && p.Pointers > 0 {
			c.writebacks = append(c.writebacks, fmt.Sprintf("*%s = %s_c2f(%s);", nm, conv, temp))
		}

	case base == "void" || (base == "char" && p.IsPointerLike()):
		c.formals = append(c.formals, "void *"+nm)
		c.actuals = append(c.actuals, fmt.Sprintf("(%s)%s", castType(p), nm))

	case base == "MPI_Aint" || base == "MPI_Offset" || base == "MPI_Count":
		c.formals = append(c.formals, base+" *"+nm)
		if p.IsPointerLike() {
			c.actuals = append(c.actuals, fmt.Sprintf("(%s)%s", castType(p), nm))
		} else {
			c.actuals = append(c.actuals, "*"+nm)
		}

	default:
		// int and other plain C types: INTEGER in Fortran.
		c.formals = append(c.formals, "MPI_Fint *"+nm)
		if p.IsPointerLike() {
			c.actuals = append(c.actuals, fmt.Sprintf("(%s)%s", castType(p), nm))
		} else {
			c.actuals = append(c.actuals, "*"+nm)
		}
	}
	if outs, ok := indexOutputs[f.Name]; ok {
		if cnt, ok := outs[i]; ok {
			if cnt < 0 {
				c.writebacks = append(c.writebacks, fmt.Sprintf("if (*%s != MPI_UNDEFINED && *%s >= 0) (*%s)++;", nm, nm, nm))
			} else {
				on := f.ArgName(cnt, g.opts.HeaderNames)
				c.needLoop = true
				c.writebacks = append(c.writebacks,
					fmt.Sprintf("if (*%s != MPI_UNDEFINED)", on),
					fmt.Sprintf("    for (wrap_i = 0; wrap_i < *%s; wrap_i++) %s[wrap_i]++;", on, nm))
			}
		}
	}
}

// fortranWrappers writes the Fortran bindings of f.
func (g *gen) fortranWrappers(f *Func) string {
	if fortranSkipped(f) {
		return ""
	}
	var b strings.Builder
	b.WriteString("/* =============== Fortran Wrappers for " + f.Name + " =============== */\n")
	returnsErr := f.Ret == "int"
	delegate := f.Name + "_fortran_wrapper"
	var c fortranCall
	var fret string
	switch f.Name {
	case "MPI_Init":
		c.formals, c.names = nil, nil
		c.temps = []string{"int argc = 0;", "char **argv = NULL;"}
		c.actuals = []string{"&argc", "&argv"}
	case "MPI_Init_thread":
		c.formals = []string{"MPI_Fint *required", "MPI_Fint *provided"}
		c.names = []string{"required", "provided"}
		c.temps = []string{"int argc = 0;", "char **argv = NULL;", "int temp_provided = 0;"}
		c.actuals = []string{"&argc", "&argv", "*required", "&temp_provided"}
		c.writebacks = []string{"*provided = temp_provided;"}
	default:
		for i := range f.Params {
			c.param(g, f, i)
		}
	}
	formals := append([]string{}, c.formals...)
	names := append([]string{}, c.names...)
	if returnsErr {
		formals = append(formals, "MPI_Fint *ierr")
		names = append(names, "ierr")
		fret = "void"
	} else {
		fret = f.Ret
	}
	formals = append(formals, c.hidden...)
	for _, h := range c.hidden {
		names = append(names, strings.TrimPrefix(h, "int "))
	}
	formalList := strings.Join(formals, ", ")
	if formalList == "" {
		formalList = "void"
	}
	fmt.Fprintf(&b, "static %s %s(%s) { \n", fret, delegate, formalList)
	fmt.Fprintf(&b, "    %s %s = 0;\n", f.Ret, returnVal)
	if c.needLoop {
		b.WriteString("    int wrap_i;\n")
	}
	for _, s := range c.temps {
		b.WriteString("    " + s + "\n")
	}
	for _, s := range c.copies {
		b.WriteString("    " + s + "\n")
	}
	call := fmt.Sprintf("    %s = %s(%s);\n", returnVal, f.Name, strings.Join(c.actuals, ", "))
	if g.opts.NoDeprecationWarnings {
		call = "WRAP_MPI_CALL_PREFIX\n" + call + "WRAP_MPI_CALL_POSTFIX\n"
	}
	b.WriteString(call)
	for _, s := range c.writebacks {
		b.WriteString("    " + s + "\n")
	}
	for _, s := range c.frees {
		b.WriteString("    " + s + "\n")
	}
	if returnsErr {
		b.WriteString("    *ierr = (MPI_Fint)" + returnVal + ";\n")
	} else {
		b.WriteString("    return " + returnVal + ";\n")
	}
	b.WriteString("}\n\n")

	lower := strings.ToLower(f.Name)
	bindings := []string{strings.ToUpper(f.Name), lower, lower + "_", lower + "__"}
	for k, name := range bindings {
		fmt.Fprintf(&b, "_EXTERN_C_ %s %s(%s) { \n", fret, name, formalList)
		switch f.Name {
		case "MPI_Init":
			fmt.Fprintf(&b, "    fortran_init = %d;\n", k+1)
		case "MPI_Init_thread":
			fmt.Fprintf(&b, "    fortran_init_thread = %d;\n", k+1)
		}
		if returnsErr {
			fmt.Fprintf(&b, "    %s(%s);\n", delegate, strings.Join(names, ", "))
		} else {
			fmt.Fprintf(&b, "    return %s(%s);\n", delegate, strings.Join(names, ", "))
		}
		b.WriteString("}\n\n")
	}
	b.WriteString("/* ================= End Wrappers for " + f.Name + " ================= */\n\n\n")
	return b.String()
}

// fortranInitCallfn is {{callfn}} for MPI_Init and MPI_Init_thread under
// -f: when the application entered through a Fortran binding, initialise
// through the Fortran PMPI binding so the Fortran runtime is set up.
func (g *gen) fortranInitCallfn(f *Func) macroFunc {
	return func(g *gen, sc *scope, n *node, args []value) (value, error) {
		if len(args) != 0 {
			return value{}, g.errorf(n, sc, "'callfn' takes no arguments")
		}
		thread := f.Name == "MPI_Init_thread"
		flag, sig, fargs, upper := "fortran_init", "MPI_Fint *", "&wrap_ierr", "MPI_INIT"
		bindings := PMPIInitBindings
		static := g.opts.PMPIInit
		if thread {
			flag, sig, fargs, upper = "fortran_init_thread", "MPI_Fint *, MPI_Fint *, MPI_Fint *", "&wrap_required, &wrap_provided, &wrap_ierr", "MPI_INIT_THREAD"
			bindings = []string{"PMPI_INIT_THREAD", "pmpi_init_thread", "pmpi_init_thread_", "pmpi_init_thread__"}
			static = strings.Replace(strings.Replace(static, "mpi_init", "mpi_init_thread", 1), "MPI_INIT", "MPI_INIT_THREAD", 1)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "    if (%s > 0) {\n", flag)
		b.WriteString("        MPI_Fint wrap_ierr = 0;\n")
		fmt.Fprintf(&b, "        int wrap_binding = %s;\n", flag)
		b.WriteString("        (void)wrap_binding; /* unused in static builds */\n")
		if thread {
			fmt.Fprintf(&b, "        MPI_Fint wrap_required = (MPI_Fint)%s, wrap_provided = 0;\n", f.ArgName(2, g.opts.HeaderNames))
		}
		// While the Fortran binding runs, the flag is negative: an MPI
		// library whose Fortran layer calls back into the C MPI_Init
		// (MPICH) then goes straight to PMPI (see fortranInitPrologue).
		fmt.Fprintf(&b, "        %s = -1;\n", flag)
		b.WriteString("#if (defined(PIC) || defined(__PIC__)) && !defined(STATIC)\n")
		fmt.Fprintf(&b, "        void (*wrap_pmpi)(%s) = NULL;\n", sig)
		b.WriteString("        switch (wrap_binding) {\n")
		for k, name := range bindings {
			fmt.Fprintf(&b, "        case %d: wrap_pmpi = %s; break;\n", k+1, name)
		}
		b.WriteString("        }\n")
		fmt.Fprintf(&b, "        if (wrap_pmpi == NULL) wrap_pmpi = %s ? %s : %s ? %s : %s ? %s : %s;\n",
			bindings[0], bindings[0], bindings[1], bindings[1], bindings[2], bindings[2], bindings[3])
		b.WriteString("        if (wrap_pmpi == NULL) {\n")
		fmt.Fprintf(&b, "            fprintf(stderr, \"ERROR: Couldn't find the Fortran P%s binding. Link against a static wrapper library instead.\\n\");\n", upper)
		b.WriteString("            exit(1);\n")
		b.WriteString("        }\n")
		fmt.Fprintf(&b, "        wrap_pmpi(%s);\n", fargs)
		b.WriteString("#else /* !PIC */\n")
		fmt.Fprintf(&b, "        %s(%s);\n", static, fargs)
		b.WriteString("#endif /* !PIC */\n")
		fmt.Fprintf(&b, "        %s = 0;\n", flag)
		fmt.Fprintf(&b, "        %s = (int)wrap_ierr;\n", returnVal)
		if thread {
			fmt.Fprintf(&b, "        *%s = (int)wrap_provided;\n", f.ArgName(3, g.opts.HeaderNames))
		}
		b.WriteString("    } else {\n")
		b.WriteString("        " + strings.ReplaceAll(g.pmpiCall(f), "\n", "\n        ") + "\n")
		b.WriteString("    }\n")
		return value{}, g.write(n, sc, b.String())
	}
}

// fortranInitPrologue starts the C MPI_Init/MPI_Init_thread wrapper under
// -f: when the MPI library's own Fortran PMPI_INIT, called from the wrapper
// on behalf of a Fortran program, calls back into the C MPI_Init (as
// MPICH's does), go straight to PMPI instead of running the wrapper a
// second time (wrap.py recurses until the stack overflows).
func (g *gen) fortranInitPrologue(f *Func) string {
	flag := "fortran_init"
	if f.Name == "MPI_Init_thread" {
		flag = "fortran_init_thread"
	}
	call := "return P" + f.Name + "(" + strings.Join(f.ArgNames(g.opts.HeaderNames), ", ") + ");"
	if g.opts.NoDeprecationWarnings {
		call = returnVal + " = P" + f.Name + "(" + strings.Join(f.ArgNames(g.opts.HeaderNames), ", ") + ");\n" +
			"        return " + returnVal + ";"
	}
	return "    if (" + flag + " < 0) {\n        /* re-entered from the Fortran PMPI binding */\n        " + call + "\n    }\n"
}
