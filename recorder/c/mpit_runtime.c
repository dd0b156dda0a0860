/* mpitrace recorder runtime: buffers, log file, tables, clocks, signals.
 *
 * See docs/format.md for the file layout and docs/recording.md for the
 * behaviour (what is recorded, controls, failure handling). */
#define _GNU_SOURCE
#include "mpit.h"

#include <dlfcn.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/uio.h>
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
    int flush_ms;          /* time-based flush interval, 0: none */
    int flusher_stop;      /* the final flush has begun: the flusher stops */
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
static void install_errhandler(void);

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

/* frame_crc fills the block frame header h of a payload made of p1 and p2. */
static void frame_crc(uint8_t *h, int type, int codec, size_t stored, size_t raw, const uint8_t *p1, size_t n1,
                      const uint8_t *p2, size_t n2) {
    put32(h, MPIT_BLOCK_SYNC);
    h[4] = (uint8_t)type;
    h[5] = (uint8_t)codec;
    h[6] = h[7] = 0;
    put32(h + 8, (uint32_t)stored);
    put32(h + 12, (uint32_t)raw);
    uint32_t crc = crc_update(0, h + 4, 12);
    crc = crc_update(crc, p1, n1);
    crc = crc_update(crc, p2, n2);
    put32(h + 16, crc);
}

/* frame fills the MPIT_BLOCK_HEADER_SIZE bytes before payload. */
static void frame(uint8_t *payload, int type, int codec, size_t stored, size_t raw) {
    frame_crc(payload - MPIT_BLOCK_HEADER_SIZE, type, codec, stored, raw, payload, stored, NULL, 0);
}

/* frame2 fills the frame header before part1 of an uncompressed payload
 * whose second part lies elsewhere (written with writev). */
static void frame2(uint8_t *part1, size_t n1, const uint8_t *part2, size_t n2, int type) {
    frame_crc(part1 - MPIT_BLOCK_HEADER_SIZE, type, MPIT_CODEC_NONE, n1 + n2, n1 + n2, part1, n1, part2, n2);
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

/* write_allv writes the n pieces of iov or reports the failure once.
 * Callers hold G.io (or are a signal handler). Returns 0 on success. */
static int write_allv(struct iovec *iov, int n) {
    if (G.fd < 0 || G.failed) return -1;
    while (n > 0) {
        ssize_t w = writev(G.fd, iov, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            write_failed(errno);
            return -1;
        }
        if (w == 0) {
            write_failed(ENOSPC);
            return -1;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

static int write_all(const uint8_t *p, size_t n) {
    struct iovec iov = {(void *)p, n};
    return write_allv(&iov, 1);
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
    pthread_mutex_init(&tb->mu, NULL);
    tb->base = tb->last_end = mpit_now();
    mpit_publish(tb);
    pthread_mutex_lock(&G.tl);
    tb->thread = G.nthreads++;
    tb->next = G.threads;
    __atomic_store_n(&G.threads, tb, __ATOMIC_RELEASE); /* the flusher walks the list */
    pthread_mutex_unlock(&G.tl);
    mpit_self = tb;
    pthread_setspecific(G.key, tb);
    return tb;
}

/* tb_snapshot reads what tb's owner published: len, count and last_end of
 * one moment. Returns 0 if the owner kept changing them. */
static int tb_snapshot(mpit_tb *tb, size_t *len, uint32_t *count, uint64_t *end) {
    for (int tries = 0; tries < 100; tries++) {
        uint32_t s = __atomic_load_n(&tb->pubseq, __ATOMIC_ACQUIRE);
        if (s & 1) {
            sched_yield();
            continue;
        }
        uint64_t lc = __atomic_load_n(&tb->pub_lc, __ATOMIC_RELAXED);
        uint64_t e = __atomic_load_n(&tb->pub_end, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&tb->pubseq, __ATOMIC_RELAXED) == s) {
            *len = (size_t)(uint32_t)lc;
            *count = (uint32_t)(lc >> 32);
            *end = e;
            return 1;
        }
    }
    return 0;
}

/* events_prefix encodes the events-block header (thread, seq, count, base)
 * of the buffer's events not written yet, up to count. */
static size_t events_prefix(const mpit_tb *tb, uint32_t count, uint8_t *out) {
    uint8_t *h = out;
    h = mpit_put_u(h, tb->thread);
    h = mpit_put_u(h, tb->seq + tb->done_count);
    h = mpit_put_u(h, count - tb->done_count);
    h = mpit_put_u(h, tb->done_count ? tb->done_end : tb->base);
    return (size_t)(h - out);
}

/* written records, under G.io, that the buffer's events up to (len, count,
 * end) are on disk. */
static void written(mpit_tb *tb, size_t len, uint32_t count, uint64_t end) {
    G.events += count - tb->done_count;
    G.blocks++;
    G.ended = 0;
    tb->done_len = len;
    tb->done_count = count;
    tb->done_end = end;
}

/* tb_reset starts the buffer afresh once everything in it is written;
 * callers are its owner, holding tb->mu and G.io. */
static void tb_reset(mpit_tb *tb) {
    tb->seq += tb->count;
    tb->base = tb->last_end;
    tb->len = 0;
    tb->count = 0;
    tb->done_len = 0;
    tb->done_count = 0;
    mpit_publish(tb);
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

/* write_events compresses and writes tb's events not written yet, up to
 * (len, count, end) as its owner published them. Callers hold tb->mu (so
 * the owner does not start the buffer afresh meanwhile), with the flush
 * signals held off; the owner may go on appending after len. The block's
 * events-block header goes right before its first event, over events
 * already written. A signal handler may write the same events meanwhile
 * (without touching the buffer): then this writes nothing. bg: called by
 * the time-based flush, which stops when the final flush begins. */
static void write_events(mpit_tb *tb, size_t len, uint32_t count, uint64_t end, int bg) {
    uint32_t done = __atomic_load_n(&tb->done_count, __ATOMIC_ACQUIRE);
    if (count <= done || G.fd < 0 || G.failed || G.signalled) return;
    uint8_t hdr[40];
    size_t hl = events_prefix(tb, count, hdr);
    uint8_t *payload = tb->buf + MPIT_BLOCK_PREFIX + tb->done_len - hl;
    memcpy(payload, hdr, hl);
    size_t plen = hl + len - tb->done_len;
    size_t z = G.compress ? ZSTD_compressCCtx(tb->zctx, tb->zbuf + MPIT_BLOCK_HEADER_SIZE, tb->zcap, payload, plen, G.zlevel)
                          : plen; /* stored as is */
    if (G.test_signal && G.events > 0) {
        /* Fault tests: the launcher's signal arrives in the middle of a
         * flush (not MPI_Init's, which writes the log's first events). */
        int sig = G.test_signal;
        G.test_signal = 0;
        kill(getpid(), sig);
    }
    pthread_mutex_lock(&G.io);
    if (G.signalled || (bg && G.flusher_stop) || tb->done_count != done) {
        /* A handler wrote these events while they were being compressed
         * (or the final flush has begun, which writes them): nothing more
         * to do. */
        pthread_mutex_unlock(&G.io);
        return;
    }
    write_names(1);
    int fail;
    if (!ZSTD_isError(z) && z < plen) {
        frame(tb->zbuf + MPIT_BLOCK_HEADER_SIZE, MPIT_BLOCK_EVENTS, MPIT_CODEC_ZSTD, z, plen);
        fail = write_all(tb->zbuf, MPIT_BLOCK_HEADER_SIZE + z);
    } else {
        frame(payload, MPIT_BLOCK_EVENTS, MPIT_CODEC_NONE, plen, plen);
        fail = write_all(payload - MPIT_BLOCK_HEADER_SIZE, MPIT_BLOCK_HEADER_SIZE + plen);
    }
    if (!fail) written(tb, len, count, end);
    pthread_mutex_unlock(&G.io);
}

/* mpit_flush_thread writes its own thread's buffer and starts it afresh. */
MPIT_HIDDEN void mpit_flush_thread(mpit_tb *tb) {
    if (tb->count == 0 || G.fd < 0 || G.signalled || getpid() != G.pid) return;
    sigset_t old;
    hold_signals(&old);
    pthread_mutex_lock(&tb->mu);
    write_events(tb, tb->len, tb->count, tb->last_end, 0);
    pthread_mutex_lock(&G.io);
    if (!G.signalled) {
        /* What could not be written (a write failure) is dropped, and
         * counted. */
        if (tb->done_count < tb->count) G.dropped += tb->count - tb->done_count;
        tb_reset(tb);
    }
    pthread_mutex_unlock(&G.io);
    pthread_mutex_unlock(&tb->mu);
    release_signals(&old);
}

MPIT_HIDDEN void mpit_reserve_slow(mpit_tb *tb, size_t need) {
    if (tb->count > 0 && G.fd >= 0) mpit_flush_thread(tb);
    if (tb->len + need <= tb->cap) return;
    /* Before MPI_Init (no file yet), after a write failure, or for one huge
     * event: grow the buffer, within the block size bound. */
    size_t cap = tb->cap;
    while (cap < tb->len + need) cap *= 2;
    /* The flusher may be reading the buffer. (In a forked child, where the
     * recorder writes nothing, the lock may be stuck: go on without it.) */
    int locked = pthread_mutex_trylock(&tb->mu) == 0;
    if (!locked && getpid() == G.pid) {
        pthread_mutex_lock(&tb->mu);
        locked = 1;
    }
    if (cap + MPIT_BLOCK_PREFIX <= MPIT_MAX_BLOCK_SIZE / 2) {
        uint8_t *b = realloc(tb->buf, MPIT_BLOCK_PREFIX + cap);
        size_t zcap = ZSTD_compressBound(cap + MPIT_BLOCK_PREFIX);
        uint8_t *z = b ? realloc(tb->zbuf, MPIT_BLOCK_HEADER_SIZE + zcap) : NULL;
        if (b) tb->buf = b;
        if (z) {
            tb->zbuf = z;
            tb->zcap = zcap;
            tb->cap = cap;
        }
    }
    if (tb->len + need > tb->cap && need <= tb->cap) {
        /* Nowhere to put more (no log can be written, or no memory): drop
         * what is not written, counted, and start the buffer afresh. */
        __atomic_fetch_add(&G.dropped, tb->count - tb->done_count, __ATOMIC_RELAXED);
        tb->seq += tb->done_count;
        tb->base = tb->last_end;
        tb->len = 0;
        tb->count = 0;
        tb->done_len = 0;
        tb->done_count = 0;
        mpit_publish(tb);
    }
    if (locked) pthread_mutex_unlock(&tb->mu);
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
/* Pending calls and the time-based flush                              */

/* write_pending writes a pending block: thread tb was inside fn since t0,
 * and the call's event will be the thread's event number seq. Callers hold
 * G.io (or are a signal handler: `locked` false). */
static void write_pending(const mpit_tb *tb, uint64_t seq, int fn, uint64_t t0, uint64_t now, int locked) {
    if (fn <= 0 || fn > mpit_fn_count) return;
    if (locked) {
        pthread_mutex_lock(&names_mu);
        name_fn(fn);
        pthread_mutex_unlock(&names_mu);
    } else {
        name_fn(fn);
    }
    write_names(locked);
    uint8_t b[MPIT_BLOCK_HEADER_SIZE + 60], *p = b + MPIT_BLOCK_HEADER_SIZE;
    p = mpit_put_u(p, tb->thread);
    p = mpit_put_u(p, seq);
    p = mpit_put_u(p, MPIT_LOGID(fn));
    p = mpit_put_u(p, t0);
    p = mpit_put_u(p, now);
    size_t n = (size_t)(p - b) - MPIT_BLOCK_HEADER_SIZE;
    frame(b + MPIT_BLOCK_HEADER_SIZE, MPIT_BLOCK_PENDING, MPIT_CODEC_NONE, n, n);
    write_all(b, MPIT_BLOCK_HEADER_SIZE + n);
}

/* call_under_way reads the call tb's owner is in: its function and start,
 * and how many events the buffer held when it began. Returns 0 when the
 * thread is between calls (or was changing state). */
static int call_under_way(mpit_tb *tb, int *fn, uint64_t *t0, uint32_t *count) {
    uint64_t lc = __atomic_load_n(&tb->pub_lc, __ATOMIC_ACQUIRE);
    int f = __atomic_load_n(&tb->cur_fn, __ATOMIC_RELAXED);
    uint64_t t = __atomic_load_n(&tb->cur_t0, __ATOMIC_RELAXED);
    int depth = __atomic_load_n(&tb->depth, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (!depth || f <= 0 || !t || __atomic_load_n(&tb->pub_lc, __ATOMIC_RELAXED) != lc ||
        __atomic_load_n(&tb->cur_fn, __ATOMIC_RELAXED) != f || __atomic_load_n(&tb->cur_t0, __ATOMIC_RELAXED) != t)
        return 0;
    *fn = f;
    *t0 = t;
    *count = (uint32_t)(lc >> 32);
    return 1;
}

/* flush_tick is one round of the time-based flush: each buffer's complete
 * events go to disk, and a call under way for longer than the interval gets
 * a pending block. */
static void flush_tick(uint64_t interval) {
    uint64_t now = mpit_now();
    for (mpit_tb *tb = __atomic_load_n(&G.threads, __ATOMIC_ACQUIRE); tb; tb = tb->next) {
        if (pthread_mutex_trylock(&tb->mu) != 0) continue; /* its owner is writing it */
        size_t len;
        uint32_t count;
        uint64_t end;
        if (tb_snapshot(tb, &len, &count, &end)) write_events(tb, len, count, end, 1);
        int fn;
        uint64_t t0;
        if (call_under_way(tb, &fn, &t0, &count) && now - t0 >= interval && count == tb->done_count) {
            uint64_t seq = tb->seq + count;
            /* Once, then again each time the wait has doubled: a rank that
             * hangs for long and is then killed tells, within a factor of
             * two, how long it waited, in a handful of blocks. */
            if (tb->pend_seq != seq || tb->pend_t0 != t0 || now - t0 >= 2 * (tb->pend_at - t0)) {
                pthread_mutex_lock(&G.io);
                if (!G.signalled && !G.flusher_stop && !G.failed) {
                    write_pending(tb, seq, fn, t0, now, 1);
                    G.ended = 0;
                }
                pthread_mutex_unlock(&G.io);
                tb->pend_seq = seq;
                tb->pend_t0 = t0;
                tb->pend_at = now;
            }
        }
        pthread_mutex_unlock(&tb->mu);
    }
}

static void *flusher(void *arg) {
    (void)arg;
    uint64_t interval = (uint64_t)G.flush_ms * 1000000u;
    struct timespec ts = {(time_t)(interval / 1000000000u), (long)(interval % 1000000000u)};
    for (;;) {
        nanosleep(&ts, NULL); /* every signal is blocked in this thread */
        if (__atomic_load_n(&G.flusher_stop, __ATOMIC_ACQUIRE) || G.signalled) break;
        flush_tick(interval);
    }
    return NULL;
}

/* start_flusher starts the time-based flush: a thread that wakes every
 * MPITRACE_FLUSH_INTERVAL ms. It takes no signal (they are the program's)
 * and calls no MPI function. */
static void start_flusher(void) {
    if (G.flush_ms <= 0 || G.fd < 0) return;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 64 * 1024);
    pthread_t t;
    if (pthread_create(&t, &at, flusher, NULL) != 0) G.flush_ms = 0;
    pthread_attr_destroy(&at);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
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
            mpit_warn_once("exists", "mpitrace: rank %d: %s already exists: a trace directory holds one recording; choose another directory (MPITRACE_DIR or `mpitrace record -o`); recording disabled, the application continues",
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

/* ------------------------------------------------------------------ */
/* Final flush: normal exit, exit without finalize, abort, signals,     */
/* MPI errors.                                                          */

/* flush_raw writes tb's events not written yet, up to (len, count), as an
 * uncompressed block straight from the buffer: it allocates nothing, takes
 * no lock and changes nothing in the buffer, so a signal handler can call
 * it while the owner (or the time-based flush) is compressing the same
 * events; they then write nothing. Callers hold G.io or are a handler that
 * could not get it. */
static void flush_raw(mpit_tb *tb, size_t len, uint32_t count, uint64_t end) {
    uint32_t done = tb->done_count;
    if (count <= done || len < tb->done_len) return;
    uint8_t head[MPIT_BLOCK_HEADER_SIZE + 40];
    size_t hl = events_prefix(tb, count, head + MPIT_BLOCK_HEADER_SIZE);
    const uint8_t *ev = tb->buf + MPIT_BLOCK_PREFIX + tb->done_len;
    size_t n = len - tb->done_len;
    frame2(head + MPIT_BLOCK_HEADER_SIZE, hl, ev, n, MPIT_BLOCK_EVENTS);
    struct iovec iov[2] = {{head, MPIT_BLOCK_HEADER_SIZE + hl}, {(void *)ev, n}};
    if (write_allv(iov, 2) == 0) written(tb, len, count, end);
}

/* end_block writes the end record. code, fn (a function index, 0: none) and
 * msg describe an MPI_Abort or an MPI error. No malloc: signal handlers
 * call it too. */
static void end_block(int reason, int sig, uint64_t code, int fn, const char *msg) {
    uint8_t b[MPIT_BLOCK_HEADER_SIZE + 100 + 256], *p = b + MPIT_BLOCK_HEADER_SIZE;
    p = mpit_put_u(p, (uint64_t)reason);
    p = mpit_put_u(p, (uint64_t)sig);
    p = mpit_put_u(p, G.events);
    p = mpit_put_u(p, G.blocks);
    p = mpit_put_u(p, mpit_now());
    p = mpit_put_u(p, G.dropped);
    p = mpit_put_u(p, code);
    p = mpit_put_u(p, fn > 0 && fn <= mpit_fn_count && mpit_fn_id[fn] != MPIT_FN_UNNAMED ? MPIT_LOGID(fn) : 0);
    size_t n = msg ? strlen(msg) : 0;
    if (n > 256) n = 256;
    p = mpit_put_u(p, n);
    if (n) memcpy(p, msg, n);
    p += n;
    size_t len = (size_t)(p - b) - MPIT_BLOCK_HEADER_SIZE;
    frame(b + MPIT_BLOCK_HEADER_SIZE, MPIT_BLOCK_END, MPIT_CODEC_NONE, len, len);
    write_all(b, MPIT_BLOCK_HEADER_SIZE + len);
}

/* What the final flush records about an abnormal end (mpit_before_abort,
 * the MPI error handler). */
static struct {
    uint64_t code;
    int fn;
    char msg[256];
} why;

/* signal_flush is the final flush of a fatal signal's handler: every
 * buffer's complete events, a pending block for every call under way (a
 * rank stopped inside MPI_Recv says so), and the end record. */
static void signal_flush(int sig) {
    /* Stop recording; no flush starts after this. */
    mpit_on = 0;
    G.signalled = 1;
    /* Another thread may be writing a block; give it a moment. (This
     * thread is not the writer unless the signal is a fault raised by the
     * recorder itself: the others are held off while it writes.) */
    int locked = pthread_mutex_trylock(&G.io) == 0;
    for (int i = 0; i < 1000 && !locked; i++) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
        locked = pthread_mutex_trylock(&G.io) == 0;
    }
    uint64_t now = mpit_now();
    int pending = 0;
    for (mpit_tb *tb = G.threads; tb; tb = tb->next) {
        uint64_t lc = __atomic_load_n(&tb->pub_lc, __ATOMIC_ACQUIRE);
        int fn;
        uint64_t t0;
        uint32_t c;
        pending |= (uint32_t)(lc >> 32) > tb->done_count || call_under_way(tb, &fn, &t0, &c);
    }
    if (G.ended && !pending) {
        /* Killed after the final flush (e.g. after MPI_Finalize, while the
         * launcher stops the job): the log is complete as it is. */
        if (locked) pthread_mutex_unlock(&G.io);
        return;
    }
    write_names(0);
    for (mpit_tb *tb = G.threads; tb; tb = tb->next) {
        uint64_t lc = __atomic_load_n(&tb->pub_lc, __ATOMIC_ACQUIRE);
        flush_raw(tb, (size_t)(uint32_t)lc, (uint32_t)(lc >> 32), __atomic_load_n(&tb->pub_end, __ATOMIC_RELAXED));
    }
    for (mpit_tb *tb = G.threads; tb; tb = tb->next) {
        int fn;
        uint64_t t0;
        uint32_t c;
        if (call_under_way(tb, &fn, &t0, &c) && c == tb->done_count) write_pending(tb, tb->seq + c, fn, t0, now, 0);
    }
    if (!G.failed) end_block(MPIT_END_SIGNAL, sig, 0, 0, NULL);
    G.ended = 1;
    /* Nothing writes after this: every writer checks G.signalled. */
    if (locked) pthread_mutex_unlock(&G.io);
}

static void mpit_final_flush(int reason, int sig) {
    if (G.fd < 0 || getpid() != G.pid) return;
    if (reason == MPIT_END_SIGNAL) {
        signal_flush(sig);
        return;
    }
    __atomic_store_n(&G.flusher_stop, 1, __ATOMIC_RELEASE);
    sigset_t old;
    hold_signals(&old);
    for (mpit_tb *tb = G.threads; tb; tb = tb->next) {
        if (tb == mpit_self) continue;
        /* Other threads: best effort, they should be done. */
        pthread_mutex_lock(&tb->mu);
        size_t len;
        uint32_t count;
        uint64_t end;
        if (tb_snapshot(tb, &len, &count, &end)) write_events(tb, len, count, end, 0);
        pthread_mutex_unlock(&tb->mu);
    }
    if (mpit_self) mpit_flush_thread(mpit_self);
    pthread_mutex_lock(&G.io);
    int fn;
    uint64_t t0;
    uint32_t c;
    if (reason == MPIT_END_MPI_ERROR && mpit_self && !G.failed && call_under_way(mpit_self, &fn, &t0, &c))
        write_pending(mpit_self, mpit_self->seq + c, fn, t0, mpit_now(), 1); /* the call that failed */
    if (!G.failed && !G.ended) end_block(reason, sig, why.code, why.fn, why.msg);
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
    if (tb && !tb->depth && tb->count > tb->done_count && !G.signalled && G.fd >= 0 && getpid() == G.pid &&
        pthread_mutex_trylock(&G.io) == 0) {
        /* Checked again under the lock: a fatal signal's handler or a flush
         * on another thread may have got there first. */
        if (!G.signalled) {
            write_names(0);
            flush_raw(tb, tb->len, tb->count, tb->last_end);
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
    __atomic_store_n(&tb->depth, 1, __ATOMIC_RELAXED); /* mpit_commit clears it; the caller's event follows */
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
    mpit_abandon(tb); /* the call's own event was the CommNew */
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
    __atomic_store_n(&tb->depth, 1, __ATOMIC_RELAXED);
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
    /* Before the clock synchronisation: a rank stopped while it waits for
     * the others (another rank aborted) still writes its log. Events
     * recorded before MPI_Init (e.g. MPI_Initialized) wait in the buffer for
     * the file; they go out with the first block. */
    if (G.fd >= 0) {
        install_signals();
        install_errhandler();
    }
    start_flusher();
    clock_sync(&sync_offset[MPIT_PHASE_INIT], &sync_err[MPIT_PHASE_INIT]);
    /* Rank 0 measures the ranks one after the other: without this barrier
     * rank 1 would leave MPI_Init long before the last rank, and a program
     * whose ranks abort right after MPI_Init would have its other ranks
     * killed inside MPI_Init, before they print their messages or record
     * anything, which a run without the recorder does not do. */
    if (G.clocksync > 0 && G.size > 1 && G.priv != MPI_COMM_NULL) PMPI_Barrier(G.priv);
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

/* ------------------------------------------------------------------ */
/* MPI errors                                                          */

static MPI_Errhandler errh = MPI_ERRHANDLER_NULL; /* the recorder's */
MPIT_HIDDEN MPIT_TLS int mpit_refire;

/* argument_error: errors an MPI finds in a call's arguments, before it does
 * anything: making the call again reports the same error. */
static int argument_error(int cls) {
    switch (cls) {
    case MPI_ERR_BUFFER: case MPI_ERR_COUNT: case MPI_ERR_TYPE: case MPI_ERR_TAG: case MPI_ERR_COMM:
    case MPI_ERR_RANK: case MPI_ERR_ROOT: case MPI_ERR_GROUP: case MPI_ERR_OP: case MPI_ERR_TOPOLOGY:
    case MPI_ERR_DIMS: case MPI_ERR_ARG: case MPI_ERR_REQUEST:
        return 1;
    }
    return 0;
}

/* on_mpi_error stands for MPI_ERRORS_ARE_FATAL: it writes the log (the call
 * that failed, and an end record with the error), then has the MPI's own
 * fatal handler report the error and stop the job. */
static void on_mpi_error(MPI_Comm *comm, int *code, ...) {
    int cls = MPI_ERR_OTHER, len = 0;
    PMPI_Error_class(*code, &cls);
    mpit_tb *tb = mpit_self;
    int fn = tb && tb->depth ? tb->cur_fn : 0; /* the recorded call it arose in */
    char msg[MPI_MAX_ERROR_STRING + 1] = "";
    if (PMPI_Error_string(*code, msg, &len) != MPI_SUCCESS) len = 0;
    msg[len > 0 && len <= MPI_MAX_ERROR_STRING ? len : 0] = '\0';
    why.code = (uint64_t)(uint32_t)cls; /* portable, unlike MPICH's codes */
    why.fn = fn;
    snprintf(why.msg, sizeof why.msg, "%s", msg);
    mpit_final_flush(MPIT_END_MPI_ERROR, 0);
    PMPI_Comm_set_errhandler(*comm, MPI_ERRORS_ARE_FATAL);
    if (fn && argument_error(cls)) {
        mpit_refire = fn; /* the wrapper makes the call again */
        return;
    }
    PMPI_Comm_call_errhandler(*comm, *code);
}

MPIT_HIDDEN int mpit_again(int fn) {
    if (mpit_refire != fn) return 0;
    mpit_refire = 0;
    return 1;
}

MPIT_HIDDEN MPI_Errhandler mpit_errh_in(MPI_Errhandler eh) {
    return eh == MPI_ERRORS_ARE_FATAL && errh != MPI_ERRHANDLER_NULL ? errh : eh;
}

MPIT_HIDDEN void mpit_errh_out(MPI_Errhandler *eh) {
    if (errh != MPI_ERRHANDLER_NULL && eh && *eh == errh) {
        PMPI_Errhandler_free(eh);
        *eh = MPI_ERRORS_ARE_FATAL;
    }
}

/* install_errhandler puts the recorder's handler where MPI_ERRORS_ARE_FATAL
 * is (communicators made later inherit it). */
static void install_errhandler(void) {
    if (PMPI_Comm_create_errhandler(on_mpi_error, &errh) != MPI_SUCCESS) {
        errh = MPI_ERRHANDLER_NULL;
        return;
    }
    MPI_Comm comms[2] = {MPI_COMM_WORLD, MPI_COMM_SELF};
    for (int i = 0; i < 2; i++) {
        MPI_Errhandler cur = MPI_ERRHANDLER_NULL;
        if (PMPI_Comm_get_errhandler(comms[i], &cur) != MPI_SUCCESS) continue;
        if (cur == MPI_ERRORS_ARE_FATAL) PMPI_Comm_set_errhandler(comms[i], errh);
        if (cur != MPI_ERRHANDLER_NULL) PMPI_Errhandler_free(&cur);
    }
}

MPIT_HIDDEN void mpit_before_abort(int errorcode) {
    why.code = (uint64_t)(uint32_t)errorcode;
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

/* ------------------------------------------------------------------ */
/* The recorder in a process of another MPI                            */

/* The recorder is compiled against one MPI's mpi.h: its handles and
 * constants mean nothing to another MPI (Open MPI's MPI_COMM_WORLD is a
 * pointer, MPICH's an integer). `record` picks the MPI from the program and
 * the launcher; when the guess is wrong, or the recorder is preloaded by
 * hand into the wrong program, the recorder must step aside before the
 * program runs. */
#ifdef OPEN_MPI
#define MPIT_BUILT_FOR_OMPI 1
#else
#define MPIT_BUILT_FOR_OMPI 0
#endif

/* foreign_mpi returns the library of the MPI the process calls (the one
 * that defines its PMPI_Init) when it is not the MPI the recorder was built
 * for, else NULL; *ompi says whether that library is Open MPI's. */
static const char *foreign_mpi(int *ompi) {
    static Dl_info info;
    if (!dladdr((void *)&PMPI_Init, &info) || !info.dli_fname || !info.dli_fname[0]) return NULL;
    void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return NULL;
    *ompi = dlsym(h, "ompi_mpi_comm_world") != NULL;
    dlclose(h);
    return *ompi == MPIT_BUILT_FOR_OMPI ? NULL : info.dli_fname;
}

/* without_self returns the LD_PRELOAD list without the recorder's library
 * (path: its file), in out; entries are separated by colons or spaces. */
static void without_self(const char *list, const char *path, char *out, size_t n) {
    char real[4096], rp[4096];
    if (!realpath(path, real)) snprintf(real, sizeof real, "%s", path);
    size_t k = 0;
    out[0] = '\0';
    for (const char *p = list; p && *p;) {
        while (*p == ':' || *p == ' ') p++;
        const char *e = p;
        while (*e && *e != ':' && *e != ' ') e++;
        size_t len = (size_t)(e - p);
        if (len > 0 && len < sizeof rp) {
            memcpy(rp, p, len);
            rp[len] = '\0';
            char r2[4096];
            int self = !strcmp(rp, path) || (realpath(rp, r2) && !strcmp(r2, real));
            if (!self && k + len + 2 < n) {
                if (k) out[k++] = ':';
                memcpy(out + k, p, len);
                k += len;
                out[k] = '\0';
            }
        }
        p = e;
    }
}

/* step_aside runs the program again, without the recorder: its
 * constructors have run, but nothing of the program yet. */
static void step_aside(char **argv, const char *lib, int ompi) {
    const char *prog = argv && argv[0] ? argv[0] : "the program";
    mpit_warn_once("foreign", "mpitrace: the recorder was built for %s, but %s uses %s (%s): it runs without recording; record it with --mpicc naming its MPI's C compiler wrapper (e.g. mpitrace record --mpicc %s -- ...)",
                   MPIT_BUILT_FOR_OMPI ? "Open MPI" : "MPICH", prog, ompi ? "Open MPI" : "an MPICH-based MPI", lib,
                   ompi ? "mpicc.openmpi" : "mpicc.mpich");
    mpit_on = 0;
    Dl_info self;
    if (!argv || !dladdr((void *)&step_aside, &self) || !self.dli_fname) return;
    static char rest[8192];
    without_self(getenv("LD_PRELOAD"), self.dli_fname, rest, sizeof rest);
    if (rest[0])
        setenv("LD_PRELOAD", rest, 1);
    else
        unsetenv("LD_PRELOAD");
    setenv("MPITRACE_STEPPED_ASIDE", "1", 1); /* never twice */
    execv("/proc/self/exe", argv);
    /* The program goes on with the recorder switched off. */
}

/* glibc calls constructors with the program's arguments and environment. */
__attribute__((constructor)) static void mpit_load(int argc, char **argv, char **envp) {
    (void)argc;
    (void)envp;
    crc_init();
    pthread_key_create(&G.key, tb_destroy);
    const char *v = getenv("MPITRACE_STATE_DIR");
    if (v) snprintf(G.state_dir, sizeof G.state_dir, "%s", v);
    int ompi = 0;
    const char *lib = getenv("MPITRACE_STEPPED_ASIDE") ? NULL : foreign_mpi(&ompi);
    if (lib) {
        step_aside(argv, lib, ompi);
        return;
    }
    if (getenv("MPITRACE_STEPPED_ASIDE")) return; /* recording stays off */
    v = getenv("MPITRACE_DIR");
    snprintf(G.dir, sizeof G.dir, "%s", v && *v ? v : "traces");
    v = getenv("MPITRACE_RUN_ID");
    if (v) snprintf(G.run_id, sizeof G.run_id, "%s", v);
    G.bufsize = (size_t)env_long("MPITRACE_BUFFER", 256 * 1024, 4096, 16 * 1024 * 1024);
    G.zlevel = (int)env_long("MPITRACE_ZSTD_LEVEL", 1, -5, 19);
    G.compress = (int)env_long("MPITRACE_COMPRESS", 1, 0, 1);
    G.clocksync = (int)env_long("MPITRACE_CLOCKSYNC", 10, 0, 1000);
    G.test_signal = (int)env_long("MPITRACE_TEST_SIGNAL_IN_FLUSH", 0, 0, 64);
    G.flush_ms = (int)env_long("MPITRACE_FLUSH_INTERVAL", 500, 0, 3600 * 1000);
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
    snprintf(G.options, sizeof G.options, "buffer=%zu compress=%d zstd_level=%d clocksync=%d flush_interval_ms=%d include=%s exclude=%s",
             G.bufsize, G.compress, G.zlevel, G.clocksync, G.flush_ms, inc ? inc : "", exc ? exc : "");
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
