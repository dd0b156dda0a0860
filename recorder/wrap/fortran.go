package wrap

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Fortran bindings (-f).
//
// For every function wrapped by {{fn}}/{{fnall}} that has an mpif.h
// binding, -f writes a static "MPI_X_fortran_wrapper" that converts the
// Fortran arguments (all passed by reference, handles as MPI_Fint,
// CHARACTER arguments with hidden lengths after the others) to C, calls the
// C wrapper MPI_X (so the template's code runs for Fortran callers exactly
// as for C callers), converts the results back and sets ierr; and one entry
// point per name mangling (MPI_X, mpi_x, mpi_x_, mpi_x__; see
// [Options.FortranManglings]) that calls it. Since the entry points replace
// the MPI library's own Fortran bindings, a call is seen once whether the
// library's Fortran layer would have called the C MPI_ function (MPICH) or
// PMPI_ directly (Open MPI).
//
// Conversions, by parameter:
//
//   - handles (MPI_Comm, MPI_Datatype, ..., MPI_Message, MPI_Session):
//     MPI_<Type>_f2c on the way in, _c2f on the way out for non-const
//     pointers (in-out handles such as MPI_Mrecv's message become
//     MPI_MESSAGE_NULL in Fortran too);
//   - handle arrays, through temporary arrays: lengths come from another
//     argument (Waitall's count, ...), from the communicator
//     (MPI_Alltoallw's datatype arrays: the group size, or the remote group
//     size of an intercommunicator; none for the send types with
//     MPI_IN_PLACE) or from its topology (MPI_Neighbor_alltoallw's: out- and
//     in-degree). Const arrays are only read;
//   - statuses: one Fortran status is WRAP_F_STATUS_SIZE integers
//     (MPI_F_STATUS_SIZE, MPI_STATUS_SIZE, or sizeof(MPI_Status)/
//     sizeof(MPI_Fint)), converted with MPI_Status_f2c/_c2f; a single status
//     equal to MPI_F_STATUS_IGNORE becomes MPI_STATUS_IGNORE and an array
//     equal to MPI_F_STATUSES_IGNORE becomes MPI_STATUSES_IGNORE (both are
//     the C mpi.h's names for the Fortran constants); Waitsome/Testsome
//     write back only the outcount statuses they filled;
//   - CHARACTER arguments, with their hidden lengths (WRAP_F_CHARLEN, size_t
//     as gfortran >= 8 passes them): an input string is copied to a
//     NUL-terminated C string without its trailing blanks (and, for the
//     MPI_Info_* keys and values, without its leading blanks, as the MPI
//     standard says); an output string gets a C buffer of at least
//     WRAP_F_STRING_MIN characters and is copied back blank-padded,
//     truncated to the Fortran length;
//   - choice buffers: the Fortran MPI_BOTTOM and MPI_IN_PLACE (Open MPI's
//     mpi_fortran_bottom_/in_place_ common blocks, MPICH's MPIR_F_MPI_BOTTOM/
//     IN_PLACE addresses, found through weak references) become the C ones;
//     likewise MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY for the Dist_graph
//     weights;
//   - 0-based indices returned by Waitany/Testany/Waitsome/Testsome become
//     1-based (MPI_UNDEFINED stays);
//   - the MPI-1 functions whose Fortran binding has INTEGER where C has
//     MPI_Aint (MPI_Address, MPI_Type_extent/lb/ub/hvector/hindexed/struct)
//     convert between the two;
//   - LOGICAL is passed as C int (gfortran's .TRUE. is 1).
//
// MPI_Wtime, MPI_Wtick, MPI_Aint_add and MPI_Aint_diff are Fortran functions
// returning their value; MPI_Pcontrol has no ierr. MPI_Init has no
// arguments in Fortran and MPI_Init_thread only required and provided.
//
// Delegated functions. A few functions cannot be expressed through the C
// call: MPI_Init/MPI_Init_thread (the Fortran layer must initialise too:
// MPICH sets its Fortran constants there), the ones taking callbacks
// (MPI_Op_create, the keyval and errhandler creators, MPI_Grequest_start,
// MPI_Register_datarep: Fortran callbacks take their arguments by
// reference), the attribute accessors (a Fortran attribute is an
// INTEGER(KIND=MPI_ADDRESS_KIND) value, and the library returns predefined
// ones differently to Fortran), MPI_Info_get_string and
// MPI_Session_get_nth_pset (Fortran length conventions), MPI_Info_create_env
// and MPI_Comm_spawn/_spawn_multiple (argument vectors). Their Fortran
// wrapper still calls the C wrapper, with the arguments converted as far as
// they can be (argv arrays as MPI_ARGV_NULL), but the C wrapper's
// {{callfn}} then calls the MPI library's own Fortran PMPI binding with the
// original Fortran arguments, and refreshes the C view of the handles and
// strings it returned. The binding is the one with the mangling the program
// called (found through weak symbols in a shared library; the -i mangling
// in a static one). If the library's Fortran binding calls back into the C
// function (MPICH does), the C wrapper passes that call straight to PMPI,
// so it is seen once. Templates must use {{callfn}} for these functions: a
// direct P{{f}}() call from a Fortran caller gets the converted arguments.
//
// No Fortran binding is written for the MPI-4 "_c" large-count variants and
// MPI_T_* (mpif.h has none) or for variadic functions other than
// MPI_Pcontrol; their Fortran calls reach the MPI library directly.

// Mangling is a set of Fortran name manglings for [Options.FortranManglings].
type Mangling uint8

// The four manglings of wrap.py, in the order of its -i bindings.
const (
	MangleUpper            Mangling = 1 << iota // MPI_SEND (PMPI_INIT)
	MangleLower                                 // mpi_send (pmpi_init)
	MangleUnderscore                            // mpi_send_ (pmpi_init_), gfortran's
	MangleDoubleUnderscore                      // mpi_send__ (pmpi_init__)
	MangleAll              = MangleUpper | MangleLower | MangleUnderscore | MangleDoubleUnderscore
)

// mangle spells name with mangling k (0: upper, 1: lower, 2: lower_,
// 3: lower__).
func mangle(name string, k int) string {
	switch k {
	case 0:
		return strings.ToUpper(name)
	case 1:
		return strings.ToLower(name)
	case 2:
		return strings.ToLower(name) + "_"
	default:
		return strings.ToLower(name) + "__"
	}
}

const fortranFrontMatter = `/* ---- Fortran bindings support (-f) ---- */
#include <stddef.h>

#ifndef _WRAP_THREAD_LOCAL
#if defined(__cplusplus) && __cplusplus >= 201103L
#define _WRAP_THREAD_LOCAL thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define _WRAP_THREAD_LOCAL _Thread_local
#else
#define _WRAP_THREAD_LOCAL __thread
#endif
#endif /* _WRAP_THREAD_LOCAL */

/* Integers in one Fortran status. */
#if defined(MPI_F_STATUS_SIZE)
#define WRAP_F_STATUS_SIZE MPI_F_STATUS_SIZE
#elif defined(MPI_STATUS_SIZE) && MPI_STATUS_SIZE > 0
#define WRAP_F_STATUS_SIZE MPI_STATUS_SIZE
#else
#define WRAP_F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
#endif

/* The type of the hidden CHARACTER length arguments: size_t for gfortran
 * >= 8, Intel and flang; compile with -DWRAP_F_CHARLEN=int for older ones. */
#ifndef WRAP_F_CHARLEN
#define WRAP_F_CHARLEN size_t
#endif

/* Room for a string an MPI call returns (at least every MPI_MAX_* length). */
#ifndef WRAP_F_STRING_MIN
#define WRAP_F_STRING_MIN 8192
#endif

#if defined(__GNUC__)
#define WRAP_UNUSED __attribute__((unused))
#define WRAP_WEAK __attribute__((weak))
#else
#define WRAP_UNUSED
#define WRAP_WEAK
#endif

/* Shared libraries find the MPI library's Fortran PMPI bindings through
 * weak symbols; static ones use the -i mangling. */
#if (defined(PIC) || defined(__PIC__)) && !defined(STATIC)
#define WRAP_F_SHARED 1
#endif

/* A Fortran call on its way through a C wrapper to the MPI library's own
 * Fortran binding (delegated functions, see the MPI_Init wrapper). */
typedef struct wrap_fcall {
    const char *fn;         /* the function whose {{callfn}} may take it */
    int binding;            /* the mangling the program called: 1..4 */
    int done;               /* the library's binding ran */
    void *a[12];            /* the Fortran arguments, without ierr */
    WRAP_F_CHARLEN len[4];  /* their hidden CHARACTER lengths */
} wrap_fcall;
static _WRAP_THREAD_LOCAL wrap_fcall *wrap_fcall_pending = NULL;
/* > 0 while the MPI library's Fortran binding runs: C wrappers it calls
 * back go straight to PMPI. */
static _WRAP_THREAD_LOCAL int wrap_in_fortran_pmpi = 0;

/* A Fortran input string as a new C string, without trailing blanks (and
 * without leading ones when strip_leading is set). */
static WRAP_UNUSED char *wrap_f2c_string(const char *fstr, WRAP_F_CHARLEN len, int strip_leading) {
    char *cstr;
    while (len > 0 && fstr[len - 1] == ' ') len--;
    while (strip_leading && len > 0 && fstr[0] == ' ') { fstr++; len--; }
    cstr = (char *)malloc(len + 1);
    if (cstr == NULL) return NULL;
    memcpy(cstr, fstr, len);
    cstr[len] = '\0';
    return cstr;
}

/* A C buffer for a string an MPI call returns into a Fortran argument of
 * length len (at least extra + 1 bytes too). */
static WRAP_UNUSED char *wrap_f_outbuf(WRAP_F_CHARLEN len, long extra) {
    size_t size = len > WRAP_F_STRING_MIN ? (size_t)len : WRAP_F_STRING_MIN;
    char *cstr;
    if (extra > 0 && (size_t)extra > size) size = (size_t)extra;
    cstr = (char *)calloc(size + 1, 1);
    return cstr;
}

/* A C string back into a Fortran argument: blank-padded, truncated. */
static WRAP_UNUSED void wrap_c2f_string(const char *cstr, char *fstr, WRAP_F_CHARLEN len) {
    size_t n;
    if (cstr == NULL) return;
    n = strlen(cstr);
    if (n > len) n = len;
    memcpy(fstr, cstr, n);
    if (len > n) memset(fstr + n, ' ', len - n);
}

/* A Fortran output string into the C buffer made by wrap_f_outbuf. */
static WRAP_UNUSED void wrap_f2c_refresh(const char *fstr, WRAP_F_CHARLEN len, char *cstr) {
    if (cstr == NULL) return;
    while (len > 0 && fstr[len - 1] == ' ') len--;
    memcpy(cstr, fstr, len);
    cstr[len] = '\0';
}

/* The Fortran sentinel constants: Open MPI's common blocks (in every
 * mangling) and MPICH's pointers to its own (set by its Fortran MPI_Init). */
#if defined(__GNUC__)
_EXTERN_C_ int mpi_fortran_bottom WRAP_WEAK, mpi_fortran_bottom_ WRAP_WEAK, mpi_fortran_bottom__ WRAP_WEAK, MPI_FORTRAN_BOTTOM WRAP_WEAK;
_EXTERN_C_ int mpi_fortran_in_place WRAP_WEAK, mpi_fortran_in_place_ WRAP_WEAK, mpi_fortran_in_place__ WRAP_WEAK, MPI_FORTRAN_IN_PLACE WRAP_WEAK;
_EXTERN_C_ int mpi_fortran_unweighted WRAP_WEAK, mpi_fortran_unweighted_ WRAP_WEAK, mpi_fortran_unweighted__ WRAP_WEAK, MPI_FORTRAN_UNWEIGHTED WRAP_WEAK;
_EXTERN_C_ int mpi_fortran_weights_empty WRAP_WEAK, mpi_fortran_weights_empty_ WRAP_WEAK, mpi_fortran_weights_empty__ WRAP_WEAK, MPI_FORTRAN_WEIGHTS_EMPTY WRAP_WEAK;
_EXTERN_C_ void *MPIR_F_MPI_BOTTOM WRAP_WEAK;
_EXTERN_C_ void *MPIR_F_MPI_IN_PLACE WRAP_WEAK;
_EXTERN_C_ void *MPIR_F_MPI_UNWEIGHTED WRAP_WEAK;
_EXTERN_C_ void *MPIR_F_MPI_WEIGHTS_EMPTY WRAP_WEAK;

static WRAP_UNUSED int wrap_f_is(const void *p, const void *a, const void *b, const void *c, const void *d, void *const *mpich) {
    if (p == NULL) return 0;
    if (p == a || p == b || p == c || p == d) return 1;
    return mpich != NULL && *mpich != NULL && p == *mpich;
}
#define WRAP_F_IS(p, n, N, M) wrap_f_is((p), &mpi_fortran_##n, &mpi_fortran_##n##_, &mpi_fortran_##n##__, &MPI_FORTRAN_##N, (void *const *)&MPIR_F_MPI_##M)

/* A Fortran choice buffer: MPI_BOTTOM and MPI_IN_PLACE become C's. */
static WRAP_UNUSED void *wrap_f2c_buffer(const void *p) {
    if (WRAP_F_IS(p, bottom, BOTTOM, BOTTOM)) return MPI_BOTTOM;
    if (WRAP_F_IS(p, in_place, IN_PLACE, IN_PLACE)) return MPI_IN_PLACE;
    return (void *)p;
}

/* Dist_graph weights: MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY become C's. */
static WRAP_UNUSED int *wrap_f2c_weights(const MPI_Fint *p) {
    if (WRAP_F_IS(p, unweighted, UNWEIGHTED, UNWEIGHTED)) return MPI_UNWEIGHTED;
    if (WRAP_F_IS(p, weights_empty, WEIGHTS_EMPTY, WEIGHTS_EMPTY)) return MPI_WEIGHTS_EMPTY;
    return (int *)p;
}
#else
#define wrap_f2c_buffer(p) ((void *)(p))
#define wrap_f2c_weights(p) ((int *)(p))
#endif

/* Array lengths that the arguments do not give. */
static WRAP_UNUSED int wrap_comm_peers(MPI_Comm comm) {
    int inter = 0, n = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) PMPI_Comm_remote_size(comm, &n);
    else PMPI_Comm_size(comm, &n);
    return n;
}

static WRAP_UNUSED int wrap_neighbors(MPI_Comm comm, int out) {
    int topo = MPI_UNDEFINED, in = 0, outd = 0, weighted = 0, rank = 0, nd = 0;
    PMPI_Topo_test(comm, &topo);
    if (topo == MPI_DIST_GRAPH) {
        PMPI_Dist_graph_neighbors_count(comm, &in, &outd, &weighted);
        return out ? outd : in;
    }
    if (topo == MPI_GRAPH) {
        PMPI_Comm_rank(comm, &rank);
        PMPI_Graph_neighbors_count(comm, rank, &in);
        return in;
    }
    if (topo == MPI_CART) {
        PMPI_Cartdim_get(comm, &nd);
        return 2 * nd;
    }
    return 0;
}

#define WRAP_F_ALLOC(type, n) ((type *)malloc(sizeof(type) * (size_t)((n) > 0 ? (n) : 1)))

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

// arrayLengths gives, for the parameters that are arrays of handles or
// statuses (or, for the MPI-1 functions of aintFromInt, of addresses), the
// C expression of their length in terms of the Fortran arguments: "$N" is
// Fortran argument N (a pointer), "peers($N)" the size of the group (or
// remote group) of communicator argument N, "in($N)"/"out($N)" its
// topology's in- and out-degree. wrap.py's table, with MPI_Type_get_contents
// corrected (its datatype array is max_datatypes long, not max_integers)
// and the arrays wrap.py leaves unconverted added.
var arrayLengths = map[string]map[int]string{
	"MPI_Startall":                {1: "*$0"},
	"MPI_Testall":                 {1: "*$0", 3: "*$0"},
	"MPI_Testany":                 {1: "*$0"},
	"MPI_Testsome":                {1: "*$0", 4: "*$0"},
	"MPI_Type_create_struct":      {3: "*$0"},
	"MPI_Type_get_contents":       {6: "*$3"},
	"MPI_Type_struct":             {2: "*$0", 3: "*$0"},
	"MPI_Type_hindexed":           {2: "*$0"},
	"MPI_Waitall":                 {1: "*$0", 2: "*$0"},
	"MPI_Waitany":                 {1: "*$0"},
	"MPI_Waitsome":                {1: "*$0", 4: "*$0"},
	"MPI_Alltoallw":               {3: "sendpeers($8)", 7: "peers($8)"},
	"MPI_Ialltoallw":              {3: "sendpeers($8)", 7: "peers($8)"},
	"MPI_Alltoallw_init":          {3: "sendpeers($8)", 7: "peers($8)"},
	"MPI_Neighbor_alltoallw":      {3: "out($8)", 7: "in($8)"},
	"MPI_Ineighbor_alltoallw":     {3: "out($8)", 7: "in($8)"},
	"MPI_Neighbor_alltoallw_init": {3: "out($8)", 7: "in($8)"},
	"MPI_Comm_spawn_multiple":     {4: "*$0"},
}

// statusWritebacks gives the number of statuses written back where it is
// not the array's length: the outcount of Waitsome/Testsome.
var statusWritebacks = map[string]map[int]int{
	"MPI_Waitsome": {4: 2},
	"MPI_Testsome": {4: 2},
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

// aintFromInt lists the MPI_Aint parameters that the (MPI-1) Fortran
// bindings declare INTEGER.
var aintFromInt = map[string][]int{
	"MPI_Address":       {1},
	"MPI_Type_extent":   {1},
	"MPI_Type_lb":       {1},
	"MPI_Type_ub":       {1},
	"MPI_Type_hvector":  {2},
	"MPI_Type_hindexed": {2},
	"MPI_Type_struct":   {2},
}

// weightParams are the Dist_graph weight arrays, which may be
// MPI_UNWEIGHTED or MPI_WEIGHTS_EMPTY.
var weightParams = map[string][]int{
	"MPI_Dist_graph_create":          {5},
	"MPI_Dist_graph_create_adjacent": {3, 6},
	"MPI_Dist_graph_neighbors":       {3, 6},
}

// delegatedByName are the functions, besides those taking callbacks, whose
// Fortran calls go to the MPI library's own Fortran binding (see the
// package notes above).
var delegatedByName = regexp.MustCompile(`^MPI_(Init|Init_thread|Info_create_env|Comm_spawn|Comm_spawn_multiple|Info_get_string|Session_get_nth_pset|Attr_get|Attr_put|(Comm|Type|Win)_(get|set)_attr)$`)

// fortranSkipped reports functions that get no Fortran binding.
func fortranSkipped(f *Func) bool {
	switch {
	case strings.HasSuffix(f.Name, "_c"), strings.HasPrefix(f.Name, "MPI_T_"):
		return true
	case f.Variadic && f.Name != "MPI_Pcontrol":
		return true
	}
	return false
}

// isCallback reports a parameter that is a function (pointer).
func isCallback(p Param) bool {
	return p.FuncPtr || strings.HasSuffix(p.Base, "_function") || strings.HasSuffix(p.Base, "_function_c") ||
		strings.HasSuffix(p.Base, "_fn")
}

// fortranDelegated reports whether Fortran calls of f go to the MPI
// library's Fortran binding from the C wrapper's {{callfn}}.
func fortranDelegated(f *Func) bool {
	if fortranSkipped(f) {
		return false
	}
	if delegatedByName.MatchString(f.Name) {
		return true
	}
	for _, p := range f.Params {
		if isCallback(p) {
			return true
		}
	}
	return false
}

// isString reports a CHARACTER argument: char * or char [].
func isString(p Param) bool {
	return p.Base == "char" && !p.FuncPtr && ((p.Pointers == 1 && !p.Array) || (p.Pointers == 0 && p.Dims == "[]"))
}

// isStringVector reports an argument vector (char *argv[], char **...),
// which is one CHARACTER array in Fortran.
func isStringVector(p Param) bool {
	return p.Base == "char" && !p.FuncPtr && !isString(p) && p.IsPointerLike()
}

// fortranArg is one argument of a Fortran binding.
type fortranArg struct {
	formal string // C declaration of the formal parameter
	name   string
}

// fortranCall accumulates the pieces of one Fortran-to-C delegation.
type fortranCall struct {
	g         *gen
	f         *Func
	delegated bool

	args    []fortranArg // the Fortran arguments, without ierr and the hidden lengths
	hidden  []fortranArg // hidden CHARACTER lengths
	cArg    map[int]int  // C parameter index -> Fortran argument index
	actuals []string     // per C parameter
	temps   []string
	copies  []string
	wbs     []string // writebacks after the call
	frees   []string
	refresh []string // in the delegate, after the library's binding: C outputs from Fortran ones
	loop    bool
}

func (c *fortranCall) name(i int) string { return c.f.ArgName(i, c.g.opts.HeaderNames) }

var argRef = regexp.MustCompile(`\$(\d+)`)

// lengthExpr expands an arrayLengths entry into C.
func (c *fortranCall) lengthExpr(spec string) string {
	arg := func(ref string) string {
		n, _ := strconv.Atoi(strings.TrimPrefix(ref, "$"))
		return c.name(n)
	}
	comm := ""
	if m := argRef.FindString(spec); m != "" {
		comm = "MPI_Comm_f2c(*" + arg(m) + ")"
	}
	switch {
	case strings.HasPrefix(spec, "sendpeers("):
		return fmt.Sprintf("(wrap_f2c_buffer(%s) == MPI_IN_PLACE ? 0 : wrap_comm_peers(%s))", c.name(0), comm)
	case strings.HasPrefix(spec, "peers("):
		return "wrap_comm_peers(" + comm + ")"
	case strings.HasPrefix(spec, "in("):
		return "wrap_neighbors(" + comm + ", 0)"
	case strings.HasPrefix(spec, "out("):
		return "wrap_neighbors(" + comm + ", 1)"
	}
	return argRef.ReplaceAllStringFunc(spec, arg)
}

func (c *fortranCall) addArg(i int, formal string) {
	c.cArg[i] = len(c.args)
	c.args = append(c.args, fortranArg{formal: formal, name: c.name(i)})
}

func (c *fortranCall) addHidden(nm string) {
	c.hidden = append(c.hidden, fortranArg{formal: "WRAP_F_CHARLEN " + nm + "_len", name: nm + "_len"})
}

// param converts C parameter i.
func (c *fortranCall) param(i int) {
	f, p := c.f, c.f.Params[i]
	nm := c.name(i)
	temp := "temp_" + nm
	base := p.Base
	conv, isHandle := handleConversions[base]
	lengthSpec, hasLength := arrayLengths[f.Name][i]
	length := ""
	if hasLength {
		length = "wrap_n_" + nm
	}
	declareLength := func() {
		c.temps = append(c.temps, "int "+length+" = 0;")
		c.copies = append(c.copies, length+" = "+c.lengthExpr(lengthSpec)+";")
	}
	aint := false
	for _, k := range aintFromInt[f.Name] {
		aint = aint || k == i
	}
	weights := false
	for _, k := range weightParams[f.Name] {
		weights = weights || k == i
	}
	switch {
	case isCallback(p):
		// A Fortran procedure: only meaningful to the library's binding.
		c.addArg(i, p.Formal(nm))
		c.actuals[i] = nm

	case isString(p):
		c.addArg(i, "char *"+nm)
		c.addHidden(nm)
		c.temps = append(c.temps, "char *"+temp+" = NULL;")
		if p.Const {
			lead := "0"
			if strings.HasPrefix(f.Name, "MPI_Info_") {
				lead = "1"
			}
			c.copies = append(c.copies, fmt.Sprintf("%s = wrap_f2c_string(%s, %s_len, %s);", temp, nm, nm, lead))
		} else {
			extra := "0"
			if f.Name == "MPI_Info_get" {
				extra = "(long)*" + c.name(2) // valuelen
			}
			c.copies = append(c.copies, fmt.Sprintf("%s = wrap_f_outbuf(%s_len, %s);", temp, nm, extra))
			// Only a successful call returns a string (the MPI
			// libraries' own bindings leave the argument alone else).
			wb := fmt.Sprintf("if (%s == MPI_SUCCESS) wrap_c2f_string(%s, %s, %s_len);", returnVal, temp, nm, nm)
			if c.delegated {
				wb = fmt.Sprintf("if (%s == MPI_SUCCESS && !wrap_fc.done) wrap_c2f_string(%s, %s, %s_len);", returnVal, temp, nm, nm)
				k := len(c.hidden) - 1
				c.refresh = append(c.refresh, fmt.Sprintf("wrap_f2c_refresh((const char *)wrap_fc->a[%d], wrap_fc->len[%d], %s);", c.cArg[i], k, nm))
			}
			c.wbs = append(c.wbs, wb)
		}
		c.actuals[i] = temp
		c.frees = append(c.frees, "free("+temp+");")

	case isStringVector(p):
		// A CHARACTER array: only delegated functions have them; the C
		// wrapper sees MPI_ARGV_NULL (NULL).
		c.addArg(i, "char *"+nm)
		c.addHidden(nm)
		c.actuals[i] = "(" + castType(p) + ")0"

	case base == "MPI_Status" && p.IsPointerLike() && hasLength:
		c.addArg(i, "MPI_Fint *"+nm)
		declareLength()
		c.loop = true
		c.temps = append(c.temps, "MPI_Status *"+temp+" = NULL;")
		c.copies = append(c.copies,
			fmt.Sprintf("%s = WRAP_F_ALLOC(MPI_Status, %s);", temp, length),
			fmt.Sprintf("if (%s != MPI_F_STATUSES_IGNORE)", nm),
			fmt.Sprintf("    for (wrap_i = 0; wrap_i < %s; wrap_i++) MPI_Status_f2c(&%s[wrap_i * WRAP_F_STATUS_SIZE], &%s[wrap_i]);", length, nm, temp))
		c.actuals[i] = fmt.Sprintf("(%s == MPI_F_STATUSES_IGNORE) ? MPI_STATUSES_IGNORE : %s", nm, temp)
		if !p.Const {
			n := length
			if cnt, ok := statusWritebacks[f.Name][i]; ok {
				on := c.name(cnt)
				n = fmt.Sprintf("(*%s == MPI_UNDEFINED ? 0 : *%s)", on, on)
			}
			c.wbs = append(c.wbs,
				fmt.Sprintf("if (%s != MPI_F_STATUSES_IGNORE)", nm),
				fmt.Sprintf("    for (wrap_i = 0; wrap_i < %s; wrap_i++) MPI_Status_c2f(&%s[wrap_i], &%s[wrap_i * WRAP_F_STATUS_SIZE]);", n, temp, nm))
		}
		c.frees = append(c.frees, "free("+temp+");")

	case base == "MPI_Status" && p.IsPointerLike():
		c.addArg(i, "MPI_Fint *"+nm)
		c.temps = append(c.temps, "MPI_Status "+temp+";")
		c.copies = append(c.copies, fmt.Sprintf("if (%s != MPI_F_STATUS_IGNORE) MPI_Status_f2c(%s, &%s);", nm, nm, temp))
		c.actuals[i] = fmt.Sprintf("(%s == MPI_F_STATUS_IGNORE) ? MPI_STATUS_IGNORE : &%s", nm, temp)
		if !p.Const {
			c.wbs = append(c.wbs, fmt.Sprintf("if (%s != MPI_F_STATUS_IGNORE) MPI_Status_c2f(&%s, %s);", nm, temp, nm))
		}

	case isHandle && !p.IsPointerLike():
		c.addArg(i, "MPI_Fint *"+nm)
		c.actuals[i] = fmt.Sprintf("%s_f2c(*%s)", conv, nm)

	case isHandle && (hasLength || p.Array):
		c.addArg(i, "MPI_Fint *"+nm)
		if !hasLength {
			// Every handle array of the MPI standard has a length rule;
			// one that does not (a future function) is passed as it is.
			c.actuals[i] = fmt.Sprintf("(%s)(void *)%s /* handle array of unknown length, unconverted */", castType(p), nm)
			break
		}
		declareLength()
		c.loop = true
		c.temps = append(c.temps, base+" *"+temp+" = NULL;")
		c.copies = append(c.copies,
			fmt.Sprintf("%s = WRAP_F_ALLOC(%s, %s);", temp, base, length),
			fmt.Sprintf("for (wrap_i = 0; wrap_i < %s; wrap_i++) %s[wrap_i] = %s_f2c(%s[wrap_i]);", length, temp, conv, nm))
		c.actuals[i] = temp
		if !p.Const {
			c.wbs = append(c.wbs, fmt.Sprintf("for (wrap_i = 0; wrap_i < %s; wrap_i++) %s[wrap_i] = %s_c2f(%s[wrap_i]);", length, nm, conv, temp))
		}
		c.frees = append(c.frees, "free("+temp+");")

	case isHandle:
		// A pointer to one handle: in, out or in-out.
		c.addArg(i, "MPI_Fint *"+nm)
		c.temps = append(c.temps, base+" "+temp+";")
		c.copies = append(c.copies, fmt.Sprintf("%s = %s_f2c(*%s);", temp, conv, nm))
		c.actuals[i] = "&" + temp
		if !p.Const {
			c.wbs = append(c.wbs, fmt.Sprintf("*%s = %s_c2f(%s);", nm, conv, temp))
			if c.delegated {
				c.refresh = append(c.refresh, fmt.Sprintf("*%s = %s_f2c(*(MPI_Fint *)wrap_fc->a[%d]);", nm, conv, c.cArg[i]))
			}
		}

	case aint && hasLength:
		// An INTEGER array in Fortran, MPI_Aint in C (MPI-1).
		c.addArg(i, "MPI_Fint *"+nm)
		declareLength()
		c.loop = true
		c.temps = append(c.temps, "MPI_Aint *"+temp+" = NULL;")
		c.copies = append(c.copies,
			fmt.Sprintf("%s = WRAP_F_ALLOC(MPI_Aint, %s);", temp, length),
			fmt.Sprintf("for (wrap_i = 0; wrap_i < %s; wrap_i++) %s[wrap_i] = (MPI_Aint)%s[wrap_i];", length, temp, nm))
		c.actuals[i] = temp
		c.frees = append(c.frees, "free("+temp+");")

	case aint && p.IsPointerLike():
		c.addArg(i, "MPI_Fint *"+nm)
		c.temps = append(c.temps, "MPI_Aint "+temp+" = 0;")
		c.actuals[i] = "&" + temp
		c.wbs = append(c.wbs, fmt.Sprintf("*%s = (MPI_Fint)%s;", nm, temp))

	case aint:
		c.addArg(i, "MPI_Fint *"+nm)
		c.actuals[i] = "(MPI_Aint)*" + nm

	case weights:
		c.addArg(i, "MPI_Fint *"+nm)
		c.actuals[i] = fmt.Sprintf("(%s)wrap_f2c_weights(%s)", castType(p), nm)

	case f.Name == "MPI_Buffer_detach" && i == 0:
		// The detached buffer's address: Fortran cannot receive it, and
		// the argument is the buffer itself (both MPIs' bindings ignore it).
		c.addArg(i, "void *"+nm)
		c.temps = append(c.temps, "void *"+temp+" = NULL;")
		c.copies = append(c.copies, "(void)"+nm+";")
		c.actuals[i] = "&" + temp

	case base == "void" && p.IsPointerLike():
		c.addArg(i, "void *"+nm)
		if c.delegated {
			// Attribute values, extra_state: the library's binding
			// takes them as they are.
			c.actuals[i] = fmt.Sprintf("(%s)%s", castType(p), nm)
		} else {
			c.actuals[i] = fmt.Sprintf("(%s)wrap_f2c_buffer(%s)", castType(p), nm)
		}

	case base == "MPI_Aint" || base == "MPI_Offset" || base == "MPI_Count":
		c.addArg(i, base+" *"+nm)
		if p.IsPointerLike() {
			c.actuals[i] = fmt.Sprintf("(%s)%s", castType(p), nm)
		} else {
			c.actuals[i] = "*" + nm
		}

	default:
		// int (INTEGER, LOGICAL) and other plain C types.
		c.addArg(i, "MPI_Fint *"+nm)
		if p.IsPointerLike() {
			c.actuals[i] = fmt.Sprintf("(%s)%s", castType(p), nm)
		} else {
			c.actuals[i] = "*" + nm
		}
	}
	if outs, ok := indexOutputs[f.Name]; ok {
		if cnt, ok := outs[i]; ok {
			if cnt < 0 {
				c.wbs = append(c.wbs, fmt.Sprintf("if (*%s != MPI_UNDEFINED && *%s >= 0) (*%s)++;", nm, nm, nm))
			} else {
				on := c.name(cnt)
				c.loop = true
				c.wbs = append(c.wbs,
					fmt.Sprintf("if (*%s != MPI_UNDEFINED)", on),
					fmt.Sprintf("    for (wrap_i = 0; wrap_i < *%s; wrap_i++) %s[wrap_i]++;", on, nm))
			}
		}
	}
}

// castType is the C type to cast a Fortran argument to when passing it for
// parameter p: arrays decay to pointers.
func castType(p Param) string {
	t := p.Type
	if p.Array {
		dims := p.Dims
		first := strings.Index(dims, "]")
		rest := dims[first+1:]
		base := strings.TrimSpace(strings.TrimSuffix(t, dims))
		if rest == "" {
			if strings.HasSuffix(base, "*") {
				return base + "*"
			}
			return base + " *"
		}
		return base + " (*)" + rest
	}
	return t
}

// build converts every parameter of f, with the Fortran-specific
// signatures of MPI_Init, MPI_Init_thread and MPI_Info_create_env.
func (c *fortranCall) build() {
	f := c.f
	c.cArg = map[int]int{}
	c.actuals = make([]string, len(f.Params))
	switch f.Name {
	case "MPI_Init":
		// MPI_INIT(IERROR)
		c.temps = append(c.temps, "int wrap_argc = 0;", "char **wrap_argv = NULL;")
		c.actuals = []string{"&wrap_argc", "&wrap_argv"}
		return
	case "MPI_Init_thread":
		// MPI_INIT_THREAD(REQUIRED, PROVIDED, IERROR)
		c.temps = append(c.temps, "int wrap_argc = 0;", "char **wrap_argv = NULL;", "int temp_provided = 0;")
		c.addArg(2, "MPI_Fint *"+c.name(2))
		c.addArg(3, "MPI_Fint *"+c.name(3))
		c.actuals = []string{"&wrap_argc", "&wrap_argv", "*" + c.name(2), "&temp_provided"}
		c.wbs = append(c.wbs, "*"+c.name(3)+" = (MPI_Fint)temp_provided;")
		c.refresh = append(c.refresh, "*"+c.name(3)+" = (int)*(MPI_Fint *)wrap_fc->a[1];")
		return
	case "MPI_Info_create_env":
		// MPI_INFO_CREATE_ENV(INFO, IERROR)
		c.addArg(2, "MPI_Fint *"+c.name(2))
		c.temps = append(c.temps, "MPI_Info temp_"+c.name(2)+" = MPI_INFO_NULL;")
		c.actuals = []string{"0", "NULL", "&temp_" + c.name(2)}
		c.wbs = append(c.wbs, "*"+c.name(2)+" = MPI_Info_c2f(temp_"+c.name(2)+");")
		c.refresh = append(c.refresh, "*"+c.name(2)+" = MPI_Info_f2c(*(MPI_Fint *)wrap_fc->a[0]);")
		return
	}
	for i := range f.Params {
		c.param(i)
	}
}

// fortranSignature is the binding's return type and formal parameters.
func (c *fortranCall) signature() (ret string, formals []string, names []string) {
	for _, a := range c.args {
		formals = append(formals, a.formal)
		names = append(names, a.name)
	}
	ret = c.f.Ret
	if c.f.Ret == "int" && c.f.Name != "MPI_Pcontrol" {
		formals = append(formals, "MPI_Fint *ierr")
		names = append(names, "ierr")
		ret = "void"
	} else if c.f.Name == "MPI_Pcontrol" {
		ret = "void"
	}
	for _, h := range c.hidden {
		formals = append(formals, h.formal)
		names = append(names, h.name)
	}
	return ret, formals, names
}

// manglingIndexes lists the manglings to write, as indexes 0..3.
func (g *gen) manglingIndexes() []int {
	m := g.opts.FortranManglings
	if m == 0 {
		m = MangleAll
	}
	var ks []int
	for k := 0; k < 4; k++ {
		if m&(1<<k) != 0 {
			ks = append(ks, k)
		}
	}
	return ks
}

// staticMangling is the mangling index of the -i binding.
func (g *gen) staticMangling() int {
	for k, b := range PMPIInitBindings {
		if b == g.opts.PMPIInit {
			return k
		}
	}
	return 2
}

// fortranWrappers writes the Fortran bindings of f.
func (g *gen) fortranWrappers(f *Func) string {
	if fortranSkipped(f) {
		return ""
	}
	c := &fortranCall{g: g, f: f, delegated: fortranDelegated(f)}
	c.build()
	ret, formals, names := c.signature()
	var b strings.Builder
	b.WriteString("/* =============== Fortran Wrappers for " + f.Name + " =============== */\n")
	delegate := f.Name + "_fortran_wrapper"
	wformals := append([]string{}, formals...)
	if c.delegated {
		wformals = append([]string{"int wrap_binding"}, wformals...)
	}
	fmt.Fprintf(&b, "static %s %s(%s) { \n", ret, delegate, joinFormals(wformals))
	fmt.Fprintf(&b, "    %s %s = 0;\n", f.Ret, returnVal)
	if c.loop {
		b.WriteString("    int wrap_i;\n")
	}
	if c.delegated {
		b.WriteString("    wrap_fcall wrap_fc;\n")
	}
	for _, s := range c.temps {
		b.WriteString("    " + s + "\n")
	}
	for _, s := range c.copies {
		b.WriteString("    " + s + "\n")
	}
	if c.delegated {
		b.WriteString("    memset(&wrap_fc, 0, sizeof(wrap_fc));\n")
		fmt.Fprintf(&b, "    wrap_fc.fn = wrap_fid_%s;\n", f.Name)
		b.WriteString("    wrap_fc.binding = wrap_binding;\n")
		for k, a := range c.args {
			fmt.Fprintf(&b, "    wrap_fc.a[%d] = (void *)%s;\n", k, a.name)
		}
		for k, h := range c.hidden {
			fmt.Fprintf(&b, "    wrap_fc.len[%d] = %s;\n", k, h.name)
		}
		b.WriteString("    wrap_fcall_pending = &wrap_fc;\n")
	}
	call := fmt.Sprintf("    %s = %s(%s);\n", returnVal, f.Name, strings.Join(c.actuals, ", "))
	if g.opts.NoDeprecationWarnings {
		call = "WRAP_MPI_CALL_PREFIX\n" + call + "WRAP_MPI_CALL_POSTFIX\n"
	}
	b.WriteString(call)
	if c.delegated {
		b.WriteString("    wrap_fcall_pending = NULL;\n")
	}
	for _, s := range c.wbs {
		b.WriteString("    " + s + "\n")
	}
	for _, s := range c.frees {
		b.WriteString("    " + s + "\n")
	}
	switch {
	case ret == "void" && f.Ret == "int" && f.Name != "MPI_Pcontrol":
		b.WriteString("    *ierr = (MPI_Fint)" + returnVal + ";\n")
	case ret == "void":
		b.WriteString("    (void)" + returnVal + ";\n")
	default:
		b.WriteString("    return " + returnVal + ";\n")
	}
	b.WriteString("}\n\n")

	for _, k := range g.manglingIndexes() {
		fmt.Fprintf(&b, "_EXTERN_C_ %s %s(%s) { \n", ret, mangle(f.Name, k), joinFormals(formals))
		args := names
		if c.delegated {
			args = append([]string{fmt.Sprint(k + 1)}, names...)
		}
		enter, leave := g.opts.FortranEnter, g.opts.FortranLeave
		if enter != "" {
			b.WriteString("    " + enter + "\n")
		}
		switch {
		case ret == "void":
			fmt.Fprintf(&b, "    %s(%s);\n", delegate, strings.Join(args, ", "))
			if leave != "" {
				b.WriteString("    " + leave + "\n")
			}
		case leave != "":
			fmt.Fprintf(&b, "    %s wrap_fret_ = %s(%s);\n", ret, delegate, strings.Join(args, ", "))
			b.WriteString("    " + leave + "\n")
			b.WriteString("    return wrap_fret_;\n")
		default:
			fmt.Fprintf(&b, "    return %s(%s);\n", delegate, strings.Join(args, ", "))
		}
		b.WriteString("}\n\n")
	}
	b.WriteString("/* ================= End Wrappers for " + f.Name + " ================= */\n\n\n")
	return b.String()
}

func joinFormals(formals []string) string {
	if len(formals) == 0 {
		return "void"
	}
	return strings.Join(formals, ", ")
}

// fortranDelegatePre is written before the C wrapper of a delegated
// function: the declarations of the MPI library's Fortran PMPI bindings
// and MPI_X_fortran_pmpi, which {{callfn}} calls for a Fortran caller.
func (g *gen) fortranDelegatePre(f *Func) string {
	c := &fortranCall{g: g, f: f, delegated: true}
	c.build()
	hn := g.opts.HeaderNames
	var b strings.Builder
	var ftypes, fargs []string
	for k := range c.args {
		ftypes = append(ftypes, "void *")
		fargs = append(fargs, fmt.Sprintf("wrap_fc->a[%d]", k))
	}
	ftypes = append(ftypes, "MPI_Fint *")
	fargs = append(fargs, "&wrap_ierr")
	for k := range c.hidden {
		ftypes = append(ftypes, "WRAP_F_CHARLEN")
		fargs = append(fargs, fmt.Sprintf("wrap_fc->len[%d]", k))
	}
	sig := strings.Join(ftypes, ", ")
	var bindings []string
	for k := 0; k < 4; k++ {
		bindings = append(bindings, "p"+mangle(f.Name, k))
	}
	bindings[0] = "P" + strings.ToUpper(f.Name)
	fmt.Fprintf(&b, "/* %s: Fortran callers are passed to the MPI library's Fortran binding. */\n", f.Name)
	fmt.Fprintf(&b, "static const char wrap_fid_%s[] = \"%s\";\n", f.Name, f.Name)
	isInit := f.Name == "MPI_Init" || f.Name == "MPI_Init_thread"
	if isInit {
		b.WriteString("#ifdef WRAP_F_SHARED\n")
	}
	for _, n := range bindings {
		fmt.Fprintf(&b, "#pragma weak %s\n", n)
	}
	if isInit {
		b.WriteString("#endif\n")
	}
	for _, n := range bindings {
		fmt.Fprintf(&b, "_EXTERN_C_ void %s(%s);\n", n, sig)
	}
	formals := append([]string{"wrap_fcall *wrap_fc"}, f.Formals(hn)...)
	if f.Variadic {
		formals = formals[:len(formals)-1]
	}
	fmt.Fprintf(&b, "static %s %s_fortran_pmpi(%s) {\n", f.Ret, f.Name, strings.Join(formals, ", "))
	fmt.Fprintf(&b, "    void (*wrap_fp)(%s) = NULL;\n", sig)
	b.WriteString("    MPI_Fint wrap_ierr = MPI_SUCCESS;\n")
	anyBinding := fmt.Sprintf("%s ? %s : %s ? %s : %s ? %s : %s", bindings[2], bindings[2], bindings[0], bindings[0], bindings[1], bindings[1], bindings[3])
	b.WriteString("#ifdef WRAP_F_SHARED\n")
	b.WriteString("    switch (wrap_fc->binding) {\n")
	for k, n := range bindings {
		fmt.Fprintf(&b, "    case %d: wrap_fp = %s; break;\n", k+1, n)
	}
	b.WriteString("    }\n")
	fmt.Fprintf(&b, "    if (wrap_fp == NULL) wrap_fp = %s;\n", anyBinding)
	b.WriteString("#else\n")
	fmt.Fprintf(&b, "    wrap_fp = %s;\n", bindings[g.staticMangling()])
	if !isInit {
		fmt.Fprintf(&b, "    if (wrap_fp == NULL) wrap_fp = %s;\n", anyBinding)
	}
	b.WriteString("#endif\n")
	for i := range f.Params {
		fmt.Fprintf(&b, "    (void)%s;\n", f.ArgName(i, hn))
	}
	b.WriteString("    if (wrap_fp == NULL) {\n")
	if isInit {
		fmt.Fprintf(&b, "        fprintf(stderr, \"ERROR: Couldn't find the Fortran P%s binding. Link against a static wrapper library instead.\\n\");\n", strings.ToUpper(f.Name))
		b.WriteString("        exit(1);\n")
	} else {
		b.WriteString("        /* No Fortran MPI library: call the C function. */\n")
		call := "return P" + f.Name + "(" + strings.Join(f.ArgNames(hn), ", ") + ");"
		if g.opts.NoDeprecationWarnings {
			call = "{\n            " + f.Ret + " wrap_r;\nWRAP_MPI_CALL_PREFIX\n            wrap_r = P" + f.Name + "(" + strings.Join(f.ArgNames(hn), ", ") + ");\nWRAP_MPI_CALL_POSTFIX\n            return wrap_r;\n        }"
		}
		b.WriteString("        " + call + "\n")
	}
	b.WriteString("    }\n")
	b.WriteString("    wrap_in_fortran_pmpi++;\n")
	fmt.Fprintf(&b, "    wrap_fp(%s);\n", strings.Join(fargs, ", "))
	b.WriteString("    wrap_in_fortran_pmpi--;\n")
	b.WriteString("    wrap_fc->done = 1;\n")
	for _, s := range c.refresh {
		b.WriteString("    " + s + "\n")
	}
	b.WriteString("    return (" + f.Ret + ")wrap_ierr;\n")
	b.WriteString("}\n")
	return b.String()
}

// fortranCallfn is {{callfn}} of a delegated function under -f: for a
// Fortran caller, the MPI library's Fortran binding; else the PMPI call.
func (g *gen) fortranCallfn(f *Func) string {
	hn := g.opts.HeaderNames
	args := append([]string{"wrap_fc"}, f.ArgNames(hn)...)
	var b strings.Builder
	fmt.Fprintf(&b, "    if (wrap_fcall_pending != NULL && wrap_fcall_pending->fn == wrap_fid_%s) {\n", f.Name)
	b.WriteString("        wrap_fcall *wrap_fc = wrap_fcall_pending;\n")
	b.WriteString("        wrap_fcall_pending = NULL;\n")
	fmt.Fprintf(&b, "        %s = %s_fortran_pmpi(%s);\n", returnVal, f.Name, strings.Join(args, ", "))
	b.WriteString("    } else {\n")
	b.WriteString("        " + strings.ReplaceAll(g.pmpiCall(f), "\n", "\n        ") + "\n")
	b.WriteString("    }")
	return b.String()
}

// fortranPrologue starts the C wrapper of a delegated function under -f:
// when the MPI library's Fortran binding, called from {{callfn}} on behalf
// of a Fortran caller, calls back into the C function (MPICH's do), go
// straight to PMPI instead of running the wrapper a second time (for
// MPI_Init, wrap.py recurses until the stack overflows).
func (g *gen) fortranPrologue(f *Func) string {
	args := strings.Join(f.ArgNames(g.opts.HeaderNames), ", ")
	call := "return P" + f.Name + "(" + args + ");"
	if g.opts.NoDeprecationWarnings {
		call = "WRAP_MPI_CALL_PREFIX\n        " + returnVal + " = P" + f.Name + "(" + args + ");\nWRAP_MPI_CALL_POSTFIX\n        return " + returnVal + ";"
	}
	return "    if (wrap_in_fortran_pmpi > 0) {\n        /* called back by the MPI library's Fortran binding */\n        " + call + "\n    }\n"
}
