package wrap

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// testHeader is a small mpi.h stand-in covering the interesting shapes.
const testHeader = `
int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status);
int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Finalize(void);
double MPI_Wtime(void);
int MPI_Pcontrol(const int level, ...);
int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);
`

func testFuncs(t testing.TB) []Func {
	t.Helper()
	fs, err := ParseHeader(testHeader)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// gen1 expands one template named t.w and returns the output without the
// front matter.
func gen1(t *testing.T, tmpl string, opts Options) (string, error) {
	t.Helper()
	var b bytes.Buffer
	err := Generate(&b, testFuncs(t), []Input{{Name: "t.w", Text: tmpl}}, opts)
	if err != nil {
		if b.Len() != 0 {
			t.Errorf("output written despite error %v", err)
		}
		return "", err
	}
	prefix := ""
	if !opts.NoFrontMatter {
		prefix = frontMatter(opts)
	}
	if opts.NoDeprecationWarnings {
		prefix += deprecationMacros
	}
	out := b.String()
	if !strings.HasPrefix(out, prefix) {
		t.Fatalf("output does not start with the front matter:\n%s", out)
	}
	return out[len(prefix):], nil
}

func TestMacros(t *testing.T) {
	tests := []struct {
		name string
		tmpl string
		want string
		opts Options
	}{
		{"plain text", "int x; /* no macros */\n", "int x; /* no macros */\n", Options{}},
		{"iterator variable", "{{foreachfn f MPI_Send MPI_Wtime}}[{{f}}]{{endforeachfn}}", "[MPI_Send][MPI_Wtime]", Options{}},
		{"foreachfn keeps the written order", "{{foreachfn f MPI_Wtime MPI_Comm_rank MPI_Send}}{{f}} {{endforeachfn}}", "MPI_Wtime MPI_Comm_rank MPI_Send ", Options{}},
		{"forallfn iterates in name order", "{{forallfn f}}{{f}} {{endforallfn}}",
			"MPI_Comm_rank MPI_Finalize MPI_Group_range_incl MPI_Pcontrol MPI_Recv MPI_Send MPI_Wtime ", Options{}},
		{"forallfn exclusions", "{{forallfn f MPI_Send MPI_Recv MPI_Nonexistent}}{{f}} {{endforallfn}}",
			"MPI_Comm_rank MPI_Finalize MPI_Group_range_incl MPI_Pcontrol MPI_Wtime ", Options{}},
		{"ret_type and retType", "{{foreachfn f MPI_Wtime MPI_Send}}{{ret_type}}/{{retType}} {{endforeachfn}}", "double/double int/int ", Options{}},
		{"formals", "{{foreachfn f MPI_Comm_rank}}{{formals}}|{{formals 1}}|{{argTypeList}}{{endforeachfn}}",
			"MPI_Comm arg_0, int *arg_1|int *arg_1|(MPI_Comm arg_0, int *arg_1)", Options{}},
		{"formals with header names", "{{foreachfn f MPI_Comm_rank}}{{formals}}|{{args}}{{endforeachfn}}",
			"MPI_Comm comm, int *rank|comm, rank", Options{HeaderNames: true}},
		{"args and indices", "{{foreachfn f MPI_Send}}{{args}}|{{args 2}}|{{2}}|{{get_arg 5}}|{{get_arg}}|{{args -1}}|{{nargs}}|{{argList}}{{endforeachfn}}",
			"arg_0, arg_1, arg_2, arg_3, arg_4, arg_5|arg_2|arg_2|arg_5|arg_0, arg_1, arg_2, arg_3, arg_4, arg_5|arg_5|6|(arg_0, arg_1, arg_2, arg_3, arg_4, arg_5)", Options{}},
		{"types", "{{foreachfn f MPI_Recv MPI_Group_range_incl}}{{types}};{{types 0}}\n{{endforeachfn}}",
			"void*, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status*;void*\nMPI_Group, int, int[][3], MPI_Group*;MPI_Group\n", Options{}},
		{"no parameters", "{{foreachfn f MPI_Finalize}}[{{args}}][{{formals}}][{{nargs}}]{{argList}}{{endforeachfn}}", "[][][0]()", Options{}},
		{"variadic", "{{foreachfn f MPI_Pcontrol}}{{formals}}|{{args}}|{{types}}|{{nargs}}{{endforeachfn}}",
			"const int arg_0, ...|arg_0|const int, ...|1", Options{}},
		{"applyToType", "{{fn f MPI_Send}}{{applyToType MPI_Comm CHECK}}{{apply_to_type 'const void *' BUF}}{{endfn}}",
			"/* ================== C Wrappers for MPI_Send ================== */\n" +
				"_EXTERN_C_ int PMPI_Send(const void *arg_0, int arg_1, MPI_Datatype arg_2, int arg_3, int arg_4, MPI_Comm arg_5);\n" +
				"_EXTERN_C_ int MPI_Send(const void *arg_0, int arg_1, MPI_Datatype arg_2, int arg_3, int arg_4, MPI_Comm arg_5) { \n" +
				"    int _wrap_py_return_val = 0;\n" +
				"CHECK(arg_5);\nBUF(arg_0);\n" +
				"    return _wrap_py_return_val;\n}\n\n", Options{}},
		{"fn skeleton", "{{fn FOO MPI_Comm_rank}}\n    wrapper_for({{FOO}});\n    {{callfn}}\n{{endfn}}",
			"/* ================== C Wrappers for MPI_Comm_rank ================== */\n" +
				"_EXTERN_C_ int PMPI_Comm_rank(MPI_Comm arg_0, int *arg_1);\n" +
				"_EXTERN_C_ int MPI_Comm_rank(MPI_Comm arg_0, int *arg_1) { \n" +
				"    int _wrap_py_return_val = 0;\n" +
				"\n    wrapper_for(MPI_Comm_rank);\n    _wrap_py_return_val = PMPI_Comm_rank(arg_0, arg_1);\n" +
				"    return _wrap_py_return_val;\n}\n\n", Options{}},
		{"fn returning double without parameters", "{{fn f MPI_Wtime}}{{callfn}} {{ret_val}} {{returnVal}}{{endfn}}",
			"/* ================== C Wrappers for MPI_Wtime ================== */\n" +
				"_EXTERN_C_ double PMPI_Wtime(void);\n" +
				"_EXTERN_C_ double MPI_Wtime(void) { \n" +
				"    double _wrap_py_return_val = 0;\n" +
				"_wrap_py_return_val = PMPI_Wtime(); _wrap_py_return_val _wrap_py_return_val\n" +
				"    return _wrap_py_return_val;\n}\n\n", Options{}},
		{"variadic wrapper forwards the fixed arguments", "{{fn f MPI_Pcontrol}}{{callfn}}\n{{endfn}}",
			"/* ================== C Wrappers for MPI_Pcontrol ================== */\n" +
				"_EXTERN_C_ int PMPI_Pcontrol(const int arg_0, ...);\n" +
				"_EXTERN_C_ int MPI_Pcontrol(const int arg_0, ...) { \n" +
				"    int _wrap_py_return_val = 0;\n" +
				"_wrap_py_return_val = PMPI_Pcontrol(arg_0);\n" +
				"    return _wrap_py_return_val;\n}\n\n", Options{}},
		{"guards", "{{fn f MPI_Finalize}}{{callfn}}\n{{endfn}}",
			"/* ================== C Wrappers for MPI_Finalize ================== */\n" +
				"_EXTERN_C_ int PMPI_Finalize(void);\n" +
				"_EXTERN_C_ int MPI_Finalize(void) { \n" +
				"    int _wrap_py_return_val = 0;\n" +
				"    if (in_wrapper) return PMPI_Finalize();\n" +
				"    in_wrapper = 1;\n" +
				"_wrap_py_return_val = PMPI_Finalize();\n" +
				"    in_wrapper = 0;\n" +
				"    return _wrap_py_return_val;\n}\n\n", Options{Guards: true}},
		{"no deprecation warnings", "{{fn f MPI_Finalize}}{{callfn}}\n{{endfn}}",
			"/* ================== C Wrappers for MPI_Finalize ================== */\n" +
				"_EXTERN_C_ int PMPI_Finalize(void);\n" +
				"_EXTERN_C_ int MPI_Finalize(void) { \n" +
				"    int _wrap_py_return_val = 0;\n" +
				"    if (in_wrapper) {\nWRAP_MPI_CALL_PREFIX\n        _wrap_py_return_val = PMPI_Finalize();\nWRAP_MPI_CALL_POSTFIX\n        return _wrap_py_return_val;\n    }\n" +
				"    in_wrapper = 1;\n" +
				"WRAP_MPI_CALL_PREFIX\n_wrap_py_return_val = PMPI_Finalize();\nWRAP_MPI_CALL_POSTFIX\n" +
				"    in_wrapper = 0;\n" +
				"    return _wrap_py_return_val;\n}\n\n", Options{Guards: true, NoDeprecationWarnings: true}},
		{"fnall with exclusions", "{{fnall f MPI_Send MPI_Recv MPI_Comm_rank MPI_Finalize MPI_Pcontrol MPI_Group_range_incl}}{{endfnall}}",
			"/* ================== C Wrappers for MPI_Wtime ================== */\n" +
				"_EXTERN_C_ double PMPI_Wtime(void);\n" +
				"_EXTERN_C_ double MPI_Wtime(void) { \n" +
				"    double _wrap_py_return_val = 0;\n" +
				"    return _wrap_py_return_val;\n}\n\n", Options{}},
		{"fileno and fn_num", "{{fileno}} {{fn_num}} {{fn_num}} {{forallfn f MPI_Send MPI_Recv MPI_Comm_rank MPI_Finalize MPI_Pcontrol}}{{f}}={{fn_num}} {{endforallfn}}",
			"0 0 1 MPI_Group_range_incl=2 MPI_Wtime=3 ", Options{}},
		{"sub three arguments", "{{foreachfn foo MPI_Send}}{{sub {{foo}} '^MPI_' NQJ_}} {{sub {{types}} '^(const )?(\\w+)\\*$' '\\g<2>_ptr'}}{{endforeachfn}}",
			"NQJ_Send void_ptr, int, MPI_Datatype, int, int, MPI_Comm", Options{}},
		{"sub with groups and escapes", `{{sub "MPI_Comm_rank" '(?P<pre>MPI)_(\w+?)_(\w+)' '\3-\2-\g<pre>\t\\'}}`, "rank-Comm-MPI\t\\", Options{}},
		{"sub four arguments, README form", "{{forallfn foo MPI_Send MPI_Recv MPI_Comm_rank MPI_Finalize MPI_Pcontrol MPI_Group_range_incl}}{{sub nqjfoo foo '^MPI_' NQJ_}}{{nqjfoo}}{{endforallfn}}",
			"NQJ_Wtime", Options{}},
		{"sub four arguments on literal text", "{{sub x 'not a name' ' ' _}}{{x}}", "not_a_name", Options{}},
		{"def", "{{def greeting hello}}{{greeting}} {{def l {{list a b}}}}{{l}} {{l 1}}", "hello a, b b", Options{}},
		{"def at top level lasts for the file", "{{def x 1}}\n{{x}}{{foreachfn f MPI_Send}}{{x}}{{def x 2}}{{x}}{{endforeachfn}}{{x}}", "\n1121", Options{}},
		{"def in a body is per function", "{{foreachfn f MPI_Send MPI_Recv}}{{def n {{f}}}}{{n}} {{endforeachfn}}", "MPI_Send MPI_Recv ", Options{}},
		{"list", "{{list a {{list b c}} 'd e'}}", "a, b, c, d e", Options{}},
		{"filter", "{{foreachfn f MPI_Recv}}{{filter '^MPI_' {{types}}}}|{{filter 'arg_[05]' {{args}}}}{{endforeachfn}}",
			"MPI_Datatype, MPI_Comm, MPI_Status*|arg_0, arg_5", Options{}},
		{"zip", "{{zip {{list a b c}} {{list 1 2}}}}", "a 1, b 2", Options{}},
		{"zip builds a prototype", "{{foreachfn f MPI_Comm_rank}}{{ret_type}} X({{zip {{types}} {{args}}}});{{endforeachfn}}", "int X(MPI_Comm arg_0, int* arg_1);", Options{}},
		{"quoting", `{{list 'a b' "c d" 'e"f' "g'h" '\d+' plain}}`, `a b, c d, e"f, g'h, \d+, plain`, Options{}},
		{"quoted macro name", "{{'fn_num'}}", "0", Options{}},
		{"macro spanning lines", "{{list\n  a\n  b}}", "a, b", Options{}},
		{"nested body macros", "{{fn f MPI_Finalize}}{{foreachfn g MPI_Wtime MPI_Send}}/* {{f}} sees {{g}} */ {{g}}:{{f}} {{endforeachfn}}{{endfn}}",
			"/* ================== C Wrappers for MPI_Finalize ================== */\n" +
				"_EXTERN_C_ int PMPI_Finalize(void);\n" +
				"_EXTERN_C_ int MPI_Finalize(void) { \n" +
				"    int _wrap_py_return_val = 0;\n" +
				"/* {{f}} sees {{g}} */ MPI_Wtime:MPI_Finalize /* {{f}} sees {{g}} */ MPI_Send:MPI_Finalize \n" +
				"    return _wrap_py_return_val;\n}\n\n", Options{}},
		{"callfn visible in nested foreachfn", "{{fn f MPI_Finalize}}{{foreachfn g MPI_Wtime}}{{callfn}}{{endforeachfn}}{{endfn}}",
			"/* ================== C Wrappers for MPI_Finalize ================== */\n" +
				"_EXTERN_C_ int PMPI_Finalize(void);\n" +
				"_EXTERN_C_ int MPI_Finalize(void) { \n" +
				"    int _wrap_py_return_val = 0;\n" +
				"_wrap_py_return_val = PMPI_Finalize();\n" +
				"    return _wrap_py_return_val;\n}\n\n", Options{}},
		{"macros in comments are left alone", "/* {{nosuch}} */ // {{nosuch}}\n{{fn_num}}", "/* {{nosuch}} */ // {{nosuch}}\n0", Options{}},
		{"multi-line comment", "/*\n * {{x}}\n */{{fn_num}}", "/*\n * {{x}}\n */0", Options{}},
		{"comment markers in C strings are not comments", `printf("http://x {{fn_num}}"); puts('/'); /* {{y}} */`, `printf("http://x 0"); puts('/'); /* {{y}} */`, Options{}},
		{"macros in string literals expand", `{{foreachfn f MPI_Send}}printf("{{f}} took %f\n", t);{{endforeachfn}}`, `printf("MPI_Send took %f\n", t);`, Options{}},
		{"-s expands macros in comments", "/* {{fn_num}} */ // {{fn_num}}", "/* 0 */ // 1", Options{NoFrontMatter: true}},
		{"stray }} is text", "int a[1][1] = {{0}};\nif (x) { if (y) { z(); }}", "", Options{}},
		{"stray close braces only", "if (x) { if (y) { z(); }}\n", "if (x) { if (y) { z(); }}\n", Options{}},
		{"optional functions", "{{fn f MPI_Send_c?}}{{endfn}}{{foreachfn f MPI_Wtime MPI_Send_c?}}{{f}}{{endforeachfn}}", "MPI_Wtime", Options{}},
		{"skip unknown", "{{foreachfn f MPI_Send_c MPI_Wtime MPI_Session_init}}{{f}}{{endforeachfn}}", "MPI_Wtime", Options{SkipUnknown: true}},
		{"function names from a list", "{{foreachfn f {{list MPI_Wtime MPI_Finalize}}}}{{f}} {{endforeachfn}}", "MPI_Wtime MPI_Finalize ", Options{}},
		{"vardecl", "{{fn f MPI_Comm_rank MPI_Finalize}}{{vardecl double t0 t1}} {{vardecl 'MPI_Request *' r buf[16]}}\n{{t0}}={{t1}};{{r}}={{buf}};{{endfn}}",
			"/* ================== C Wrappers for MPI_Comm_rank ================== */\n" +
				"_EXTERN_C_ int PMPI_Comm_rank(MPI_Comm arg_0, int *arg_1);\n" +
				"_EXTERN_C_ int MPI_Comm_rank(MPI_Comm arg_0, int *arg_1) { \n" +
				"    int _wrap_py_return_val = 0;\n" +
				"double _wrap_var_t0; double _wrap_var_t1; MPI_Request *_wrap_var_r; MPI_Request *_wrap_var_buf[16];\n" +
				"_wrap_var_t0=_wrap_var_t1;_wrap_var_r=_wrap_var_buf;\n" +
				"    return _wrap_py_return_val;\n}\n\n" +
				"/* ================== C Wrappers for MPI_Finalize ================== */\n" +
				"_EXTERN_C_ int PMPI_Finalize(void);\n" +
				"_EXTERN_C_ int MPI_Finalize(void) { \n" +
				"    int _wrap_py_return_val = 0;\n" +
				"double _wrap_var_t0; double _wrap_var_t1; MPI_Request *_wrap_var_r; MPI_Request *_wrap_var_buf[16];\n" +
				"_wrap_var_t0=_wrap_var_t1;_wrap_var_r=_wrap_var_buf;\n" +
				"    return _wrap_py_return_val;\n}\n\n", Options{}},
		{"vardecl names live in their wrapper only", "{{fn f MPI_Finalize}}{{vardecl int n}}{{endfn}}{{def n outside}}{{n}}",
			"/* ================== C Wrappers for MPI_Finalize ================== */\n" +
				"_EXTERN_C_ int PMPI_Finalize(void);\n" +
				"_EXTERN_C_ int MPI_Finalize(void) { \n" +
				"    int _wrap_py_return_val = 0;\n" +
				"int _wrap_var_n;\n" +
				"    return _wrap_py_return_val;\n}\n\noutside", Options{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gen1(t, tc.tmpl, tc.opts)
			if tc.name == "stray }} is text" {
				// "{{0}}" is a macro (the first argument), so this one fails.
				if err == nil || err.Error() != "t.w:1: {{0}} names a function argument but is used outside fn, fnall, foreachfn and forallfn" {
					t.Errorf("error = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestFrontMatter(t *testing.T) {
	var b bytes.Buffer
	if err := Generate(&b, testFuncs(t), []Input{{"a.w", "A{{fileno}}\n"}, {"b.w", "B{{fileno}}\n"}}, Options{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, baseFrontMatter) || !strings.HasSuffix(out, "A0\nB1\n") {
		t.Errorf("unexpected output:\n%s", out)
	}
	if strings.Contains(out, "in_wrapper") || strings.Contains(out, "pmpi_init") {
		t.Errorf("guard or Fortran declarations without -g/-f:\n%s", out)
	}
	b.Reset()
	if err := Generate(&b, testFuncs(t), []Input{{"a.w", ""}}, Options{Guards: true, Fortran: true}); err != nil {
		t.Fatal(err)
	}
	out = b.String()
	for _, want := range []string{"#include <mpi.h>", "#define _EXTERN_C_ extern \"C\"", "static _WRAP_THREAD_LOCAL int in_wrapper = 0;", "_Thread_local",
		"static WRAP_UNUSED void *wrap_f2c_buffer(const void *p) {", "_EXTERN_C_ void *MPIR_F_MPI_IN_PLACE WRAP_WEAK;"} {
		if !strings.Contains(out, want) {
			t.Errorf("front matter lacks %q", want)
		}
	}
}

func TestDeterministic(t *testing.T) {
	tmpl := "{{fnall f}}{{callfn}}{{endfnall}}{{forallfn f}}{{f}}{{fn_num}}{{endforallfn}}"
	first, err := gen1(t, tmpl, Options{Fortran: true, Guards: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		again, _ := gen1(t, tmpl, Options{Fortran: true, Guards: true})
		if again != first {
			t.Fatal("output differs between runs")
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name, tmpl, want string
		opts             Options
	}{
		{"unknown macro", "line 1\n\n{{nosuch}}", "t.w:3: unknown macro 'nosuch'", Options{}},
		{"unknown macro in a function", "{{fn f MPI_Send}}\n{{nosuch}}\n{{endfn}}", "t.w:2: unknown macro 'nosuch' (while expanding MPI_Send)", Options{}},
		{"unknown function", "\n{{fn f MPI_Nope}}{{endfn}}", "t.w:2: MPI_Nope is not an MPI function declared in mpi.h", Options{}},
		{"unknown function in foreachfn", "{{foreachfn f MPI_Send\n MPI_Nope}}{{endforeachfn}}", "t.w:1: MPI_Nope is not an MPI function declared in mpi.h", Options{}},
		{"index out of range", "{{foreachfn f MPI_Send}}\n\n{{args 9}}{{endforeachfn}}", "t.w:3: index 9 out of range for 'args' (6 elements) (while expanding MPI_Send)", Options{}},
		{"numeric macro out of range", "{{foreachfn f MPI_Wtime}}{{0}}{{endforeachfn}}", "t.w:1: index 0 out of range for 'args' (0 elements) (while expanding MPI_Wtime)", Options{}},
		{"bad index", "{{foreachfn f MPI_Send}}{{formals x}}{{endforeachfn}}", "t.w:1: invalid index 'x' into 'formals' (while expanding MPI_Send)", Options{}},
		{"too many indices", "{{foreachfn f MPI_Send}}{{types 1 2}}{{endforeachfn}}", "t.w:1: 'types' takes at most one argument, an index (while expanding MPI_Send)", Options{}},
		{"index macro with arguments", "{{foreachfn f MPI_Send}}{{1 x}}{{endforeachfn}}", "t.w:1: {{1}} takes no arguments (while expanding MPI_Send)", Options{}},
		{"argument outside a function", "\n{{1}}", "t.w:2: {{1}} names a function argument but is used outside fn, fnall, foreachfn and forallfn", Options{}},
		{"scalar with arguments", "{{foreachfn f MPI_Send}}{{ret_type 1}}{{endforeachfn}}", "t.w:1: 'ret_type' is a string and takes no arguments (while expanding MPI_Send)", Options{}},
		{"callfn outside fn", "{{foreachfn f MPI_Send}}{{callfn}}{{endforeachfn}}", "t.w:1: unknown macro 'callfn' (while expanding MPI_Send)", Options{}},
		{"unclosed block", "x\n{{fn f MPI_Send}}\n{{callfn}}\n", "t.w:2: {{fn}} is never closed: missing {{endfn}}", Options{}},
		{"unclosed inner block", "{{fnall f}}\n{{foreachfn g MPI_Send}}\n{{endfnall}}", "t.w:3: {{endfnall}} does not close {{foreachfn}} opened at line 2 (expected {{endforeachfn}})", Options{}},
		{"stray end tag", "\n\n{{endforallfn}}", "t.w:3: {{endforallfn}} without a matching {{forallfn}}", Options{}},
		{"unterminated macro", "a\n{{list a b\n", "t.w:2: unterminated macro: '{{' without '}}'", Options{}},
		{"unterminated nested macro", "{{list {{list a}}\n{{list b", "t.w:2: unterminated macro: '{{' without '}}'", Options{}},
		{"empty macro", "\n{{ }}", "t.w:2: empty macro '{{}}'", Options{}},
		{"nested macro as name", "{{{{list a}}}}", "t.w:1: a macro name must be a word, not a nested macro", Options{}},
		{"unterminated quote", "{{list\n 'abc}}\n", "t.w:2: unterminated quoted string in macro", Options{}},
		{"unterminated comment", "x\n/* {{fn_num}}\n", "t.w:2: unterminated /* comment", Options{}},
		{"body macro as argument", "{{list {{fn f MPI_Send}}}}", "t.w:1: {{fn}} has a body and cannot be used inside another macro", Options{}},
		{"end tag as argument", "{{fn f MPI_Send}}{{list {{endfn}}}}{{endfn}}", "t.w:1: {{endfn}} cannot be used inside another macro", Options{}},
		{"fn without iterator", "{{fn}}{{endfn}}", "t.w:1: {{fn}} needs an iterator variable name, then function names", Options{}},
		{"bad regexp", "\n{{sub abc 'a(b' x}}", "t.w:2: bad regular expression 'a(b': missing closing ): `a(b`", Options{}},
		{"lookahead", "{{filter 'MPI_(?=S)' {{list a}}}}", "t.w:1: bad regular expression 'MPI_(?=S)': lookahead and lookbehind assertions are not supported by Go regular expressions", Options{}},
		{"backreference", `{{sub abc '(a)\1' x}}`, `t.w:1: bad regular expression '(a)\1': backreferences (\1) are not supported by Go regular expressions`, Options{}},
		{"bad group in replacement", `{{sub abc '(a)' '\2'}}`, `t.w:1: invalid group reference \2 in replacement '\2'`, Options{}},
		{"bad escape in replacement", `{{sub abc 'a' '\q'}}`, `t.w:1: bad escape \q in replacement '\q'`, Options{}},
		{"sub argument count", "{{sub a b}}", "t.w:1: 'sub' takes 3 arguments (STRING RE REPL) or 4 (NEW OLD RE REPL), got 2", Options{}},
		{"sub list regexp", "{{sub a {{list b}} c}}", "t.w:1: the regular expression of 'sub' must be a string, not a list", Options{}},
		{"def argument count", "{{def a}}", "t.w:1: 'def' takes exactly 2 arguments, a name and a value (got 1)", Options{}},
		{"def list name", "{{def {{list a}} b}}", "t.w:1: the name given to 'def' must be a word, not a list", Options{}},
		{"zip of strings", "{{zip a b}}", "t.w:1: the arguments of 'zip' must be lists", Options{}},
		{"filter of a string", "{{filter a b}}", "t.w:1: the second argument of 'filter' must be a list, not a string", Options{}},
		{"fn_num with arguments", "{{fn_num 3}}", "t.w:1: 'fn_num' takes no arguments", Options{}},
		{"applyToType arguments", "{{foreachfn f MPI_Send}}{{applyToType MPI_Comm}}{{endforeachfn}}", "t.w:1: 'applyToType' takes 2 arguments, a type and a macro or function name (while expanding MPI_Send)", Options{}},
		{"vardecl outside a wrapper", "\n{{vardecl int x}}", "t.w:2: 'vardecl' can only be used in the body of fn or fnall", Options{}},
		{"vardecl in foreachfn", "{{foreachfn f MPI_Send}}{{vardecl int x}}{{endforeachfn}}", "t.w:1: 'vardecl' can only be used in the body of fn or fnall (while expanding MPI_Send)", Options{}},
		{"vardecl twice", "{{fn f MPI_Send}}{{vardecl int x}}\n{{vardecl long x}}{{endfn}}", "t.w:2: 'vardecl' cannot declare 'x': the name is already defined in this wrapper (while expanding MPI_Send)", Options{}},
		{"vardecl of a parameter macro", "{{fn f MPI_Send}}{{vardecl int args}}{{endfn}}", "t.w:1: 'vardecl' cannot declare 'args': the name is already defined in this wrapper (while expanding MPI_Send)", Options{}},
		{"vardecl of a macro name", "{{fn f MPI_Send}}{{vardecl int sub}}{{endfn}}", "t.w:1: 'vardecl' cannot declare 'sub': it is the name of a macro (while expanding MPI_Send)", Options{}},
		{"vardecl bad name", "{{fn f MPI_Send}}{{vardecl int 2x}}{{endfn}}", "t.w:1: '2x' is not a variable name 'vardecl' can declare (while expanding MPI_Send)", Options{}},
		{"vardecl bad type", "{{fn f MPI_Send}}{{vardecl 'int (*)(void)' f}}{{endfn}}", "t.w:1: 'int (*)(void)' is not a type 'vardecl' can declare (a type name, then any '*') (while expanding MPI_Send)", Options{}},
		{"vardecl without names", "{{fn f MPI_Send}}{{vardecl int}}{{endfn}}", "t.w:1: 'vardecl' takes a type and at least one variable name (got 1 arguments) (while expanding MPI_Send)", Options{}},
		{"error in a later line of a body", "{{fn f MPI_Send MPI_Recv}}\nok\n{{get_arg 6}}\n{{endfn}}", "t.w:3: index 6 out of range for 'get_arg' (6 elements) (while expanding MPI_Send)", Options{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gen1(t, tc.tmpl, tc.opts)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tc.want)
			}
		})
	}
}

func TestSyntaxErrorType(t *testing.T) {
	_, err := gen1(t, "\n\n{{nosuch}}", Options{})
	var se *SyntaxError
	if !errors.As(err, &se) || se.File != "t.w" || se.Line != 3 || se.Msg != "unknown macro 'nosuch'" {
		t.Errorf("error %#v", err)
	}
}

func TestErrorNamesItsFile(t *testing.T) {
	var b bytes.Buffer
	err := Generate(&b, testFuncs(t), []Input{{"good.w", "{{fn_num}}\n"}, {"bad.w", "\n\n{{oops}}"}}, Options{})
	if err == nil || err.Error() != "bad.w:3: unknown macro 'oops'" || b.Len() != 0 {
		t.Errorf("error %v, output %q", err, b.String())
	}
	err = Generate(&b, testFuncs(t), []Input{{"good.w", "{{fn_num}}\n"}, {"bad.w", "{{fn f"}}, Options{})
	if err == nil || err.Error() != "bad.w:1: unterminated macro: '{{' without '}}'" || b.Len() != 0 {
		t.Errorf("error %v, output %q", err, b.String())
	}
	err = Generate(&b, testFuncs(t), nil, Options{PMPIInit: "pmpi_start"})
	if err == nil || err.Error() != `pmpi_init binding "pmpi_start" must be one of PMPI_INIT, pmpi_init, pmpi_init_, pmpi_init__` {
		t.Errorf("error %v", err)
	}
}

func TestNestingLimit(t *testing.T) {
	for _, tmpl := range []string{
		strings.Repeat("{{list ", 100000),
		strings.Repeat("{{foreachfn f MPI_Send}}", 100000),
	} {
		_, err := gen1(t, tmpl, Options{})
		if err == nil || !strings.HasSuffix(err.Error(), "macros nested more than 500 deep") {
			t.Errorf("error = %v", err)
		}
	}
}

func TestLimits(t *testing.T) {
	defer func(v, s int) { maxValueBytes, maxSteps = v, s }(maxValueBytes, maxSteps)
	maxSteps = 100000
	_, err := gen1(t, strings.Repeat("{{forallfn f}}", 8)+"x"+strings.Repeat("{{endforallfn}}", 8), Options{})
	if err == nil || err.Error() != "t.w:1: template expansion exceeds 100000 steps (while expanding MPI_Group_range_incl)" {
		t.Errorf("error = %v", err)
	}
	maxValueBytes = 1000
	tmpl := "{{def a xxxxxxxxxx}}" + strings.Repeat("{{def a {{list {{a}} {{a}}}}}}", 12)
	_, err = gen1(t, tmpl, Options{})
	if err == nil || !strings.Contains(err.Error(), "exceeds 1000 bytes") {
		t.Errorf("error = %v", err)
	}
}
