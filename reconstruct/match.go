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
		if snd.bytes < math.MaxUint32 && rc.sbytes < math.MaxUint32 && rc.cap < math.MaxUint32 {
			switch {
			case snd.bytes > uint64(rc.cap):
				addDiag(&res.joinDiags, tracefmt.Error, CodeMessageTruncated, r, p.file,
					"event %d: rank %d sent %d bytes to a receive of %d bytes (MPI_ERR_TRUNCATE)", rb.Event(rc.node), s, snd.bytes, rc.cap)
			case snd.bytes != uint64(rc.sbytes):
				addDiag(&res.joinDiags, tracefmt.Warning, CodeMessageSize, r, p.file,
					"event %d: rank %d sent %d bytes but the receive's status counts %d; the edge carries %d", rb.Event(rc.node), s, snd.bytes, rc.sbytes, snd.bytes)
			}
		}
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
	k := p.recvCh.keys[c]
	s := int(k.peer)
	sev, note := b.missing(s)
	addDiag(&res.joinDiags, sev, CodeUnmatchedRecv, p.rank, p.file,
		"event %d: receive from rank %d (tag %d, %s) matched no message%s", b.gb.Rank(p.rank).Event(node), s, k.tag, commName(p.keys[k.comm]), note)
}

// unmatchedSend reports that no receive took the message of send si (on
// send channel c) of the rank of res.
func (b *build) unmatchedSend(res *rankResult, c int, si uint32) {
	p := res.p
	k := p.sendCh.keys[c]
	dst := int(k.peer)
	sev, note := b.missing(dst)
	s := p.sends.at(int(si))
	addDiag(&res.sendDiags, sev, CodeUnmatchedSend, p.rank, p.file, "event %d: message to rank %d (tag %d, %s, %d bytes) was never received%s",
		b.gb.Rank(p.rank).Event(s.node), dst, k.tag, commName(p.keys[k.comm]), s.bytes, note)
}
