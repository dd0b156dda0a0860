package reconstruct

import (
	"cmp"
	"maps"
	"slices"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Streaming matching.
//
// A Linker pairs the messages and groups the collective calls of a trace
// while its ranks' events are read, in any interleaving of the ranks
// (typically a merge by time), without the task graph: what it keeps is
// bounded by what is in flight — the messages sent and not yet received
// (or received and not yet sent, in the order read), the receives posted
// and not yet completed, the live requests, and the collective instances
// some members have reached and others not yet. It applies Build's rules
// (match.go): the k-th receive posted on a channel takes the k-th message
// sent on it, once every receive's source and tag are known; a cancelled
// message or receive takes no place; the k-th collective call of each
// member of a communicator is one instance. A receive is passed to its
// channel once no receive its rank posted before it and not yet
// completed may take a place on that channel (a wildcard may, until its
// completion says where), and a message is paired only once its request
// says whether it was cancelled; both wait in memory until then. A
// wildcard receive never completed (nor freed) thus holds back its
// rank's later receives until the end of the rank's log.
//
// It reports each pair and instance once, when it is complete, with the
// Endpoints the caller gave the events. Diagnostics are Build's business:
// the Linker says nothing about bad data, it only leaves out what cannot
// be matched.
//
// Lost events (RankLinker.Lost): Build places a rank's calls after a loss
// from the end of its log (gaps.go), which a reader in order cannot know
// before the end. The Linker makes no pair Build does not make: the calls
// a rank makes after its first loss take no part (its sends, receives,
// collective calls and requests), while what it began before keeps its
// place (a receive posted before and completed after still takes its
// message; a persistent receive active at the loss, and a matched probe's
// message, keep their places without a pair: see settleLost); the
// instances it will not reach no longer wait for it. So its
// pairs and instances are Build's, less those of the calls after a loss.

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

	// Message is called for each matched message, with the endpoints of
	// the event that sent it and of the event that completed its receive.
	Message func(send, recv *Endpoint)
	// Collective is called for each collective instance, once all its
	// members with a log arrived (or, for instances some never reach, at
	// Finish), with its members' endpoints in rank order and the index
	// of the last to arrive.
	Collective func(members []Endpoint, last int)

	chans   map[gkey]*chanQueue
	members map[commKey]int // members with a log, by communicator (the first description read)
	insts   map[instKey]*pendingInst

	// Ranks that lost events: by communicator key, the collective calls
	// each made before (see RankLinker.Lost); memberList says which
	// communicators a rank is a member of (the first description read).
	stopped    map[int]map[commKey]int
	memberList map[commKey][]int64
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

type pendingInst struct {
	members []Endpoint
}

// sendEntry is a message sent; ready once its request says it was not
// cancelled (at once for a blocking send).
type sendEntry struct {
	ep        Endpoint
	ready     bool
	cancelled bool
}

// postEntry is a posted receive, resolved when its channel (or that it
// takes no place) is known; ep is the completing event's, when it has one.
type postEntry struct {
	// known: the channel the receive will take its place on is known
	// from its posting (kch; a source and tag that are not wildcards).
	known    bool
	kch      gkey
	probe    bool // a matched probe's: its receive takes its place
	resolved bool
	none     bool // takes no place in the matching order
	ch       gkey
	hasEP    bool
	ep       Endpoint
}

type chanQueue struct {
	sends []*sendEntry
	recvs []*postEntry
}

// NewLinker returns a Linker for a world of size ranks of which ranks
// have a log.
func NewLinker(size int, ranks []int) *Linker {
	l := &Linker{size: size, logged: make([]bool, size), chans: map[gkey]*chanQueue{},
		members: map[commKey]int{}, insts: map[instKey]*pendingInst{}}
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
	l       *Linker
	rank    int
	strs    *tracefmt.Strings
	cls     map[uint64]uint16
	running bool // after MPI_Init, or an operation that needs MPI
	done    bool // after MPI_Finalize
	comms   map[uint64]commKey
	reqs    map[uint64]*streamReq
	posts   []*postEntry // posted receives, in posting order, from the first unresolved
	head    int
	// mprobe: receive channel → receives reserved by matched probes.
	mprobe  map[gkey][]*postEntry
	collSeq map[commKey]int
	lost    bool // events were lost: later calls take no part (see Lost)
}

type streamReq struct {
	kind       uint8
	persistent bool
	active     bool
	mrecv      bool
	commOK     bool
	comm       commKey
	peer, tag  int64
	send       *sendEntry
	post       *postEntry
}

// Rank returns the consumer of rank's events; strs are its strings.
func (l *Linker) Rank(rank int, strs *tracefmt.Strings) *RankLinker {
	rl := &RankLinker{l: l, rank: rank, strs: strs, cls: map[uint64]uint16{},
		comms: map[uint64]commKey{}, reqs: map[uint64]*streamReq{}, collSeq: map[commKey]int{}}
	rl.comms[spec.CommWorld] = commKey{gid: 1, self: -1}
	rl.comms[spec.CommSelf] = commKey{gid: gidSelf, self: int32(rank)}
	return rl
}

func (rl *RankLinker) class(fn uint64) uint16 {
	c, ok := rl.cls[fn]
	if !ok {
		c = classify(rl.strs.Name(fn))
		rl.cls[fn] = c
	}
	return c
}

func (rl *RankLinker) comm(idx uint64) (commKey, bool) {
	k, ok := rl.comms[idx]
	return k, ok
}

func (rl *RankLinker) validRank(r int64) bool { return r >= 0 && r < int64(rl.l.size) }

func (rl *RankLinker) defineComm(ev *tracefmt.Event) {
	idx := ev.Comm()
	if idx == spec.CommNull {
		return
	}
	k := commKey{gid: ev.GID(), self: -1}
	if k.gid == gidSelf {
		k.self = int32(rl.rank)
	}
	rl.comms[idx] = k
	if _, ok := rl.l.members[k]; !ok && k.gid != 1 && k.gid != gidSelf {
		m := make([]int64, 0, len(ev.Ranks))
		for _, r := range ev.Ranks {
			if rl.validRank(r) {
				m = append(m, r)
			}
		}
		slices.Sort(m)
		m = slices.Compact(m)
		n := 0
		for _, r := range m {
			if rl.l.logged[r] {
				n++
			}
		}
		rl.l.members[k] = n
		if rl.l.memberList == nil {
			rl.l.memberList = map[commKey][]int64{}
		}
		rl.l.memberList[k] = m
	}
}

// Lost tells the consumer that events of the rank were lost just before
// its next event: from there on the rank's calls take no part in the
// matching (see "Lost events" above).
func (rl *RankLinker) Lost(tracefmt.Loss) {
	if rl.lost || rl.done {
		return // after MPI_Finalize the lost events held no call (as Build)
	}
	rl.lost = true
	rl.settleLost()
	l := rl.l
	if l.stopped == nil {
		l.stopped = map[int]map[commKey]int{}
	}
	l.stopped[rl.rank] = maps.Clone(rl.collSeq)
	// The instances that waited for it may be complete now.
	keys := slices.SortedFunc(maps.Keys(l.insts), cmpInstKey)
	for _, k := range keys {
		if n, ok := l.expectedAt(k); ok && len(l.insts[k].members) >= n {
			in := l.insts[k]
			delete(l.insts, k)
			l.emitInst(in)
		}
	}
}

// settleLost does at the first loss what Build's lossRequests does: a
// persistent request is posted many times under one id, and the lost
// events may hold its completions and starts, so a persistent receive
// active at the loss keeps its posting's place without an edge (a
// wildcard one stays unresolved, which Finish makes hold back the
// receives posted after it) and its later completions take no part; a
// matched probe's reservation keeps its message's place without an edge,
// and the receives of matched messages after the loss take no part.
func (rl *RankLinker) settleLost() {
	for _, id := range slices.Sorted(maps.Keys(rl.reqs)) {
		q := rl.reqs[id]
		if q.kind != reqRecv || !q.persistent {
			continue
		}
		wild := q.commOK && q.peer != spec.ProcNull && (!rl.validRank(q.peer) || q.tag < 0)
		if !wild {
			rl.unfinished(q)
		}
		delete(rl.reqs, id)
	}
	for _, q := range rl.mprobe { // the order is the posts'
		for _, pe := range q {
			pe.ch, pe.resolved = pe.kch, true
		}
	}
	rl.mprobe = nil
	rl.drain()
}

func cmpInstKey(a, b instKey) int {
	return cmp.Or(cmp.Compare(a.comm.gid, b.comm.gid), cmp.Compare(a.comm.self, b.comm.self), cmp.Compare(a.k, b.k))
}

// Event consumes the rank's next event; ep is handed back in the pairs
// and instances it takes part in.
func (rl *RankLinker) Event(ev *tracefmt.Event, ep Endpoint) {
	k := ev.Kind
	if k >= spec.NumKinds || !spec.Kinds[k].IsCall {
		return
	}
	if k == spec.CommNew && (ev.Fn() == 0 || rl.done) {
		rl.defineComm(ev)
		return
	}
	if rl.done {
		return
	}
	cls := rl.class(ev.Fn())
	if rl.lost {
		rl.afterLoss(cls, ev, ep)
		return
	}
	if cls&clsInit != 0 && !rl.running {
		rl.running = true // MPI_Init: no operation (a second one is)
		return
	}
	if k != spec.Call {
		rl.running = true // MPI is running, MPI_Init was not recorded
	}
	if cls&clsFinalize != 0 {
		rl.done = true
		return
	}
	switch k {
	case spec.Send:
		rl.send(cls, ev, ep)
	case spec.Recv:
		if ck, ok := rl.comm(ev.Comm()); ok {
			pe := &postEntry{}
			if cls&clsMrecv == 0 {
				rl.post(pe)
			}
			rl.recvDone(ck, ev.Peer(), ev.Tag(), ev.Src(), ev.STag(), pe, cls&clsMrecv != 0, ep)
		}
	case spec.Irecv:
		rl.irecv(cls, ev)
	case spec.Sendrecv:
		if ck, ok := rl.comm(ev.Comm()); ok {
			rl.postSend(ck, ev.Peer(), ev.Tag(), ep, true)
			pe := &postEntry{}
			rl.post(pe)
			rl.recvDone(ck, ev.RPeer(), ev.RTag(), ev.Src(), ev.STag(), pe, false, ep)
		}
	case spec.Probe:
		if cls&clsMprobe != 0 && ev.Flag() == 1 {
			if ck, ok := rl.comm(ev.Comm()); ok {
				if src, t, why := resolveEnvelope(rl.l.size, ev.Peer(), ev.Tag(), ev.Src(), ev.STag()); why&envOK != 0 {
					ch := gkey{comm: ck, src: int32(src), dst: int32(rl.rank), tag: t}
					pe := &postEntry{known: true, kch: ch, probe: true}
					rl.post(pe)
					if rl.mprobe == nil {
						rl.mprobe = map[gkey][]*postEntry{}
					}
					rl.mprobe[ch] = append(rl.mprobe[ch], pe)
				}
			}
		}
	case spec.Complete:
		for i := range ev.Completions {
			rl.complete(&ev.Completions[i], ep)
		}
	case spec.Coll:
		if ck, ok := rl.comm(ev.Comm()); ok {
			rl.arrive(ck, ep)
			if q := ev.Req(); q != 0 {
				rl.newReq(q).kind = reqColl
			}
		}
	case spec.CommNew:
		rl.defineComm(ev)
		if cls&clsCommColl != 0 {
			if ck, ok := rl.comm(ev.Parent()); ok {
				rl.arrive(ck, ep)
			}
		}
	case spec.Start:
		rl.start(ev, ep)
	case spec.ReqFree:
		rl.reqFree(cls, ev)
	}
}

// afterLoss consumes an event after the rank lost events: only what
// concludes calls begun before takes part.
func (rl *RankLinker) afterLoss(cls uint16, ev *tracefmt.Event, ep Endpoint) {
	switch {
	case cls&clsFinalize != 0:
		rl.done = true
	case ev.Kind == spec.CommNew:
		rl.defineComm(ev)
	case ev.Kind == spec.Complete:
		for i := range ev.Completions {
			rl.complete(&ev.Completions[i], ep)
		}
	case ev.Kind == spec.ReqFree:
		rl.reqFree(cls, ev)
	}
}

// post appends a receive to the rank's posting order.
func (rl *RankLinker) post(pe *postEntry) { rl.posts = append(rl.posts, pe) }

// resolve resolves a posted receive and passes the receives now in order
// to their channels.
func (rl *RankLinker) resolve(pe *postEntry) {
	pe.resolved = true
	rl.drain()
}

// drain passes to their channels the resolved receives that no receive
// posted before them and still unresolved may precede on their channel:
// one of a known other channel does not hold them back, a wildcard one
// (whose channel its completion will tell) holds back all.
func (rl *RankLinker) drain() {
	var held []gkey // the channels of the unresolved receives passed over
	w := 0
	for i := 0; i < len(rl.posts); i++ {
		pe := rl.posts[i]
		switch {
		case !pe.resolved && !pe.known:
			// Everything after waits for this wildcard.
			w += copy(rl.posts[w:], rl.posts[i:])
			i = len(rl.posts)
		case !pe.resolved:
			held = append(held, pe.kch)
			rl.posts[w] = pe
			w++
		case !pe.none && slices.Contains(held, pe.ch):
			rl.posts[w] = pe
			w++
		default:
			if !pe.none {
				rl.l.addRecv(pe)
			}
		}
	}
	clear(rl.posts[w:])
	rl.posts = rl.posts[:w]
}

// postedRecv posts the receive of request q.
func (rl *RankLinker) postedRecv(q *streamReq) *postEntry {
	pe := &postEntry{}
	switch {
	case !q.commOK || q.peer == spec.ProcNull:
		pe.known, pe.kch = true, gkey{src: -1} // no channel: takes no place
	case rl.validRank(q.peer) && q.tag >= 0:
		pe.known, pe.kch = true, gkey{comm: q.comm, src: int32(q.peer), dst: int32(rl.rank), tag: q.tag}
	}
	rl.post(pe)
	return pe
}

// drop makes a posted receive take no place.
func (rl *RankLinker) drop(pe *postEntry) {
	if pe != nil && !pe.resolved {
		pe.none = true
		rl.resolve(pe)
	}
}

func (rl *RankLinker) postSend(ck commKey, peer, tag int64, ep Endpoint, ready bool) *sendEntry {
	if !rl.validRank(peer) {
		return nil
	}
	se := &sendEntry{ep: ep, ready: ready}
	rl.l.addSend(gkey{comm: ck, src: int32(rl.rank), dst: int32(peer), tag: tag}, se)
	return se
}

// recvDone completes receive pe (posted, or for a receive of a matched
// message not yet) at ep.
func (rl *RankLinker) recvDone(ck commKey, peer, tag, src, stag int64, pe *postEntry, mrecv bool, ep Endpoint) {
	s, t, why := resolveEnvelope(rl.l.size, peer, tag, src, stag)
	if why&envOK == 0 {
		if !mrecv {
			rl.drop(pe)
		}
		return
	}
	ch := gkey{comm: ck, src: int32(s), dst: int32(rl.rank), tag: t}
	if mrecv {
		if q := rl.mprobe[ch]; len(q) > 0 {
			pe = q[0]
			if len(q) == 1 {
				delete(rl.mprobe, ch)
			} else {
				rl.mprobe[ch] = q[1:]
			}
		} else {
			if rl.lost {
				return // its probe was lost: Build leaves it out too
			}
			pe = &postEntry{}
			rl.post(pe)
		}
	}
	pe.ch, pe.hasEP, pe.ep = ch, true, ep
	rl.resolve(pe)
}

func (rl *RankLinker) newReq(id uint64) *streamReq {
	if old := rl.reqs[id]; old != nil {
		rl.forget(old)
	}
	q := &streamReq{}
	rl.reqs[id] = q
	return q
}

// forget lets go of a request no completion will come for: its message
// stays, its receive takes no place.
func (rl *RankLinker) forget(q *streamReq) {
	if q.send != nil {
		q.send.ready = true
		rl.l.match(rl.l.chans[q.sendKey(rl.rank)], q.sendKey(rl.rank))
		q.send = nil
	}
	if q.post != nil {
		rl.drop(q.post)
		q.post = nil
	}
}

func (q *streamReq) sendKey(rank int) gkey {
	return gkey{comm: q.comm, src: int32(rank), dst: int32(q.peer), tag: q.tag}
}

func (rl *RankLinker) send(cls uint16, ev *tracefmt.Event, ep Endpoint) {
	ck, ok := rl.comm(ev.Comm())
	req := ev.Req()
	if req == 0 {
		if ok {
			rl.postSend(ck, ev.Peer(), ev.Tag(), ep, true)
		}
		return
	}
	q := rl.newReq(req)
	q.kind, q.comm, q.commOK = reqSend, ck, ok
	q.peer, q.tag = ev.Peer(), ev.Tag()
	q.persistent = cls&clsPersistent != 0
	if !q.persistent {
		q.active = true
		if ok {
			q.send = rl.postSend(ck, q.peer, q.tag, ep, false)
		}
	}
}

func (rl *RankLinker) irecv(cls uint16, ev *tracefmt.Event) {
	req := ev.Req()
	if req == 0 {
		return
	}
	ck, ok := rl.comm(ev.Comm())
	q := rl.newReq(req)
	q.kind, q.comm, q.commOK = reqRecv, ck, ok
	q.peer, q.tag = ev.Peer(), ev.Tag()
	q.persistent = cls&clsPersistent != 0
	q.mrecv = cls&clsMrecv != 0
	if !q.persistent {
		q.active = true
		if !q.mrecv {
			q.post = rl.postedRecv(q)
		}
	}
}

func (rl *RankLinker) complete(c *tracefmt.Completion, ep Endpoint) {
	if c.Req == 0 {
		return
	}
	q := rl.reqs[c.Req]
	if q == nil {
		return
	}
	isCancelled := c.Flags&spec.CompletionCancelled != 0
	switch q.kind {
	case reqSend:
		if se := q.send; se != nil {
			se.cancelled = isCancelled
			se.ready = true
			rl.l.match(rl.l.chans[q.sendKey(rl.rank)], q.sendKey(rl.rank))
			q.send = nil
		}
	case reqRecv:
		switch {
		case q.persistent && !q.active:
		case isCancelled || !q.commOK:
			rl.drop(q.post)
		default:
			pe := q.post
			if pe == nil {
				pe = &postEntry{} // an Imrecv: posted where its probe matched
			}
			rl.recvDone(q.comm, q.peer, q.tag, c.Src, c.Tag, pe, q.mrecv, ep)
		}
		q.post = nil
	}
	if q.persistent {
		q.active = false
	} else {
		delete(rl.reqs, c.Req)
	}
}

func (rl *RankLinker) start(ev *tracefmt.Event, ep Endpoint) {
	for _, id := range ev.Reqs {
		q := rl.reqs[id]
		if id == 0 || q == nil || !q.persistent {
			continue
		}
		q.active = true
		switch q.kind {
		case reqSend:
			if q.send != nil { // started again before completing: that message stays
				q.send.ready = true
				rl.l.match(rl.l.chans[q.sendKey(rl.rank)], q.sendKey(rl.rank))
				q.send = nil
			}
			if q.commOK {
				q.send = rl.postSend(q.comm, q.peer, q.tag, ep, false)
			}
		case reqRecv:
			rl.drop(q.post)
			q.post = rl.postedRecv(q)
		}
	}
}

func (rl *RankLinker) reqFree(cls uint16, ev *tracefmt.Event) {
	id := ev.Req()
	q := rl.reqs[id]
	if id == 0 || q == nil || cls&clsCancel != 0 {
		return
	}
	rl.unfinished(q)
	rl.forget(q)
	delete(rl.reqs, id)
}

// unfinished makes an active receive that will not complete (freed, or
// live at the end of the log) take its message's place when its source
// and tag are known, as Build's unfinishedRecv does.
func (rl *RankLinker) unfinished(q *streamReq) {
	if q.kind != reqRecv || !q.active || q.post == nil || !q.commOK || q.mrecv {
		return
	}
	switch {
	case q.peer == spec.ProcNull || !rl.validRank(q.peer) || q.tag < 0:
		rl.drop(q.post)
	default:
		q.post.ch = gkey{comm: q.comm, src: int32(q.peer), dst: int32(rl.rank), tag: q.tag}
		rl.resolve(q.post)
	}
	q.post = nil
}

// arrive adds the rank's next collective call on communicator ck.
func (rl *RankLinker) arrive(ck commKey, ep Endpoint) {
	k := rl.collSeq[ck]
	rl.collSeq[ck] = k + 1
	l := rl.l
	key := instKey{ck, k}
	in := l.insts[key]
	if in == nil {
		in = &pendingInst{}
		l.insts[key] = in
	}
	in.members = append(in.members, ep)
	if n, ok := l.expectedAt(key); ok && len(in.members) >= n {
		delete(l.insts, key)
		l.emitInst(in)
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
	n, ok := l.members[k]
	return n, ok
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
	_, ok := slices.BinarySearch(l.memberList[k], int64(r))
	return ok
}

func (l *Linker) emitInst(in *pendingInst) {
	ms := in.members
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
// source and tag are known, else none.
func (rl *RankLinker) Finish() {
	if rl.lost {
		rl.finishLost()
	}
	for _, id := range slices.Sorted(maps.Keys(rl.reqs)) {
		q := rl.reqs[id]
		rl.unfinished(q)
		rl.forget(q)
	}
	rl.reqs = nil
	for _, pe := range rl.posts {
		if !pe.resolved {
			pe.none, pe.resolved = true, true
		}
	}
	rl.drain()
}

// finishLost applies, at the end of a rank that lost events, what Build
// decides there: a wildcard receive never completed (its completion may
// have been lost) leaves the receives posted after it without a place,
// and a matched probe whose receive was lost keeps its message's place.
func (rl *RankLinker) finishLost() {
	cut := false
	for _, pe := range rl.posts {
		cut = cut || !pe.resolved && !pe.known // a wildcard's, never completed
		switch {
		case cut:
			pe.none, pe.resolved = true, true
		case !pe.resolved && pe.probe:
			pe.ch, pe.resolved = pe.kch, true
		}
	}
	rl.mprobe = nil
	rl.drain()
}

// Finish reports the collective instances some members never reached
// (after every rank's Finish).
func (l *Linker) Finish() {
	keys := slices.SortedFunc(maps.Keys(l.insts), cmpInstKey)
	for _, k := range keys {
		l.emitInst(l.insts[k])
		delete(l.insts, k)
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

func (l *Linker) queue(ch gkey) *chanQueue {
	q := l.chans[ch]
	if q == nil {
		q = &chanQueue{}
		l.chans[ch] = q
	}
	return q
}

func (l *Linker) addSend(ch gkey, se *sendEntry) {
	q := l.queue(ch)
	q.sends = append(q.sends, se)
	l.match(q, ch)
}

func (l *Linker) addRecv(pe *postEntry) {
	q := l.queue(pe.ch)
	q.recvs = append(q.recvs, pe)
	l.match(q, pe.ch)
}

// match pairs the channel's messages and receives in order, as far as
// they are known.
func (l *Linker) match(q *chanQueue, ch gkey) {
	if q == nil {
		return
	}
	for len(q.sends) > 0 && q.sends[0].ready {
		se := q.sends[0]
		if se.cancelled {
			q.sends[0] = nil
			q.sends = q.sends[1:]
			continue
		}
		if len(q.recvs) == 0 {
			break
		}
		pe := q.recvs[0]
		q.sends[0], q.recvs[0] = nil, nil
		q.sends, q.recvs = q.sends[1:], q.recvs[1:]
		if pe.hasEP && l.Message != nil {
			l.Message(&se.ep, &pe.ep)
		}
	}
	if len(q.sends) == 0 && len(q.recvs) == 0 {
		delete(l.chans, ch)
	}
}
