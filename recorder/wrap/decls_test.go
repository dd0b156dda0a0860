package wrap

import (
	"bytes"
	"context"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// parseOne parses a snippet that must declare exactly one function.
func parseOne(t *testing.T, src string) Func {
	t.Helper()
	fs, err := ParseHeader(src)
	if err != nil {
		t.Fatalf("ParseHeader: %v", err)
	}
	if len(fs) != 1 {
		t.Fatalf("got %d functions, want 1: %v", len(fs), fs)
	}
	return fs[0]
}

func paramTypes(f Func) []string {
	var ts []string
	for _, p := range f.Params {
		ts = append(ts, p.Type)
	}
	return ts
}

func TestParseHeaderForms(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		want  string   // Func.String()
		types []string // Param.Type of each parameter
	}{
		{"plain",
			"int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);",
			"int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)",
			[]string{"const void *", "int", "MPI_Datatype", "int", "int", "MPI_Comm"}},
		{"open mpi attributes",
			`__attribute__((visibility("default"))) int MPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
            __attribute__((__deprecated__("MPI_Attr_get was deprecated in MPI-2.0; use MPI_Comm_get_attr instead")));`,
			"int MPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)",
			[]string{"MPI_Comm", "int", "void *", "int *"}},
		{"mpich type-tag attribute left unexpanded",
			"int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) MPICH_ATTR_POINTER_WITH_TYPE_TAG(1,3);",
			"int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)", nil},
		{"mpich type-tag attribute expanded",
			"int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) __attribute__((pointer_with_type_tag(MPI,1,3)));",
			"int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)", nil},
		{"declspec leftover",
			"OMPI_DECLSPEC int MPI_Barrier(MPI_Comm comm);",
			"int MPI_Barrier(MPI_Comm comm)", []string{"MPI_Comm"}},
		{"deprecation macro leftover before the type",
			`__mpi_interface_deprecated__("gone") OMPI_DECLSPEC int MPI_Barrier(MPI_Comm comm);`,
			"int MPI_Barrier(MPI_Comm comm)", nil},
		{"extern and visibility",
			`extern __attribute__((visibility("default"))) int MPI_Barrier(MPI_Comm comm);`,
			"int MPI_Barrier(MPI_Comm comm)", nil},
		{"typedef function pointers, unnamed",
			"int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *, MPI_Comm_delete_attr_function *, int *, void *);",
			"int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *arg_0, MPI_Comm_delete_attr_function *arg_1, int *arg_2, void *arg_3)",
			[]string{"MPI_Comm_copy_attr_function *", "MPI_Comm_delete_attr_function *", "int *", "void *"}},
		{"user function",
			"int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op);",
			"int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)",
			[]string{"MPI_User_function *", "int", "MPI_Op *"}},
		{"raw function pointers",
			"int MPI_Xcb(void (*cb)(int, void *), int (*)(void), int f(double));",
			"int MPI_Xcb(void (*cb)(int, void *), int (*arg_1)(void), int f(double))",
			[]string{"void (*)(int, void *)", "int (*)(void)", "int (double)"}},
		{"arrays",
			"int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);",
			"int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)",
			[]string{"MPI_Group", "int", "int [][3]", "MPI_Group *"}},
		{"const arrays and unnamed arrays",
			"int MPI_Xa(const int [], const MPI_Datatype types[], char *argv[], char ***argvp);",
			"int MPI_Xa(const int arg_0[], const MPI_Datatype types[], char *argv[], char ***argvp)",
			[]string{"const int []", "const MPI_Datatype []", "char *[]", "char ***"}},
		{"unnamed plain",
			"int MPI_Comm_rank(MPI_Comm, int *);",
			"int MPI_Comm_rank(MPI_Comm arg_0, int *arg_1)", []string{"MPI_Comm", "int *"}},
		{"unnamed keyword types",
			"int MPI_Xk(unsigned int, const int, long long *, struct foo *, struct foo *bar);",
			"int MPI_Xk(unsigned int arg_0, const int arg_1, long long *arg_2, struct foo *arg_3, struct foo *bar)", nil},
		{"void", "int MPI_Finalize(void);", "int MPI_Finalize(void)", nil},
		{"empty parens", "int MPI_Finalize();", "int MPI_Finalize(void)", nil},
		{"double", "double MPI_Wtime(void);", "double MPI_Wtime(void)", nil},
		{"MPI_Aint return", "MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp);",
			"MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp)", []string{"MPI_Aint", "MPI_Aint"}},
		{"varargs", "int MPI_Pcontrol(const int level, ...);", "int MPI_Pcontrol(const int level, ...)", []string{"const int"}},
		{"multi-line with line markers",
			"# 1 \"/usr/include/mpi.h\" 1\nint MPI_Send(const void *buf,\n# 40 \"/usr/include/mpi.h\"\n    int count,\n    MPI_Datatype datatype, int dest,\n\tint tag, MPI_Comm comm)\n  ;\n",
			"int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)", nil},
		{"MPI-4 large count",
			"int MPI_Send_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);",
			"int MPI_Send_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)",
			[]string{"const void *", "MPI_Count", "MPI_Datatype", "int", "int", "MPI_Comm"}},
		{"session", "int MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session);",
			"int MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session)", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := parseOne(t, tc.src)
			if got := f.String(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if tc.types != nil && !reflect.DeepEqual(paramTypes(f), tc.types) {
				t.Errorf("types %q, want %q", paramTypes(f), tc.types)
			}
		})
	}
}

func TestParamDetails(t *testing.T) {
	f := parseOne(t, "int MPI_Xd(const void *buf, int ranges[][3], MPI_Status statuses[], MPI_Status *st, char ***argv, void (*cb)(int));")
	type row struct {
		Name, Base      string
		Const, Array    bool
		Pointers        int
		Dims, Compact   string
		FuncPtr, PtrLik bool
	}
	var got []row
	for _, p := range f.Params {
		got = append(got, row{p.Name, p.Base, p.Const, p.Array, p.Pointers, p.Dims, p.CompactType(), p.FuncPtr, p.IsPointerLike()})
	}
	want := []row{
		{"buf", "void", true, false, 1, "", "const void*", false, true},
		{"ranges", "int", false, true, 0, "[][3]", "int[][3]", false, true},
		{"statuses", "MPI_Status", false, true, 0, "[]", "MPI_Status[]", false, true},
		{"st", "MPI_Status", false, false, 1, "", "MPI_Status*", false, true},
		{"argv", "char", false, false, 3, "", "char***", false, true},
		{"cb", "void", false, false, 0, "", "void(*)(int)", true, true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
	if s := f.Params[1].Formal("arg_1"); s != "int arg_1[][3]" {
		t.Errorf("Formal = %q", s)
	}
	if s := f.Params[5].Formal("x"); s != "void (*x)(int)" {
		t.Errorf("Formal = %q", s)
	}
}

func TestParseHeaderSkipsAndOrder(t *testing.T) {
	src := `
# 1 "mpi.h"
typedef int MPI_Comm;
typedef int (MPI_Copy_function)(MPI_Comm, int, void *, void *, void *, int *);
typedef struct MPI_Status { int MPI_SOURCE; int MPI_TAG; } MPI_Status;
struct mpi_thing { int (*fn)(int); } MPI_thing_instance;
enum { MPI_IDENT, MPI_CONGRUENT };
extern int *MPI_F_STATUS_IGNORE;
extern MPI_Comm MPI_COMM_WORLD_value;
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status);
int PMPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status);
int MPIX_Comm_revoke(MPI_Comm comm);
int MPI_T_init_thread(int required, int *provided);
int MPI_T_finalize(void);
int MPI_Comm_spawn(const char *command, char *argv[], int maxprocs, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[]);
int MPI_Comm_spawn_multiple(int count, char *array_of_commands[], char **array_of_argv[], const int array_of_maxprocs[], const MPI_Info array_of_info[], int root, MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[]);
int MPI_Comm_c2f(MPI_Comm comm);
MPI_Comm MPI_Comm_f2c(int comm);
int MPI_Status_c2f(const MPI_Status *c_status, int *f_status);
int MPI_Status_f082f(const MPI_F08_status *f08_status, MPI_Fint *f_status);
int MPI_Status_f2f08(const MPI_Fint *f_status, MPI_F08_status *f08_status);
int MPI_Status_f082c(const MPI_F08_status *f08_status, MPI_Status *c_status);
static inline int MPI_helper_defined_inline(int x) { if (x) { return 1; } return 0; }
int MPI_Abort(MPI_Comm comm, int errorcode);
int MPI_Abort(MPI_Comm comm, int errorcode);
MPI_SOME_MACRO_CALL(1, 2);
int MPI_Pcontrol(const int level, ...);
`
	fs, err := ParseHeader(src)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fs {
		names = append(names, f.Name)
	}
	want := []string{"MPI_Recv", "MPI_Abort", "MPI_Pcontrol"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("got %v, want %v (header order, exclusions applied)", names, want)
	}
	if fs[0].File != "mpi.h" || fs[0].Line != 8 {
		t.Errorf("MPI_Recv located at %s:%d, want mpi.h:8", fs[0].File, fs[0].Line)
	}
	all, err := ParseHeaderExcluding(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 13 {
		var n []string
		for _, f := range all {
			n = append(n, f.Name)
		}
		t.Errorf("without exclusions got %d functions %v, want 13", len(all), n)
	}
}

func TestParseHeaderErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"", "no MPI function declarations found in the preprocessed mpi.h"},
		{"typedef int MPI_Comm;\nint PMPI_Send(void);\n", "no MPI function declarations found in the preprocessed mpi.h"},
		{"# 7 \"mpi.h\"\nint MPI_Send(const void *buf, int count;\n", "mpi.h:7: malformed declaration of MPI_Send: unbalanced parentheses"},
		{"# 3 \"mpi.h\"\n\nint MPI_Send(int, ..., int);\n", "mpi.h:4: malformed declaration of MPI_Send: '...' is not last"},
		{"int MPI_Send(int a, , int b);", "<mpi.h>:1: malformed declaration of MPI_Send, parameter 2: empty parameter"},
		{"/* open", "<mpi.h>:1: unterminated comment in preprocessed mpi.h"},
	}
	for _, tc := range tests {
		_, err := ParseHeader(tc.src)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseHeader(%q) error = %v, want %q", tc.src, err, tc.want)
		}
	}
}

func TestDump(t *testing.T) {
	fs, err := ParseHeader("int MPI_Comm_rank(MPI_Comm, int *rank);\ndouble MPI_Wtime(void);\nint MPI_Pcontrol(const int level, ...);\n")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Dump(&b, fs); err != nil {
		t.Fatal(err)
	}
	want := "int MPI_Comm_rank(MPI_Comm arg_0, int *rank)\ndouble MPI_Wtime(void)\nint MPI_Pcontrol(const int level, ...)\n"
	if b.String() != want {
		t.Errorf("Dump:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestSplitCommand(t *testing.T) {
	tests := map[string][]string{
		"mpicc":                           {"mpicc"},
		"  mpicc   -DFOO  ":               {"mpicc", "-DFOO"},
		`gcc -I'/opt/my mpi/include' -DX`: {"gcc", "-I/opt/my mpi/include", "-DX"},
		`gcc "-DY=\"a b\"" z\ y`:          {"gcc", `-DY="a b"`, "z y"},
	}
	for in, want := range tests {
		got, err := splitCommand(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("splitCommand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := splitCommand(`gcc 'open`); err == nil {
		t.Error("unterminated quote accepted")
	}
}

func TestPreprocessErrors(t *testing.T) {
	ctx := context.Background()
	_, err := Preprocess(ctx, "no-such-mpicc-xyz", nil)
	if err == nil || err.Error() != `preprocessing mpi.h: compiler "no-such-mpicc-xyz" not found in PATH (use -c to name the MPI compiler wrapper)` {
		t.Errorf("missing compiler: %v", err)
	}
	if _, err := Preprocess(ctx, "", nil); err == nil {
		t.Error("empty compiler accepted")
	}
	if _, err := exec.LookPath("gcc"); err == nil {
		// Plain gcc has no mpi.h on its default include path here.
		_, err := Preprocess(ctx, "gcc -DWRAP_TEST", []string{"/nonexistent-include"})
		if err == nil {
			t.Skip("gcc finds an mpi.h on its own")
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, `preprocessing mpi.h with "gcc -DWRAP_TEST": exit status 1: `) ||
			!strings.Contains(msg, "mpi.h") || strings.Contains(msg, "\n") {
			t.Errorf("failing compiler: %q", msg)
		}
	}
}
