/* overhead: the cost of one intercepted MPI call, for bench/overhead.
 *
 * Usage: overhead MODE N
 *   comm_rank  N calls of MPI_Comm_rank
 *   test_null  N calls of MPI_Test on MPI_REQUEST_NULL
 *   floor      N times: two clock reads and a 32-byte store (the least a
 *              recorder must do per call), no MPI call
 * Prints "MODE ns_per_call" from rank 0. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct rec { uint64_t t0, t1, a, b; };

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "comm_rank";
    long n = argc > 2 ? atol(argv[2]) : 10000000;
    MPI_Init(&argc, &argv);
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size_t nrec = 1 << 16;
    struct rec *buf = calloc(nrec, sizeof *buf);
    volatile int sink = 0;
    /* warm up */
    for (long i = 0; i < n / 10; i++) {
        int r;
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
        sink += r;
    }
    uint64_t t0 = now();
    if (!strcmp(mode, "comm_rank")) {
        for (long i = 0; i < n; i++) {
            int r;
            MPI_Comm_rank(MPI_COMM_WORLD, &r);
            sink += r;
        }
    } else if (!strcmp(mode, "test_null")) {
        for (long i = 0; i < n; i++) {
            MPI_Request q = MPI_REQUEST_NULL;
            int flag;
            MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
            sink += flag;
        }
    } else if (!strcmp(mode, "floor")) {
        for (long i = 0; i < n; i++) {
            struct rec *r = &buf[(size_t)i & (nrec - 1)];
            uint64_t a = now();
            uint64_t b = now();
            r->t0 = a;
            r->t1 = b;
            r->a = (uint64_t)i;
            r->b = b - a;
        }
        sink += (int)buf[5].b;
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    uint64_t t1 = now();
    if (rank == 0) printf("%s %.3f\n", mode, (double)(t1 - t0) / (double)n);
    free(buf);
    MPI_Finalize();
    return sink == -1;
}
