package mpicomm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/internal/mpijob"
)

// TestMain runs, under a launcher, the job the tests start (job).
func TestMain(m *testing.M) {
	if lib := os.Getenv("MPICOMM_TEST_LIB"); lib != "" {
		if err := job(lib); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// job exchanges through every call of Comm and prints, on process 0,
// what it got; any process that got something else fails.
func job(lib string) error {
	c, err := Open(lib)
	if err != nil {
		return err
	}
	me, n := c.Rank(), c.Size()
	fail := func(what string, got any) error { return fmt.Errorf("process %d of %d: %s: got %v", me, n, what, got) }
	v := []int64{int64(me + 1), int64(me), int64(me)}
	for i, op := range []Op{Sum, Max, Min} {
		if err := c.AllreduceInt64(op, v[i:i+1]); err != nil {
			return err
		}
	}
	if v[0] != int64(n*(n+1)/2) || v[1] != int64(n-1) || v[2] != 0 {
		return fail("allreduce", v)
	}
	// Process p gives p+1 bytes of value p ("" for... none is empty but 0's single byte).
	mine := bytes.Repeat([]byte{byte('a' + me)}, me+1)
	all, err := c.Allgather(mine)
	if err != nil {
		return err
	}
	for p, b := range all {
		if string(b) != strings.Repeat(string(rune('a'+p)), p+1) {
			return fail("allgather", all)
		}
	}
	g, err := c.Gather(mine, n-1)
	if err != nil {
		return err
	}
	if (me == n-1) != (g != nil) || (g != nil && len(g[n-1]) != n) {
		return fail("gather", g)
	}
	// To process q: "me>q", empty to itself.
	send := make([][]byte, n)
	for q := range send {
		if q != me {
			send[q] = []byte(fmt.Sprintf("%d>%d", me, q))
		}
	}
	recv, err := c.Alltoall(send)
	if err != nil {
		return err
	}
	for p, b := range recv {
		want := ""
		if p != me {
			want = fmt.Sprintf("%d>%d", p, me)
		}
		if string(b) != want {
			return fail("alltoall", recv)
		}
	}
	// A process that gives the wrong number of parts fails the exchange
	// on every process, none waiting for it.
	bad := send
	if me == n-1 {
		bad = send[:n-1]
	}
	if _, err := c.Alltoall(bad); err == nil {
		return fail("an alltoall with a bad part", "no error")
	}
	var root []byte
	if me == 0 {
		root = []byte("from 0")
	}
	b, err := c.Bcast(root, 0)
	if err != nil {
		return err
	}
	if string(b) != "from 0" {
		return fail("bcast", string(b))
	}
	if me == 0 {
		fmt.Printf("ok %d\n", n)
	}
	return c.Finalize()
}

// TestJob builds the transport with each MPI's compiler wrapper and runs
// a job of 1 to 4 processes through every call.
func TestJob(t *testing.T) {
	for _, m := range mpijob.MPIs {
		t.Run(m.CC, func(t *testing.T) {
			if _, err := exec.LookPath(m.CC); err != nil {
				t.Skipf("%s is not installed", m.CC)
			}
			ctx, cancel := mpijob.Context(t)
			defer cancel()
			lib, err := Build(ctx, BuildOptions{MPICC: m.CC, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			self, _ := os.Executable()
			for np := 1; np <= 4; np++ {
				r := mpijob.Run(t, "", append([]string{"MPICOMM_TEST_LIB=" + lib}, mpijob.RootEnv...), m.Launch(np, self)...)
				if got, want := r.Stdout, fmt.Sprintf("ok %d\n", np); r.Code != 0 || got != want {
					t.Errorf("%d processes: status %d, printed %q, want %q; stderr:\n%s", np, r.Code, got, want, r.Stderr)
				}
			}
		})
	}
}

// TestBuildWithoutWrapper says in one line what is missing.
func TestBuildWithoutWrapper(t *testing.T) {
	_, err := Build(context.Background(), BuildOptions{MPICC: "no-such-mpicc", CacheDir: filepath.Join(t.TempDir(), "c")})
	if err == nil || !strings.Contains(err.Error(), `"no-such-mpicc" not found`) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v", err)
	}
}

func TestDefaultMPICC(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	if got := DefaultMPICC(env()); got != "mpicc" {
		t.Errorf("no launcher: %q", got)
	}
	for _, c := range []struct {
		env  func(string) string
		want string
	}{{env("OMPI_COMM_WORLD_SIZE", "2"), "mpicc.openmpi"}, {env("PMI_SIZE", "2"), "mpicc.mpich"}} {
		want := c.want
		if _, err := exec.LookPath(want); err != nil {
			want = "mpicc"
		}
		if got := DefaultMPICC(c.env); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if r, s, ok := JobSize(env("PMI_RANK", "2", "PMI_SIZE", "3")); r != 2 || s != 3 || !ok {
		t.Errorf("JobSize: %d %d %v", r, s, ok)
	}
}
