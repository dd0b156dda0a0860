package reconstruct

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Lost events.
//
// A damaged block in the middle of a rank's log loses the events it held:
// the reader says how many, and where (tracefmt.Loss). Matching is by
// position — the k-th receive posted on a channel takes the k-th message
// sent on it, the k-th collective call on a communicator is the k-th
// instance — and the lost events held calls whose number per channel and
// communicator is not known. So the calls after a loss cannot be given
// their position by counting from the start of the log; counted so, a
// receive would take another message than its own, a collective call
// would join an earlier instance than its own, and the graph would have
// cycles.
//
// The rule: a loss cuts the rank's stream into segments. Calls before the
// first loss have their position from the start of the log, as without
// losses. Calls after the last loss have their position from the end of
// the log, when the log is complete at its end (an end record of
// MPI_Finalize, the rank's MPI_Finalize read, nothing lost after its last
// event): the last receive posted on a channel takes the last message sent
// on it, the last collective call on a communicator is its last instance.
// Calls between two losses, or after the last one in a log incomplete at
// its end, have no position: they are vertices on their rank's chain
// without messages or collective partners (each blocking collective call
// a collective vertex of its own). A position from the end is matched with
// the other side's from the end; a side whose log lost nothing and is
// complete has both positions, so a position from the end meets one from
// the start there. Collective calls positioned from the end are numbered
// from the start when a member whose log is whole says how many instances
// there are; else they form instances of their own, counted from the end.
// Counting from the end assumes every message was received and every
// receive took one; what the log shows pending at its end says where that
// may fail: a send still active at the end leaves its channel without
// positions from the end on its sending side, a receive still active
// there ends its channel's run from the end (every channel's, for a
// wildcard). Persistent requests and matched probes are settled at each
// loss (lossRequests). Everything that could not be placed is counted per
// loss (CodeUnplacedCalls). docs/reconstruction.md states the rule and
// what it assumes: every message sent is received, every member makes
// every collective call, as MPI requires of a program that reaches
// MPI_Finalize.

// lossState is a rank's losses and the segments they cut its stream into.
type lossState struct {
	gaps     []gapRec
	afterFin []gapRec // losses after MPI_Finalize, which cut no segment
	segs     []segRec // segs[i] begins segment i+1; segment 0 is before the first loss
	// open: the threads whose next event closes the current loss's window
	// (tracefmt.Loss: events of other threads before it may precede some
	// lost events); -1 never closes.
	open []int
	// tailOK: the log is complete at its end (set by Finish).
	tailOK bool
	// wildLimit: with losses, the receives of segment 0 posted after it
	// have no position (a wildcard receive posted there whose completion
	// was lost took a place on a channel no one knows).
	wildLimit uint32
	// wildLost: the least posting number of a wildcard persistent
	// receive active at a loss (its completion may be lost); 0 none.
	wildLost uint32
	// endSend, endPost, endWild: what the log shows pending at its end
	// (set by Finish): the sends still active (their messages may not
	// have been received), sorted; the posting numbers of the receives
	// still active on a known channel, sorted; the greatest posting
	// number of a wildcard receive still active (0 none). Counting from
	// the end assumes every message was received and every receive took
	// one, so these end the runs from the end (see runs' callers).
	endSend, endPost []uint32
	endWild          uint32
	// unplaced counts, per segment (0..len(segs)), what could not be
	// placed: the rank pass and the collectives phase write it, join the
	// receives of its own rank, unmatchedSends the sends of its own rank.
	unplaced [][numUnplaced]int
}

// gapRec is one place where the rank's log lost events.
type gapRec struct {
	loss tracefmt.Loss
	ev   int64 // the index of the event it precedes (the rank's number of events at the end)
}

// segRec is where a segment begins: the gap that began it, and the rank's
// sends, receive postings and collective calls before it.
type segRec struct {
	gap              int
	send, post, part uint32
}

// What could not be placed.
const (
	unReq  = iota // completions, starts and frees of requests made in the lost events
	unComm        // calls on communicators defined in the lost events
	unRecv        // receives
	unSend        // messages sent
	unColl        // collective calls
	numUnplaced
)

// pos says where a call's position is known from.
type pos uint8

const (
	posStart pos = 1 << iota // from the start of the log
	posEnd                   // from its end
)

// lossy reports whether the rank's log lost events before some of its
// events (not only after the last).
func (p *rankPass) lossy() bool { return len(p.loss.gaps) > 0 }

// full reports whether the rank's log is whole: nothing lost, complete at
// its end. Its calls have both positions.
func (p *rankPass) full() bool { return !p.lossy() && p.loss.tailOK }

// Lost tells the pass that events were lost just before its next event,
// of thread thread.
func (p *rankPass) Lost(l tracefmt.Loss, thread int) {
	ls := &p.loss
	if p.phase == phaseDone {
		// After MPI_Finalize: the lost events held no vertex, and the
		// calls before them keep their positions from the end.
		ls.afterFin = append(ls.afterFin, gapRec{loss: l, ev: p.evIndex})
		return
	}
	ls.gaps = append(ls.gaps, gapRec{loss: l, ev: p.evIndex})
	p.lossRequests()
	p.newSegment()
	if l.Thread != thread && !slices.Contains(ls.open, l.Thread) {
		ls.open = append(ls.open, l.Thread)
	}
}

// lossRequests settles, at a loss, what the lost events may have
// continued: a persistent request is posted many times under one id, so
// its starts and completions may be among them. A persistent receive
// active at the loss keeps its posting's place without an edge (as one
// never completed), and every persistent request's activity is unknown
// until its next start: a completion before it is not placed, a start
// finds it inactive. A matched probe's reservation keeps its message's
// place without an edge: the receive of that message may be among the
// lost events, with other probes, so a receive of a matched message
// after the loss takes the reservation of a probe after the loss or has
// no place.
func (p *rankPass) lossRequests() {
	for _, e := range p.reqs.live() {
		if !e.persistent {
			continue
		}
		if e.active && e.kind == reqRecv && e.commOK {
			if e.peer != spec.ProcNull && (!p.validRank(e.peer) || e.tag < 0) {
				if p.loss.wildLost == 0 || e.post < p.loss.wildLost {
					p.loss.wildLost = e.post
				}
			} else {
				p.unfinishedRecv(e)
			}
		}
		p.dropSend(e)
		e.active, e.unknown, e.rec = false, true, -1
	}
	keys := slices.SortedFunc(maps.Keys(p.mprobe), func(a, b chanKey) int { return cmp.Compare(p.mprobe[a].ch, p.mprobe[b].ch) })
	for _, k := range keys {
		res := p.mprobe[k]
		for _, post := range res.posts {
			p.addRecv(recvRec{ch: res.ch, post: post, node: noNode}, k)
		}
	}
	p.mprobe = nil
}

// endRecv records receive request e, still active at the end of the log.
func (p *rankPass) endRecv(e *reqEntry) {
	ls := &p.loss
	switch {
	case !e.commOK || e.mrecv || e.peer == spec.ProcNull:
	case !p.validRank(e.peer) || e.tag < 0:
		ls.endWild = max(ls.endWild, e.post)
	default:
		ls.endPost = append(ls.endPost, e.post)
	}
}

// closeLoss is called with every event's thread while a loss's window is
// open: the first event of the thread that lost the events is the first
// known to follow them all, and begins a new segment.
func (p *rankPass) closeLoss(thread int) {
	ls := &p.loss
	if i := slices.Index(ls.open, thread); i >= 0 {
		if ls.open = slices.Delete(ls.open, i, i+1); len(ls.open) == 0 {
			p.newSegment()
		}
	}
}

func (p *rankPass) newSegment() {
	ls := &p.loss
	ls.segs = append(ls.segs, segRec{gap: len(ls.gaps) - 1, send: uint32(p.sends.len()), post: p.postSeq, part: uint32(len(p.parts))})
	ls.unplaced = append(ls.unplaced, [numUnplaced]int{})
	if len(ls.unplaced) == 1 {
		ls.unplaced = append(ls.unplaced, [numUnplaced]int{})
	}
}

// unplace counts one call of kind what in the current segment that could
// not be placed. It reports whether the rank lost events before it (else
// the call's problem is not the loss's and the caller reports it).
func (p *rankPass) unplace(what int) bool {
	if !p.lossy() {
		return false
	}
	p.loss.unplaced[len(p.loss.segs)][what]++
	return true
}

// finishLoss runs first in Finish, while the requests are known. complete
// says whether the log ends with an end record of MPI_Finalize and lost
// nothing after its last event.
func (p *rankPass) finishLoss(complete bool) {
	ls := &p.loss
	ls.tailOK = complete && p.hasFin && len(ls.open) == 0
	ls.wildLimit = math.MaxUint32
	if !p.lossy() {
		return
	}
	first := ls.segs[0].post // the last posting of segment 0
	if ls.wildLost != 0 {
		ls.wildLimit = ls.wildLost
	}
	for _, e := range p.reqs.live() {
		if e.kind == reqRecv && e.active && !e.mrecv && e.commOK && e.post <= first &&
			e.peer != spec.ProcNull && (!p.validRank(e.peer) || e.tag < 0) {
			ls.wildLimit = min(ls.wildLimit, e.post)
		}
	}
	// The matched probes of segment 0 whose receives were lost kept their
	// messages' places at the first loss (lossRequests).
}

// segOfSend, segOfPost and segOfPart return the segment of the rank's i-th
// send (posting order), of its receive posted with number post, and of its
// j-th collective call.
func (ls *lossState) segOfSend(i uint32) int {
	return sort.Search(len(ls.segs), func(k int) bool { return ls.segs[k].send > i })
}

func (ls *lossState) segOfPost(post uint32) int {
	return sort.Search(len(ls.segs), func(k int) bool { return ls.segs[k].post >= post })
}

func (ls *lossState) segOfPart(j uint32) int {
	return sort.Search(len(ls.segs), func(k int) bool { return ls.segs[k].part > j })
}

// at returns where the position of a call of segment seg is known from.
func (ls *lossState) at(seg int) pos {
	var c pos
	if seg == 0 {
		c |= posStart
	}
	if ls.tailOK && seg == len(ls.segs) {
		c |= posEnd
	}
	return c
}

func (ls *lossState) sendPos(i uint32) pos { return ls.at(ls.segOfSend(i)) }

func (ls *lossState) recvPos(post uint32) (pos, int) {
	seg := ls.segOfPost(post)
	c := ls.at(seg)
	if seg == 0 && post > ls.wildLimit {
		c &^= posStart
	}
	if c&posEnd != 0 && (post <= ls.endWild || inSorted(ls.endPost, post)) {
		// A wildcard receive still active at the end, posted after it,
		// may have taken no message, or one on its channel; a receive
		// still active at the end may have taken none.
		c &^= posEnd
	}
	return c, seg
}

func inSorted(s []uint32, v uint32) bool {
	_, ok := slices.BinarySearch(s, v)
	return ok
}

// sendsCut reports whether one of sends (a channel's, in posting order)
// was still active at the end of the log: its message may not have been
// received, and then neither were the ones sent after it on the channel,
// so no send of the channel has a position from the end.
func (ls *lossState) sendsCut(sends []uint32) bool {
	if len(ls.endSend) == 0 {
		return false
	}
	for _, si := range sends {
		if inSorted(ls.endSend, si) {
			return true
		}
	}
	return false
}

// runs returns how many of n calls in order (a channel's, a
// communicator's), whose positions at gives, are known from the start (a
// leading run) and from the end (a trailing run).
func runs(n int, at func(i int) pos) (fromStart, fromEnd int) {
	for fromStart < n && at(fromStart)&posStart != 0 {
		fromStart++
	}
	for fromEnd < n && at(n-1-fromEnd)&posEnd != 0 {
		fromEnd++
	}
	return fromStart, fromEnd
}

func bitSet(b []uint64, i int) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func setBit(b []uint64, i int)      { b[i>>6] |= 1 << (i & 63) }

// pairLossy pairs the receives seg (of the channel c of the rank of res,
// by posting number) with their sender's messages when either rank lost
// events; false when neither did (the plain pairing applies).
func (b *build) pairLossy(res *rankResult, c int, seg []uint32, match []uint64) bool {
	p := res.p
	r := p.rank
	k := p.recvCh.keys[c]
	s := int(k.peer)
	ck := p.keys[k.comm]
	sres := b.result(s)
	if !p.lossy() && (sres == nil || !sres.p.lossy()) {
		return false
	}
	var sends []uint32
	var taken []uint64
	if sres != nil {
		if sc, ok := sres.sendIdx[gchan{ck: ck, peer: int32(r), tag: k.tag}]; ok {
			sends = sres.sendOrder[sres.sendOff[sc]:sres.sendOff[sc+1]]
			taken = make([]uint64, (len(sends)+63)/64)
			sres.taken[sc] = taken // only rank r pairs channel sc of rank s
		}
	}
	rAt := func(i int) pos {
		c, _ := p.loss.recvPos(p.recvs.at(int(seg[i])).post)
		return c
	}
	aR, bR := runs(len(seg), rAt)
	var aS, bS int
	cutS := false
	if len(sends) > 0 {
		aS, bS = runs(len(sends), func(i int) pos { return sres.p.loss.sendPos(sends[i]) })
		if bS > 0 && sres.p.loss.sendsCut(sends) {
			bS, cutS = 0, true
		}
	}
	for i, ri := range seg {
		j := -1
		switch {
		case i < aR && i < aS:
			j = i
		case i >= len(seg)-bR && len(seg)-1-i < bS:
			j = len(sends) - 1 - (len(seg) - 1 - i)
		}
		if j >= 0 && !bitSet(taken, j) {
			setBit(taken, j)
			match[ri] = uint64(s)<<32 | uint64(sends[j])
			continue
		}
		rc := p.recvs.at(int(ri))
		if rc.node == noNode {
			continue
		}
		// No position (none known, or not in a run: a receive still
		// active at the end posted after it), or the sender's positions
		// from the end are not known: no place in the matching order.
		if p.lossy() {
			at, sg := p.loss.recvPos(rc.post)
			fromEnd := i >= len(seg)-bR
			if at == 0 || i >= aR && (!fromEnd || cutS) {
				p.loss.unplaced[sg][unRecv]++
				continue
			}
		}
		b.unmatchedRecv(res, c, rc.node)
	}
	return true
}

// unmatchedLossy reports the messages of send channel c of the rank of
// res that no receive took when either end of the channel lost events;
// false when neither did.
func (b *build) unmatchedLossy(res *rankResult, c int) bool {
	p := res.p
	var taken []uint64
	if res.taken != nil {
		taken = res.taken[c]
	}
	if taken == nil && !p.lossy() {
		return false
	}
	first, end := res.sendOff[c], res.sendOff[c+1]
	if taken == nil {
		first += res.paired[c]
	}
	cut := p.lossy() && p.loss.sendsCut(res.sendOrder[res.sendOff[c]:end])
	for x := first; x < end; x++ {
		if taken != nil && bitSet(taken, int(x-res.sendOff[c])) {
			continue
		}
		si := res.sendOrder[x]
		if p.lossy() {
			// No position, or only one from the end, which a send still
			// active at the end takes away (sendsCut).
			if seg := p.loss.segOfSend(si); p.loss.at(seg) == 0 || cut && p.loss.at(seg)&posStart == 0 {
				p.loss.unplaced[seg][unSend]++
				continue
			}
		}
		b.unmatchedSend(res, c, si)
	}
	return true
}

// groupLossy reports whether a member of g lost events before some of its
// calls.
func (b *build) groupLossy(g *collGroup) bool {
	for _, r := range g.ranks {
		if b.result(int(r)).p.lossy() {
			return true
		}
	}
	return false
}

// lossyCount is the number of instances on g's communicator when a member
// lost events: the most calls of a member whose log is whole (known), else
// of a member that lost nothing.
func (b *build) lossyCount(g *collGroup) (n int, known bool) {
	for i, r := range g.ranks {
		if p := b.result(int(r)).p; p.full() {
			n, known = max(n, len(g.lists[i])), true
		}
	}
	if known {
		return n, true
	}
	for i, r := range g.ranks {
		if !b.result(int(r)).p.lossy() {
			n = max(n, len(g.lists[i]))
		}
	}
	return n, false
}

// lossyInstances groups the collective calls on g's communicator into
// instances when a member lost events (see the rule above), appending
// them to insts and their participations to pool.
func (b *build) lossyInstances(g *collGroup, mem memberSet, pool *[]instPart, insts *[]instance) {
	n, known := b.lossyCount(g)
	var starts, ends [][]instPart
	var single []instPart
	add := func(l *[][]instPart, k int, ip instPart) {
		for len(*l) <= k {
			*l = append(*l, nil)
		}
		(*l)[k] = append((*l)[k], ip)
	}
	for i, r := range g.ranks {
		p := b.result(int(r)).p
		list := g.lists[i]
		a, e := runs(len(list), func(x int) pos { return p.loss.at(p.loss.segOfPart(list[x])) })
		for x, j := range list {
			ip := instPart{rank: r, part: j}
			fe := len(list) - 1 - x
			switch {
			case x < a:
				add(&starts, x, ip)
				continue
			case x >= len(list)-e && !known:
				add(&ends, fe, ip)
				continue
			case x >= len(list)-e && n-1-fe >= a:
				add(&starts, n-1-fe, ip)
				continue
			}
			single = append(single, ip) // only a member that lost events has calls without a position
			p.loss.unplaced[p.loss.segOfPart(j)][unColl]++
		}
	}
	emit := func(k int, ips []instPart) {
		inst := instance{key: g.key, members: mem, k: k, first: len(*pool), n: len(ips)}
		*pool = append(*pool, ips...)
		p0 := ips[0]
		inst.minRank, inst.ev = p0.rank, b.result(int(p0.rank)).p.parts[p0.part].ev
		*insts = append(*insts, inst)
	}
	for k, ips := range starts {
		if len(ips) > 0 {
			emit(k, ips)
		}
	}
	for j, ips := range ends {
		if len(ips) > 0 {
			emit(-1-j, ips)
		}
	}
	for _, ip := range single {
		emit(math.MinInt, []instPart{ip})
	}
}

// lossDiagnostics reports, per loss of each rank, where it is, how the
// calls after it were placed, and what could not be.
func (b *build) lossDiagnostics(d *tracefmt.Diagnostics) {
	for _, res := range b.res {
		if res == nil {
			continue
		}
		for _, g := range res.p.loss.afterFin {
			addDiagAt(d, tracefmt.DataLoss, CodeLostEvents, res.p.rank, res.p.file, g.loss.Block,
				"event %d: %s lost before it, after MPI_Finalize: no call to place", g.ev, nEvents(g.loss.Events))
		}
		if !res.p.lossy() {
			continue
		}
		p := res.p
		ls := &p.loss
		per := make([][numUnplaced]int, len(ls.gaps))
		for sg, u := range ls.unplaced {
			g := 0
			if sg > 0 {
				g = ls.segs[sg-1].gap
			}
			for w := range u {
				per[g][w] += u[w]
			}
		}
		lastGap := ls.segs[len(ls.segs)-1].gap
		for gi, g := range ls.gaps {
			l := g.loss
			thread := "of thread " + itoa(l.Thread)
			if l.Thread < 0 {
				thread = "of one or more threads"
			}
			where := fmt.Sprintf("event %d: %s %s lost before it", g.ev, nEvents(l.Events), thread)
			how := "the calls after them are placed from the end of the log"
			switch {
			case gi != lastGap:
				how = "the calls between them and the next loss have no place in the matching order"
			case !ls.tailOK:
				how = "the calls after them have no place in the matching order (the log is incomplete at its end)"
			}
			addDiagAt(d, tracefmt.DataLoss, CodeLostEvents, p.rank, p.file, l.Block, "%s; %s", where, how)
			u := per[gi]
			total := 0
			for _, c := range u {
				total += c
			}
			if total == 0 {
				continue
			}
			var parts []string
			for w, what := range [numUnplaced][2]string{
				unReq:  {"completion, start or free of a request made in the lost events", "completions, starts or frees of requests made in the lost events"},
				unComm: {"call on a communicator defined in the lost events", "calls on communicators defined in the lost events"},
				unRecv: {"receive", "receives"},
				unSend: {"message sent", "messages sent"},
				unColl: {"collective call (a collective vertex of its own)", "collective calls (each a collective vertex of its own)"},
			} {
				if u[w] > 0 {
					parts = append(parts, fmt.Sprintf("%d %s", u[w], plural(u[w], what[0], what[1])))
				}
			}
			at := "after"
			if gi == 0 && ls.unplaced[0] != ([numUnplaced]int{}) {
				at = "around" // receives before it, behind a wildcard whose completion was lost
			}
			addDiagAt(d, tracefmt.DataLoss, CodeUnplacedCalls, p.rank, p.file, l.Block,
				"%s the events lost before event %d, %d %s no place in the matching order, so no message or collective partner: %s",
				at, g.ev, total, plural(total, "call has", "calls have"), strings.Join(parts, ", "))
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// nEvents formats a count of events: "1 event", "5 events".
func nEvents(n uint64) string {
	if n == 1 {
		return "1 event"
	}
	return fmt.Sprintf("%d events", n)
}
