/* mpitrace.h: mpitrace's source-level API: loop markers and named regions.
 *
 * Code that includes this header builds and links with or without the
 * recorder: nothing else is needed at link time. At program start a
 * constructor looks for the recorder (the object mpitrace_api_v1, a struct
 * mpitrace_api exported by the recorder library when `mpitrace record`
 * preloads it); without it every
 * marker costs one predictable branch and calls nothing.
 *
 * `mpitrace instrument` and `mpitrace cc` write the markers; they are not
 * meant to be written by hand, but can be:
 *
 *   {
 *       MPITRACE_LOOP(mpitrace_l41, "stencil.c", 41, 5);
 *       for (i = 0; i < n; i++) {
 *           MPITRACE_ITER(mpitrace_i41, mpitrace_l41, 0.01);
 *           ...body...
 *       }
 *   }
 *
 * MPITRACE_LOOP declares a token that ends the loop when its scope is left,
 * however it is left (the loop's end, break, return, goto out, a C++
 * exception); MPITRACE_ITER likewise ends the iteration at the end of the
 * body or on continue, break, return, goto. In C this uses the cleanup
 * attribute (GCC, Clang, Intel, NVHPC), in C++ a guard object. A longjmp out
 * of a loop skips both; the recorder repairs its stacks when it next sees
 * the thread (see docs/loops.md).
 *
 * Tokens: 0 means "nothing to do". loop_begin returns 0 when the loop is not
 * instrumented (it runs under an iteration that was not sampled); iter_begin
 * is called for every iteration of an instrumented loop (it counts them) and
 * returns 0 for an iteration that is not sampled. Every nonzero token is
 * passed back exactly once, on the thread that got it. */
#ifndef MPITRACE_H
#define MPITRACE_H

/* No system header: a source that defines _GNU_SOURCE (or another
 * feature-test macro) after the #include "mpitrace.h" that the instrumenter
 * puts first must still get what it asked for. __UINTPTR_TYPE__ is the
 * type <stdint.h> names uintptr_t (GCC, Clang, Intel, NVHPC). */
#ifdef __UINTPTR_TYPE__
typedef __UINTPTR_TYPE__ mpitrace__uintptr;
#else
#include <stdint.h>
typedef uintptr_t mpitrace__uintptr;
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define MPITRACE_API_VERSION 1

/* Where a loop is, as the instrumenter saw it: one constant object per loop
 * in the source, so its address identifies the loop within a process. */
struct mpitrace_loop_site {
    const char *file; /* path as given to the instrumenter */
    unsigned line;    /* 1-based line of the loop keyword */
    unsigned col;     /* 1-based column, in bytes, of the loop keyword */
    unsigned flags;   /* MPITRACE_SITE_* */
};

/* The loop's iterations run on other threads (an OpenMP worksharing loop):
 * it has no iteration markers and its end records no iteration count. */
#define MPITRACE_SITE_UNCOUNTED 1u

/* The recorder's entry points (the recorder exports one, mpitrace_api_v1). Fields are
 * only ever appended; size is sizeof(struct mpitrace_api) as the recorder
 * was built, so a program checks size before it uses a later field. */
struct mpitrace_api {
    unsigned version; /* MPITRACE_API_VERSION */
    unsigned size;
    mpitrace__uintptr (*loop_begin)(const struct mpitrace_loop_site *site);
    /* Ends the loop `loop` and every loop opened after it on this thread
     * and not yet ended (left by longjmp). */
    void (*loop_end)(mpitrace__uintptr loop);
    mpitrace__uintptr (*iter_begin)(mpitrace__uintptr loop, double chance);
    void (*iter_end)(mpitrace__uintptr iter);
    /* Named regions (since mpitrace 0.2; present when size covers them). */
    void (*region_push)(const char *name);
    void (*region_pop)(void);
    /* A name of len bytes, not NUL-terminated (the Fortran binding). */
    void (*region_push_n)(const char *name, mpitrace__uintptr len);
};

/* The size of the first version of struct mpitrace_api (the loop markers):
 * where the region functions begin. */
#define MPITRACE__API_LOOPS_SIZE __builtin_offsetof(struct mpitrace_api, region_push)

#ifndef MPITRACE_API_ONLY /* (the recorder itself wants the types only) */

/* The helpers are always inlined, even at -O0: the recorder tells a loop
 * left by longjmp from the frame a marker is called from, so every marker
 * of a function must call it from that function's own frame. */
#define MPITRACE__INLINE inline __attribute__((always_inline))

/* Set at program start when the recorder is loaded; 0 otherwise. One per
 * program (a weak definition: every file that includes this header may
 * define it). */
__attribute__((weak)) const struct mpitrace_api *mpitrace__api;
/* The same when the recorder has the region functions; 0 otherwise. */
__attribute__((weak)) const struct mpitrace_api *mpitrace__regions;

/* dlsym, declared here rather than through <dlfcn.h> (which wants
 * _GNU_SOURCE for RTLD_DEFAULT), under a name of its own: <dlfcn.h>
 * declares dlsym noexcept in C++, and a second declaration without it
 * would not compile in a C++ source that includes both. Weak: a program
 * linked without libdl on an old C library simply never finds the
 * recorder. */
extern void *mpitrace__dlsym(void *handle, const char *symbol) __asm__("dlsym") __attribute__((weak));

__attribute__((weak, constructor)) void mpitrace__resolve(void) {
    if (mpitrace__api || !mpitrace__dlsym)
        return;
    /* (void *)0 is RTLD_DEFAULT in glibc and musl: search every loaded object. */
    const struct mpitrace_api *a = (const struct mpitrace_api *)mpitrace__dlsym((void *)0, "mpitrace_api_v1");
    if (!a || a->version != MPITRACE_API_VERSION)
        return;
    if (a->size >= MPITRACE__API_LOOPS_SIZE)
        mpitrace__api = a;
    if (a->size >= sizeof(struct mpitrace_api))
        mpitrace__regions = a;
}

/* Named regions: mpitrace_region_push("solve") ... mpitrace_region_pop().
 * Regions nest per thread; a pop ends the innermost open region of the
 * calling thread. They land in the log as Kokkos' profile regions do, and
 * `mpitrace regions` shows them (with Kokkos kernels, when recorded) as a
 * tree across ranks. Without the recorder each call is one predictable
 * branch. */
static inline void mpitrace_region_push(const char *name) {
    const struct mpitrace_api *a = mpitrace__regions;
    if (__builtin_expect(a != 0, 0))
        a->region_push(name);
}
static inline void mpitrace_region_pop(void) {
    const struct mpitrace_api *a = mpitrace__regions;
    if (__builtin_expect(a != 0, 0))
        a->region_pop();
}

static MPITRACE__INLINE mpitrace__uintptr mpitrace__loop_begin(const struct mpitrace_loop_site *site) {
    const struct mpitrace_api *a = mpitrace__api;
    return __builtin_expect(a != 0, 0) ? a->loop_begin(site) : 0;
}
static MPITRACE__INLINE void mpitrace__loop_end(mpitrace__uintptr *loop) {
    if (__builtin_expect(*loop != 0, 0))
        mpitrace__api->loop_end(*loop);
}
static MPITRACE__INLINE mpitrace__uintptr mpitrace__iter_begin(mpitrace__uintptr loop, double chance) {
    return __builtin_expect(loop != 0, 0) ? mpitrace__api->iter_begin(loop, chance) : 0;
}
static MPITRACE__INLINE void mpitrace__iter_end(mpitrace__uintptr *iter) {
    if (__builtin_expect(*iter != 0, 0))
        mpitrace__api->iter_end(*iter);
}

#ifdef __cplusplus
} /* extern "C" */

struct mpitrace__loop_guard {
    mpitrace__uintptr token;
    __attribute__((always_inline)) explicit mpitrace__loop_guard(const mpitrace_loop_site *site) : token(mpitrace__loop_begin(site)) {}
    __attribute__((always_inline)) ~mpitrace__loop_guard() { mpitrace__loop_end(&token); }
    mpitrace__loop_guard(const mpitrace__loop_guard &) = delete;
    mpitrace__loop_guard &operator=(const mpitrace__loop_guard &) = delete;
};
struct mpitrace__iter_guard {
    mpitrace__uintptr token;
    __attribute__((always_inline)) mpitrace__iter_guard(const mpitrace__loop_guard &loop, double chance) : token(mpitrace__iter_begin(loop.token, chance)) {}
    __attribute__((always_inline)) ~mpitrace__iter_guard() { mpitrace__iter_end(&token); }
    mpitrace__iter_guard(const mpitrace__iter_guard &) = delete;
    mpitrace__iter_guard &operator=(const mpitrace__iter_guard &) = delete;
};

#define MPITRACE_LOOP_FLAGS(name, file, line, col, flags)                                      \
    static const mpitrace_loop_site name##_site = {file, line, col, flags};                    \
    mpitrace__loop_guard name(&name##_site)
#define MPITRACE_ITER(name, loop, chance) mpitrace__iter_guard name(loop, chance)

#else /* C */

#define MPITRACE_LOOP_FLAGS(name, file, line, col, flags)                                      \
    static const struct mpitrace_loop_site name##_site = {file, line, col, flags};             \
    __attribute__((cleanup(mpitrace__loop_end))) mpitrace__uintptr name = mpitrace__loop_begin(&name##_site)
#define MPITRACE_ITER(name, loop, chance)                                                      \
    __attribute__((cleanup(mpitrace__iter_end))) mpitrace__uintptr name = mpitrace__iter_begin(loop, chance)

#endif

/* A loop, and a loop whose iterations run on other threads (the OpenMP
 * worksharing loop that follows a `#pragma omp for`: no MPITRACE_ITER in it). */
#define MPITRACE_LOOP(name, file, line, col) MPITRACE_LOOP_FLAGS(name, file, line, col, 0u)
#define MPITRACE_LOOP_UNCOUNTED(name, file, line, col)                                         \
    MPITRACE_LOOP_FLAGS(name, file, line, col, MPITRACE_SITE_UNCOUNTED)

#endif /* MPITRACE_API_ONLY */

#endif /* MPITRACE_H */
