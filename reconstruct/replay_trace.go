package reconstruct

import (
	"cmp"
	"fmt"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// ReplayTrace replays an opened trace directory (ReplaySources): every
// rank's reader at once, their blocks spooled to a temporary file and
// each holding a window of them (opts.Windows, 32 MiB of windows in all
// by default, 1 to 256 KiB each; less beyond 4,096 ranks: windowOf). The
// diagnostics are the trace's (directory and readers, which the trace
// keeps as after ForEachRank: Trace.Diagnostics, Unfinished) followed by
// the replay's, as Build's.
func ReplayTrace(t *tracefmt.Trace, w ReplayWeights, opts Options) (*ReplayResult, error) {
	return replayTrace(t, true, opts.Windows, func(srcs []tracefmt.Source) (*ReplayResult, error) { return ReplaySources(srcs, w, opts) })
}

// ReplayTraceMeasured is ReplayTrace under measured weights
// (ReplayMeasured), but it leaves t alone: it does not tell t.OnRead what
// it reads nor record into t's diagnostics (its own are the replay's), so
// that it may run beside a ReplayTrace of t.
func ReplayTraceMeasured(t *tracefmt.Trace, offsets map[int]int64, opts Options) (*ReplayResult, error) {
	return replayTrace(t, false, opts.Windows, func(srcs []tracefmt.Source) (*ReplayResult, error) { return ReplayMeasured(srcs, offsets, opts) })
}

// ReplayTracePartMeasured is ReplayTracePart under measured weights, the
// ranks' clocks aligned by offsets (ReplayGroupsMeasured's algorithm),
// leaving t alone as ReplayTraceMeasured does: beside or after a
// ReplayTracePart of t.
func ReplayTracePartMeasured(t *tracefmt.Trace, bounds []int, id int, offsets map[int]int64, opts Options, tr Transport) (*ReplayResult, error) {
	opts.measured = &measuredOffsets{offsets}
	return ReplayTracePart(t, nil, bounds, id, nil, opts, tr)
}

// ReplayTracePart is ReplayPart of an opened trace directory: group id
// reads the ranks of t.Files[bounds[id]:bounds[id+1]], counted in own
// (OnRead told, the readers recorded); the others' files only give their
// headers. The first group's result holds the replay's diagnostics only:
// the trace's are every group's own's. With own nil, the ranks are read
// uncounted and t is left alone (ReplayTracePartMeasured).
func ReplayTracePart(t, own *tracefmt.Trace, bounds []int, id int, w ReplayWeights, opts Options, tr Transport) (*ReplayResult, error) {
	if len(bounds) < 2 || id < 0 || id+1 >= len(bounds) || bounds[len(bounds)-1] != len(t.Files) {
		return nil, fmt.Errorf("internal error: reconstruct: group %d of bounds %v over %d files", id, bounds, len(t.Files))
	}
	lo, hi := bounds[id], bounds[id+1]
	sp := tracefmt.NewSpool("")
	defer sp.Close()
	windows := opts.Windows
	if windows <= 0 {
		windows = 32 << 20
	}
	sp.SetWindow(windowOf(windows, hi-lo))
	var readers []*tracefmt.RankReader
	defer func() {
		for _, rr := range readers {
			rr.Close()
		}
	}()
	srcs := make([]tracefmt.Source, len(t.Files))
	var err error
	for i := range t.Files {
		f := &t.Files[i]
		if i < lo || i >= hi {
			srcs[i] = proxyRank{h: &f.Header, name: f.Path}
			continue
		}
		var rr *tracefmt.RankReader
		var oerr error
		if own != nil {
			rr, oerr = own.OpenRank(f.Rank)
		} else {
			rr, oerr = t.OpenRankUncounted(f.Rank)
		}
		if oerr != nil {
			// Every group goes on to the first round, which stops them all.
			err = cmp.Or(err, oerr)
			srcs[i] = proxyRank{h: &f.Header, name: f.Path}
			continue
		}
		rr.SpoolTo(sp)
		readers = append(readers, rr)
		srcs[i] = traceRank{rr}
	}
	if err != nil {
		return nil, failPart(err, bounds, id, framed{tr})
	}
	res, err := ReplayPart(srcs, bounds, id, w, opts, tr)
	if own != nil {
		own.Record(readers)
	}
	return res, err
}

// replayTrace runs replay on t's ranks, their readers' windows windows
// bytes in all (32 MiB when 0); counted: as ReplayTrace (OnRead told, the
// readers recorded into t), else leaving t alone.
func replayTrace(t *tracefmt.Trace, counted bool, windows int, replay func([]tracefmt.Source) (*ReplayResult, error)) (*ReplayResult, error) {
	sp := tracefmt.NewSpool("")
	defer sp.Close()
	if windows <= 0 {
		windows = 32 << 20
	}
	sp.SetWindow(windowOf(windows, len(t.Files)))
	readers := make([]*tracefmt.RankReader, 0, len(t.Files))
	defer func() {
		for _, rr := range readers {
			rr.Close()
		}
	}()
	srcs := make([]tracefmt.Source, 0, len(t.Files))
	open := t.OpenRank
	if !counted {
		open = t.OpenRankUncounted
	}
	for _, f := range t.Files {
		rr, err := open(f.Rank)
		if err != nil {
			return nil, err
		}
		rr.SpoolTo(sp)
		readers = append(readers, rr)
		srcs = append(srcs, traceRank{rr})
	}
	res, err := replay(srcs)
	if err != nil || !counted {
		return res, err
	}
	t.Record(readers)
	d := t.Diagnostics()
	d.Merge(res.Diags)
	res.Diags = d
	return res, nil
}

// manyRanks is how many ranks' readers share the windows' bytes evenly;
// beyond, each window shrinks as the square of the ranks (512 bytes at
// 16,384 ranks under model weights, to the least, 256 bytes, from 23,170
// on): with thousands of ranks the fixed cost of each is what counts, and
// a rank's window is refilled only a few times (a short rank's events
// fill a few KiB). Smaller windows cost reads of the spool, not decoding:
// 512 bytes against 1 KiB made no difference in time measured on 16,384
// ranks.
const manyRanks = 4096

// windowOf is the window of each of n readers whose windows take windows
// bytes in all: 256 bytes to 256 KiB.
func windowOf(windows, n int) int {
	n = max(n, 1)
	w := windows / n
	if n > manyRanks {
		w = int(int64(w) * manyRanks / int64(n))
	}
	return min(max(w, 256), 256<<10)
}

// traceRank is a reader of a trace directory's file, which names the
// rank's diagnostics and whose damage weighs what its peers miss, as in
// Build (ReplaySources' other sources, as BuildFromSources', do neither).
type traceRank struct{ *tracefmt.RankReader }
