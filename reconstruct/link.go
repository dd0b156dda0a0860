package reconstruct

import (
	"cmp"
	"maps"
	"math"
	"slices"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// Streaming matching.
//
// A Linker pairs the messages and groups the collective calls of a trace
// while its ranks' events are read, in any interleaving of the ranks
// (typically a merge by time), without the task graph. It is Build's
// matcher run as the records come: each rank's events go through the same
// pass as Build's (rankPass: requests, wildcards, persistent requests,
// matched probes, cancellations, communicators), whose records it takes
// as they come (matchHook); the k-th receive posted on a channel then
// takes the k-th message sent on it, and the k-th collective call of each
// member of a communicator is one instance (match.go's rule, applied
// online as the streaming replay applies it). A completed receive takes
// its place on its channel once no receive its rank posted before it may
// still take that place (rankPass.gate: a live wildcard may, until its
// completion says where), and a message is paired once its request says
// whether it was cancelled; both wait in memory until then. So what it
// keeps is bounded by what is in flight — the messages sent and not yet
// received (or received and not yet sent, in the order read), the live
// requests and receives held back, and the collective instances some
// members have reached and others not yet — plus each rank's pass.
//
// It reports each pair and instance once, when it is complete, with the
// Endpoints the caller gave the events. Diagnostics are Build's business:
// the Linker says nothing about bad data, it only leaves out what cannot
// be matched.
//
// Lost events (RankLinker.Lost): Build places a rank's calls after a loss
// from the end of its log (gaps.go), which a reader in order cannot know
// before the end. The Linker makes no pair Build does not make: it keeps
// the positions Build counts from the start (segment 0: the sends and
// collective calls before the first loss, the receives posted before it
// that Build places), and the calls after the loss take no part. The
// instances a rank that lost events will not reach no longer wait for it.
// So its pairs and instances are Build's, less those of the calls after a
// loss.

// Endpoint is what a caller attaches to an event it passes to a Linker,
// handed back in the pairs and instances the event takes part in.
type Endpoint struct {
	Rank   int
	Thread int
	// Event is the event's index in its rank's stream.
	Event int64
	// At is the caller's (a slice's middle on the common clock, say).
	At int64
	// Start orders the members of a collective instance: the last to
	// arrive has the greatest (the lowest rank among equals).
	Start int64
	// Keep is the caller's.
	Keep bool
}

// A Linker matches a trace's messages and collective calls on the fly.
type Linker struct {
	size   int
	logged []bool // by world rank: the rank has a log (is read)
	nWorld int    // ranks with a log
	names  *nameTable

	// Message is called for each matched message, with the endpoints of
	// the event that sent it and of the event that completed its receive.
	Message func(send, recv *Endpoint)
	// Collective is called for each collective instance, once all its
	// members with a log arrived (or, for instances some never reach, at
	// Finish), with its members' endpoints in rank order and the index
	// of the last to arrive.
	Collective func(members []Endpoint, last int)

	chans   map[gkey]*linkChan
	members map[commKey][]int32 // by communicator: its members with a log (the first description read)
	insts   map[instKey][]Endpoint

	// stopped: by rank that lost events, the collective calls it made on
	// each communicator before (see RankLinker.Lost).
	stopped map[int]map[commKey]int
}

// gkey is a point-to-point channel of the world: communicator, source,
// destination and tag.
type gkey struct {
	comm     commKey
	src, dst int32
	tag      int64
}

type instKey struct {
	comm commKey
	k    int
}

// linkSend is a message sent.
type linkSend struct {
	ep        Endpoint
	from      *RankLinker
	ch        gkey
	req       uint64 // its request; 0 blocking
	id        int32  // its number among its rank's messages
	settled   bool   // its request says whether it was cancelled
	cancelled bool
}

// linkRecv is a receive that takes a place on its channel; hasEP when an
// event completed it.
type linkRecv struct {
	post  uint32
	key   chanKey // the rank's receive channel
	hasEP bool
	ep    Endpoint
}

type linkChan struct {
	sends []*linkSend
	recvs []*linkRecv
}

// NewLinker returns a Linker for a world of size ranks of which ranks
// have a log.
func NewLinker(size int, ranks []int) *Linker {
	l := &Linker{size: size, logged: make([]bool, size), chans: map[gkey]*linkChan{},
		members: map[commKey][]int32{}, insts: map[instKey][]Endpoint{},
		names: &nameTable{m: make(map[string]nameInfo)}}
	for _, r := range ranks {
		if r >= 0 && r < size && !l.logged[r] {
			l.logged[r] = true
			l.nWorld++
		}
	}
	return l
}

// RankLinker is the consumer of one rank's events.
type RankLinker struct {
	l     *Linker
	rank  int
	p     *rankPass
	ops   uint32   // operations the pass added (linkOps)
	cur   Endpoint // the endpoint of the event being passed
	inEv  bool     // an event is being passed
	pend  []*linkRecv
	bl    []blocker
	relN  int // requests live at the last release
	relC  int // cancels at the last release
	fresh bool
	// unsettled: the messages whose requests may still cancel them, by id.
	unsettled []*linkSend
	sendSeq   int32
	collSeq   map[commKey]int
	loss      *tracefmt.Loss // told by Lost, for the next event
	lost      bool           // events were lost: later calls take no part
	lostPost  uint32         // receives posted after this take no part (lost)
	finished  bool
}

// Rank returns the consumer of rank's events; strs are its strings.
func (l *Linker) Rank(rank int, strs *tracefmt.Strings) *RankLinker {
	rl := &RankLinker{l: l, rank: rank, collSeq: map[commKey]int{}}
	rl.p = newRankPass(rank, l.size, "", linkOps{rl}, l.names, strs)
	rl.p.hook(rl)
	return rl
}

// Lost tells the consumer that events of the rank were lost just before
// its next event: from there on the rank's calls take no part in the
// matching (see "Lost events" above).
func (rl *RankLinker) Lost(l tracefmt.Loss) {
	if !rl.finished {
		rl.loss = &l
	}
}

// Event consumes the rank's next event; ep is handed back in the pairs
// and instances it takes part in.
func (rl *RankLinker) Event(ev *tracefmt.Event, ep Endpoint) {
	if rl.finished {
		return
	}
	p := rl.p
	if l := rl.loss; l != nil {
		rl.loss = nil
		p.Lost(*l, ev.Thread)
		if p.lossy() && !rl.lost {
			rl.stop()
		}
	}
	rl.cur, rl.inEv = ep, true
	p.Event(ev)
	rl.inEv = false
	rl.afterEvent(ev)
}

// stop is the rank's first loss: the instances that waited for it may
// be complete now.
func (rl *RankLinker) stop() {
	rl.lost = true
	rl.lostPost = rl.p.postSeq
	if w := rl.p.loss.wildLost; w != 0 {
		// A wildcard persistent receive active at the loss: its
		// completion may be lost, so what was posted after it has no
		// place (Build's wildLimit).
		rl.lostPost = min(rl.lostPost, w)
		rl.dropAfter(w)
	}
	l := rl.l
	if l.stopped == nil {
		l.stopped = map[int]map[commKey]int{}
	}
	l.stopped[rl.rank] = maps.Clone(rl.collSeq)
	for _, k := range slices.SortedFunc(maps.Keys(l.insts), cmpInstKey) {
		if n, ok := l.expectedAt(k); ok && len(l.insts[k]) >= n {
			l.emitInst(k)
		}
	}
}

// dropAfter makes the receives held back and posted after post take no
// place.
func (rl *RankLinker) dropAfter(post uint32) {
	keep := rl.pend[:0]
	for _, x := range rl.pend {
		if x.post <= post {
			keep = append(keep, x)
		}
	}
	clear(rl.pend[len(keep):])
	rl.pend = keep
}

func cmpInstKey(a, b instKey) int {
	return cmp.Or(cmp.Compare(a.comm.gid, b.comm.gid), cmp.Compare(a.comm.self, b.comm.self), cmp.Compare(a.k, b.k))
}

// afterEvent takes the collective calls the event made, and passes on
// what it settled.
func (rl *RankLinker) afterEvent(ev *tracefmt.Event) {
	p := rl.p
	for i := range p.parts {
		if !rl.lost {
			rl.arrive(p.keys[p.parts[i].comm])
		}
	}
	p.partBase += len(p.parts)
	p.parts = p.parts[:0]
	if len(rl.unsettled) > 0 && (ev.Req() != 0 || len(ev.Reqs) > 0 || len(ev.Completions) > 0) {
		rl.settleAll()
	}
	// Only a receive recorded, or a live one gone (completed, freed,
	// cancelled), can let a receive take its place.
	if len(rl.pend) > 0 && (rl.fresh || p.reqs.n != rl.relN || p.cancels != rl.relC) {
		rl.release()
	}
	rl.fresh = false
}

// settleAll pairs the messages whose requests now say whether they were
// cancelled, and forgets them.
func (rl *RankLinker) settleAll() {
	keep := rl.unsettled[:0]
	for _, m := range rl.unsettled {
		if rl.l.settled(m) {
			rl.l.match(m.ch)
		} else {
			keep = append(keep, m)
		}
	}
	clear(rl.unsettled[len(keep):])
	rl.unsettled = keep
}

// release passes the receives held back that may now take their places.
func (rl *RankLinker) release() {
	p := rl.p
	rl.pend, rl.bl = releaseHeld(p, rl.pend, rl.bl, func(x *linkRecv) (uint32, chanKey) { return x.post, x.key }, func(x *linkRecv, k chanKey) {
		ch := gkey{comm: p.keys[k.comm], src: k.peer, dst: int32(rl.rank), tag: k.tag}
		q := rl.l.queue(ch)
		q.recvs = append(q.recvs, x)
		rl.l.match(ch)
	})
	rl.relN, rl.relC = p.reqs.n, p.cancels
}

// The pass's records (matchHook).

func (rl *RankLinker) send(ck commKey, k chanKey, _ uint32, _ uint64, req uint64, _ uint32, _ int64) int32 {
	if rl.lost || !rl.inEv || rl.sendSeq == math.MaxInt32 {
		return -1
	}
	m := &linkSend{ep: rl.cur, from: rl, ch: gkey{comm: ck, src: int32(rl.rank), dst: k.peer, tag: k.tag},
		req: req, id: rl.sendSeq, settled: req == 0}
	rl.sendSeq++
	q := rl.l.queue(m.ch)
	q.sends = append(q.sends, m)
	if req != 0 {
		// Its request does not know it yet: settled after the event.
		rl.unsettled = append(rl.unsettled, m)
		return m.id
	}
	rl.l.match(m.ch)
	return m.id
}

func (rl *RankLinker) recv(rc recvRec, k chanKey) {
	if rc.coll() || rl.lost && rc.post > rl.lostPost {
		return
	}
	x := &linkRecv{post: rc.post, key: k}
	if rc.node != noNode && rl.inEv {
		x.hasEP, x.ep = true, rl.cur
	}
	i, _ := slices.BinarySearchFunc(rl.pend, rc.post, func(a *linkRecv, p uint32) int { return cmp.Compare(a.post, p) })
	rl.pend = slices.Insert(rl.pend, i, x)
	rl.fresh = true
}

func (rl *RankLinker) cancel(id int32) {
	if m := rl.unsettledMsg(id); m != nil {
		m.cancelled = true
	}
}

// settle pairs message id as its request completes (settleAll drops it from the unsettled): pairs are reported in the order
// of the completions.
func (rl *RankLinker) settle(id int32) {
	if m := rl.unsettledMsg(id); m != nil {
		m.settled = true
		rl.l.match(m.ch)
	}
}

func (rl *RankLinker) unsettledMsg(id int32) *linkSend {
	if i, ok := slices.BinarySearchFunc(rl.unsettled, id, func(m *linkSend, id int32) int { return cmp.Compare(m.id, id) }); ok {
		return rl.unsettled[i]
	}
	return nil
}

// defined keeps the first description's members with a log; the pass
// keeps no list.
func (rl *RankLinker) defined(ck commKey, members []int32) []int32 {
	l := rl.l
	if _, ok := l.members[ck]; !ok {
		var m []int32
		for _, r := range members {
			if l.logged[r] {
				m = append(m, r)
			}
		}
		l.members[ck] = m
	}
	return nil
}

// changed passes on the receives a completed receive request held back,
// before the event's next completion (pairs in completion order).
func (rl *RankLinker) changed() {
	if len(rl.pend) > 0 {
		rl.release()
	}
}

// decline: reordering moves the operations, not the records.
func (rl *RankLinker) decline(string) {}

// linkOps numbers a rank's operations for its pass: the records name the
// operation of the event being passed, whose Endpoint the RankLinker
// holds.
type linkOps struct{ rl *RankLinker }

func (o linkOps) AddOp(taskgraph.Op) uint32 {
	n := o.rl.ops
	if o.rl.ops++; o.rl.ops == noNode {
		o.rl.ops = 0
	}
	return n
}
func (o linkOps) SetSite(int64, uint64)       {}
func (o linkOps) NumOps() int                 { return int(o.rl.ops) }
func (o linkOps) Truncate(n int)              { o.rl.ops = uint32(n) }
func (o linkOps) SetInit(int64)               {}
func (o linkOps) SetFinalize(int64)           {}
func (o linkOps) SetSites(*tracefmt.Sites)    {}
func (o linkOps) Times(uint32) (int64, int64) { return 0, 0 }
func (o linkOps) Permute([]uint32) error      { return nil }

// arrive adds the rank's next collective call on communicator ck.
func (rl *RankLinker) arrive(ck commKey) {
	k := rl.collSeq[ck]
	rl.collSeq[ck] = k + 1
	l := rl.l
	key := instKey{ck, k}
	l.insts[key] = append(l.insts[key], rl.cur)
	if n, ok := l.expectedAt(key); ok && len(l.insts[key]) >= n {
		l.emitInst(key)
	}
}

// expected is the number of members with a log of communicator k.
func (l *Linker) expected(k commKey) (int, bool) {
	switch {
	case k.gid == 1:
		return l.nWorld, true
	case k.self >= 0:
		return 1, true
	}
	m, ok := l.members[k]
	return len(m), ok
}

// expectedAt is the number of members with a log that will make
// instance k's call: those of the communicator less the ranks that lost
// events before it.
func (l *Linker) expectedAt(k instKey) (int, bool) {
	n, ok := l.expected(k.comm)
	if !ok || len(l.stopped) == 0 {
		return n, ok
	}
	for r, made := range l.stopped {
		if made[k.comm] <= k.k && l.isMember(r, k.comm) {
			n--
		}
	}
	return n, true
}

// isMember reports whether rank r (with a log) is a member of k, by the
// first description read.
func (l *Linker) isMember(r int, k commKey) bool {
	switch {
	case k.gid == 1:
		return true
	case k.self >= 0:
		return int(k.self) == r
	}
	_, ok := slices.BinarySearch(l.members[k], int32(r))
	return ok
}

// emitInst reports instance k and forgets it.
func (l *Linker) emitInst(k instKey) {
	ms := l.insts[k]
	delete(l.insts, k)
	slices.SortFunc(ms, func(a, b Endpoint) int { return cmp.Compare(a.Rank, b.Rank) })
	last := 0
	for i := range ms {
		if ms[i].Start > ms[last].Start {
			last = i
		}
	}
	if l.Collective != nil {
		l.Collective(ms, last)
	}
}

// Finish ends the rank's stream: its requests still live keep their
// messages; its receives never completed take their place when their
// source and tag are known (Build's rankPass.Finish), else none.
func (rl *RankLinker) Finish() {
	if rl.finished {
		return
	}
	p := rl.p
	if rl.lost {
		// A wildcard receive never completed (its completion may have
		// been lost) leaves the receives posted after it without a place
		// (Build's wildLimit).
		if g := p.gate(rl.bl[:0]); g.minWild != math.MaxUint32 {
			rl.dropAfter(g.minWild)
			rl.lostPost = min(rl.lostPost, g.minWild)
		}
	}
	p.Finish(rankEnd{complete: true})
	rl.finished = true
	rl.afterEvent(&tracefmt.Event{})
	rl.release() // nothing is live now
	for _, m := range rl.unsettled {
		m.settled = true
		rl.l.match(m.ch)
	}
	rl.unsettled = nil
	rl.p = nil
}

// Finish reports the collective instances some members never reached
// (after every rank's Finish).
func (l *Linker) Finish() {
	for _, k := range slices.SortedFunc(maps.Keys(l.insts), cmpInstKey) {
		l.emitInst(k)
	}
}

// Pending returns how much the Linker holds: messages and receives
// waiting for their other end, and collective instances waiting for
// members (for tests and benchmarks of its memory).
func (l *Linker) Pending() (messages, receives, instances int) {
	for _, q := range l.chans {
		messages += len(q.sends)
		receives += len(q.recvs)
	}
	return messages, receives, len(l.insts)
}

func (l *Linker) queue(ch gkey) *linkChan {
	q := l.chans[ch]
	if q == nil {
		q = &linkChan{}
		l.chans[ch] = q
	}
	return q
}

// settled reports whether message m's request says whether it was
// cancelled.
func (l *Linker) settled(m *linkSend) bool {
	if !m.settled && (m.from.finished || !m.from.p.sendLive(m.req, m.id)) {
		m.settled = true
	}
	return m.settled
}

// match pairs channel ch's messages and receives in order, as far as
// they are known.
func (l *Linker) match(ch gkey) {
	q := l.chans[ch]
	if q == nil {
		return
	}
	for len(q.sends) > 0 && l.settled(q.sends[0]) {
		m := q.sends[0]
		if m.cancelled {
			q.sends[0] = nil
			q.sends = q.sends[1:]
			continue
		}
		if len(q.recvs) == 0 {
			break
		}
		x := q.recvs[0]
		q.sends[0], q.recvs[0] = nil, nil
		q.sends, q.recvs = q.sends[1:], q.recvs[1:]
		if x.hasEP && l.Message != nil {
			l.Message(&m.ep, &x.ep)
		}
	}
	if len(q.sends) == 0 && len(q.recvs) == 0 {
		delete(l.chans, ch)
	}
}
