package tracefmt

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Pending is a pending block (format version 2): an MPI call a thread had
// begun, and not returned from, when the recorder wrote the block. The
// recorder's time-based flush writes one for a call that lasts longer than
// its flush interval, and a fatal signal's handler one for every call under
// way, so the log of a rank that hangs, or is killed inside a call, names
// the call. When the thread's stream later holds an event at Seq, the call
// returned and the record is moot.
type Pending struct {
	Thread int    `json:"thread"`     // recorder thread index
	Seq    uint64 `json:"seq"`        // the index the call's event takes in the thread's stream
	Fn     uint64 `json:"fn"`         // string id of the MPI function's name
	Start  int64  `json:"start_ns"`   // when the call began (monotonic ns)
	Time   int64  `json:"written_ns"` // when the record was written (monotonic ns)
}

// decodePending decodes a pending block's payload.
func decodePending(pr *payloadReader) (Pending, error) {
	var p Pending
	thread := pr.uvarint("pending.thread")
	p.Seq = pr.uvarint("pending.seq")
	p.Fn = pr.uvarint("pending.fn")
	p.Start = int64(pr.uvarint("pending.start"))
	p.Time = int64(pr.uvarint("pending.time"))
	if pr.err != nil {
		return p, fmt.Errorf("decoding %s: %v", pr.what, pr.err)
	}
	if thread > 1<<31-1 {
		return p, fmt.Errorf("decoding pending.thread: thread index %d out of range", thread)
	}
	if p.Start < 0 || p.Time < 0 {
		return p, fmt.Errorf("decoding pending.start: time out of range")
	}
	p.Thread = int(thread)
	return p, nil
}

// unfinished returns, per thread, the last pending record whose call has no
// event in the file (covered: per thread, the seq after its last event),
// in thread order.
func unfinished(pending []Pending, covered map[int]uint64) []Pending {
	last := map[int]int{}
	for i, p := range pending {
		j, ok := last[p.Thread]
		if !ok || p.Seq > pending[j].Seq || p.Seq == pending[j].Seq && p.Time >= pending[j].Time {
			last[p.Thread] = i
		}
	}
	var out []Pending
	for _, i := range last {
		if p := pending[i]; p.Seq >= covered[p.Thread] {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Pending) int { return a.Thread - b.Thread })
	return out
}

// fnName names a function's string id for a message.
func (r *RankReader) fnName(id uint64) string {
	if name, ok := r.strings.Lookup(id); ok {
		return name
	}
	return fmt.Sprintf("MPI function #%d", id)
}

// inFn is " in NAME" for a function's string id, "" for none.
func (r *RankReader) inFn(id uint64) string {
	if id == 0 {
		return ""
	}
	return " in " + r.fnName(id)
}

// firstLine is s up to its first line break (MPICH's messages carry an
// error stack on the following lines).
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// reportUnfinished adds an unfinished_call warning per thread whose last
// call never returned; end is the end record's time (or the latest record's).
func (r *RankReader) reportUnfinished(end int64) {
	for _, p := range r.unfinished {
		name := r.fnName(p.Fn)
		if e := r.end; e != nil && e.Reason == spec.EndMPIError && e.Fn == p.Fn && p.Thread == r.errThread() {
			r.diag(Warning, CodeUnfinishedCall, -1, -1, "thread %d: %s failed with the MPI error that ended the rank", p.Thread, name)
			continue
		}
		d := time.Duration(max(end, p.Time) - p.Start)
		switch {
		case d >= time.Second:
			d = d.Round(time.Millisecond)
		case d >= time.Millisecond:
			d = d.Round(time.Microsecond)
		}
		r.diag(Warning, CodeUnfinishedCall, -1, -1, "thread %d: %s never returned: it began %v before the log ends (the rank hung there, or was stopped in it)", p.Thread, name, d)
	}
}

// errThread is the thread of the last pending block: the recorder's error
// handler writes one for the call that failed, right before the end record.
func (r *RankReader) errThread() int {
	if len(r.pending) == 0 {
		return -1
	}
	return r.pending[len(r.pending)-1].Thread
}
