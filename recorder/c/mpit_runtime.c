/* mpitrace recorder, MPI layer: communicators, requests, statuses, the
 * argument-carrying events, clock offsets, MPI errors and the MPI
 * lifecycle, on the core (mpit_core.c) that writes the log.
 *
 * See docs/format.md for the file layout and docs/recording.md for the
 * behaviour (what is recorded, controls, failure handling). */
#define _GNU_SOURCE
#include "mpit.h"

#include <dlfcn.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Provided by the generated wrappers. */
extern const char *const mpit_fn_names[];
extern const int mpit_fn_count;

MPIT_HIDDEN mpit_comm mpit_comm_world, mpit_comm_self;

#define G mpit_G

/* The MPI layer's own state. */
static struct {
    int clocksync;         /* rounds per rank; 0 disables */
    MPI_Comm priv;         /* private duplicate of MPI_COMM_WORLD */
    uint64_t next_comm;    /* next rank-local communicator index */
    uint64_t next_req;     /* next request id */
} M;

static void install_errhandler(void);


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
    c->idx = M.next_comm++;
    slot *s = tab_put(&comms, KEY(h));
    if (s) s->ptr = c;
    pthread_mutex_unlock(&comms.mu);
    return c;
}

/* put_commnew appends a CommNew event for c (NULL: MPI_COMM_NULL). */
static void put_commnew(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, const mpit_comm *parent,
                        const mpit_comm *c) {
    int n = c ? c->size : 0, r = c ? c->rsize : 0;
    uint8_t *p = mpit_reserve_list(tb, MPIT_MAXSIZE_COMMNEW + 10 + 10 * (size_t)(n + r));
    if (!p) return;
    p = mpit_put_commnew(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, parent ? parent->idx : 0,
                         c ? c->idx : MPIT_COMM_NULL, c ? c->gid : 0, (uint64_t)r, fn ? MPIT_SITE(tb) : 0);
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
    p = mpit_put_commfree(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, c ? c->idx : 0, MPIT_SITE(tb));
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
    uint64_t id = ++M.next_req;
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
    int any = 0;
    for (int k = 0; k < nidx && !any; k++) any = rc[idx[k]].id && !(rc[idx[k]].kind & 0x100);
    if (!any) return; /* e.g. a Test that completed nothing: no lock */
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
                      bytes, id, MPIT_SITE(tb));
    mpit_commit(tb, p, t1);
}

MPIT_HIDDEN void mpit_rec_recv(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t count,
                               MPI_Datatype type, int source, int tag, MPI_Comm comm, const MPI_Status *st) {
    mpit_comm *c = mpit_comm_of(comm);
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_RECV);
    p = mpit_put_recv(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, mpit_peer(c, source), tag_of(tag),
                      c ? c->idx : 0, mpit_bytes(count, type), status_source(c, st), status_tag(st),
                      status_bytes(st), MPIT_SITE(tb));
    mpit_commit(tb, p, t1);
}

MPIT_HIDDEN void mpit_rec_irecv(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int64_t count,
                                MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request *req,
                                int persistent) {
    mpit_comm *c = mpit_comm_of(comm);
    uint64_t id = req ? mpit_req_new(*req, MPIT_REQ_RECV, persistent, c) : 0;
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_IRECV);
    p = mpit_put_irecv(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, mpit_peer(c, source), tag_of(tag),
                       c ? c->idx : 0, mpit_bytes(count, type), id, MPIT_SITE(tb));
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
                          status_bytes(st), MPIT_SITE(tb));
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
                       flag ? status_tag(st) : 0, flag ? status_bytes(st) : 0, MPIT_SITE(tb));
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
                           mpit_bytes(count, type), id, MPIT_SITE(tb));
    } else {
        p = mpit_reserve(tb, MPIT_MAXSIZE_RECV);
        p = mpit_put_recv(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, st ? status_source(c, st) : src,
                          st ? status_tag(st) : MPIT_ANY_TAG, c ? c->idx : 0, mpit_bytes(count, type),
                          st ? status_source(c, st) : src, st ? status_tag(st) : MPIT_ANY_TAG,
                          st ? status_bytes(st) : 0, MPIT_SITE(tb));
    }
    mpit_commit(tb, p, t1);
}

MPIT_HIDDEN void mpit_rec_start(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int n, const MPI_Request *rq) {
    if (n < 0) n = 0;
    uint8_t *p = mpit_reserve_list(tb, MPIT_MAXSIZE_START + 10 + 10 * (size_t)n);
    if (!p) return;
    p = mpit_put_start(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, MPIT_SITE(tb));
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
    p = mpit_put_reqfree(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, req->id, MPIT_SITE(tb));
    mpit_commit(tb, p, t1);
}

MPIT_HIDDEN void mpit_rec_cancel(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, const mpit_reqcopy *req) {
    uint8_t *p = mpit_reserve(tb, MPIT_MAXSIZE_REQFREE);
    p = mpit_put_reqfree(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, req->id, MPIT_SITE(tb));
    mpit_commit(tb, p, t1);
}

MPIT_HIDDEN void mpit_rec_complete(mpit_tb *tb, int fn, uint64_t t0, uint64_t t1, int flag,
                                   const mpit_reqcopy *before, const int *idx, int nidx, const MPI_Status *st,
                                   int status_by_request) {
    if (nidx < 0) nidx = 0;
    uint8_t *p = mpit_reserve_list(tb, MPIT_MAXSIZE_COMPLETE + 10 + 50 * (size_t)nidx);
    if (!p) return;
    p = mpit_put_complete(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, (uint64_t)(flag != 0), MPIT_SITE(tb));
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
    p = mpit_put_coll(p, MPIT_LOGID(fn), MPIT_GAP(tb, t0), t1 - t0, c ? c->idx : 0, r, sbytes, rbytes, id, MPIT_SITE(tb));
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
    if (M.clocksync <= 0 || G.size < 2 || M.priv == MPI_COMM_NULL) return;
    const int tag = 7411;
    int dummy = 0;
    if (G.rank == 0) {
        for (int r = 1; r < G.size; r++)
            for (int k = 0; k < M.clocksync; k++) {
                PMPI_Recv(&dummy, 1, MPI_INT, r, tag, M.priv, MPI_STATUS_IGNORE);
                uint64_t t = mpit_now();
                PMPI_Send(&t, 1, MPI_UINT64_T, r, tag, M.priv);
            }
        return;
    }
    uint64_t best = UINT64_MAX;
    for (int k = 0; k < M.clocksync; k++) {
        uint64_t t1 = mpit_now(), t0 = 0;
        PMPI_Send(&dummy, 1, MPI_INT, 0, tag, M.priv);
        PMPI_Recv(&t0, 1, MPI_UINT64_T, 0, tag, M.priv, MPI_STATUS_IGNORE);
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
    if (!G.run_id_drawn) return;
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
    if (M.priv != MPI_COMM_NULL) PMPI_Bcast(id, (int)sizeof id, MPI_CHAR, 0, M.priv);
    id[sizeof id - 1] = '\0';
    snprintf(G.run_id, sizeof G.run_id, "%s", id);
}

/* open_mpi_log opens the rank's log with the MPI's header keys. */
static void open_mpi_log(void) {
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
    char version[32];
    snprintf(version, sizeof version, "%d.%d", ver, sub);
    const char *const kv[][2] = {
        {"mpi_library", lib},
        {"mpi_version", version},
        {"thread_level", level},
    };
    mpit_core_open(kv, (int)(sizeof kv / sizeof kv[0]));
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
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &M.priv) != MPI_SUCCESS) M.priv = MPI_COMM_NULL;
    gen_run_id();
    open_mpi_log();
    /* Before the clock synchronisation: a rank stopped while it waits for
     * the others (another rank aborted) still writes its log. Events
     * recorded before MPI_Init (e.g. MPI_Initialized, loops in the setup
     * code) wait in the buffer for the file; they go out with the first
     * block. */
    if (G.fd >= 0) {
        mpit_core_start();
        install_errhandler();
    }
    clock_sync(&sync_offset[MPIT_PHASE_INIT], &sync_err[MPIT_PHASE_INIT]);
    /* Rank 0 measures the ranks one after the other: without this barrier
     * rank 1 would leave MPI_Init long before the last rank, and a program
     * whose ranks abort right after MPI_Init would have its other ranks
     * killed inside MPI_Init, before they print their messages or record
     * anything, which a run without the recorder does not do. */
    if (M.clocksync > 0 && G.size > 1 && M.priv != MPI_COMM_NULL) PMPI_Barrier(M.priv);
}

MPIT_HIDDEN void mpit_before_finalize(void) {
    clock_sync(&sync_offset[MPIT_PHASE_FINALIZE], &sync_err[MPIT_PHASE_FINALIZE]);
    if (M.priv != MPI_COMM_NULL) PMPI_Comm_free(&M.priv);
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
MPIT_HIDDEN MPIT_TLS uintptr_t mpit_fret;

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
    mpit_why.code = (uint64_t)(uint32_t)cls; /* portable, unlike MPICH's codes */
    mpit_why.fn = fn;
    snprintf(mpit_why.msg, sizeof mpit_why.msg, "%s", msg);
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
    mpit_why.code = (uint64_t)(uint32_t)errorcode;
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
    mpit_core_off();
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

/* The MPI layer's constructor runs after the core's. */
__attribute__((constructor(102))) static void mpit_mpi_load(int argc, char **argv, char **envp) {
    (void)argc;
    (void)envp;
    G.has_mpi = 1;
    mpit_fn_name = mpit_fn_names;
    mpit_fn_n = mpit_fn_count;
    int ompi = 0;
    const char *lib = getenv("MPITRACE_STEPPED_ASIDE") ? NULL : foreign_mpi(&ompi);
    if (lib) {
        step_aside(argv, lib, ompi);
        return;
    }
    if (getenv("MPITRACE_STEPPED_ASIDE")) return; /* recording stays off */
    M.clocksync = (int)mpit_env_long("MPITRACE_CLOCKSYNC", 10, 0, 1000);
    M.next_comm = MPIT_COMM_SELF + 1;
    const char *inc = getenv("MPITRACE_INCLUDE"), *exc = getenv("MPITRACE_EXCLUDE");
    uint16_t *on = calloc((size_t)mpit_fn_count + 1, sizeof *on);
    if (!on) {
        mpit_core_off();
        return;
    }
    for (int i = 1; i <= mpit_fn_count; i++) {
        const char *n = mpit_fn_names[i];
        int rec = (!inc || !*inc || listed(inc, n)) && !(exc && listed(exc, n));
        /* MPI_Init and MPI_Finalize anchor the task graph: always recorded. */
        rec |= !strcmp(n, "MPI_Init") || !strcmp(n, "MPI_Init_thread") || !strcmp(n, "MPI_Finalize");
        on[i] = rec ? MPIT_FN_UNNAMED : 0;
    }
    mpit_fn_id = on;
    snprintf(G.options, sizeof G.options, "buffer=%zu compress=%d zstd_level=%d clocksync=%d flush_interval_ms=%d include=%s exclude=%s",
             G.bufsize, G.compress, G.zlevel, M.clocksync, G.flush_ms, inc ? inc : "", exc ? exc : "");
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
