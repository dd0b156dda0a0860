/* loopstencil: a 2-D Jacobi kernel with hand-written loop markers
 * (recorder/c/mpitrace.h), for the loop sampling-quality study
 * (bench/loopquality, docs/performance.md "Loop sampling quality").
 *
 * Each rank owns a block of rows and, every time step, exchanges one halo
 * row with each neighbour (MPI_Sendrecv) and relaxes its rows. Two loops
 * carry markers: the time-step loop (top level, always recorded) and the
 * row loop inside it (nested: recorded only in sampled time steps). The
 * column loop is left unmarked: it is the row iteration's body.
 *
 * Usage: loopstencil [steps] [rows per rank] [columns]   (defaults 2000, 256, 1024) */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpitrace.h"

/* The chance each marker was "instrumented" with; MPITRACE_LOOP_CHANCE
 * overrides it at run time. */
#define CHANCE 0.1

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = argc > 1 ? atoi(argv[1]) : 2000;
    int rows = argc > 2 ? atoi(argv[2]) : 256;
    int cols = argc > 3 ? atoi(argv[3]) : 1024;
    size_t n = (size_t)(rows + 2) * (size_t)cols;
    double *u = calloc(n, sizeof(double)), *v = calloc(n, sizeof(double));
    if (!u || !v) MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t k = 0; k < n; k++) u[k] = (double)((rank * 7 + k) % 23);
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    double sum = 0;
    {
        MPITRACE_LOOP(step_loop, "loopstencil.c", 39, 9);
        for (int t = 0; t < steps; t++) {
            MPITRACE_ITER(step_iter, step_loop, CHANCE);
            MPI_Sendrecv(&u[cols], cols, MPI_DOUBLE, up, 0, &u[(size_t)(rows + 1) * cols], cols, MPI_DOUBLE, down, 0,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Sendrecv(&u[(size_t)rows * cols], cols, MPI_DOUBLE, down, 1, &u[0], cols, MPI_DOUBLE, up, 1,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            {
                MPITRACE_LOOP(row_loop, "loopstencil.c", 47, 17);
                for (int i = 1; i <= rows; i++) {
                    MPITRACE_ITER(row_iter, row_loop, CHANCE);
                    double *o = &v[(size_t)i * cols];
                    const double *a = &u[(size_t)(i - 1) * cols], *b = &u[(size_t)i * cols], *c = &u[(size_t)(i + 1) * cols];
                    for (int j = 1; j < cols - 1; j++)
                        o[j] = 0.25 * (a[j] + c[j] + b[j - 1] + b[j + 1]);
                }
            }
            double *x = u;
            u = v;
            v = x;
        }
    }
    for (size_t k = 0; k < n; k++) sum += u[k];
    double total = 0;
    MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("loopstencil: %d ranks, %d steps, sum %.6e\n", size, steps, total);
    free(u);
    free(v);
    MPI_Finalize();
    return 0;
}
