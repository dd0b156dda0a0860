package wrap

import "strings"

// frontMatter is what wrap.py writes before the first template unless -s is
// given: the includes, the _EXTERN_C_ macro (extern "C" when compiled as
// C++), the optional WRAP_MPI_CALL_PREFIX/POSTFIX hooks, then the reentry
// guard flag (-g) and the Fortran support code (-f).
func frontMatter(opts Options) string {
	var b strings.Builder
	b.WriteString(baseFrontMatter)
	if opts.Guards {
		b.WriteString(guardFrontMatter)
	}
	if opts.Fortran {
		b.WriteString(fortranFrontMatter)
	}
	return b.String()
}

const baseFrontMatter = `
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef _EXTERN_C_
#ifdef __cplusplus
#define _EXTERN_C_ extern "C"
#else /* __cplusplus */
#define _EXTERN_C_
#endif /* __cplusplus */
#endif /* _EXTERN_C_ */

/* Hooks around the MPI calls the wrappers make. Compile with
 * -DWRAP_DISABLE_MPI_DEPRECATION_WARNINGS (or generate with -w) to silence
 * deprecation warnings for wrapped MPI functions. */
#ifndef WRAP_MPI_CALL_PREFIX
#if defined(WRAP_DISABLE_MPI_DEPRECATION_WARNINGS) && defined(__clang__)
#define WRAP_MPI_CALL_PREFIX _Pragma("clang diagnostic push") _Pragma("clang diagnostic ignored \"-Wdeprecated-declarations\"")
#define WRAP_MPI_CALL_POSTFIX _Pragma("clang diagnostic pop")
#elif defined(WRAP_DISABLE_MPI_DEPRECATION_WARNINGS) && defined(__GNUC__)
#define WRAP_MPI_CALL_PREFIX _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wdeprecated-declarations\"")
#define WRAP_MPI_CALL_POSTFIX _Pragma("GCC diagnostic pop")
#else
#define WRAP_MPI_CALL_PREFIX
#define WRAP_MPI_CALL_POSTFIX
#endif
#endif /* WRAP_MPI_CALL_PREFIX */

`

// guardFrontMatter declares the reentry flag of -g. Unlike wrap.py's
// process-wide "static int in_wrapper", it is thread-local, so that under
// MPI_THREAD_MULTIPLE one thread's wrapper does not make another thread's
// calls bypass theirs.
const guardFrontMatter = `#ifndef _WRAP_THREAD_LOCAL
#if defined(__cplusplus) && __cplusplus >= 201103L
#define _WRAP_THREAD_LOCAL thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define _WRAP_THREAD_LOCAL _Thread_local
#else
#define _WRAP_THREAD_LOCAL __thread
#endif
#endif /* _WRAP_THREAD_LOCAL */
static _WRAP_THREAD_LOCAL int in_wrapper = 0;

`

// deprecationMacros is written for -w (even with -s, as wrap.py does): it
// makes WRAP_MPI_CALL_PREFIX/POSTFIX silence -Wdeprecated-declarations on
// GCC >= 4.6 and clang.
const deprecationMacros = `/* -w: silence deprecation warnings for the MPI calls made by the wrappers:
 * deprecated MPI functions must be wrapped too. GCC >= 4.6 and clang only. */
#undef WRAP_MPI_CALL_PREFIX
#undef WRAP_MPI_CALL_POSTFIX
#if defined(__clang__)
#define WRAP_MPI_CALL_PREFIX _Pragma("clang diagnostic push") _Pragma("clang diagnostic ignored \"-Wdeprecated-declarations\"")
#define WRAP_MPI_CALL_POSTFIX _Pragma("clang diagnostic pop")
#elif defined(__GNUC__) && ((__GNUC__ == 4 && __GNUC_MINOR__ >= 6) || __GNUC__ > 4)
#define WRAP_MPI_CALL_PREFIX _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wdeprecated-declarations\"")
#define WRAP_MPI_CALL_POSTFIX _Pragma("GCC diagnostic pop")
#else
#define WRAP_MPI_CALL_PREFIX
#define WRAP_MPI_CALL_POSTFIX
#endif

`
