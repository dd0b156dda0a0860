package reconstruct

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// The replay in groups.
//
// ReplayGroups splits the ranks into groups of contiguous ranks, each
// replayed by an engine of its own (the streaming replay's, unchanged for
// what stays in the group) on a goroutine of its own. An engine holds
// every rank: the ranks of its group, which it reads and replays, and the
// others as proxies, whose state it learns from the other groups'
// messages. What crosses groups goes as messages:
//
//   - a message to another group's rank: its record when it is sent
//     (channel, bytes, call), its settling when its request says whether
//     it was cancelled, its value when its sending operation is replayed;
//   - a rank's log ending: its collective calls per communicator, how it
//     ended;
//   - a collective call: its record when read, the rank's arrival when
//     replayed, to every group with a member of the communicator (each
//     such group completes the instance the same way).
//
// The groups go in rounds (group.rounds): each replays what it can, then
// every group gives every other the messages it made, as bytes
// (replay_wire.go), through a Transport; the groups take the same
// decisions from the statuses that come with them. After a round in
// which no group sent anything, every rank reads ahead, as the single
// replay does when every rank waits (resolve's reading ahead of a sender
// waiting itself becomes a request to the sender's group, xAhead). The
// path does not depend on the order in which the ranks are replayed, so
// it is the single replay's, and so are the diagnostics: once every rank
// is replayed, the groups make the result together, through the same
// Transport (replay_result.go), the first group's being the result. The
// steps' ids are not the graph's (Shape.IDs is false): an instance's id
// needs its place among those of its lowest participant, which only
// that rank's group counted in full.
//
// This is the algorithm the analysis as an MPI job runs (docs/
// reconstruction.md, "The analysis as an MPI job"), in one process: the
// Transport is a board between two barriers (localExchange), and no
// group reads another's state.

// ReplayGroups replays srcs as ReplaySources does, in groups of ranks
// replayed concurrently (at most one group a rank; one group:
// ReplaySources).
func ReplayGroups(srcs []tracefmt.Source, w ReplayWeights, opts Options, groups int) (*ReplayResult, error) {
	groups = min(groups, len(srcs))
	if groups < 2 {
		return ReplaySources(srcs, w, opts)
	}
	// The groups by index of rank (newEngine sorts the ranks): contiguous
	// ranks.
	owner := make([]int32, len(srcs))
	for i := range owner {
		owner[i] = int32(i * groups / len(srcs))
	}
	names := &nameTable{m: make(map[string]nameInfo)}
	defs := &sharedDefs{m: make(map[commKey][]int32)}
	engines := make([]*engine, groups)
	defer func() {
		for _, e := range engines {
			if e != nil {
				e.close()
			}
		}
	}()
	for g := range engines {
		o := opts
		o.names = names
		o.owns = func(i int) bool { return owner[i] == int32(g) }
		e, err := newEngine(srcs, w, o)
		if err != nil {
			return nil, err
		}
		if o.measured != nil {
			e.measure(o.measured.offsets)
		}
		e.grp = newGroup(g, owner, e, defs, groups)
		engines[g] = e
	}
	x := newLocalExchange(groups)
	var res *ReplayResult
	errs := make([]error, groups)
	var wg sync.WaitGroup
	for g, e := range engines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := e.grp.run(framed{x.port(g)})
			if g == 0 {
				res = r
			}
			errs[g] = err
			var be *BatchError
			if errors.As(err, &be) {
				x.stop()
			}
		}()
	}
	wg.Wait()
	// Every group stops at the same round, for the first failed group's
	// error (its own error value, for errors.As) or the data's cycle.
	if err := firstErr(engines); err != nil {
		if res != nil {
			res.Close()
		}
		return nil, err
	}
	// A group stopped alone (BatchError) first: the others' errors say
	// they were stopped.
	slices.SortStableFunc(errs, func(a, b error) int {
		return cmp.Compare(btoi(errors.Is(a, errStopped)), btoi(errors.Is(b, errStopped)))
	})
	for _, err := range errs {
		if err != nil {
			if res != nil {
				res.Close()
			}
			return nil, err
		}
	}
	return res, nil
}

// ReplayGroupsMeasured is ReplayGroups under measured weights, the
// ranks' clocks aligned by offsets (ReplayMeasured's). What crosses groups
// beyond ReplayGroups' messages: the earliest end of MPI_Init (the first
// round's statuses), and whether a receive completed by an operation took
// a message to another group's rank (its sender's call takes effect at
// its start then, at its end otherwise: the destination's group says so
// when it pairs the message, or when asked, xRx), and when a nonblocking
// collective was done (nbAgree). Each group counts the wait states of its
// own ranks; the runs are added up.
func ReplayGroupsMeasured(srcs []tracefmt.Source, offsets map[int]int64, opts Options, groups int) (*ReplayResult, error) {
	if min(groups, len(srcs)) < 2 {
		return ReplayMeasured(srcs, offsets, opts)
	}
	opts.measured = &measuredOffsets{offsets}
	return ReplayGroups(srcs, nil, opts, groups)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ReplayPart replays srcs (every rank's source, sorted by rank) as group
// id of the groups of ranks bounds gives (group g replays srcs[bounds[g]:
// bounds[g+1]]; len(bounds)-1 groups), the groups going in rounds
// through t: each group, in a process of its own, reads only its ranks'
// sources (the others' give their headers). The first group's result is
// the single replay's (Shape.IDs apart, as ReplayGroups'); the others'
// is nil. Every group returns the first failed group's error.
func ReplayPart(srcs []tracefmt.Source, bounds []int, id int, w ReplayWeights, opts Options, t Transport) (*ReplayResult, error) {
	groups := len(bounds) - 1
	if groups < 1 || id < 0 || id >= groups || bounds[0] != 0 || bounds[groups] != len(srcs) {
		return nil, fmt.Errorf("internal error: reconstruct: group %d of bounds %v over %d ranks", id, bounds, len(srcs))
	}
	owner := make([]int32, len(srcs))
	for g := range groups {
		if bounds[g+1] < bounds[g] {
			return nil, fmt.Errorf("internal error: reconstruct: bounds %v", bounds)
		}
		for i := bounds[g]; i < bounds[g+1]; i++ {
			owner[i] = int32(g)
		}
	}
	o := opts
	o.names = nil
	o.owns = func(i int) bool { return owner[i] == int32(id) }
	e, err := newEngine(srcs, w, o)
	if err != nil {
		return nil, failPart(err, bounds, id, framed{t})
	}
	defer e.close()
	if o.measured != nil {
		e.measure(o.measured.offsets)
	}
	e.grp = newGroup(id, owner, e, &sharedDefs{m: make(map[commKey][]int32)}, groups)
	return e.grp.run(framed{t})
}

// run replays the group's ranks in rounds, then makes the result with
// the other groups.
func (g *group) run(t Transport) (*ReplayResult, error) {
	stalls, err := g.rounds(t)
	if err != nil {
		var be *BatchError
		if g.e.err != nil && !errors.As(err, &be) {
			return nil, g.e.err // its own error value (errors.As)
		}
		return nil, err // a BatchError stays one: the job must stop
	}
	return g.result(t, stalls)
}

// proxyRank is the source of another group's rank: its header.
type proxyRank struct {
	h    *tracefmt.Header
	name string // its file's
}

func (p proxyRank) Header() *tracefmt.Header    { return p.h }
func (p proxyRank) Strings() *tracefmt.Strings  { return new(tracefmt.Strings) }
func (p proxyRank) End() *tracefmt.End          { return nil }
func (p proxyRank) Pending() []tracefmt.Pending { return nil }
func (p proxyRank) Next() bool                  { return false }
func (p proxyRank) Event() *tracefmt.Event      { return nil }
func (p proxyRank) Err() error                  { return nil }

// firstErr is the error of the first group that stopped.
func firstErr(engines []*engine) error {
	for _, e := range engines {
		if e.err != nil {
			return e.err
		}
	}
	return nil
}

// group is an engine's place among the engines of ReplayGroups.
type group struct {
	id    int
	owner []int32 // by rank index: the group that replays the rank
	e     *engine
	defs  *sharedDefs
	out   [][]byte // by group: the messages for it, encoded (wire)
	nout  int      // how many, to all groups
	// reach are, by communicator, the other groups with a member.
	reach map[commKey][]int
	w     *wire
	// behind are the ranks asked to read ahead that read aheadMax events
	// and were not done.
	behind []*streamRank
	// Under measured weights: asks are other groups' messages to the
	// group's ranks whose senders wait to know whether a receive took
	// them (not yet paired); rxWaiting are the group's ranks that wait
	// for such an answer, woken after each exchange.
	asks      []*smsg
	rxWaiting []int32
	// nbWork are the nonblocking instances whose members the group reads
	// for the groups' agreement on when they were done (nbAgree).
	nbWork     []*sinst
	nbNoneSent map[rinstKey]bool // instances without participants here, answered
	// ending: the rounds are over (result); what never sent now goes
	// with the messages left.
	ending bool
}

// owns reports whether the group replays the rank of index i.
func (g *group) owns(i int) bool { return i >= 0 && g.owner[i] == int32(g.id) }

// sharedDefs are the communicators' members as the ranks of every group
// describe them (engine.defs, for all groups).
type sharedDefs struct {
	mu sync.Mutex
	m  map[commKey][]int32
}

func (g *group) defined(r *streamRank, ck commKey, members []int32) []int32 {
	g.defs.mu.Lock()
	defer g.defs.mu.Unlock()
	return define(g.defs.m, r, ck, members)
}

// remoteDef takes another group's description of ck's members (the
// first of its ranks'): as define, the replay declines when they differ.
func (g *group) remoteDef(ck commKey, members []int32) {
	g.defs.mu.Lock()
	defer g.defs.mu.Unlock()
	d, ok := g.defs.m[ck]
	switch {
	case !ok:
		g.defs.m[ck] = members
	case !slices.Equal(d, members):
		g.e.err = &NotStreamableError{Rank: int(members[0]), Why: fmt.Sprintf("%s has other members on another rank", commName(ck))}
	}
}

func (g *group) def(ck commKey) ([]int32, bool) {
	g.defs.mu.Lock()
	defer g.defs.mu.Unlock()
	l, ok := g.defs.m[ck]
	return l, ok
}

// xkind is what a message between groups says.
type xkind uint8

const (
	xSend   xkind = iota // a message sent to a rank of the group: its record
	xSettle              // the message's request said whether it was cancelled
	xValue               // its sending operation was replayed: its value
	xDone                // a rank's log ended
	xPart                // a collective call was read
	xArrive              // a rank arrived at a collective instance
	xAhead               // a rank of the group is asked to read ahead when it waits
	xRx                  // measured weights: whether a receive completed by an operation took the message
	xRxAsk               // measured weights: the message's sender waits to know that
	xNbAsk               // measured weights: a group needs when a nonblocking instance was done
	xNbDone              // measured weights: a group's members of it, read: the earliest completion seen
	xNever               // a message of a rank of the group no receive can take: its record
)

// xmsg is a message between groups (about rank index from).
type xmsg struct {
	kind xkind
	from int32
	// xSend, xSettle, xValue: the message.
	m   smsg
	key pchanKey
	// xDone.
	calls map[commKey]uint32
	end   rankEnd
	// xPart, xArrive.
	ik   rinstKey
	pr   partRec
	site uint32
	v    float64
	item int64
	nb   bool
	w    int64
	at   int64
	ev   int64
	init bool
}

// send encodes message x into the batch for group to: a message is a
// few dozen bytes there, where its record is 400.
func (g *group) send(to int, x xmsg) {
	g.out[to] = g.w.encode(g.out[to], g, to, &x)
	g.nout++
}

// sendRec: rank r sent m on channel key to the group to.
func (g *group) sendRec(r *streamRank, m *smsg, key pchanKey, to int) {
	g.send(to, xmsg{kind: xSend, from: r.idx, m: *m, key: key})
	delete(r.ahead, key) // what was asked, or what makes its rank ask again
}

// aheadMax is the most events a rank reads ahead at one request.
const aheadMax = 1024

// waitOn: rank r waits for a record of px, another group's rank, on
// channel key. It is woken by the record (its receive's waited) or px's
// end (waiting); px's group is asked to read px ahead if px waits, as
// resolve reads a sender of the same group ahead.
func (g *group) waitOn(r, px *streamRank, key pchanKey) {
	if px.waiting == nil {
		px.waiting = make(map[int32]bool)
	}
	px.waiting[r.idx] = true
	g.send(int(g.owner[px.idx]), xmsg{kind: xAhead, from: px.idx, key: key})
}

// readAhead reads rank r of the group ahead, while it waits, until it
// sent or settled a message on each channel asked, or its log ends
// (aheadMax events at most: the receivers ask again if what came is not
// yet what they wait for).
func (g *group) readAhead(r *streamRank) (read bool) {
	e := g.e
	for n := 0; n < aheadMax && !r.done && e.err == nil && len(r.ahead) > 0; n++ {
		e.read(r, 1)
		read = true
	}
	if r.done || e.err != nil {
		r.ahead = nil
	}
	if len(r.ahead) > 0 && !slices.Contains(g.behind, r) {
		g.behind = append(g.behind, r) // more before the group waits
	}
	return read
}

// goAhead reads ahead, aheadMax events each, the ranks asked for more
// that still wait, and the destinations of messages asked about; false
// when it read nothing.
func (g *group) goAhead() bool {
	l := g.behind
	g.behind = nil
	read := len(g.asks) > 0 && g.answerAsks()
	read = len(g.nbWork) > 0 && g.nbAll() || read
	for _, r := range l {
		if len(r.ahead) > 0 && (r.blocked || r.finished) && !r.done {
			read = g.readAhead(r) || read
		}
	}
	return read
}

// received is engine.received of message m to another group's rank:
// what its group said, or rxUnknown, the sender waiting (after asking,
// once: the answer of a message paired comes unasked, answer).
func (g *group) received(m *smsg) uint8 {
	if m.rx != rxUnknown {
		return m.rx
	}
	if !m.asked {
		m.asked = true
		g.send(g.destGroup(m), xmsg{kind: xRxAsk, from: m.from, m: smsg{id: m.id}})
	}
	g.wait(g.e.ranks[m.from])
	return rxUnknown
}

// wait makes rank r, which waits for another group to say something,
// try again after the next exchange.
func (g *group) wait(r *streamRank) {
	if !r.rxWait {
		r.rxWait = true
		g.rxWaiting = append(g.rxWaiting, r.idx)
	}
}

// answer tells the group of m's sender, another group's rank, whether a
// receive completed by an operation took m (it is paired, or known never
// to be).
func (g *group) answer(m *smsg) {
	rx := rxNotTaken
	if m.rcv != nil {
		rx = taken(m.rcv.ev >= 0)
	}
	g.send(int(g.owner[m.from]), xmsg{kind: xRx, from: m.from, m: smsg{id: m.id, rx: rx}})
}

// answerAsks answers the asks whose messages are paired or can no longer
// be (their destination's log ended with no receive left on their
// channel), and reads the destinations of the others ahead (aheadMax
// events each); false when it read nothing.
func (g *group) answerAsks() (read bool) {
	e := g.e
	keep := g.asks[:0]
	for _, m := range g.asks {
		if m.rcv != nil {
			continue // answered when paired
		}
		d := e.ranks[e.index(int(m.dst))]
		switch {
		case d.done && m.c.rh == len(m.c.recvs):
			g.answer(m)
			continue
		case !d.done:
			for n := 0; n < aheadMax && !d.done && m.rcv == nil && e.err == nil; n++ {
				e.read(d, 1)
				read = true
			}
		}
		if m.rcv == nil {
			keep = append(keep, m)
		}
	}
	clear(g.asks[len(keep):])
	g.asks = keep
	return read
}

// never sends the record of message m, of another group's rank, which no
// receive can take (its destination's log ended), to its sender's group:
// the message is then not kept to the end for its diagnostic.
func (g *group) never(m *smsg) {
	g.send(int(g.owner[m.from]), xmsg{kind: xNever, from: m.from, m: *m})
}

// destGroup is the group of message m's destination.
func (g *group) destGroup(m *smsg) int { return int(g.owner[g.e.index(int(m.dst))]) }

func (g *group) settle(r *streamRank, m *smsg) {
	g.send(g.destGroup(m), xmsg{kind: xSettle, from: r.idx, m: smsg{id: m.id, cancelled: m.cancelled}})
	if r.ahead != nil {
		delete(r.ahead, pchanKey{ck: r.p.keys[m.key.comm], src: int32(r.rank), dst: m.dst, tag: m.key.tag})
	}
}

func (g *group) value(r *streamRank, m *smsg) {
	g.send(g.destGroup(m), xmsg{kind: xValue, from: r.idx, m: smsg{id: m.id, val: m.val, item: m.item}})
}

// done: rank r's log ended; every other group hears of it.
func (g *group) done(r *streamRank) {
	for to := range g.out {
		if to != g.id {
			g.send(to, xmsg{kind: xDone, from: r.idx, calls: r.finalCalls, end: r.end})
		}
	}
}

// groupsOf returns the other groups with a member of in's communicator.
func (g *group) groupsOf(in *sinst) []int {
	l, ok := g.reach[in.key.ck]
	if ok {
		return l
	}
	seen := make([]bool, len(g.out))
	g.e.logged(in.members, func(s *streamRank) { seen[g.owner[s.idx]] = true })
	for to, ok := range seen {
		if ok && to != g.id {
			l = append(l, to)
		}
	}
	g.reach[in.key.ck] = l
	return l
}

// nbAgree is a group's part in the groups' agreement on when a
// nonblocking instance was done, under measured weights (the single
// replay's nbTimes): once the instance is complete (every member's
// posting call known, so its last arrival), each group with members reads
// its own participants to the calls that completed the instance, or as
// far as the earliest completion known makes needless, and tells the
// others the earliest it saw (xNbDone); every group takes the earliest
// of all. A group that needs the instance's times asks the others to
// start (xNbAsk).
type nbAgree struct {
	started bool // the group works on it (g.nbWork)
	self    bool // its own participants read, its report sent
	// The reports (the group's own once sent, and the other groups',
	// each counted once, by group: from): whether one saw a completion,
	// and the earliest, on rank 0's clock. Every group times the
	// instance from the same reports.
	from    []bool
	reports int
	has     bool
	min     int64
	lastT   int64 // the last posting call's end, once set (lastSet)
	lastSet bool
}

// report takes group from's report; false when it had it already.
func (a *nbAgree) report(from, groups int, has bool, end int64) bool {
	if a.from == nil {
		a.from = make([]bool, groups)
	}
	if from < 0 || from >= groups || a.from[from] {
		return false
	}
	a.from[from] = true
	a.reports++
	if has && (!a.has || end < a.min) {
		a.has, a.min = true, end
	}
	return true
}

// known returns the earliest completion of in the group knows of, its
// own (read so far) and the reports'.
func (a *nbAgree) known(in *sinst) (int64, bool) {
	t, ok := a.min, a.has
	if len(in.compl) > 0 && (!ok || in.exitT < t) {
		t, ok = in.exitT, true
	}
	return t, ok
}

// nbStart makes the group work on instance in.
func (g *group) nbStart(in *sinst) {
	if !in.nb.started {
		in.nb.started = true
		g.nbWork = append(g.nbWork, in)
	}
}

// nbTimes is engine.nbTimes of complete instance in replayed in groups:
// whether the groups agreed on its times (asking them, the first time).
func (g *group) nbTimes(in *sinst) bool {
	if !in.nb.started {
		for _, to := range g.groupsOf(in) {
			g.send(to, xmsg{kind: xNbAsk, ik: in.key})
		}
		g.nbStart(in)
	}
	g.nbStep(in)
	return in.timed
}

// nbNone answers an ask about instance ik, of which the group has no
// participant: no completion seen, to every other group (it may not know
// the communicator's members; a group without the instance ignores it,
// one with it counts the group among its members').
func (g *group) nbNone(ik rinstKey) {
	if g.nbNoneSent[ik] {
		return
	}
	if g.nbNoneSent == nil {
		g.nbNoneSent = make(map[rinstKey]bool)
	}
	g.nbNoneSent[ik] = true
	for to := range g.out {
		if to != g.id {
			g.send(to, xmsg{kind: xNbDone, ik: ik, w: int64(g.id)})
		}
	}
}

// nbAll steps every instance the group works on; true when it read
// anything.
func (g *group) nbAll() (read bool) {
	keep := g.nbWork[:0]
	for _, in := range g.nbWork {
		read = g.nbStep(in) || read
		if !in.timed {
			keep = append(keep, in)
		}
	}
	clear(g.nbWork[len(keep):])
	g.nbWork = keep
	return read
}

// nbStep reads the group's own participants of in (aheadMax events each
// at most), sends its report once they are read, and times in once every
// other group's report came; true when it read anything.
func (g *group) nbStep(in *sinst) (read bool) {
	e := g.e
	if in.timed || !in.done || e.err != nil {
		return false
	}
	a := in.nb
	if !a.lastSet {
		for j := range in.parts {
			// A posting call arrives at its end.
			if t := in.parts[j].end + e.off[e.index(int(in.who[j]))]; j == 0 || t > a.lastT {
				a.lastT = t
			}
		}
		a.lastSet = true
	}
	lastT := a.lastT
	if !a.self {
		for _, w := range in.who {
			i := e.index(int(w))
			s := e.ranks[i]
			for n := 0; !s.remote && !in.compl[w] && !s.done && e.err == nil; n++ {
				if t, ok := a.known(in); needless(t, ok, lastT, s.readAt+e.off[i]) {
					break
				}
				if n == aheadMax {
					return true // more the next time
				}
				e.read(s, 1)
				read = true
			}
		}
		if e.err != nil {
			return read
		}
		a.self = true
		has := len(in.compl) > 0
		a.report(g.id, len(g.out), has, in.exitT)
		for _, to := range g.groupsOf(in) {
			g.send(to, xmsg{kind: xNbDone, ik: in.key, nb: has, at: in.exitT, w: int64(g.id)})
		}
	}
	if a.reports < len(g.groupsOf(in))+1 {
		return read
	}
	// The reports' earliest (not what the group read since its own).
	in.lastT = lastT
	in.doneT = lastT
	if a.has && a.min > lastT {
		in.doneT = a.min
	}
	in.timed = true
	delete(e.nbOpen, in.key)
	in.parts, in.who, in.compl, in.sites = nil, nil, nil, nil // complete used them
	return read
}

// part: rank r's collective call pr of instance in was read.
func (g *group) part(in *sinst, r *streamRank, pr *partRec, site uint32) {
	for _, to := range g.groupsOf(in) {
		g.send(to, xmsg{kind: xPart, from: r.idx, ik: in.key, pr: *pr, site: site})
	}
}

// arrive: rank r arrived at in (engine.arrive's arguments).
func (g *group) arrive(in *sinst, r *streamRank, v float64, item int64, nb bool, w, at int64, pt *spart, init bool) {
	for _, to := range g.groupsOf(in) {
		g.send(to, xmsg{kind: xArrive, from: r.idx, ik: in.key, v: v, item: item, nb: nb, w: w, at: at, site: pt.site, ev: pt.ev, init: init})
	}
}

// apply takes a message of another group.
func (g *group) apply(x *xmsg) {
	e := g.e
	px := e.ranks[x.from]
	switch x.kind {
	case xSend:
		m := new(smsg)
		*m = x.m
		m.from, m.remote, m.rcv, m.waiter, m.visited = x.from, false, nil, 0, false
		if px.rmsgs == nil {
			px.rmsgs = make(map[int32]*smsg)
		}
		px.rmsgs[m.id] = m
		m.c = e.channel(px, x.key)
		m.c.addSend(e, m)
		e.pair(m.c)
	case xSettle:
		m := px.rmsgs[x.m.id]
		if m == nil {
			e.err = fmt.Errorf("internal error: reconstruct: rank %d's message %d settled before it was sent", px.rank, x.m.id)
			return
		}
		m.settled, m.cancelled = true, x.m.cancelled
		e.pair(m.c)
		g.forget(px, m)
	case xValue:
		m := px.rmsgs[x.m.id]
		if m == nil {
			e.err = fmt.Errorf("internal error: reconstruct: rank %d's message %d valued before it was sent", px.rank, x.m.id)
			return
		}
		m.val, m.item, m.visited = x.m.val, x.m.item, true
		if m.waiter > 0 {
			e.enqueue(m.waiter - 1)
		}
		g.forget(px, m)
	case xDone:
		px.done, px.finished = true, true
		px.finalCalls, px.end = x.calls, x.end
		for i := range px.waiting {
			e.enqueue(i)
		}
		px.waiting = nil
		e.ended(px, x.calls)
	case xRx:
		// px is the group's own rank, the message one of its sent
		// messages not yet replayed (its outbox, by id), or replayed.
		l := px.outbox[px.oh:]
		if i, ok := slices.BinarySearchFunc(l, x.m.id, func(m *smsg, id int32) int { return cmp.Compare(m.id, id) }); ok {
			l[i].rx = x.m.rx
		}
	case xRxAsk:
		m := px.rmsgs[x.m.id]
		if m == nil {
			e.err = fmt.Errorf("internal error: reconstruct: rank %d's message %d asked about before it was sent", px.rank, x.m.id)
			return
		}
		if m.rcv != nil {
			g.answer(m)
			return
		}
		g.asks = append(g.asks, m)
	case xNbAsk, xNbDone:
		in := e.nbOpen[x.ik]
		if in == nil {
			// None of the group's members made the call (their logs
			// ended short of it; the instance is complete where it is
			// asked about): the group saw no completion.
			if x.kind == xNbAsk {
				g.nbNone(x.ik)
			}
			return
		}
		if x.kind == xNbDone && !in.nb.report(int(x.w), len(g.out), x.nb, x.at) {
			e.err = fmt.Errorf("internal error: reconstruct: group %d's second report on a nonblocking instance on %s", x.w, commName(x.ik.ck))
			return
		}
		g.nbStart(in)
	case xNever:
		// px is the group's own rank: the message's record joins its
		// others that no receive took.
		if px.remote {
			e.err = fmt.Errorf("internal error: reconstruct: a record of rank %d's message not received, sent to a group that does not replay it", px.rank)
			return
		}
		px.neverRecv.add(x.m.unmatched())
	case xAhead:
		// px is the group's own rank.
		if px.done {
			return // its end is on its way
		}
		if px.ahead == nil {
			px.ahead = make(map[pchanKey]bool)
		}
		px.ahead[x.key] = true
		if px.blocked || px.finished {
			g.readAhead(px)
		}
	case xPart:
		in := e.insts[x.ik]
		if in == nil {
			mem, ok := e.memberSet(x.ik.ck)
			if !ok {
				e.err = fmt.Errorf("internal error: reconstruct: a collective on %s, whose members this group does not know", commName(x.ik.ck))
				return
			}
			in = e.newInst(x.ik, mem)
		}
		e.join(in, int32(px.rank), &x.pr, x.site)
	case xArrive:
		in := e.insts[x.ik]
		if in == nil {
			e.err = fmt.Errorf("internal error: reconstruct: rank %d arrived at an instance on %s this group does not have", px.rank, commName(x.ik.ck))
			return
		}
		e.arrival(in, x.from, x.v, x.item, x.nb, x.w, x.at, x.site, x.ev, x.init)
	}
}

// forget drops message m of rank px once it is settled and valued.
func (g *group) forget(px *streamRank, m *smsg) {
	if m.settled && m.visited {
		delete(px.rmsgs, m.id)
	}
}

// Transport carries the batches of a replay in groups between the
// groups' processes: Alltoall, called by every group in the same round,
// gives each group what every group gave it (send[g] for group g; its own
// is its status only). The analysis as an MPI job's is MPI_Alltoallv.
type Transport interface {
	Alltoall(send [][]byte) ([][]byte, error)
}

func newGroup(id int, owner []int32, e *engine, defs *sharedDefs, groups int) *group {
	g := &group{id: id, owner: owner, e: e, defs: defs, out: make([][]byte, groups), reach: make(map[commKey][]int), w: newWire(groups)}
	for i, r := range e.ranks {
		if !r.remote {
			e.enqueue(int32(i))
		}
	}
	return g
}

// rounds runs the group's replay in rounds with the other groups: in
// each, every group replays what it can, then the groups exchange what
// they produced and each takes what came (one Alltoall, every group's
// status with its batches). After a round in which no group sent
// anything, every group is waiting and nothing is on its way: in the
// next, every rank not yet replayed reads ahead, an event each and twice
// as many each time that leaves every group without work, as the single
// replay does; when no rank is left, the replay is over; when no rank
// had anything left to read and no group has work, the data has a cycle.
// Every group takes the same decisions from the same statuses: they stop
// together, and a group that fails stops them all (the first failed
// group's error).
func (g *group) rounds(t Transport) (stalls int, err error) {
	e := g.e
	chunk := 1
	quiet := false // no group sent anything: every rank reads ahead
	// Under measured weights the first round replays nothing: the groups
	// read their ranks to MPI_Init and agree on when the first ended,
	// which every rank's replay starts from (measuredInit).
	initRound := e.meas
	for {
		var st roundStatus
		if initRound {
			st.t0, st.hasT0 = e.initEnds()
		} else {
			g.work()
		}
		if quiet && e.err == nil {
			for _, r := range e.ranks {
				if r.remote || r.finished {
					continue
				}
				st.stuck++
				if !r.done {
					e.read(r, chunk)
					st.read = true
				}
			}
			st.queued = len(e.runq) > 0 || g.pending() > 0
			if st.stuck > 0 && !st.read && !st.queued && e.err == nil {
				st.stuckErr = e.stuckError().Error()
			}
		}
		if e.err != nil {
			st.failed, st.err = true, e.err.Error()
			var ns *NotStreamableError
			if errors.As(e.err, &ns) {
				st.decl, st.declRank, st.err = true, ns.Rank, ns.Why
			}
		}
		all, err := g.exchange(t, &st)
		if err != nil {
			return 0, err
		}
		sent, stuck, read, queued := 0, 0, false, false
		for _, s := range all {
			if s.failed {
				if s.decl {
					return 0, &NotStreamableError{Rank: s.declRank, Why: s.err}
				}
				return 0, errors.New(s.err)
			}
			sent += s.sent
			stuck += s.stuck
			read = read || s.read
			queued = queued || s.queued
		}
		if e.err != nil {
			quiet = false // the next round says so
			continue
		}
		if initRound {
			initRound = false
			t0, set := int64(0), false
			for _, s := range all {
				if s.hasT0 && (!set || s.t0 < t0) {
					t0, set = s.t0, true
				}
			}
			if set {
				e.alignInit(t0)
			}
			continue
		}
		if !quiet {
			quiet = sent == 0
			continue
		}
		if stuck == 0 {
			return stalls, nil
		}
		if !read && !queued {
			for _, s := range all {
				if s.stuckErr != "" {
					return 0, errors.New(s.stuckErr)
				}
			}
			return 0, fmt.Errorf("the task graph has a cycle")
		}
		stalls++
		if !queued {
			chunk = min(2*chunk, 1<<20)
		} else {
			chunk = 1
		}
		quiet = !queued
	}
}

// work replays what the group can without the other groups, or until
// its batches are full.
func (g *group) work() {
	for {
		g.e.drain()
		if g.e.err != nil || g.full() || !g.goAhead() {
			return
		}
	}
}

// batchFull is how many messages a group sends in a round at most, give
// or take a rank's yieldTurns operations: a rank that never waits for
// another group, sending to one, stops there until the next round
// instead of sending its whole log at once (which the other group would
// hold until its ranks took it). A variable for the tests (0 counts as
// 1: a group with nothing to send is never full).
var batchFull = 1 << 14

// full says whether the group's batches are full for this round.
func (g *group) full() bool { return g.pending() >= max(batchFull, 1) }

// pending counts the messages the group has to send.
func (g *group) pending() int { return g.nout }

// exchange sends the group's messages and its status st, a batch to
// each group, and takes the batches of the others: their statuses, by
// group, and their messages, applied.
func (g *group) exchange(t Transport, st *roundStatus) ([]roundStatus, error) {
	st.sent = g.pending()
	send := make([][]byte, len(g.out))
	for to, l := range g.out {
		b := appendStatus(make([]byte, 0, len(l)+64), st)
		send[to] = append(b, l...)
		g.out[to] = l[:0]
	}
	g.nout = 0
	recv, err := t.Alltoall(send)
	if err != nil {
		return nil, err
	}
	if len(recv) != len(g.out) {
		return nil, fmt.Errorf("internal error: reconstruct: %d batches for %d groups", len(recv), len(g.out))
	}
	// A batch that cannot be read stops the group at once (BatchError:
	// whatever runs the groups stops them all).
	all := make([]roundStatus, len(recv))
	for from, b := range recv {
		d := recDec{b: b}
		all[from] = d.status()
		if d.bad {
			return nil, badBatch(from)
		}
		if from == g.id {
			continue
		}
		if err := g.w.decode(g, from, &d); err != nil {
			return nil, err
		}
	}
	// The ranks waiting for another group to say whether a message was
	// received try again.
	for _, i := range g.rxWaiting {
		g.e.ranks[i].rxWait = false
		g.e.enqueue(i)
	}
	g.rxWaiting = g.rxWaiting[:0]
	return all, nil
}

// framed is the Transport t with each batch framed by its length: a batch
// cut short or followed by other bytes is a BatchError, found before it
// is read (a batch cut at the end of a message would read as a shorter
// one).
type framed struct{ t Transport }

func (f framed) Alltoall(send [][]byte) ([][]byte, error) {
	out := make([][]byte, len(send))
	for to, b := range send {
		out[to] = append(binary.AppendUvarint(make([]byte, 0, len(b)+binary.MaxVarintLen64), uint64(len(b))), b...)
	}
	recv, err := f.t.Alltoall(out)
	if err != nil {
		return nil, err
	}
	for from, b := range recv {
		n, k := binary.Uvarint(b)
		if k <= 0 || n != uint64(len(b)-k) {
			return nil, badBatch(from)
		}
		recv[from] = b[k:]
	}
	return recv, nil
}

// localExchange is the Transport of groups in one process (ReplayGroups):
// a board of batches between two barriers.
type localExchange struct {
	n       int
	board   [][][]byte // by sender: its batches
	arrived atomic.Int32
	gen     atomic.Uint64
	stopped atomic.Bool // by stop: every exchange fails
	mu      sync.Mutex
	cond    *sync.Cond
}

// errStopped is the error of an exchange of a stopped localExchange.
var errStopped = errors.New("internal error: reconstruct: the replay in groups was stopped by another group's error")

// stop makes every exchange, waiting or to come, fail: a group stopped
// alone (BatchError) stops the others.
func (x *localExchange) stop() {
	x.mu.Lock()
	x.stopped.Store(true)
	x.cond.Broadcast()
	x.mu.Unlock()
}

func newLocalExchange(n int) *localExchange {
	x := &localExchange{n: n, board: make([][][]byte, n)}
	x.cond = sync.NewCond(&x.mu)
	return x
}

// barrierSpin is how many times a group yields, waiting at the barrier,
// before it sleeps: a round is often shorter than a sleep and a wake.
const barrierSpin = 200

// barrier waits for every group.
func (x *localExchange) barrier() {
	g := x.gen.Load()
	if int(x.arrived.Add(1)) == x.n {
		x.arrived.Store(0)
		x.mu.Lock()
		x.gen.Add(1)
		x.cond.Broadcast()
		x.mu.Unlock()
		return
	}
	for range barrierSpin {
		if x.gen.Load() != g || x.stopped.Load() {
			return
		}
		runtime.Gosched()
	}
	x.mu.Lock()
	for x.gen.Load() == g && !x.stopped.Load() {
		x.cond.Wait()
	}
	x.mu.Unlock()
}

type localPort struct {
	x  *localExchange
	id int
}

func (x *localExchange) port(id int) Transport { return localPort{x, id} }

func (p localPort) Alltoall(send [][]byte) ([][]byte, error) {
	x := p.x
	if x.stopped.Load() {
		return nil, errStopped
	}
	x.board[p.id] = send
	x.barrier()
	if x.stopped.Load() {
		return nil, errStopped
	}
	recv := make([][]byte, x.n)
	for from := range recv {
		recv[from] = x.board[from][p.id]
	}
	x.barrier() // the board is read: the next round may write it
	if x.stopped.Load() {
		return nil, errStopped
	}
	return recv, nil
}

// failPart takes the part of group id in the first round of a replay in
// groups it cannot start (err): the other groups stop on its error.
func failPart(err error, bounds []int, id int, t Transport) error {
	st := roundStatus{failed: true, err: err.Error()}
	send := make([][]byte, len(bounds)-1)
	for to := range send {
		send[to] = appendStatus(nil, &st)
	}
	recv, xerr := t.Alltoall(send)
	if xerr != nil {
		return xerr
	}
	// The first failed group's error (as rounds returns it).
	for from, b := range recv {
		d := recDec{b: b}
		if s := d.status(); s.failed && from != id && from < id {
			if s.decl {
				return &NotStreamableError{Rank: s.declRank, Why: s.err}
			}
			return errors.New(s.err)
		}
	}
	return err
}
