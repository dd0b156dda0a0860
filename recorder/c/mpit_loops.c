/* mpitrace recorder: loop markers (docs/loops.md).
 *
 * The recorder exports mpitrace_api_v1 (mpitrace.h); a program built with
 * the markers finds it at start and calls it at each loop's begin and end
 * and at each iteration's begin and end. Per thread, a stack of the open
 * instrumented loops stands for the seed's two stacks: each entry holds
 * the loop's iteration count (the iteration-counter stack) and whether its
 * current iteration is sampled (the decision stack). A loop is instrumented
 * when it is at the top level of its thread or runs inside a sampled
 * iteration; each of its iterations is counted and sampled with the chance
 * its marker gives (or MPITRACE_LOOP_CHANCE); a sampled iteration is
 * recorded with the counters' increments over it.
 *
 * The markers run on the application's threads, beside its MPI calls: the
 * events go to the calling thread's buffer, through the core. */
#define _GNU_SOURCE
#include "mpit_core.h"

#define MPITRACE_API_ONLY
#include "mpitrace.h"

#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The deepest nest of instrumented loops a thread keeps; a loop opened
 * deeper is not instrumented (as if its parent iteration were not
 * sampled). */
#define LOOP_DEPTH 64
/* Counters per sampled iteration, at most. */
#define MAX_CTRS 2

typedef struct {
    const struct mpitrace_loop_site *site;
    uint64_t gen;     /* the loop's token generation */
    uint64_t iters;   /* iterations begun */
    uintptr_t frame;  /* frame address of loop_begin, for the longjmp repair */
    int uncounted;    /* MPITRACE_SITE_UNCOUNTED */
    int sampled;      /* the current iteration is sampled and has not ended */
    uint64_t c0[MAX_CTRS]; /* counters at the sampled iteration's start */
} lframe;

typedef struct {
    int n;            /* open loops */
    uint64_t gen;     /* last token generation given */
    uint64_t rng;     /* splitmix64 state */
    int perf;         /* 0: not tried, 1: open, -1: none */
    int perf_fd, perf_fd2; /* the group's leader and member (-1: none) */
    uint64_t too_deep; /* loops not instrumented for LOOP_DEPTH */
    struct {
        const void *site;
        uint64_t id;
    } cache[64]; /* site → file string id */
    lframe st[LOOP_DEPTH];
} lthread;

static MPIT_TLS lthread *lt_self;

/* Process-wide settings, from the environment at load. */
static struct {
    double chance;     /* MPITRACE_LOOP_CHANCE, < 0 when unset */
    uint64_t seed;     /* MPITRACE_LOOP_SEED, or drawn */
    int counters;      /* what the probe found: CTR_* */
    int no_counters;   /* MPITRACE_LOOP_COUNTERS=none */
    char chance_text[32], seed_text[32];
} L = {.chance = -1};

enum { CTR_NONE = 0, CTR_INSN_CYCLES = 1, CTR_TASK_CLOCK = 2 };
static const char *const ctr_names[] = {"", "instructions,cycles", "task-clock"};
static const int ctr_count[] = {0, 2, 1};

/* ------------------------------------------------------------------ */
/* Counters                                                            */

static int perf_open(uint32_t type, uint64_t config, int group) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = type;
    a.config = config;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.read_format = PERF_FORMAT_GROUP;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, group, PERF_FLAG_FD_CLOEXEC);
}

/* ctr_open opens the counters of kind k for the calling thread: the
 * group leader's descriptor, -1 when the kernel refuses; *member is the
 * second counter's (read through the leader), -1 when there is none. */
static int ctr_open(int k, int *member) {
    *member = -1;
    if (k == CTR_INSN_CYCLES) {
        int fd = perf_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, -1);
        if (fd < 0) return -1;
        int fd2 = perf_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, fd);
        if (fd2 < 0) {
            close(fd);
            return -1;
        }
        *member = fd2;
        return fd;
    }
    if (k == CTR_TASK_CLOCK) return perf_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, -1);
    return -1;
}

static void ctr_close(int fd, int member) {
    if (member >= 0) close(member);
    if (fd >= 0) close(fd);
}

/* probe_once decides, once per process, which counters sampled
 * iterations carry: instructions and cycles when the kernel allows them,
 * else task-clock, else none. */
static void probe_once(void) {
    L.counters = CTR_NONE;
    if (L.no_counters) return;
    for (int k = CTR_INSN_CYCLES; k <= CTR_TASK_CLOCK; k++) {
        int member, fd = ctr_open(k, &member);
        if (fd >= 0) {
            ctr_close(fd, member);
            L.counters = k;
            return;
        }
    }
}

static pthread_once_t probed = PTHREAD_ONCE_INIT;
static void probe(void) { pthread_once(&probed, probe_once); }

/* ctr_setup opens the thread's counters, the first time it samples. */
static void ctr_setup(lthread *t) {
    if (t->perf != 0) return;
    probe();
    t->perf_fd = ctr_open(L.counters, &t->perf_fd2);
    t->perf = t->perf_fd >= 0 ? 1 : -1;
}

/* ctr_read reads the thread's counters into v; 0 values when it has none. */
static int ctr_read(lthread *t, uint64_t *v) {
    if (t->perf <= 0) return 0;
    uint64_t buf[1 + MAX_CTRS];
    int n = ctr_count[L.counters];
    ssize_t got = read(t->perf_fd, buf, sizeof(uint64_t) * (size_t)(1 + n));
    if (got != (ssize_t)(sizeof(uint64_t) * (size_t)(1 + n)) || buf[0] != (uint64_t)n) {
        /* Not what was asked: this thread goes on without counters. */
        ctr_close(t->perf_fd, t->perf_fd2);
        t->perf = -1;
        return 0;
    }
    memcpy(v, buf + 1, sizeof(uint64_t) * (size_t)n);
    return n;
}

/* ------------------------------------------------------------------ */
/* File names                                                          */

/* The string ids of the sites' files, by site (the core gives the loops
 * of one file one string). */
typedef struct {
    const void *site;
    uint64_t id;
} site_slot;
static struct {
    pthread_mutex_t mu;
    site_slot *sites;
    size_t nsites, capsites;
} F = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t site_hash(const void *p) { return mpit_mix64((uint64_t)(uintptr_t)p); }

/* file_id returns the string id of the site's file name. */
static uint64_t file_id(lthread *t, const struct mpitrace_loop_site *site) {
    size_t c = (size_t)(((uintptr_t)site >> 4) & 63);
    if (t->cache[c].site == site) return t->cache[c].id;
    pthread_mutex_lock(&F.mu);
    uint64_t id = 0;
    if (F.nsites * 2 >= F.capsites) {
        size_t cap = F.capsites ? 2 * F.capsites : 256;
        site_slot *n = calloc(cap, sizeof *n);
        if (n) {
            for (size_t i = 0; i < F.capsites; i++) {
                if (!F.sites[i].site) continue;
                size_t j = site_hash(F.sites[i].site) & (cap - 1);
                while (n[j].site) j = (j + 1) & (cap - 1);
                n[j] = F.sites[i];
            }
            free(F.sites);
            F.sites = n;
            F.capsites = cap;
        }
    }
    if (F.capsites) {
        size_t j = site_hash(site) & (F.capsites - 1);
        while (F.sites[j].site && F.sites[j].site != site) j = (j + 1) & (F.capsites - 1);
        if (F.sites[j].site) {
            id = F.sites[j].id;
        } else if (F.nsites * 2 < F.capsites) {
            const char *file = site->file ? site->file : "";
            size_t len = strlen(file);
            id = mpit_name_id(file, len, mpit_hash(file, len), NULL);
            if (id) {
                F.sites[j] = (site_slot){site, id};
                F.nsites++;
            }
        }
    }
    pthread_mutex_unlock(&F.mu);
    if (id) {
        t->cache[c].site = site;
        t->cache[c].id = id;
    }
    return id;
}

/* ------------------------------------------------------------------ */
/* Events                                                              */

static void ev_loopbegin(uint64_t t, uint64_t file, unsigned line, unsigned col) {
    mpit_tb *tb = mpit_marker_tb();
    if (!tb) return;
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_LOOPBEGIN);
    p = mpit_put_loopbegin(p, MPIT_GAP(tb, t), file, line, col);
    mpit_commit(tb, p, t);
}

static void ev_loopend(uint64_t t, uint64_t count, unsigned flags) {
    mpit_tb *tb = mpit_marker_tb();
    if (!tb) return;
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_LOOPEND);
    p = mpit_put_loopend(p, MPIT_GAP(tb, t), count, flags);
    mpit_commit(tb, p, t);
}

/* ev_iterbegin records the start of a sampled iteration and reads the
 * clock as late as it can: after the room for the event is reserved (which
 * may write a block), so that only the encoding falls inside the
 * iteration's time. */
static void ev_iterbegin(uint64_t iter) {
    mpit_tb *tb = mpit_marker_tb();
    if (!tb) return;
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_ITERBEGIN);
    uint64_t t = mpit_now();
    p = mpit_put_iterbegin(p, MPIT_GAP(tb, t), iter);
    mpit_commit(tb, p, t);
}

static void ev_iterend(uint64_t t, const uint64_t *v, int n) {
    mpit_tb *tb = mpit_marker_tb();
    if (!tb) return;
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_ITEREND + 10 + 10 * MAX_CTRS);
    p = mpit_put_iterend(p, MPIT_GAP(tb, t));
    p = mpit_put_u(p, (uint64_t)n);
    for (int i = 0; i < n; i++) p = mpit_put_u(p, v[i]);
    mpit_commit(tb, p, t);
}

/* ------------------------------------------------------------------ */
/* The stack                                                           */

/* Tokens: the entry's index + 1 in the low 8 bits, 0x100 for an
 * iteration, the loop's generation above. A token of a loop that was
 * closed meanwhile (longjmp repair) no longer matches its entry. */
#define TOK_ITER 0x100u
#define TOK_SHIFT 9

static inline uintptr_t tok_make(const lthread *t, int idx) { return (uintptr_t)(t->st[idx].gen << TOK_SHIFT) | (uintptr_t)(idx + 1); }

/* tok_find returns the index of the open loop a token names, -1 when
 * none does (a stale token, another thread's, or garbage). */
static inline int tok_find(const lthread *t, uintptr_t tok) {
    int idx = (int)(tok & 0xff) - 1;
    if (!t || idx < 0 || idx >= t->n || (uint64_t)(tok >> TOK_SHIFT) != (t->st[idx].gen & (UINTPTR_MAX >> TOK_SHIFT)))
        return -1;
    return idx;
}

/* end_iter ends the sampled iteration of loop f, at time now (0: read
 * the clock first, then the counters: the recorder's own work stays out of
 * the iteration's time). */
static void end_iter(lthread *t, lframe *f, uint64_t now) {
    if (!now) now = mpit_now();
    uint64_t v[MAX_CTRS];
    int n = ctr_read(t, v);
    for (int i = 0; i < n; i++) v[i] -= f->c0[i];
    ev_iterend(now, v, n);
    f->sampled = 0;
}

/* close_top closes the innermost open loop: flags MPIT_LOOP_UNWOUND when
 * it was left without its end marker. */
static void close_top(lthread *t, unsigned flags, uint64_t now) {
    lframe *f = &t->st[t->n - 1];
    if (f->sampled) end_iter(t, f, now);
    if (f->uncounted) flags |= MPIT_LOOP_UNCOUNTED;
    ev_loopend(now, f->uncounted ? 0 : f->iters, flags);
    t->n--;
}

/* close_above closes, as unwound, the loops opened after entry idx. */
static void close_above(lthread *t, int idx) {
    if (t->n <= idx + 1) return;
    uint64_t now = mpit_now();
    while (t->n > idx + 1) close_top(t, MPIT_LOOP_UNWOUND, now);
}

/* repair closes the loops whose frames are gone: a marker called from the
 * frame fa, above (at a higher address than) the frame a loop was opened
 * in, finds that loop left by longjmp. The stack grows down and loops nest,
 * so the gone ones are at the top. */
static inline void repair(lthread *t, uintptr_t fa) {
    if (MPIT_LIKELY(t->n == 0 || t->st[t->n - 1].frame >= fa)) return;
    uint64_t now = mpit_now();
    while (t->n > 0 && t->st[t->n - 1].frame < fa) close_top(t, MPIT_LOOP_UNWOUND, now);
}

static lthread *lt_create(mpit_tb *tb) {
    lthread *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    uint64_t s = L.seed ^ mpit_mix64((uint64_t)mpit_env_rank() + 0x9e3779b97f4a7c15ull);
    t->rng = mpit_mix64(s ^ mpit_mix64(((uint64_t)tb->thread + 1) * 0xd1b54a32d192ed03ull));
    lt_self = t;
    return t;
}

/* uniform returns the next number of the thread's stream in [0, 1). */
static inline double uniform(lthread *t) {
    uint64_t z = (t->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

#define FRAME() ((uintptr_t)__builtin_frame_address(0))

static uintptr_t api_loop_begin(const struct mpitrace_loop_site *site) {
    uintptr_t fa = FRAME();
    if (!mpit_on || !site) return 0;
    mpit_tb *tb = mpit_self;
    if (MPIT_UNLIKELY(!tb)) {
        tb = mpit_tb_create();
        if (!tb) return 0;
    }
    if (tb->depth) return 0; /* a callback of a recorded MPI call */
    lthread *t = lt_self;
    if (MPIT_UNLIKELY(!t) && !(t = lt_create(tb))) return 0;
    repair(t, fa);
    if (t->n > 0) {
        const lframe *p = &t->st[t->n - 1];
        /* Nested: instrumented under a sampled iteration only (an
         * uncounted loop, whose iterations have no markers, passes its own
         * decision on). */
        if (!p->sampled && !p->uncounted) return 0;
    }
    if (t->n == LOOP_DEPTH) {
        t->too_deep++;
        return 0;
    }
    uint64_t file = file_id(t, site);
    uint64_t now = mpit_now();
    ev_loopbegin(now, file, site->line, site->col);
    lframe *f = &t->st[t->n];
    f->site = site;
    f->gen = ++t->gen;
    f->iters = 0;
    f->frame = fa;
    f->uncounted = (site->flags & MPITRACE_SITE_UNCOUNTED) != 0;
    f->sampled = 0;
    t->n++;
    return tok_make(t, t->n - 1);
}

static void api_loop_end(uintptr_t loop) {
    uintptr_t fa = FRAME();
    lthread *t = lt_self;
    if (!t || (loop & TOK_ITER)) return;
    repair(t, fa);
    int idx = tok_find(t, loop);
    if (idx < 0) return;
    close_above(t, idx);
    close_top(t, 0, mpit_now());
}

static uintptr_t api_iter_begin(uintptr_t loop, double chance) {
    uintptr_t fa = FRAME();
    lthread *t = lt_self;
    if (MPIT_UNLIKELY(!t || (loop & TOK_ITER))) return 0;
    repair(t, fa);
    int idx = tok_find(t, loop);
    if (MPIT_UNLIKELY(idx < 0)) return 0;
    if (MPIT_UNLIKELY(idx != t->n - 1)) close_above(t, idx);
    lframe *f = &t->st[idx];
    if (MPIT_UNLIKELY(f->sampled)) end_iter(t, f, mpit_now()); /* its end was skipped */
    f->iters++;
    if (L.chance >= 0) chance = L.chance;
    if (!(chance > 0) || (chance < 1 && uniform(t) >= chance)) return 0;
    if (MPIT_UNLIKELY(!mpit_on)) return 0;
    if (MPIT_UNLIKELY(t->perf == 0)) ctr_setup(t);
    /* The counters first, the clock last: what the recorder does here
     * stays out of the iteration's time as far as it can. */
    if (t->perf > 0) ctr_read(t, f->c0);
    ev_iterbegin(f->iters);
    f->sampled = 1;
    return loop | TOK_ITER;
}

static void api_iter_end(uintptr_t iter) {
    uintptr_t fa = FRAME();
    lthread *t = lt_self;
    if (!t || !(iter & TOK_ITER)) return;
    repair(t, fa);
    int idx = tok_find(t, iter & ~(uintptr_t)TOK_ITER);
    if (idx < 0) return;
    close_above(t, idx);
    lframe *f = &t->st[idx];
    if (f->sampled) end_iter(t, f, 0);
}

__attribute__((visibility("default"))) const struct mpitrace_api mpitrace_api_v1 = {
    .version = MPITRACE_API_VERSION,
    .size = sizeof(struct mpitrace_api),
    .loop_begin = api_loop_begin,
    .loop_end = api_loop_end,
    .iter_begin = api_iter_begin,
    .iter_end = api_iter_end,
    .region_push = mpit_region_push,
    .region_pop = mpit_region_pop,
    .region_push_n = mpit_region_push_n,
};

/* ------------------------------------------------------------------ */
/* Life cycle                                                          */

MPIT_HIDDEN int mpit_loops_open(void) { return lt_self && lt_self->n > 0; }

MPIT_HIDDEN void mpit_loops_thread_end(void) {
    lthread *t = lt_self;
    if (!t) return;
    if (t->n > 0) {
        uint64_t now = mpit_now();
        while (t->n > 0) close_top(t, MPIT_LOOP_UNWOUND, now);
    }
    if (t->perf > 0) ctr_close(t->perf_fd, t->perf_fd2);
    lt_self = NULL;
    free(t);
}

MPIT_HIDDEN void mpit_loops_load(void) {
    const char *v = getenv("MPITRACE_LOOP_CHANCE");
    if (v && *v) {
        char *end;
        double c = strtod(v, &end);
        if (*end || !(c >= 0 && c <= 1))
            mpit_warn_once("MPITRACE_LOOP_CHANCE", "mpitrace: ignoring MPITRACE_LOOP_CHANCE=%s (expected a number from 0 to 1)", v);
        else
            L.chance = c;
    }
    v = getenv("MPITRACE_LOOP_SEED");
    int seeded = 0;
    if (v && *v) {
        char *end;
        unsigned long long s = strtoull(v, &end, 0);
        if (*end || v[0] == '-')
            mpit_warn_once("MPITRACE_LOOP_SEED", "mpitrace: ignoring MPITRACE_LOOP_SEED=%s (expected an unsigned integer)", v);
        else
            L.seed = s, seeded = 1;
    }
    if (!seeded) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        L.seed = mpit_mix64((uint64_t)ts.tv_nsec ^ mpit_mix64((uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 20)));
    }
    v = getenv("MPITRACE_LOOP_COUNTERS");
    L.no_counters = v && (!strcmp(v, "none") || !strcmp(v, "0") || !strcmp(v, "off"));
    if (L.chance >= 0) {
        /* The shortest text that reads back as the same number: 0.1, not
         * 0.10000000000000001. */
        for (int prec = 6; prec <= 17; prec++) {
            snprintf(L.chance_text, sizeof L.chance_text, "%.*g", prec, L.chance);
            if (strtod(L.chance_text, NULL) == L.chance) break;
        }
    } else
        snprintf(L.chance_text, sizeof L.chance_text, "instrumented");
    snprintf(L.seed_text, sizeof L.seed_text, "%llu", (unsigned long long)L.seed);
}

MPIT_HIDDEN void mpit_loops_header(const char *kv[3][2]) {
    probe();
    kv[0][0] = "loop_counters";
    kv[0][1] = ctr_names[L.counters];
    kv[1][0] = "loop_chance";
    kv[1][1] = L.chance_text;
    kv[2][0] = "loop_seed";
    kv[2][1] = L.seed_text;
}
