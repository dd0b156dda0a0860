package reconstruct

import (
	"math"
	"slices"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// Point-to-point matching.
//
// MPI matches messages per (communicator, source, destination, tag):
// messages from one sender that both match a receive are received in the
// order they were sent (non-overtaking), and receives that both match a
// message take messages in the order they were posted. Once every
// receive's actual source and tag are known (from its status for
// wildcards), these two rules make the k-th receive posted on a channel
// take the k-th message sent on it: a receive posted earlier whose
// envelope also fits a message cannot be passed over. Matching is
// therefore a pairing of two ordered lists per channel, with no timing
// involved.

// prepareSends groups the sends of the ri-th rank with a log by channel, in
// posting order, leaving out cancelled ones, and indexes the channels by
// their global key.
func (b *build) prepareSends(ri int) {
	res := b.res[ri]
	if res == nil {
		return
	}
	p := res.p
	nch := len(p.sendCh.keys)
	off := make([]uint32, nch+1)
	for i := 0; i < p.sends.len(); i++ {
		if c := p.sends.at(i).ch; c != cancelled {
			off[c+1]++
		}
	}
	for c := 0; c < nch; c++ {
		off[c+1] += off[c]
	}
	order := make([]uint32, off[nch])
	next := slices.Clone(off[:nch])
	for i := 0; i < p.sends.len(); i++ {
		if c := p.sends.at(i).ch; c != cancelled {
			order[next[c]] = uint32(i)
			next[c]++
		}
	}
	res.sendOrder = order
	res.sendOff = off
	res.paired = make([]uint32, nch)
	res.sendIdx = make(map[gchan]uint32, nch)
	for c, k := range p.sendCh.keys {
		res.sendIdx[gchan{ck: p.keys[k.comm], peer: k.peer, tag: k.tag}] = uint32(c)
	}
	if b.lossy {
		res.taken = make([][]uint64, nch)
	}
	p.sendCh = chanTable{keys: p.sendCh.keys}
}

// join pairs the receives of the ri-th rank with a log with their senders'
// messages and adds the rank's incoming cross edges.
func (b *build) join(ri int) error {
	res := b.res[ri]
	if res == nil {
		return nil
	}
	p := res.p
	r := p.rank
	nrec := p.recvs.len()
	nch := len(p.recvCh.keys)
	off := make([]uint32, nch+1)
	for i := 0; i < nrec; i++ {
		if rc := p.recvs.at(i); !rc.coll() {
			off[rc.ch+1]++
		}
	}
	for c := 0; c < nch; c++ {
		off[c+1] += off[c]
	}
	order := make([]uint32, off[nch])
	next := slices.Clone(off[:nch])
	for i := 0; i < nrec; i++ {
		if rc := p.recvs.at(i); !rc.coll() {
			order[next[rc.ch]] = uint32(i)
			next[rc.ch]++
		}
	}
	next = nil
	const none = ^uint64(0)
	match := make([]uint64, nrec) // sender rank << 32 | index into its sends
	for i := range match {
		match[i] = none
	}
	byPost := func(x, y uint32) int { return int(int64(p.recvs.at(int(x)).post) - int64(p.recvs.at(int(y)).post)) }
	for c := 0; c < nch; c++ {
		seg := order[off[c]:off[c+1]]
		if !slices.IsSortedFunc(seg, byPost) {
			slices.SortStableFunc(seg, byPost)
		}
		if b.lossy && b.pairLossy(res, c, seg, match) {
			continue
		}
		k := p.recvCh.keys[c]
		s := int(k.peer)
		ck := p.keys[k.comm]
		var sends []uint32
		if sres := b.result(s); sres != nil {
			if sc, ok := sres.sendIdx[gchan{ck: ck, peer: int32(r), tag: k.tag}]; ok {
				sends = sres.sendOrder[sres.sendOff[sc]:sres.sendOff[sc+1]]
				sends = sends[:min(len(sends), len(seg))]
				sres.paired[sc] = uint32(len(sends)) // only rank r pairs channel sc of rank s
			}
		}
		for i, si := range sends {
			match[seg[i]] = uint64(s)<<32 | uint64(si)
		}
		for _, j := range seg[len(sends):] {
			if rc := p.recvs.at(int(j)); rc.node != noNode {
				b.unmatchedRecv(res, c, rc.node)
			}
		}
	}
	order = nil
	cnt := 0
	for i := 0; i < nrec; i++ {
		if rc := p.recvs.at(i); rc.node != noNode && (rc.coll() || match[i] != none) {
			cnt++
		}
	}
	rb := b.gb.Rank(r)
	rb.ReserveIncoming(cnt)
	for i := 0; i < nrec; i++ {
		rc := p.recvs.at(i)
		if rc.node == noNode {
			continue
		}
		if rc.coll() {
			if id := res.partNode[rc.ch]; id != taskgraph.None {
				if err := rb.AddIncoming(rc.node, id, 0); err != nil {
					return err
				}
			}
			continue
		}
		m := match[i]
		if m == none {
			continue
		}
		s, si := int(m>>32), int(uint32(m))
		snd := b.result(s).p.sends.at(si)
		sizeDiag(&res.joinDiags, r, p.file, rb.Event(rc.node), s, snd.bytes, rc)
		if err := rb.AddIncoming(rc.node, b.gb.OpID(s, snd.node), snd.bytes); err != nil {
			return err
		}
	}
	p.recvs = chunked[recvRec]{}
	return nil
}

// unmatchedSends reports the messages of the ri-th rank with a log that no
// receive took.
func (b *build) unmatchedSends(ri int) {
	res := b.res[ri]
	if res == nil {
		return
	}
	p := res.p
	for c := range p.sendCh.keys {
		if b.lossy && b.unmatchedLossy(res, c) {
			continue
		}
		for _, si := range res.sendOrder[res.sendOff[c]+res.paired[c] : res.sendOff[c+1]] {
			b.unmatchedSend(res, c, si)
		}
	}
	p.sends = chunked[sendRec]{}
	res.sendOrder = nil
}

// unmatchedRecv reports that no message matched the receive completed by
// operation node on receive channel c of the rank of res.
func (b *build) unmatchedRecv(res *rankResult, c int, node uint32) {
	p := res.p
	unmatchedRecvDiag(&res.joinDiags, p, p.recvCh.keys[c], b.gb.Rank(p.rank).Event(node), b.missing)
}

// unmatchedSend reports that no receive took the message of send si (on
// send channel c) of the rank of res.
func (b *build) unmatchedSend(res *rankResult, c int, si uint32) {
	p := res.p
	s := p.sends.at(int(si))
	unmatchedSendDiag(&res.sendDiags, p, p.sendCh.keys[c], b.gb.Rank(p.rank).Event(s.node), s.bytes, b.missing)
}

// The diagnostics of matching, Build's and the replay's.

// sizeDiag reports, on rank r, a message of bytes from rank s that the
// receive rc (completed by the call of event ev) cannot hold or whose
// status counts otherwise.
func sizeDiag(t *tracefmt.Diagnostics, r int, file string, ev int64, s int, bytes uint64, rc *recvRec) {
	if !sizeDiffers(bytes, rc) {
		return
	}
	switch {
	case bytes > uint64(rc.cap):
		addDiag(t, tracefmt.Error, CodeMessageTruncated, r, file,
			"event %d: rank %d sent %d bytes to a receive of %d bytes (MPI_ERR_TRUNCATE)", ev, s, bytes, rc.cap)
	case bytes != uint64(rc.sbytes):
		addDiag(t, tracefmt.Warning, CodeMessageSize, r, file,
			"event %d: rank %d sent %d bytes but the receive's status counts %d; the edge carries %d", ev, s, bytes, rc.sbytes, bytes)
	}
}

// sizeDiffers reports whether sizeDiag has something to say.
func sizeDiffers(bytes uint64, rc *recvRec) bool {
	if bytes >= math.MaxUint32 || rc.sbytes >= math.MaxUint32 || rc.cap >= math.MaxUint32 {
		return false
	}
	return bytes > uint64(rc.cap) || bytes != uint64(rc.sbytes)
}

// unmatchedRecvDiag reports that no message matched the receive on
// receive channel k of p's rank completed by the call of event ev;
// missing says how to weigh what the sender misses.
func unmatchedRecvDiag(t *tracefmt.Diagnostics, p *rankPass, k chanKey, ev int64, missing func(int) (tracefmt.Severity, string)) {
	s := int(k.peer)
	sev, note := missing(s)
	addDiag(t, sev, CodeUnmatchedRecv, p.rank, p.file,
		"event %d: receive from rank %d (tag %d, %s) matched no message%s", ev, s, k.tag, commName(p.keys[k.comm]), note)
}

// unmatchedSendDiag reports that no receive took the message of bytes
// sent on send channel k of p's rank by the call of event ev.
func unmatchedSendDiag(t *tracefmt.Diagnostics, p *rankPass, k chanKey, ev int64, bytes uint64, missing func(int) (tracefmt.Severity, string)) {
	dst := int(k.peer)
	sev, note := missing(dst)
	addDiag(t, sev, CodeUnmatchedSend, p.rank, p.file, "event %d: message to rank %d (tag %d, %s, %d bytes) was never received%s",
		ev, dst, k.tag, commName(p.keys[k.comm]), bytes, note)
}
