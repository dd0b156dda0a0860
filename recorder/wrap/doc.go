// Package wrap is mpitrace's PMPI wrapper generator: a Go re-implementation of
// the engine of LLNL's wrap.py (https://github.com/LLNL/wrap).
//
// It has two halves:
//
//   - Declarations (decls.go, preprocess.go): [Preprocess] runs the MPI compiler
//     wrapper's preprocessor on "#include <mpi.h>" and [ParseHeader] extracts
//     every MPI_ function declaration from the result, in header order, minus
//     the families wrap.py leaves out ([DefaultExclusions]).
//
//   - Templates (lex.go, template.go, macros.go, pyre.go, frontmatter.go,
//     fortran.go):
//     [Generate] expands wrap.py ".w" templates ({{fn}}, {{fnall}},
//     {{callfn}}, {{sub}}, ...) against those declarations and writes C
//     wrappers that delegate to the PMPI_ entry points, optionally with
//     Fortran bindings ([Options.Fortran]) and thread-local reentry guards
//     ([Options.Guards]).
//
// The output has the shape wrap.py produces (the "C Wrappers for" banner
// comment, the _EXTERN_C_ macro, the _wrap_py_return_val variable, the
// WRAP_MPI_CALL_PREFIX/POSTFIX deprecation-warning pragmas of -w), so a
// template written for wrap.py works unchanged. Where wrap.py has known
// defects the engine deliberately differs; each difference is documented at
// the place it is implemented and summarised here:
//
//   - Errors are a single "file.w:LINE: message" line with a real line number
//     (wrap.py always prints line 0), and nothing is written to the output
//     when generation fails.
//   - Unclosed blocks, stray {{endfn}}-style tags and mismatched end tags are
//     errors (wrap.py silently accepts the first and fails late on the others).
//   - A stray "}}" in plain text is copied to the output (wrap.py stops with
//     "Unexpected token").
//   - In C mode, "//" and "/*" inside C string or character literals do not
//     start comments, and comment markers inside a macro are not comments.
//   - {{def}} at the top level of a file stays visible for the rest of that
//     file (wrap.py forgets it at the end of the chunk).
//   - The four-argument {{sub NEW OLD RE REPL}} form documented in wrap.py's
//     README is implemented alongside the three-argument form its code has.
//   - Formal parameters are named arg_0, arg_1, ... unless
//     [Options.HeaderNames] asks for wrap.py's behaviour of keeping the names
//     from mpi.h (wrap.py invents arg_N only for unnamed parameters).
//   - The reentry guard of -g is thread-local, and the guard's own PMPI call
//     is also covered by the -w pragmas.
//   - Python regular expressions are translated to Go's RE2 syntax; the
//     constructs RE2 cannot express (backreferences, lookaround) are reported
//     as errors rather than silently misbehaving.
//   - Output is deterministic: {{fnall}}/{{forallfn}} iterate in name order
//     (as recent wrap.py does), {{fn}}/{{foreachfn}} in the order written.
//   - Function lists may come from list values ({{fn f {{list A B}}}}) and a
//     trailing '?' marks a function as optional (from later wrap.py
//     versions); [Options.SkipUnknown] makes every name optional.
//   - Macro values are bounded in size, templates in nesting and expansion
//     work, so no input can exhaust memory or the stack.
//   - -f writes Fortran bindings that work (fortran.go has the details):
//     statuses with MPI_F_STATUS(ES)_IGNORE and MPI_STATUS_SIZE strides,
//     CHARACTER arguments with size_t hidden lengths and the MPI standard's
//     blank rules, MPI_Message, handle arrays sized by their count, the
//     communicator or its topology (MPI_Alltoallw), MPI_IN_PLACE and
//     MPI_BOTTOM, 1-based indices, MPI_Pcontrol without ierr. Functions that
//     cannot go through the C call (MPI_Init, MPI_Init_thread, callbacks,
//     attributes, ...) are passed by {{callfn}} to the MPI library's own
//     Fortran binding, and a library that calls back into the C function
//     (MPICH) is sent straight to PMPI: no recursion (wrap.py overflows the
//     stack in MPI_Init), each call seen once.
//   - The Fortran support code is written only with -f (wrap.py always
//     writes the PMPI_INIT declarations); [Options.FortranManglings] selects
//     the entry points.
//   - A function without parameters is declared "(void)", not "()".
//   - {{vardecl}}, which wrap.py's README sketches but wrap.py lacks,
//     declares wrapper-local variables (macros.go).
//   - Template errors are [SyntaxError] values.
//
// Known remaining differences from wrap.py running on Python 3: an empty
// regular-expression match right after a non-empty one is not replaced
// (Go, like Python before 3.7: {{sub abc '.*' x}} gives "x", not "xx"),
// and the regular-expression notes in pyre.go.
package wrap
