/* poll: the recordings that compress best, for bench/tracesize.
 *
 * Usage: mpirun -np 2 poll SECONDS
 * Rank 0 polls: MPI_Test on a receive that rank 1 satisfies after SECONDS,
 * then MPI_Iprobe for a second message sent SECONDS later; then both ranks
 * call MPI_Wtime in a tight loop for SECONDS. Every call is recorded, and
 * consecutive calls differ only by the clock's jitter. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    int buf = 0;
    if (rank == 0) {
        MPI_Request q;
        int flag = 0;
        MPI_Irecv(&buf, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, &q);
        while (!flag) MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
        flag = 0;
        while (!flag) MPI_Iprobe(1, 8, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        MPI_Recv(&buf, 1, MPI_INT, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        usleep((useconds_t)(secs * 1e6));
        MPI_Send(&buf, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
        usleep((useconds_t)(secs * 1e6));
        MPI_Send(&buf, 1, MPI_INT, 0, 8, MPI_COMM_WORLD);
    }
    double t0 = MPI_Wtime(), t = t0;
    while (t - t0 < secs) t = MPI_Wtime();
    MPI_Finalize();
    return 0;
}
