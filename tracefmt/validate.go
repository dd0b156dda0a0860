package tracefmt

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Validator checks the cross-references of one rank's decoded events, the
// checks decoding deliberately does not make:
//
//   - a communicator index (fields comm and parent) used before a CommNew
//     defines it, or after CommFree (undefined_comm, error); a CommNew for an
//     index in use (comm_redefined, warning);
//   - a request completed, started or freed that was never created by a
//     Send, Irecv or Coll (unknown_request, warning: its creation may have
//     been lost, or the request came from a call the recorder does not
//     describe), or created twice while live (request_reused, warning);
//   - an fn id not in the string table (unknown_fn, error);
//   - call sites (version 5): a call's site id that no Site event of the
//     rank defines (undefined_site, error, one per id, from Finish: the
//     Site event may be on another thread, later in time), a Site event
//     with id 0, address 0, or an id defined before with another address
//     (bad_site, error);
//   - a duration above math.MaxInt64, i.e. negative (negative_duration, error);
//   - a start before the previous event's start in the same thread
//     (non_monotonic_start, warning);
//   - a rank value outside -5..size-1 (bad_rank, error);
//   - the nesting of loop events in each thread, which must read
//     LoopBegin (IterBegin ... IterEnd)* LoopEnd with nested loops inside:
//     a LoopEnd with no open loop (loop_end_unopened, error), an IterBegin
//     with no open loop (iter_outside_loop, error), an IterEnd with no
//     open iteration in the innermost loop (iter_end_unopened, error), an
//     IterBegin while an iteration is open or a LoopEnd inside an open
//     iteration without the LoopUnwound flag (iter_unclosed, warning),
//     iteration numbers that do not increase or exceed the loop's count
//     (loop_count, error), loops still open when the thread's events end
//     (loop_unclosed, warning, one per thread, from Finish), a file id not
//     in the string table (unknown_file, error);
//   - the region events of each thread (version 4): a name, value, space
//     or label id not in the string table (unknown_string, error), a
//     kernel type other than 1..4 (bad_kernel_type, error), a RegionEnd,
//     KernelEnd or CopyEnd with nothing of its kind open in the thread
//     (region_end_unopened, error; a RegionEnd flagged EndUnmatched is the
//     recorder saying so and is region_unmatched, warning), an end that
//     closes a region, kernel or copy while one begun inside it is still
//     open (region_end_crossed, warning: those are closed with it), an end
//     flagged EndUnwound (region_unwound, info), a SectionEnd for a section
//     id not started in the thread (section_end_unopened, warning), and
//     regions, kernels, copies or sections still open when the thread's
//     events end (region_unclosed, warning, one per thread, from Finish).
//
// It is a single-pass consumer: call Event for every event of the rank in
// order, then Finish. Messages start with "invalid:".
type Validator struct {
	rank  int
	file  string
	size  int
	strs  *Strings
	comms map[uint64]bool       // live communicator indices defined by CommNew
	reqs  map[uint64]bool       // live requests; true for persistent ones
	last  map[int]int64         // per thread: start of the previous event
	loops map[int][]loopFrame   // per thread: the open loops, innermost last
	nest  map[int][]nestFrame   // per thread: the open regions, kernels and copies, innermost last
	secs  map[int]map[int64]int // per thread: the open sections by id, and how many times each is open
	n     uint64                // events seen
	sites Sites                 // the Site events seen
	// unsited are the site ids calls used before a Site event defined
	// them (on another thread it may come later), with the first such call.
	unsited map[uint64]uint64
	diags   Diagnostics
}

// NewValidator returns a validator for a rank with the given header and
// string table; file names the rank in diagnostics.
func NewValidator(h *Header, strs *Strings, file string) *Validator {
	return &Validator{rank: h.Rank, file: file, size: h.Size, strs: strs,
		comms: make(map[uint64]bool), reqs: make(map[uint64]bool), last: make(map[int]int64),
		loops: make(map[int][]loopFrame), nest: make(map[int][]nestFrame), secs: make(map[int]map[int64]int)}
}

// Validate reads the rest of src and returns the problems found.
func Validate(src Source) (*Diagnostics, error) {
	file := ""
	if r, ok := src.(*RankReader); ok {
		file = r.Name()
	}
	v := NewValidator(src.Header(), src.Strings(), file)
	for src.Next() {
		v.Event(src.Event())
	}
	return v.Finish(), src.Err()
}

func (v *Validator) report(sev Severity, code string, ev *Event, format string, args ...any) {
	v.diags.Add(Diagnostic{Severity: sev, Code: code, Rank: v.rank, File: v.file, Block: -1, Offset: -1,
		Message: fmt.Sprintf("invalid: event %d (t=%d thr=%d %s): ", v.n, ev.Start, ev.Thread, ev.Name()) + fmt.Sprintf(format, args...)})
}

func commBuiltin(c uint64) bool { return c <= spec.CommSelf }

// Event checks one event.
func (v *Validator) Event(ev *Event) {
	defer func() { v.n++ }()
	if ev.Kind >= spec.NumKinds || !kindTab[ev.Kind].ok {
		return
	}
	ki := &kindTab[ev.Kind]
	ks := &spec.Kinds[ev.Kind]
	if ks.IsCall {
		if _, ok := v.strs.Lookup(ev.Fn()); !ok {
			v.report(Error, CodeUnknownFn, ev, "fn id %d is not in the string table", ev.Fn())
		}
	}
	if ki.hasDur && ev.Dur() < 0 {
		v.report(Error, CodeNegativeDuration, ev, "duration %d (stored as %d) is negative", ev.Dur(), uint64(ev.Dur()))
	}
	if last, ok := v.last[ev.Thread]; ok && ev.Start < last {
		v.report(Warning, CodeNonMonotonicStart, ev, "starts %d ns before the thread's previous event", last-ev.Start)
	}
	v.last[ev.Thread] = ev.Start

	for _, f := range ki.fields {
		val := ev.F[f]
		switch {
		case spec.Fields[f].Rank:
			v.checkRank(ev, spec.Fields[f].Name, val)
		case f == spec.BuildID && val == 0: // none
		case f == spec.Site:
			if id := uint64(val); id != 0 {
				if _, ok := v.sites.Addr(id); !ok {
					if v.unsited == nil {
						v.unsited = make(map[uint64]uint64)
					}
					if _, seen := v.unsited[id]; !seen {
						v.unsited[id] = v.n
					}
				}
			}
		case spec.Fields[f].Str && f != spec.Fn && f != spec.File: // fn and file have codes of their own
			if _, ok := v.strs.Lookup(uint64(val)); !ok {
				v.report(Error, CodeUnknownString, ev, "%s id %d is not in the string table", spec.Fields[f].Name, uint64(val))
			}
		case f == spec.Parent || (f == spec.Comm && ev.Kind != spec.CommNew):
			c := uint64(val)
			if !commBuiltin(c) && !v.comms[c] {
				v.report(Error, CodeUndefinedComm, ev, "%s %d used before a CommNew defines it (or after CommFree)", spec.Fields[f].Name, c)
			}
		}
	}
	for i, r := range ev.Ranks {
		v.checkRank(ev, fmt.Sprintf("ranks[%d]", i), r)
	}
	for i := range ev.Completions {
		v.checkRank(ev, fmt.Sprintf("completions[%d].src", i), ev.Completions[i].Src)
	}

	if ev.Kind >= spec.LoopBegin && ev.Kind <= spec.IterEnd {
		v.loopEvent(ev)
	}
	if ev.Kind >= spec.RegionBegin && ev.Kind <= spec.SectionEnd {
		v.regionEvent(ev)
	}

	if ev.Kind == spec.SiteDef {
		id, addr := uint64(ev.F[spec.Site]), uint64(ev.F[spec.Addr])
		if !v.sites.Define(id, addr) {
			v.report(Error, CodeBadSite, ev, "site %d at address %#x: %s", id, addr, badSiteWhy(&v.sites, id, addr))
		}
	}

	switch ev.Kind {
	case spec.CommNew:
		c := ev.Comm()
		if commBuiltin(c) && c != spec.CommNull || v.comms[c] {
			v.report(Warning, CodeCommRedefined, ev, "comm %d is already defined", c)
		}
		if c != spec.CommNull {
			v.comms[c] = true
		}
	case spec.CommFree:
		delete(v.comms, ev.Comm())
	}

	switch ev.Kind {
	case spec.Send, spec.Irecv, spec.Coll:
		if r := ev.Req(); r != 0 {
			if _, live := v.reqs[r]; live {
				v.report(Warning, CodeRequestReused, ev, "request %d created again while still live", r)
			}
			v.reqs[r] = false
		}
	case spec.Complete:
		for i := range ev.Completions {
			c := &ev.Completions[i]
			if c.Req == 0 {
				continue
			}
			if _, live := v.reqs[c.Req]; !live {
				v.report(Warning, CodeUnknownRequest, ev, "completes request %d, which was never created (or already completed)", c.Req)
				continue
			}
			if c.Flags&spec.CompletionPersistent == 0 {
				delete(v.reqs, c.Req)
			} else {
				v.reqs[c.Req] = true
			}
		}
	case spec.Start:
		for _, r := range ev.Reqs {
			if _, live := v.reqs[r]; !live && r != 0 {
				v.report(Warning, CodeUnknownRequest, ev, "starts request %d, which was never created", r)
			}
		}
	case spec.ReqFree:
		if r := ev.Req(); r != 0 {
			if _, live := v.reqs[r]; !live {
				v.report(Warning, CodeUnknownRequest, ev, "frees request %d, which was never created (or already completed)", r)
			}
		}
	}
}

func (v *Validator) checkRank(ev *Event, name string, r int64) {
	if r < spec.Undefined || (v.size > 0 && r >= int64(v.size)) {
		v.report(Error, CodeBadRank, ev, "%s %d is not a world rank of a %d-rank run nor a sentinel", name, r, v.size)
	}
}

// loopFrame is an open loop execution of a thread.
type loopFrame struct {
	file, line, col int64
	iterOpen        bool  // a sampled iteration is open
	lastIter        int64 // number of the last sampled iteration begun
}

func (f *loopFrame) where(strs *Strings) string {
	name, ok := strs.Lookup(uint64(f.file))
	if !ok {
		name = "#" + fmt.Sprint(uint64(f.file))
	}
	return fmt.Sprintf("%s:%d:%d", name, f.line, f.col)
}

// loopEvent checks a loop event against the thread's open loops.
func (v *Validator) loopEvent(ev *Event) {
	stack := v.loops[ev.Thread]
	var top *loopFrame
	if len(stack) > 0 {
		top = &stack[len(stack)-1]
	}
	switch ev.Kind {
	case spec.LoopBegin:
		f := loopFrame{file: ev.F[spec.File], line: ev.F[spec.Line], col: ev.F[spec.Col]}
		if _, ok := v.strs.Lookup(uint64(f.file)); !ok {
			v.report(Error, CodeUnknownFile, ev, "file id %d is not in the string table", uint64(f.file))
		}
		stack = append(stack, f)
	case spec.LoopEnd:
		if top == nil {
			v.report(Error, CodeLoopEndUnopened, ev, "no loop is open in thread %d", ev.Thread)
			return
		}
		if top.iterOpen && ev.Flags()&spec.LoopUnwound == 0 {
			v.report(Warning, CodeIterUnclosed, ev, "ends loop %s inside its iteration %d, which has no IterEnd", top.where(v.strs), top.lastIter)
		}
		if top.lastIter > 0 && uint64(top.lastIter) > ev.Count() && ev.Flags()&spec.LoopUncounted == 0 {
			v.report(Error, CodeLoopCount, ev, "loop %s counts %d iterations, but iteration %d was sampled", top.where(v.strs), ev.Count(), top.lastIter)
		}
		stack = stack[:len(stack)-1]
	case spec.IterBegin:
		switch {
		case top == nil:
			v.report(Error, CodeIterOutsideLoop, ev, "no loop is open in thread %d", ev.Thread)
			return
		case top.iterOpen:
			v.report(Warning, CodeIterUnclosed, ev, "iteration %d of loop %s begins while iteration %d is open", ev.F[spec.Iter], top.where(v.strs), top.lastIter)
		}
		if it := ev.F[spec.Iter]; uint64(it) <= uint64(top.lastIter) {
			v.report(Error, CodeLoopCount, ev, "iteration %d of loop %s follows iteration %d", uint64(it), top.where(v.strs), top.lastIter)
		} else {
			top.lastIter = it
		}
		top.iterOpen = true
	case spec.IterEnd:
		if top == nil || !top.iterOpen {
			where := "no loop is open"
			if top != nil {
				where = "loop " + top.where(v.strs) + " has no open iteration"
			}
			v.report(Error, CodeIterEndUnopened, ev, "%s in thread %d", where, ev.Thread)
			return
		}
		top.iterOpen = false
	}
	v.loops[ev.Thread] = stack
}

// nestFrame is an open region, kernel or copy of a thread.
type nestFrame struct {
	kind spec.Kind // its begin kind
	name int64     // its name's string id
}

// NestedBegin returns the begin kind that an end of kind end closes:
// RegionBegin for RegionEnd, KernelBegin for KernelEnd, CopyBegin for
// CopyEnd; KindNone for any other kind.
func NestedBegin(end spec.Kind) spec.Kind {
	switch end {
	case spec.RegionEnd, spec.KernelEnd, spec.CopyEnd:
		return end - 1
	}
	return spec.KindNone
}

// nestedWhat names a region, kernel or copy of begin kind k for people.
func nestedWhat(k spec.Kind) string {
	switch k {
	case spec.KernelBegin:
		return "kernel"
	case spec.CopyBegin:
		return "deep copy"
	}
	return "region"
}

func (v *Validator) strName(id int64) string {
	if name, ok := v.strs.Lookup(uint64(id)); ok {
		return strconv.Quote(name)
	}
	return "#" + strconv.FormatUint(uint64(id), 10)
}

func (v *Validator) frameName(f nestFrame) string {
	if f.kind == spec.CopyBegin {
		return "deep copy to " + v.strName(f.name)
	}
	return nestedWhat(f.kind) + " " + v.strName(f.name)
}

// regionEvent checks a region, kernel, copy or section event against the
// thread's open ones.
func (v *Validator) regionEvent(ev *Event) {
	stack := v.nest[ev.Thread]
	switch ev.Kind {
	case spec.KernelBegin:
		if t := ev.F[spec.Type]; t < spec.KernelFor || t > spec.KernelFence {
			v.report(Error, CodeBadKernelType, ev, "kernel type %d is none of 1 (for), 2 (reduce), 3 (scan), 4 (fence)", uint64(t))
		}
		fallthrough
	case spec.RegionBegin, spec.CopyBegin:
		v.nest[ev.Thread] = append(stack, nestFrame{kind: ev.Kind, name: ev.F[spec.Name]})
	case spec.RegionEnd, spec.KernelEnd, spec.CopyEnd:
		begin := NestedBegin(ev.Kind)
		if ev.Kind == spec.RegionEnd && ev.Flags()&spec.EndUnmatched != 0 {
			v.report(Warning, CodeRegionUnmatched, ev, "the program popped a region in thread %d with none open", ev.Thread)
			return
		}
		i := len(stack) - 1
		for i >= 0 && stack[i].kind != begin {
			i--
		}
		if i < 0 {
			v.report(Error, CodeRegionEndUnopened, ev, "no %s is open in thread %d", nestedWhat(begin), ev.Thread)
			return
		}
		if ev.Flags()&spec.EndUnwound != 0 {
			v.report(Info, CodeRegionUnwound, ev, "the recorder closed %s", v.frameName(stack[i]))
		}
		if i < len(stack)-1 {
			v.report(Warning, CodeRegionEndCrossed, ev, "closes %s while %s, begun inside it, is open (closed with it)",
				v.frameName(stack[i]), v.frameName(stack[len(stack)-1]))
		}
		v.nest[ev.Thread] = stack[:i]
	case spec.SectionBegin:
		open := v.secs[ev.Thread]
		if open == nil {
			open = make(map[int64]int)
			v.secs[ev.Thread] = open
		}
		open[ev.F[spec.Sec]]++
	case spec.SectionEnd:
		open := v.secs[ev.Thread]
		sec := ev.F[spec.Sec]
		if open[sec] == 0 {
			v.report(Warning, CodeSectionEndUnopened, ev, "section %d is not started in thread %d", uint64(sec), ev.Thread)
			return
		}
		if open[sec]--; open[sec] == 0 {
			delete(open, sec)
		}
	}
}

// Finish reports the loops, regions, kernels, copies and sections left
// open and returns the diagnostics.
func (v *Validator) Finish() *Diagnostics {
	v.finishRegions()
	v.finishSites()
	threads := make([]int, 0, len(v.loops))
	for t, stack := range v.loops {
		if len(stack) > 0 {
			threads = append(threads, t)
		}
	}
	slices.Sort(threads)
	for _, t := range threads {
		stack := v.loops[t]
		v.diags.Add(Diagnostic{Severity: Warning, Code: CodeLoopUnclosed, Rank: v.rank, File: v.file, Block: -1, Offset: -1,
			Message: fmt.Sprintf("invalid: thread %d: %d loops still open at the end of its events (outermost %s, innermost %s)",
				t, len(stack), stack[0].where(v.strs), stack[len(stack)-1].where(v.strs))})
		delete(v.loops, t)
	}
	return &v.diags
}

func (v *Validator) finishRegions() {
	threads := make([]int, 0, len(v.nest)+len(v.secs))
	for t, stack := range v.nest {
		if len(stack) > 0 {
			threads = append(threads, t)
		}
	}
	for t, open := range v.secs {
		if len(open) > 0 && len(v.nest[t]) == 0 {
			threads = append(threads, t)
		}
	}
	slices.Sort(threads)
	for _, t := range threads {
		stack, secs := v.nest[t], 0
		for _, n := range v.secs[t] {
			secs += n
		}
		msg := fmt.Sprintf("invalid: thread %d: %d regions, kernels or copies and %d sections still open at the end of its events", t, len(stack), secs)
		if len(stack) > 0 {
			msg += fmt.Sprintf(" (outermost %s, innermost %s)", v.frameName(stack[0]), v.frameName(stack[len(stack)-1]))
		}
		v.diags.Add(Diagnostic{Severity: Warning, Code: CodeRegionUnclosed, Rank: v.rank, File: v.file, Block: -1, Offset: -1, Message: msg})
		delete(v.nest, t)
		delete(v.secs, t)
	}
}

// badSiteWhy says why Sites.Define refused a site.
func badSiteWhy(s *Sites, id, addr uint64) string {
	switch {
	case id == 0:
		return "id 0 means no site"
	case id >= maxSiteID:
		return fmt.Sprintf("id above the %d a table holds", maxSiteID-1)
	case addr == 0:
		return "address 0"
	}
	old, _ := s.Addr(id)
	return fmt.Sprintf("already defined with address %#x", old)
}

// finishSites reports the site ids calls used that no Site event defined.
func (v *Validator) finishSites() {
	ids := make([]uint64, 0, len(v.unsited))
	for id := range v.unsited {
		if _, ok := v.sites.Addr(id); !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		v.diags.Add(Diagnostic{Severity: Error, Code: CodeUndefinedSite, Rank: v.rank, File: v.file, Block: -1, Offset: -1,
			Message: fmt.Sprintf("invalid: site %d used (first by event %d) but no Site event defines it", id, v.unsited[id])})
	}
}
