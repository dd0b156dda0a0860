package driver

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/internal/spanset"
	"github.com/mpitrace/mpitrace/analysis/loops"
	"github.com/mpitrace/mpitrace/analysis/regions"
	"github.com/mpitrace/mpitrace/reconstruct"
)

// Analyze is Analyze(j.Trace, o) with o.Stream run as the job: each
// process replays its own ranks (Replay) under the model's weights, and
// process 0 gets the analysis, the single process's: the path, the
// trace's and the replay's diagnostics, and what every process saw of
// its ranks' loops, regions and clocks (gathered to it). The others get
// nil, and the same error when the job failed.
//
// With o.Measured, or o.Why when the "why" block needs it, the
// processes replay the trace again under measured weights (measured):
// process 0's MeasuredPath. A trace the replay declines (lost events,
// overlapping calls of threads...) is analysed by process 0 alone with
// the task graph, as Analyze does; the others then wait. A panic of the
// replay stops the job (Fatal): the serial analysis survives one with
// the graph. o.Observe, when set, sees the events of
// the process's own ranks only. Process 0's Loops and Regions say where
// they ran (the path's share in them), not their figures: Baseline takes
// those from every process when o.Baseline asks for them.
func (j *Job) Analyze(o Options) (*Analysis, error) {
	a := &Analysis{Trace: j.Trace, clocks: newClockObserver(), resolver: o.Resolver}
	var err error
	a.Model, a.ModelName, err = LoadModel(o.Model)
	// A model one process cannot read stops all, before the replay's
	// exchanges.
	if err = j.agree(err); err != nil {
		return nil, err
	}
	filtered := RecordFilter(j.Trace) != ""
	res, err := j.Replay(critpath.ModelWeights(a.Model), reconstruct.Options{Filtered: filtered, Observe: a.observer(o)})
	if err != nil {
		if j.xerr != nil {
			return nil, err
		}
		// Declined, or failed in a way the graph says better (every
		// process has the error): process 0 alone, as Analyze.
		if j.x.Rank() != 0 {
			return nil, nil
		}
		o.Stream = false
		return Analyze(j.Trace, o)
	}
	start := time.Now()
	mine := a.appendObserved(nil, o.Baseline)
	j.Stats.ReadNs += time.Since(start).Nanoseconds()
	parts, err := j.gather(mine, nil)
	if err == nil && parts != nil {
		err = a.addObserved(parts, o.Baseline)
	}
	if err = j.agree(err); err != nil {
		if res != nil {
			res.Close()
		}
		var ag agreed
		if err != nil && j.xerr == nil && errors.As(err, &ag) && ag.Agreed() {
			// More spans than one exchange moves (every process got the
			// error): process 0 analyses the trace alone, as Analyze.
			if j.x.Rank() != 0 {
				return nil, nil
			}
			return Analyze(j.Trace, o)
		}
		return nil, err
	}
	if parts == nil {
		// Another process than 0: its part of the measured replay.
		if o.Measured || o.Why {
			return nil, j.measured(a, o, filtered)
		}
		return nil, nil
	}
	a.replays = append(a.replays, res)
	a.Diags = res.Diags
	a.Note = filterNote(j.Trace, a.Diags)
	a.Steps = critpath.ReplayPath(res, critpath.WeightsModel, a.Model, nil)
	if o.Measured || o.Why {
		if err := j.measured(a, o, filtered); err != nil {
			a.Close()
			return nil, err
		}
	}
	return a, nil
}

// measured replays the trace under measured weights as the job, each
// process its own ranks (reconstruct.ReplayTracePartMeasured), the clocks
// aligned by the offsets the model's replay saw (process 0's, given to
// all): process 0's MeasuredPath, when o.Measured asks for it or o.Why
// and the "why" block will need it (process 0 says which). A replay the
// groups fail alike is left to MeasuredPath on process 0 alone, which
// replays the whole trace; the error returned stops the job.
func (j *Job) measured(a *Analysis, o Options, filtered bool) error {
	var mine []byte
	if j.x.Rank() == 0 {
		need := o.Measured || needsWhy(a.Steps.Length, a.Steps.RunTime)
		mine = appendClocks([]byte{byte(btoi(need))}, a.clockOffsets())
	}
	// An error every process got alike leaves the path to MeasuredPath
	// on process 0; one this process found alone (an MPI error: xerr)
	// stops the job.
	alone := func(err error) error {
		if j.xerr != nil {
			return err
		}
		return nil
	}
	parts, err := j.allgather(mine, nil)
	if err != nil {
		return alone(err)
	}
	if len(parts[0]) == 0 || parts[0][0] == 0 {
		return nil // the path under the model's weights only
	}
	clocks := critpath.Clocks{Offset: map[int]int64{}, Err: map[int]int64{}}
	d := spanset.NewDecoder(parts[0][1:])
	readClocks(d, &clocks)
	if rest, rerr := d.Rest(); rerr != nil || len(rest) != 0 {
		err = fmt.Errorf("internal error: the clock offsets process 0 gave: %v", cmp.Or(rerr, errors.New("bytes after them")))
	}
	if err = j.agree(err); err != nil {
		return alone(err)
	}
	offsets := clocks.Offset
	start := time.Now()
	x := &countedExchange{j: j}
	res, rerr := j.safePart(func() (*reconstruct.ReplayResult, error) {
		return reconstruct.ReplayTracePartMeasured(j.Trace, j.bounds, j.x.Rank(), offsets, reconstruct.Options{Filtered: filtered}, x)
	})
	j.Stats.ReadNs += time.Since(start).Nanoseconds() - x.ns
	if j.xerr != nil {
		return rerr // found by this process alone: the job stops (Fatal)
	}
	if err := j.agree(rerr); err != nil {
		if res != nil {
			res.Close()
		}
		return alone(err)
	}
	if res != nil {
		a.replays = append(a.replays, res)
		a.mpath = critpath.ReplayPath(res, critpath.WeightsMeasured, nil, a.clockOffsets())
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendClocks appends c (each rank's offset and its error) to b, in
// rank order.
func appendClocks(b []byte, c *critpath.Clocks) []byte {
	ranks := slices.Sorted(maps.Keys(c.Offset))
	b = binary.AppendUvarint(b, uint64(len(ranks)))
	for _, r := range ranks {
		b = binary.AppendUvarint(b, uint64(r))
		b = binary.AppendVarint(b, c.Offset[r])
		b = binary.AppendVarint(b, c.Err[r])
	}
	return b
}

// readClocks reads appendClocks' clocks into c.
func readClocks(d *spanset.Decoder, c *critpath.Clocks) {
	n := d.Uvarint()
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		r := int(d.Uvarint())
		c.Offset[r] = d.Varint()
		c.Err[r] = d.Varint()
	}
}

// appendObserved appends to b what the process's observers saw of its
// ranks: each rank's loops' and regions' spans, the clocks, and with
// times their baseline figures.
func (a *Analysis) appendObserved(b []byte, times bool) []byte {
	ls, rs := a.Loops(), a.Regions()
	b = binary.AppendUvarint(b, uint64(len(ls)))
	for _, l := range ls {
		b = l.AppendSpans(binary.AppendUvarint(b, uint64(l.Rank)))
	}
	b = binary.AppendUvarint(b, uint64(len(rs)))
	for _, r := range rs {
		b = r.AppendSpans(binary.AppendUvarint(b, uint64(r.Rank)))
	}
	b = appendClocks(b, &a.clocks.clocks)
	if times {
		t := spanTimes(ls, rs)
		b = binary.AppendUvarint(b, uint64(len(t)))
		for _, k := range slices.Sorted(maps.Keys(t)) {
			b = binary.AppendVarint(spanset.AppendString(b, k), t[k])
		}
	}
	return b
}

// addObserved sets a's loops, regions, clocks and with times baseline
// figures to what every process's observers saw (appendObserved's
// parts, by process), in rank order.
func (a *Analysis) addObserved(parts [][]byte, times bool) error {
	a.loopRanks, a.regionRanks = []*loops.RankLoops{}, []*regions.RankRegions{}
	a.spansOnly = true
	if times {
		a.spanTimes = map[string]int64{}
	}
	for p, b := range parts {
		d := spanset.NewDecoder(b)
		var err error
		if a.loopRanks, d, err = readRanks(d, a.loopRanks, loops.SpansOf); err != nil {
			return observedErr(p, err)
		}
		if a.regionRanks, d, err = readRanks(d, a.regionRanks, regions.SpansOf); err != nil {
			return observedErr(p, err)
		}
		readClocks(d, &a.clocks.clocks)
		if times {
			n := d.Uvarint()
			for i := uint64(0); i < n && d.Err() == nil; i++ {
				k := d.String()
				a.spanTimes[k] += d.Varint()
			}
		}
		if rest, err := d.Rest(); err != nil || len(rest) != 0 {
			return observedErr(p, cmp.Or(err, errors.New("bytes left over")))
		}
	}
	slices.SortStableFunc(a.loopRanks, func(x, y *loops.RankLoops) int { return x.Rank - y.Rank })
	slices.SortStableFunc(a.regionRanks, func(x, y *regions.RankRegions) int { return x.Rank - y.Rank })
	return nil
}

// readRanks appends to ranks what d holds of the ranks' spans
// (appendObserved), each read by read, and returns the decoder of what
// follows.
func readRanks[R any](d *spanset.Decoder, ranks []R, read func(rank int, b []byte) (R, []byte, error)) ([]R, *spanset.Decoder, error) {
	n := d.Uvarint()
	for i := uint64(0); i < n; i++ {
		rank := int(d.Uvarint())
		b, err := d.Rest()
		if err != nil {
			return nil, nil, err
		}
		r, b, err := read(rank, b)
		if err != nil {
			return nil, nil, err
		}
		ranks = append(ranks, r)
		d = spanset.NewDecoder(b)
	}
	return ranks, d, nil
}

func observedErr(p int, err error) error {
	return fmt.Errorf("internal error: decoding what process %d observed: %w", p, err)
}
