package testgen

import (
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Loop events are points in the thread's time: they take no time, and
// follow the previous event at once unless Compute set the time before
// them (the MPI calls' Gap does not apply to them).

// LoopBegin records the start of an execution of the loop at file:line:col.
func (r *Rank) LoopBegin(file string, line, col uint64) *Rank {
	ev := r.begin(spec.LoopBegin, "")
	ev.SetUint(spec.File, r.st.id(file))
	ev.SetUint(spec.Line, line)
	ev.SetUint(spec.Col, col)
	r.emitGap(ev, 0)
	return r
}

// LoopEnd records the end of the innermost open loop after count
// iterations, with the flags spec.LoopUnwound, spec.LoopUncounted.
func (r *Rank) LoopEnd(count, flags uint64) *Rank {
	ev := r.begin(spec.LoopEnd, "")
	ev.SetUint(spec.Count, count)
	ev.SetUint(spec.Flags, flags)
	r.emitGap(ev, 0)
	return r
}

// IterBegin records the start of sampled iteration iter (1-based).
func (r *Rank) IterBegin(iter uint64) *Rank {
	ev := r.begin(spec.IterBegin, "")
	ev.SetUint(spec.Iter, iter)
	r.emitGap(ev, 0)
	return r
}

// IterEnd records the end of the sampled iteration with its counter
// increments (in the order of the header's loop_counters).
func (r *Rank) IterEnd(values ...uint64) *Rank {
	ev := r.begin(spec.IterEnd, "")
	ev.Values = append(ev.Values, values...)
	r.emitGap(ev, 0)
	return r
}

// Loop records a whole loop execution of n iterations at file:line:col:
// iteration i (1-based) takes body(i) ns; the iterations for which sampled
// returns true get IterBegin and IterEnd (with the values of counters(i),
// if counters is not nil). The loop starts Compute's time (or 0) after the
// previous event. Nested loops can be recorded from body's caller by
// using LoopBegin and friends directly.
func (r *Rank) Loop(file string, line, col uint64, n uint64, body func(i uint64) int64, sampled func(i uint64) bool, counters func(i uint64) []uint64) *Rank {
	r.LoopBegin(file, line, col)
	var pending int64
	for i := uint64(1); i <= n; i++ {
		d := body(i)
		if !sampled(i) {
			pending += d
			continue
		}
		r.Compute(pending)
		r.IterBegin(i)
		r.Compute(d)
		var vals []uint64
		if counters != nil {
			vals = counters(i)
		}
		r.IterEnd(vals...)
		pending = 0
	}
	r.Compute(pending)
	return r.LoopEnd(n, 0)
}

// LoopMeta are the header entries of a recording with loop markers: the
// counters of the sampled iterations (e.g. "instructions,cycles"), the
// chance in effect and the seed. Set them as the Builder's Meta.
func LoopMeta(counters, chance, seed string) []tracefmt.KeyValue {
	return []tracefmt.KeyValue{{Key: tracefmt.KeyLoopCounters, Value: counters}, {Key: tracefmt.KeyLoopChance, Value: chance}, {Key: tracefmt.KeyLoopSeed, Value: seed}}
}
