/* mpitrace recorder: named regions and the Kokkos Tools callbacks
 * (docs/kokkos.md, docs/regions.md).
 *
 * The recorder library is a Kokkos Tools library: Kokkos loads it by the
 * path in KOKKOS_TOOLS_LIBS / KOKKOS_PROFILE_LIBRARY (which `mpitrace record
 * --kokkos` sets to the library it preloads, so both are one object), finds
 * the kokkosp_* functions below with dlsym and calls them. Their signatures
 * are those of Kokkos' Kokkos_Profiling_C_Interface.h (the structs are
 * declared here, with the same layout).
 *
 * Regions, kernels, fences and deep copies nest per thread: a stack of the
 * open ones, whose begin events were recorded or not (inside a recorded MPI
 * call, with recording off), so that every end matches its begin. A region
 * pop carries no name: it closes the innermost open region. A kernel's or
 * fence's end carries the id this file gave at its begin; an end that skips
 * open frames closes them as unwound. mpitrace_region_push/pop (mpitrace.h)
 * land in the same region events as Kokkos' push/pop.
 *
 * Names (regions, kernels, labels, spaces) get one string id per distinct
 * text: each thread keeps a cache by hash, the core's table (a lock) is
 * asked on a miss.
 *
 * Signal handlers may push and pop regions (a profiler's timer, a
 * program's own handler). Every entry point marks the thread busy (kt_enter)
 * while it changes the thread's stack and name cache; a call that lands
 * meanwhile, from a handler interrupting it, touches neither: it records
 * nothing, and a region it pushes is counted (kt_nested) so that its pop
 * closes it and not the region the interrupted code was opening or closing.
 * A call from a handler that lands anywhere else nests like any other. */
#define _GNU_SOURCE
#include "mpit_core.h"

#define MPITRACE_API_ONLY
#include "mpitrace.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The deepest nest of regions, kernels and copies a thread keeps; deeper
 * ones are counted, not recorded. */
#define KSTACK 128
/* Names per thread cache (a power of two). */
#define NCACHE 256
/* Longer names are cut. */
#define NAME_MAX_LEN 1024

enum { FR_REGION = 1, FR_KERNEL = 2, FR_COPY = 3 };

typedef struct {
    uint8_t kind; /* FR_* */
    uint8_t rec;  /* its begin event is in the log: its end goes there too */
    uint64_t gen; /* its id's generation (kernels and fences) */
} kframe;

typedef struct {
    int n;         /* open frames */
    uint32_t tid;  /* the thread's recorder index (in its kernel ids) */
    uint64_t gen;  /* last generation given */
    uint64_t over; /* frames opened past KSTACK, not kept */
    uint64_t too_deep; /* all the frames ever opened past KSTACK */
    struct {
        uint64_t h;
        const char *s; /* the core's copy */
        size_t n;
        uint64_t id;
    } nc[NCACHE];
    kframe st[KSTACK];
} kthread;

static MPIT_TLS kthread *kt_self;
/* The thread is inside one of this file's entry points. */
static MPIT_TLS volatile sig_atomic_t kt_busy;
/* Regions pushed by a signal handler while the thread was busy, not yet
 * popped: the innermost open regions, never recorded. */
static MPIT_TLS uint32_t kt_nested;

/* kt_enter marks the thread busy; 0 when it already was (the caller is a
 * signal handler that interrupted an entry point: it must change nothing
 * the interrupted call may be changing). kt_leave ends what kt_enter began.
 * The signal fences keep the compiler from moving the stack's and cache's
 * stores out of the busy span. */
static inline int kt_enter(void) {
    if (kt_busy) return 0;
    kt_busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return 1;
}

static inline void kt_leave(void) {
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    kt_busy = 0;
}

/* KT_ENTRY runs the statement as the body of an entry point: not at all
 * when the thread is busy. */
#define KT_ENTRY(stmt)                                                                                                 \
    do {                                                                                                               \
        if (!kt_enter()) return;                                                                                       \
        stmt;                                                                                                          \
        kt_leave();                                                                                                    \
    } while (0)
/* The thread's last generation, kept when its state is freed (at Kokkos'
 * finalisation), so that a kernel after it does not get an id given
 * before. */
static MPIT_TLS uint64_t kt_gen;

/* Process-wide state. */
static struct {
    int fences;       /* MPITRACE_KOKKOS_FENCES: accept Kokkos' global fencing */
    int active;       /* kokkosp_init_library came, kokkosp_finalize_library not yet */
    pthread_mutex_t mu; /* sections and the tool arguments */
    uint64_t *sec;    /* profile section id - 1 → name id */
    uint32_t nsec, capsec;
    char *args;       /* the last tool arguments recorded */
    void (*fence)(uint32_t); /* Kokkos' tool-invoked fence (kept, not called) */
} K = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ------------------------------------------------------------------ */
/* Names                                                               */

/* name_id returns the string id of the n bytes at s (n SIZE_MAX: up to
 * the NUL), 0 when it has none. */
static uint64_t name_id(kthread *t, const char *s, size_t n) {
    if (!s) s = "", n = 0;
    if (n == SIZE_MAX) n = strnlen(s, NAME_MAX_LEN);
    else if (n > NAME_MAX_LEN) n = NAME_MAX_LEN;
    uint64_t h = mpit_hash(s, n);
    size_t c = (size_t)(h & (NCACHE - 1));
    if (t->nc[c].h == h && t->nc[c].n == n && t->nc[c].s && !memcmp(t->nc[c].s, s, n)) return t->nc[c].id;
    const char *owned = NULL;
    uint64_t id = mpit_name_id(s, n, h, &owned);
    if (id) {
        t->nc[c].h = h;
        t->nc[c].s = owned;
        t->nc[c].n = n;
        t->nc[c].id = id;
    }
    return id;
}

/* named_tb takes the calling thread's buffer for an event (with the
 * reentry guard: a marker recorded meanwhile by a signal handler on this
 * thread records nothing, and never waits for the names' lock this thread
 * may hold) and sets id[i] to the string ids of the event's n names (len
 * SIZE_MAX: up to the NUL). NULL when no event is to be appended. */
static mpit_tb *named_tb(kthread *t, int n, const char *const s[], const size_t len[], uint64_t id[]) {
    mpit_tb *tb = mpit_marker_tb();
    if (!tb) return NULL;
    for (int i = 0; i < n; i++) {
        if (!(id[i] = name_id(t, s[i], len[i]))) {
            mpit_abandon(tb);
            return NULL;
        }
    }
    return tb;
}

/* ------------------------------------------------------------------ */
/* The thread's stack                                                  */

/* kt returns the calling thread's state, NULL when nothing is recorded
 * (recording off, or no memory). The thread's buffer is created with it:
 * a callback is often a thread's first event. */
static inline kthread *kt(void) {
    kthread *t = kt_self;
    if (MPIT_LIKELY(t != NULL)) return mpit_on ? t : NULL;
    if (!mpit_on) return NULL;
    if (!mpit_self && !mpit_tb_create()) return NULL;
    t = calloc(1, sizeof *t);
    if (t) {
        if (mpit_self) t->tid = mpit_self->thread;
        t->gen = kt_gen;
    }
    kt_self = t;
    return t;
}

static void ev_end(int kind, uint64_t now, unsigned flags) {
    mpit_tb *tb = mpit_marker_tb();
    if (!tb) return;
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_REGIONEND);
    int64_t gap = MPIT_GAP(tb, now);
    if (kind == FR_REGION) p = mpit_put_regionend(p, gap, flags);
    else if (kind == FR_KERNEL) p = mpit_put_kernelend(p, gap, flags);
    else p = mpit_put_copyend(p, gap, flags);
    mpit_commit(tb, p, now);
}

/* close_top closes the innermost open frame. */
static void close_top(kthread *t, unsigned flags, uint64_t now) {
    kframe *f = &t->st[--t->n];
    if (f->rec) ev_end(f->kind, now, flags);
}

/* push opens a frame of the kind; its begin event has been appended when
 * rec is set. Returns its index, -1 when it is past KSTACK. */
static int push(kthread *t, int kind, int rec) {
    if (t->n == KSTACK) {
        t->over++;
        t->too_deep++;
        return -1;
    }
    kframe *f = &t->st[t->n];
    f->kind = (uint8_t)kind;
    f->rec = (uint8_t)rec;
    f->gen = ++t->gen;
    return t->n++;
}

/* pop_kind closes the innermost open frame of the kind and, as unwound,
 * the frames opened after it; 0 when there is none. */
static int pop_kind(kthread *t, int kind, uint64_t now) {
    int i = t->n - 1;
    while (i >= 0 && t->st[i].kind != kind) i--;
    if (i < 0) return 0;
    while (t->n > i + 1) close_top(t, MPIT_END_UNWOUND, now);
    close_top(t, 0, now);
    return 1;
}

/* Kernel and fence ids, unique in the process (a kernel that ends on
 * another thread than it began on is not closed there, but its id names no
 * kernel of that thread):
 * the frame's index + 1 in the low 8 bits, the low 32 bits of its
 * generation above them, the thread's recorder index in the top 24; 0 for
 * a frame past KSTACK. */
#define KID_GEN(g) ((uint64_t)(g) & 0xffffffffu)
static uint64_t kid_make(const kthread *t, int idx) {
    if (idx < 0) return 0;
    return (uint64_t)(t->tid & 0xffffff) << 40 | KID_GEN(t->st[idx].gen) << 8 | (uint64_t)(idx + 1);
}

static int kid_find(const kthread *t, uint64_t kid) {
    int idx = (int)(kid & 0xff) - 1;
    if (idx < 0 || idx >= t->n || t->st[idx].kind != FR_KERNEL || kid != kid_make(t, idx)) return -1;
    return idx;
}

MPIT_HIDDEN int mpit_kokkos_open(void) { return kt_self && (kt_self->n > 0 || kt_self->over > 0); }

static void ev_meta(kthread *t, const char *key, const char *value);

static void thread_end(void) {
    kthread *t = kt_self;
    if (!t) return;
    if (t->too_deep) {
        /* Said in the log, not lost silently. */
        char v[32];
        snprintf(v, sizeof v, "%llu", (unsigned long long)t->too_deep);
        ev_meta(t, "mpitrace.regions_too_deep", v);
    }
    if (t->n > 0) {
        uint64_t now = mpit_now();
        while (t->n > 0) close_top(t, MPIT_END_UNWOUND, now);
    }
    kt_gen = t->gen;
    kt_self = NULL;
    kt_nested = 0; /* a handler's regions left open go with the rest */
    free(t);
}

MPIT_HIDDEN void mpit_kokkos_thread_end(void) { KT_ENTRY(thread_end()); }

/* ------------------------------------------------------------------ */
/* Regions                                                             */

static void region_push_in(const char *name, size_t n) {
    kthread *t = kt();
    if (!t) return;
    uint64_t id;
    mpit_tb *tb = named_tb(t, 1, &name, &n, &id);
    if (push(t, FR_REGION, tb != NULL) < 0) {
        if (tb) mpit_abandon(tb);
        return;
    }
    if (!tb) return;
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_REGIONBEGIN);
    uint64_t now = mpit_now(); /* after the recorder's own work */
    p = mpit_put_regionbegin(p, MPIT_GAP(tb, now), id);
    mpit_commit(tb, p, now);
}

static void region_pop_in(void) {
    kthread *t = kt();
    if (!t) return;
    uint64_t now = mpit_now();
    if (t->over) {
        t->over--;
        return;
    }
    if (!pop_kind(t, FR_REGION, now)) ev_end(FR_REGION, now, MPIT_END_UNMATCHED);
}

static void region_push(const char *name, size_t n) {
    if (!kt_enter()) {
        kt_nested++;
        return;
    }
    region_push_in(name, n);
    kt_leave();
}

static void region_pop(void) {
    if (!kt_enter()) {
        if (kt_nested) kt_nested--;
        return;
    }
    if (kt_nested) kt_nested--;
    else region_pop_in();
    kt_leave();
}

MPIT_HIDDEN void mpit_region_push(const char *name) { region_push(name, SIZE_MAX); }
MPIT_HIDDEN void mpit_region_push_n(const char *name, uintptr_t len) { region_push(name, (size_t)len); }
MPIT_HIDDEN void mpit_region_pop(void) { region_pop(); }

/* ------------------------------------------------------------------ */
/* Kokkos Tools callbacks                                              */

#define KOKKOSP __attribute__((visibility("default")))

struct Kokkos_Profiling_KokkosPDeviceInfo {
    size_t deviceID;
};
struct Kokkos_Profiling_SpaceHandle {
    char name[64];
};
typedef void (*Kokkos_Tools_functionPointer)(void);
struct Kokkos_Tools_ToolProgrammingInterface {
    void (*fence)(const uint32_t);
    Kokkos_Tools_functionPointer padding[31];
};
struct Kokkos_Tools_ToolSettings {
    bool requires_global_fencing;
    bool padding[255];
};

static void ev_meta(kthread *t, const char *key, const char *value) {
    uint64_t id[2];
    mpit_tb *tb = named_tb(t, 2, (const char *const[]){key, value}, (const size_t[]){SIZE_MAX, SIZE_MAX}, id);
    if (!tb) return;
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_META);
    uint64_t now = mpit_now();
    p = mpit_put_meta(p, MPIT_GAP(tb, now), id[0], id[1]);
    mpit_commit(tb, p, now);
}

static void ev_named(kthread *t, int kind, const char *name, uint64_t a) {
    uint64_t id;
    mpit_tb *tb = named_tb(t, 1, &name, (const size_t[]){SIZE_MAX}, &id);
    if (!tb) return;
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_SECTIONBEGIN);
    uint64_t now = mpit_now();
    int64_t gap = MPIT_GAP(tb, now);
    if (kind == MPIT_KIND_MARK) p = mpit_put_mark(p, gap, id);
    else if (kind == MPIT_KIND_DUALVIEW) p = mpit_put_dualview(p, gap, id, a);
    else p = mpit_put_sectionbegin(p, gap, a, id);
    mpit_commit(tb, p, now);
}

static void init_library(int loadSeq, uint64_t interfaceVer, uint32_t devInfoCount) {
    kthread *t = kt();
    if (!t) return;
    __atomic_store_n(&K.active, 1, __ATOMIC_RELEASE);
    mpit_G.defer_end = 1;
    char v[32];
    snprintf(v, sizeof v, "%llu", (unsigned long long)interfaceVer);
    ev_meta(t, "kokkos.interface_version", v);
    snprintf(v, sizeof v, "%d", loadSeq);
    ev_meta(t, "kokkos.load_sequence", v);
    snprintf(v, sizeof v, "%u", (unsigned)devInfoCount);
    ev_meta(t, "kokkos.device_info_count", v);
}

KOKKOSP void kokkosp_init_library(const int loadSeq, const uint64_t interfaceVer, const uint32_t devInfoCount,
                                  struct Kokkos_Profiling_KokkosPDeviceInfo *deviceInfo) {
    (void)deviceInfo; /* never dereferenced: Kokkos passes what it likes */
    KT_ENTRY(init_library(loadSeq, interfaceVer, devInfoCount));
}

/* Kokkos may finalize after MPI_Finalize: nothing here calls MPI. The
 * log's end record waits for the later of the two (mpit_final_flush). */
KOKKOSP void kokkosp_finalize_library(void) {
    if (!__atomic_exchange_n(&K.active, 0, __ATOMIC_ACQ_REL)) return;
    mpit_kokkos_thread_end();
    mpit_G.defer_end = 0;
    if (mpit_G.finalized) mpit_final_flush(MPIT_END_FINALIZE, 0);
}

static void parse_args(int argc, char **argv) {
    kthread *t = kt();
    if (!t) return;
    char buf[1024];
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < argc && argv && n + 1 < sizeof buf; i++) {
        if (!argv[i]) continue;
        int w = snprintf(buf + n, sizeof buf - n, "%s%s", n ? " " : "", argv[i]);
        if (w < 0) break;
        n += (size_t)w;
        if (n >= sizeof buf) n = sizeof buf - 1;
    }
    /* Kokkos 4 calls it twice with the same arguments. */
    pthread_mutex_lock(&K.mu);
    int same = K.args && !strcmp(K.args, buf);
    if (!same) {
        free(K.args);
        K.args = strdup(buf);
    }
    pthread_mutex_unlock(&K.mu);
    if (!same) ev_meta(t, "kokkos.tool_args", buf);
}

KOKKOSP void kokkosp_parse_args(int argc, char **argv) { KT_ENTRY(parse_args(argc, argv)); }

KOKKOSP void kokkosp_print_help(char *progName) {
    (void)progName;
    printf("mpitrace records Kokkos kernels, regions, fences, deep copies and allocations\n"
           "with the MPI calls of each rank; it takes no tool arguments. See `mpitrace regions`.\n");
}

static void kernel_begin_in(int type, const char *name, uint32_t dev, uint64_t *kid) {
    kthread *t = kt();
    if (!t) {
        if (kid) *kid = 0;
        return;
    }
    uint64_t id;
    mpit_tb *tb = named_tb(t, 1, &name, (const size_t[]){SIZE_MAX}, &id);
    int idx = push(t, FR_KERNEL, tb != NULL);
    if (kid) *kid = kid_make(t, idx);
    if (!tb) return;
    if (idx < 0) {
        mpit_abandon(tb);
        return;
    }
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_KERNELBEGIN);
    uint64_t now = mpit_now();
    p = mpit_put_kernelbegin(p, MPIT_GAP(tb, now), (uint64_t)type, id, dev);
    mpit_commit(tb, p, now);
}

static void kernel_end_in(uint64_t kid) {
    uint64_t now = mpit_now();
    kthread *t = kt_self;
    if (!t) return;
    if (kid == 0) {
        if (t->over) t->over--;
        return;
    }
    int idx = kid_find(t, kid);
    if (idx < 0) return; /* not ours, or closed already */
    while (t->n > idx + 1) close_top(t, MPIT_END_UNWOUND, now);
    close_top(t, 0, now);
}

/* A kernel begun in a signal handler while the thread was busy gets id 0,
 * as one past the stack's depth does; its end, also in the handler, finds
 * the thread busy and does nothing. */
static void kernel_begin(int type, const char *name, uint32_t dev, uint64_t *kid) {
    if (!kt_enter()) {
        if (kid) *kid = 0;
        return;
    }
    kernel_begin_in(type, name, dev, kid);
    kt_leave();
}

static void kernel_end(uint64_t kid) { KT_ENTRY(kernel_end_in(kid)); }

KOKKOSP void kokkosp_begin_parallel_for(const char *name, const uint32_t devID, uint64_t *kID) {
    kernel_begin(MPIT_KERNEL_FOR, name, devID, kID);
}
KOKKOSP void kokkosp_end_parallel_for(const uint64_t kID) { kernel_end(kID); }
KOKKOSP void kokkosp_begin_parallel_reduce(const char *name, const uint32_t devID, uint64_t *kID) {
    kernel_begin(MPIT_KERNEL_REDUCE, name, devID, kID);
}
KOKKOSP void kokkosp_end_parallel_reduce(const uint64_t kID) { kernel_end(kID); }
KOKKOSP void kokkosp_begin_parallel_scan(const char *name, const uint32_t devID, uint64_t *kID) {
    kernel_begin(MPIT_KERNEL_SCAN, name, devID, kID);
}
KOKKOSP void kokkosp_end_parallel_scan(const uint64_t kID) { kernel_end(kID); }
KOKKOSP void kokkosp_begin_fence(const char *name, const uint32_t devID, uint64_t *handle) {
    kernel_begin(MPIT_KERNEL_FENCE, name, devID, handle);
}
KOKKOSP void kokkosp_end_fence(const uint64_t handle) { kernel_end(handle); }

KOKKOSP void kokkosp_push_profile_region(const char *name) { region_push(name, SIZE_MAX); }
KOKKOSP void kokkosp_pop_profile_region(void) { region_pop(); }

static size_t space_len(const struct Kokkos_Profiling_SpaceHandle *h) { return strnlen(h->name, sizeof h->name); }

static void alloc_event_in(int kind, const struct Kokkos_Profiling_SpaceHandle *space, const char *label, uint64_t size) {
    kthread *t = kt();
    if (!t) return;
    uint64_t id[2];
    mpit_tb *tb = named_tb(t, 2, (const char *const[]){space->name, label}, (const size_t[]){space_len(space), SIZE_MAX}, id);
    if (!tb) return;
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_ALLOC);
    uint64_t now = mpit_now();
    if (kind == MPIT_KIND_ALLOC) p = mpit_put_alloc(p, MPIT_GAP(tb, now), id[0], id[1], size);
    else p = mpit_put_free(p, MPIT_GAP(tb, now), id[0], id[1], size);
    mpit_commit(tb, p, now);
}

static void alloc_event(int kind, const struct Kokkos_Profiling_SpaceHandle *space, const char *label, uint64_t size) {
    KT_ENTRY(alloc_event_in(kind, space, label, size));
}

KOKKOSP void kokkosp_allocate_data(const struct Kokkos_Profiling_SpaceHandle space, const char *label, const void *const ptr,
                                   const uint64_t size) {
    (void)ptr;
    alloc_event(MPIT_KIND_ALLOC, &space, label, size);
}
KOKKOSP void kokkosp_deallocate_data(const struct Kokkos_Profiling_SpaceHandle space, const char *label,
                                     const void *const ptr, const uint64_t size) {
    (void)ptr;
    alloc_event(MPIT_KIND_FREE, &space, label, size);
}

static void begin_deep_copy(const struct Kokkos_Profiling_SpaceHandle *dst_handle, const char *dst_name,
                            const struct Kokkos_Profiling_SpaceHandle *src_handle, const char *src_name, uint64_t size) {
    kthread *t = kt();
    if (!t) return;
    uint64_t id[4];
    mpit_tb *tb = named_tb(t, 4, (const char *const[]){dst_handle->name, dst_name, src_handle->name, src_name},
                           (const size_t[]){space_len(dst_handle), SIZE_MAX, space_len(src_handle), SIZE_MAX}, id);
    if (push(t, FR_COPY, tb != NULL) < 0) {
        if (tb) mpit_abandon(tb);
        return;
    }
    if (!tb) return;
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_COPYBEGIN);
    uint64_t now = mpit_now();
    p = mpit_put_copybegin(p, MPIT_GAP(tb, now), id[0], id[1], id[2], id[3], size);
    mpit_commit(tb, p, now);
}

/* A deep copy begun in a signal handler while the thread was busy is not
 * recorded; its end, also in the handler, does nothing. */
KOKKOSP void kokkosp_begin_deep_copy(struct Kokkos_Profiling_SpaceHandle dst_handle, const char *dst_name,
                                     const void *dst_ptr, struct Kokkos_Profiling_SpaceHandle src_handle,
                                     const char *src_name, const void *src_ptr, uint64_t size) {
    (void)dst_ptr, (void)src_ptr;
    KT_ENTRY(begin_deep_copy(&dst_handle, dst_name, &src_handle, src_name, size));
}

static void end_deep_copy(void) {
    uint64_t now = mpit_now();
    kthread *t = kt_self;
    if (!t) return;
    if (t->over) {
        t->over--;
        return;
    }
    pop_kind(t, FR_COPY, now);
}

KOKKOSP void kokkosp_end_deep_copy(void) { KT_ENTRY(end_deep_copy()); }

static void create_profile_section(const char *name, uint32_t *sec) {
    kthread *t = kt();
    uint64_t id = 0;
    mpit_tb *tb = t ? named_tb(t, 1, &name, (const size_t[]){SIZE_MAX}, &id) : NULL;
    if (tb) mpit_abandon(tb);
    pthread_mutex_lock(&K.mu);
    if (K.nsec == K.capsec) {
        uint32_t cap = K.capsec ? 2 * K.capsec : 16;
        uint64_t *n = realloc(K.sec, cap * sizeof *n);
        if (n) K.sec = n, K.capsec = cap;
    }
    uint32_t s = 0;
    if (K.nsec < K.capsec) {
        K.sec[K.nsec++] = id;
        s = K.nsec;
    }
    pthread_mutex_unlock(&K.mu);
    if (sec) *sec = s;
}

KOKKOSP void kokkosp_create_profile_section(const char *name, uint32_t *sec) {
    if (sec) *sec = 0;
    KT_ENTRY(create_profile_section(name, sec));
}

static uint64_t section_name(uint32_t sec) {
    pthread_mutex_lock(&K.mu);
    uint64_t id = sec >= 1 && sec <= K.nsec ? K.sec[sec - 1] : 0;
    pthread_mutex_unlock(&K.mu);
    return id;
}

static void section_event_in(uint32_t sec, int begin) {
    uint64_t now = mpit_now();
    mpit_tb *tb = kt() ? mpit_marker_tb() : NULL;
    if (!tb) return;
    uint64_t id = section_name(sec);
    if (!id) {
        mpit_abandon(tb);
        return;
    }
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_SECTIONBEGIN);
    if (begin) {
        now = mpit_now(); /* after the recorder's own work */
        p = mpit_put_sectionbegin(p, MPIT_GAP(tb, now), sec, id);
    } else
        p = mpit_put_sectionend(p, MPIT_GAP(tb, now), sec);
    mpit_commit(tb, p, now);
}

static void section_event(uint32_t sec, int begin) { KT_ENTRY(section_event_in(sec, begin)); }

KOKKOSP void kokkosp_start_profile_section(const uint32_t sec) { section_event(sec, 1); }
KOKKOSP void kokkosp_stop_profile_section(const uint32_t sec) { section_event(sec, 0); }

/* Section ids are not reused: the log's SectionBegin/End keep meaning one
 * section. */
KOKKOSP void kokkosp_destroy_profile_section(const uint32_t sec) { (void)sec; }

/* named_event appends an event of one name (a mark, a DualView's sync or
 * modify) as an entry point. */
static void named_event(int kind, const char *name, uint64_t a) {
    if (!kt_enter()) return;
    kthread *t = kt();
    if (t) ev_named(t, kind, name, a);
    kt_leave();
}

/* meta_event appends a Meta event as an entry point. */
static void meta_event(const char *key, const char *value) {
    if (!kt_enter()) return;
    kthread *t = kt();
    if (t) ev_meta(t, key ? key : "", value ? value : "");
    kt_leave();
}

KOKKOSP void kokkosp_profile_event(const char *name) { named_event(MPIT_KIND_MARK, name, 0); }

KOKKOSP void kokkosp_declare_metadata(const char *key, const char *value) { meta_event(key, value); }

KOKKOSP void kokkosp_dual_view_sync(const char *label, const void *const ptr, bool is_device) {
    (void)ptr;
    named_event(MPIT_KIND_DUALVIEW, label, is_device ? MPIT_DUALVIEW_DEVICE : 0);
}

KOKKOSP void kokkosp_dual_view_modify(const char *label, const void *const ptr, bool is_device) {
    (void)ptr;
    named_event(MPIT_KIND_DUALVIEW, label, MPIT_DUALVIEW_MODIFY | (is_device ? MPIT_DUALVIEW_DEVICE : 0));
}

/* Global fencing (a fence around every kernel, so that asynchronous
 * kernels' times are their own) is declined unless MPITRACE_KOKKOS_FENCES
 * (`record --kokkos-fences`) asks for it: on the host backends it only
 * costs. */
KOKKOSP void kokkosp_request_tool_settings(const uint32_t num, struct Kokkos_Tools_ToolSettings *settings) {
    if (num < 1 || !settings) return;
    settings->requires_global_fencing = K.fences != 0;
    meta_event("kokkos.global_fencing", K.fences ? "on" : "off");
}

KOKKOSP void kokkosp_provide_tool_programming_interface(const uint32_t num, struct Kokkos_Tools_ToolProgrammingInterface funcs) {
    if (num >= 1) K.fence = funcs.fence;
}

MPIT_HIDDEN void mpit_kokkos_load(void) {
    K.fences = (int)mpit_env_long("MPITRACE_KOKKOS_FENCES", 0, 0, 1);
}
