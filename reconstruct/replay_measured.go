package reconstruct

import (
	"cmp"
	"slices"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// Measured weights in the replay.
//
// ReplayMeasured finds the path critpath.ComputeMeasured finds (the
// graph retimed by what the run took, docs/reconstruction.md "Measured
// weights"): a call takes effect at its start when it sends a message
// that a receive took, at its end otherwise; the calls of one event that
// send nothing (a Waitall's parts) wait as one, at the first, which
// becomes [effect − wait, effect], its wait being how long it waited for
// the latest of its messages' sends (or a collective's last arrival), at
// most its duration; a message weighs its receive's effect minus the
// latest send its call waited for; a blocking collective weighs from its
// last member's arrival to when it was done (its first exit, if later),
// its calls end then; MPI_Init ends at the earliest end of any rank's, on
// rank 0's clock. Whether a call sends is known once its messages are
// paired or known never received, so the replay reads the receivers (and
// the call's own rank, for a request's cancellation) ahead as needed.
//
// A nonblocking collective is done at its last member's posting call's
// end or, if later, at the earliest end of the calls that completed it:
// its weight is known once every member's calls were read (instValue
// reads them ahead), which the calls that complete it wait for.
//
// The wait states are critpath's (weighMeasured's): at a blocking
// collective each member's wait for the last arrival (barrier, N×N), a
// rooted one's late broadcast or early reduce; at a call group its wait
// (late sender, or at the nonblocking collective it waited for most), a
// blocking send's wait for a blocking receive posted after it (late
// receiver); with what had to be clamped at 0 (clock error).
//
// It declines what ReplaySources declines.

// ReplayMeasured replays srcs under measured weights, the ranks' clocks
// aligned by offsets (ns to add to a rank's clock to get rank 0's; a rank
// without an entry has 0).
func ReplayMeasured(srcs []tracefmt.Source, offsets map[int]int64, opts Options) (*ReplayResult, error) {
	e, err := newEngine(srcs, nil, opts)
	if err != nil {
		return nil, err
	}
	defer e.close()
	e.measure(offsets)
	return e.run()
}

// measure makes e replay under measured weights, the clocks aligned by
// offsets.
func (e *engine) measure(offsets map[int]int64) {
	e.meas = true
	e.cut = nil // a part is drawn under the model's weights
	e.mrun = &measuredRun{waits: make(map[waitKey]*Wait)}
	e.off = make([]int64, len(e.ranks))
	for i, r := range e.ranks {
		e.off[i] = offsets[r.rank]
	}
}

// measuredInit reads every rank up to its MPI_Init and sets the measured
// end of MPI_Init: the earliest of all, on rank 0's clock.
func (e *engine) measuredInit() {
	if t0, ok := e.initEnds(); ok {
		e.alignInit(t0)
	}
}

// initEnds reads the engine's own ranks up to their MPI_Init and returns
// the earliest end of one, on rank 0's clock (false: none has one).
func (e *engine) initEnds() (t0 int64, set bool) {
	for i, r := range e.ranks {
		if r.remote {
			continue
		}
		for r.p.phase == phaseBefore && e.read(r, 1) {
		}
		if r.hasInit && (!set || r.initEnd+e.off[i] < t0) {
			t0, set = r.initEnd+e.off[i], true
		}
	}
	return t0, set
}

// alignInit sets the measured end of MPI_Init, t0 on rank 0's clock (the
// earliest of every rank's), and how far after it the own ranks left.
func (e *engine) alignInit(t0 int64) {
	e.t0 = t0
	for i, r := range e.ranks {
		if r.hasInit && !r.remote {
			e.mrun.InitSkew = max(e.mrun.InitSkew, r.initEnd+e.off[i]-e.t0)
			r.initEnd = e.t0 - e.off[i]
		}
	}
}

// measuredCollective is the measured weight of blocking instance in, all
// its calls in: from the last arrival to when it was done (its first
// exit, if later), and sets in.doneT.
func (e *engine) measuredCollective(in *sinst) float64 {
	var last, exit int64
	for j := range in.parts {
		off := e.off[e.index(int(in.who[j]))]
		s, x := in.parts[j].start+off, in.parts[j].end+off
		if j == 0 || s > last {
			last = s
		}
		if j == 0 || x < exit {
			exit = x
		}
	}
	in.doneT = max(last, exit)
	e.collectiveWaits(in, last, exit)
	return max(0, float64(in.doneT)-float64(last))
}

// collectiveWaits adds the waits at blocking instance in, whose last
// member arrived at last and first member left at first
// (measuredCollective's).
func (e *engine) collectiveWaits(in *sinst, last, first int64) {
	order := make([]int, len(in.parts))
	for j := range order {
		order[j] = j
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(in.who[a], in.who[b]) })
	cl := e.class(in.lowName)
	times := func(j int) (int64, int64) {
		off := e.off[e.index(int(in.who[j]))]
		return in.parts[j].start + off, in.parts[j].end + off
	}
	// Replayed in groups, every group with a member completes the
	// instance: each counts its own ranks' waits, and the groups' runs are
	// added up (group.result).
	run := e.mrun
	for _, j := range order {
		if !e.ownRank(in.who[j]) {
			continue
		}
		s, x := times(j)
		if x < in.doneT {
			run.EarlyExits++
			run.EarlyExitsNS += in.doneT - x
		}
		if st := CollectiveWaitState(cl, in.data); st != "" {
			run.add(st, int(in.who[j]), in.lowName, in.sites[j], min(x-s, last-s))
		}
		if st := CollectiveCompletionState(cl, in.data); st != "" {
			run.add(st, int(in.who[j]), in.lowName, in.sites[j], CompletionWait(x, last, first))
		}
	}
	if cl&ClassScan != 0 {
		starts, ends := make([]int64, len(order)), make([]int64, len(order))
		for i, j := range order {
			starts[i], ends[i] = times(j)
		}
		ScanWaits(starts, ends, func(i int, ns int64) {
			if j := order[i]; e.ownRank(in.who[j]) {
				run.add(StateEarlyScan, int(in.who[j]), in.lowName, in.sites[j], ns)
			}
		})
	}
	oneToN, nToOne := cl&ClassOneToN != 0, cl&ClassNToOne != 0
	if !oneToN && !nToOne {
		return
	}
	recs := make([]*partRec, len(order))
	for i, j := range order {
		recs[i] = &in.parts[j]
	}
	root, ok := collRoot(recs)
	if !ok {
		return
	}
	rj := slices.IndexFunc(order, func(j int) bool { return int(in.who[j]) == root })
	if rj < 0 {
		return
	}
	rs, re := times(order[rj])
	// Early reduce: the root waits for the last of the others to arrive
	// (Scalasca 2.6's definition; before, for the first).
	lastSend, seen := int64(0), false
	for _, j := range order {
		if int(in.who[j]) == root {
			continue
		}
		s, x := times(j)
		if oneToN {
			if e.ownRank(in.who[j]) {
				run.add(StateLateBroadcast, int(in.who[j]), in.lowName, in.sites[j], min(x-s, rs-s))
			}
			continue
		}
		if !seen || s > lastSend {
			lastSend, seen = s, true
		}
	}
	if nToOne && seen && e.ownRank(int32(root)) {
		run.add(StateEarlyReduce, root, in.lowName, in.sites[order[rj]], min(re-rs, lastSend-rs))
	}
}

// instData reports whether some member of instance in sent or received a
// byte (movesData): once it is complete, as it found; before, from the
// calls known (the members of a nonblocking instance timed have all
// arrived, in an order that depends on how the ranks are replayed).
func (e *engine) instData(in *sinst) bool {
	if in.done {
		return in.data
	}
	for i := range in.parts {
		if in.parts[i].movesData() {
			return true
		}
	}
	return false
}

// ownRank reports whether the engine replays world rank w (all of them
// but in groups).
func (e *engine) ownRank(w int32) bool {
	i := e.index(int(w))
	return i >= 0 && !e.ranks[i].remote
}

// class returns the wait class of function name id.
// Classes are kept by name id (as critpath's weighMeasured does): a
// call's class is asked for each message its group waits for.
func (e *engine) class(id taskgraph.NameID) WaitClass {
	if int(id) >= len(e.classes) {
		e.classes = append(e.classes, make([]WaitClass, int(id)+1-len(e.classes))...)
		e.classed = append(e.classed, make([]bool, int(id)+1-len(e.classed))...)
	}
	if !e.classed[id] {
		e.classes[id], e.classed[id] = ClassifyWait(e.names.name(id)), true
	}
	return e.classes[id]
}

// completed records that rank r's call ending at end (rank 0's clock)
// completed nonblocking instance in.
func (in *sinst) completed(r *streamRank, end int64) {
	if in.compl == nil {
		in.compl = make(map[int32]bool)
	}
	if len(in.compl) == 0 || end < in.exitT {
		in.exitT = end
	}
	in.compl[int32(r.rank)] = true
}

// instValue returns instance in's value (it is complete): under measured
// weights, a nonblocking one's is known once nbTimes is.
func (e *engine) instValue(in *sinst) float64 {
	if !e.meas || !in.anyNB || in.valued {
		return in.val
	}
	if !e.nbTimes(in) {
		return 0
	}
	in.w = max(0, float64(in.doneT)-float64(in.lastT))
	in.val = in.best + in.w
	in.valued = true
	return in.val
}

// needless says whether reading a participant of a nonblocking instance
// further for its completing call is needless: the earliest completion
// known, exit (ok: one is), is no later than the last arrival (the
// instance was done then), or no earlier than where the participant's
// log is read, at (its completion would start there or later).
func needless(exit int64, ok bool, last, at int64) bool {
	return ok && (exit <= last || at >= exit)
}

// nbReady reports whether instance in's times are known, as far as rank
// r's replay needs them (measured weights, a nonblocking instance): false
// when the replay stops, or when, replayed in groups, the other groups
// have not said yet (r then waits, woken after each exchange).
func (e *engine) nbReady(r *streamRank, in *sinst) bool {
	if !e.meas || !in.anyNB || in.timed {
		return true
	}
	if e.grp == nil || len(e.grp.out) < 2 {
		return e.nbTimes(in)
	}
	if !in.done {
		// Asked of the groups once complete: every member's call known.
		e.waitFor(r, in)
		return false
	}
	if e.grp.nbTimes(in) {
		return true
	}
	if e.err == nil {
		e.grp.wait(r)
	}
	return false
}

// nbTimes sets nonblocking instance in's last arrival and when it was
// done, reading ahead every member until it made its call (or its log
// ended short of it) and every participant until its call that
// completed it (or its log ended); false when the replay stops.
func (e *engine) nbTimes(in *sinst) bool {
	if in.timed {
		return true
	}
	for len(in.parts) < in.expected && e.err == nil {
		more := false
		e.logged(in.members, func(s *streamRank) {
			if !s.done && s.calls(in.key.ck) <= in.key.k {
				e.read(s, 1)
				more = true
			}
		})
		if !more {
			break
		}
	}
	if e.err != nil {
		return false
	}
	for j := range in.parts {
		// A posting call arrives at its end.
		if a := in.parts[j].end + e.off[e.index(int(in.who[j]))]; j == 0 || a > in.lastT {
			in.lastT = a
		}
	}
	// The first exit: a participant is read until its completing call,
	// unless what it has left cannot change when the instance was done
	// (a first exit no later than the last arrival is that; and the
	// calls read later start no earlier than its last one read, so
	// cannot end before a first exit already seen).
	for _, w := range in.who {
		i := e.index(int(w))
		s := e.ranks[i]
		for !in.compl[w] && !s.done && e.err == nil {
			if needless(in.exitT, len(in.compl) > 0, in.lastT, s.readAt+e.off[i]) {
				break
			}
			e.read(s, 1)
		}
	}
	if e.err != nil {
		return false
	}
	in.doneT = in.lastT
	if len(in.compl) > 0 && in.exitT > in.lastT {
		in.doneT = in.exitT
	}
	in.timed = true
	if in.done {
		in.parts, in.who, in.compl, in.sites = nil, nil, nil, nil // complete used them
	}
	return true
}

// sends reports whether the operation at queue index j of rank r sends a
// message a receive (completed by an operation) took: rxTaken or
// rxNotTaken, rxUnknown when the replay stops (e.err set) or, replayed in
// groups, the rank waits for another group to say.
func (e *engine) sends(r *streamRank, j int) uint8 {
	node := r.qbase + uint32(j)
	for k := r.oh; k < len(r.outbox) && r.outbox[k].node <= node; k++ {
		if m := r.outbox[k]; m.node == node {
			switch rx := e.received(m); rx {
			case rxTaken, rxUnknown:
				return rx
			}
		}
	}
	return rxNotTaken
}

// received says whether message m is taken by a receive completed by
// an operation, reading ahead until it is known (rxUnknown: the replay
// stops, or m's destination is another group's, which has not said yet:
// its sender waits, group.received).
func (e *engine) received(m *smsg) uint8 {
	for e.err == nil {
		if m.rcv != nil {
			return taken(m.rcv.ev >= 0)
		}
		if m.never {
			return rxNotTaken
		}
		if !e.settled(m) {
			e.read(e.ranks[m.from], 1)
			continue
		}
		if m.cancelled {
			return rxNotTaken
		}
		if m.remote {
			return e.grp.received(m)
		}
		if m.c == nil {
			return rxNotTaken
		}
		c := m.c
		e.pair(c)
		if m.rcv != nil {
			continue
		}
		if c.sh < len(c.sends) && !e.settled(c.sends[c.sh]) {
			// An earlier message on the channel waits for its request.
			e.read(e.ranks[c.sends[c.sh].from], 1)
			continue
		}
		d := e.ranks[e.index(int(m.dst))]
		if d.done {
			return rxNotTaken // every receive of its rank is on its channel: none took it
		}
		e.read(d, 1)
	}
	return rxUnknown
}

// taken is rxTaken when ok, else rxNotTaken.
func taken(ok bool) uint8 {
	if ok {
		return rxTaken
	}
	return rxNotTaken
}

// retime sets the measured times of the call group that starts at rank
// r's next operation, and the weights of its incoming messages (as
// critpath's RankOps and waitGroup); false when the replay stops.
func (e *engine) retime(r *streamRank) bool {
	i := r.qh
	rx := e.sends(r, i)
	if rx == rxUnknown {
		return false
	}
	first := rx == rxTaken
	end := i + 1
	if !first {
		ev := r.q[i].ev
		for end < len(r.q) && r.q[end].ev == ev {
			rx := e.sends(r, end)
			if rx == rxUnknown {
				return false
			}
			if rx == rxTaken {
				break
			}
			end++
		}
	}
	// The group's incoming messages: pair them (reading ahead); its
	// nonblocking collectives: time them.
	for j := i; j < end; j++ {
		if x := r.q[j].in; x != nil && x.state != recvPaired && x.state != recvUnmatched {
			if !e.resolve(r, x) {
				return false
			}
		}
		if nb := r.q[j].collIn; nb != nil && !e.nbReady(r, nb.in) {
			return false
		}
		if e.err != nil {
			return false
		}
	}
	off := e.off[r.idx]
	s, en := r.q[i].start, r.q[i].end
	t := en
	if first {
		t = s
	}
	sAbs := s + off
	var best, lastSend int64
	var bestColl *sinst
	sent := false
	for j := i; j < end; j++ {
		if x := r.q[j].in; x != nil && x.state == recvPaired {
			at := x.msg.start + e.off[x.msg.from]
			if !sent || at > lastSend {
				lastSend, sent = at, true
			}
		}
	}
	run := e.mrun
	for j := i; j < end; j++ {
		o := &r.q[j]
		tu := o.end + off
		if j == i {
			tu = t + off
		}
		var d int64
		var coll *sinst
		switch {
		case o.collIn != nil:
			coll = o.collIn.in
			d = coll.lastT - sAbs
			if early := tu - coll.doneT; early < 0 {
				run.EarlyExits++
				run.EarlyExitsNS -= early
			}
		case o.in != nil && o.in.state == recvPaired:
			m := o.in.msg
			sendAt := m.start + e.off[m.from]
			d = sendAt - sAbs
			// The matching send's late receiver: a blocking send that
			// started before this blocking receive was posted (and had
			// not ended before it: an eager send did not wait).
			if j == i && e.class(o.name)&ClassBlockingRecv != 0 && e.class(m.sname)&ClassBlockingSend != 0 {
				if ss, se := sendAt, m.end+e.off[m.from]; se >= sAbs {
					run.add(StateLateReceiver, e.ranks[m.from].rank, m.sname, m.ssite, min(se-ss, sAbs-ss))
				}
			}
			if late := tu - sendAt; late < 0 {
				run.Messages++
				run.MessagesNS -= late
			}
		default:
			continue
		}
		if d > best {
			best, bestColl = d, coll
		}
	}
	w := max(0, min(en-s, best))
	if w > 0 {
		// The wait is at the call that waited.
		o := &r.q[i]
		if bestColl != nil {
			if st := CollectiveWaitState(e.class(bestColl.lowName), e.instData(bestColl)); st != "" {
				run.add(st, r.rank, bestColl.lowName, o.site, w)
			}
		} else {
			run.add(StateLateSender, r.rank, o.name, o.site, w)
		}
	}
	for j := i; j < end; j++ {
		o := &r.q[j]
		// The measured times replace the call's (read before: tu, and
		// the group's first call's in s, en).
		tu := o.end
		if j == i {
			o.start, o.end = t-w, t
			tu = t
		} else {
			o.start = o.end
		}
		if x := o.in; x != nil && x.state == recvPaired {
			o.xw = float64(max(0, tu+off-lastSend))
		}
		if nb := o.collIn; nb != nil {
			o.xw = float64(max(0, tu+off-nb.in.doneT))
		}
		o.timed = true
	}
	return true
}

// measuredRun gathers the wait states and what was clamped.
type measuredRun struct {
	MeasuredRun
	waits map[waitKey]*Wait
}

type waitKey struct {
	state string
	fn    taskgraph.NameID
	rank  int
	site  uint32
}

// add adds ns of rank's wait in state at a call of function fn at call
// site site of the rank's table.
func (m *measuredRun) add(state string, rank int, fn taskgraph.NameID, site uint32, ns int64) {
	if ns <= 0 {
		return
	}
	k := waitKey{state, fn, rank, site}
	x := m.waits[k]
	if x == nil {
		x = &Wait{State: state, Rank: rank, Site: site, fn: fn}
		m.waits[k] = x
	}
	x.Count++
	x.Time += ns
}

// Wait is the time one rank waited in one state at one function (and
// call site) under measured weights, as critpath.WaitState.
type Wait struct {
	State    string
	Rank     int
	Function string
	// Site is a call site id of the rank's table (0: not known).
	Site  uint32
	Count int // calls that waited
	Time  int64
	fn    taskgraph.NameID
}

// MeasuredRun is what ReplayMeasured finds of the run besides its path,
// as critpath.RunInfo: the span from the first MPI_Init end to the last
// MPI_Finalize start on rank 0's clock, how far apart the ranks left
// MPI_Init, the wait states (by state, rank, function and site), and
// what was clamped at 0: messages that completed before they were sent
// and collective exits before the collective was done (clock error), and
// by how much.
type MeasuredRun struct {
	Span, InitSkew int64
	Waits          []Wait
	Messages       int
	MessagesNS     int64
	EarlyExits     int
	EarlyExitsNS   int64
}

// measuredRun returns the run, every rank replayed (replayed in groups,
// of the group's own ranks).
func (e *engine) measuredRun() *MeasuredRun {
	run := e.mrun
	for i, r := range e.ranks {
		if r.hasFin && !r.remote {
			run.Span = max(run.Span, r.finStr+e.off[i]-e.t0)
		}
	}
	for _, x := range run.waits {
		x.Function = e.names.name(x.fn)
		run.Waits = append(run.Waits, *x)
	}
	sortWaits(run.Waits)
	out := run.MeasuredRun
	return &out
}

func sortWaits(l []Wait) {
	slices.SortFunc(l, func(a, b Wait) int {
		return cmp.Or(cmp.Compare(a.State, b.State), cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.Function, b.Function), cmp.Compare(a.Site, b.Site))
	})
}

// addRuns adds up the runs of the groups of a replay in groups: the
// latest end, the most skew, the counts, and the wait states by state,
// rank, function and site (a rank's late receiver waits are counted by
// the groups of the receives that found them late).
func addRuns(runs []*MeasuredRun) *MeasuredRun {
	out := &MeasuredRun{}
	type key struct {
		state, fn string
		rank      int
		site      uint32
	}
	at := make(map[key]int)
	for _, r := range runs {
		if r == nil {
			continue
		}
		out.Span, out.InitSkew = max(out.Span, r.Span), max(out.InitSkew, r.InitSkew)
		out.Messages += r.Messages
		out.MessagesNS += r.MessagesNS
		out.EarlyExits += r.EarlyExits
		out.EarlyExitsNS += r.EarlyExitsNS
		for _, w := range r.Waits {
			k := key{w.State, w.Function, w.Rank, w.Site}
			if i, ok := at[k]; ok {
				out.Waits[i].Count += w.Count
				out.Waits[i].Time += w.Time
				continue
			}
			at[k] = len(out.Waits)
			out.Waits = append(out.Waits, w)
		}
	}
	sortWaits(out.Waits)
	return out
}
