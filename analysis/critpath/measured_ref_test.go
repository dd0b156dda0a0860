package critpath

// The measured weights as they were computed before the one walk of
// RankOps (commit 13d04ea): arrays of effect times, waits and message
// weights per operation, then Graph.Retimed operation by operation. The
// equivalence test compares the two.

import "github.com/mpitrace/mpitrace/reconstruct/taskgraph"

// refMeasured is measured as it was.
type refMeasured struct {
	g      *taskgraph.Graph
	clocks *Clocks
	// Per operation (by id - 2), on its rank's clock: the time it takes
	// effect (a sending operation's start, any other's end), and the
	// time inside it that a message or collective explains (its wait).
	t, w []int64
	// msg is, per operation that completes a message, the message's
	// weight (see Cross).
	msg []int64
	// Per collective (by index): the last member's arrival and when the
	// collective is done (X: last arrival, or the first exit if later),
	// on rank 0's clock.
	last, done []int64
	// T0 is the earliest end of MPI_Init on rank 0's clock, Span the
	// latest start of MPI_Finalize minus T0.
	T0, Span int64
	// InitSkew is the latest end of MPI_Init minus T0.
	InitSkew int64
	clamps   Clamps
	waits    map[WaitKey]*WaitState
}

func (m *refMeasured) opIdx(v taskgraph.NodeID) int { return int(v) - firstOp }

func (m *refMeasured) collIdx(v taskgraph.NodeID) int { return int(v) - firstOp - m.g.NumOps() }

// aligned is op v's effect time on rank 0's clock.
func (m *refMeasured) aligned(v taskgraph.NodeID) int64 {
	return m.t[m.opIdx(v)] + m.clocks.off(m.g.Rank(v))
}

// Cross implements taskgraph.CrossWeights: a message weighs its receive's
// completion minus its send's start (when one call completed several
// messages, that of the one sent last: each weighs as long as it took),
// a nonblocking collective's fan-out the completing call's end minus when
// the collective was done, both on rank 0's clock and at least 0.
func (m *refMeasured) Cross(from, to taskgraph.NodeID, _ int64) float64 {
	if m.g.Kind(from) == taskgraph.KindCollective {
		return float64(max(0, m.aligned(to)-m.done[m.collIdx(from)]))
	}
	return float64(m.msg[m.opIdx(to)])
}

// Message implements taskgraph.Weights (Cross is used instead).
func (m *refMeasured) Message(int64) float64 { return 0 }

// Collective implements taskgraph.Weights: from the last member's arrival
// to when the collective was done.
func (m *refMeasured) Collective(v taskgraph.NodeID) float64 {
	i := m.collIdx(v)
	return float64(m.done[i] - m.last[i])
}

// Op, Part and InitEnd implement taskgraph.Times: an operation becomes
// [effect − wait, effect], a blocking collective call [its start, when
// the collective was done], MPI_Init ends at T0.
func (m *refMeasured) Op(v taskgraph.NodeID, _, _ int64) (int64, int64) {
	i := m.opIdx(v)
	return m.t[i] - m.w[i], m.t[i]
}

func (m *refMeasured) Part(v taskgraph.NodeID, rank int, start, end int64) (int64, int64) {
	if m.g.IsNonblocking(v) {
		return start, end
	}
	return start, m.done[m.collIdx(v)] - m.clocks.off(rank)
}

func (m *refMeasured) InitEnd(rank int, _ int64) int64 { return m.T0 - m.clocks.off(rank) }

// refWeigh is weighMeasured as it was: the measured weights of g, for g.Retimed.
func refWeigh(g *taskgraph.Graph, clocks *Clocks) *refMeasured {
	n, nc := g.NumOps(), g.NumCollectives()
	m := &refMeasured{g: g, clocks: clocks, t: make([]int64, n), w: make([]int64, n), msg: make([]int64, n),
		last: make([]int64, nc), done: make([]int64, nc), waits: map[WaitKey]*WaitState{}}
	collBase := taskgraph.NodeID(firstOp + n)
	// in[i] is op i's incoming cross edge's source (None: none).
	in := make([]taskgraph.NodeID, n)
	sender := make([]bool, n)
	nbExit := make([]int64, nc) // the first exit of a nonblocking collective
	nbSeen := make([]bool, nc)
	for _, r := range g.Ranks() {
		first, k := g.RankOps(r)
		off := clocks.off(r)
		for v := first; v < first+taskgraph.NodeID(k); v++ {
			i := m.opIdx(v)
			_, m.t[i] = g.OpTimes(v)
			in[i] = taskgraph.None
		}
		for e := range g.RankCrossIn(r) {
			i := m.opIdx(e.To)
			switch {
			case e.Kind == taskgraph.Message:
				in[i] = e.From
				sender[m.opIdx(e.From)] = true
			case e.From >= collBase:
				in[i] = e.From
				c := int(e.From - collBase)
				if x := m.t[i] + off; !nbSeen[c] || x < nbExit[c] {
					nbExit[c], nbSeen[c] = x, true
				}
			}
		}
	}
	for i := range m.t {
		if sender[i] {
			m.t[i], _ = g.OpTimes(taskgraph.NodeID(i + firstOp))
		}
	}
	// Collectives: last arrival, first exit, the members' waits.
	for c := range nc {
		v := collBase + taskgraph.NodeID(c)
		_, _, name, _ := g.Describe(v)
		nb := g.IsNonblocking(v)
		parts := g.Participants(v)
		last, exit, seen := int64(0), int64(0), false
		for j, r := range parts {
			s, e, _ := g.PartTimes(v, r)
			a := s // a blocking call arrives at its start, a posting call at its end
			if nb {
				a = e
			}
			a += clocks.off(r)
			e += clocks.off(r)
			if j == 0 || a > last {
				last = a
			}
			if !nb && (!seen || e < exit) {
				exit, seen = e, true
			}
		}
		if nb {
			exit, seen = nbExit[c], nbSeen[c]
		}
		m.last[c], m.done[c] = last, last
		if seen && exit > last {
			m.done[c] = exit
		}
		if nb {
			continue
		}
		for _, r := range parts {
			s, e, _ := g.PartTimes(v, r)
			s, e = s+clocks.off(r), e+clocks.off(r)
			if e < m.done[c] {
				m.clamps.EarlyExits++
				m.clamps.EarlyExitsNS += m.done[c] - e
			}
			m.refCollWait(v, name, r, g.PartSite(v, r), min(e-s, last-s))
			// After the first member left (and after the last arrived).
			if from := max(exit, last); e > from && (barrier(name) || nxn(name) && g.CollectiveMovesData(v)) {
				st := StateBarrierCompletion
				if !barrier(name) {
					st = StateNxNCompletion
				}
				m.refAddWait(st, r, name, g.PartSite(v, r), e-from)
			}
		}
		if scan(name) {
			// Each member waits for the last arrival below it.
			for _, r := range parts {
				s, e, _ := g.PartTimes(v, r)
				s, e = s+clocks.off(r), e+clocks.off(r)
				below, any := int64(0), false
				for _, q := range parts {
					if q < r {
						qs, _, _ := g.PartTimes(v, q)
						if qs += clocks.off(q); !any || qs > below {
							below, any = qs, true
						}
					}
				}
				if any {
					m.refAddWait(StateEarlyScan, r, name, g.PartSite(v, r), min(e-s, below-s))
				}
			}
		}
		m.refRootedWaits(v, name, parts)
	}
	// Receives and waits: the late sender's (or nonblocking collective's)
	// wait, which the message (or fan-out) explains. The operations of
	// one Waitall-like call (one event, not sending) wait as one call, at
	// its first operation, which carries the call's times.
	for _, r := range g.Ranks() {
		first, k := g.RankOps(r)
		off := clocks.off(r)
		for v := first; v < first+taskgraph.NodeID(k); {
			ev := g.OpEvent(v)
			end := v + 1
			for !sender[m.opIdx(v)] && end < first+taskgraph.NodeID(k) && g.OpEvent(end) == ev && !sender[m.opIdx(end)] {
				end++
			}
			m.refWaitGroup(r, off, v, end, in, collBase)
			v = end
		}
	}
	t0set := false
	for _, r := range g.Ranks() {
		if i0, hasI, _, _ := g.RankEnds(r); hasI && (!t0set || i0+clocks.off(r) < m.T0) {
			m.T0, t0set = i0+clocks.off(r), true
		}
	}
	for _, r := range g.Ranks() {
		i0, hasI, f, hasF := g.RankEnds(r)
		if hasF {
			m.Span = max(m.Span, f+clocks.off(r)-m.T0)
		}
		if hasI {
			m.InitSkew = max(m.InitSkew, i0+clocks.off(r)-m.T0)
		}
	}
	return m
}

// waitGroup classifies the wait of the operations [v, end) of rank r (one
// call) and sets the first one's wait.
func (m *refMeasured) refWaitGroup(r int, off int64, v, end taskgraph.NodeID, in []taskgraph.NodeID, collBase taskgraph.NodeID) {
	g := m.g
	s, e := g.OpTimes(v)
	dur := e - s
	s += off
	var best int64
	bestColl := taskgraph.None
	lateRecv := false
	lastSend, sent := int64(0), false
	for u := v; u < end; u++ {
		if from := in[m.opIdx(u)]; from != taskgraph.None && from < collBase {
			if x := m.aligned(from); !sent || x > lastSend {
				lastSend, sent = x, true
			}
		}
	}
	for u := v; u < end; u++ {
		from := in[m.opIdx(u)]
		if from == taskgraph.None {
			continue
		}
		var x int64
		if from >= collBase {
			x = m.last[int(from-collBase)] - s
		} else {
			x = m.aligned(from) - s
			// The matching send's late receiver: a blocking send that
			// started before this blocking receive was posted.
			if !lateRecv && u == v {
				_, _, rname, _ := g.Describe(u)
				_, sr, sname, _ := g.Describe(from)
				// A send that ended before the receive was posted did
				// not wait for it (an eager send).
				ss, se := g.OpTimes(from)
				ss, se = ss+m.clocks.off(sr), se+m.clocks.off(sr)
				if blockingSend(sname) && blockingRecv(rname) && se >= s {
					_, site := g.OpSite(from)
					m.refAddWait(StateLateReceiver, sr, sname, site, min(se-ss, s-ss))
				}
			}
			// A message that completed before it was sent is clock error.
			if d := m.aligned(u) - m.aligned(from); d < 0 {
				m.clamps.Messages++
				m.clamps.MessagesNS -= d
			}
			m.msg[m.opIdx(u)] = max(0, m.aligned(u)-lastSend)
		}
		if x > best {
			best = x
			bestColl = taskgraph.None
			if from >= collBase {
				bestColl = from
			}
		}
		if from >= collBase {
			if d := m.aligned(u) - m.done[int(from-collBase)]; d < 0 {
				m.clamps.EarlyExits++
				m.clamps.EarlyExitsNS -= d
			}
		}
	}
	w := max(0, min(dur, best))
	m.w[m.opIdx(v)] = w
	if w == 0 {
		return
	}
	_, _, name, _ := g.Describe(v)
	// The wait is at the call that waited: for a nonblocking
	// collective, the call that completed it.
	_, site := g.OpSite(v)
	if bestColl != taskgraph.None {
		_, _, cname, _ := g.Describe(bestColl)
		m.refCollWait(bestColl, cname, r, site, w)
		return
	}
	m.refAddWait(StateLateSender, r, name, site, w)
}

// rootedWaits adds the waits of a blocking rooted collective v with a
// known root: at a 1×N one each member's wait for the root to arrive
// (late broadcast), at an N×1 one the root's wait for the last other
// member to arrive (early reduce, Scalasca 2.6's definition).
func (m *refMeasured) refRootedWaits(v taskgraph.NodeID, name string, parts []int) {
	oneToN, nToOne := rooted(name)
	root, ok := m.g.CollectiveRoot(v)
	if !oneToN && !nToOne || !ok {
		return
	}
	times := func(r int) (int64, int64, bool) {
		s, e, ok := m.g.PartTimes(v, r)
		return s + m.clocks.off(r), e + m.clocks.off(r), ok
	}
	rs, re, ok := times(root)
	if !ok {
		return
	}
	last, seen := int64(0), false
	for _, r := range parts {
		if r == root {
			continue
		}
		s, e, _ := times(r)
		if oneToN {
			m.refAddWait(StateLateBroadcast, r, name, m.g.PartSite(v, r), min(e-s, rs-s))
		} else if !seen || s > last {
			last, seen = s, true
		}
	}
	if nToOne && seen {
		m.refAddWait(StateEarlyReduce, root, name, m.g.PartSite(v, root), min(re-rs, last-rs))
	}
}

// collWait adds a member's wait at collective v, at call site site of
// rank r's table: an N×N one only when it moves data.
func (m *refMeasured) refCollWait(v taskgraph.NodeID, name string, r int, site uint32, ns int64) {
	switch {
	case barrier(name):
		m.refAddWait(StateBarrier, r, name, site, ns)
	case nxn(name) && m.g.CollectiveMovesData(v):
		m.refAddWait(StateNxN, r, name, site, ns)
	}
}

// addWait adds ns of rank r's wait in state at a call of fn at call site
// site of r's table (0: not known).
func (m *refMeasured) refAddWait(state string, r int, fn string, site uint32, ns int64) {
	if ns <= 0 {
		return
	}
	k := WaitKey{State: state, Rank: r, Function: fn, Site: site}
	x := m.waits[k]
	if x == nil {
		x = &WaitState{State: state, Rank: r, Function: fn, SiteID: site}
		m.waits[k] = x
	}
	x.Count++
	x.Time += ns
}

// The reference's classes of names (reconstruct.ClassifyWait).
func blockingSend(name string) bool { return classify(name)&classBlockingSend != 0 }
func blockingRecv(name string) bool { return classify(name)&classBlockingRecv != 0 }
func barrier(name string) bool      { return classify(name)&classBarrier != 0 }
func nxn(name string) bool          { return classify(name)&classNxN != 0 }
func scan(name string) bool         { return classify(name)&classScan != 0 }
func rooted(name string) (oneToN, nToOne bool) {
	c := classify(name)
	return c&classOneToN != 0, c&classNToOne != 0
}
