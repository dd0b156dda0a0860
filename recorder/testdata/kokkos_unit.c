/* kokkos_unit.c: drives every Kokkos Tools callback of the recorder as
 * Kokkos does: the library named in argv[1] is opened with dlopen and each
 * kokkosp_* function is found with dlsym, through function-pointer types
 * written here from the C signatures of Kokkos' Kokkos_Profiling_C_Interface.h
 * (SpaceHandle and the tool programming interface passed by value).
 * recorder/kokkos_test.go builds the core recorder, runs this and reads the
 * log back.
 *
 * argv[2] is "default" or "fences": whether the recorder is expected to
 * accept Kokkos' global fencing (MPITRACE_KOKKOS_FENCES=1). Prints the
 * kernel ids it was given, one line "ids N" with their count once checked
 * unique, then "ok"; or the first check that failed. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The structs, with the layout of the C interface. */
struct dev_info {
    size_t deviceID;
};
struct space_handle {
    char name[64];
};
struct tool_interface {
    void (*fence)(const uint32_t);
    void (*padding[31])(void);
};
struct tool_settings {
    bool requires_global_fencing;
    bool padding[255];
};

typedef void (*init_fn)(const int, const uint64_t, const uint32_t, struct dev_info *);
typedef void (*finalize_fn)(void);
typedef void (*parse_args_fn)(int, char **);
typedef void (*print_help_fn)(char *);
typedef void (*begin_fn)(const char *, const uint32_t, uint64_t *);
typedef void (*end_fn)(uint64_t);
typedef void (*push_fn)(const char *);
typedef void (*pop_fn)(void);
typedef void (*alloc_fn)(const struct space_handle, const char *, const void *, const uint64_t);
typedef void (*create_section_fn)(const char *, uint32_t *);
typedef void (*section_fn)(const uint32_t);
typedef void (*event_fn)(const char *);
typedef void (*begin_copy_fn)(struct space_handle, const char *, const void *, struct space_handle, const char *,
                              const void *, uint64_t);
typedef void (*end_copy_fn)(void);
typedef void (*dual_view_fn)(const char *, const void *const, bool);
typedef void (*metadata_fn)(const char *, const char *);
typedef void (*provide_fn)(const uint32_t, struct tool_interface);
typedef void (*settings_fn)(const uint32_t, struct tool_settings *);

static struct {
    init_fn init;
    finalize_fn finalize;
    parse_args_fn parse_args;
    print_help_fn print_help;
    begin_fn begin_for, begin_reduce, begin_scan, begin_fence;
    end_fn end_for, end_reduce, end_scan, end_fence;
    push_fn push;
    pop_fn pop;
    alloc_fn alloc, dealloc;
    create_section_fn create_section;
    section_fn start_section, stop_section, destroy_section;
    event_fn profile_event;
    begin_copy_fn begin_copy;
    end_copy_fn end_copy;
    dual_view_fn sync, modify;
    metadata_fn metadata;
    provide_fn provide;
    settings_fn settings;
} K;

#include "unit_check.h"

static void *lib;

static void *sym(const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        printf("dlsym %s: not found\n", name);
        exit(1);
    }
    return p;
}

/* Every kernel id the recorder gave, to check they are unique. */
static uint64_t ids[4096];
static int nids;
static pthread_mutex_t ids_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t keep(uint64_t id) {
    pthread_mutex_lock(&ids_mu);
    CHECK(nids < 4096);
    ids[nids++] = id;
    pthread_mutex_unlock(&ids_mu);
    return id;
}

static uint64_t begin(begin_fn f, const char *name, uint32_t dev) {
    uint64_t id = 0xdeadbeef;
    f(name, dev, &id);
    CHECK(id != 0xdeadbeef);
    return keep(id);
}

static struct space_handle space(const char *name) {
    struct space_handle h;
    memset(&h, 'x', sizeof h); /* no NUL past the name: the recorder must stop at 64 */
    strncpy(h.name, name, sizeof h.name);
    return h;
}

static void fence_cb(const uint32_t dev) { (void)dev; }

/* The second thread: kernels at its top level (as the main thread's
 * "many": their ids must differ all the same), a region around two
 * kernels, and a region it leaves open when it ends. */
static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 20; i++) K.end_scan(begin(K.begin_scan, "top", 0));
    K.push("worker");
    for (int i = 0; i < 2; i++) K.end_for(begin(K.begin_for, "wk", 0));
    K.pop();
    K.push("left open");
    return NULL;
}

/* Threads 2 to 5, together: regions of 50 names each interns at the same
 * time as the others, around a kernel. */
static char stress_names[50][8];
static pthread_barrier_t stress_start;

static void *stress(void *arg) {
    (void)arg;
    pthread_barrier_wait(&stress_start);
    for (int i = 0; i < 2000; i++) {
        K.push(stress_names[i % 50]);
        uint64_t id = 0;
        K.begin_for("k", 0, &id);
        K.end_for(id);
        K.pop();
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        printf("usage: kokkos_unit LIBRARY default|fences\n");
        return 2;
    }
    int fences = !strcmp(argv[2], "fences");
    lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    K.init = (init_fn)sym("kokkosp_init_library");
    K.finalize = (finalize_fn)sym("kokkosp_finalize_library");
    K.parse_args = (parse_args_fn)sym("kokkosp_parse_args");
    K.print_help = (print_help_fn)sym("kokkosp_print_help");
    K.begin_for = (begin_fn)sym("kokkosp_begin_parallel_for");
    K.end_for = (end_fn)sym("kokkosp_end_parallel_for");
    K.begin_reduce = (begin_fn)sym("kokkosp_begin_parallel_reduce");
    K.end_reduce = (end_fn)sym("kokkosp_end_parallel_reduce");
    K.begin_scan = (begin_fn)sym("kokkosp_begin_parallel_scan");
    K.end_scan = (end_fn)sym("kokkosp_end_parallel_scan");
    K.begin_fence = (begin_fn)sym("kokkosp_begin_fence");
    K.end_fence = (end_fn)sym("kokkosp_end_fence");
    K.push = (push_fn)sym("kokkosp_push_profile_region");
    K.pop = (pop_fn)sym("kokkosp_pop_profile_region");
    K.alloc = (alloc_fn)sym("kokkosp_allocate_data");
    K.dealloc = (alloc_fn)sym("kokkosp_deallocate_data");
    K.create_section = (create_section_fn)sym("kokkosp_create_profile_section");
    K.start_section = (section_fn)sym("kokkosp_start_profile_section");
    K.stop_section = (section_fn)sym("kokkosp_stop_profile_section");
    K.destroy_section = (section_fn)sym("kokkosp_destroy_profile_section");
    K.profile_event = (event_fn)sym("kokkosp_profile_event");
    K.begin_copy = (begin_copy_fn)sym("kokkosp_begin_deep_copy");
    K.end_copy = (end_copy_fn)sym("kokkosp_end_deep_copy");
    K.sync = (dual_view_fn)sym("kokkosp_dual_view_sync");
    K.modify = (dual_view_fn)sym("kokkosp_dual_view_modify");
    K.metadata = (metadata_fn)sym("kokkosp_declare_metadata");
    K.provide = (provide_fn)sym("kokkosp_provide_tool_programming_interface");
    K.settings = (settings_fn)sym("kokkosp_request_tool_settings");

    /* Kokkos 3.4's order: init, tool settings, the programming interface,
     * then the tool's arguments. The device info pointer is garbage: the
     * recorder must not read it. */
    K.init(0, 20210225, 1, (struct dev_info *)(uintptr_t)8);
    struct tool_settings ts;
    memset(&ts, 0, sizeof ts);
    ts.requires_global_fencing = true; /* Kokkos' default */
    K.settings(1, &ts);
    CHECK(ts.requires_global_fencing == (fences != 0));
    for (int i = 0; i < 255; i++) CHECK(!ts.padding[i]);
    struct tool_interface ti;
    memset(&ti, 0, sizeof ti);
    ti.fence = fence_cb;
    K.provide(1, ti);
    char *args[] = {"--tool-arg", "x=1", NULL};
    K.parse_args(2, args);
    K.parse_args(2, args); /* Kokkos 4 calls it twice: one Meta */

    /* A kernel at the top of the stack, first of its thread: the one
     * launched after Kokkos' finalisation must not get its id again. */
    K.end_for(begin(K.begin_for, "first", 0));

    /* Nested regions, then a pop without a push. */
    K.push("outer");
    K.push("inner");
    K.pop();
    K.pop();
    K.pop();

    /* Kernels of each type, inside a region; a device id of type 1,
     * device 2, instance 3. */
    uint32_t dev = 1u << 24 | 2u << 17 | 3u;
    K.push("solve");
    K.end_for(begin(K.begin_for, "pf", dev));
    K.end_reduce(begin(K.begin_reduce, "pr", 0));
    K.end_scan(begin(K.begin_scan, "ps", 0));
    K.end_fence(begin(K.begin_fence, "fence", 0));
    K.pop();

    /* A kernel inside a kernel; the outer's end first closes the inner as
     * unwound. An unknown id closes nothing. */
    uint64_t a = begin(K.begin_for, "outerk", 0);
    uint64_t b = begin(K.begin_reduce, "innerk", 0);
    (void)b;
    K.end_for(a);
    K.end_for(a);          /* closed already */
    K.end_for(0x12345678); /* never given */

    /* Deep copy, with a label in each space; allocations. */
    struct space_handle host = space("Host"), cuda = space("CudaSpace-with-a-name-that-fills-all-sixty-four-bytes-of-the-handle-and-more");
    K.alloc(host, "x", (void *)0x1000, 800);
    K.alloc(cuda, "y", (void *)0x2000, 1600);
    K.begin_copy(cuda, "y", (void *)0x2000, host, "x", (void *)0x1000, 800);
    K.end_copy();
    K.end_copy(); /* no copy open: nothing */
    K.dealloc(cuda, "y", (void *)0x2000, 1600);
    K.dealloc(host, "x", (void *)0x1000, 800);

    /* Profile sections, an event, metadata, dual views. */
    uint32_t s1 = 0, s2 = 0;
    K.create_section("sec-a", &s1);
    K.create_section("sec-b", &s2);
    CHECK(s1 != 0 && s2 != 0 && s1 != s2);
    K.start_section(s1);
    K.start_section(s2);
    K.stop_section(s1);
    K.stop_section(s2);
    K.destroy_section(s1);
    K.destroy_section(s2);
    K.start_section(9999); /* never created: nothing */
    K.profile_event("checkpoint");
    K.metadata("mesh", "64x64");
    K.sync("dv", (void *)0x3000, true);
    K.modify("dv", (void *)0x3000, false);

    /* Names Kokkos never leaves NULL, NULL all the same: empty names. */
    K.end_for(begin(K.begin_for, NULL, 0));
    K.profile_event(NULL);

    /* Regions nested deeper than the recorder keeps: the outermost 128 are
     * recorded, and the pops of the others close nothing recorded. */
    for (int i = 0; i < 130; i++) K.push("deep");
    for (int i = 0; i < 130; i++) K.pop();

    /* Many kernels: ids stay unique. */
    for (int i = 0; i < 1000; i++) K.end_for(begin(K.begin_for, "many", 0));

    /* Another thread, with ids of its own. */
    pthread_t th;
    CHECK(pthread_create(&th, NULL, worker, NULL) == 0);
    CHECK(pthread_join(th, NULL) == 0);

    for (int i = 0; i < 50; i++) snprintf(stress_names[i], sizeof stress_names[i], "n%d", i);
    pthread_t st[4];
    CHECK(pthread_barrier_init(&stress_start, NULL, 4) == 0);
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&st[i], NULL, stress, NULL) == 0);
    for (int i = 0; i < 4; i++) CHECK(pthread_join(st[i], NULL) == 0);

    /* The mpitrace.h region API lands in the same events. */
    struct api {
        unsigned version, size;
        void *loops[4];
        void (*region_push)(const char *);
        void (*region_pop)(void);
        void (*region_push_n)(const char *, uintptr_t);
    } *api = (struct api *)sym("mpitrace_api_v1");
    CHECK(api->size >= sizeof *api);
    api->region_push("api");
    api->region_push_n("api-n-ignored", 5);
    api->region_pop();
    api->region_pop();

    /* A region and a kernel left open at Kokkos' finalisation. */
    K.push("open region");
    begin(K.begin_for, "open kernel", 0);
    K.finalize();
    K.finalize(); /* once is enough */
    /* After finalisation a new kernel is still recorded (Views destroyed
     * late); it ends with the program. */
    begin(K.begin_for, "late", 0);

    for (int i = 0; i < nids; i++)
        for (int j = i + 1; j < nids; j++) {
            if (ids[i] == ids[j]) printf("kernel ids %d and %d are both %#llx\n", i, j, (unsigned long long)ids[i]);
            CHECK(ids[i] != ids[j]);
        }
    for (int i = 0; i < nids; i++) CHECK(ids[i] != 0);
    K.print_help(argv[0]);
    printf("ids %d\nok\n", nids);
    return 0;
}
