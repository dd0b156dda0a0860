/* The MPI transport of mpitrace's analysis (mpitrace critpath --mpi):
 * a few MPI calls behind a C interface of plain types, built on first use
 * with the MPI's own compiler wrapper and loaded by the mpitrace binary,
 * which links no MPI. Every function returns 0 or an MPI error code
 * (mpicomm_error says what it means): MPI_COMM_WORLD returns errors
 * rather than aborting, so that the Go side can stop every process with
 * one line of its own. */
#include <mpi.h>
#include <stdint.h>
#include <string.h>

int mpicomm_init(int *rank, int *size)
{
    int flag = 0, provided = 0, rc;
    MPI_Initialized(&flag);
    if (!flag) {
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS)
            return rc;
    } else {
        MPI_Query_thread(&provided);
    }
    /* The Go runtime runs threads of its own: MPI must allow them. */
    if (provided < MPI_THREAD_FUNNELED)
        return -1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Comm_rank(MPI_COMM_WORLD, rank);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_size(MPI_COMM_WORLD, size);
    return rc;
}

int mpicomm_finalize(void) { return MPI_Finalize(); }

/* mpicomm_local_size sets *n to the number of the job's processes that
 * share this one's memory (its node). */
int mpicomm_local_size(int *n)
{
    MPI_Comm node;
    int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = MPI_Comm_size(node, n);
    MPI_Comm_free(&node);
    return rc;
}

void mpicomm_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

/* op: 0 sum, 1 max, 2 min. */
int mpicomm_allreduce_i64(int64_t *buf, int n, int op)
{
    MPI_Op o = op == 1 ? MPI_MAX : op == 2 ? MPI_MIN : MPI_SUM;
    return MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INT64_T, o, MPI_COMM_WORLD);
}

int mpicomm_allgather_i64(const int64_t *mine, int n, int64_t *all)
{
    return MPI_Allgather(mine, n, MPI_INT64_T, all, n, MPI_INT64_T, MPI_COMM_WORLD);
}

int mpicomm_allgatherv(const void *mine, int n, void *all, const int *counts, const int *displs)
{
    return MPI_Allgatherv(mine, n, MPI_BYTE, all, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
}

int mpicomm_gatherv(const void *mine, int n, void *all, const int *counts, const int *displs, int root)
{
    return MPI_Gatherv(mine, n, MPI_BYTE, all, counts, displs, MPI_BYTE, root, MPI_COMM_WORLD);
}

int mpicomm_alltoallv(const void *send, const int *scounts, const int *sdispls,
                      void *recv, const int *rcounts, const int *rdispls)
{
    return MPI_Alltoallv(send, scounts, sdispls, MPI_BYTE, recv, rcounts, rdispls, MPI_BYTE, MPI_COMM_WORLD);
}

int mpicomm_alltoall_int(const int *send, int *recv)
{
    return MPI_Alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD);
}

int mpicomm_bcast(void *buf, int n, int root)
{
    return MPI_Bcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD);
}

void mpicomm_error(int code, char *buf, int len)
{
    int n = 0;
    char s[MPI_MAX_ERROR_STRING];
    if (MPI_Error_string(code, s, &n) != MPI_SUCCESS)
        n = 0;
    s[n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1] = 0;
    strncpy(buf, s, len - 1);
    buf[len - 1] = 0;
}

void mpicomm_library(char *buf, int len)
{
    int n = 0;
    char s[MPI_MAX_LIBRARY_VERSION_STRING];
    if (MPI_Get_library_version(s, &n) != MPI_SUCCESS)
        n = 0;
    s[n < MPI_MAX_LIBRARY_VERSION_STRING ? n : MPI_MAX_LIBRARY_VERSION_STRING - 1] = 0;
    strncpy(buf, s, len - 1);
    buf[len - 1] = 0;
}
