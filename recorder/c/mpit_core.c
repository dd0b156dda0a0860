/* mpitrace recorder core: thread buffers, blocks, the log file and its
 * string table, the time-based flush, pending calls, the final flush at
 * exit and on fatal signals. Nothing here knows MPI (see mpit_core.h).
 *
 * See docs/format.md for the file layout and docs/recording.md for the
 * behaviour (what is recorded, controls, failure handling). */
#define _GNU_SOURCE
#include "mpit_core.h"

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

MPIT_HIDDEN MPIT_TLS mpit_tb *mpit_self;
MPIT_HIDDEN volatile int mpit_on;
static uint16_t mpit_fn_none[1];
MPIT_HIDDEN uint16_t *mpit_fn_id = mpit_fn_none;
static const char *const no_names[1] = {""};
MPIT_HIDDEN const char *const *mpit_fn_name = no_names;
MPIT_HIDDEN int mpit_fn_n;

MPIT_HIDDEN struct mpit_global mpit_G = {.fd = -1, .io = PTHREAD_MUTEX_INITIALIZER, .tl = PTHREAD_MUTEX_INITIALIZER};
#define G mpit_G

static void open_alone(void);
/* Set when a buffer dropped events that were never written, which may
 * have been Site or Map events: the next new call site rebuilds the table. */
static int mpit_sites_lost;
static void install_signals(void);


/* ------------------------------------------------------------------ */
/* Messages: one line, prefixed, and at most once per recording for    */
/* problems every rank would otherwise repeat.                          */

MPIT_HIDDEN void mpit_warn_once(const char *tag, const char *fmt, ...) {
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
    /* Without MPI the log opens with the first event. */
    if (!G.has_mpi && !G.opened) open_alone();
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

/* tb_restart starts the buffer afresh, its stream index advanced by
 * `advance` events; callers are its owner, holding tb->mu (but for a
 * forked child, whose lock may be stuck) and, when a log is open, G.io. */
static void tb_restart(mpit_tb *tb, uint32_t advance) {
    tb->seq += advance;
    tb->base = tb->last_end;
    tb->len = 0;
    tb->count = 0;
    tb->done_len = 0;
    tb->done_count = 0;
    mpit_publish(tb);
}

/* Strings (function names, file names) are written to the log's string
 * table when first used, so a log names only what it uses. Ids come from
 * one counter; a function's id is its name's. */
typedef struct {
    uint64_t id;
    const char *s;
} pending_str;
static pending_str *pending_names; /* strings waiting for a strings block */
static int npending, cap_pending;
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t next_logid;

/* queue_name gives s the next id and queues it; callers hold names_mu (or
 * are the signal handler, which never grows the queue). An old queue is
 * never freed: a signal handler may be reading it. */
static uint64_t queue_name(const char *s, int may_grow) {
    if (npending == cap_pending) {
        if (!may_grow) return 0;
        /* At first room for every function name and some: a signal
         * handler, which cannot grow the queue, names a function too. */
        int cap = cap_pending ? 2 * cap_pending : 2 * mpit_fn_n + 64;
        pending_str *p = malloc((size_t)cap * sizeof *p);
        if (!p) return 0;
        if (npending) memcpy(p, pending_names, (size_t)npending * sizeof *p);
        __atomic_store_n(&pending_names, p, __ATOMIC_RELEASE);
        cap_pending = cap;
    }
    uint64_t id = ++next_logid;
    pending_names[npending].id = id;
    pending_names[npending].s = s;
    __atomic_store_n(&npending, npending + 1, __ATOMIC_RELEASE);
    return id;
}

/* name_fn gives fn its log id and queues its name; callers hold names_mu
 * (or are the signal handler). Function ids are 16 bits: past them a
 * function is not recorded. */
static void name_fn(int fn, int may_grow) {
    if (mpit_fn_id[fn] != MPIT_FN_UNNAMED) return;
    if (next_logid + 1 >= MPIT_FN_UNNAMED) {
        mpit_fn_id[fn] = 0;
        return;
    }
    uint64_t id = queue_name(mpit_fn_name[fn], may_grow);
    if (id) mpit_fn_id[fn] = (uint16_t)id;
}

MPIT_HIDDEN void mpit_announce(int fn) {
    pthread_mutex_lock(&names_mu);
    name_fn(fn, 1);
    pthread_mutex_unlock(&names_mu);
}

MPIT_HIDDEN uint64_t mpit_intern(const char *s) {
    char *copy = strdup(s ? s : "");
    if (!copy) return 0;
    pthread_mutex_lock(&names_mu);
    uint64_t id = queue_name(copy, 1);
    pthread_mutex_unlock(&names_mu);
    if (!id) free(copy);
    return id;
}

/* Names that recur (loop files, region and kernel names, memory spaces)
 * get one string id per distinct content: a table of the interned copies,
 * by hash. */
typedef struct {
    const char *s; /* owned, NUL-terminated */
    size_t n;
    uint64_t hash, id;
} uname;
static struct {
    pthread_mutex_t mu;
    uname *t;
    size_t n, cap;
} U = {.mu = PTHREAD_MUTEX_INITIALIZER};

MPIT_HIDDEN uint64_t mpit_name_id(const char *s, size_t n, uint64_t h, const char **owned) {
    pthread_mutex_lock(&U.mu);
    uint64_t id = 0;
    if (U.n * 2 >= U.cap) {
        size_t cap = U.cap ? 2 * U.cap : 64;
        uname *t = calloc(cap, sizeof *t);
        if (!t) goto out;
        for (size_t i = 0; i < U.cap; i++) {
            if (!U.t[i].s) continue;
            size_t j = U.t[i].hash & (cap - 1);
            while (t[j].s) j = (j + 1) & (cap - 1);
            t[j] = U.t[i];
        }
        free(U.t);
        U.t = t;
        U.cap = cap;
    }
    size_t j = h & (U.cap - 1);
    while (U.t[j].s) {
        if (U.t[j].hash == h && U.t[j].n == n && !memcmp(U.t[j].s, s, n)) {
            id = U.t[j].id;
            if (owned) *owned = U.t[j].s;
            goto out;
        }
        j = (j + 1) & (U.cap - 1);
    }
    char *copy = malloc(n + 1);
    if (!copy) goto out;
    memcpy(copy, s, n);
    copy[n] = 0;
    pthread_mutex_lock(&names_mu);
    id = queue_name(copy, 1);
    pthread_mutex_unlock(&names_mu);
    if (!id) {
        free(copy);
        goto out;
    }
    U.t[j] = (uname){copy, n, h, id};
    U.n++;
    if (owned) *owned = copy;
out:
    pthread_mutex_unlock(&U.mu);
    return id;
}

/* write_names writes the queued strings as one strings block; callers hold
 * G.io. In a signal handler (`locked` false) it takes no lock and allocates
 * nothing, writing the strings one block each. */
static void write_names(int locked) {
    if (locked) pthread_mutex_lock(&names_mu);
    if (npending > 0 && G.fd >= 0) {
        if (locked) {
            bbuf s;
            bb_start(&s);
            bb_u(&s, (uint64_t)npending);
            for (int i = 0; i < npending; i++) {
                bb_u(&s, pending_names[i].id);
                bb_str(&s, pending_names[i].s);
            }
            write_plain(&s, MPIT_BLOCK_STRINGS);
            free(s.p);
        } else {
            for (int i = 0; i < npending; i++) {
                uint8_t one[MPIT_BLOCK_HEADER_SIZE + 300], *p = one + MPIT_BLOCK_HEADER_SIZE;
                const char *name = pending_names[i].s;
                size_t n = strlen(name);
                if (n > 256) n = 256;
                p = mpit_put_u(p, 1);
                p = mpit_put_u(p, pending_names[i].id);
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
    /* The thread records nothing while it writes (a marker in a signal
     * handler would wait for tb->mu, held here). */
    int depth = __atomic_exchange_n(&tb->depth, 1, __ATOMIC_RELAXED);
    sigset_t old;
    hold_signals(&old);
    pthread_mutex_lock(&tb->mu);
    write_events(tb, tb->len, tb->count, tb->last_end, 0);
    pthread_mutex_lock(&G.io);
    if (!G.signalled) {
        /* What could not be written (a write failure) is dropped, and
         * counted. */
        if (tb->done_count < tb->count) G.dropped += tb->count - tb->done_count;
        tb_restart(tb, tb->count);
    }
    pthread_mutex_unlock(&G.io);
    pthread_mutex_unlock(&tb->mu);
    release_signals(&old);
    __atomic_store_n(&tb->depth, depth, __ATOMIC_RELAXED);
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
        tb_restart(tb, tb->done_count);
        /* Site and Map events may have been dropped with the rest: the
         * call-site table starts afresh (see mpit_site_slow). */
        memset(tb->site_addr, 0, sizeof tb->site_addr);
        __atomic_store_n(&mpit_sites_lost, 1, __ATOMIC_RELEASE);
    }
    if (locked) pthread_mutex_unlock(&tb->mu);
}

/* reserve_list is mpit_reserve for events whose size depends on input; it
 * returns NULL (and counts a dropped event) when the event cannot fit. */
MPIT_HIDDEN uint8_t *mpit_reserve_list(mpit_tb *tb, size_t need) {
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
    if (tb) {
        /* Its open loops, regions and kernels end with it. */
        mpit_loops_thread_end();
        mpit_kokkos_thread_end();
    }
    if (tb && tb->count) mpit_flush_thread(tb);
}

/* ------------------------------------------------------------------ */
/* Pending calls and the time-based flush                              */

/* write_pending writes a pending block: thread tb was inside fn since t0,
 * and the call's event will be the thread's event number seq. Callers hold
 * G.io (or are a signal handler: `locked` false). */
static void write_pending(const mpit_tb *tb, uint64_t seq, int fn, uint64_t t0, uint64_t now, int locked) {
    if (fn <= 0 || fn > mpit_fn_n) return;
    if (locked) {
        pthread_mutex_lock(&names_mu);
        name_fn(fn, 1);
        pthread_mutex_unlock(&names_mu);
    } else {
        name_fn(fn, 0);
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

/* header_block writes the header: the core's keys, the loop markers'
 * keys, then those of the layer above (extra, n pairs). Callers hold G.io. */
static void header_block(const char *const (*extra)[2], int n) {
    bbuf b;
    bb_start(&b);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    struct timespec rt, res;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t mono = mpit_now();
    clock_getres(CLOCK_MONOTONIC, &res);
    char num[8][32];
    snprintf(num[0], 32, "%d", G.rank);
    snprintf(num[1], 32, "%d", G.size);
    snprintf(num[2], 32, "%ld", (long)getpid());
    snprintf(num[4], 32, "%ld", (long)res.tv_nsec + (long)res.tv_sec * 1000000000L);
    snprintf(num[5], 32, "%llu", (unsigned long long)rt.tv_sec * 1000000000ull + (unsigned long long)rt.tv_nsec);
    snprintf(num[6], 32, "%llu", (unsigned long long)mono);
    snprintf(num[7], 32, "%ld", sysconf(_SC_NPROCESSORS_ONLN));
    const char *kv[][2] = {
        {"rank", num[0]},
        {"size", num[1]},
        {"run_id", G.run_id},
        {"hostname", host},
        {"pid", num[2]},
        {"recorder_version", MPIT_VERSION},
        {"clock", "CLOCK_MONOTONIC"},
        {"clock_res_ns", num[4]},
        {"init_realtime_ns", num[5]},
        {"init_monotonic_ns", num[6]},
        {"options", G.options},
        {"cpus", num[7]},
    };
    const char *loops[3][2];
    mpit_loops_header(loops);
    size_t nk = sizeof kv / sizeof kv[0];
    bb_u(&b, nk + 3 + (size_t)n);
    for (size_t i = 0; i < nk; i++) {
        bb_str(&b, kv[i][0]);
        bb_str(&b, kv[i][1]);
    }
    for (int i = 0; i < n; i++) {
        bb_str(&b, extra[i][0]);
        bb_str(&b, extra[i][1]);
    }
    for (int i = 0; i < 3; i++) {
        bb_str(&b, loops[i][0]);
        bb_str(&b, loops[i][1]);
    }
    write_plain(&b, MPIT_BLOCK_HEADER);
    free(b.p);
}

MPIT_HIDDEN int mpit_core_open(const char *const (*extra)[2], int n) {
    if (!mpit_on || __atomic_exchange_n(&G.opened, 1, __ATOMIC_ACQ_REL)) return 0;
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
        return 0;
    }
    G.pid = getpid();
    uint8_t magic[MPIT_MAGIC_LEN + 2];
    memcpy(magic, MPIT_MAGIC, MPIT_MAGIC_LEN);
    magic[MPIT_MAGIC_LEN] = (uint8_t)(MPIT_FORMAT_VERSION & 0xff);
    magic[MPIT_MAGIC_LEN + 1] = (uint8_t)(MPIT_FORMAT_VERSION >> 8);
    pthread_mutex_lock(&G.io);
    G.fd = fd;
    if (write_all(magic, sizeof magic) == 0) header_block(extra, n);
    pthread_mutex_unlock(&G.io);
    return 1;
}

/* open_alone opens the log of a process that has no MPI rank: a program
 * without MPI, or one that never called MPI_Init. It is one rank of size
 * 1, the rank its launcher gave it, if any. */
static void open_alone(void) {
    if (G.opened || !mpit_on || getpid() != G.pid) return;
    G.rank = mpit_env_rank();
    G.size = 1;
    if (mpit_core_open(NULL, 0) && G.fd >= 0) mpit_core_start();
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
    p = mpit_put_u(p, fn > 0 && fn <= mpit_fn_n && mpit_fn_id[fn] != MPIT_FN_UNNAMED ? MPIT_LOGID(fn) : 0);
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
MPIT_HIDDEN struct mpit_why mpit_why;

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

MPIT_HIDDEN void mpit_final_flush(int reason, int sig) {
    if (G.fd < 0 || getpid() != G.pid) return;
    if (reason == MPIT_END_SIGNAL) {
        signal_flush(sig);
        return;
    }
    /* MPI_Finalize before Kokkos' finalisation, or inside a region or an
     * instrumented loop of this thread (push("main"); MPI_Init ...
     * MPI_Finalize; pop()): the events so far are written, the end record
     * waits for Kokkos or the program's exit, which close what is open. */
    int defer = reason == MPIT_END_FINALIZE && (G.defer_end || mpit_kokkos_open() || mpit_loops_open());
    if (!defer) __atomic_store_n(&G.flusher_stop, 1, __ATOMIC_RELEASE);
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
    if (!defer) {
        if (!G.failed && !G.ended) end_block(reason, sig, mpit_why.code, mpit_why.fn, mpit_why.msg);
        G.ended = 1;
        /* Recording ends with the end record: what happens after it (a
         * region another thread ends later, a call after MPI_Finalize) is
         * not recorded, rather than written after the record that says
         * the log is complete. */
        mpit_on = 0;
    }
    pthread_mutex_unlock(&G.io);
    release_signals(&old);
}

static void at_exit(void) {
    /* The loops, regions and kernels this thread left open end with the
     * program; the log ends here even if Kokkos never finalized. */
    mpit_loops_thread_end();
    mpit_kokkos_thread_end();
    G.defer_end = 0;
    if (G.fd < 0) {
        /* MPI_Init never came (or there is no MPI): the process is one rank,
         * written now if it recorded anything. */
        int any = 0;
        for (mpit_tb *tb = G.threads; tb; tb = tb->next) any |= tb->count > 0 || tb->seq > 0;
        if (!any || G.finalized || getpid() != G.pid) return;
        open_alone();
        if (G.fd < 0) return;
    }
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

MPIT_HIDDEN void mpit_core_start(void) {
    install_signals();
    start_flusher();
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
/* Controls                                                            */

MPIT_HIDDEN long mpit_env_long(const char *name, long def, long lo, long hi) {
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

MPIT_HIDDEN uint64_t mpit_mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

MPIT_HIDDEN int mpit_env_rank(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (!v || !*v) continue;
        char *end;
        long r = strtol(v, &end, 10);
        if (!*end && r >= 0 && r < 100000000) return (int)r;
    }
    return 0;
}

MPIT_HIDDEN void mpit_core_off(void) { mpit_on = 0; }

/* glibc calls constructors with the program's arguments and environment;
 * the core's runs first (the MPI layer's, if any, after it). */
__attribute__((constructor(101))) static void mpit_core_load(void) {
    crc_init();
    G.pid = getpid();
    pthread_key_create(&G.key, tb_destroy);
    const char *v = getenv("MPITRACE_STATE_DIR");
    if (v) snprintf(G.state_dir, sizeof G.state_dir, "%s", v);
    if (getenv("MPITRACE_STEPPED_ASIDE")) return; /* recording stays off */
    v = getenv("MPITRACE_DIR");
    snprintf(G.dir, sizeof G.dir, "%s", v && *v ? v : "traces");
    v = getenv("MPITRACE_RUN_ID");
    if (v) snprintf(G.run_id, sizeof G.run_id, "%s", v);
    G.bufsize = (size_t)mpit_env_long("MPITRACE_BUFFER", 256 * 1024, 4096, 16 * 1024 * 1024);
    G.zlevel = (int)mpit_env_long("MPITRACE_ZSTD_LEVEL", 1, -5, 19);
    G.compress = (int)mpit_env_long("MPITRACE_COMPRESS", 1, 0, 1);
    G.test_signal = (int)mpit_env_long("MPITRACE_TEST_SIGNAL_IN_FLUSH", 0, 0, 64);
    G.flush_ms = (int)mpit_env_long("MPITRACE_FLUSH_INTERVAL", 500, 0, 3600 * 1000);
    snprintf(G.options, sizeof G.options, "buffer=%zu compress=%d zstd_level=%d flush_interval_ms=%d",
             G.bufsize, G.compress, G.zlevel, G.flush_ms);
    if (!G.run_id[0]) {
        /* Not started by `mpitrace record`; the MPI layer shares rank 0's
         * id at MPI_Init, a process without MPI keeps this one. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(G.run_id, sizeof G.run_id, "%016llx",
                 (unsigned long long)mpit_mix64((uint64_t)ts.tv_nsec ^ mpit_mix64((uint64_t)ts.tv_sec) ^ mpit_mix64((uint64_t)getpid())));
        G.run_id_drawn = 1;
    }
    mpit_loops_load();
    mpit_kokkos_load();
    v = getenv("MPITRACE_ENABLE");
    int enable = !(v && (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "false")));
    if (enable) atexit(at_exit);
    mpit_on = enable;
}

/* ---- call sites ---- */

#include <elf.h>
#include <link.h>

/* The rank's call-site table: return address -> id, open addressing, and
 * the executable mappings written so far (to tell when an address is in
 * an object loaded since). Changed under S.mu. */
static struct {
    pthread_mutex_t mu;
    uintptr_t *addr; /* 0: empty slot */
    uint32_t *id;
    size_t n, cap;
    uint32_t next;
    struct seg {
        uintptr_t start, end;
    } *segs;
    size_t nsegs, capsegs;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* append_event appends the complete event ev[0:n) (no duration) to tb,
 * the owner's buffer, in the middle of a recorded call: the call's own
 * event comes after it. */
static void append_event(mpit_tb *tb, const uint8_t *ev, size_t n) {
    if (MPIT_UNLIKELY(tb->len + n > tb->cap)) mpit_reserve_slow(tb, n);
    if (tb->len + n > tb->cap) return;
    memcpy(tb->buf + MPIT_BLOCK_PREFIX + tb->len, ev, n);
    tb->len += n;
    tb->count++;
    mpit_publish(tb);
}

static int seg_known(uintptr_t a) {
    for (size_t i = 0; i < S.nsegs; i++)
        if (a >= S.segs[i].start && a < S.segs[i].end) return 1;
    return 0;
}

/* build_id returns the hex GNU build id of the object whose program
 * headers info describes, read from its PT_NOTE segments in memory, in
 * out (at least 2*64+1 bytes); "" when it has none. */
static void build_id(const struct dl_phdr_info *info, char *out) {
    out[0] = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            size_t nsz = (nh->n_namesz + 3) & ~(size_t)3, dsz = (nh->n_descsz + 3) & ~(size_t)3;
            const uint8_t *name = p + sizeof *nh, *desc = name + nsz;
            if (desc + dsz > end || desc + nh->n_descsz > end) break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
                nh->n_descsz > 0 && nh->n_descsz <= 64) {
                static const char hex[] = "0123456789abcdef";
                for (size_t k = 0; k < nh->n_descsz; k++) {
                    out[2 * k] = hex[desc[k] >> 4];
                    out[2 * k + 1] = hex[desc[k] & 15];
                }
                out[2 * nh->n_descsz] = 0;
                return;
            }
            p = desc + dsz;
        }
    }
}

/* The Map events of one scan, appended to scan_tb. */
static mpit_tb *scan_tb;

static int scan_object(struct dl_phdr_info *info, size_t size, void *first) {
    (void)size;
    const char *path = info->dlpi_name;
    char exe[4096];
    if (*(int *)first) {
        /* The program itself comes first, without a name. */
        *(int *)first = 0;
        if (!path || !*path) {
            ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
            if (n <= 0) return 0;
            exe[n] = 0;
            path = exe;
        }
    }
    if (!path || path[0] != '/') return 0; /* the vDSO, or no file */
    char bid[2 * 64 + 1];
    int have_bid = 0;
    uint64_t path_id = 0, bid_id = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || ph->p_memsz == 0) continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (seg_known(start)) continue;
        if (S.nsegs == S.capsegs) {
            size_t cap = S.capsegs ? 2 * S.capsegs : 32;
            struct seg *t = realloc(S.segs, cap * sizeof *t);
            if (!t) return 1;
            S.segs = t;
            S.capsegs = cap;
        }
        S.segs[S.nsegs++] = (struct seg){start, start + ph->p_memsz};
        if (!path_id) {
            size_t n = strlen(path);
            path_id = mpit_name_id(path, n, mpit_hash(path, n), NULL);
            if (!path_id) return 0;
        }
        if (!have_bid) {
            have_bid = 1;
            build_id(info, bid);
            size_t n = strlen(bid);
            if (n) bid_id = mpit_name_id(bid, n, mpit_hash(bid, n), NULL);
        }
        uint8_t ev[MPIT_MAXSIZE_MAP];
        uint8_t *e = mpit_put_map(ev, 0, start, ph->p_memsz, ph->p_offset, path_id, bid_id);
        append_event(scan_tb, ev, (size_t)(e - ev));
    }
    return 0;
}

MPIT_HIDDEN uint32_t mpit_site_slow(mpit_tb *tb, uintptr_t addr) {
    uint32_t id = 0;
    pthread_mutex_lock(&S.mu);
    if (S.n * 2 >= S.cap) {
        size_t cap = S.cap ? 2 * S.cap : 256;
        uintptr_t *a = calloc(cap, sizeof *a);
        uint32_t *d = calloc(cap, sizeof *d);
        if (!a || !d) {
            free(a);
            free(d);
            goto out;
        }
        for (size_t i = 0; i < S.cap; i++) {
            if (!S.addr[i]) continue;
            size_t j = mpit_mix64(S.addr[i]) & (cap - 1);
            while (a[j]) j = (j + 1) & (cap - 1);
            a[j] = S.addr[i];
            d[j] = S.id[i];
        }
        free(S.addr);
        free(S.id);
        S.addr = a;
        S.id = d;
        S.cap = cap;
    }
    if (__atomic_exchange_n(&mpit_sites_lost, 0, __ATOMIC_ACQ_REL)) {
        /* Events were dropped, perhaps Site and Map events: forget every
         * site and mapping, so they are written again (with new ids: a
         * thread's event may still use an old one). */
        memset(S.addr, 0, S.cap * sizeof *S.addr);
        S.n = 0;
        S.nsegs = 0;
    }
    size_t j = mpit_mix64(addr) & (S.cap - 1);
    while (S.addr[j] && S.addr[j] != addr) j = (j + 1) & (S.cap - 1);
    if (S.addr[j]) {
        id = S.id[j];
    } else {
        if (!seg_known(addr)) {
            /* The mappings first: every loaded object's not written yet. */
            int first = 1;
            scan_tb = tb;
            dl_iterate_phdr(scan_object, &first);
        }
        id = ++S.next;
        S.addr[j] = addr;
        S.id[j] = id;
        S.n++;
        uint8_t ev[MPIT_MAXSIZE_SITE];
        uint8_t *e = mpit_put_site(ev, 0, id, addr);
        append_event(tb, ev, (size_t)(e - ev));
    }
out:
    pthread_mutex_unlock(&S.mu);
    /* Not cached when this very call's events were dropped: the next call
     * rebuilds the table. */
    if (id && !__atomic_load_n(&mpit_sites_lost, __ATOMIC_ACQUIRE)) {
        unsigned h = MPIT_SITE_SLOT(addr);
        tb->site_addr[h] = addr;
        tb->site_id[h] = id;
    }
    return id;
}
