/* mpitrace recorder runtime: buffers, log file, tables, clocks, signals.
 *
 * See docs/format.md for the file layout and docs/recording.md for the
 * behaviour (what is recorded, controls, failure handling). */
#define _GNU_SOURCE
#include "mpit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>
#include <zstd.h>

#ifndef MPIT_VERSION
#define MPIT_VERSION "0.1.0"
#endif

/* Provided by the generated wrappers. */
extern const char *const mpit_fn_names[];
extern const int mpit_fn_count;

MPIT_HIDDEN MPIT_TLS mpit_tb *mpit_self;
MPIT_HIDDEN volatile int mpit_on;
static uint16_t mpit_fn_none[1];
MPIT_HIDDEN uint16_t *mpit_fn_id = mpit_fn_none;
MPIT_HIDDEN mpit_comm mpit_comm_world, mpit_comm_self;

/* ------------------------------------------------------------------ */
/* Global state                                                        */

static struct {
    int fd;                /* log file, -1 until MPI_Init */
    int rank, size;
    pid_t pid;             /* the process that opened the log (fork guard) */
    char path[4096];
    char dir[4000];
    char run_id[128];
    char state_dir[4000];  /* where the warn-once marker goes (set by `record`) */
    size_t bufsize;        /* events bytes per block */
    int zlevel;
    int compress;          /* 0: events blocks are stored uncompressed */
    int clocksync;         /* rounds per rank; 0 disables */
    int failed;            /* writing failed: recording stopped */
    int finalized;         /* MPI_Finalize has returned */
    int signalled;         /* a fatal signal flushed the buffers */
    int test_signal;       /* MPITRACE_TEST_SIGNAL_IN_FLUSH, for the fault tests */
    int ended;             /* an end block describes everything written */
    uint64_t events, blocks, dropped;
    uint32_t nthreads;
    mpit_tb *threads;      /* all buffers */
    pthread_mutex_t io;    /* serialises writes to fd */
    pthread_mutex_t tl;    /* protects the thread list */
    pthread_key_t key;
    MPI_Comm priv;         /* private duplicate of MPI_COMM_WORLD */
    uint64_t next_comm;    /* next rank-local communicator index */
    uint64_t next_req;     /* next request id */
    char options[512];
} G = {.fd = -1, .io = PTHREAD_MUTEX_INITIALIZER, .tl = PTHREAD_MUTEX_INITIALIZER};

static void mpit_final_flush(int reason, int sig);

/* ------------------------------------------------------------------ */
/* Messages: one line, prefixed, and at most once per recording for    */
/* problems every rank would otherwise repeat.                          */

static void mpit_warn_once(const char *tag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mpit_warn_once(const char *tag, const char *fmt, ...) {
    /* `record` gives a directory for the markers; by hand, ranks share the
     * run id (rank 0 broadcasts it) and the markers go to $TMPDIR. */
    char marker[4200] = "";
    if (G.state_dir[0]) {
        snprintf(marker, sizeof marker, "%s/warned-%s", G.state_dir, tag);
    } else if (G.run_id[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(marker, sizeof marker, "%s/mpitrace-%s-warned-%s", tmp && *tmp ? tmp : "/tmp", G.run_id, tag);
    }
    if (marker[0]) {
        int fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST) return; /* another rank said it */
        if (fd >= 0) close(fd);
    }
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n > sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(2, line, (size_t)n);
    (void)w;
}

/* ------------------------------------------------------------------ */
/* CRC-32C (Castagnoli), reflected, table driven.                       */

static uint32_t crc_table[256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
    while (n--) crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* frame fills the MPIT_BLOCK_HEADER_SIZE bytes before payload. */
static void frame(uint8_t *payload, int type, int codec, size_t stored, size_t raw) {
    uint8_t *h = payload - MPIT_BLOCK_HEADER_SIZE;
    put32(h, MPIT_BLOCK_SYNC);
    h[4] = (uint8_t)type;
    h[5] = (uint8_t)codec;
    h[6] = h[7] = 0;
    put32(h + 8, (uint32_t)stored);
    put32(h + 12, (uint32_t)raw);
    uint32_t crc = crc_update(0, h + 4, 12);
    crc = crc_update(crc, payload, stored);
    put32(h + 16, crc);
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */

static void write_failed(int err) {
    if (G.failed) return;
    G.failed = 1;
    mpit_on = 0;
    mpit_warn_once("write", "mpitrace: rank %d: cannot write %s: %s; recording stopped, the application continues",
                   G.rank, G.path, strerror(err));
}

/* write_all writes n bytes or reports the failure once. Callers hold G.io
 * (or are the signal handler). Returns 0 on success. */
static int write_all(const uint8_t *p, size_t n) {
    if (G.fd < 0 || G.failed) return -1;
    while (n > 0) {
        ssize_t w = write(G.fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            write_failed(errno);
            return -1;
        }
        if (w == 0) {
            write_failed(ENOSPC);
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A small growable byte buffer for the cold-path blocks. */
typedef struct {
    uint8_t *p;
    size_t len, cap;
} bbuf;

static int bb_grow(bbuf *b, size_t more) {
    if (b->len + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap * 2 : 1024;
    while (cap < b->len + more) cap *= 2;
    uint8_t *q = realloc(b->p, cap);
    if (!q) return -1;
    b->p = q;
    b->cap = cap;
    return 0;
}
static void bb_u(bbuf *b, uint64_t v) {
    if (bb_grow(b, 10) == 0) b->len = (size_t)(mpit_put_u(b->p + b->len, v) - b->p);
}
static void bb_str(bbuf *b, const char *s) {
    size_t n = strlen(s);
    bb_u(b, n);
    if (bb_grow(b, n) == 0) {
        memcpy(b->p + b->len, s, n);
        b->len += n;
    }
}

/* write_plain writes a cold-path block (codec none) whose payload is b's
 * contents after the reserved frame header. */
static void write_plain(bbuf *b, int type) {
    if (!b->p) return;
    size_t n = b->len - MPIT_BLOCK_HEADER_SIZE;
    frame(b->p + MPIT_BLOCK_HEADER_SIZE, type, MPIT_CODEC_NONE, n, n);
    write_all(b->p, b->len);
}

static void bb_start(bbuf *b) {
    b->p = NULL;
    b->len = b->cap = 0;
    if (bb_grow(b, MPIT_BLOCK_HEADER_SIZE) == 0) b->len = MPIT_BLOCK_HEADER_SIZE;
}

/* ------------------------------------------------------------------ */
/* Thread buffers                                                      */

static void tb_destroy(void *arg);

MPIT_HIDDEN mpit_tb *mpit_tb_create(void) {
    mpit_tb *tb = calloc(1, sizeof *tb);
    if (!tb) return NULL;
    tb->limit = G.bufsize;
    tb->cap = G.bufsize + 4096;
    tb->buf = malloc(MPIT_BLOCK_PREFIX + tb->cap);
    tb->zcap = ZSTD_compressBound(tb->cap + MPIT_BLOCK_PREFIX);
    tb->zbuf = malloc(MPIT_BLOCK_HEADER_SIZE + tb->zcap);
    tb->zctx = ZSTD_createCCtx();
    if (!tb->buf || !tb->zbuf || !tb->zctx) {
        free(tb->buf);
        free(tb->zbuf);
        if (tb->zctx) ZSTD_freeCCtx(tb->zctx);
        free(tb);
        return NULL;
    }
    tb->base = tb->last_end = mpit_now();
    pthread_mutex_lock(&G.tl);
    tb->thread = G.nthreads++;
    tb->next = G.threads;
    G.threads = tb;
    pthread_mutex_unlock(&G.tl);
    mpit_self = tb;
    pthread_setspecific(G.key, tb);
    return tb;
}

/* block_payload puts the events-block header right before the events and
 * returns where the payload starts. */
static uint8_t *block_payload(mpit_tb *tb, size_t len, uint32_t count, size_t *plen) {
    uint8_t hdr[40], *h = hdr;
    h = mpit_put_u(h, tb->thread);
    h = mpit_put_u(h, tb->seq);
    h = mpit_put_u(h, count);
    h = mpit_put_u(h, tb->base);
    size_t hl = (size_t)(h - hdr);
    uint8_t *start = tb->buf + MPIT_BLOCK_PREFIX - hl;
    memcpy(start, hdr, hl);
    *plen = hl + len;
    return start;
}

/* reset starts the next block after `count` events were handed over. */
static void tb_reset(mpit_tb *tb, uint32_t count) {
    tb->base = tb->last_end;
    tb->count = 0;
    __atomic_store_n(&tb->len, 0, __ATOMIC_RELEASE);
    /* Last: mpit_flush_thread compares it to tell whether a handler wrote
     * the buffer while it was compressing it. */
    __atomic_store_n(&tb->seq, tb->seq + count, __ATOMIC_RELEASE);
}

/* Function names are written to the log's string table when a function is
 * first recorded, so a log names only the functions it uses. */
static int *pending_names;  /* function ids waiting for a strings block */
static int npending;
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;

static uint16_t next_logid;

/* name_fn gives fn its log id and queues its name; callers hold names_mu
 * (or are the signal handler). */
static void name_fn(int fn) {
    if (mpit_fn_id[fn] == MPIT_FN_UNNAMED && pending_names) {
        pending_names[npending++] = fn;
        mpit_fn_id[fn] = ++next_logid;
    }
}

MPIT_HIDDEN void mpit_announce(int fn) {
    pthread_mutex_lock(&names_mu);
    name_fn(fn);
    pthread_mutex_unlock(&names_mu);
}

/* write_names writes the queued names as one strings block; callers hold
 * G.io. In a signal handler (`locked` false) it takes no lock and allocates
 * nothing, writing the names one block each. */
static void write_names(int locked) {
    if (locked) pthread_mutex_lock(&names_mu);
    if (npending > 0) {
        if (locked) {
            bbuf s;
            bb_start(&s);
            bb_u(&s, (uint64_t)npending);
            for (int i = 0; i < npending; i++) {
                bb_u(&s, MPIT_LOGID(pending_names[i]));
                bb_str(&s, mpit_fn_names[pending_names[i]]);
            }
            write_plain(&s, MPIT_BLOCK_STRINGS);
            free(s.p);
        } else {
            for (int i = 0; i < npending; i++) {
                uint8_t one[MPIT_BLOCK_HEADER_SIZE + 300], *p = one + MPIT_BLOCK_HEADER_SIZE;
                const char *name = mpit_fn_names[pending_names[i]];
                size_t n = strlen(name);
                if (n > 256) n = 256;
                p = mpit_put_u(p, 1);
                p = mpit_put_u(p, MPIT_LOGID(pending_names[i]));
                p = mpit_put_u(p, n);
                memcpy(p, name, n);
                p += n;
                size_t len = (size_t)(p - one);
                frame(one + MPIT_BLOCK_HEADER_SIZE, MPIT_BLOCK_STRINGS, MPIT_CODEC_NONE,
                      len - MPIT_BLOCK_HEADER_SIZE, len - MPIT_BLOCK_HEADER_SIZE);
                write_all(one, len);
            }
        }
        if (!G.failed) npending = 0;
    }
    if (locked) pthread_mutex_unlock(&names_mu);
}

/* The signals whose handlers write the log (install_signals fills it).
 * A thread holds them off while it writes, so a handler never meets a block
 * of its own thread half compressed or half written: the signal is
 * delivered right after, when the block is on disk. */
static sigset_t flush_signals;

static void hold_signals(sigset_t *old) { pthread_sigmask(SIG_BLOCK, &flush_signals, old); }
static void release_signals(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

/* mpit_flush_thread compresses and writes tb's events. tb->flushing is 1
 * while the buffer is being compressed (nothing written yet: a fatal
 * signal's handler on another thread writes it as it is) and 2 while this
 * thread writes it under G.io. */
MPIT_HIDDEN void mpit_flush_thread(mpit_tb *tb) {
    if (tb->count == 0 || G.fd < 0 || G.failed || G.signalled || getpid() != G.pid) return;
    sigset_t old;
    hold_signals(&old);
    /* seq first: a handler that writes this buffer meanwhile (tb_reset)
     * changes it last, so seeing the old seq here and the same one under
     * G.io below means nobody else wrote these events. */
    uint64_t seq = __atomic_load_n(&tb->seq, __ATOMIC_ACQUIRE);
    uint32_t count = tb->count;
    size_t len = __atomic_load_n(&tb->len, __ATOMIC_ACQUIRE);
    if (count == 0) {
        release_signals(&old);
        return;
    }
    tb->flushing = 1;
    size_t plen;
    uint8_t *payload = block_payload(tb, len, count, &plen);
    size_t z = G.compress ? ZSTD_compressCCtx(tb->zctx, tb->zbuf + MPIT_BLOCK_HEADER_SIZE, tb->zcap, payload, plen, G.zlevel)
                          : plen; /* stored as is */
    if (G.test_signal) {
        /* Fault tests: the launcher's signal arrives in the middle of a flush. */
        int sig = G.test_signal;
        G.test_signal = 0;
        kill(getpid(), sig);
    }
    pthread_mutex_lock(&G.io);
    if (G.signalled || tb->seq != seq) {
        /* A handler (a fatal signal's, or the buffer's own thread's SIGCONT
         * while another thread flushes it at exit) wrote this buffer while
         * it was being compressed. After a fatal signal nothing more is
         * written. */
        pthread_mutex_unlock(&G.io);
        tb->flushing = 0;
        release_signals(&old);
        return;
    }
    tb->flushing = 2;
    write_names(1);
    if (!ZSTD_isError(z) && z < plen) {
        frame(tb->zbuf + MPIT_BLOCK_HEADER_SIZE, MPIT_BLOCK_EVENTS, MPIT_CODEC_ZSTD, z, plen);
        write_all(tb->zbuf, MPIT_BLOCK_HEADER_SIZE + z);
    } else {
        frame(payload, MPIT_BLOCK_EVENTS, MPIT_CODEC_NONE, plen, plen);
        write_all(payload - MPIT_BLOCK_HEADER_SIZE, MPIT_BLOCK_HEADER_SIZE + plen);
    }
    if (!G.failed) {
        G.events += count;
        G.blocks++;
        G.ended = 0;
    } else {
        G.dropped += count;
    }
    tb_reset(tb, count);
    tb->flushing = 0;
    pthread_mutex_unlock(&G.io);
    release_signals(&old);
}

MPIT_HIDDEN void mpit_reserve_slow(mpit_tb *tb, size_t need) {
    if (tb->count > 0 && G.fd >= 0) mpit_flush_thread(tb);
    if (tb->len + need <= tb->cap) return;
    /* Before MPI_Init (no file yet), after a write failure, or for one huge
     * event: grow the buffer, within the block size bound. */
    size_t cap = tb->cap;
    while (cap < tb->len + need) cap *= 2;
    if (cap + MPIT_BLOCK_PREFIX > MPIT_MAX_BLOCK_SIZE / 2) return; /* caller checks */
    uint8_t *b = realloc(tb->buf, MPIT_BLOCK_PREFIX + cap);
    if (!b) return;
    tb->buf = b;
    size_t zcap = ZSTD_compressBound(cap + MPIT_BLOCK_PREFIX);
    uint8_t *z = realloc(tb->zbuf, MPIT_BLOCK_HEADER_SIZE + zcap);
    if (!z) return;
    tb->zbuf = z;
    tb->zcap = zcap;
    tb->cap = cap;
}

/* reserve_list is mpit_reserve for events whose size depends on input; it
 * returns NULL (and counts a dropped event) when the event cannot fit. */
static uint8_t *reserve_list(mpit_tb *tb, size_t need) {
    uint8_t *p = mpit_reserve(tb, need);
    if (tb->len + need > tb->cap) {
        __atomic_fetch_add(&G.dropped, 1, __ATOMIC_RELAXED);
        mpit_abandon(tb);
        return NULL;
    }
    return p;
}

static void tb_destroy(void *arg) {
    mpit_tb *tb = arg;
    /* The thread is exiting: write what it recorded. The buffer stays on
     * the list (the final flush skips it once empty). */
    if (tb && tb->count) mpit_flush_thread(tb);
}

/* ------------------------------------------------------------------ */
/* Log file                                                            */

static void header_block(void) {
    bbuf b;
    bb_start(&b);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
    int liblen = 0;
    PMPI_Get_library_version(lib, &liblen);
    for (int i = 0; i < liblen && lib[i]; i++)
        if (lib[i] == '\n') lib[i] = ' ';
    while (liblen > 0 && (lib[liblen - 1] == ' ' || lib[liblen - 1] == '\0')) lib[--liblen] = '\0';
    int ver = 0, sub = 0;
    PMPI_Get_version(&ver, &sub);
    int provided = 0;
    PMPI_Query_thread(&provided);
    const char *level = provided == MPI_THREAD_MULTIPLE     ? "multiple"
                        : provided == MPI_THREAD_SERIALIZED ? "serialized"
                        : provided == MPI_THREAD_FUNNELED   ? "funneled"
                                                            : "single";
    struct timespec rt, res;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t mono = mpit_now();
    clock_getres(CLOCK_MONOTONIC, &res);
    char num[12][32];
    snprintf(num[0], 32, "%d", G.rank);
    snprintf(num[1], 32, "%d", G.size);
    snprintf(num[2], 32, "%ld", (long)getpid());
    snprintf(num[3], 32, "%d.%d", ver, sub);
    snprintf(num[4], 32, "%ld", (long)res.tv_nsec + (long)res.tv_sec * 1000000000L);
    snprintf(num[5], 32, "%llu", (unsigned long long)rt.tv_sec * 1000000000ull + (unsigned long long)rt.tv_nsec);
    snprintf(num[6], 32, "%llu", (unsigned long long)mono);
    const char *kv[][2] = {
        {"rank", num[0]},
        {"size", num[1]},
        {"run_id", G.run_id},
        {"hostname", host},
        {"pid", num[2]},
        {"mpi_library", lib},
        {"mpi_version", num[3]},
        {"recorder_version", MPIT_VERSION},
        {"clock", "CLOCK_MONOTONIC"},
        {"clock_res_ns", num[4]},
        {"init_realtime_ns", num[5]},
        {"init_monotonic_ns", num[6]},
        {"thread_level", level},
        {"options", G.options},
    };
    size_t n = sizeof kv / sizeof kv[0];
    bb_u(&b, n);
    for (size_t i = 0; i < n; i++) {
        bb_str(&b, kv[i][0]);
        bb_str(&b, kv[i][1]);
    }
    write_plain(&b, MPIT_BLOCK_HEADER);
    free(b.p);

}

static void open_log(void) {
    if (!mpit_on) return;
    if (G.dir[0]) mkdir(G.dir, 0777); /* `record` made it; by hand it may not exist */
    snprintf(G.path, sizeof G.path, "%s/rank-%05d.mpit", G.dir[0] ? G.dir : ".", G.rank);
    int fd = open(G.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        int err = errno;
        G.failed = 1;
        mpit_on = 0;
        if (err == EEXIST)
            mpit_warn_once("exists", "mpitrace: rank %d: %s already exists: a trace directory holds one recording; choose another directory (MPITRACE_DIR or `mpitrace record --out`); recording disabled, the application continues",
                           G.rank, G.path);
        else
            mpit_warn_once("open", "mpitrace: rank %d: cannot create %s: %s; recording disabled, the application continues",
                           G.rank, G.path, strerror(err));
        return;
    }
    G.fd = fd;
    G.pid = getpid();
    uint8_t magic[MPIT_MAGIC_LEN + 2];
    memcpy(magic, MPIT_MAGIC, MPIT_MAGIC_LEN);
    magic[MPIT_MAGIC_LEN] = (uint8_t)(MPIT_FORMAT_VERSION & 0xff);
    magic[MPIT_MAGIC_LEN + 1] = (uint8_t)(MPIT_FORMAT_VERSION >> 8);
    pthread_mutex_lock(&G.io);
    if (write_all(magic, sizeof magic) == 0) header_block();
    pthread_mutex_unlock(&G.io);
}

static void end_block(int reason, int sig) {
    bbuf b;
    uint8_t stackbuf[MPIT_BLOCK_HEADER_SIZE + 70];
    /* No malloc: this runs in signal handlers too. */
    b.p = stackbuf;
    b.cap = sizeof stackbuf;
    b.len = MPIT_BLOCK_HEADER_SIZE;
    uint8_t *p = b.p + b.len;
    p = mpit_put_u(p, (uint64_t)reason);
    p = mpit_put_u(p, (uint64_t)sig);
    p = mpit_put_u(p, G.events);
    p = mpit_put_u(p, G.blocks);
    p = mpit_put_u(p, mpit_now());
    p = mpit_put_u(p, G.dropped);
    b.len = (size_t)(p - b.p);
    write_plain(&b, MPIT_BLOCK_END);
}

/* ------------------------------------------------------------------ */
/* Final flush: normal exit, exit without finalize, abort, signals.     */

/* flush_raw writes a thread's complete events as an uncompressed block; it
 * allocates nothing and takes no lock, so a signal handler can call it. A
 * buffer being compressed (flushing 1) is intact and is written; one being
 * written by its thread (flushing 2) is left to that thread. */
static int flush_raw(mpit_tb *tb) {
    size_t len = __atomic_load_n(&tb->len, __ATOMIC_ACQUIRE);
    uint32_t count = tb->count;
    if (count == 0 || tb->flushing == 2) return 0;
    size_t plen;
    uint8_t *payload = block_payload(tb, len, count, &plen);
    frame(payload, MPIT_BLOCK_EVENTS, MPIT_CODEC_NONE, plen, plen);
    int ok = write_all(payload - MPIT_BLOCK_HEADER_SIZE, MPIT_BLOCK_HEADER_SIZE + plen) == 0;
    if (ok) {
        G.events += count;
        G.blocks++;
    }
    tb_reset(tb, count);
    return ok;
}

static void mpit_final_flush(int reason, int sig) {
    if (G.fd < 0 || getpid() != G.pid) return;
    if (reason == MPIT_END_SIGNAL) {
        /* Stop recording; no flush starts after this. */
        mpit_on = 0;
        G.signalled = 1;
        /* Another thread may be writing a block; give it a moment. (This
         * thread is not the writer unless the signal is a fault raised by
         * the recorder itself: the others are held off while it writes.) */
        int locked = pthread_mutex_trylock(&G.io) == 0;
        for (int i = 0; i < 1000 && !locked; i++) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
            locked = pthread_mutex_trylock(&G.io) == 0;
        }
        if (G.ended) {
            /* Killed after the final flush (e.g. after MPI_Finalize, while
             * the launcher stops the job, or while this handler waited for
             * the exit flush to finish): the log is complete as it is. */
            int pending = 0;
            for (mpit_tb *tb = G.threads; tb; tb = tb->next) pending |= tb->count != 0 || (tb->depth && tb->cur_fn);
            if (!pending) {
                if (locked) pthread_mutex_unlock(&G.io);
                return;
            }
        }
        /* A call under way (e.g. a rank stopped inside MPI_Recv) is
         * recorded as a plain call that ends now. */
        uint64_t now = mpit_now();
        for (mpit_tb *tb = G.threads; tb; tb = tb->next) {
            int fn = tb->cur_fn;
            if (tb->depth && fn > 0 && fn <= mpit_fn_count && tb->len + MPIT_MAXSIZE_CALL <= tb->cap) {
                name_fn(fn);
                uint8_t *p = tb->buf + MPIT_BLOCK_PREFIX + tb->len;
                p = mpit_put_call(p, MPIT_LOGID(fn), MPIT_GAP(tb, tb->cur_t0), now - tb->cur_t0);
                tb->last_end = now;
                tb->len = (size_t)(p - (tb->buf + MPIT_BLOCK_PREFIX));
                tb->count++;
                tb->cur_fn = 0;
            }
        }
        write_names(0);
        for (mpit_tb *tb = G.threads; tb; tb = tb->next) flush_raw(tb);
        if (!G.failed) end_block(reason, sig);
        G.ended = 1;
        /* Nothing writes after this: every writer checks G.signalled. */
        if (locked) pthread_mutex_unlock(&G.io);
        return;
    }
    sigset_t old;
    hold_signals(&old);
    for (mpit_tb *tb = G.threads; tb; tb = tb->next) {
        if (tb == mpit_self || tb->count == 0) continue;
        mpit_flush_thread(tb); /* other threads: best effort, they should be done */
    }
    if (mpit_self) mpit_flush_thread(mpit_self);
    pthread_mutex_lock(&G.io);
    if (!G.failed && !G.ended) end_block(reason, sig);
    G.ended = 1;
    pthread_mutex_unlock(&G.io);
    release_signals(&old);
}

static void at_exit(void) {
    if (G.fd < 0) return;
    mpit_final_flush(G.finalized ? MPIT_END_FINALIZE : MPIT_END_EXIT, 0);
}

/* Fatal signals: flush, then let the previous disposition act. */
static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGTERM, SIGFPE, SIGILL, SIGINT, SIGQUIT};
#define NSIG_FATAL (int)(sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction old_actions[NSIG_FATAL];

/* run_as_delivered runs the handler the program had installed (old) as the
 * kernel would have: with the mask in force when the signal arrived, plus
 * that handler's sa_mask and the signal itself. (Our handlers run with the
 * flush signals held off; a program handler that longjmps out must not
 * leave them blocked.) It returns 0 when old is the default action, for the
 * caller to carry out. */
static int run_as_delivered(int sig, siginfo_t *info, const struct sigaction *old, void *uctx) {
    int siginfo = (old->sa_flags & SA_SIGINFO) != 0;
    if (siginfo ? old->sa_sigaction == NULL : old->sa_handler == SIG_DFL) return 0;
    if (!siginfo && old->sa_handler == SIG_IGN) return 1;
    if (uctx) {
        sigset_t mask = ((ucontext_t *)uctx)->uc_sigmask;
        for (int s = 1; s < NSIG; s++)
            if (sigismember(&old->sa_mask, s) == 1) sigaddset(&mask, s);
        if (!(old->sa_flags & SA_NODEFER)) sigaddset(&mask, sig);
        pthread_sigmask(SIG_SETMASK, &mask, NULL);
    }
    if (siginfo)
        old->sa_sigaction(sig, info, uctx);
    else
        old->sa_handler(sig);
    return 1;
}

static void on_signal(int sig, siginfo_t *info, void *uctx) {
    int saved = errno;
    int i;
    for (i = 0; i < NSIG_FATAL; i++)
        if (fatal_signals[i] == sig) break;
    if (!G.signalled) mpit_final_flush(MPIT_END_SIGNAL, sig);
    errno = saved;
    if (i == NSIG_FATAL) return;
    if (run_as_delivered(sig, info, &old_actions[i], uctx)) return;
    /* Default action: restore it and deliver the signal again. */
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
}

/* SIGCONT: when Open MPI stops a job it sends SIGCONT, then SIGTERM a second
 * later and SIGKILL a few milliseconds after that: too little time for a
 * rank on a loaded node to be scheduled and flush. So SIGCONT writes the
 * receiving thread's buffer when that thread is outside any MPI call (its
 * buffer is then idle), and recording goes on; the SIGTERM that may follow
 * has little left to write. A handler the program installed still runs. */
static struct sigaction old_cont;

static void on_cont(int sig, siginfo_t *info, void *uctx) {
    int saved = errno;
    mpit_tb *tb = mpit_self;
    if (tb && !tb->depth && !tb->flushing && tb->count && !G.signalled && G.fd >= 0 && getpid() == G.pid &&
        pthread_mutex_trylock(&G.io) == 0) {
        /* Checked again under the lock: a fatal signal's handler or an exit
         * flush on another thread may have got there first. */
        if (!G.signalled && !tb->flushing && tb->count) {
            write_names(0);
            if (flush_raw(tb)) G.ended = 0;
        }
        pthread_mutex_unlock(&G.io);
    }
    errno = saved;
    run_as_delivered(sig, info, &old_cont, uctx);
}

static void install_signals(void) {
    /* Held off while a thread writes the log, and while a handler does:
     * only the signals other processes send, since a fault (SIGSEGV,
     * SIGBUS, SIGFPE, SIGILL) raised while blocked kills at once. */
    sigemptyset(&flush_signals);
    sigaddset(&flush_signals, SIGCONT);
    sigaddset(&flush_signals, SIGTERM);
    sigaddset(&flush_signals, SIGINT);
    sigaddset(&flush_signals, SIGQUIT);
    sigaddset(&flush_signals, SIGABRT);
    struct sigaction sc;
    memset(&sc, 0, sizeof sc);
    sc.sa_sigaction = on_cont;
    sc.sa_flags = SA_SIGINFO | SA_RESTART;
    sc.sa_mask = flush_signals;
    sigaction(SIGCONT, &sc, &old_cont);
    for (int i = 0; i < NSIG_FATAL; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        sa.sa_mask = flush_signals;
        sigaction(fatal_signals[i], &sa, &old_actions[i]);
    }
}

/* ------------------------------------------------------------------ */
/* Hash tables for communicators, requests and matched messages.        */

typedef struct {
    uint64_t key;
    uint64_t id;
    void *ptr;
    uint32_t owner; /* recorder thread that added it (requests) */
    int16_t kind;
    int16_t used;
} slot;

typedef struct {
    slot *s;
    size_t cap, n;
    pthread_mutex_t mu;
} table;

static table comms = {.mu = PTHREAD_MUTEX_INITIALIZER};
static table reqs = {.mu = PTHREAD_MUTEX_INITIALIZER};
static table msgs = {.mu = PTHREAD_MUTEX_INITIALIZER};

#define KEY(h) key_of(&(h), sizeof(h))
static inline uint64_t key_of(const void *h, size_t n) {
    uint64_t k = 0;
    memcpy(&k, h, n < 8 ? n : 8);
    return k;
}

static inline size_t hash_key(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k;
}

/* Callers hold t->mu. */
static slot *tab_find(table *t, uint64_t key) {
    if (!t->cap) return NULL;
    for (size_t i = hash_key(key) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (!t->s[i].used) return NULL;
        if (t->s[i].key == key) return &t->s[i];
    }
}

/* taken reports whether id was already given to one of the first n copies
 * of handle key (an array can hold MPICH's shared handle several times). */
static int taken(const mpit_reqcopy *rc, int n, uint64_t key, uint64_t id) {
    for (int j = 0; j < n; j++)
        if (rc[j].id == id && KEY(rc[j].h) == key) return 1;
    return 0;
}

/* tab_find_owned returns, among the slots of key not taken by the first n
 * entries of rc, the oldest that thread owner added, else the oldest.
 * Callers hold t->mu. */
static slot *tab_find_owned(table *t, uint64_t key, uint32_t owner, const mpit_reqcopy *rc, int n) {
    if (!t->cap) return NULL;
    slot *first = NULL;
    for (size_t i = hash_key(key) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        slot *s = &t->s[i];
        if (!s->used) return first;
        if (s->key != key || (n > 0 && taken(rc, n, key, s->id))) continue;
        if (s->owner == owner) return s;
        if (!first) first = s;
    }
}

/* tab_find_id returns the slot of key whose id is id. Callers hold t->mu. */
static slot *tab_find_id(table *t, uint64_t key, uint64_t id) {
    if (!t->cap) return NULL;
    for (size_t i = hash_key(key) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        if (!t->s[i].used) return NULL;
        if (t->s[i].key == key && t->s[i].id == id) return &t->s[i];
    }
}

/* tab_put_grow doubles the table, keeping each key's probe order. */
static int tab_put_grow(table *t) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    slot *ns = calloc(cap, sizeof *ns);
    if (!ns) return 0;
    /* Re-insert in probe order from each cluster's start so equal keys keep
     * their relative order: walk from an empty slot around the table. */
    size_t start = 0;
    while (start < t->cap && t->s[start].used) start++;
    for (size_t k = 0; k < t->cap; k++) {
        size_t j = (start + k) & (t->cap - 1);
        if (!t->s[j].used) continue;
        size_t i = hash_key(t->s[j].key) & (cap - 1);
        while (ns[i].used) i = (i + 1) & (cap - 1);
        ns[i] = t->s[j];
    }
    free(t->s);
    t->s = ns;
    t->cap = cap;
    return 1;
}

static slot *tab_put(table *t, uint64_t key) {
    if ((t->n + 1) * 2 > t->cap && !tab_put_grow(t)) return NULL;
    size_t i = hash_key(key) & (t->cap - 1);
    while (t->s[i].used && t->s[i].key != key) i = (i + 1) & (t->cap - 1);
    if (!t->s[i].used) t->n++;
    t->s[i].used = 1;
    t->s[i].key = key;
    return &t->s[i];
}

/* tab_add inserts a slot even when the key is present: equal keys stay in
 * insertion order along the probe sequence (backward-shift deletion keeps
 * it), so tab_find returns the oldest. MPICH hands out one shared handle
 * for sends that completed at once, so several live requests can have the
 * same handle. */
static slot *tab_add(table *t, uint64_t key) {
    if ((t->n + 1) * 2 > t->cap && !tab_put_grow(t)) return NULL;
    size_t i = hash_key(key) & (t->cap - 1);
    while (t->s[i].used) i = (i + 1) & (t->cap - 1);
    t->n++;
    t->s[i].used = 1;
    t->s[i].key = key;
    return &t->s[i];
}

/* tab_del removes a slot, shifting the following cluster back. */
static void tab_del(table *t, slot *sl) {
    size_t i = (size_t)(sl - t->s), mask = t->cap - 1;
    t->s[i].used = 0;
    t->n--;
    for (size_t j = (i + 1) & mask; t->s[j].used; j = (j + 1) & mask) {
        size_t h = hash_key(t->s[j].key) & mask;
        /* Move j back to i when its home h is not in (i, j]. */
        if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
            t->s[i] = t->s[j];
            t->s[j].used = 0;
            i = j;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Communicators                                                       */

static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t hash_ranks(const int *r, int n) {
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++) h = mix64(h ^ (uint64_t)(uint32_t)r[i]);
    return h;
}

static uint64_t gid_of(uint64_t h) {
    h = mix64(h);
    return h < 16 ? h + 16 : h;
}

static MPI_Group world_group = MPI_GROUP_NULL;

/* group_world_ranks translates a group's ranks to world ranks. */
static int *group_world_ranks(MPI_Group g, int *n) {
    PMPI_Group_size(g, n);
    int *in = malloc(sizeof(int) * (size_t)(*n > 0 ? *n : 1));
    int *out = malloc(sizeof(int) * (size_t)(*n > 0 ? *n : 1));
    if (!in || !out) {
        free(in);
        free(out);
        *n = 0;
        return NULL;
    }
    for (int i = 0; i < *n; i++) in[i] = i;
    if (PMPI_Group_translate_ranks(g, *n, in, world_group, out) != MPI_SUCCESS)
        for (int i = 0; i < *n; i++) out[i] = MPIT_UNDEFINED_RANK;
    for (int i = 0; i < *n; i++)
        if (out[i] == MPI_UNDEFINED) out[i] = MPIT_UNDEFINED_RANK;
    free(in);
    return out;
}

/* comm_describe builds the record of a new communicator (no id yet). */
static mpit_comm *comm_describe(MPI_Comm h) {
    mpit_comm *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    MPI_Group g;
    PMPI_Comm_group(h, &g);
    c->members = group_world_ranks(g, &c->size);
    PMPI_Group_free(&g);
    PMPI_Comm_rank(h, &c->myrank);
    int inter = 0;
    PMPI_Comm_test_inter(h, &inter);
    if (inter) {
        PMPI_Comm_remote_group(h, &g);
        c->remote = group_world_ranks(g, &c->rsize);
        PMPI_Group_free(&g);
    }
    return c;
}

static mpit_comm *comm_register(MPI_Comm h, mpit_comm *c) {
    pthread_mutex_lock(&comms.mu);
    c->idx = G.next_comm++;
    slot *s = tab_put(&comms, KEY(h));
    if (s) s->ptr = c;
    pthread_mutex_unlock(&comms.mu);
    return c;
}

/* put_commnew appends a CommNew event for c (NULL: MPI_COMM_NULL). */
static void put_commnew(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, const mpit_comm *parent,
                        const mpit_comm *c) {
    int n = c ? c->size : 0, r = c ? c->rsize : 0;
    uint8_t *p = reserve_list(tb, MPIT_MAXSIZE_COMMNEW + 10 + 10 * (size_t)(n + r));
    if (!p) return;
    p = mpit_put_commnew(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, parent ? parent->idx : 0,
                         c ? c->idx : MPIT_COMM_NULL, c ? c->gid : 0, (uint64_t)r);
    p = mpit_put_u(p, (uint64_t)(n + r));
    int64_t prev = 0;
    for (int i = 0; i < n + r; i++) {
        int64_t v = i < n ? (c->members ? c->members[i] : i) : c->remote[i - n];
        p = mpit_put_s(p, v - prev);
        prev = v;
    }
    tb->depth = 1; /* mpit_commit clears it; the caller's event follows */
    mpit_commit(tb, p, t1);
}

MPIT_HIDDEN mpit_comm *mpit_comm_of(MPI_Comm comm) {
    if (comm == MPI_COMM_WORLD) return &mpit_comm_world;
    if (comm == MPI_COMM_SELF) return &mpit_comm_self;
    pthread_mutex_lock(&comms.mu);
    slot *s = tab_find(&comms, KEY(comm));
    mpit_comm *c = s ? s->ptr : NULL;
    pthread_mutex_unlock(&comms.mu);
    if (c || comm == MPI_COMM_NULL) return c;
    /* A communicator the recorder did not see created (e.g. by a call it
     * does not interpret): describe it now; its id is the hash of its
     * members, which all members compute alike. */
    c = comm_describe(comm);
    if (!c) return NULL;
    c->gid = gid_of(hash_ranks(c->members, c->size) ^ (c->rsize ? hash_ranks(c->remote, c->rsize) : 0) ^
                    0x6c617a79ull);
    comm_register(comm, c);
    mpit_tb *tb = mpit_self;
    if (tb && tb->depth) put_commnew(tb, 0, tb->last_end, tb->last_end, NULL, c);
    return c;
}

static int64_t translate(const int *tab, int n, int r) {
    if (r == MPI_ANY_SOURCE) return MPIT_ANY_SOURCE;
    if (r == MPI_PROC_NULL) return MPIT_PROC_NULL;
    if (r < 0 || r >= n) return MPIT_UNDEFINED_RANK;
    return tab ? tab[r] : r;
}

MPIT_HIDDEN int64_t mpit_peer(const mpit_comm *c, int rank) {
    if (!c) return MPIT_UNDEFINED_RANK;
    if (c->rsize) return translate(c->remote, c->rsize, rank);
    return translate(c->members, c->size, rank);
}

MPIT_HIDDEN int64_t mpit_root(const mpit_comm *c, int root) {
    if (root == MPI_ROOT) return MPIT_ROOT_SELF;
    if (root == MPI_PROC_NULL) return MPIT_PROC_NULL;
    return mpit_peer(c, root);
}

struct mpit_cgseq {
    uint64_t key, n;
    struct mpit_cgseq *next;
};

/* counter returns how many times key was seen on list *l before. */
static uint64_t counter(struct mpit_cgseq **l, uint64_t key) {
    for (struct mpit_cgseq *e = *l; e; e = e->next)
        if (e->key == key) return e->n++;
    struct mpit_cgseq *e = calloc(1, sizeof *e);
    if (!e) return 0;
    e->key = key;
    e->n = 1;
    e->next = *l;
    *l = e;
    return 0;
}

static struct mpit_cgseq *inter_seq;
static pthread_mutex_t seq_mu = PTHREAD_MUTEX_INITIALIZER;

MPIT_HIDDEN void mpit_rec_commnew(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, MPI_Comm parent,
                                  MPI_Comm *newcomm, int how, int64_t key) {
    mpit_comm *pc = mpit_comm_of(parent);
    uint64_t pgid = pc ? pc->gid : 0;
    uint64_t seq = 0;
    if (how == MPIT_NEW_COLLECTIVE && pc) seq = __atomic_fetch_add(&pc->seq, 1, __ATOMIC_RELAXED);
    mpit_comm *c = NULL;
    if (newcomm && *newcomm != MPI_COMM_NULL) {
        c = comm_describe(*newcomm);
        if (c) {
            uint64_t hm = hash_ranks(c->members, c->size);
            uint64_t hr = c->rsize ? hash_ranks(c->remote, c->rsize) : 0;
            uint64_t h;
            if (how == MPIT_NEW_COLLECTIVE) {
                /* Every member of the parent makes the same creation calls
                 * in the same order; the members tell split colours apart. */
                h = mix64(pgid ^ mix64(seq + 1)) ^ hm ^ mix64(hr);
            } else if (how == MPIT_NEW_GROUP) {
                uint64_t k = mix64(hm ^ (uint64_t)key);
                pthread_mutex_lock(&seq_mu);
                uint64_t n = counter(&pc->cg, k);
                pthread_mutex_unlock(&seq_mu);
                h = mix64(pgid ^ k) ^ mix64(n + 7);
            } else {
                /* Both groups of an intercommunicator: order-independent. */
                uint64_t pair = (hm < hr ? mix64(hm) ^ hr : mix64(hr) ^ hm) ^ (uint64_t)key;
                pthread_mutex_lock(&seq_mu);
                uint64_t n = counter(&inter_seq, pair);
                pthread_mutex_unlock(&seq_mu);
                h = mix64(pair ^ 0x696e746572ull) ^ mix64(n + 11);
            }
            c->gid = gid_of(h);
            comm_register(*newcomm, c);
        }
    }
    put_commnew(tb, fn, t0, t1, pc, c);
    tb->depth = 0;
}

MPIT_HIDDEN mpit_comm *mpit_comm_forget(MPI_Comm handle) {
    if (handle == MPI_COMM_WORLD) return &mpit_comm_world;
    if (handle == MPI_COMM_SELF) return &mpit_comm_self;
    pthread_mutex_lock(&comms.mu);
    slot *s = tab_find(&comms, KEY(handle));
    mpit_comm *c = s ? s->ptr : NULL;
    if (s) tab_del(&comms, s);
    pthread_mutex_unlock(&comms.mu);
    return c;
}

MPIT_HIDDEN void mpit_rec_commfree(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, mpit_comm *c) {
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_COMMFREE);
    p = mpit_put_commfree(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, c ? c->idx : 0);
    mpit_commit(tb, p, t1);
}

/* ------------------------------------------------------------------ */
/* Sizes                                                               */

MPIT_HIDDEN uint64_t mpit_bytes(int64_t count, MPI_Datatype type) {
    if (count <= 0 || type == MPI_DATATYPE_NULL) return 0;
    int sz = 0;
    if (PMPI_Type_size(type, &sz) != MPI_SUCCESS) return 0;
    if (sz == MPI_UNDEFINED) {
        MPI_Count big = 0;
        if (PMPI_Type_size_x(type, &big) != MPI_SUCCESS || big < 0) return 0;
        return (uint64_t)count * (uint64_t)big;
    }
    return (uint64_t)count * (uint64_t)(sz > 0 ? sz : 0);
}

MPIT_HIDDEN int mpit_in_place(const void *buf) { return buf == MPI_IN_PLACE; }

/* sum_counts adds n counts of elem bytes each (int or MPI_Count). */
static int64_t sum_counts(const void *arr, size_t elem, int n) {
    int64_t s = 0;
    if (!arr) return 0;
    for (int i = 0; i < n; i++) {
        int64_t v = elem == sizeof(int) ? ((const int *)arr)[i] : ((const int64_t *)arr)[i];
        if (v > 0) s += v;
    }
    return s;
}

static int64_t count_at(const void *arr, size_t elem, int i) {
    if (!arr || i < 0) return 0;
    return elem == sizeof(int) ? ((const int *)arr)[i] : ((const int64_t *)arr)[i];
}

/* bytes_w adds counts[i] × size(types[i]) (MPI_Alltoallw). */
static uint64_t bytes_w(const void *counts, size_t elem, const MPI_Datatype *types, int n) {
    uint64_t s = 0;
    if (!counts || !types) return 0;
    for (int i = 0; i < n; i++) s += mpit_bytes(count_at(counts, elem, i), types[i]);
    return s;
}

/* ------------------------------------------------------------------ */
/* Requests                                                            */

MPIT_HIDDEN uint64_t mpit_req_new(MPI_Request req, int kind, int persistent, mpit_comm *comm) {
    if (req == MPI_REQUEST_NULL) return 0;
    pthread_mutex_lock(&reqs.mu);
    uint64_t id = ++G.next_req;
    slot *s = tab_add(&reqs, KEY(req));
    if (s) {
        s->id = id;
        s->ptr = comm;
        s->kind = (int16_t)(kind | (persistent ? 0x100 : 0));
        s->owner = mpit_self ? mpit_self->thread : 0;
    }
    pthread_mutex_unlock(&reqs.mu);
    return id;
}

MPIT_HIDDEN mpit_reqcopy *mpit_req_copy(int n, const MPI_Request *reqs_in, mpit_reqcopy *stackbuf) {
    mpit_reqcopy *rc = n <= MPIT_STACK_REQS ? stackbuf : malloc(sizeof *rc * (size_t)n);
    if (!rc) return NULL;
    for (int i = 0; i < n; i++) rc[i] = (mpit_reqcopy){.h = reqs_in[i]};
    return rc;
}

/* mpit_req_peek looks up the ids of the copied handles, preferring the
 * requests this thread created when MPI gave several live requests the same
 * handle (MPICH does for sends that completed at once). */
MPIT_HIDDEN void mpit_req_peek(int n, mpit_reqcopy *rc) {
    int any = 0;
    for (int i = 0; i < n && !any; i++) any = rc[i].h != MPI_REQUEST_NULL;
    if (!any) return;
    uint32_t me = mpit_self ? mpit_self->thread : 0;
    pthread_mutex_lock(&reqs.mu);
    for (int i = 0; i < n; i++) {
        if (rc[i].h == MPI_REQUEST_NULL) continue;
        slot *s = tab_find_owned(&reqs, KEY(rc[i].h), me, rc, i);
        if (s) {
            rc[i].id = s->id;
            rc[i].kind = s->kind;
            rc[i].comm = s->ptr;
        }
    }
    pthread_mutex_unlock(&reqs.mu);
}

/* req_forget drops the requests at idx once they completed (persistent ones
 * stay: they can be started again). */
static void req_forget(const mpit_reqcopy *rc, const int *idx, int nidx) {
    pthread_mutex_lock(&reqs.mu);
    for (int k = 0; k < nidx; k++) {
        const mpit_reqcopy *r = &rc[idx[k]];
        if (!r->id || (r->kind & 0x100)) continue;
        slot *s = tab_find_id(&reqs, KEY(r->h), r->id);
        if (s) tab_del(&reqs, s);
    }
    pthread_mutex_unlock(&reqs.mu);
}

static uint64_t req_lookup(MPI_Request h) {
    uint64_t id = 0;
    pthread_mutex_lock(&reqs.mu);
    slot *s = tab_find_owned(&reqs, KEY(h), mpit_self ? mpit_self->thread : 0, NULL, 0);
    if (s) id = s->id;
    pthread_mutex_unlock(&reqs.mu);
    return id;
}

MPIT_HIDDEN MPI_Status *mpit_status_array(int n, MPI_Status *stackbuf) {
    if (n <= MPIT_STACK_REQS) return stackbuf;
    return malloc(sizeof(MPI_Status) * (size_t)n);
}

MPIT_HIDDEN void mpit_free_array(void *p, void *stackbuf) {
    if (p != stackbuf) free(p);
}

/* ------------------------------------------------------------------ */
/* Statuses                                                            */

static uint64_t status_bytes(const MPI_Status *st) {
    MPI_Count n = 0;
    if (PMPI_Get_elements_x(st, MPI_BYTE, &n) != MPI_SUCCESS || n < 0 || n == MPI_UNDEFINED) return 0;
    return (uint64_t)n;
}

static int64_t status_source(const mpit_comm *c, const MPI_Status *st) {
    return mpit_peer(c, st->MPI_SOURCE);
}

static int64_t status_tag(const MPI_Status *st) {
    return st->MPI_TAG == MPI_ANY_TAG ? MPIT_ANY_TAG : st->MPI_TAG;
}

static int64_t tag_of(int tag) { return tag == MPI_ANY_TAG ? MPIT_ANY_TAG : tag; }

/* ------------------------------------------------------------------ */
/* Point-to-point                                                      */

MPIT_HIDDEN void mpit_rec_send(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t count,
                               MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req,
                               int persistent) {
    mpit_comm *c = mpit_comm_of(comm);
    uint64_t bytes = mpit_bytes(count, type);
    uint64_t id = req ? mpit_req_new(*req, MPIT_REQ_SEND, persistent, c) : 0;
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_SEND);
    p = mpit_put_send(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, mpit_peer(c, dest), tag, c ? c->idx : 0,
                      bytes, id);
    mpit_commit(tb, p, t1);
}

MPIT_HIDDEN void mpit_rec_recv(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t count,
                               MPI_Datatype type, int source, int tag, MPI_Comm comm, const MPI_Status *st) {
    mpit_comm *c = mpit_comm_of(comm);
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_RECV);
    p = mpit_put_recv(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, mpit_peer(c, source), tag_of(tag),
                      c ? c->idx : 0, mpit_bytes(count, type), status_source(c, st), status_tag(st),
                      status_bytes(st));
    mpit_commit(tb, p, t1);
}

MPIT_HIDDEN void mpit_rec_irecv(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t count,
                                MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request *req,
                                int persistent) {
    mpit_comm *c = mpit_comm_of(comm);
    uint64_t id = req ? mpit_req_new(*req, MPIT_REQ_RECV, persistent, c) : 0;
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_IRECV);
    p = mpit_put_irecv(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, mpit_peer(c, source), tag_of(tag),
                       c ? c->idx : 0, mpit_bytes(count, type), id);
    mpit_commit(tb, p, t1);
}

MPIT_HIDDEN void mpit_rec_sendrecv(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t scount,
                                   MPI_Datatype stype, int dest, int stag, int64_t rcount, MPI_Datatype rtype,
                                   int source, int rtag, MPI_Comm comm, const MPI_Status *st) {
    mpit_comm *c = mpit_comm_of(comm);
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_SENDRECV);
    p = mpit_put_sendrecv(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, mpit_peer(c, dest), stag,
                          mpit_bytes(scount, stype), mpit_peer(c, source), tag_of(rtag),
                          mpit_bytes(rcount, rtype), c ? c->idx : 0, status_source(c, st), status_tag(st),
                          status_bytes(st));
    mpit_commit(tb, p, t1);
}

MPIT_HIDDEN void mpit_rec_probe(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int source, int tag,
                                MPI_Comm comm, int flag, const MPI_Status *st, MPI_Message *msg) {
    mpit_comm *c = mpit_comm_of(comm);
    if (flag && msg && *msg != MPI_MESSAGE_NULL && *msg != MPI_MESSAGE_NO_PROC) {
        pthread_mutex_lock(&msgs.mu);
        slot *s = tab_put(&msgs, KEY(*msg));
        if (s) s->ptr = c;
        pthread_mutex_unlock(&msgs.mu);
    }
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_PROBE);
    p = mpit_put_probe(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, mpit_peer(c, source), tag_of(tag),
                       c ? c->idx : 0, (uint64_t)(flag != 0), flag ? status_source(c, st) : 0,
                       flag ? status_tag(st) : 0, flag ? status_bytes(st) : 0);
    mpit_commit(tb, p, t1);
}

/* mpit_msg_take returns the communicator of a matched message and forgets
 * the message; called before the PMPI call that frees its handle. */
MPIT_HIDDEN mpit_comm *mpit_msg_take(MPI_Message msg) {
    if (msg == MPI_MESSAGE_NO_PROC) return &mpit_comm_self; /* a receive from MPI_PROC_NULL */
    mpit_comm *c = NULL;
    pthread_mutex_lock(&msgs.mu);
    slot *s = tab_find(&msgs, KEY(msg));
    if (s) {
        c = s->ptr;
        tab_del(&msgs, s);
    }
    pthread_mutex_unlock(&msgs.mu);
    return c;
}

MPIT_HIDDEN void mpit_rec_mrecv(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t count,
                                MPI_Datatype type, MPI_Message msg, mpit_comm *c, const MPI_Status *st,
                                MPI_Request *req) {
    int64_t src = msg == MPI_MESSAGE_NO_PROC ? MPIT_PROC_NULL : MPIT_UNDEFINED_RANK;
    uint8_t *p;
    if (req) {
        /* Imrecv: the matched message's source and tag come with the
         * completion; the request is a receive on the message's comm. */
        uint64_t id = mpit_req_new(*req, MPIT_REQ_RECV, 0, c);
        p = mpit_reserve(tb, MPIT_MAXSIZE_IRECV);
        p = mpit_put_irecv(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, src, MPIT_ANY_TAG, c ? c->idx : 0,
                           mpit_bytes(count, type), id);
    } else {
        p = mpit_reserve(tb, MPIT_MAXSIZE_RECV);
        p = mpit_put_recv(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, st ? status_source(c, st) : src,
                          st ? status_tag(st) : MPIT_ANY_TAG, c ? c->idx : 0, mpit_bytes(count, type),
                          st ? status_source(c, st) : src, st ? status_tag(st) : MPIT_ANY_TAG,
                          st ? status_bytes(st) : 0);
    }
    mpit_commit(tb, p, t1);
}

MPIT_HIDDEN void mpit_rec_start(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int n, const MPI_Request *rq) {
    if (n < 0) n = 0;
    uint8_t *p = reserve_list(tb, MPIT_MAXSIZE_START + 10 + 10 * (size_t)n);
    if (!p) return;
    p = mpit_put_start(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0);
    p = mpit_put_u(p, (uint64_t)n);
    for (int i = 0; i < n; i++) p = mpit_put_u(p, req_lookup(rq[i]));
    mpit_commit(tb, p, t1);
}

MPIT_HIDDEN void mpit_rec_reqfree(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, const mpit_reqcopy *req) {
    /* Freed, even when persistent: its handle is no longer the program's. */
    if (req->id) {
        pthread_mutex_lock(&reqs.mu);
        slot *s = tab_find_id(&reqs, KEY(req->h), req->id);
        if (s) tab_del(&reqs, s);
        pthread_mutex_unlock(&reqs.mu);
    }
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_REQFREE);
    p = mpit_put_reqfree(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, req->id);
    mpit_commit(tb, p, t1);
}

MPIT_HIDDEN void mpit_rec_complete(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int flag,
                                   const mpit_reqcopy *before, const int *idx, int nidx, const MPI_Status *st,
                                   int status_by_request) {
    if (nidx < 0) nidx = 0;
    uint8_t *p = reserve_list(tb, MPIT_MAXSIZE_COMPLETE + 10 + 50 * (size_t)nidx);
    if (!p) return;
    p = mpit_put_complete(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, (uint64_t)(flag != 0));
    p = mpit_put_u(p, (uint64_t)nidx);
    for (int k = 0; k < nidx; k++) {
        int i = idx[k];
        const MPI_Status *s = st ? (status_by_request ? &st[i] : &st[k]) : NULL;
        int kind = before[i].kind;
        mpit_comm *c = before[i].comm;
        uint64_t id = before[i].id;
        uint64_t flags = (kind & 0x100) ? MPIT_COMPLETION_PERSISTENT : 0;
        int64_t src = 0, tag = 0;
        uint64_t bytes = 0;
        if (s) {
            int cancelled = 0;
            if (PMPI_Test_cancelled(s, &cancelled) == MPI_SUCCESS && cancelled) flags |= MPIT_COMPLETION_CANCELLED;
            if ((kind & 0xff) == MPIT_REQ_RECV && !cancelled) {
                src = status_source(c, s);
                tag = status_tag(s);
                bytes = status_bytes(s);
            }
        }
        p = mpit_put_u(p, id);
        p = mpit_put_s(p, src);
        p = mpit_put_s(p, tag);
        p = mpit_put_u(p, bytes);
        p = mpit_put_u(p, flags);
    }
    req_forget(before, idx, nidx);
    mpit_commit(tb, p, t1);
}

/* ------------------------------------------------------------------ */
/* Collectives                                                         */

MPIT_HIDDEN void mpit_rec_coll(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, MPI_Comm comm, int root,
                               uint64_t sbytes, uint64_t rbytes, MPI_Request *req) {
    mpit_comm *c = mpit_comm_of(comm);
    uint64_t id = req ? mpit_req_new(*req, MPIT_REQ_COLL, 0, c) : 0;
    int64_t r = root == MPIT_NO_ROOT ? MPIT_ROOT_NONE : mpit_root(c, root);
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_COLL);
    p = mpit_put_coll(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, c ? c->idx : 0, r, sbytes, rbytes, id);
    mpit_commit(tb, p, t1);
}

/* peers is how many ranks a rooted or all-to-all collective exchanges with:
 * the remote group of an intercommunicator, else the communicator. */
static int peers(const mpit_comm *c) { return !c ? 0 : c->rsize ? c->rsize : c->size; }

static int is_root(const mpit_comm *c, int root) {
    return root == MPI_ROOT || (c && !c->rsize && root == c->myrank);
}

MPIT_HIDDEN void mpit_rec_bcast(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t count,
                                MPI_Datatype type, int root, MPI_Comm comm, MPI_Request *req) {
    mpit_comm *c = mpit_comm_of(comm);
    uint64_t b = mpit_bytes(count, type);
    int r = is_root(c, root), none = root == MPI_PROC_NULL;
    mpit_rec_coll(tb, fn, t0, t1, comm, root, r ? b : 0, r || none ? 0 : b, req);
}

MPIT_HIDDEN void mpit_rec_gather(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, const void *sbuf,
                                 int64_t scount, MPI_Datatype stype, int64_t rcount, MPI_Datatype rtype,
                                 const void *rcounts, size_t relem, int root, MPI_Comm comm,
                                 MPI_Request *req) {
    mpit_comm *c = mpit_comm_of(comm);
    int r = is_root(c, root), n = peers(c);
    uint64_t rb = !r ? 0 : rcounts ? mpit_bytes(sum_counts(rcounts, relem, n), rtype) : mpit_bytes(rcount, rtype) * (uint64_t)n;
    uint64_t sb;
    if (root == MPI_ROOT || root == MPI_PROC_NULL) sb = 0;
    else if (mpit_in_place(sbuf)) /* the root's own block stays in place */
        sb = rcounts ? mpit_bytes(count_at(rcounts, relem, c ? c->myrank : 0), rtype) : mpit_bytes(rcount, rtype);
    else sb = mpit_bytes(scount, stype);
    mpit_rec_coll(tb, fn, t0, t1, comm, root, sb, rb, req);
}

MPIT_HIDDEN void mpit_rec_scatter(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t scount,
                                  const void *scounts, size_t selem, MPI_Datatype stype,
                                  const void *rbuf, int64_t rcount, MPI_Datatype rtype, int root,
                                  MPI_Comm comm, MPI_Request *req) {
    mpit_comm *c = mpit_comm_of(comm);
    int r = is_root(c, root), n = peers(c);
    uint64_t sb = !r ? 0 : scounts ? mpit_bytes(sum_counts(scounts, selem, n), stype) : mpit_bytes(scount, stype) * (uint64_t)n;
    uint64_t rb;
    if (root == MPI_ROOT || root == MPI_PROC_NULL) rb = 0;
    else if (mpit_in_place(rbuf))
        rb = scounts ? mpit_bytes(count_at(scounts, selem, c ? c->myrank : 0), stype) : mpit_bytes(scount, stype);
    else rb = mpit_bytes(rcount, rtype);
    mpit_rec_coll(tb, fn, t0, t1, comm, root, sb, rb, req);
}

MPIT_HIDDEN void mpit_rec_allgather(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, const void *sbuf,
                                    int64_t scount, MPI_Datatype stype, int64_t rcount,
                                    const void *rcounts, size_t relem, MPI_Datatype rtype,
                                    MPI_Comm comm, MPI_Request *req) {
    mpit_comm *c = mpit_comm_of(comm);
    int n = peers(c);
    uint64_t rb = rcounts ? mpit_bytes(sum_counts(rcounts, relem, n), rtype) : mpit_bytes(rcount, rtype) * (uint64_t)n;
    uint64_t sb = !mpit_in_place(sbuf) ? mpit_bytes(scount, stype)
                  : rcounts            ? mpit_bytes(count_at(rcounts, relem, c ? c->myrank : 0), rtype)
                                       : mpit_bytes(rcount, rtype);
    mpit_rec_coll(tb, fn, t0, t1, comm, MPIT_NO_ROOT, sb, rb, req);
}

MPIT_HIDDEN void mpit_rec_alltoall(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, const void *sbuf,
                                   int64_t scount, const void *scounts, size_t selem,
                                   const MPI_Datatype *stypes, MPI_Datatype stype, int64_t rcount,
                                   const void *rcounts, size_t relem, const MPI_Datatype *rtypes,
                                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req) {
    mpit_comm *c = mpit_comm_of(comm);
    int n = peers(c);
    uint64_t rb = rtypes ? bytes_w(rcounts, relem, rtypes, n)
                  : rcounts ? mpit_bytes(sum_counts(rcounts, relem, n), rtype)
                            : mpit_bytes(rcount, rtype) * (uint64_t)n;
    uint64_t sb = mpit_in_place(sbuf) ? rb
                  : stypes ? bytes_w(scounts, selem, stypes, n)
                  : scounts ? mpit_bytes(sum_counts(scounts, selem, n), stype)
                            : mpit_bytes(scount, stype) * (uint64_t)n;
    mpit_rec_coll(tb, fn, t0, t1, comm, MPIT_NO_ROOT, sb, rb, req);
}

MPIT_HIDDEN void mpit_rec_reduce(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t count,
                                 MPI_Datatype type, int root, MPI_Comm comm, MPI_Request *req) {
    mpit_comm *c = mpit_comm_of(comm);
    uint64_t b = mpit_bytes(count, type);
    if (root == MPIT_NO_ROOT) {
        mpit_rec_coll(tb, fn, t0, t1, comm, root, b, b, req); /* Allreduce, Scan, Exscan */
        return;
    }
    int r = is_root(c, root);
    uint64_t sb = root == MPI_ROOT || root == MPI_PROC_NULL ? 0 : b;
    mpit_rec_coll(tb, fn, t0, t1, comm, root, sb, r ? b : 0, req);
}

MPIT_HIDDEN void mpit_rec_reduce_scatter(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t rcount,
                                         const void *rcounts, size_t relem, MPI_Datatype type, MPI_Comm comm,
                                         MPI_Request *req) {
    mpit_comm *c = mpit_comm_of(comm);
    int n = c ? c->size : 0;
    uint64_t sb = rcounts ? mpit_bytes(sum_counts(rcounts, relem, n), type) : mpit_bytes(rcount, type) * (uint64_t)n;
    uint64_t rb = rcounts ? mpit_bytes(count_at(rcounts, relem, c ? c->myrank : 0), type) : mpit_bytes(rcount, type);
    mpit_rec_coll(tb, fn, t0, t1, comm, MPIT_NO_ROOT, sb, rb, req);
}

/* ------------------------------------------------------------------ */
/* Clock offsets to rank 0                                              */

static void clock_sync(int64_t *offset, uint64_t *err) {
    *offset = 0;
    *err = 0;
    if (G.clocksync <= 0 || G.size < 2 || G.priv == MPI_COMM_NULL) return;
    const int tag = 7411;
    int dummy = 0;
    if (G.rank == 0) {
        for (int r = 1; r < G.size; r++)
            for (int k = 0; k < G.clocksync; k++) {
                PMPI_Recv(&dummy, 1, MPI_INT, r, tag, G.priv, MPI_STATUS_IGNORE);
                uint64_t t = mpit_now();
                PMPI_Send(&t, 1, MPI_UINT64_T, r, tag, G.priv);
            }
        return;
    }
    uint64_t best = UINT64_MAX;
    for (int k = 0; k < G.clocksync; k++) {
        uint64_t t1 = mpit_now(), t0 = 0;
        PMPI_Send(&dummy, 1, MPI_INT, 0, tag, G.priv);
        PMPI_Recv(&t0, 1, MPI_UINT64_T, 0, tag, G.priv, MPI_STATUS_IGNORE);
        uint64_t t2 = mpit_now();
        if (t2 - t1 < best) {
            best = t2 - t1;
            *offset = (int64_t)t0 - (int64_t)(t1 + (t2 - t1) / 2);
            *err = (t2 - t1 + 1) / 2;
        }
    }
}

static int64_t sync_offset[2];
static uint64_t sync_err[2];

MPIT_HIDDEN void mpit_clock_event(mpit_tb *tb, int phase) {
    if (!tb) return;
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_CLOCKSYNC);
    uint64_t t = tb->last_end;
    p = mpit_put_clocksync(p, 0, (uint64_t)phase, sync_offset[phase], sync_err[phase]);
    tb->depth = 1;
    mpit_commit(tb, p, t);
}

/* ------------------------------------------------------------------ */
/* Lifecycle                                                           */

static void gen_run_id(void) {
    if (G.run_id[0]) return;
    /* Not started by `mpitrace record`: rank 0 makes an id and shares it. */
    char id[64] = "";
    if (G.rank == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        char host[128] = "";
        gethostname(host, sizeof host - 1);
        uint64_t h = mix64((uint64_t)ts.tv_nsec ^ mix64((uint64_t)ts.tv_sec) ^ mix64((uint64_t)getpid()) ^
                           hash_ranks((const int *)host, (int)(sizeof host / sizeof(int))));
        snprintf(id, sizeof id, "%016llx", (unsigned long long)h);
    }
    if (G.priv != MPI_COMM_NULL) PMPI_Bcast(id, (int)sizeof id, MPI_CHAR, 0, G.priv);
    id[sizeof id - 1] = '\0';
    snprintf(G.run_id, sizeof G.run_id, "%s", id);
}

MPIT_HIDDEN void mpit_after_init(int provided) {
    (void)provided;
    static int done;
    if (done) return;
    done = 1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &G.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &G.size);
    PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
    mpit_comm_world = (mpit_comm){.idx = MPIT_COMM_WORLD, .gid = 1, .size = G.size, .myrank = G.rank};
    static int self_member;
    self_member = G.rank;
    mpit_comm_self = (mpit_comm){.idx = MPIT_COMM_SELF, .gid = 2, .size = 1, .members = &self_member};
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &G.priv) != MPI_SUCCESS) G.priv = MPI_COMM_NULL;
    gen_run_id();
    open_log();
    clock_sync(&sync_offset[MPIT_PHASE_INIT], &sync_err[MPIT_PHASE_INIT]);
    if (G.fd >= 0) {
        install_signals();
        /* Events recorded before MPI_Init (e.g. MPI_Initialized) waited in
         * the buffer for the file; they go out with the first block. */
    }
}

MPIT_HIDDEN void mpit_before_finalize(void) {
    clock_sync(&sync_offset[MPIT_PHASE_FINALIZE], &sync_err[MPIT_PHASE_FINALIZE]);
    if (G.priv != MPI_COMM_NULL) PMPI_Comm_free(&G.priv);
    if (world_group != MPI_GROUP_NULL) PMPI_Group_free(&world_group);
}

MPIT_HIDDEN void mpit_after_finalize(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1) {
    G.finalized = 1;
    if (tb) {
        mpit_call(tb, fn, t0, t1);
        mpit_clock_event(tb, MPIT_PHASE_FINALIZE);
    }
    mpit_final_flush(MPIT_END_FINALIZE, 0);
}

MPIT_HIDDEN void mpit_before_abort(int errorcode) {
    (void)errorcode;
    mpit_final_flush(MPIT_END_ABORT, 0);
}

/* ------------------------------------------------------------------ */
/* Controls                                                            */

static int name_match(const char *pat, size_t n, const char *name) {
    if (n > 0 && pat[n - 1] == '*') return strncmp(pat, name, n - 1) == 0;
    return strlen(name) == n && strncmp(pat, name, n) == 0;
}

static int listed(const char *list, const char *name) {
    for (const char *p = list; p && *p;) {
        while (*p == ',' || *p == ' ') p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ') e++;
        if (e > p && name_match(p, (size_t)(e - p), name)) return 1;
        p = e;
    }
    return 0;
}

static long env_long(const char *name, long def, long lo, long hi) {
    const char *v = getenv(name);
    if (!v || !*v) return def;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end == 'k' || *end == 'K') x *= 1024, end++;
    else if (*end == 'm' || *end == 'M') x *= 1024 * 1024, end++;
    if (*end || x < lo || x > hi) {
        mpit_warn_once(name, "mpitrace: ignoring %s=%s (expected a number from %ld to %ld)", name, v, lo, hi);
        return def;
    }
    return x;
}

__attribute__((constructor)) static void mpit_load(void) {
    crc_init();
    pthread_key_create(&G.key, tb_destroy);
    const char *v = getenv("MPITRACE_STATE_DIR");
    if (v) snprintf(G.state_dir, sizeof G.state_dir, "%s", v);
    v = getenv("MPITRACE_DIR");
    snprintf(G.dir, sizeof G.dir, "%s", v && *v ? v : "traces");
    v = getenv("MPITRACE_RUN_ID");
    if (v) snprintf(G.run_id, sizeof G.run_id, "%s", v);
    G.bufsize = (size_t)env_long("MPITRACE_BUFFER", 256 * 1024, 4096, 16 * 1024 * 1024);
    G.zlevel = (int)env_long("MPITRACE_ZSTD_LEVEL", 1, -5, 19);
    G.compress = (int)env_long("MPITRACE_COMPRESS", 1, 0, 1);
    G.clocksync = (int)env_long("MPITRACE_CLOCKSYNC", 10, 0, 1000);
    G.test_signal = (int)env_long("MPITRACE_TEST_SIGNAL_IN_FLUSH", 0, 0, 64);
    G.next_comm = MPIT_COMM_SELF + 1;
    const char *inc = getenv("MPITRACE_INCLUDE"), *exc = getenv("MPITRACE_EXCLUDE");
    uint16_t *on = calloc((size_t)mpit_fn_count + 1, sizeof *on);
    if (!on) return;
    for (int i = 1; i <= mpit_fn_count; i++) {
        const char *n = mpit_fn_names[i];
        int rec = (!inc || !*inc || listed(inc, n)) && !(exc && listed(exc, n));
        /* MPI_Init and MPI_Finalize anchor the task graph: always recorded. */
        rec |= !strcmp(n, "MPI_Init") || !strcmp(n, "MPI_Init_thread") || !strcmp(n, "MPI_Finalize");
        on[i] = rec ? MPIT_FN_UNNAMED : 0;
    }
    pending_names = calloc((size_t)mpit_fn_count + 1, sizeof(int));
    mpit_fn_id = on;
    snprintf(G.options, sizeof G.options, "buffer=%zu compress=%d zstd_level=%d clocksync=%d include=%s exclude=%s",
             G.bufsize, G.compress, G.zlevel, G.clocksync, inc ? inc : "", exc ? exc : "");
    v = getenv("MPITRACE_ENABLE");
    int enable = !(v && (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "false")));
    if (enable) atexit(at_exit);
    mpit_on = enable;
}

/* ------------------------------------------------------------------ */
/* Completion helpers                                                  */

/* Waitall/Testall: every non-null request completed when the call
 * succeeded (and, for Testall, flag is true); with MPI_ERR_IN_STATUS the
 * statuses say which ones did. */
MPIT_HIDDEN void mpit_rec_all(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int ret, int flag, int n,
                              const mpit_reqcopy *before, const MPI_Status *st) {
    int stackidx[MPIT_STACK_REQS] = {0};
    int *idx = n <= MPIT_STACK_REQS ? stackidx : calloc((size_t)n, sizeof(int));
    int k = 0;
    if (!idx) {
        __atomic_fetch_add(&G.dropped, 1, __ATOMIC_RELAXED);
        mpit_abandon(tb);
        return;
    }
    if (flag && (ret == MPI_SUCCESS || ret == MPI_ERR_IN_STATUS)) {
        for (int i = 0; i < n; i++) {
            if (before[i].h == MPI_REQUEST_NULL) continue;
            if (ret == MPI_ERR_IN_STATUS && st[i].MPI_ERROR == MPI_ERR_PENDING) continue;
            idx[k++] = i;
        }
    }
    mpit_rec_complete(tb, fn, t0, t1, flag, before, idx, k, st, 1);
    if (idx != stackidx) free(idx);
}

/* Waitsome/Testsome: the call lists the completed indices. */
MPIT_HIDDEN void mpit_rec_some(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int ret, int n,
                               const mpit_reqcopy *before, int outcount, const int *indices,
                               const MPI_Status *st) {
    (void)n;
    if ((ret != MPI_SUCCESS && ret != MPI_ERR_IN_STATUS) || outcount == MPI_UNDEFINED || outcount < 0) outcount = 0;
    mpit_rec_complete(tb, fn, t0, t1, outcount > 0, before, indices, outcount, st, 0);
}

/* Wait/Test/Waitany/Testany: at most one request, at `index`. */
MPIT_HIDDEN void mpit_rec_one(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int ret, int flag,
                              const mpit_reqcopy *before, int index, const MPI_Status *st) {
    int done = ret == MPI_SUCCESS && flag && index != MPI_UNDEFINED && index >= 0 &&
               before[index].h != MPI_REQUEST_NULL;
    mpit_rec_complete(tb, fn, t0, t1, flag, before, &index, done ? 1 : 0, st, 0);
}
