package wrap

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

const fortranTestHeader = testHeader + `
int MPI_Init(int *argc, char ***argv);
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Send_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Get_processor_name(char *name, int *resultlen);
int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status);
int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[], MPI_Status array_of_statuses[]);
int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name);
int MPI_Info_set(MPI_Info info, const char *key, const char *value);
int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag);
int MPI_Pack_external_size(const char datarep[], int incount, MPI_Datatype datatype, MPI_Aint *size);
int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm);
int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm);
int MPI_Type_hindexed(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype *newtype);
int MPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent);
int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int nodes[], const int degrees[], const int targets[], const int weights[], MPI_Info info, int reorder, MPI_Comm *newcomm);
int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status);
int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op);
int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag);
int MPI_Comm_spawn(const char *command, char *argv[], int maxprocs, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[]);
int MPI_T_init_thread(int required, int *provided);
MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp);
`

func genFortran(t *testing.T, tmpl string, opts Options) string {
	t.Helper()
	fs, err := ParseHeaderExcluding(fortranTestHeader, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.Fortran = true
	var b bytes.Buffer
	if err := Generate(&b, fs, []Input{{"f.w", tmpl}}, opts); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestFortranShapes(t *testing.T) {
	out := genFortran(t, "{{fn f MPI_Comm_rank}}{{callfn}}{{endfn}}", Options{NoFrontMatter: true})
	want := `/* ================== C Wrappers for MPI_Comm_rank ================== */
_EXTERN_C_ int PMPI_Comm_rank(MPI_Comm arg_0, int *arg_1);
_EXTERN_C_ int MPI_Comm_rank(MPI_Comm arg_0, int *arg_1) { 
    int _wrap_py_return_val = 0;
_wrap_py_return_val = PMPI_Comm_rank(arg_0, arg_1);
    return _wrap_py_return_val;
}

/* =============== Fortran Wrappers for MPI_Comm_rank =============== */
static void MPI_Comm_rank_fortran_wrapper(MPI_Fint *arg_0, MPI_Fint *arg_1, MPI_Fint *ierr) { 
    int _wrap_py_return_val = 0;
    _wrap_py_return_val = MPI_Comm_rank(MPI_Comm_f2c(*arg_0), (int *)arg_1);
    *ierr = (MPI_Fint)_wrap_py_return_val;
}

_EXTERN_C_ void MPI_COMM_RANK(MPI_Fint *arg_0, MPI_Fint *arg_1, MPI_Fint *ierr) { 
    MPI_Comm_rank_fortran_wrapper(arg_0, arg_1, ierr);
}

_EXTERN_C_ void mpi_comm_rank(MPI_Fint *arg_0, MPI_Fint *arg_1, MPI_Fint *ierr) { 
    MPI_Comm_rank_fortran_wrapper(arg_0, arg_1, ierr);
}

_EXTERN_C_ void mpi_comm_rank_(MPI_Fint *arg_0, MPI_Fint *arg_1, MPI_Fint *ierr) { 
    MPI_Comm_rank_fortran_wrapper(arg_0, arg_1, ierr);
}

_EXTERN_C_ void mpi_comm_rank__(MPI_Fint *arg_0, MPI_Fint *arg_1, MPI_Fint *ierr) { 
    MPI_Comm_rank_fortran_wrapper(arg_0, arg_1, ierr);
}

/* ================= End Wrappers for MPI_Comm_rank ================= */


`
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

func TestFortranDetails(t *testing.T) {
	all := "{{fn f MPI_Wtime MPI_Recv MPI_Send MPI_Get_processor_name MPI_Waitany MPI_Waitsome MPI_Send_c MPI_Pcontrol MPI_Init MPI_Init_thread " +
		"MPI_Comm_set_name MPI_Info_set MPI_Info_get MPI_Pack_external_size MPI_Alltoallw MPI_Neighbor_alltoallw MPI_Type_hindexed MPI_Type_extent " +
		"MPI_Dist_graph_create MPI_Mrecv MPI_Op_create MPI_Comm_get_attr MPI_Comm_spawn MPI_T_init_thread MPI_Aint_add}}{{callfn}}{{endfn}}"
	out := genFortran(t, all, Options{PMPIInit: "PMPI_INIT"})
	for _, want := range []string{
		// Front matter.
		"#define WRAP_F_STATUS_SIZE MPI_F_STATUS_SIZE\n",
		"#define WRAP_F_CHARLEN size_t\n",
		"static _WRAP_THREAD_LOCAL wrap_fcall *wrap_fcall_pending = NULL;",
		// Functions returning a value return it to Fortran; MPI_Pcontrol
		// has no ierr.
		"_EXTERN_C_ double mpi_wtime_(void) { \n    return MPI_Wtime_fortran_wrapper();\n}",
		"_EXTERN_C_ MPI_Aint mpi_aint_add_(MPI_Aint *arg_0, MPI_Aint *arg_1) { \n    return MPI_Aint_add_fortran_wrapper(arg_0, arg_1);\n}",
		"_EXTERN_C_ void mpi_pcontrol_(MPI_Fint *arg_0) { \n    MPI_Pcontrol_fortran_wrapper(arg_0);\n}",
		"_wrap_py_return_val = MPI_Pcontrol(*arg_0);",
		// Choice buffers: MPI_BOTTOM and MPI_IN_PLACE.
		"_wrap_py_return_val = MPI_Send((const void *)wrap_f2c_buffer(arg_0), *arg_1, MPI_Type_f2c(*arg_2), *arg_3, *arg_4, MPI_Comm_f2c(*arg_5));",
		// Statuses, with MPI_F_STATUS_IGNORE.
		"if (arg_6 != MPI_F_STATUS_IGNORE) MPI_Status_f2c(arg_6, &temp_arg_6);",
		"(arg_6 == MPI_F_STATUS_IGNORE) ? MPI_STATUS_IGNORE : &temp_arg_6",
		"if (arg_6 != MPI_F_STATUS_IGNORE) MPI_Status_c2f(&temp_arg_6, arg_6);",
		// A status array: MPI_F_STATUSES_IGNORE, outcount statuses back.
		"(arg_4 == MPI_F_STATUSES_IGNORE) ? MPI_STATUSES_IGNORE : temp_arg_4",
		"for (wrap_i = 0; wrap_i < (*arg_2 == MPI_UNDEFINED ? 0 : *arg_2); wrap_i++) MPI_Status_c2f(&temp_arg_4[wrap_i], &arg_4[wrap_i * WRAP_F_STATUS_SIZE]);",
		// CHARACTER output with its hidden length after ierr.
		"static void MPI_Get_processor_name_fortran_wrapper(char *arg_0, MPI_Fint *arg_1, MPI_Fint *ierr, WRAP_F_CHARLEN arg_0_len) { ",
		"temp_arg_0 = wrap_f_outbuf(arg_0_len, 0);",
		"wrap_c2f_string(temp_arg_0, arg_0, arg_0_len);",
		"MPI_Get_processor_name_fortran_wrapper(arg_0, arg_1, ierr, arg_0_len);",
		// CHARACTER inputs: names lose their trailing blanks, Info keys
		// and values their leading ones too; char datarep[] is a string.
		"temp_arg_1 = wrap_f2c_string(arg_1, arg_1_len, 0);",
		"static void MPI_Info_set_fortran_wrapper(MPI_Fint *arg_0, char *arg_1, char *arg_2, MPI_Fint *ierr, WRAP_F_CHARLEN arg_1_len, WRAP_F_CHARLEN arg_2_len) { ",
		"temp_arg_2 = wrap_f2c_string(arg_2, arg_2_len, 1);",
		"temp_arg_3 = wrap_f_outbuf(arg_3_len, (long)*arg_2);",
		"static void MPI_Pack_external_size_fortran_wrapper(char *arg_0, MPI_Fint *arg_1, MPI_Fint *arg_2, MPI_Aint *arg_3, MPI_Fint *ierr, WRAP_F_CHARLEN arg_0_len) { ",
		// 1-based index and request array conversion.
		"if (*arg_2 != MPI_UNDEFINED && *arg_2 >= 0) (*arg_2)++;",
		"temp_arg_1[wrap_i] = MPI_Request_f2c(arg_1[wrap_i]);",
		"for (wrap_i = 0; wrap_i < wrap_n_arg_1; wrap_i++) arg_1[wrap_i] = MPI_Request_c2f(temp_arg_1[wrap_i]);",
		// Datatype arrays as long as the communicator or its topology.
		"wrap_n_arg_3 = (wrap_f2c_buffer(arg_0) == MPI_IN_PLACE ? 0 : wrap_comm_peers(MPI_Comm_f2c(*arg_8)));",
		"wrap_n_arg_7 = wrap_comm_peers(MPI_Comm_f2c(*arg_8));",
		"wrap_n_arg_3 = wrap_neighbors(MPI_Comm_f2c(*arg_8), 1);",
		"wrap_n_arg_7 = wrap_neighbors(MPI_Comm_f2c(*arg_8), 0);",
		"for (wrap_i = 0; wrap_i < wrap_n_arg_7; wrap_i++) temp_arg_7[wrap_i] = MPI_Type_f2c(arg_7[wrap_i]);",
		// MPI-1 INTEGER addresses.
		"for (wrap_i = 0; wrap_i < wrap_n_arg_2; wrap_i++) temp_arg_2[wrap_i] = (MPI_Aint)arg_2[wrap_i];",
		"*arg_1 = (MPI_Fint)temp_arg_1;",
		// MPI_UNWEIGHTED.
		"(const int *)wrap_f2c_weights(arg_5)",
		// MPI_Message in and out.
		"temp_arg_3 = MPI_Message_f2c(*arg_3);",
		"*arg_3 = MPI_Message_c2f(temp_arg_3);",
		// MPI_Init: no arguments in Fortran, delegated to the library's
		// Fortran binding (the -i one in a static library).
		"_EXTERN_C_ void mpi_init__(MPI_Fint *ierr) { \n    MPI_Init_fortran_wrapper(4, ierr);\n}",
		"#ifdef WRAP_F_SHARED\n#pragma weak PMPI_INIT\n#pragma weak pmpi_init\n#pragma weak pmpi_init_\n#pragma weak pmpi_init__\n#endif\n",
		"#else\n    wrap_fp = PMPI_INIT;\n#endif\n",
		"    if (wrap_in_fortran_pmpi > 0) {\n        /* called back by the MPI library's Fortran binding */\n        return PMPI_Init(arg_0, arg_1);\n    }\n",
		"_wrap_py_return_val = MPI_Init(&wrap_argc, &wrap_argv);",
		"    if (wrap_fcall_pending != NULL && wrap_fcall_pending->fn == wrap_fid_MPI_Init) {",
		"static void MPI_Init_thread_fortran_wrapper(int wrap_binding, MPI_Fint *arg_2, MPI_Fint *arg_3, MPI_Fint *ierr) { ",
		"_wrap_py_return_val = MPI_Init_thread(&wrap_argc, &wrap_argv, *arg_2, &temp_provided);",
		"*arg_3 = (int)*(MPI_Fint *)wrap_fc->a[1];",
		// Callbacks and attributes go to the library's Fortran binding;
		// the C view of the results is refreshed.
		"#pragma weak pmpi_op_create_\n",
		"wrap_fc.a[0] = (void *)arg_0;",
		"*arg_2 = MPI_Op_f2c(*(MPI_Fint *)wrap_fc->a[2]);",
		"_wrap_py_return_val = MPI_Comm_get_attr(MPI_Comm_f2c(*arg_0), *arg_1, (void *)arg_2, (int *)arg_3);",
		// MPI_Comm_spawn: CHARACTER command and argv, delegated.
		"static void MPI_Comm_spawn_fortran_wrapper(int wrap_binding, char *arg_0, char *arg_1, MPI_Fint *arg_2, MPI_Fint *arg_3, MPI_Fint *arg_4, MPI_Fint *arg_5, MPI_Fint *arg_6, MPI_Fint *arg_7, MPI_Fint *ierr, WRAP_F_CHARLEN arg_0_len, WRAP_F_CHARLEN arg_1_len) { ",
		"(char **)0",
		"wrap_fp(wrap_fc->a[0], wrap_fc->a[1], wrap_fc->a[2], wrap_fc->a[3], wrap_fc->a[4], wrap_fc->a[5], wrap_fc->a[6], wrap_fc->a[7], &wrap_ierr, wrap_fc->len[0], wrap_fc->len[1]);",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks:\n%s", want)
		}
	}
	// Large-count variants and MPI_T_* have no mpif.h binding.
	for _, fn := range []string{"MPI_Send_c", "MPI_T_init_thread"} {
		if strings.Contains(out, strings.ToLower(fn)+"_(") || !strings.Contains(out, "C Wrappers for "+fn+" ") {
			t.Errorf("%s: want a C wrapper and no Fortran binding", fn)
		}
	}
	// No handle array is left unconverted.
	if strings.Contains(out, "unconverted") {
		t.Error("a handle array is passed unconverted")
	}
}

func TestFortranManglings(t *testing.T) {
	out := genFortran(t, "{{fn f MPI_Comm_rank MPI_Init}}{{callfn}}{{endfn}}", Options{NoFrontMatter: true, FortranManglings: MangleUnderscore | MangleDoubleUnderscore})
	for _, name := range []string{"mpi_comm_rank_(", "mpi_comm_rank__(", "mpi_init_(", "mpi_init__("} {
		if !strings.Contains(out, "_EXTERN_C_ void "+name) {
			t.Errorf("no %s entry point", name)
		}
	}
	for _, name := range []string{"MPI_COMM_RANK(", "mpi_comm_rank(", "MPI_INIT("} {
		if strings.Contains(out, "_EXTERN_C_ void "+name) {
			t.Errorf("%s written, but its mangling was not asked for", name)
		}
	}
	// The binding numbers stay those of wrap.py's -i order.
	if !strings.Contains(out, "MPI_Init_fortran_wrapper(3, ierr);") || !strings.Contains(out, "MPI_Init_fortran_wrapper(4, ierr);") {
		t.Error("mpi_init_ and mpi_init__ pass bindings 3 and 4")
	}
}

// TestFortranAllFunctionsHandled: in both real headers, every parameter of
// every function with a Fortran binding is converted (no handle array of
// unknown length), and the delegated functions are the expected families.
func TestFortranAllFunctionsHandled(t *testing.T) {
	for _, m := range mpiImpls {
		t.Run(m.name, func(t *testing.T) {
			cc := m.compiler(t)
			src, err := Preprocess(context.Background(), cc, nil)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := ParseHeaderExcluding(src, nil)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := Generate(&b, fs, []Input{{"all.w", "{{fnall f}}{{callfn}}{{endfnall}}"}}, Options{Fortran: true}); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(b.String(), "unconverted") {
				for _, l := range strings.Split(b.String(), "\n") {
					if strings.Contains(l, "unconverted") {
						t.Errorf("%s", l)
					}
				}
			}
			var delegated []string
			for i := range fs {
				if fortranDelegated(&fs[i]) {
					delegated = append(delegated, fs[i].Name)
				}
			}
			for _, want := range []string{"MPI_Init", "MPI_Init_thread", "MPI_Op_create", "MPI_Comm_get_attr", "MPI_Comm_create_keyval", "MPI_Comm_spawn", "MPI_Grequest_start"} {
				if !slices.Contains(delegated, want) {
					t.Errorf("%s is not delegated", want)
				}
			}
			if len(delegated) > 40 {
				t.Errorf("%d delegated functions: %v", len(delegated), delegated)
			}
		})
	}
}

// Options.FortranEnter and FortranLeave surround every entry point's call
// of its binding, also of one returning a value (MPI_Aint_add); without
// them nothing is written.
func TestFortranEnterLeave(t *testing.T) {
	tmpl := "{{fn f MPI_Comm_rank MPI_Aint_add}}{{callfn}}{{endfn}}"
	out := genFortran(t, tmpl, Options{NoFrontMatter: true, FortranManglings: MangleUnderscore,
		FortranEnter: "ENTER();", FortranLeave: "LEAVE();"})
	for _, want := range []string{
		"    ENTER();\n    MPI_Comm_rank_fortran_wrapper(",
		"ierr);\n    LEAVE();\n}",
		"    ENTER();\n    MPI_Aint wrap_fret_ = MPI_Aint_add_fortran_wrapper(",
		"    LEAVE();\n    return wrap_fret_;\n}",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if plain := genFortran(t, tmpl, Options{NoFrontMatter: true, FortranManglings: MangleUnderscore}); strings.Contains(plain, "wrap_fret_") {
		t.Error("entry points changed without FortranEnter/Leave")
	}
}
