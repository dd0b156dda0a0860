/* mpitrace recorder: the MPI layer on the core (mpit_core.h), the
 * interface the generated PMPI wrappers use. */
#ifndef MPIT_H
#define MPIT_H

#include <mpi.h>

#include "mpit_core.h"

/* Communicator record: never freed, so requests can point at it. */
typedef struct mpit_comm {
    uint64_t idx;     /* rank-local index written in events */
    uint64_t gid;     /* global id, equal on all members */
    uint64_t seq;     /* creation calls made on this communicator so far */
    int size;         /* local group size */
    int rsize;        /* remote group size (intercommunicators), else 0 */
    int myrank;       /* this process's rank in the local group */
    int *members;     /* world ranks of the local group (NULL: identity) */
    int *remote;      /* world ranks of the remote group */
    struct mpit_cgseq *cg; /* per-group counters for MPI_Comm_create_group */
} mpit_comm;

extern MPIT_HIDDEN mpit_comm mpit_comm_world, mpit_comm_self;

/* ---- argument helpers used by the wrappers (mpit_runtime.c) ---- */

MPIT_HIDDEN mpit_comm *mpit_comm_of(MPI_Comm comm);
MPIT_HIDDEN int64_t mpit_peer(const mpit_comm *c, int rank); /* p2p peer → world rank */
MPIT_HIDDEN int64_t mpit_root(const mpit_comm *c, int root); /* collective root → world rank */
MPIT_HIDDEN uint64_t mpit_bytes(int64_t count, MPI_Datatype type);
MPIT_HIDDEN int mpit_in_place(const void *buf);

/* Requests. Kinds of requests the recorder tracks. */
enum { MPIT_REQ_SEND = 1, MPIT_REQ_RECV = 2, MPIT_REQ_COLL = 3, MPIT_REQ_OTHER = 4 };
MPIT_HIDDEN uint64_t mpit_req_new(MPI_Request req, int kind, int persistent, mpit_comm *comm);

/* A request handle a call was given, and what the recorder knows of it.
 * Completion wrappers copy the handles and look their ids up before the
 * PMPI call: once PMPI has freed a completed request, another thread may
 * get the same handle for a new request before this one is looked up. */
typedef struct {
    MPI_Request h;
    uint64_t id;      /* 0: not a request the recorder saw created */
    int kind;         /* MPIT_REQ_*, | 0x100 when persistent */
    mpit_comm *comm;
} mpit_reqcopy;
MPIT_HIDDEN mpit_reqcopy *mpit_req_copy(int n, const MPI_Request *reqs, mpit_reqcopy *stackbuf);
MPIT_HIDDEN void mpit_req_peek(int n, mpit_reqcopy *rc);
MPIT_HIDDEN mpit_comm *mpit_msg_take(MPI_Message msg);

/* ---- recorders for the argument-carrying families (mpit_runtime.c) ---- */

MPIT_HIDDEN void mpit_rec_send(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t count,
                               MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                               MPI_Request *req, int persistent);
MPIT_HIDDEN void mpit_rec_recv(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t count,
                               MPI_Datatype type, int source, int tag, MPI_Comm comm,
                               const MPI_Status *st);
MPIT_HIDDEN void mpit_rec_irecv(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t count,
                                MPI_Datatype type, int source, int tag, MPI_Comm comm,
                                MPI_Request *req, int persistent);
MPIT_HIDDEN void mpit_rec_sendrecv(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1,
                                   int64_t scount, MPI_Datatype stype, int dest, int stag,
                                   int64_t rcount, MPI_Datatype rtype, int source, int rtag,
                                   MPI_Comm comm, const MPI_Status *st);
MPIT_HIDDEN void mpit_rec_probe(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int source,
                                int tag, MPI_Comm comm, int flag, const MPI_Status *st,
                                MPI_Message *msg);
MPIT_HIDDEN void mpit_rec_mrecv(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t count,
                                MPI_Datatype type, MPI_Message msg, mpit_comm *comm,
                                const MPI_Status *st, MPI_Request *req);
MPIT_HIDDEN void mpit_rec_coll(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, MPI_Comm comm,
                               int root, uint64_t sbytes, uint64_t rbytes, MPI_Request *req);
MPIT_HIDDEN void mpit_rec_commnew(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1,
                                  MPI_Comm parent, MPI_Comm *newcomm, int how, int64_t key);
MPIT_HIDDEN mpit_comm *mpit_comm_forget(MPI_Comm handle);
MPIT_HIDDEN void mpit_rec_commfree(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, mpit_comm *c);
MPIT_HIDDEN void mpit_rec_start(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int n,
                                const MPI_Request *reqs);
MPIT_HIDDEN void mpit_rec_reqfree(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1,
                                  const mpit_reqcopy *req);
/* mpit_rec_cancel records an MPI_Cancel of the request (a ReqFree event
 * that frees nothing: the request stays the program's until it completes
 * or is freed). */
MPIT_HIDDEN void mpit_rec_cancel(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1,
                                 const mpit_reqcopy *req);

/* Completion: the wrapper copies the request handles and their ids before
 * the PMPI call (mpit_req_copy, mpit_req_peek) and passes the statuses the
 * call filled. The completed requests are given as indices into the copy. */
MPIT_HIDDEN void mpit_rec_complete(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int flag,
                                   const mpit_reqcopy *before, const int *idx, int nidx,
                                   const MPI_Status *st, int status_by_request);

/* How a communicator was created (mpit_rec_commnew's `how`). */
enum {
    MPIT_NEW_COLLECTIVE = 0, /* collective over the parent: dup, split, create, cart, graph */
    MPIT_NEW_GROUP = 1,      /* MPI_Comm_create_group: collective over the group (key: tag) */
    MPIT_NEW_INTER = 2,      /* intercommunicator creation: both sides agree */
};

/* Completion helpers for the Wait/Test family; `ret` is the PMPI result. */
MPIT_HIDDEN void mpit_rec_all(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int ret, int flag, int n,
                              const mpit_reqcopy *before, const MPI_Status *st);
MPIT_HIDDEN void mpit_rec_some(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int ret, int n,
                               const mpit_reqcopy *before, int outcount, const int *indices,
                               const MPI_Status *st);
MPIT_HIDDEN void mpit_rec_one(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int ret, int flag,
                              const mpit_reqcopy *before, int index, const MPI_Status *st);

/* mpit_rec_coll's root when the collective has none. */
#define MPIT_NO_ROOT (-99999)

/* mpit_start reads the clock at a recorded call's start. */
static inline uint64_t mpit_start(mpit_tb *tb) {
    uint64_t t = mpit_now();
    __atomic_store_n(&tb->cur_t0, t, __ATOMIC_RELAXED);
    return t;
}

/* The call site. A C caller calls the wrapper directly: its return
 * address is the call site. A Fortran caller calls the recorder's Fortran
 * entry point, which calls the C wrapper: the entry point notes its own
 * return address, in the Fortran caller, in mpit_fret (MPIT_F_ENTER) and
 * clears it when the call returns (MPIT_F_LEAVE), so a Fortran call's site
 * is in the Fortran code, not in the binding layer. MPIT_CALLER is only
 * meaningful in a wrapper's own body (not in a function it calls). */
extern MPIT_HIDDEN MPIT_TLS uintptr_t mpit_fret;
#define MPIT_CALLER() (mpit_fret ? mpit_fret : (uintptr_t)__builtin_return_address(0))
#define MPIT_F_ENTER() uintptr_t mpit_fret_saved_ = mpit_fret; \
    if (!mpit_fret_saved_) mpit_fret = (uintptr_t)__builtin_return_address(0)
#define MPIT_F_LEAVE() mpit_fret = mpit_fret_saved_

/* mpit_start_at notes the call's site and reads the clock at its start. */
MPIT_INLINE uint64_t mpit_start_at(mpit_tb *tb, uintptr_t site) {
    tb->cur_site = mpit_site(tb, site);
    return mpit_start(tb);
}

/* MPIT_BEGIN opens a wrapper: tb_ is the buffer when the call is recorded. */
#define MPIT_BEGIN(fn)                     \
    mpit_tb *tb_ = mpit_begin(fn);         \
    uint64_t t0_ = tb_ ? mpit_start_at(tb_, MPIT_CALLER()) : 0

/* MPIT_BEGIN_DO is MPIT_BEGIN that runs `pre` when the call is recorded,
 * before the clock is read (e.g. looking up request ids). */
#define MPIT_BEGIN_DO(fn, pre)             \
    mpit_tb *tb_ = mpit_begin(fn);         \
    if (tb_) {                             \
        pre;                               \
    }                                      \
    uint64_t t0_ = tb_ ? mpit_start_at(tb_, MPIT_CALLER()) : 0

/* MPI errors. At MPI_Init the recorder puts its own error handler on
 * MPI_COMM_WORLD and MPI_COMM_SELF where MPI_ERRORS_ARE_FATAL is: it writes
 * the log, then does what MPI_ERRORS_ARE_FATAL does. For an error in a
 * call's arguments it sets mpit_refire to the call's function, and the
 * wrapper makes the PMPI call again, now under MPI_ERRORS_ARE_FATAL: the
 * MPI reports the error exactly as it would without the recorder. */
extern MPIT_HIDDEN MPIT_TLS int mpit_refire;
MPIT_HIDDEN int mpit_again(int fn);
#define MPIT_AGAIN(fn) (MPIT_UNLIKELY(mpit_refire != 0) && tb_ && mpit_again(fn))
/* The program sets or reads an error handler: the recorder's stands for
 * MPI_ERRORS_ARE_FATAL, both ways. */
MPIT_HIDDEN MPI_Errhandler mpit_errh_in(MPI_Errhandler eh);
MPIT_HIDDEN void mpit_errh_out(MPI_Errhandler *eh);

/* Lifecycle hooks. */
MPIT_HIDDEN void mpit_after_init(int provided_or_minus1);
MPIT_HIDDEN void mpit_before_finalize(void);
MPIT_HIDDEN void mpit_after_finalize(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1);
MPIT_HIDDEN void mpit_before_abort(int errorcode);
MPIT_HIDDEN void mpit_clock_event(mpit_tb *tb, int phase);

/* Statuses: wrappers give PMPI a status the recorder can read even when the
 * application passed MPI_STATUS(ES)_IGNORE. Small arrays live on the stack. */
#define MPIT_STACK_REQS 32
MPIT_HIDDEN MPI_Status *mpit_status_array(int n, MPI_Status *stackbuf);
MPIT_HIDDEN void mpit_free_array(void *p, void *stackbuf);

/* MPIT_ARR passes a count array of either int or MPI_Count elements. */
#define MPIT_ARR(a) (const void *)(a), sizeof(*(a))

/* Collectives: each computes this rank's bytes sent and received from the
 * call's own arguments (MPI_IN_PLACE and the root's role included) and
 * appends a Coll event; req is NULL for the blocking forms. */
MPIT_HIDDEN void mpit_rec_bcast(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t count,
                                MPI_Datatype type, int root, MPI_Comm comm, MPI_Request *req);
MPIT_HIDDEN void mpit_rec_gather(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, const void *sbuf,
                                 int64_t scount, MPI_Datatype stype, int64_t rcount, MPI_Datatype rtype,
                                 const void *rcounts, size_t relem, int root, MPI_Comm comm,
                                 MPI_Request *req);
MPIT_HIDDEN void mpit_rec_scatter(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t scount,
                                  const void *scounts, size_t selem, MPI_Datatype stype,
                                  const void *rbuf, int64_t rcount, MPI_Datatype rtype, int root,
                                  MPI_Comm comm, MPI_Request *req);
MPIT_HIDDEN void mpit_rec_allgather(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, const void *sbuf,
                                    int64_t scount, MPI_Datatype stype, int64_t rcount,
                                    const void *rcounts, size_t relem, MPI_Datatype rtype,
                                    MPI_Comm comm, MPI_Request *req);
MPIT_HIDDEN void mpit_rec_alltoall(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, const void *sbuf,
                                   int64_t scount, const void *scounts, size_t selem,
                                   const MPI_Datatype *stypes, MPI_Datatype stype, int64_t rcount,
                                   const void *rcounts, size_t relem, const MPI_Datatype *rtypes,
                                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req);
MPIT_HIDDEN void mpit_rec_reduce(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t count,
                                 MPI_Datatype type, int root, MPI_Comm comm, MPI_Request *req);
MPIT_HIDDEN void mpit_rec_reduce_scatter(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1,
                                         int64_t rcount, const void *rcounts, size_t relem,
                                         MPI_Datatype type, MPI_Comm comm, MPI_Request *req);

/* MPIT_RECORD ends a recorded wrapper: on success `rec` (which may use
 * t1_) appends the argument-carrying event, on failure a plain Call. */
#define MPIT_RECORD(ret, fn, rec)                  \
    do {                                           \
        uint64_t t1_ = mpit_now();                 \
        if ((ret) == MPI_SUCCESS)                  \
            rec;                                   \
        else                                       \
            mpit_call(tb_, fn, t0_, t1_);          \
    } while (0)

#endif
