package reconstruct

import (
	"math"
	"slices"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// commKey identifies a communicator across ranks: its global id, and for
// MPI_COMM_SELF (the same gid on every rank, a different communicator on
// each) the rank.
type commKey struct {
	gid  uint64
	self int32 // the rank for MPI_COMM_SELF, -1 otherwise
}

const gidSelf = 2

// chanKey is a point-to-point channel seen from one rank: a rank-local
// communicator key id, the peer and the tag.
type chanKey struct {
	comm uint32
	peer int32
	tag  int64
}

// chanTable interns a rank's channels. A table of a few channels (a halo
// exchange's) is searched in keys; past chanScan of them, a map does it,
// with a small direct-mapped cache in front that serves the few channels a
// loop uses over and over (the map and the cache are 1 KB, which thousands
// of ranks multiply). Once the rank's pass is over only the keys are
// needed (done).
type chanTable struct {
	m     map[chanKey]uint32
	keys  []chanKey
	cache *chanCache // allocated with m
	// limit, when not 0, is the most channels the table remembers: at
	// limit it forgets them all and numbers on from base (the hooks'
	// passes, whose records carry their channels: a new tag per
	// iteration must not make a pass grow with the run). A channel met
	// again then gets a new, greater number.
	limit int
	base  uint32
}

// chanScan is how many channels a table searches without its map.
const chanScan = 8

type chanCache [16]chanSlot

type chanSlot struct {
	k  chanKey
	id uint32
	ok bool
}

// done frees what interning needs, keeping the keys.
func (t *chanTable) done() { t.m, t.cache = nil, nil }

func (t *chanTable) id(k chanKey) uint32 {
	if t.limit > 0 && len(t.keys) >= t.limit {
		if id, ok := t.find(k); ok {
			return t.base + id
		}
		// Full: forget the channels, keeping the room of the map and of
		// the cache.
		t.base += uint32(len(t.keys))
		t.keys = t.keys[:0]
		if t.m != nil {
			clear(t.m)
			*t.cache = chanCache{}
		}
	}
	return t.base + t.local(k)
}

// slot is k's entry in the cache.
func (t *chanTable) slot(k chanKey) *chanSlot {
	return &t.cache[(uint32(k.peer)*31+uint32(k.tag)*7+k.comm)&15]
}

// find returns k's number among the keys the table holds, without adding
// it.
func (t *chanTable) find(k chanKey) (uint32, bool) {
	if t.m == nil {
		i := slices.Index(t.keys, k)
		return uint32(i), i >= 0
	}
	c := t.slot(k)
	if c.ok && c.k == k {
		return c.id, true
	}
	id, ok := t.m[k]
	if ok {
		c.k, c.id, c.ok = k, id, true
	}
	return id, ok
}

// local numbers k among the keys the table holds, adding it when new.
func (t *chanTable) local(k chanKey) uint32 {
	if t.m == nil {
		for i := range t.keys {
			if t.keys[i] == k {
				return uint32(i)
			}
		}
		id := uint32(len(t.keys))
		t.keys = append(t.keys, k)
		if len(t.keys) > chanScan {
			t.m = make(map[chanKey]uint32, len(t.keys))
			for i, k := range t.keys {
				t.m[k] = uint32(i)
			}
			t.cache = new(chanCache)
		}
		return id
	}
	c := t.slot(k)
	if c.ok && c.k == k {
		return c.id
	}
	id, ok := t.m[k]
	if !ok {
		id = uint32(len(t.keys))
		t.keys = append(t.keys, k)
		t.m[k] = id
	}
	c.k, c.id, c.ok = k, id, true
	return id
}

// sendRec is one message a rank sent, in posting order.
type sendRec struct {
	ch    uint32 // send channel; cancelled for a cancelled send
	node  uint32 // local index of the sending operation
	bytes uint64
}

const cancelled = math.MaxUint32

// noNode is the node of a receive that has no completing operation (never
// completed, or freed): it takes its message in the matching order but
// yields no edge.
const noNode = math.MaxUint32

// recvRec is one receive of a rank, or one completion of a nonblocking
// collective, in the order of the operations that completed them. Sizes
// of 4 GiB and more are saturated (the size checks then skip them).
type recvRec struct {
	ch     uint32 // receive channel; for a collective completion, the participation index
	post   uint32 // posting sequence number (from 1): receives match in this order; 0 for a collective completion
	node   uint32 // local index of the completing operation, or noNode
	sbytes uint32 // bytes according to the status
	cap    uint32 // receive capacity
}

func (r *recvRec) coll() bool { return r.post == 0 }

func sat32(v uint64) uint32 { return uint32(min(v, math.MaxUint32)) }

// partRec is one collective call of a rank, in program order.
type partRec struct {
	comm       uint32 // rank-local communicator key id
	name       taskgraph.NameID
	fn         string
	nb         bool
	at         uint32
	root       int64
	bytes      uint64
	rbytes     uint64
	start, end int64
	ev         int64
	done       uint32 // nonblocking: the completing operation, or noNode
}

// rankPass is the single-pass consumer of one rank's events (Event, then
// Finish). It adds the rank's operations to the graph builder and keeps
// what the cross-rank matching needs.
type rankPass struct {
	rank int
	size int
	file string
	rb   opSink
	// st, when not nil, takes the pass's matching records as they come
	// (the streaming replay, replay.go; the Linker, link.go) instead of
	// sends and recvs keeping them for Build's matching; it takes parts
	// after each event.
	st    matchHook
	names *nameTable
	strs  *tracefmt.Strings
	diags tracefmt.Diagnostics
	sites tracefmt.Sites // the rank's Site and Map events

	fnCache []nameInfo
	fnMap   map[uint64]nameInfo
	waitID  taskgraph.NameID

	evIndex int64
	phase   uint8
	hasInit bool
	hasFin  bool
	initTh  bool // MPI_Init_thread

	prevEnd  int64
	havePrev bool
	negN     int
	negMax   int64
	outside  int

	// Communicators: rank-local index → key id (+1; 0 undefined).
	commIdx  []uint32
	commMap  map[uint64]uint32
	keys     []commKey
	keyIdx   map[commKey]uint32
	commDefs map[commKey][]int32

	reqs    reqTable
	postSeq uint32
	sendCh  chanTable
	recvCh  chanTable
	sends   chunked[sendRec]
	recvs   chunked[recvRec]
	parts   []partRec
	// partBase is the index of parts[0] among the rank's collective
	// calls: 0 for Build; the replay drops the calls it took.
	partBase int
	mprobe   map[chanKey]*probeRes // receive channel → the posting numbers reserved by matched probes
	cancels  int
	// cancelFreed counts receives cancelled and freed (or left at the
	// end) without a completion (unfinishedRecv).
	cancelFreed int
	pending     [4]int
	// completes marks the operations of Wait/Test-family calls, which
	// take effect at their end (see reorder).
	completes []uint64
	freedWld  int

	loss lossState // where the log lost events (gaps.go)
}

// probeRes is what matched probes reserved on a receive channel: the
// channel's number when the first was read, and the posting numbers.
type probeRes struct {
	ch    uint32
	posts []uint32
}

const (
	phaseBefore = iota
	phaseRunning
	phaseDone
)

// matchHook takes a pass's matching records as they come: the records
// Build keeps until every rank is read (sendRec, recvRec) and the
// communicators' member lists.
type matchHook interface {
	// send is a message on communicator ck to world rank peer, sent by
	// operation node of event ev (req: its request, 0 blocking; k and
	// ch: its send channel and the channel's number). It returns the
	// message's number among the rank's, which cancel names, or -1 when
	// the hook takes no message.
	send(ck commKey, k chanKey, node uint32, bytes uint64, req uint64, ch uint32, ev int64) int32
	// recv is a receive completed (or one that takes its place without
	// completing, node noNode) on channel k, or a nonblocking
	// collective's completion.
	recv(rc recvRec, k chanKey)
	// cancel says message id was cancelled.
	cancel(id int32)
	// settle says message id's request no longer holds it: completed
	// (after cancel, when it was cancelled), freed, forgotten or started
	// again; its sender's request says whether it was cancelled.
	settle(id int32)
	// changed says a receive request completed: the receives it held back
	// may take their places.
	changed()
	// defined is the rank's description of communicator ck's members; it
	// returns the list the pass keeps (one shared by the ranks that
	// describe ck alike, or none: thousands of ranks each holding the
	// world's list would cost their number squared).
	defined(ck commKey, members []int32) []int32
	// decline says the records cannot be taken as they come (the
	// operations need reordering).
	decline(why string)
}

// opSink is where a pass puts the rank's operations: a graph's
// RankBuilder, or the streaming replay's queue.
type opSink interface {
	AddOp(taskgraph.Op) uint32
	SetSite(ev int64, site uint64)
	NumOps() int
	Truncate(n int)
	SetInit(end int64)
	SetFinalize(start int64)
	SetSites(*tracefmt.Sites)
	Times(local uint32) (start, end int64)
	Permute(perm []uint32) error
}

// hookChans is the most channels of each kind a hooked pass remembers
// (chanTable.limit; a variable for the tests).
var hookChans = 256

// hook makes the pass give its matching records to st as they come.
func (p *rankPass) hook(st matchHook) {
	p.st = st
	p.sendCh.limit, p.recvCh.limit = hookChans, hookChans
}

func newRankPass(rank, size int, file string, rb opSink, names *nameTable, strs *tracefmt.Strings) *rankPass {
	p := &rankPass{rank: rank, size: size, file: file, rb: rb, names: names, strs: strs,
		keyIdx: make(map[commKey]uint32), commDefs: make(map[commKey][]int32)}
	p.waitID = names.lookup("MPI_Wait").id
	p.setComm(spec.CommWorld, commKey{gid: 1, self: -1})
	p.setComm(spec.CommSelf, commKey{gid: gidSelf, self: int32(rank)})
	return p
}

func (p *rankPass) diag(sev tracefmt.Severity, code string, format string, args ...any) {
	addDiag(&p.diags, sev, code, p.rank, p.file, format, args...)
}

// fn returns the name of string id id.
func (p *rankPass) fn(id uint64) nameInfo {
	if id < 4096 {
		if id < uint64(len(p.fnCache)) && p.fnCache[id].ok {
			return p.fnCache[id]
		}
	} else if ni, ok := p.fnMap[id]; ok {
		return ni
	}
	name, ok := p.strs.Lookup(id)
	if !ok || name == "" {
		name = "MPI_(unknown)"
		p.diag(tracefmt.Error, tracefmt.CodeUnknownFn, "function name id %d is not in the rank's string table", id)
	}
	ni := p.names.lookup(name)
	if id < 4096 {
		if id >= uint64(len(p.fnCache)) {
			p.fnCache = slices.Grow(p.fnCache, int(id)+1-len(p.fnCache))[:id+1]
		}
		p.fnCache[id] = ni
	} else {
		if p.fnMap == nil {
			p.fnMap = make(map[uint64]nameInfo)
		}
		p.fnMap[id] = ni
	}
	return ni
}

// keyID interns a communicator key.
func (p *rankPass) keyID(k commKey) uint32 {
	if id, ok := p.keyIdx[k]; ok {
		return id
	}
	id := uint32(len(p.keys))
	p.keys = append(p.keys, k)
	p.keyIdx[k] = id
	return id
}

func (p *rankPass) setComm(idx uint64, k commKey) {
	id := p.keyID(k) + 1
	if idx < 1<<16 {
		if idx >= uint64(len(p.commIdx)) {
			p.commIdx = slices.Grow(p.commIdx, int(idx)+1-len(p.commIdx))[:idx+1]
		}
		p.commIdx[idx] = id
		return
	}
	if p.commMap == nil {
		p.commMap = make(map[uint64]uint32)
	}
	p.commMap[idx] = id
}

// comm returns the key id of communicator index idx; false (with a
// diagnostic) when no CommNew defined it.
func (p *rankPass) comm(idx uint64, ev int64) (uint32, bool) {
	var id uint32
	if idx < uint64(len(p.commIdx)) {
		id = p.commIdx[idx]
	} else if idx >= 1<<16 {
		id = p.commMap[idx]
	}
	if id == 0 {
		if p.unplace(unComm) {
			return 0, false
		}
		p.diag(tracefmt.Error, CodeUndefinedComm, "event %d: communicator index %d is not defined by an earlier CommNew event; the call's messages are left out", ev, idx)
		return 0, false
	}
	return id - 1, true
}

// defineComm handles a CommNew event: the new communicator's index, its
// global id and members.
func (p *rankPass) defineComm(ev *tracefmt.Event) {
	idx := ev.Comm()
	if idx == spec.CommNull {
		return
	}
	k := commKey{gid: ev.GID(), self: -1}
	if k.gid == gidSelf {
		k.self = int32(p.rank)
	}
	p.setComm(idx, k)
	if _, ok := p.commDefs[k]; !ok && k.gid != 1 && k.gid != gidSelf {
		m := make([]int32, 0, len(ev.Ranks))
		for _, r := range ev.Ranks {
			if !p.validRank(r) {
				p.diag(tracefmt.Error, CodeBadPeer, "event %d: communicator %#x lists rank %d among its members, not a world rank of 0..%d; left out", p.evIndex-1, k.gid, r, p.size-1)
				continue
			}
			m = append(m, int32(r))
		}
		slices.Sort(m)
		p.commDefs[k] = slices.Compact(m)
		if p.st != nil {
			p.commDefs[k] = p.st.defined(k, p.commDefs[k])
		}
	}
}

// checkGap counts a chain item that starts before the previous one ended.
func (p *rankPass) checkGap(start int64) {
	if p.havePrev && start < p.prevEnd {
		p.negN++
		p.negMax = max(p.negMax, p.prevEnd-start)
	}
}

func (p *rankPass) op(name taskgraph.NameID, ev *tracefmt.Event, bytes uint64, idx int64) uint32 {
	p.checkGap(ev.Start)
	p.prevEnd, p.havePrev = ev.End, true
	return p.rb.AddOp(taskgraph.Op{Name: name, Kind: ev.Kind, Start: ev.Start, End: ev.End, Bytes: bytes, Event: idx})
}

// addRecv records a completed (or freed) receive on channel k, or a
// nonblocking collective's completion.
func (p *rankPass) addRecv(r recvRec, k chanKey) {
	if p.st != nil {
		p.st.recv(r, k)
		return
	}
	p.recvs.add(r)
}

// cancelSend marks send record rec cancelled.
func (p *rankPass) cancelSend(rec int32) {
	if p.st != nil {
		p.st.cancel(rec)
		return
	}
	p.sends.at(int(rec)).ch = cancelled
}

func (p *rankPass) nextPost() uint32 {
	p.postSeq++
	return p.postSeq
}

// validRank reports whether r is a world rank.
func (p *rankPass) validRank(r int64) bool { return r >= 0 && r < int64(p.size) }

// postSend records a message sent on communicator key ck; it returns the
// send record's index, or -1 when there is no message.
func (p *rankPass) postSend(ck uint32, peer, tag int64, bytes uint64, node uint32, idx int64, req uint64) int32 {
	if peer == spec.ProcNull {
		return -1
	}
	if !p.validRank(peer) {
		p.diag(tracefmt.Error, CodeBadPeer, "event %d: send to rank %d, which is not a world rank of 0..%d", idx, peer, p.size-1)
		return -1
	}
	k := chanKey{comm: ck, peer: int32(peer), tag: tag}
	ch := p.sendCh.id(k)
	if p.st != nil {
		return p.st.send(p.keys[ck], k, node, bytes, req, ch, idx)
	}
	return int32(p.sends.add(sendRec{ch: ch, node: node, bytes: bytes}))
}

// envelope resolves the source and tag a receive matched: the requested
// ones, or for wildcards those of the status. ok is false when there is
// no message (MPI_PROC_NULL) or it cannot be resolved (diagnosed).
func (p *rankPass) envelope(peer, tag, src, stag int64, idx int64) (int64, int64, bool) {
	s, t, why := resolveEnvelope(p.size, peer, tag, src, stag)
	if why&envSourceMismatch != 0 {
		p.diag(tracefmt.Warning, CodeStatusMismatch, "event %d: receive from rank %d, but the status says rank %d; rank %d is used", idx, peer, src, peer)
	}
	switch {
	case why&envWildSource != 0:
		p.diag(tracefmt.Error, CodeUnresolvedWildcard, "event %d: wildcard receive whose status has source %d, not a world rank: no message edge", idx, s)
	case why&envBadSource != 0:
		p.diag(tracefmt.Error, CodeBadPeer, "event %d: receive from rank %d, which is not a world rank of 0..%d", idx, s, p.size-1)
	case why&envWildTag != 0:
		p.diag(tracefmt.Error, CodeUnresolvedWildcard, "event %d: MPI_ANY_TAG receive whose status has tag %d: no message edge", idx, stag)
	case why&envTagMismatch != 0:
		p.diag(tracefmt.Warning, CodeStatusMismatch, "event %d: receive with tag %d, but the status says tag %d; tag %d is used", idx, tag, stag, tag)
	}
	return s, t, why&envOK != 0
}

// What resolveEnvelope found.
const (
	envOK             = 1 << iota // resolved
	envNone                       // no message (MPI_PROC_NULL)
	envSourceMismatch             // resolved; the status names another source
	envTagMismatch                // resolved; the status names another tag
	envWildSource                 // failed: a wildcard's status has no world rank
	envBadSource                  // failed: the source is no world rank
	envWildTag                    // failed: an MPI_ANY_TAG's status has no tag
)

// resolveEnvelope is the rule of envelope without its diagnostics: the source and tag a receive on a world
// of size ranks matched, and what it found.
func resolveEnvelope(size int, peer, tag, src, stag int64) (s, t int64, why int) {
	if peer == spec.ProcNull {
		return 0, 0, envNone
	}
	valid := func(r int64) bool { return r >= 0 && r < int64(size) }
	wild := peer == spec.AnySource || peer == spec.Undefined
	s, why = peer, envOK
	if wild {
		s = src
	} else if src != peer && valid(src) {
		why |= envSourceMismatch
	}
	if s == spec.ProcNull {
		return 0, 0, why&^envOK | envNone
	}
	if !valid(s) {
		if wild {
			return s, 0, why&^envOK | envWildSource
		}
		return s, 0, why&^envOK | envBadSource
	}
	t = tag
	if tag == spec.AnyTag {
		if stag < 0 {
			return s, 0, why&^envOK | envWildTag
		}
		t = stag
	} else if stag != tag && stag >= 0 && !wild {
		why |= envTagMismatch
	}
	return s, t, why
}

// A receive takes its place on its channel (the k-th posted takes the
// k-th message) once no receive its rank posted before it may still take
// that place: a live one on the same channel, a matched probe's
// reservation on it, or a live wildcard, whose channel only its
// completion will tell. The replay and the Linker pass a rank's
// completed receives to their channels by this rule.

// blocker is a live receive on a known channel, or a matched probe's
// reservation.
type blocker struct {
	key  chanKey
	post uint32
}

// recvGate is what holds back the rank's completed receives: the live
// receives and reservations, as gate found them.
type recvGate struct {
	minWild uint32 // the least posting number of a live wildcard receive
	bl      []blocker
}

// gate returns the rank's live receives and reservations, in bl's array.
func (p *rankPass) gate(bl []blocker) recvGate {
	g := recvGate{minWild: math.MaxUint32, bl: bl}
	p.reqs.each(func(q *reqEntry) {
		if q.kind != reqRecv || !q.active || q.post == 0 || q.mrecv || q.unknown || !q.commOK || q.peer == spec.ProcNull {
			return
		}
		if q.peer == spec.AnySource || q.peer == spec.Undefined || q.tag < 0 || !p.validRank(q.peer) {
			g.minWild = min(g.minWild, q.post)
			return
		}
		g.bl = append(g.bl, blocker{chanKey{comm: q.comm, peer: int32(q.peer), tag: q.tag}, q.post})
	})
	for k, res := range p.mprobe {
		for _, post := range res.posts {
			g.bl = append(g.bl, blocker{k, post})
		}
	}
	return g
}

// holds reports whether a receive posted as number post on channel k must
// wait.
func (g *recvGate) holds(post uint32, k chanKey) bool {
	if post > g.minWild {
		return true
	}
	for _, b := range g.bl {
		if b.post < post && b.key == k {
			return true
		}
	}
	return false
}

// releaseHeld passes to pass, in posting order, the receives of pend
// (sorted by posting number; rec gives a receive's number and receive
// channel) that the rank's gate no longer holds back. It returns those
// it still holds, in pend's array, and bl's array for the next call.
func releaseHeld[T any](p *rankPass, pend []T, bl []blocker, rec func(T) (post uint32, k chanKey), pass func(x T, k chanKey)) ([]T, []blocker) {
	g := p.gate(bl[:0])
	keep := pend[:0]
	for _, x := range pend {
		post, k := rec(x)
		if g.holds(post, k) {
			keep = append(keep, x)
			continue
		}
		pass(x, k)
	}
	clear(pend[len(keep):])
	return keep, g.bl[:0]
}

// sendLive reports whether message id, sent with request req, may still
// be cancelled: its request is live and has not completed it.
func (p *rankPass) sendLive(req uint64, id int32) bool {
	q := p.reqs.get(req)
	return q != nil && q.kind == reqSend && q.active && q.rec == id
}

// takePost returns the posting number of a receive of a matched message
// (MPI_Mrecv, MPI_Imrecv) on channel k: the one its matched probe
// reserved, if any, else a fresh one.
func (p *rankPass) takePost(k chanKey) uint32 {
	if res := p.mprobe[k]; res != nil {
		post := res.posts[0]
		if len(res.posts) == 1 {
			delete(p.mprobe, k)
		} else {
			res.posts = res.posts[1:]
		}
		return post
	}
	return p.nextPost()
}

// recvDone records a completed receive.
func (p *rankPass) recvDone(ck uint32, peer, tag int64, st tracefmt.Completion, capacity uint64, post uint32, mrecv bool, node uint32, idx int64) {
	src, t, ok := p.envelope(peer, tag, st.Src, st.Tag, idx)
	if !ok {
		return
	}
	k := chanKey{comm: ck, peer: int32(src), tag: t}
	ch := p.recvCh.id(k)
	if mrecv {
		if p.mprobe[k] == nil && p.unplace(unRecv) {
			return // its probe, and with it its place in the order, was lost
		}
		post = p.takePost(k)
	}
	p.addRecv(recvRec{ch: ch, post: post, node: node, sbytes: sat32(st.Bytes), cap: sat32(capacity)}, k)
}

// Event consumes the rank's next event.
func (p *rankPass) Event(ev *tracefmt.Event) {
	if len(p.loss.open) > 0 {
		p.closeLoss(ev.Thread)
	}
	idx := p.evIndex
	p.evIndex++
	k := ev.Kind
	if k >= spec.NumKinds || !spec.Kinds[k].IsCall {
		p.sites.Add(ev, p.strs)
		return
	}
	if s := ev.F[spec.Site]; s != 0 {
		p.rb.SetSite(idx, uint64(s))
	}
	if k == spec.CommNew && ev.Fn() == 0 {
		// A communicator the recorder described on first use: no call.
		p.defineComm(ev)
		return
	}
	name := p.fn(ev.Fn())
	if p.phase == phaseDone {
		p.outside++
		if k == spec.CommNew {
			p.defineComm(ev)
		}
		return
	}
	if name.cls&clsInit != 0 {
		if p.phase == phaseBefore {
			if n := p.rb.NumOps(); n > 0 {
				// Calls MPI allows before MPI_Init (MPI_Initialized, ...)
				// are not part of the graph.
				p.outside += n
				p.rb.Truncate(0)
				p.negN, p.negMax = 0, 0
			}
			p.rb.SetInit(ev.End)
			p.hasInit, p.initTh = true, name.cls&clsInitThread != 0
			p.phase = phaseRunning
			p.prevEnd, p.havePrev = ev.End, true
			return
		}
		p.diag(tracefmt.Warning, CodeDuplicateInit, "event %d: a second MPI_Init after the rank's operations began; it is an ordinary operation", idx)
	}
	if name.cls&clsFinalize != 0 {
		p.checkGap(ev.Start)
		p.rb.SetFinalize(ev.Start)
		p.hasFin = true
		p.phase = phaseDone
		return
	}
	if p.phase == phaseBefore && k != spec.Call {
		p.phase = phaseRunning // MPI is running, MPI_Init was not recorded
	}
	switch k {
	case spec.Call, spec.CommFree:
		p.op(name.id, ev, 0, idx)
	case spec.Send:
		p.send(name, ev, idx)
	case spec.Recv:
		local := p.op(name.id, ev, ev.Bytes(), idx)
		if ck, ok := p.comm(ev.Comm(), idx); ok {
			st := tracefmt.Completion{Src: ev.Src(), Tag: ev.STag(), Bytes: ev.SBytes()}
			p.recvDone(ck, ev.Peer(), ev.Tag(), st, ev.Bytes(), p.nextPost(), name.cls&clsMrecv != 0, local, idx)
		}
	case spec.Irecv:
		p.irecv(name, ev, idx)
	case spec.Sendrecv:
		// Two vertices, as MPI defines the call (an Isend, an Irecv and a
		// wait for both): the send half at the call's start, the receive
		// half ending at its end. One vertex would make a ring of
		// MPI_Sendrecv a cycle.
		p.checkGap(ev.Start)
		sendHalf := p.rb.AddOp(taskgraph.Op{Name: name.id, Kind: ev.Kind, Start: ev.Start, End: ev.Start,
			Bytes: ev.Bytes(), Event: idx, Expanded: true})
		recvHalf := p.rb.AddOp(taskgraph.Op{Name: name.id, Kind: ev.Kind, Start: ev.Start, End: ev.End,
			Bytes: ev.SBytes(), Event: idx, Expanded: true, RecvHalf: true})
		p.prevEnd, p.havePrev = ev.End, true
		if ck, ok := p.comm(ev.Comm(), idx); ok {
			p.postSend(ck, ev.Peer(), ev.Tag(), ev.Bytes(), sendHalf, idx, 0)
			st := tracefmt.Completion{Src: ev.Src(), Tag: ev.STag(), Bytes: ev.SBytes()}
			p.recvDone(ck, ev.RPeer(), ev.RTag(), st, ev.RBytes(), p.nextPost(), false, recvHalf, idx)
		}
	case spec.Probe:
		p.op(name.id, ev, 0, idx)
		if name.cls&clsMprobe != 0 && ev.Flag() == 1 {
			if ck, ok := p.comm(ev.Comm(), idx); ok {
				if src, t, ok := p.envelope(ev.Peer(), ev.Tag(), ev.Src(), ev.STag(), idx); ok {
					k := chanKey{comm: ck, peer: int32(src), tag: t}
					ch := p.recvCh.id(k) // its place among the channels is here
					if p.mprobe == nil {
						p.mprobe = make(map[chanKey]*probeRes)
					}
					res := p.mprobe[k]
					if res == nil {
						res = &probeRes{ch: ch}
						p.mprobe[k] = res
					}
					res.posts = append(res.posts, p.nextPost())
				}
			}
		}
	case spec.Complete:
		p.completeEvent(name, ev, idx)
	case spec.Coll:
		p.coll(name, ev, idx)
	case spec.CommNew:
		p.defineComm(ev)
		if name.cls&clsCommColl != 0 {
			if ck, ok := p.comm(ev.Parent(), idx); ok {
				p.checkGap(ev.Start)
				p.prevEnd, p.havePrev = ev.End, true
				p.parts = append(p.parts, partRec{comm: ck, name: name.id, fn: p.strs.Name(ev.Fn()), at: uint32(p.rb.NumOps()),
					root: spec.RootNone, start: ev.Start, end: ev.End, ev: idx, done: noNode})
				return
			}
		}
		p.op(name.id, ev, 0, idx)
	case spec.Start:
		p.start(name, ev, idx)
	case spec.ReqFree:
		p.reqFree(name, ev, idx)
	default:
		p.op(name.id, ev, 0, idx)
	}
}

func (p *rankPass) send(name nameInfo, ev *tracefmt.Event, idx int64) {
	local := p.op(name.id, ev, ev.Bytes(), idx)
	ck, ok := p.comm(ev.Comm(), idx)
	req := ev.Req()
	if req == 0 {
		if ok {
			p.postSend(ck, ev.Peer(), ev.Tag(), ev.Bytes(), local, idx, 0)
		}
		return
	}
	e := p.newReq(req, idx)
	e.kind, e.comm, e.commOK = reqSend, ck, ok
	e.peer, e.tag, e.bytes = ev.Peer(), ev.Tag(), ev.Bytes()
	e.persistent = name.cls&clsPersistent != 0
	if !e.persistent {
		e.active = true
		if ok {
			e.rec = p.postSend(ck, e.peer, e.tag, e.bytes, local, idx, req)
		}
	}
}

func (p *rankPass) newReq(id uint64, idx int64) *reqEntry {
	if old := p.reqs.get(id); old != nil {
		p.dropSend(old) // forgotten: its message goes
	}
	e, existed := p.reqs.put(id)
	if existed {
		p.diag(tracefmt.Error, CodeRequestReused, "event %d: request %d created again while still live; the earlier one is forgotten", idx, id)
	}
	return e
}

func (p *rankPass) irecv(name nameInfo, ev *tracefmt.Event, idx int64) {
	p.op(name.id, ev, ev.Bytes(), idx)
	req := ev.Req()
	if req == 0 {
		return
	}
	ck, ok := p.comm(ev.Comm(), idx)
	e := p.newReq(req, idx)
	e.kind, e.comm, e.commOK = reqRecv, ck, ok
	e.peer, e.tag, e.bytes = ev.Peer(), ev.Tag(), ev.Bytes()
	e.persistent = name.cls&clsPersistent != 0
	e.mrecv = name.cls&clsMrecv != 0
	if !e.persistent {
		e.active = true
		if !e.mrecv {
			e.post = p.nextPost()
		}
	}
}

// markComplete marks operation local as part of a Wait/Test-family call.
func (p *rankPass) markComplete(local uint32) {
	if p.st != nil {
		return // only reorder needs them, which the hooks decline
	}
	w := int(local / 64)
	if w >= len(p.completes) {
		p.completes = slices.Grow(p.completes, w+1-len(p.completes))[:w+1]
	}
	p.completes[w] |= 1 << (local % 64)
}

func (p *rankPass) completeEvent(name nameInfo, ev *tracefmt.Event, idx int64) {
	cs := ev.Completions
	switch {
	case len(cs) == 0:
		p.markComplete(p.op(name.id, ev, 0, idx))
	case len(cs) == 1 && name.cls&clsExpand == 0:
		local := p.op(name.id, ev, cs[0].Bytes, idx)
		p.markComplete(local)
		p.complete(&cs[0], local, idx)
	default:
		// One MPI_Wait per completed request, in request order: the
		// first carries the call's times, the others start and end at
		// its end, so the computation edges between them are 0.
		p.checkGap(ev.Start)
		for i := range cs {
			start := ev.Start
			if i > 0 {
				start = ev.End
			}
			local := p.rb.AddOp(taskgraph.Op{Name: p.waitID, Kind: ev.Kind, Start: start, End: ev.End,
				Bytes: cs[i].Bytes, Event: idx, Expanded: true})
			p.markComplete(local)
			p.complete(&cs[i], local, idx)
		}
		p.prevEnd, p.havePrev = ev.End, true
	}
}

// complete handles the completion of one request by operation local.
func (p *rankPass) complete(c *tracefmt.Completion, local uint32, idx int64) {
	if c.Req == 0 {
		return
	}
	e := p.reqs.get(c.Req)
	if e == nil {
		if p.unplace(unReq) {
			return
		}
		p.diag(tracefmt.Error, CodeUnknownRequest, "event %d: completion of request %d, which was never created", idx, c.Req)
		return
	}
	isCancelled := c.Flags&spec.CompletionCancelled != 0
	if e.kind == reqRecv {
		// The request is over before its record is taken: it holds back
		// no receive posted after it (gate), and a hook that passes the
		// receives on at once does so in the order of the completions.
		x := *e
		p.endReq(c.Req, e)
		switch {
		case x.unknown:
			// A persistent receive whose starts a loss may hold: which
			// posting this completes is not known (gaps.go).
			if isCancelled {
				p.cancels++
			} else {
				p.unplace(unRecv)
			}
		case x.persistent && !x.active:
			// MPI_Wait on an inactive persistent request returns at once.
		case isCancelled:
			p.cancels++
		case x.commOK:
			p.recvDone(x.comm, x.peer, x.tag, *c, x.bytes, x.post, x.mrecv, local, idx)
		}
		if p.st != nil {
			p.st.changed()
		}
		return
	}
	switch e.kind {
	case reqSend:
		if isCancelled {
			p.cancels++
			if e.rec >= 0 {
				p.cancelSend(e.rec)
			}
		}
		p.dropSend(e)
	case reqColl:
		if e.rec >= 0 {
			if p.st == nil {
				p.parts[e.rec].done = local
			}
			p.addRecv(recvRec{ch: uint32(e.rec), node: local}, chanKey{})
		}
	}
	p.endReq(c.Req, e)
}

// dropSend ends send request e's hold on its message: its request says
// whether it was cancelled now (a hook's settle).
func (p *rankPass) dropSend(e *reqEntry) {
	if e.kind != reqSend || e.rec < 0 {
		return
	}
	rec := e.rec
	e.rec = -1
	if p.st != nil {
		p.st.settle(rec)
	}
}

// endReq ends request id's activity: a persistent one becomes inactive,
// another is gone.
func (p *rankPass) endReq(id uint64, e *reqEntry) {
	if e.persistent {
		e.active, e.unknown = false, false
	} else {
		p.reqs.del(id)
	}
}

func (p *rankPass) coll(name nameInfo, ev *tracefmt.Event, idx int64) {
	ck, ok := p.comm(ev.Comm(), idx)
	if !ok {
		p.op(name.id, ev, ev.Bytes(), idx)
		if req := ev.Req(); req != 0 {
			// Its completion is known, and not told of again.
			p.newReq(req, idx).kind = reqColl
		}
		return
	}
	pr := partRec{comm: ck, name: name.id, fn: p.strs.Name(ev.Fn()), root: ev.Root(), bytes: ev.Bytes(), rbytes: ev.RBytes(),
		start: ev.Start, end: ev.End, ev: idx, done: noNode}
	req := ev.Req()
	if req == 0 {
		p.checkGap(ev.Start)
		p.prevEnd, p.havePrev = ev.End, true
		pr.at = uint32(p.rb.NumOps())
		p.parts = append(p.parts, pr)
		return
	}
	pr.at = p.op(name.id, ev, ev.Bytes(), idx)
	pr.nb = true
	p.parts = append(p.parts, pr)
	e := p.newReq(req, idx)
	e.kind, e.active, e.rec = reqColl, true, int32(p.partBase+len(p.parts)-1)
}

func (p *rankPass) start(name nameInfo, ev *tracefmt.Event, idx int64) {
	local := p.op(name.id, ev, 0, idx)
	for _, q := range ev.Reqs {
		if q == 0 {
			continue
		}
		e := p.reqs.get(q)
		switch {
		case e == nil:
			if p.unplace(unReq) {
				continue
			}
			p.diag(tracefmt.Error, CodeUnknownRequest, "event %d: start of request %d, which was never created", idx, q)
			continue
		case !e.persistent:
			p.diag(tracefmt.Error, CodeBadStart, "event %d: start of request %d, which is not persistent", idx, q)
			continue
		case e.active:
			p.diag(tracefmt.Error, CodeBadStart, "event %d: start of request %d, which is already active", idx, q)
			p.dropSend(e) // its earlier message goes
		}
		e.active, e.unknown, e.cancelled = true, false, false
		switch e.kind {
		case reqSend:
			if e.commOK {
				// Every start of a persistent send is a new message.
				e.rec = p.postSend(e.comm, e.peer, e.tag, e.bytes, local, idx, q)
			}
		case reqRecv:
			e.post = p.nextPost()
		}
	}
}

func (p *rankPass) reqFree(name nameInfo, ev *tracefmt.Event, idx int64) {
	p.op(name.id, ev, 0, idx)
	q := ev.Req()
	if q == 0 {
		return
	}
	e := p.reqs.get(q)
	if e == nil {
		if p.unplace(unReq) {
			return
		}
		p.diag(tracefmt.Error, CodeUnknownRequest, "event %d: %s of request %d, which was never created", idx, p.strs.Name(ev.Fn()), q)
		return
	}
	if name.cls&clsCancel != 0 {
		// The completion says whether it was cancelled; freed without one,
		// it is taken as cancelled (unfinishedRecv).
		e.cancelled = e.active
		return
	}
	if e.kind == reqRecv && e.active {
		if p.unfinishedRecv(e) {
			p.diag(tracefmt.Info, CodeRequestFreed, "event %d: receive request %d freed before completion: its message takes its place in the matching order but has no edge", idx, q)
		}
	}
	p.dropSend(e) // freed: its message goes
	p.reqs.del(q)
}

// unfinishedRecv makes a receive that has no completing operation take its
// message in the matching order; it needs a known source and tag. It
// reports whether it could.
//
// A receive cancelled (MPI_Cancel) and then freed, or left at the end,
// without a completion to say whether the cancellation succeeded, is
// taken as cancelled: it takes no message (graph500 cancels and frees its
// persistent wildcard receives at its end). Were it not, its message
// would be left without a receive, and said so.
func (p *rankPass) unfinishedRecv(e *reqEntry) bool {
	if e.cancelled {
		p.cancelFreed++
		return false
	}
	if !e.commOK || e.mrecv {
		return false
	}
	if e.peer == spec.ProcNull {
		return true
	}
	if !p.validRank(e.peer) || e.tag < 0 {
		p.freedWld++
		return false
	}
	k := chanKey{comm: e.comm, peer: int32(e.peer), tag: e.tag}
	p.addRecv(recvRec{ch: p.recvCh.id(k), post: e.post, node: noNode, cap: sat32(e.bytes)}, k)
	return true
}

// Finish ends the rank's pass; end says how its log ends.
func (p *rankPass) Finish(end rankEnd) {
	p.finishLoss(end.complete)
	// A copy: the graph must not keep the pass alive.
	sites := p.sites
	p.rb.SetSites(&sites)
	for _, e := range p.reqs.live() {
		if !e.active {
			continue
		}
		p.pending[e.kind]++
		// A hook hears of each request in turn (pairs in the order of
		// the requests): a send's message stays, a receive of known
		// source and tag takes its place.
		switch e.kind {
		case reqSend:
			if e.rec >= 0 {
				p.loss.endSend = append(p.loss.endSend, uint32(e.rec))
				if p.st != nil {
					p.st.settle(e.rec)
				}
			}
		case reqRecv:
			p.endRecv(e)
			p.unfinishedRecv(e)
			e.active = false // it holds back no receive now (gate)
			if p.st != nil {
				p.st.changed()
			}
		}
	}
	slices.Sort(p.loss.endSend)
	slices.Sort(p.loss.endPost)
	if n := p.pending[reqSend] + p.pending[reqRecv] + p.pending[reqColl]; n > 0 {
		p.diag(tracefmt.Info, CodeRequestPending, "%d requests still active at the end of the log (%d sends, %d receives, %d collectives): their completions are not in the graph",
			n, p.pending[reqSend], p.pending[reqRecv], p.pending[reqColl])
	}
	if p.freedWld > 0 {
		p.diag(tracefmt.Warning, CodeUnresolvedWildcard, "%d wildcard receives never completed: their place in the matching order is unknown", p.freedWld)
	}
	if p.cancels > 0 {
		p.diag(tracefmt.Info, CodeCancelled, "%d cancelled requests: no message", p.cancels)
	}
	if p.cancelFreed > 0 {
		p.diag(tracefmt.Info, CodeCancelled, "%d receives cancelled (MPI_Cancel) and freed or left without a completion: taken as cancelled, no message", p.cancelFreed)
	}
	if p.outside > 0 {
		p.diag(tracefmt.Info, CodeOutsideInit, "%d calls before MPI_Init or after MPI_Finalize are not vertices", p.outside)
	}
	if p.negN > 0 {
		p.diag(tracefmt.Warning, CodeNegativeCompute, "%d calls start before the previous call ended (by up to %d ns: several threads?); the rank's operations are ordered by when they take effect and overlapping ones are joined by computation edges of 0", p.negN, p.negMax)
		if p.st != nil {
			// Reordering moves operations, not the matching's records.
			p.st.decline("calls overlap (several threads): the operations need reordering")
		} else {
			p.reorder()
		}
	}
	if !p.hasInit {
		p.diag(tracefmt.Warning, CodeMissingInit, "no MPI_Init event: the rank's first operation hangs off the shared MPI_Init with weight 0")
	}
	if !p.hasFin {
		switch {
		case end.lossy:
			p.diag(tracefmt.DataLoss, CodeTruncatedRank, "the log stops early without MPI_Finalize: its last operation leads to the shared MPI_Finalize with weight 0")
		case end.early != "":
			p.diag(tracefmt.Warning, CodeMissingFinalize, "the rank ended by %s, before MPI_Finalize: its last operation leads to the shared MPI_Finalize with weight 0", end.early)
		default:
			p.diag(tracefmt.Warning, CodeMissingFinalize, "no MPI_Finalize event: the rank's last operation leads to the shared MPI_Finalize with weight 0")
		}
	}
	p.reqs = reqTable{}
	p.mprobe = nil
	p.fnCache, p.fnMap = nil, nil
	p.completes = nil
	p.strs = nil
	p.sendCh.done()
	p.recvCh.done()
	p.keyIdx, p.commMap, p.commIdx = nil, nil, nil
}

// reorder puts the operations of a rank whose calls overlap (several
// threads) in the order they take effect: an operation at its start,
// unless it completes a receive (a receive, a wait, the receive half of an
// MPI_Sendrecv), then at its end; a blocking collective at its start. The
// reader's merge by start time would put a thread's receive that completed
// late before another thread's send that started meanwhile, and a message
// answering that send would then close a cycle. Calls that do not overlap
// keep their order.
func (p *rankPass) reorder() {
	n := p.rb.NumOps()
	key := make([]int64, n)
	for i := range key {
		key[i], _ = p.rb.Times(uint32(i))
	}
	atEnd := func(node uint32) {
		if node != noNode && int(node) < n {
			_, key[node] = p.rb.Times(node)
		}
	}
	for i := 0; i < p.recvs.len(); i++ {
		atEnd(p.recvs.at(i).node)
	}
	for i := range key {
		if w := i / 64; w < len(p.completes) && p.completes[w]&(1<<(i%64)) != 0 {
			atEnd(uint32(i))
		}
	}
	type item struct {
		key  int64
		op   int32 // operation, or -1-index of a blocking collective call
		part int32
	}
	items := make([]item, 0, n+len(p.parts))
	j := 0
	for i := 0; i <= n; i++ {
		for ; j < len(p.parts); j++ {
			pr := &p.parts[j]
			if pr.nb {
				continue
			}
			if int(pr.at) != i {
				break
			}
			items = append(items, item{key: pr.start, op: -1, part: int32(j)})
		}
		if i < n {
			items = append(items, item{key: key[i], op: int32(i)})
		}
	}
	for ; j < len(p.parts); j++ {
		if !p.parts[j].nb {
			items = append(items, item{key: p.parts[j].start, op: -1, part: int32(j)})
		}
	}
	slices.SortStableFunc(items, func(a, b item) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	perm := make([]uint32, n)
	next := uint32(0)
	for _, it := range items {
		if it.op >= 0 {
			perm[it.op] = next
			next++
		} else {
			p.parts[it.part].at = next
		}
	}
	if err := p.rb.Permute(perm); err != nil {
		p.diag(tracefmt.Error, CodeNegativeCompute, "%v", err)
		return
	}
	for i := 0; i < p.sends.len(); i++ {
		s := p.sends.at(i)
		s.node = perm[s.node]
	}
	for j := range p.parts {
		pr := &p.parts[j]
		if pr.nb {
			pr.at = perm[pr.at]
			if pr.done != noNode {
				pr.done = perm[pr.done]
			}
		}
	}
	recs := make([]recvRec, p.recvs.len())
	for i := range recs {
		recs[i] = *p.recvs.at(i)
		if recs[i].node != noNode {
			recs[i].node = perm[recs[i].node]
		}
	}
	slices.SortStableFunc(recs, func(a, b recvRec) int {
		switch {
		case a.node < b.node:
			return -1
		case a.node > b.node:
			return 1
		}
		return 0
	})
	p.recvs = chunked[recvRec]{}
	for _, r := range recs {
		p.recvs.add(r)
	}
}
