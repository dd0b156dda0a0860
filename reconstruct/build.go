package reconstruct

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Options configure a reconstruction. The zero value is the default.
type Options struct {
	// Workers bounds the goroutines that decode and match ranks
	// (GOMAXPROCS when <= 0). The graph does not depend on it.
	Workers int
	// Filtered says the trace was recorded with an --include or --exclude
	// filter: a message or collective call one rank misses of another may
	// be one the filter left out, so it is a warning, not an error.
	Filtered bool
	// Observe, when set, is called once per rank before its events are
	// read; the function it returns (if not nil) sees every event of the
	// rank, in order, after the reconstruction: other analyses of the same
	// pass (the loops of the critical path). It is called concurrently for
	// different ranks.
	Observe func(h *tracefmt.Header, strs *tracefmt.Strings) func(*tracefmt.Event)
	// Windows bounds what the readers of a streaming replay (ReplayTrace)
	// hold of their blocks, in bytes for all of them (32 MiB when 0): two
	// replays at once take half each.
	Windows int
	// Stop, when set, stops a streaming replay soon after it turns true
	// (within 65,536 events read): the replay returns ErrStopped. A
	// replay started on the chance that its result is wanted is stopped
	// so once it is known not to be.
	Stop *atomic.Bool
	// Partial, when set, is called by a streaming replay every 65,536
	// events read with what it found so far: the longest path to a rank's
	// last operation replayed (the largest path value, in ns), and the
	// longest time a rank ran to it, as recorded (from the end of its
	// MPI_Init to the end of that operation; 0 before any). It is called
	// in the replay's goroutine; in a partitioned replay (ReplayGroups),
	// by each group's, concurrently, for its own ranks.
	Partial func(path float64, run int64)
	// Cut, when set, collects a part of the graph in a streaming replay
	// under the weights it is given (not in groups, not under measured
	// weights): see Cut.
	Cut *Cut

	// owns, when set, says which ranks (by index) an engine of a
	// partitioned replay replays (replay_part.go): only they get an
	// Observe function.
	owns func(i int) bool
	// names, when set, is the name table the engines of a partitioned
	// replay share.
	names *nameTable
	// measured, when set, makes the engines of a partitioned replay
	// replay under measured weights, the clocks aligned by these offsets
	// (ReplayMeasured's).
	measured *measuredOffsets
}

// ErrStopped is the error of a streaming replay stopped by Options.Stop.
var ErrStopped = errors.New("reconstruct: the replay was stopped")

// measuredOffsets are the clock offsets of a replay under measured
// weights: ns to add to a rank's clock to get rank 0's.
type measuredOffsets struct{ offsets map[int]int64 }

func (o Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// Build reconstructs the task graph of a trace directory, decoding its
// ranks in parallel. The diagnostics are the trace's (directory and
// reader) followed by the reconstruction's; the graph is built whatever
// they say (see Check). The error is for I/O failures and for graphs too
// large to represent.
func Build(t *tracefmt.Trace, opts Options) (*taskgraph.Graph, *tracefmt.Diagnostics, error) {
	ranks := make([]int, len(t.Files))
	for i, f := range t.Files {
		ranks[i] = f.Rank
	}
	b, err := newBuild(t.Size, ranks, opts)
	if err != nil {
		return nil, nil, err
	}
	err = t.ForEachRank(opts.workers(), func(r *tracefmt.RankReader) error {
		end := func() rankEnd {
			d := r.Diagnostics()
			return endOf(r.End(), d.Count(tracefmt.DataLoss) > 0 || d.Count(tracefmt.Error) > 0)
		}
		return b.rank(r.Rank(), r, r.Name(), end)
	})
	if err != nil {
		return nil, nil, err
	}
	return b.finish(t.Diagnostics())
}

// BuildFromRanks reconstructs the task graph of ranks held in memory (as
// ParseText returns them); the world size is the largest header size (at
// least the number of ranks). A rank whose End is nil or not a normal
// finalize counts as truncated.
func BuildFromRanks(ranks []*tracefmt.RankData, opts Options) (*taskgraph.Graph, *tracefmt.Diagnostics, error) {
	srcs := make([]tracefmt.Source, len(ranks))
	for i, d := range ranks {
		srcs[i] = d.Source()
	}
	return BuildFromSources(srcs, opts)
}

// BuildFromSources reconstructs the task graph of one Source per rank
// (each rank at most once; ranks without a source have no operations and
// count as lost). Sources are consumed concurrently.
func BuildFromSources(srcs []tracefmt.Source, opts Options) (*taskgraph.Graph, *tracefmt.Diagnostics, error) {
	size := len(srcs)
	ranks := make([]int, 0, len(srcs))
	for _, s := range srcs {
		h := s.Header()
		size = max(size, h.Size)
		if h.Rank < 0 {
			return nil, nil, fmt.Errorf("a source has rank %d", h.Rank)
		}
		ranks = append(ranks, h.Rank)
	}
	slices.Sort(ranks)
	for i, r := range ranks {
		if i > 0 && r == ranks[i-1] {
			return nil, nil, fmt.Errorf("two sources for rank %d", r)
		}
		if r >= size {
			return nil, nil, fmt.Errorf("rank %d in a world of size %d", r, size)
		}
	}
	b, err := newBuild(size, ranks, opts)
	if err != nil {
		return nil, nil, err
	}
	errs := make([]error, len(srcs))
	parallel(len(srcs), opts.workers(), func(i int) {
		s := srcs[i]
		end := func() rankEnd { return endOf(s.End(), false) }
		errs[i] = b.rank(s.Header().Rank, s, "", end)
	})
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return b.finish(nil)
}

// parallel calls fn(0..n-1) on up to workers goroutines.
func parallel(n, workers int, fn func(i int)) {
	workers = max(1, min(workers, n))
	if workers == 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// build is one reconstruction. Its per-rank tables hold the ranks with a
// log only: a world may claim many more.
type build struct {
	size  int
	opts  Options
	gb    *taskgraph.Builder
	names *nameTable
	ranks []int         // the ranks with a log, increasing
	res   []*rankResult // by position in ranks (see result)
	diags tracefmt.Diagnostics
	lossy bool // some rank's log lost events before some of its events
}

// rankResult is what a rank's pass leaves for the cross-rank phases.
type rankResult struct {
	p   *rankPass
	end rankEnd

	sendOrder []uint32 // the rank's sends grouped by channel, in posting order
	sendOff   []uint32 // sends of send channel c: sendOrder[sendOff[c]:sendOff[c+1]]
	sendIdx   map[gchan]uint32
	paired    []uint32 // per send channel: how many sends a receive matched
	partNode  []taskgraph.NodeID
	// taken, with lost events: per send channel, the sends a receive
	// matched, a bit each (nil: paired says).
	taken [][]uint64

	joinDiags tracefmt.Diagnostics
	sendDiags tracefmt.Diagnostics
}

// gchan is a channel with a global communicator key.
type gchan struct {
	ck   commKey
	peer int32
	tag  int64
}

// newBuild prepares the reconstruction of a world of size ranks of which
// ranks (sorted, distinct) have a log.
func newBuild(size int, ranks []int, opts Options) (*build, error) {
	gb, err := taskgraph.NewBuilderFor(size, ranks)
	if err != nil {
		return nil, err
	}
	return &build{size: size, opts: opts, gb: gb, names: &nameTable{gb: gb, m: make(map[string]nameInfo)},
		ranks: ranks, res: make([]*rankResult, len(ranks))}, nil
}

// result returns rank r's pass, nil when r has no log.
func (b *build) result(r int) *rankResult {
	if i, ok := b.gb.Index(r); ok {
		return b.res[i]
	}
	return nil
}

// rankEnd is how a rank's log ends.
type rankEnd struct {
	// lossy: the log lost something (no end record, damage): what its
	// rank's peers miss may be in the lost part.
	lossy bool
	// early, for a complete log whose rank ended before MPI_Finalize, says
	// how ("MPI_Abort", "signal 15", ...): what its peers miss was never
	// done, which is no error of the trace.
	early string
	// complete: the log ends with an end record of MPI_Finalize and lost
	// nothing after its last event (whatever it lost before).
	complete bool
}

// endOf classifies a log from its end record (nil: none) and whether the
// reader found damage.
func endOf(e *tracefmt.End, damaged bool) rankEnd {
	switch {
	case e == nil:
		return rankEnd{lossy: true}
	case damaged:
		return rankEnd{lossy: true, complete: e.Reason == spec.EndFinalize}
	case e.Reason == spec.EndFinalize:
		return rankEnd{complete: true}
	case e.Reason == spec.EndAbort:
		return rankEnd{early: "MPI_Abort"}
	case e.Reason == spec.EndSignal:
		return rankEnd{early: "signal " + itoa(int(e.Signal))}
	}
	return rankEnd{early: e.ReasonString()}
}

// rank runs one rank's pass.
func (b *build) rank(rank int, src tracefmt.Source, file string, end func() rankEnd) error {
	i, ok := b.gb.Index(rank)
	if rank < 0 || rank >= b.size || !ok {
		return fmt.Errorf("%s: rank %d outside the world of %d ranks", file, rank, b.size)
	}
	rb := b.gb.Rank(rank)
	p := newRankPass(rank, b.size, file, rb, b.names, src.Strings())
	var observe func(*tracefmt.Event)
	if b.opts.Observe != nil {
		observe = b.opts.Observe(src.Header(), src.Strings())
	}
	lr, _ := src.(tracefmt.LossReporter)
	for src.Next() {
		ev := src.Event()
		if lr != nil {
			if l := lr.Lost(); l.Events > 0 {
				p.Lost(l, ev.Thread)
			}
		}
		p.Event(ev)
		if observe != nil {
			observe(ev)
		}
	}
	if err := src.Err(); err != nil {
		return err
	}
	e := end()
	if tail := tracefmt.SourceLoss(src); tail.Events > 0 {
		e.lossy, e.complete = true, false
	}
	e.lossy = e.lossy || p.lossy()
	p.Finish(e)
	rb.Done()
	p.sends.trim()
	p.recvs.trim()
	b.res[i] = &rankResult{p: p, end: e}
	return nil
}

// missing says how to weigh what rank r's peers miss of it (an unmatched
// message, a missing collective call): data loss when its log is
// incomplete (or absent), a warning when the rank ended early, else an
// error; note explains it at the end of the diagnostic.
func (b *build) missing(r int) (sev tracefmt.Severity, note string) {
	var end *rankEnd
	if res := b.result(r); res != nil {
		end = &res.end
	}
	return missingSev(r, end, b.opts.Filtered)
}

// missingSev is missing for rank r whose log ends as end (nil: no log).
func missingSev(r int, end *rankEnd, filtered bool) (sev tracefmt.Severity, note string) {
	switch {
	case end == nil || end.lossy:
		return tracefmt.DataLoss, "; rank " + itoa(r) + "'s log is incomplete"
	case end.early != "":
		return tracefmt.Warning, "; rank " + itoa(r) + " ended early (" + end.early + ")"
	case filtered:
		return tracefmt.Warning, "; the recording's --include/--exclude may have left out its other half"
	}
	return tracefmt.Error, ""
}

func (b *build) finish(traceDiags *tracefmt.Diagnostics) (*taskgraph.Graph, *tracefmt.Diagnostics, error) {
	for _, res := range b.res {
		b.lossy = b.lossy || res != nil && res.p.lossy()
	}
	b.sharedNames()
	parallel(len(b.res), b.opts.workers(), b.prepareSends)
	members := b.members()
	if err := b.gb.Layout(); err != nil {
		return nil, nil, err
	}
	if err := b.collectives(members); err != nil {
		return nil, nil, err
	}
	errs := make([]error, len(b.res))
	parallel(len(b.res), b.opts.workers(), func(i int) { errs[i] = b.join(i) })
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	parallel(len(b.res), b.opts.workers(), b.unmatchedSends)
	g, err := b.gb.Finish()
	if err != nil {
		return nil, nil, err
	}
	d := &tracefmt.Diagnostics{}
	d.Merge(traceDiags)
	for _, res := range b.res {
		if res != nil {
			d.Merge(&res.p.diags)
		}
	}
	d.Merge(&b.diags)
	for _, res := range b.res {
		if res != nil {
			d.Merge(&res.joinDiags)
		}
	}
	for _, res := range b.res {
		if res != nil {
			d.Merge(&res.sendDiags)
		}
	}
	b.lossDiagnostics(d)
	b.res = nil
	return g, d, nil
}

// sharedNames names the Init node MPI_Init_thread when every rank that
// recorded its initialisation used it.
func (b *build) sharedNames() {
	some, all := false, true
	for _, res := range b.res {
		if res != nil && res.p.hasInit {
			some = true
			all = all && res.p.initTh
		}
	}
	if some && all {
		b.gb.SetSharedNames("MPI_Init_thread", "MPI_Finalize")
	}
}
