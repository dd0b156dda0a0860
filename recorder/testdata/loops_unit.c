/* loops_unit.c: the loop runtime's edge cases, called through
 * mpitrace_api_v1 directly (linked with mpit_core.c and mpit_loops.c by
 * recorder/loops_test.go, which reads the log back). Run with
 * MPITRACE_LOOP_CHANCE unset: each case gives its chance. Prints "ok" or
 * the first check that failed. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MPITRACE_API_ONLY
#include "mpitrace.h"

extern const struct mpitrace_api mpitrace_api_v1;
static const struct mpitrace_api *A = &mpitrace_api_v1;

#include "unit_check.h"

static struct mpitrace_loop_site site[100];
static struct mpitrace_loop_site uncounted = {"u.c", 99, 1, MPITRACE_SITE_UNCOUNTED};

static uintptr_t other_token;

static void *other_thread(void *arg) {
    (void)arg;
    /* Another thread's token means nothing here. */
    A->loop_end(other_token);
    A->iter_end(other_token | 0x100);
    CHECK(A->iter_begin(other_token, 1.0) == 0);
    return NULL;
}

int main(void) {
    for (int i = 0; i < 100; i++) site[i] = (struct mpitrace_loop_site){"unit.c", (unsigned)(i + 1), 1, 0};
    /* 1: chance 0 counts without sampling; chance 1 samples all. */
    uintptr_t l = A->loop_begin(&site[0]);
    CHECK(l != 0);
    for (int i = 0; i < 5; i++) CHECK(A->iter_begin(l, 0.0) == 0);
    A->loop_end(l);
    l = A->loop_begin(&site[1]);
    for (int i = 0; i < 3; i++) {
        uintptr_t it = A->iter_begin(l, 1.0);
        CHECK(it != 0);
        A->iter_end(it);
    }
    A->loop_end(l);
    /* 2: a nested loop under an unsampled iteration is not instrumented,
     * under a sampled one it is. */
    l = A->loop_begin(&site[2]);
    CHECK(A->iter_begin(l, 0.0) == 0);
    CHECK(A->loop_begin(&site[3]) == 0);
    uintptr_t it = A->iter_begin(l, 1.0);
    uintptr_t l2 = A->loop_begin(&site[3]);
    CHECK(l2 != 0);
    CHECK(A->iter_begin(l2, 0.0) == 0);
    A->loop_end(l2);
    A->iter_end(it);
    A->loop_end(l);
    /* 3: ending an outer loop closes the inner one (unwound); the inner
     * loop's token is then stale. */
    l = A->loop_begin(&site[4]);
    it = A->iter_begin(l, 1.0);
    l2 = A->loop_begin(&site[5]);
    uintptr_t it2 = A->iter_begin(l2, 1.0);
    A->loop_end(l);
    A->iter_end(it2);
    A->loop_end(l2);
    A->iter_end(it);
    /* 4: the next iteration of an outer loop closes an inner loop left
     * open, and ends the outer one's sampled iteration that was not. */
    l = A->loop_begin(&site[6]);
    it = A->iter_begin(l, 1.0);
    l2 = A->loop_begin(&site[7]);
    (void)A->iter_begin(l2, 1.0);
    it = A->iter_begin(l, 1.0); /* iteration 1 and loop 8 left */
    A->iter_end(it);
    A->loop_end(l);
    /* 5: garbage tokens are ignored. */
    A->loop_end(12345);
    A->iter_end(0x100 | 7);
    CHECK(A->iter_begin(999, 1.0) == 0);
    /* 6: 70 nested loops: 64 instrumented, the rest not. */
    uintptr_t deep[70], dit[70];
    int n = 0;
    for (int i = 0; i < 70; i++) {
        deep[i] = A->loop_begin(&site[20 + i]);
        if (deep[i]) n++;
        dit[i] = deep[i] ? A->iter_begin(deep[i], 1.0) : 0;
    }
    CHECK(n == 64);
    for (int i = 69; i >= 0; i--) {
        if (dit[i]) A->iter_end(dit[i]);
        if (deep[i]) A->loop_end(deep[i]);
    }
    /* 7: an uncounted loop ends with count 0; the loops in it are
     * instrumented. */
    l = A->loop_begin(&uncounted);
    for (int i = 0; i < 2; i++) {
        l2 = A->loop_begin(&site[8]);
        CHECK(l2 != 0);
        CHECK(A->iter_begin(l2, 0.0) == 0);
        A->loop_end(l2);
    }
    A->loop_end(l);
    /* 8: another thread's token. */
    other_token = A->loop_begin(&site[9]);
    pthread_t th;
    pthread_create(&th, NULL, other_thread, NULL);
    pthread_join(th, NULL);
    CHECK(A->iter_begin(other_token, 0.0) == 0);
    A->loop_end(other_token);
    /* 9: left open at exit. */
    l = A->loop_begin(&site[10]);
    CHECK(A->iter_begin(l, 1.0) != 0);
    printf("ok\n");
    return 0;
}
