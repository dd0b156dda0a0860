/* loops: the cost of the loop markers, for bench/loops.
 *
 * Usage: loops MODE N
 *   plain    N iterations of a small body, no markers
 *   markers  the same loop with MPITRACE_LOOP/MPITRACE_ITER (chance 0.5
 *            in the marker; MPITRACE_LOOP_CHANCE overrides it)
 *   floor    the plain loop reading the clock twice per iteration and
 *            storing both times: the least a sampled iteration costs
 * Prints "MODE ns_per_iteration". The body (a multiply-add on a value kept
 * in a register) is the same in both; the difference is the markers'. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpitrace.h"

static inline uint64_t now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t plain(long n, uint64_t x) {
    for (long i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + (uint64_t)i;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

static volatile uint64_t stamps[2];

__attribute__((noinline)) static uint64_t floor_loop(long n, uint64_t x) {
    for (long i = 0; i < n; i++) {
        stamps[0] = now();
        x = x * 6364136223846793005ull + (uint64_t)i;
        __asm__ volatile("" : "+r"(x));
        stamps[1] = now();
    }
    return x;
}

__attribute__((noinline)) static uint64_t markers(long n, uint64_t x) {
    MPITRACE_LOOP(l, "loops.c", 30, 5);
    for (long i = 0; i < n; i++) {
        MPITRACE_ITER(it, l, 0.5);
        x = x * 6364136223846793005ull + (uint64_t)i;
        __asm__ volatile("" : "+r"(x));
    }
    return x;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "plain";
    long n = argc > 2 ? atol(argv[2]) : 10000000;
    uint64_t (*loop)(long, uint64_t) = !strcmp(mode, "markers") ? markers : !strcmp(mode, "floor") ? floor_loop : plain;
    uint64_t x = loop(n / 10, 1); /* warm up */
    uint64_t t0 = now();
    x = loop(n, x);
    uint64_t t1 = now();
    sink = x;
    printf("%s %.3f\n", mode, (double)(t1 - t0) / (double)n);
    return 0;
}
