package reconstruct

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"slices"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// The result of a replay in groups, made by the groups together once
// every rank is replayed (group.result): the first group's is the
// result, the same as the single replay's.
//
//  1. Every group gives every other its ranks' shapes (rankShape), its
//     counts and the end of its longest path; and to the group of each
//     sender, the messages left on its channels (never received). Every
//     group then knows the path's end and the graph's shape (the steps'
//     ids).
//  2. Every group gives the first its names and its parts of the
//     diagnostics (replay.go's diagnostics, in its order), its
//     communicators in the order of first calls with their members, and
//     its ranks' call-site tables.
//  3. The walk back goes from group to group: the group of the path's end
//     walks while the path stays on its ranks, sends the steps it found to
//     the first group and the walk's position to the group of the rank
//     the path goes on, and so on, a round each, until MPI_Init.

// partSum is what a group says of itself in the first exchange.
type partSum struct {
	FinVal     float64
	FinRank    int32 // index, -1: none
	MaxQueued  int
	Recs       uint32 // complete instances whose lowest participant it replayed
	Messages   int
	CrossEdges int
	NbCalls    int
	Unordered  bool
	Ranks      []rankShape  // its ranks', by index
	Left       []leftMsg    // messages to the receiver's group's ranks never received
	Run        *MeasuredRun // under measured weights: its ranks' (added up)
}

// leftMsg is a message never received, for its sender's group.
type leftMsg struct {
	From, ID  int32
	Ch        uint32
	Comm      uint32 // the sender's chanKey
	Peer      int32
	Tag       int64
	Ev        int64
	Bytes     uint64
	Cancelled bool
}

// partTail is what a group gives the first in the second exchange.
type partTail struct {
	Names []string
	Pass  *tracefmt.Diagnostics
	Comms []partComm
	Inst  []partInst
	Match *tracefmt.Diagnostics
	Left  *tracefmt.Diagnostics
	Sites map[int]*tracefmt.Sites
}

type partComm struct {
	GID     uint64
	Self    int32
	Members []int32
}

type partInst struct {
	MinRank int32
	Ev      int64
	Diags   *tracefmt.Diagnostics
}

// gobBytes encodes v with gob.
func gobBytes(v any) ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(v)
	return b.Bytes(), err
}

// swap is an exchange of the result's making: send[g] for group g, with
// the group's error (nil: none) before it; the first failed group's
// error stops every group.
func (g *group) swap(t Transport, send [][]byte, failed error) ([][]byte, error) {
	for to := range send {
		var head []byte
		if failed != nil {
			head = appendStr(append(head, 1), failed.Error())
		} else {
			head = append(head, 0)
		}
		send[to] = append(head, send[to]...)
	}
	recv, err := t.Alltoall(send)
	if err != nil {
		return nil, err
	}
	if len(recv) != len(send) {
		return nil, fmt.Errorf("internal error: reconstruct: %d batches for %d groups", len(recv), len(send))
	}
	for from, b := range recv {
		d := recDec{b: b}
		if d.u() != 0 {
			if from == g.id && failed != nil {
				return nil, failed
			}
			if msg := d.str(); !d.bad {
				return nil, errors.New(msg)
			}
		}
		if d.bad {
			return nil, badBatch(from)
		}
		recv[from] = d.b
	}
	if failed != nil {
		return nil, failed
	}
	return recv, nil
}

// result makes the replay's result with the other groups (see above):
// the first group's, nil for the others.
func (g *group) result(t Transport, stalls int) (*ReplayResult, error) {
	e := g.e
	n := len(g.out)
	own := func(i int32) bool { return g.owner[i] == int32(g.id) }

	// 1. Shapes, counts, ends; the messages never received.
	sum := partSum{FinVal: e.fin.val, FinRank: e.fin.rank, MaxQueued: e.maxQueued, Recs: e.ownLow,
		Messages: e.shape.messages, CrossEdges: e.shape.crossEdges, NbCalls: e.shape.nbCalls, Unordered: e.shape.unordered}
	if e.meas {
		sum.Run = e.measuredRun()
	}
	for i, r := range e.ranks {
		if !r.remote {
			sum.Ranks = append(sum.Ranks, e.rankShape(i, r))
		}
	}
	match := e.matchDiags()
	left := make([][]leftMsg, n)
	g.ending = true // no more rounds: the messages left go with the sums
	e.leftovers(func(m *smsg) {
		if own(m.from) {
			s := e.ranks[m.from]
			s.noRecv = append(s.noRecv, m)
			return
		}
		to := g.owner[m.from]
		left[to] = append(left[to], leftMsg{From: m.from, ID: m.id, Ch: m.ch, Comm: m.key.comm, Peer: m.key.peer, Tag: m.key.tag, Ev: m.ev, Bytes: m.bytes, Cancelled: m.cancelled})
	})
	send := make([][]byte, n)
	var err error
	for to := range send {
		s := sum
		s.Left = left[to]
		if send[to], err = gobBytes(&s); err != nil {
			break
		}
	}
	recv, err := g.swap(t, send, err)
	if err != nil {
		return nil, err
	}
	// What cannot be read stops the group at once, a BatchError (the
	// groups that read theirs may return before another exchange: "no
	// operations"), which stops them all.
	sums := make([]partSum, n)
	for from, b := range recv {
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&sums[from]); err != nil {
			return nil, badBatch(from)
		}
		for _, l := range sums[from].Left {
			if l.From < 0 || int(l.From) >= len(e.ranks) || !own(l.From) {
				return nil, badBatch(from)
			}
			s := e.ranks[l.From]
			s.noRecv = append(s.noRecv, &smsg{from: l.From, id: l.ID, ch: l.Ch, key: chanKey{comm: l.Comm, peer: l.Peer, tag: l.Tag}, ev: l.Ev, bytes: l.Bytes, cancelled: l.Cancelled})
		}
	}
	var perr error
	fin := finBest{rank: -1}
	res := &ReplayResult{Stalls: stalls}
	if e.meas {
		runs := make([]*MeasuredRun, 0, len(sums))
		for _, s := range sums {
			runs = append(runs, s.Run)
		}
		res.Run = addRuns(runs)
	}
	var ranks []rankShape
	var sh shapeCount
	var colls uint32
	for _, s := range sums {
		if s.FinRank >= 0 && (fin.rank < 0 || s.FinVal > fin.val || s.FinVal == fin.val && s.FinRank < fin.rank) {
			fin = finBest{val: s.FinVal, rank: s.FinRank}
		}
		res.MaxQueued = max(res.MaxQueued, s.MaxQueued)
		colls += s.Recs
		sh.messages += s.Messages
		sh.crossEdges += s.CrossEdges
		sh.nbCalls += s.NbCalls
		sh.unordered = sh.unordered || s.Unordered
		ranks = append(ranks, s.Ranks...)
	}
	if len(ranks) != len(e.ranks) || int(fin.rank) >= len(e.ranks) {
		return nil, fmt.Errorf("internal error: reconstruct: the groups' shapes of %d ranks, of %d", len(ranks), len(e.ranks))
	}
	if fin.rank < 0 {
		return nil, fmt.Errorf("the task graph has no operations: no path from MPI_Init to MPI_Finalize")
	}
	res.Length = fin.val
	shapeOf(res, e.size, ranks, int(colls), sh)
	res.Shape.IDs = false // an instance's id needs its place among its lowest participant's, which only its group counted

	// 2. Names, diagnostics, communicators, sites: to the first group.
	var tail partTail
	e.names.mu.Lock()
	tail.Names = slices.Clone(e.names.names)
	e.names.mu.Unlock()
	tail.Pass, tail.Match, tail.Left = e.passDiags(), match, e.noRecvDiags()
	for _, ck := range e.collOrder(nil, nil) {
		pc := partComm{GID: ck.gid, Self: ck.self}
		if m, ok := e.memberSet(ck); ok && m.world == 0 {
			pc.Members = m.list
		}
		tail.Comms = append(tail.Comms, pc)
	}
	for _, d := range e.instDiags {
		if i := e.index(int(d.minRank)); i >= 0 && own(int32(i)) {
			tail.Inst = append(tail.Inst, partInst{MinRank: d.minRank, Ev: d.ev, Diags: &d.diags})
		}
	}
	tail.Sites = make(map[int]*tracefmt.Sites)
	for _, r := range e.ranks {
		if !r.remote && r.sites != nil {
			tail.Sites[r.rank] = r.sites
		}
	}
	send = make([][]byte, n)
	send[0], err = gobBytes(&tail)
	recv, err = g.swap(t, send, err)
	if err != nil {
		return nil, err
	}
	if g.id == 0 {
		res.Diags = &tracefmt.Diagnostics{}
		tails := make([]partTail, n)
		var order []commKey
		seen := make(map[commKey]bool)
		var inst []instDiag
		res.sites = make(map[int]*tracefmt.Sites)
		for from, b := range recv {
			tl := &tails[from]
			if err := gob.NewDecoder(bytes.NewReader(b)).Decode(tl); err != nil {
				perr = cmp.Or(perr, fmt.Errorf("internal error: reconstruct: group %d's diagnostics: %w", from, err))
				tl.Pass, tl.Match, tl.Left = nil, nil, nil
				continue
			}
			for _, name := range tl.Names {
				e.names.lookup(name)
			}
			res.Diags.Merge(tl.Pass)
			for _, pc := range tl.Comms {
				ck := commKey{gid: pc.GID, self: pc.Self}
				if !seen[ck] {
					seen[ck] = true
					order = append(order, ck)
				}
				if pc.Members != nil {
					g.learnDef(ck, pc.Members)
				}
			}
			for _, pi := range tl.Inst {
				inst = append(inst, instDiag{minRank: pi.MinRank, ev: pi.Ev, diags: *pi.Diags})
			}
			for rank, s := range tl.Sites {
				res.sites[rank] = s
			}
		}
		if perr == nil {
			res.Diags.Merge(e.collDiags(order, inst))
			for _, tl := range tails {
				res.Diags.Merge(tl.Match)
			}
			for _, tl := range tails {
				res.Diags.Merge(tl.Left)
			}
		}
	}
	e.names.mu.Lock()
	res.names = append(slices.Clip(e.names.names), "MPI_Init", "MPI_Init_thread", "MPI_Finalize")
	e.names.mu.Unlock()
	res.path = blocks{s: &res.store, limit: 32 << 10}
	res.colls = blocks{s: &res.store, limit: 16 << 10}

	// 3. The walk back.
	if err := g.walk(t, res, fin, perr); err != nil {
		res.Close()
		return nil, err
	}
	if g.id != 0 {
		res.Close()
		return nil, nil
	}
	init := nameInit
	some, all := false, true
	for _, r := range ranks {
		if r.Init {
			some = true
			all = all && r.InitTh
		}
	}
	if some && all {
		init = nameInitThread
	}
	res.add(&ReplayStep{Kind: taskgraph.KindInit, Rank: -1, Event: noEvent, SiteRank: -1, ID: taskgraph.Init}, res.sharedName(init))
	res.path.flush()
	res.colls.flush()
	if res.store.err != nil {
		res.Close()
		return nil, res.store.err
	}
	return res, nil
}

// learnDef takes a communicator's members as another group knows them
// (for the diagnostics: the replay is over).
func (g *group) learnDef(ck commKey, members []int32) {
	g.defs.mu.Lock()
	defer g.defs.mu.Unlock()
	if _, ok := g.defs.m[ck]; !ok {
		g.defs.m[ck] = members
	}
}

// walk walks the path back with the other groups, from the path's end
// fin, each group over its ranks; the first group adds the steps to res
// (but MPI_Init's). A group's error (perr: one found before) stops every
// group at the next round.
func (g *group) walk(t Transport, res *ReplayResult, fin finBest, perr error) error {
	e := g.e
	n := len(g.out)
	var steps []byte // found, for the first group
	k := e.walker(res, func(st *ReplayStep, name int) error {
		if g.id == 0 {
			res.add(st, name)
			return nil
		}
		steps = g.appendStep(steps, res, st, name)
		return nil
	})
	holds := g.owner[fin.rank] == int32(g.id)
	err := perr
	if holds && err == nil {
		e.fin = fin
		err = k.start()
	}
	for {
		send := make([][]byte, n)
		done := false
		if holds && err == nil {
			done, err = k.run()
			if err == nil && !done {
				to := g.owner[k.ri]
				send[to] = g.appendPos(append(send[to], 1), res, k)
				holds = false
			}
		}
		if len(steps) > 0 {
			send[0] = binary.AppendUvarint(append(send[0], 2), uint64(len(steps)))
			send[0] = append(send[0], steps...)
			steps = steps[:0]
		}
		if done {
			for to := range send {
				send[to] = append(send[to], 3)
			}
		}
		recv, serr := g.swap(t, send, err)
		if serr != nil {
			return serr
		}
		over := false
		for from, b := range recv {
			d := recDec{b: b}
			for len(d.b) > 0 && !d.bad {
				switch d.u() {
				case 1:
					if holds {
						d.bad = true
						break
					}
					holds = true
					g.pos(&d, res, k)
				case 2:
					l := d.u()
					if g.id != 0 || l > uint64(len(d.b)) {
						d.bad = true
						break
					}
					sd := recDec{b: d.b[:l]}
					d.b = d.b[l:]
					for len(sd.b) > 0 && !sd.bad {
						st, name := g.step(&sd, res)
						if !sd.bad {
							res.add(&st, name)
						}
					}
					d.bad = sd.bad
				case 3:
					over = true
				default:
					d.bad = true
				}
			}
			if d.bad {
				return badBatch(from) // BatchError: every group is stopped
			}
		}
		if over {
			return err
		}
	}
}

// appendName appends name, an index in res.names: a shared name's place,
// or the name.
func appendName(b []byte, res *ReplayResult, name int) []byte {
	if sh := name - (len(res.names) - numShared); sh >= 0 {
		return binary.AppendUvarint(b, uint64(sh))
	}
	b = binary.AppendUvarint(b, numShared)
	return appendStr(b, res.names[name])
}

// name decodes a name appendName appended: its index in res.names.
func (g *group) name(d *recDec, res *ReplayResult) int {
	sh := d.u()
	if sh < numShared {
		return res.sharedName(int(sh))
	}
	s := d.str()
	id := g.e.names.lookup(s).id
	if int(id) >= len(res.names)-numShared || res.names[id] != s {
		d.bad = true // a name the first group was not given
	}
	return int(id)
}

// appendStep appends step st, of name index name: a step's record
// against no base (replay.go's encodeStep).
func (g *group) appendStep(b []byte, res *ReplayResult, st *ReplayStep, name int) []byte {
	b = appendName(b, res, name)
	return res.encodeStep(b, stepFlags(st), st, 0, &stepBase{})
}

func (g *group) step(d *recDec, res *ReplayResult) (ReplayStep, int) {
	name := g.name(d, res)
	var st ReplayStep
	res.decodeStep(d, &st, &stepBase{})
	return st, name
}

// appendPos appends the walk's position, for the group that goes on.
func (g *group) appendPos(b []byte, res *ReplayResult, k *walker) []byte {
	b = binary.AppendVarint(b, int64(k.ri))
	b = binary.AppendVarint(b, k.item)
	b = binary.AppendVarint(b, k.n)
	if k.coll == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	b = g.appendStep(b, res, &k.coll.st, k.coll.name)
	ir := &k.coll.ir
	b = appendBool(b, ir.bestNB)
	b = appendBool(b, ir.bestInit)
	b = binary.AppendVarint(b, ir.bestW)
	b = binary.AppendVarint(b, ir.bestAt)
	b = binary.AppendUvarint(b, uint64(ir.bestSite))
	b = binary.AppendVarint(b, ir.bestEv)
	return binary.AppendVarint(b, ir.bestItem)
}

func (g *group) pos(d *recDec, res *ReplayResult, k *walker) {
	k.ri, k.item, k.n = d.i32(), d.s(), d.s()
	if k.ri < 0 || int(k.ri) >= len(g.e.ranks) || g.owner[k.ri] != int32(g.id) {
		d.bad = true
		return
	}
	k.coll = nil
	if d.u() == 0 {
		return
	}
	st, name := g.step(d, res)
	pc := &pendColl{st: st, name: name}
	ir := &pc.ir
	ir.bestNB, ir.bestInit = d.bool(), d.bool()
	ir.bestW, ir.bestAt, ir.bestSite, ir.bestEv, ir.bestItem = d.s(), d.s(), d.u32(), d.s(), d.s()
	k.coll = pc
}
