package reconstruct

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// The messages between groups as bytes: what one group sends another in
// a round (replay_part.go) is a batch, the sender's status then its
// messages in the order they were made. A batch may define, before a
// message that uses them, a function name (the groups' name tables
// number names in the order each met them) and a communicator's members
// (a group knows only the descriptions its own ranks made): each is
// defined once to each group.

// Message kinds of a batch beyond xkind's: definitions.
const (
	xName xkind = 64 + iota // a name: its number at the sender, the name
	xDef                    // a communicator's members
)

// roundStatus is what a group says of itself with its batches of a round.
type roundStatus struct {
	sent int // messages sent in the round, to any group
	// After a round in which no group sent anything: ranks not yet
	// replayed, whether it read ahead, whether it has work or messages.
	stuck  int
	read   bool
	queued bool
	// failed: the group's replay stopped with err (declined: decl, rank);
	// stuckErr is where it stops when nothing is left to read.
	failed   bool
	decl     bool
	declRank int
	err      string
	stuckErr string
	// Under measured weights, the first round's: the earliest end of
	// MPI_Init of the group's ranks on rank 0's clock (hasT0: one has).
	hasT0 bool
	t0    int64
}

// wire is a group's side of the batches' encoding.
type wire struct {
	// By group: the names and communicators defined to it, and its names
	// numbers to this group's.
	namesTo []map[taskgraph.NameID]bool
	defsTo  []map[commKey]bool
	namesOf []map[uint64]taskgraph.NameID
}

func newWire(groups int) *wire {
	w := &wire{namesTo: make([]map[taskgraph.NameID]bool, groups), defsTo: make([]map[commKey]bool, groups),
		namesOf: make([]map[uint64]taskgraph.NameID, groups)}
	for i := range w.namesTo {
		w.namesTo[i] = make(map[taskgraph.NameID]bool)
		w.defsTo[i] = make(map[commKey]bool)
		w.namesOf[i] = make(map[uint64]taskgraph.NameID)
	}
	return w
}

func appendF(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendCK(b []byte, ck commKey) []byte {
	b = binary.AppendUvarint(b, ck.gid)
	return binary.AppendVarint(b, int64(ck.self))
}

func (d *recDec) f() float64 {
	if len(d.b) < 8 {
		d.bad, d.b = true, nil
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

func (d *recDec) str() string {
	n := d.u()
	if n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *recDec) bool() bool { return d.u() != 0 }

func (d *recDec) ck() commKey { return commKey{gid: d.u(), self: int32(d.s())} }

func (d *recDec) i32() int32 {
	v := d.s()
	if v != int64(int32(v)) {
		d.bad, d.b = true, nil
	}
	return int32(v)
}

func (d *recDec) u32() uint32 {
	v := d.u()
	if v > math.MaxUint32 {
		d.bad, d.b = true, nil
	}
	return uint32(v)
}

func appendStatus(b []byte, st *roundStatus) []byte {
	var f uint64
	for i, v := range []bool{st.read, st.queued, st.failed, st.decl, st.err != "", st.stuckErr != "", st.hasT0} {
		if v {
			f |= 1 << i
		}
	}
	b = binary.AppendUvarint(b, f)
	b = binary.AppendUvarint(b, uint64(st.sent))
	b = binary.AppendUvarint(b, uint64(st.stuck))
	if st.decl {
		b = binary.AppendVarint(b, int64(st.declRank))
	}
	if st.err != "" {
		b = appendStr(b, st.err)
	}
	if st.stuckErr != "" {
		b = appendStr(b, st.stuckErr)
	}
	if st.hasT0 {
		b = binary.AppendVarint(b, st.t0)
	}
	return b
}

func (d *recDec) status() roundStatus {
	f := d.u()
	st := roundStatus{read: f&1 != 0, queued: f&2 != 0, failed: f&4 != 0, decl: f&8 != 0}
	st.sent, st.stuck = int(d.u()), int(d.u())
	if st.decl {
		st.declRank = int(d.s())
	}
	if f&16 != 0 {
		st.err = d.str()
	}
	if f&32 != 0 {
		st.stuckErr = d.str()
	}
	if st.hasT0 = f&64 != 0; st.hasT0 {
		st.t0 = d.s()
	}
	return st
}

// name appends to b, for group to, the definition of name id if to has
// not had it.
func (w *wire) name(b []byte, g *group, to int, id taskgraph.NameID) []byte {
	if w.namesTo[to][id] {
		return b
	}
	w.namesTo[to][id] = true
	b = append(b, byte(xName))
	b = binary.AppendUvarint(b, uint64(id))
	return appendStr(b, g.e.names.name(id))
}

// appendMsgKey appends what names message m and its call: its number,
// channel (the sender's number and key) and event (recDec.msgKey reads
// them).
func appendMsgKey(b []byte, m *smsg) []byte {
	b = binary.AppendVarint(b, int64(m.id))
	b = binary.AppendUvarint(b, uint64(m.ch))
	b = binary.AppendUvarint(b, uint64(m.key.comm))
	b = binary.AppendVarint(b, int64(m.key.peer))
	b = binary.AppendVarint(b, m.key.tag)
	return binary.AppendVarint(b, m.ev)
}

// msgKey reads what appendMsgKey appended into m.
func (d *recDec) msgKey(m *smsg) {
	m.id, m.ch = d.i32(), d.u32()
	m.key = chanKey{comm: d.u32(), peer: d.i32(), tag: d.s()}
	m.ev = d.s()
}

// encode appends message x, for group to, to b.
func (w *wire) encode(b []byte, g *group, to int, x *xmsg) []byte {
	switch x.kind {
	case xSend:
		b = w.name(b, g, to, x.m.sname)
	case xPart:
		b = w.name(b, g, to, x.pr.name)
		if ck := x.ik.ck; ck.gid != 1 && ck.self < 0 && !w.defsTo[to][ck] {
			w.defsTo[to][ck] = true
			mem, _ := g.e.memberSet(ck)
			b = append(b, byte(xDef))
			b = appendCK(b, ck)
			b = binary.AppendUvarint(b, uint64(len(mem.list)))
			for _, r := range mem.list {
				b = binary.AppendVarint(b, int64(r))
			}
		}
	}
	b = append(b, byte(x.kind))
	b = binary.AppendVarint(b, int64(x.from))
	switch x.kind {
	case xSend:
		m := &x.m
		b = appendMsgKey(b, m)
		b = binary.AppendUvarint(b, uint64(m.node))
		b = binary.AppendUvarint(b, m.bytes)
		b = binary.AppendUvarint(b, m.req)
		b = appendBool(b, m.settled)
		b = appendBool(b, m.cancelled)
		b = binary.AppendVarint(b, m.start)
		b = binary.AppendVarint(b, m.end)
		b = binary.AppendUvarint(b, uint64(m.sname))
		b = binary.AppendUvarint(b, uint64(m.ssite))
		b = binary.AppendVarint(b, int64(m.dst))
		b = appendCK(b, x.key.ck)
		b = binary.AppendVarint(b, int64(x.key.src))
		b = binary.AppendVarint(b, int64(x.key.dst))
		b = binary.AppendVarint(b, x.key.tag)
	case xNever:
		b = appendMsgKey(b, &x.m)
		b = binary.AppendUvarint(b, x.m.bytes)
	case xSettle:
		b = binary.AppendVarint(b, int64(x.m.id))
		b = appendBool(b, x.m.cancelled)
	case xRx:
		b = binary.AppendVarint(b, int64(x.m.id))
		b = append(b, x.m.rx)
	case xRxAsk:
		b = binary.AppendVarint(b, int64(x.m.id))
	case xNbAsk:
		b = appendCK(b, x.ik.ck)
		b = binary.AppendUvarint(b, uint64(x.ik.k))
	case xNbDone:
		b = appendCK(b, x.ik.ck)
		b = binary.AppendUvarint(b, uint64(x.ik.k))
		b = appendBool(b, x.nb)
		b = binary.AppendVarint(b, x.at)
		b = binary.AppendVarint(b, x.w)
	case xValue:
		b = binary.AppendVarint(b, int64(x.m.id))
		b = appendF(b, x.m.val)
		b = binary.AppendUvarint(b, uint64(x.m.item))
	case xDone:
		e := &x.end
		b = appendBool(b, e.lossy)
		b = appendBool(b, e.complete)
		b = appendStr(b, e.early)
		keys := make([]commKey, 0, len(x.calls))
		for ck := range x.calls {
			keys = append(keys, ck)
		}
		slices.SortFunc(keys, func(a, b commKey) int {
			return cmp.Or(cmp.Compare(a.gid, b.gid), cmp.Compare(a.self, b.self))
		})
		b = binary.AppendUvarint(b, uint64(len(keys)))
		for _, ck := range keys {
			b = appendCK(b, ck)
			b = binary.AppendUvarint(b, uint64(x.calls[ck]))
		}
	case xAhead:
		b = appendCK(b, x.key.ck)
		b = binary.AppendVarint(b, int64(x.key.src))
		b = binary.AppendVarint(b, int64(x.key.dst))
		b = binary.AppendVarint(b, x.key.tag)
	case xPart:
		pr := &x.pr
		b = appendCK(b, x.ik.ck)
		b = binary.AppendUvarint(b, uint64(x.ik.k))
		b = binary.AppendUvarint(b, uint64(pr.comm))
		b = binary.AppendUvarint(b, uint64(pr.name))
		b = appendStr(b, pr.fn)
		b = appendBool(b, pr.nb)
		b = binary.AppendUvarint(b, uint64(pr.at))
		b = binary.AppendVarint(b, pr.root)
		b = binary.AppendUvarint(b, pr.bytes)
		b = binary.AppendUvarint(b, pr.rbytes)
		b = binary.AppendVarint(b, pr.start)
		b = binary.AppendVarint(b, pr.end)
		b = binary.AppendVarint(b, pr.ev)
		b = binary.AppendUvarint(b, uint64(pr.done))
		b = binary.AppendUvarint(b, uint64(x.site))
	case xArrive:
		b = appendCK(b, x.ik.ck)
		b = binary.AppendUvarint(b, uint64(x.ik.k))
		b = appendF(b, x.v)
		b = binary.AppendVarint(b, x.item)
		b = appendBool(b, x.nb)
		b = binary.AppendVarint(b, x.w)
		b = binary.AppendVarint(b, x.at)
		b = binary.AppendUvarint(b, uint64(x.site))
		b = binary.AppendVarint(b, x.ev)
		b = appendBool(b, x.init)
	}
	return b
}

// decode applies the messages of a batch from group from to g (the
// status read first).
func (w *wire) decode(g *group, from int, d *recDec) error {
	e := g.e
	names := w.namesOf[from]
	nameOf := func(v uint64) taskgraph.NameID {
		id, ok := names[v]
		if !ok {
			d.bad, d.b = true, nil
		}
		return id
	}
	for len(d.b) > 0 && e.err == nil {
		k := xkind(d.u())
		switch k {
		case xName:
			v := d.u()
			names[v] = e.names.lookup(d.str()).id
			continue
		case xDef:
			ck := d.ck()
			n := d.u()
			if n == 0 || n > uint64(len(d.b)) {
				return badBatch(from)
			}
			l := make([]int32, n)
			for i := range l {
				l[i] = d.i32()
			}
			if !d.bad {
				g.remoteDef(ck, l)
			}
			continue
		}
		x := xmsg{kind: k, from: d.i32()}
		if x.from < 0 || int(x.from) >= len(e.ranks) {
			d.bad = true
		}
		switch k {
		case xSend:
			m := &x.m
			d.msgKey(m)
			m.node, m.bytes, m.req = d.u32(), d.u(), d.u()
			m.settled, m.cancelled = d.bool(), d.bool()
			m.start, m.end = d.s(), d.s()
			m.sname = nameOf(d.u())
			m.ssite, m.dst = d.u32(), d.i32()
			x.key = pchanKey{ck: d.ck(), src: d.i32(), dst: d.i32(), tag: d.s()}
		case xNever:
			d.msgKey(&x.m)
			x.m.bytes = d.u()
		case xSettle:
			x.m.id, x.m.cancelled = d.i32(), d.bool()
		case xRx:
			x.m.id = d.i32()
			if x.m.rx = uint8(d.u()); x.m.rx != rxTaken && x.m.rx != rxNotTaken {
				d.bad = true
			}
		case xRxAsk:
			x.m.id = d.i32()
		case xNbAsk:
			x.ik = rinstKey{ck: d.ck(), k: d.u32()}
		case xNbDone:
			x.ik = rinstKey{ck: d.ck(), k: d.u32()}
			x.nb, x.at, x.w = d.bool(), d.s(), d.s()
		case xValue:
			x.m.id, x.m.val, x.m.item = d.i32(), d.f(), d.u32()
		case xDone:
			x.end.lossy, x.end.complete, x.end.early = d.bool(), d.bool(), d.str()
			n := d.u()
			if n > uint64(len(d.b)) {
				return badBatch(from)
			}
			x.calls = make(map[commKey]uint32, n)
			for range n {
				ck := d.ck()
				x.calls[ck] = d.u32()
			}
		case xAhead:
			x.key = pchanKey{ck: d.ck(), src: d.i32(), dst: d.i32(), tag: d.s()}
		case xPart:
			pr := &x.pr
			x.ik = rinstKey{ck: d.ck(), k: d.u32()}
			pr.comm = d.u32()
			pr.name = nameOf(d.u())
			pr.fn, pr.nb, pr.at = d.str(), d.bool(), d.u32()
			pr.root, pr.bytes, pr.rbytes = d.s(), d.u(), d.u()
			pr.start, pr.end, pr.ev, pr.done = d.s(), d.s(), d.s(), d.u32()
			x.site = d.u32()
		case xArrive:
			x.ik = rinstKey{ck: d.ck(), k: d.u32()}
			x.v, x.item, x.nb = d.f(), d.s(), d.bool()
			x.w, x.at, x.site, x.ev, x.init = d.s(), d.s(), d.u32(), d.s(), d.bool()
		default:
			d.bad = true
		}
		if d.bad {
			break
		}
		g.apply(&x)
	}
	if d.bad {
		return badBatch(from)
	}
	return nil
}

func badBatch(from int) error { return &BatchError{From: from} }

// BatchError is a batch from another group that cannot be read: an
// internal error, found by its receiver alone. The groups cannot agree
// on it (the batch may be the last of the replay), so whatever runs them
// must stop them all: an MPI job aborts (MPI_Abort), ReplayGroups stops
// its exchange.
type BatchError struct {
	From int // the sender's group
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("internal error: reconstruct: a damaged batch from group %d", e.From)
}
