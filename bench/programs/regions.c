/* regions: the cost of mpitrace_region_push/pop, for bench/kokkos.
 *
 * Usage: regions MODE N
 *   empty    N iterations of an empty loop body
 *   regions  N pairs mpitrace_region_push("r"); mpitrace_region_pop()
 * Prints "MODE ns_per_iteration". Without the recorder each call is one
 * predictable branch; with it (LD_PRELOAD) each pair records two events. */
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

__attribute__((noinline)) static void empty(long n) {
    for (long i = 0; i < n; i++) __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void regions(long n) {
    for (long i = 0; i < n; i++) {
        mpitrace_region_push("r");
        __asm__ volatile("" ::: "memory");
        mpitrace_region_pop();
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: regions empty|regions N\n");
        return 2;
    }
    long n = atol(argv[2]);
    int r = !strcmp(argv[1], "regions");
    uint64_t t0 = now();
    if (r)
        regions(n);
    else
        empty(n);
    printf("%s %.3f\n", argv[1], (double)(now() - t0) / (double)n);
    return 0;
}
