package reconstruct_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// damagingJob is a Transport of groups on goroutines that damages one
// batch: at its call bad, group from's batch to group to is changed by
// damage (bad < 0: none). calls counts each group's calls.
type damagingJob struct {
	n        int
	from, to int
	bad      int
	damage   func([]byte) []byte

	mu      sync.Mutex
	cond    *sync.Cond
	round   int
	in      [][][]byte
	out     [][][]byte
	k       int
	calls   []int
	stopped bool
}

var errStopped = errors.New("stopped")

// stop fails every exchange, waiting or to come (as MPI_Abort ends a
// job).
func (j *damagingJob) stop() {
	j.mu.Lock()
	j.stopped = true
	j.cond.Broadcast()
	j.mu.Unlock()
}

func newDamagingJob(n, from, to, bad int, damage func([]byte) []byte) *damagingJob {
	j := &damagingJob{n: n, from: from, to: to, bad: bad, damage: damage, in: make([][][]byte, n), calls: make([]int, n)}
	j.cond = sync.NewCond(&j.mu)
	return j
}

func (j *damagingJob) callsNow() []int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.calls)
}

type damagingPort struct {
	j  *damagingJob
	id int
}

func (p damagingPort) Alltoall(send [][]byte) ([][]byte, error) {
	j := p.j
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.stopped {
		return nil, errStopped
	}
	send = slices.Clone(send)
	for i := range send {
		send[i] = slices.Clone(send[i])
	}
	if p.id == j.from && j.calls[p.id] == j.bad {
		send[j.to] = j.damage(send[j.to])
	}
	j.calls[p.id]++
	round := j.round
	j.in[p.id] = send
	j.k++
	if j.k == j.n {
		j.out, j.in, j.k = j.in, make([][][]byte, j.n), 0
		j.round++
		j.cond.Broadcast()
	}
	for j.round == round && !j.stopped {
		j.cond.Wait()
	}
	if j.stopped {
		return nil, errStopped
	}
	recv := make([][]byte, j.n)
	for from := range recv {
		recv[from] = j.out[from][p.id]
	}
	return recv, nil
}

// replayParts replays dir in groups of bounds through job, each group on
// a goroutine with sources of its own, and returns each group's error
// (a panic is one); it fails t when the groups have not all returned
// within a minute.
func replayParts(t *testing.T, dir, what string, bounds []int, job *damagingJob) []error {
	t.Helper()
	n := len(bounds) - 1
	errs := make([]error, n)
	var wg sync.WaitGroup
	for g := range n {
		srcs, done := spooledSources(t, dir)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done()
			defer func() {
				if v := recover(); v != nil {
					errs[g] = fmt.Errorf("panic: %v", v)
				}
			}()
			res, err := reconstruct.ReplayPart(srcs, bounds, g, replayWeights{}, reconstruct.Options{}, damagingPort{job, g})
			if res != nil {
				res.Close()
			}
			errs[g] = err
			// What an MPI job does (driver.Job.Replay, MPI_Abort).
			var be *reconstruct.BatchError
			if errors.As(err, &be) {
				job.stop()
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the groups hang; exchanges by group %v", what, job.callsNow())
	}
	return errs
}

// TestReplayPartDamagedBatch: a batch damaged on its way (cut short,
// garbage after it, or emptied), in any exchange of the rounds or of the
// result's making, stops the group that receives it with an error, never
// a panic; once the groups that stop alone (BatchError) have stopped the
// others, as an MPI job aborts, none waits for ever.
func TestReplayPartDamagedBatch(t *testing.T) {
	dir := t.TempDir()
	if err := testgen.Halo(6, 8, 2).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	bounds := []int{0, 2, 4, 6}
	clean := newDamagingJob(3, 0, 0, -1, nil)
	for g, err := range replayParts(t, dir, "no damage", bounds, clean) {
		if err != nil {
			t.Fatalf("group %d without damage: %v", g, err)
		}
	}
	calls := clean.calls[1]
	if calls < 5 || slices.Max(clean.calls) != slices.Min(clean.calls) {
		t.Fatalf("exchanges by group: %v", clean.calls)
	}
	damages := map[string]func([]byte) []byte{
		"cut":     func(b []byte) []byte { return b[:len(b)/2] },
		"garbage": func(b []byte) []byte { return append(b, 0xff, 0xfe, 0x07, 0xff) },
		"empty":   func(b []byte) []byte { return nil },
	}
	for name, damage := range damages {
		for _, pair := range [][2]int{{1, 0}, {0, 2}, {2, 1}} {
			for bad := range calls {
				job := newDamagingJob(3, pair[0], pair[1], bad, damage)
				errs := replayParts(t, dir, fmt.Sprintf("%s batch %d→%d at exchange %d", name, pair[0], pair[1], bad), bounds, job)
				for g, err := range errs {
					if err != nil && len(err.Error()) > 6 && err.Error()[:6] == "panic:" {
						t.Errorf("%s batch %d→%d at exchange %d: group %d: %v", name, pair[0], pair[1], bad, g, err)
					}
				}
				if errs[pair[1]] == nil {
					t.Errorf("%s batch %d→%d at exchange %d of %d: group %d took it without an error", name, pair[0], pair[1], bad, calls, pair[1])
				}
			}
		}
	}
}
