package wrap

import (
	"bytes"
	"strings"
	"testing"
)

const fortranTestHeader = testHeader + `
int MPI_Init(int *argc, char ***argv);
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Send_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Get_processor_name(char *name, int *resultlen);
int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status);
`

func genFortran(t *testing.T, tmpl string, opts Options) string {
	t.Helper()
	fs, err := ParseHeader(fortranTestHeader)
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
	out := genFortran(t, "{{fn f MPI_Wtime MPI_Recv MPI_Get_processor_name MPI_Waitany MPI_Send_c MPI_Pcontrol MPI_Init MPI_Init_thread}}{{callfn}}{{endfn}}",
		Options{PMPIInit: "PMPI_INIT"})
	for _, want := range []string{
		// Front matter.
		"#pragma weak pmpi_init_\n",
		"_EXTERN_C_ void PMPI_INIT(MPI_Fint *ierr);\n",
		// Functions returning a value return it to Fortran.
		"_EXTERN_C_ double mpi_wtime_(void) { \n    return MPI_Wtime_fortran_wrapper();\n}",
		// Statuses, with MPI_F_STATUS_IGNORE.
		"(arg_6 == MPI_F_STATUS_IGNORE) ? MPI_STATUS_IGNORE : &temp_arg_6",
		"if (arg_6 != MPI_F_STATUS_IGNORE) MPI_Status_c2f(&temp_arg_6, arg_6);",
		// CHARACTER output with its hidden length after ierr.
		"static void MPI_Get_processor_name_fortran_wrapper(char *arg_0, MPI_Fint *arg_1, MPI_Fint *ierr, int arg_0_len) { ",
		"temp_arg_0 = wrap_f2c_string(arg_0, arg_0_len, WRAP_F_STRING_MIN);",
		"wrap_c2f_string(temp_arg_0, arg_0, arg_0_len);",
		"MPI_Get_processor_name_fortran_wrapper(arg_0, arg_1, ierr, arg_0_len);",
		// 1-based index and request array conversion.
		"if (*arg_2 != MPI_UNDEFINED && *arg_2 >= 0) (*arg_2)++;",
		"temp_arg_1[wrap_i] = MPI_Request_f2c(arg_1[wrap_i]);",
		// Variadic: only the fixed argument.
		"_wrap_py_return_val = MPI_Pcontrol(*arg_0);",
		// MPI_Init: no arguments in Fortran, flag per binding, C wrapper
		// delegating to the Fortran PMPI binding.
		"static int fortran_init = 0;\n/* ================== C Wrappers for MPI_Init ",
		"_EXTERN_C_ void mpi_init__(MPI_Fint *ierr) { \n    fortran_init = 4;\n    MPI_Init_fortran_wrapper(ierr);\n}",
		"    if (fortran_init < 0) {\n        /* re-entered from the Fortran PMPI binding */\n        return PMPI_Init(arg_0, arg_1);\n    }\n",
		"        PMPI_INIT(&wrap_ierr);\n#endif /* !PIC */",
		"_wrap_py_return_val = MPI_Init(&argc, &argv);",
		"static void MPI_Init_thread_fortran_wrapper(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) { ",
		"        PMPI_INIT_THREAD(&wrap_required, &wrap_provided, &wrap_ierr);\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks:\n%s", want)
		}
	}
	// Large-count variants have no mpif.h binding.
	if strings.Contains(out, "mpi_send_c") || !strings.Contains(out, "C Wrappers for MPI_Send_c ") {
		t.Error("MPI_Send_c: want a C wrapper and no Fortran binding")
	}
}
