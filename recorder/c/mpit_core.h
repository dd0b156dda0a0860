/* mpitrace recorder core: what every recorder has, with or without MPI.
 *
 * The core keeps one thread buffer per recording thread, compresses full
 * buffers into self-contained blocks, writes the rank's log file (header,
 * string table, events, pending and end blocks), flushes on a timer, at
 * exit and on fatal signals. It knows nothing of MPI: the MPI layer
 * (mpit.h, mpit_runtime.c and the generated wrappers) and the loop markers
 * (mpit_loops.c) sit on it.
 *
 * Hot path: a recorder calls mpit_begin() (a thread-local load, a reentry
 * check and a table lookup), reads the clock, and appends one
 * varint-encoded event to the calling thread's buffer. Everything else
 * (files, tables, signals) is cold. */
#ifndef MPIT_CORE_H
#define MPIT_CORE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "mpit_events.h"

#if defined(__GNUC__)
#define MPIT_LIKELY(x) __builtin_expect(!!(x), 1)
#define MPIT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MPIT_HIDDEN __attribute__((visibility("hidden")))
#define MPIT_TLS __thread __attribute__((tls_model("initial-exec")))
#define MPIT_INLINE static inline __attribute__((always_inline))
#else
#define MPIT_LIKELY(x) (x)
#define MPIT_UNLIKELY(x) (x)
#define MPIT_HIDDEN
#define MPIT_TLS __thread
#define MPIT_INLINE static inline
#endif

/* Reserved room in front of a thread buffer's events for the block's frame
 * header and its events-block header (thread, seq, count, base). */
#define MPIT_BLOCK_PREFIX (MPIT_BLOCK_HEADER_SIZE + 4 * 10)

/* Entries of a thread's call-site cache (a power of two), and the entry
 * of a return address: call instructions are at least 5 bytes apart, and
 * the calls of one loop within a few hundred bytes. */
#define MPIT_SITE_CACHE 64
#define MPIT_SITE_SLOT(a) ((unsigned)((a) ^ ((a) >> 6)) & (MPIT_SITE_CACHE - 1))

/* One recording thread's buffer. Only its owner appends, and only the owner
 * reads len, count and last_end. It publishes them for the other threads
 * (the background flusher, signal handlers) as pub_lc (count << 32 | len, one
 * word, so a handler always reads a consistent pair) and pub_end, under the
 * sequence lock pubseq (odd while it updates them).
 *
 * The events [0, done_len) are on disk: the background flusher writes a
 * buffer's complete events while its owner goes on appending, so a rank that
 * is killed loses at most the last flush interval; the owner writes the rest
 * and starts the buffer afresh when it is full. */
typedef struct mpit_tb {
    uint8_t *buf;          /* MPIT_BLOCK_PREFIX bytes, then the events */
    size_t cap;            /* bytes available for events */
    size_t limit;          /* flush when len reaches this */
    size_t len;            /* owner: bytes of complete events */
    uint32_t count;        /* owner: events in the buffer */
    uint64_t last_end;     /* owner: end time of the last appended event */
    uint32_t pubseq;       /* sequence lock of pub_lc and pub_end */
    uint64_t pub_lc;       /* count << 32 | len, as published */
    uint64_t pub_end;      /* last_end, as published */
    /* Changed under G.io: */
    size_t done_len;       /* bytes of events already written */
    uint32_t done_count;   /* events already written */
    uint64_t done_end;     /* end time of the last written event */
    uint64_t seq;          /* stream index of the buffer's first event */
    uint64_t base;         /* time the buffer's first event's gap is relative to */
    uint32_t thread;       /* recorder thread index */
    int depth;             /* reentry guard: >0 inside a recorded call */
    int cur_fn;            /* the recorded call under way, until its event is appended */
    uint64_t cur_t0;       /* and its start (0 between calls) */
    uint32_t cur_site;     /* owner: the call site id of the recorded call under way */
    /* owner: a direct-mapped cache of the rank's call-site table
     * (return address -> site id) in front of mpit_site_slow's */
    uintptr_t site_addr[MPIT_SITE_CACHE];
    uint32_t site_id[MPIT_SITE_CACHE];
    pthread_mutex_t mu;    /* one compression of this buffer at a time */
    uint64_t pend_seq, pend_t0, pend_at; /* the last pending record written for it, and when */
    void *zctx;            /* compression context (used under mu) */
    uint8_t *zbuf;         /* compression output */
    size_t zcap;
    struct mpit_tb *next;  /* all buffers, for the flusher and the final flush */
} mpit_tb;

extern MPIT_HIDDEN MPIT_TLS mpit_tb *mpit_self;
extern MPIT_HIDDEN volatile int mpit_on;          /* recording enabled */
/* Per function: its id in this rank's log (the string id of its name), 0
 * when the function is not recorded, MPIT_FN_UNNAMED when it is recorded but
 * has not been called yet. Ids are given in the order of first use, so the
 * functions a program calls most often get one-byte ids. */
#define MPIT_FN_UNNAMED 0xffff
extern MPIT_HIDDEN uint16_t *mpit_fn_id;
#define MPIT_LOGID(fn) ((uint64_t)mpit_fn_id[fn])

MPIT_HIDDEN mpit_tb *mpit_tb_create(void);
MPIT_HIDDEN void mpit_flush_thread(mpit_tb *tb);
MPIT_HIDDEN void mpit_reserve_slow(mpit_tb *tb, size_t need);
MPIT_HIDDEN void mpit_announce(int fn);

static inline uint64_t mpit_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* mpit_begin returns the calling thread's buffer when this call of function
 * fn is to be recorded, NULL when it is to pass straight through (recording
 * off, function excluded, or nested inside another recorded MPI call). */
/* (Always inlined: the wrappers' hot path; the compiler would outline it
 * from the larger wrappers.) */
MPIT_INLINE mpit_tb *mpit_begin(int fn) {
    mpit_tb *tb = mpit_self;
    if (MPIT_UNLIKELY(tb == NULL)) {
        if (!mpit_on) return NULL;
        tb = mpit_tb_create();
        if (tb == NULL) return NULL;
    }
    if (tb->depth || !mpit_on) return NULL;
    uint16_t id = mpit_fn_id[fn];
    if (MPIT_UNLIKELY(id == 0 || id == MPIT_FN_UNNAMED)) {
        if (!id) return NULL;
        mpit_announce(fn);
    }
    __atomic_store_n(&tb->depth, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&tb->cur_fn, fn, __ATOMIC_RELAXED);
    return tb;
}

/* mpit_reserve makes room for `need` more bytes of events. */
static inline uint8_t *mpit_reserve(mpit_tb *tb, size_t need) {
    /* The call returned: its event is being appended. */
    __atomic_store_n(&tb->cur_fn, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&tb->cur_t0, 0, __ATOMIC_RELAXED);
    if (MPIT_UNLIKELY(tb->len + need > tb->cap)) mpit_reserve_slow(tb, need);
    return tb->buf + MPIT_BLOCK_PREFIX + tb->len;
}

/* mpit_publish makes the owner's len, count and last_end visible to the
 * other threads. */
static inline void mpit_publish(mpit_tb *tb) {
    uint32_t s = tb->pubseq;
    __atomic_store_n(&tb->pubseq, s + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&tb->pub_end, tb->last_end, __ATOMIC_RELAXED);
    __atomic_store_n(&tb->pub_lc, (uint64_t)tb->count << 32 | tb->len, __ATOMIC_RELAXED);
    __atomic_store_n(&tb->pubseq, s + 2, __ATOMIC_RELEASE);
}

/* mpit_commit publishes the event that ends at p and leaves the call. */
static inline void mpit_commit(mpit_tb *tb, uint8_t *p, uint64_t end) {
    tb->last_end = end;
    tb->len = (size_t)(p - (tb->buf + MPIT_BLOCK_PREFIX));
    tb->count++;
    mpit_publish(tb);
    /* The guard is held while the buffer is written: a marker recorded by
     * a signal handler meanwhile would wait for the buffer's lock this
     * thread holds. */
    if (MPIT_UNLIKELY(tb->len >= tb->limit)) mpit_flush_thread(tb);
    __atomic_store_n(&tb->depth, 0, __ATOMIC_RELAXED);
}

/* mpit_abandon leaves a call whose event could not be built. */
static inline void mpit_abandon(mpit_tb *tb) { __atomic_store_n(&tb->depth, 0, __ATOMIC_RELAXED); }

#define MPIT_GAP(tb, t0) ((int64_t)((t0) - (tb)->last_end))

/* Call sites. A recorded call's site is the return address of the
 * application's call into MPI, interned per rank: ids 1, 2, ... in the
 * order of first use by any thread. The first use appends the Site event
 * (and, for an address no recorded mapping holds, the Map events of the
 * objects loaded since the last scan) to the calling thread's buffer,
 * under a lock; later uses hit the thread's cache. */
MPIT_HIDDEN uint32_t mpit_site_slow(mpit_tb *tb, uintptr_t addr);

MPIT_INLINE uint32_t mpit_site(mpit_tb *tb, uintptr_t addr) {
    unsigned h = MPIT_SITE_SLOT(addr);
    if (MPIT_LIKELY(tb->site_addr[h] == addr)) return tb->site_id[h];
    return mpit_site_slow(tb, addr);
}

/* MPIT_SITE is the site of the call whose event tb's owner is appending. */
#define MPIT_SITE(tb) ((uint64_t)(tb)->cur_site)

/* The generic event: a call without arguments. */
static inline void mpit_call(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1) {
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_CALL);
    p = mpit_put_call(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, MPIT_SITE(tb));
    mpit_commit(tb, p, t1);
}

/* ---- the core's shared state and services (mpit_core.c) ---- */

/* The recording's global state. The MPI layer fills rank and size at
 * MPI_Init; a program without MPI gets them from mpit_env_rank(). */
struct mpit_global {
    int fd;                /* log file, -1 until it is opened */
    int rank, size;
    pid_t pid;             /* the process that opened the log (fork guard) */
    char path[4096];
    char dir[4000];
    char run_id[128];
    char state_dir[4000];  /* where the warn-once marker goes (set by `record`) */
    size_t bufsize;        /* events bytes per block */
    int zlevel;
    int compress;          /* 0: events blocks are stored uncompressed */
    int failed;            /* writing failed: recording stopped */
    int finalized;         /* MPI_Finalize has returned */
    int signalled;         /* a fatal signal flushed the buffers */
    int flush_ms;          /* time-based flush interval, 0: none */
    int flusher_stop;      /* the final flush has begun: the flusher stops */
    int test_signal;       /* MPITRACE_TEST_SIGNAL_IN_FLUSH, for the fault tests */
    int ended;             /* an end block describes everything written */
    int opened;            /* the log was opened (or opening it failed) */
    int has_mpi;           /* the MPI layer is linked in: it opens the log at MPI_Init */
    int defer_end;         /* Kokkos is initialised: its finalisation, not MPI's, ends the log */
    int run_id_drawn;      /* run_id was drawn here, not given by `record` */
    uint64_t events, blocks, dropped;
    uint32_t nthreads;
    mpit_tb *threads;      /* all buffers */
    pthread_mutex_t io;    /* serialises writes to fd */
    pthread_mutex_t tl;    /* protects the thread list */
    pthread_key_t key;
    char options[512];
};
extern MPIT_HIDDEN struct mpit_global mpit_G;

/* The function names of the layer above (the generated wrappers' table),
 * indexed by function, 1..mpit_fn_count; none in a recorder without MPI. */
extern MPIT_HIDDEN const char *const *mpit_fn_name;
extern MPIT_HIDDEN int mpit_fn_n;

MPIT_HIDDEN void mpit_warn_once(const char *tag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
MPIT_HIDDEN long mpit_env_long(const char *name, long def, long lo, long hi);
MPIT_HIDDEN uint64_t mpit_mix64(uint64_t x);
/* mpit_env_rank is the rank a launcher gave the process in its
 * environment (Open MPI, PMI, PMIx, Slurm), else 0. */
MPIT_HIDDEN int mpit_env_rank(void);

/* mpit_core_open opens the log of rank G.rank and writes its header: the
 * core's keys, then the n extra key/value pairs of the layer above. */
MPIT_HIDDEN int mpit_core_open(const char *const (*extra)[2], int n);
/* mpit_core_start starts what a recording needs once the log is open:
 * the fatal-signal handlers and the time-based flush. */
MPIT_HIDDEN void mpit_core_start(void);
/* mpit_core_off stops recording for good (the process is not to be
 * recorded: another MPI's program). */
MPIT_HIDDEN void mpit_core_off(void);
MPIT_HIDDEN void mpit_final_flush(int reason, int sig);
/* What the final flush records about an abnormal end (an MPI_Abort, an
 * MPI error). */
struct mpit_why {
    uint64_t code;
    int fn;
    char msg[256];
};
extern MPIT_HIDDEN struct mpit_why mpit_why;
MPIT_HIDDEN uint8_t *mpit_reserve_list(mpit_tb *tb, size_t need);

/* mpit_intern gives the string s an id in this rank's string table (the
 * string is copied); 0 when it cannot. Cold path: it takes a lock. */
MPIT_HIDDEN uint64_t mpit_intern(const char *s);

/* mpit_hash is the FNV-1a hash of n bytes. */
static inline uint64_t mpit_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}
/* mpit_name_id gives the n bytes at s (hash h = mpit_hash(s, n)) the string
 * id every equal name gets; 0 when it cannot. *owned (if not NULL) is set
 * to the recorder's copy, which lives as long as the process. Cold path: it
 * takes a lock. */
MPIT_HIDDEN uint64_t mpit_name_id(const char *s, size_t n, uint64_t h, const char **owned);

/* mpit_marker_tb returns the calling thread's buffer ready for an event of
 * a marker (loop, region, Kokkos callback) with the reentry guard taken,
 * NULL when none is to be appended (no buffer yet, recording off, inside a
 * recorded MPI call). The event ends with mpit_commit. */
static inline mpit_tb *mpit_marker_tb(void) {
    mpit_tb *tb = mpit_self;
    if (MPIT_UNLIKELY(tb == NULL) || tb->depth || !mpit_on) return NULL;
    __atomic_store_n(&tb->depth, 1, __ATOMIC_RELAXED);
    return tb;
}

/* The loop markers (mpit_loops.c). */
MPIT_HIDDEN void mpit_loops_load(void);                /* reads the environment */
MPIT_HIDDEN void mpit_loops_header(const char *kv[3][2]); /* their header keys */
MPIT_HIDDEN void mpit_loops_thread_end(void);          /* closes the thread's open loops */
MPIT_HIDDEN int mpit_loops_open(void);                 /* the thread has loops open */

/* Regions and the Kokkos Tools callbacks (mpit_kokkos.c). */
MPIT_HIDDEN void mpit_kokkos_load(void);               /* reads the environment */
MPIT_HIDDEN void mpit_kokkos_thread_end(void);         /* closes the thread's open regions and kernels */
MPIT_HIDDEN int mpit_kokkos_open(void);                /* the thread has regions or kernels open */
MPIT_HIDDEN void mpit_region_push(const char *name);
MPIT_HIDDEN void mpit_region_push_n(const char *name, uintptr_t len);
MPIT_HIDDEN void mpit_region_pop(void);

#endif
