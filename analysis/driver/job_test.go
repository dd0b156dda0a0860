package driver

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/stats"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// localJob is an Exchange of p goroutines of one process: what the MPI
// transport does between processes, for the unit tests.
type localJob struct {
	p     int
	mu    sync.Mutex
	cond  *sync.Cond
	round int
	in    [][]byte
	out   [][]byte
	n     int
	// aborted: every exchange fails from now on (abort, a test's
	// MPI_Abort).
	aborted bool
}

// errAborted is the error of an exchange of an aborted local job.
var errAborted = errors.New("the local job was aborted")

// abort makes every exchange fail, those under way included.
func (j *localJob) abort() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.aborted = true
	j.cond.Broadcast()
}

func newLocalJob(p int) *localJob {
	j := &localJob{p: p, in: make([][]byte, p)}
	j.cond = sync.NewCond(&j.mu)
	return j
}

// exchange gives every member what each gave, once all gave (an error
// once the job is aborted).
func (j *localJob) exchange(me int, b []byte) ([][]byte, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.aborted {
		return nil, errAborted
	}
	round := j.round
	j.in[me] = slices.Clone(b)
	j.n++
	if j.n == j.p {
		j.out, j.in, j.n = j.in, make([][]byte, j.p), 0
		j.round++
		j.cond.Broadcast()
	}
	for j.round == round && !j.aborted {
		j.cond.Wait()
	}
	if j.round == round {
		return nil, errAborted
	}
	return slices.Clone(j.out), nil
}

type member struct {
	j  *localJob
	me int
}

func (m member) Rank() int { return m.me }
func (m member) Size() int { return m.j.p }
func (m member) Allgather(b []byte) ([][]byte, error) {
	return m.j.exchange(m.me, b)
}
func (m member) Gather(b []byte, root int) ([][]byte, error) {
	all, err := m.j.exchange(m.me, b)
	if err != nil || m.me != root {
		return nil, err
	}
	return all, nil
}

func (m member) Alltoall(send [][]byte) ([][]byte, error) {
	var b []byte
	for _, s := range send {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	all, err := m.j.exchange(m.me, b)
	if err != nil {
		return nil, err
	}
	recv := make([][]byte, len(all))
	for p, a := range all {
		for q := 0; q <= m.me; q++ {
			n, k := binary.Uvarint(a)
			if q == m.me {
				recv[p] = a[k : k+int(n)]
			}
			a = a[k+int(n):]
		}
	}
	return recv, nil
}

// profiledJob opens the job of member x on trace directory dir and makes
// its profile (process 0's; nil elsewhere).
func profiledJob(dir string, x Exchange) (*Job, *stats.Profile, error) {
	j, err := OpenJob(dir, x, nil)
	if err != nil {
		return nil, nil, err
	}
	prof, err := j.Profile()
	return j, prof, err
}

// runLocal runs f as each of p members of a local job, concurrently.
func runLocal(p int, f func(x Exchange) error) []error {
	j := newLocalJob(p)
	errs := make([]error, p)
	var wg sync.WaitGroup
	for me := range p {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[me] = f(member{j, me})
		}()
	}
	wg.Wait()
	return errs
}

// TestPartition: the groups are contiguous, cover every file once, and
// hold about equal bytes.
func TestPartition(t *testing.T) {
	for _, c := range []struct {
		sizes []int64
		p     int
		want  []int
	}{
		{[]int64{10, 10, 10, 10}, 2, []int{0, 2, 4}},
		{[]int64{10, 10, 10, 10}, 4, []int{0, 1, 2, 3, 4}},
		{[]int64{100, 1, 1, 1}, 2, []int{0, 1, 4}},
		{[]int64{1, 1, 1, 100}, 2, []int{0, 3, 4}},
		{[]int64{5, 5}, 4, []int{0, 0, 1, 1, 2}},
		{nil, 3, []int{0, 0, 0, 0}},
		{[]int64{0, 0, 0, 0, 0, 0}, 3, []int{0, 2, 4, 6}},
	} {
		if got := Partition(c.sizes, c.p); !slices.Equal(got, c.want) {
			t.Errorf("Partition(%v, %d) = %v, want %v", c.sizes, c.p, got, c.want)
		}
	}
	// Balanced: no group beyond its share by more than its largest file.
	sizes := make([]int64, 1000)
	for i := range sizes {
		sizes[i] = int64(100 + (i*7919)%900)
	}
	var total, largest int64
	for _, s := range sizes {
		total += s
		largest = max(largest, s)
	}
	for _, p := range []int{1, 2, 3, 7, 64} {
		b := Partition(sizes, p)
		for g := range p {
			var sum int64
			for _, s := range sizes[b[g]:b[g+1]] {
				sum += s
			}
			if share := total / int64(p); sum > share+largest || sum < share-largest {
				t.Errorf("p=%d group %d: %d bytes, share %d", p, g, sum, share)
			}
		}
	}
}

// TestJobProfile: with 1 to 5 processes (more than the ranks), the
// profile process 0 gets, and the diagnostics of its trace, are
// stats.OfTrace's of the whole trace; the other processes get none.
func TestJobProfile(t *testing.T) {
	dir := t.TempDir()
	if err := testgen.Halo(6, 20, 1).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	// A rank file that is not one, for a diagnostic.
	if err := os.WriteFile(filepath.Join(dir, "rank-00006.mpit"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := open(t, dir)
	want, err := stats.OfTrace(tr)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	wantDiags := tr.Diagnostics().All()
	if len(wantDiags) == 0 {
		t.Fatal("no diagnostic for the foreign file")
	}
	for p := 1; p <= 5; p++ {
		var got *stats.Profile
		var gotJob *Job
		errs := runLocal(p, func(x Exchange) error {
			j, prof, err := profiledJob(dir, x)
			if err != nil {
				return err
			}
			if (x.Rank() == 0) != (prof != nil) {
				return errors.New("a profile where there should be none, or none on process 0")
			}
			if x.Rank() == 0 {
				got, gotJob = prof, j
			}
			return nil
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("%d processes: %v", p, err)
		}
		if b, _ := json.Marshal(got); string(b) != string(wantJSON) {
			t.Errorf("%d processes: profile\n%s\nwant\n%s", p, b, wantJSON)
		}
		if d := gotJob.Trace.Diagnostics().All(); !slices.Equal(d, wantDiags) {
			t.Errorf("%d processes: diagnostics %v, want %v", p, d, wantDiags)
		}
	}
}

// TestJobErrors: a process that sees another directory than process 0,
// or none, makes every process fail with one error naming the cause.
func TestJobErrors(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := testgen.Halo(3, 2, 1).WriteDir(d); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(b, "rank-00002.mpit"))
	many, few := t.TempDir(), t.TempDir() // 4 files, and 1
	if err := testgen.Halo(4, 2, 1).WriteDir(many); err != nil {
		t.Fatal(err)
	}
	if err := testgen.Halo(1, 2, 1).WriteDir(few); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		dirs []string
		says string
	}{
		{"other files", []string{a, b, a}, "process 1 sees other rank files"},
		// Process 1's listing is shorter than process 0's part of it.
		{"fewer files", []string{many, few}, "process 1 sees other rank files"},
		{"no directory", []string{a, a, filepath.Join(a, "none")}, "no such file"},
	} {
		errs := runLocal(len(c.dirs), func(x Exchange) error {
			_, err := OpenJob(c.dirs[x.Rank()], x, nil)
			return err
		})
		for me, err := range errs {
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%s: process %d: %v, want an error saying %q on every process", c.name, me, err, c.says)
			}
		}
	}
}
