// Package mpicomm is the MPI transport of the analysis run as an MPI job
// (mpitrace critpath --mpi): a small C library of MPI calls, built on
// first use with the MPI's own compiler wrapper and cached (as the
// recorder is), then loaded into the running mpitrace binary, which links
// no MPI and keeps running where none is installed.
//
// The library is loaded with cgo's dlopen; a binary built without cgo
// says --mpi needs cgo (Open's error). Every MPI call is made from one
// operating-system thread, the one that initialised MPI
// (MPI_THREAD_FUNNELED), whatever goroutine asks for it.
package mpicomm

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mpitrace/mpitrace/internal/ccache"
)

//go:embed c/mpicomm.c
var source []byte

// LibraryName is the file name of the built transport.
const LibraryName = "libmpitrace-comm.so"

// BuildOptions say which MPI to build the transport for and where.
type BuildOptions struct {
	// MPICC is the MPI's C compiler wrapper, possibly with flags;
	// default DefaultMPICC(os.Getenv).
	MPICC string
	// CacheDir holds built libraries; default $MPITRACE_CACHE, else the
	// user cache directory's mpitrace/transport.
	CacheDir string
	// Log receives a line when the library is built (nil: none).
	Log io.Writer
}

// DefaultMPICC is the compiler wrapper of the MPI whose launcher started
// this process, as its variables say (Open MPI's mpirun, a PMI launcher
// such as MPICH's Hydra): mpicc.openmpi or mpicc.mpich where Debian's
// alternatives install them, else mpicc.
func DefaultMPICC(getenv func(string) string) string {
	try := ""
	switch {
	case getenv("OMPI_COMM_WORLD_SIZE") != "":
		try = "mpicc.openmpi"
	case getenv("PMI_SIZE") != "" || getenv("HYDRA_CONTROL_FD") != "" || getenv("PMI_FD") != "":
		try = "mpicc.mpich"
	}
	if try != "" {
		if _, err := exec.LookPath(try); err == nil {
			return try
		}
	}
	return "mpicc"
}

// JobSize is the number of processes and this process's rank in the job
// its launcher started, from the launcher's variables; ok false when no
// launcher's variables are set.
func JobSize(getenv func(string) string) (rank, size int, ok bool) {
	for _, v := range [][2]string{{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"PMI_RANK", "PMI_SIZE"}} {
		s, err := strconv.Atoi(getenv(v[1]))
		if err != nil || s < 1 {
			continue
		}
		r, _ := strconv.Atoi(getenv(v[0]))
		return r, s, true
	}
	return 0, 1, false
}

func cacheDir() string {
	if d := os.Getenv("MPITRACE_CACHE"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "mpitrace", "transport")
}

// Build returns the path of the transport library for opts.MPICC,
// building it into the cache when it is not there yet.
func Build(ctx context.Context, opts BuildOptions) (string, error) {
	if opts.MPICC == "" {
		opts.MPICC = DefaultMPICC(os.Getenv)
	}
	if opts.CacheDir == "" {
		opts.CacheDir = cacheDir()
	}
	cc := strings.Fields(opts.MPICC)
	if len(cc) == 0 {
		return "", fmt.Errorf("--mpicc is empty: name the MPI's C compiler wrapper, e.g. mpicc")
	}
	if _, err := exec.LookPath(cc[0]); err != nil {
		return "", fmt.Errorf("--mpi: MPI compiler wrapper %q not found on PATH: the analysis builds its MPI transport with the MPI's compiler wrapper; install the MPI's development package (e.g. libopenmpi-dev or libmpich-dev) or pass --mpicc", cc[0])
	}
	h := sha256.New()
	fmt.Fprintf(h, "mpitrace transport\ncompiler %s\nshow %s\n", ccache.Resolved(cc), ccache.Identity(ctx, cc))
	h.Write(source)
	key := "transport-" + hex.EncodeToString(h.Sum(nil))[:20]
	dir := filepath.Join(opts.CacheDir, key)
	lib := filepath.Join(dir, LibraryName)
	if st, err := os.Stat(lib); err == nil && st.Mode().IsRegular() {
		return lib, nil
	}
	if opts.Log != nil {
		fmt.Fprintf(opts.Log, "mpitrace: building the MPI transport with %s in %s\n", opts.MPICC, dir)
	}
	tmp, err := ccache.NewBuild(opts.CacheDir, key, "MPI transport", map[string][]byte{"mpicomm.c": source})
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	args := append(append([]string{}, cc[1:]...), "-O2", "-fPIC", "-shared", "-o", LibraryName, "mpicomm.c")
	err = ccache.Install(ctx, cc[0], args, tmp, dir, lib, "MPI transport", false, func(out []byte, err error, log string) error {
		return fmt.Errorf("--mpi: building the MPI transport with %s failed: %s (full log: %s)", opts.MPICC, ccache.FirstError(out, err), log)
	})
	if err != nil {
		return "", err
	}
	return lib, nil
}

// Op is a reduction.
type Op int

// The reductions of AllreduceInt64.
const (
	Sum Op = iota
	Max
	Min
)

// maxExchange is the most bytes one exchange moves to or from one
// process (MPI's counts are C ints).
const maxExchange = 1<<31 - 1

// Comm is MPI_COMM_WORLD of the job this process belongs to.
type Comm struct {
	rank, size int
	lib        library
	calls      chan func()
}

// Rank is this process's rank in the job.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of processes of the job.
func (c *Comm) Size() int { return c.size }

// do runs f on the thread that initialised MPI, and there what MPI says
// of its error.
func (c *Comm) do(f func() int) error {
	done := make(chan error, 1)
	c.calls <- func() {
		if rc := f(); rc != 0 {
			done <- &Error{Code: rc, Msg: c.lib.errorString(rc)}
			return
		}
		done <- nil
	}
	return <-done
}

// LimitError is an exchange too large for one MPI call. Every process of
// the job gets one from the same exchange (the sizes are exchanged
// first): the job can stop without MPI_Abort.
type LimitError struct{ msg string }

func (e *LimitError) Error() string { return e.msg }

// Agreed says every process got the error alike.
func (e *LimitError) Agreed() bool { return true }

// Error is an error MPI returned.
type Error struct {
	Code int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("MPI error %d: %s", e.Code, e.Msg) }

// AllreduceInt64 reduces v over the job, in place.
func (c *Comm) AllreduceInt64(op Op, v []int64) error {
	if len(v) == 0 {
		return nil
	}
	return c.do(func() int { return c.lib.allreduce(v, int(op)) })
}

// sizes gives every process the size of what each process gives, as
// counts and displacements in a buffer of total bytes.
func (c *Comm) sizes(mine []byte) (counts, displs []int32, total int, err error) {
	n := []int64{int64(len(mine))}
	all := make([]int64, c.size)
	if err := c.do(func() int { return c.lib.allgatherInt64(n, all) }); err != nil {
		return nil, nil, 0, err
	}
	return layout(all)
}

// Allgather gives every process what each process gave.
func (c *Comm) Allgather(mine []byte) ([][]byte, error) {
	counts, displs, total, err := c.sizes(mine)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, max(total, 1))
	if err := c.do(func() int { return c.lib.allgatherv(mine, buf, counts, displs) }); err != nil {
		return nil, err
	}
	return split(buf, counts, displs), nil
}

// Gather gives process root what each process gave (nil elsewhere).
func (c *Comm) Gather(mine []byte, root int) ([][]byte, error) {
	// The sizes go to every process: a few bytes each, and one call.
	counts, displs, total, err := c.sizes(mine)
	if err != nil {
		return nil, err
	}
	var buf []byte
	if c.rank == root {
		buf = make([]byte, max(total, 1))
	}
	if err := c.do(func() int { return c.lib.gatherv(mine, buf, counts, displs, root) }); err != nil {
		return nil, err
	}
	if c.rank != root {
		return nil, nil
	}
	return split(buf, counts, displs), nil
}

// Alltoall sends send[p] to process p and returns what each process sent
// to this one.
func (c *Comm) Alltoall(send [][]byte) ([][]byte, error) {
	// Every process makes every call: one whose parts are too large says
	// so in the sizes it sends (-1), and all return the error.
	sc := make([]int64, c.size)
	var flat []byte
	for p := range sc {
		if p < len(send) {
			sc[p] = int64(len(send[p]))
			flat = append(flat, send[p]...)
		}
	}
	scounts, sdispls, _, lerr := layout(sc)
	if lerr != nil || len(send) != c.size {
		scounts, sdispls, flat = make([]int32, c.size), make([]int32, c.size), nil
		for p := range scounts {
			scounts[p] = -1
		}
	}
	// The three calls run in one turn of the MPI thread: an exchange of
	// the replay in groups is one per round, and the turns between the
	// caller and that thread cost more than the calls do on one node.
	rcounts := make([]int32, c.size)
	var (
		rdispls []int32
		recv    []byte
		err     error
		flag    = []int64{0}
	)
	if xerr := c.do(func() int {
		if rc := c.lib.alltoallInt(scounts, rcounts); rc != 0 {
			return rc
		}
		bad := false
		rc := make([]int64, c.size)
		for p, n := range rcounts {
			bad = bad || n < 0
			rc[p] = max(int64(n), 0)
		}
		var total int
		_, rdispls, total, err = layout(rc)
		if bad || err != nil || lerr != nil || len(send) != c.size {
			flag[0] = 1
		}
		if rc := c.lib.allreduce(flag, int(Max)); rc != 0 || flag[0] != 0 {
			return rc
		}
		recv = make([]byte, max(total, 1))
		return c.lib.alltoallv(flat, scounts, sdispls, recv, rcounts, rdispls)
	}); xerr != nil {
		return nil, xerr
	}
	switch {
	case len(send) != c.size:
		return nil, fmt.Errorf("internal error: Alltoall of %d parts in a job of %d", len(send), c.size)
	case lerr != nil:
		return nil, lerr
	case err != nil:
		return nil, err
	case flag[0] != 0:
		return nil, &LimitError{"--mpi: another process's exchange was more than one MPI call moves"}
	}
	return split(recv, rcounts, rdispls), nil
}

// Bcast gives every process root's b.
func (c *Comm) Bcast(b []byte, root int) ([]byte, error) {
	n := []int64{int64(len(b))}
	if c.rank != root {
		n[0] = 0
	}
	if err := c.AllreduceInt64(Sum, n); err != nil {
		return nil, err
	}
	if n[0] > maxExchange {
		return nil, &LimitError{fmt.Sprintf("--mpi: a broadcast of %d bytes is more than one MPI call moves", n[0])}
	}
	if c.rank != root {
		b = make([]byte, n[0])
	}
	if n[0] == 0 {
		return b, nil
	}
	return b, c.do(func() int { return c.lib.bcast(b, root) })
}

// Abort stops every process of the job with status code.
func (c *Comm) Abort(code int) {
	c.calls <- func() { c.lib.abort(code) }
	select {} // MPI_Abort does not return
}

// LocalSize is the number of the job's processes on this one's node
// (those that share its memory, MPI_COMM_TYPE_SHARED), this one included.
// Every process calls it.
func (c *Comm) LocalSize() (int, error) {
	var n int
	if err := c.do(func() int { return c.lib.localSize(&n) }); err != nil {
		return 0, err
	}
	return max(n, 1), nil
}

// Finalize ends MPI; the Comm is not used after.
func (c *Comm) Finalize() error {
	err := c.do(func() int { return c.lib.finalize() })
	close(c.calls)
	return err
}

// Library is the MPI library's version string.
func (c *Comm) Library() string {
	var s string
	c.do(func() int { s = c.lib.version(); return 0 })
	return s
}

// layout is the counts and displacements of parts of sizes n, in one
// buffer of total bytes.
func layout(n []int64) (counts, displs []int32, total int, err error) {
	counts, displs = make([]int32, len(n)), make([]int32, len(n))
	var t int64
	for i, v := range n {
		if t+v > maxExchange {
			return nil, nil, 0, &LimitError{fmt.Sprintf("--mpi: an exchange of more than %d bytes with the other processes (more than one MPI call moves)", int64(maxExchange))}
		}
		counts[i], displs[i] = int32(v), int32(t)
		t += v
	}
	return counts, displs, int(t), nil
}

func split(buf []byte, counts, displs []int32) [][]byte {
	parts := make([][]byte, len(counts))
	for i := range counts {
		parts[i] = buf[displs[i] : displs[i]+counts[i] : displs[i]+counts[i]]
	}
	return parts
}
