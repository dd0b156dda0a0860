package reconstruct

import (
	"fmt"
	"slices"
	"sync"

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
// A group sends what it produced after each rank it replays (another
// group may be waiting for it) and takes what came; with nothing to
// replay it waits. When every group waits and no message is on its way,
// every rank reads ahead, as the single replay does when every rank waits
// (resolve's reading ahead of a sender waiting itself becomes that, for
// a sender of another group). The path does not depend on the order in
// which the ranks are replayed, so it is the single replay's, and so are
// the diagnostics: once every rank is replayed, one engine takes every
// group's ranks, channels and instances' findings and makes the result
// as the single replay does. The steps' ids are not the graph's
// (Shape.IDs is false): an instance's id needs its place among those of
// its lowest participant, which only that rank's group counted in full.
//
// This is the algorithm the analysis as an MPI job runs (docs/
// reconstruction.md, "The analysis as an MPI job"), in one process: the
// messages are Go values, and the result is made with every group's
// state at hand.

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
		e.grp = &group{id: g, owner: owner, e: e, defs: defs, out: make([][]xmsg, groups), reach: make(map[commKey][]int)}
		for i, r := range e.ranks {
			if !r.remote {
				e.enqueue(int32(i))
			}
		}
		engines[g] = e
	}
	c := &coord{engines: engines, quiet: make(chan struct{}, 1)}
	for _, e := range engines {
		e.grp.c = c
		e.grp.wake = make(chan struct{}, 1)
		e.grp.cmd = make(chan int, 1)
	}
	stalls, err := c.run()
	if err != nil {
		return nil, err
	}
	return merge(engines, owner, stalls)
}

// firstErr is the error of the first group that stopped.
func firstErr(engines []*engine) error {
	for _, e := range engines {
		if e.err != nil {
			return e.err
		}
	}
	return nil
}

// merge makes the result of the groups' replay: the first engine, made
// the view of every group's ranks, channels and findings.
func merge(engines []*engine, owner []int32, stalls int) (*ReplayResult, error) {
	e0 := engines[0]
	own := func(i int) *engine { return engines[owner[i]] }
	for i := range e0.ranks {
		e0.ranks[i] = own(i).ranks[i]
	}
	e0.merged = nil
	var diags []instDiag
	e0.nrecs = 0
	var sh shapeCount
	sh.nlow = make([]uint32, len(e0.ranks))
	for g, e := range engines {
		e0.merged = append(e0.merged, e.chans)
		if e.fin.rank >= 0 && (e0.fin.rank < 0 || e.fin.val > e0.fin.val || e.fin.val == e0.fin.val && e.fin.rank < e0.fin.rank) {
			e0.fin = e.fin
		}
		e0.maxQueued = max(e0.maxQueued, e.maxQueued)
		e0.nrecs += e.ownLow
		sh.messages += e.shape.messages
		sh.crossEdges += e.shape.crossEdges
		sh.nbCalls += e.shape.nbCalls
		sh.unordered = sh.unordered || e.shape.unordered
		for _, d := range e.instDiags {
			if i := e.index(int(d.minRank)); i >= 0 && owner[i] == int32(g) {
				diags = append(diags, d)
			}
		}
	}
	for i := range sh.nlow {
		if n := own(i).shape.nlow; n != nil {
			sh.nlow[i] = n[i]
		}
	}
	e0.shape = sh
	e0.stalls = stalls
	e0.instDiags = diags
	res, err := e0.result()
	if err != nil {
		return nil, err
	}
	res.Shape.IDs = false // (see above)
	return res, nil
}

// group is an engine's place among the engines of ReplayGroups.
type group struct {
	id    int
	owner []int32 // by rank index: the group that replays the rank
	e     *engine
	defs  *sharedDefs
	out   [][]xmsg // by group: the messages for it
	// reach are, by communicator, the other groups with a member.
	reach map[commKey][]int
	c     *coord
	inbox [][]xmsg      // batches sent to the group (under c.mu)
	wake  chan struct{} // a batch came
	cmd   chan int      // what the coordinator says a waiting group does
	// behind are the ranks asked to read ahead that read aheadMax events
	// and were not done.
	behind []*streamRank
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

func (g *group) send(to int, x xmsg) { g.out[to] = append(g.out[to], x) }

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
// that still wait; false when it read nothing.
func (g *group) goAhead() bool {
	l := g.behind
	g.behind = nil
	read := false
	for _, r := range l {
		if len(r.ahead) > 0 && (r.blocked || r.finished) && !r.done {
			read = g.readAhead(r) || read
		}
	}
	return read
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

// coord runs the groups of ReplayGroups, each on a goroutine of its own:
// a group replays what it can, sends what crosses groups, and takes what
// the others sent; when every group waits and no message is on its way,
// every rank reads ahead (the coordinator does it, the groups waiting),
// and the groups go on, until every rank is replayed or the data has a
// cycle.
type coord struct {
	engines []*engine
	mu      sync.Mutex
	idle    int // groups waiting
	flight  int // batches sent and not taken yet
	failed  bool
	// quiet says every group waits and none has a batch coming (once:
	// quietSent, until the groups go on).
	quiet     chan struct{}
	quietSent bool
}

// Commands to a waiting group.
const (
	cmdGo = iota
	cmdStop
)

func (c *coord) run() (stalls int, err error) {
	var wg sync.WaitGroup
	for _, e := range c.engines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.grp.loop()
		}()
	}
	stop := func() {
		for _, e := range c.engines {
			e.grp.cmd <- cmdStop
		}
		wg.Wait()
	}
	chunk := 1
	for range c.quiet {
		// Every group waits in loop.
		if err := firstErr(c.engines); err != nil {
			stop()
			return 0, err
		}
		stuck, read := 0, false
		for _, e := range c.engines {
			for _, r := range e.ranks {
				if r.remote || r.finished {
					continue
				}
				stuck++
				if !r.done {
					e.read(r, chunk)
					read = true
				}
			}
		}
		if err := firstErr(c.engines); err != nil {
			stop()
			return 0, err
		}
		if stuck == 0 {
			stop()
			return stalls, nil
		}
		queued := false
		for _, e := range c.engines {
			queued = queued || len(e.runq) > 0
			for _, l := range e.grp.out {
				queued = queued || len(l) > 0
			}
		}
		if !read && !queued {
			stop()
			for _, e := range c.engines {
				for _, r := range e.ranks {
					if !r.remote && !r.finished {
						return 0, e.stuckError()
					}
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
		c.mu.Lock()
		c.idle, c.quietSent = 0, false
		c.mu.Unlock()
		for _, e := range c.engines {
			e.grp.cmd <- cmdGo
		}
	}
	return stalls, nil
}

// loop is a group's goroutine.
func (g *group) loop() {
	c := g.c
	for {
		g.e.drain()
		if g.e.err != nil {
			c.mu.Lock()
			c.failed = true
			c.mu.Unlock()
		}
		g.flush()
		if g.take() || g.goAhead() {
			continue
		}
		c.mu.Lock()
		if len(g.inbox) > 0 {
			c.mu.Unlock()
			continue
		}
		c.idle++
		if !c.quietSent && c.idle == len(c.engines) && (c.flight == 0 || c.failed) {
			c.quietSent = true
			c.quiet <- struct{}{}
		}
		c.mu.Unlock()
		if !g.wait() {
			return
		}
	}
}

// wait waits, idle, for a batch or the coordinator's command; false to
// stop.
func (g *group) wait() bool {
	c := g.c
	for {
		select {
		case <-g.wake:
			c.mu.Lock()
			if c.quietSent || len(g.inbox) == 0 {
				// A batch already taken, or the coordinator's turn.
				c.mu.Unlock()
				continue
			}
			c.idle--
			c.mu.Unlock()
			return true
		case cmd := <-g.cmd:
			return cmd != cmdStop
		}
	}
}

// flush sends the group's messages, a batch to each group.
func (g *group) flush() {
	c := g.c
	for to, l := range g.out {
		if len(l) == 0 {
			continue
		}
		dst := c.engines[to].grp
		c.mu.Lock()
		c.flight++
		dst.inbox = append(dst.inbox, l)
		c.mu.Unlock()
		select {
		case dst.wake <- struct{}{}:
		default:
		}
		g.out[to] = nil
	}
}

// take applies the batches sent to the group; false when there were none.
func (g *group) take() bool {
	c := g.c
	c.mu.Lock()
	in := g.inbox
	g.inbox = nil
	c.mu.Unlock()
	if len(in) == 0 {
		return false
	}
	for _, b := range in {
		for i := range b {
			g.apply(&b[i])
		}
	}
	c.mu.Lock()
	c.flight -= len(in)
	c.mu.Unlock()
	return true
}
