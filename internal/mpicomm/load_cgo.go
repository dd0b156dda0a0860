//go:build cgo

package mpicomm

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
	int (*init)(int *, int *);
	int (*finalize)(void);
	int (*local_size)(int *);
	void (*abort)(int);
	int (*allreduce_i64)(int64_t *, int, int);
	int (*allgather_i64)(const int64_t *, int, int64_t *);
	int (*allgatherv)(const void *, int, void *, const int *, const int *);
	int (*gatherv)(const void *, int, void *, const int *, const int *, int);
	int (*alltoallv)(const void *, const int *, const int *, void *, const int *, const int *);
	int (*alltoall_int)(const int *, int *);
	int (*bcast)(void *, int, int);
	void (*error)(int, char *, int);
	void (*library)(char *, int);
} mpicomm_fns;

// mpicomm_load opens the library and finds its functions: NULL and the
// reason in *why when it cannot.
static void *mpicomm_load(const char *path, mpicomm_fns *f, const char **why) {
	// RTLD_GLOBAL: the MPI libraries it pulls in open plugins of their
	// own that look for MPI's symbols.
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!h) { *why = dlerror(); return NULL; }
#define SYM(field, name) if (!(*(void **)&f->field = dlsym(h, name))) { *why = dlerror(); return NULL; }
	SYM(init, "mpicomm_init")
	SYM(finalize, "mpicomm_finalize")
	SYM(local_size, "mpicomm_local_size")
	SYM(abort, "mpicomm_abort")
	SYM(allreduce_i64, "mpicomm_allreduce_i64")
	SYM(allgather_i64, "mpicomm_allgather_i64")
	SYM(allgatherv, "mpicomm_allgatherv")
	SYM(gatherv, "mpicomm_gatherv")
	SYM(alltoallv, "mpicomm_alltoallv")
	SYM(alltoall_int, "mpicomm_alltoall_int")
	SYM(bcast, "mpicomm_bcast")
	SYM(error, "mpicomm_error")
	SYM(library, "mpicomm_library")
#undef SYM
	return h;
}

static int c_init(mpicomm_fns *f, int *r, int *s) { return f->init(r, s); }
static int c_finalize(mpicomm_fns *f) { return f->finalize(); }
static int c_local_size(mpicomm_fns *f, int *n) { return f->local_size(n); }
static void c_abort(mpicomm_fns *f, int code) { f->abort(code); }
static int c_allreduce(mpicomm_fns *f, int64_t *b, int n, int op) { return f->allreduce_i64(b, n, op); }
static int c_allgather_i64(mpicomm_fns *f, const int64_t *m, int n, int64_t *a) { return f->allgather_i64(m, n, a); }
static int c_allgatherv(mpicomm_fns *f, const void *m, int n, void *a, const int *c, const int *d) { return f->allgatherv(m, n, a, c, d); }
static int c_gatherv(mpicomm_fns *f, const void *m, int n, void *a, const int *c, const int *d, int root) { return f->gatherv(m, n, a, c, d, root); }
static int c_alltoallv(mpicomm_fns *f, const void *s, const int *sc, const int *sd, void *r, const int *rc, const int *rd) { return f->alltoallv(s, sc, sd, r, rc, rd); }
static int c_alltoall_int(mpicomm_fns *f, const int *s, int *r) { return f->alltoall_int(s, r); }
static int c_bcast(mpicomm_fns *f, void *b, int n, int root) { return f->bcast(b, n, root); }
static void c_error(mpicomm_fns *f, int code, char *b, int n) { f->error(code, b, n); }
static void c_library(mpicomm_fns *f, char *b, int n) { f->library(b, n); }
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"
)

// library is the loaded transport's functions.
type library struct{ f *C.mpicomm_fns }

// byteArg is b as a C buffer (one byte of scratch for an empty b, which
// some MPIs do not take as NULL).
func byteArg(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		b = make([]byte, 1)
	}
	return unsafe.Pointer(&b[0])
}

func intArg(v []int32) *C.int {
	if len(v) == 0 {
		return nil
	}
	return (*C.int)(unsafe.Pointer(&v[0]))
}

func (l library) allreduce(v []int64, op int) int {
	return int(C.c_allreduce(l.f, (*C.int64_t)(unsafe.Pointer(&v[0])), C.int(len(v)), C.int(op)))
}

func (l library) allgatherInt64(mine, all []int64) int {
	return int(C.c_allgather_i64(l.f, (*C.int64_t)(unsafe.Pointer(&mine[0])), C.int(len(mine)), (*C.int64_t)(unsafe.Pointer(&all[0]))))
}

func (l library) allgatherv(mine, all []byte, counts, displs []int32) int {
	return int(C.c_allgatherv(l.f, byteArg(mine), C.int(len(mine)), byteArg(all), intArg(counts), intArg(displs)))
}

func (l library) gatherv(mine, all []byte, counts, displs []int32, root int) int {
	return int(C.c_gatherv(l.f, byteArg(mine), C.int(len(mine)), byteArg(all), intArg(counts), intArg(displs), C.int(root)))
}

func (l library) alltoallInt(send, recv []int32) int {
	return int(C.c_alltoall_int(l.f, intArg(send), intArg(recv)))
}

func (l library) alltoallv(send []byte, sc, sd []int32, recv []byte, rc, rd []int32) int {
	return int(C.c_alltoallv(l.f, byteArg(send), intArg(sc), intArg(sd), byteArg(recv), intArg(rc), intArg(rd)))
}

func (l library) bcast(b []byte, root int) int {
	return int(C.c_bcast(l.f, byteArg(b), C.int(len(b)), C.int(root)))
}

func (l library) finalize() int { return int(C.c_finalize(l.f)) }

func (l library) localSize(n *int) int {
	var v C.int
	rc := int(C.c_local_size(l.f, &v))
	*n = int(v)
	return rc
}

func (l library) abort(code int) { C.c_abort(l.f, C.int(code)) }

func (l library) errorString(code int) string {
	buf := make([]byte, 512)
	C.c_error(l.f, C.int(code), (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
	return C.GoString((*C.char)(unsafe.Pointer(&buf[0])))
}

func (l library) version() string {
	buf := make([]byte, 8192)
	C.c_library(l.f, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
	return C.GoString((*C.char)(unsafe.Pointer(&buf[0])))
}

// Available reports whether this binary can load the transport (cgo).
func Available() error { return nil }

// Open loads the transport library at path and initialises MPI: the
// process's Comm. The thread that initialises MPI makes every MPI call.
func Open(path string) (*Comm, error) {
	// Open MPI catches SIGSEGV, SIGBUS, SIGFPE and SIGILL to print a
	// backtrace, with handlers the Go runtime's signals do not expect:
	// Go reports its own faults.
	if _, ok := os.LookupEnv("OMPI_MCA_opal_signal"); !ok {
		os.Setenv("OMPI_MCA_opal_signal", "")
	}
	c := &Comm{calls: make(chan func())}
	type result struct {
		err        error
		rank, size int
	}
	ready := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // for ever: this thread is MPI's
		f := (*C.mpicomm_fns)(C.calloc(1, C.size_t(unsafe.Sizeof(C.mpicomm_fns{}))))
		cpath := C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
		var why *C.char
		if C.mpicomm_load(cpath, f, &why) == nil {
			ready <- result{err: fmt.Errorf("--mpi: loading the MPI transport %s: %s", path, C.GoString(why))}
			return
		}
		c.lib = library{f}
		var r, s C.int
		switch rc := C.c_init(f, &r, &s); {
		case rc == -1:
			ready <- result{err: fmt.Errorf("--mpi: the MPI does not allow threads (MPI_THREAD_FUNNELED), which the mpitrace binary runs")}
			return
		case rc != 0:
			ready <- result{err: fmt.Errorf("--mpi: MPI_Init failed: %s", c.lib.errorString(int(rc)))}
			return
		}
		ready <- result{rank: int(r), size: int(s)}
		for call := range c.calls {
			call()
		}
	}()
	res := <-ready
	if res.err != nil {
		return nil, res.err
	}
	c.rank, c.size = res.rank, res.size
	return c, nil
}
