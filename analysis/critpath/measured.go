package critpath

import (
	"cmp"
	"slices"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// Weighting says how a path was weighed: the seed's latency model, or
// what the run took (docs/reconstruction.md, "Measured weights").
type Weighting string

const (
	WeightsModel    Weighting = "model"
	WeightsMeasured Weighting = "measured"
)

// ParseWeighting parses "model" or "measured".
func ParseWeighting(s string) (Weighting, bool) {
	switch Weighting(s) {
	case WeightsModel, WeightsMeasured:
		return Weighting(s), true
	}
	return "", false
}

// Clocks are the ranks' clock offsets, from the ClockSync records: Offset
// is the ns to add to a rank's clock to get rank 0's, Err its uncertainty.
// A rank without an entry has offset 0 (ranks of one host share its
// monotonic clock).
type Clocks struct {
	Offset map[int]int64
	Err    map[int]int64
}

func (c *Clocks) off(r int) int64 {
	if c == nil {
		return 0
	}
	return c.Offset[r]
}

// MaxErr is the largest offset uncertainty of any rank, in ns.
func (c *Clocks) MaxErr() int64 {
	var m int64
	if c != nil {
		for _, e := range c.Err {
			m = max(m, e)
		}
	}
	return m
}

// Clamps counts what the measured weights had to clamp at 0: a message
// that completed before it was sent (clock error), and members of a
// collective that left it before its last member arrived (clock error, or
// a rooted collective whose member did not need the others: the path
// through the collective then over-counts up to NS).
type Clamps struct {
	Messages     int   `json:"messages"`
	MessagesNS   int64 `json:"messages_ns"`
	EarlyExits   int   `json:"early_exits"`
	EarlyExitsNS int64 `json:"early_exits_ns"`
}

// measured weighs a graph by what the run took (see ComputeMeasured).
type measured struct {
	// g is the graph weighed, then (ComputeMeasured) its retimed copy:
	// the same ids, names and ranks; orig is the graph as built.
	g, orig *taskgraph.Graph
	clocks  *Clocks
	// ranks are the graph's ranks, off their clock offsets; xw is, per
	// rank (as ranks), the weights of its incoming cross edges in the
	// order of RankView.CrossIn (see Cross).
	ranks []int
	off   []int64
	xw    [][]float64
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
	waits    map[waitKey]*WaitState
	collBase taskgraph.NodeID
	class    []nameClass // by name index (taskgraph.Graph.Describe)
	sends    []sendAt    // waitGroup's, reused
	// lastKey and lastWait are the wait addWait added to last (a rank's
	// calls that wait mostly wait at the same call).
	lastKey  waitKey
	lastWait *WaitState
}

// sendAt is a message's send time on rank 0's clock and its sender's
// rank index (in measured.ranks).
type sendAt struct {
	t  int64
	ri int
}

// waitKey is what the waits are summed by while they are found: a
// WaitKey with the function as its name index.
type waitKey struct {
	state uint8
	fn    int32
	rank  int
	site  uint32
}

const firstOp = 2

func (m *measured) collIdx(v taskgraph.NodeID) int { return int(v - m.collBase) }

// pos returns the index of world rank r in m.ranks (which holds it).
func (m *measured) pos(r int) int {
	if r >= 0 && r < len(m.ranks) && m.ranks[r] == r {
		return r
	}
	i, _ := slices.BinarySearch(m.ranks, r)
	return i
}

// sendTime is operation v's effect time on rank 0's clock, v sending a
// message (its start), and its rank's index in m.ranks.
func (m *measured) sendTime(v taskgraph.NodeID) (int64, int) {
	ri, s := m.orig.OpRankStart(v)
	return s + m.off[ri], ri
}

// Cross implements taskgraph.CrossWeights: a message weighs its receive's
// completion minus its send's start (when one call completed several
// messages, that of the one sent last: each weighs as long as it took),
// a nonblocking collective's fan-out the completing call's end minus when
// the collective was done, both on rank 0's clock and at least 0.
func (m *measured) Cross(_, to taskgraph.NodeID, _ int64) float64 {
	r, x, ok := m.g.CrossInIndex(to)
	if !ok {
		return 0
	}
	return m.xw[m.pos(r)][x]
}

// CrossIn implements taskgraph.CrossTable.
func (m *measured) CrossIn(r int) []float64 { return m.xw[m.pos(r)] }

// Message implements taskgraph.Weights (Cross is used instead).
func (m *measured) Message(int64) float64 { return 0 }

// Collective implements taskgraph.Weights: from the last member's arrival
// to when the collective was done, never negative (Longest relies on it):
// done is never before last, and the difference is taken in float64, which
// times near the ends of int64 (a damaged clock offset) cannot wrap.
func (m *measured) Collective(v taskgraph.NodeID) float64 {
	i := m.collIdx(v)
	return max(0, float64(m.done[i])-float64(m.last[i]))
}

// Op, Part, InitEnd and RankOps implement taskgraph.RankTimes: an
// operation becomes [effect − wait, effect] (RankOps), a blocking
// collective call [its start, when the collective was done], MPI_Init
// ends at T0. Op, which Retimed does not call, gives the retimed times.
func (m *measured) Op(v taskgraph.NodeID, _, _ int64) (int64, int64) { return m.g.OpTimes(v) }

func (m *measured) Part(v taskgraph.NodeID, rank int, start, end int64) (int64, int64) {
	if m.g.IsNonblocking(v) {
		return start, end
	}
	return start, m.done[m.collIdx(v)] - m.clocks.off(rank)
}

func (m *measured) InitEnd(rank int, _ int64) int64 { return m.T0 - m.clocks.off(rank) }

// nameClass says what a function's waits are (reconstruct.ClassifyWait).
type nameClass = reconstruct.WaitClass

const (
	classBlockingSend = reconstruct.ClassBlockingSend
	classBlockingRecv = reconstruct.ClassBlockingRecv
	classBarrier      = reconstruct.ClassBarrier
	classNxN          = reconstruct.ClassNxN
	classOneToN       = reconstruct.ClassOneToN
	classScan         = reconstruct.ClassScan
	classNToOne       = reconstruct.ClassNToOne
)

func classify(name string) nameClass { return reconstruct.ClassifyWait(name) }

// ComputeMeasured returns the longest path from MPI_Init to MPI_Finalize
// weighed by what the run took (docs/reconstruction.md, "Measured
// weights"), the ranks' clocks aligned with clocks (nil: all offsets 0).
// Its length is the run's span on rank 0's clock (Measured.Span). It
// makes a copy of the graph with the measured times (8 bytes an
// operation: Graph.Retimed) and keeps 8 bytes a cross edge of weights.
func ComputeMeasured(g *taskgraph.Graph, clocks *Clocks) (*Path, error) {
	if g.NumOps() == 0 && g.NumCollectives() == 0 {
		return nil, ErrEmpty
	}
	m := weighMeasured(g, clocks)
	rg := m.g
	w := &weigher{g: rg, m: zeroModel{}, colls: make(map[taskgraph.CollectiveInfo]collW), meas: m}
	length, path, err := rg.Longest(m)
	if err != nil {
		return nil, err
	}
	return &Path{Length: length, Weights: WeightsMeasured, g: rg, orig: g, w: w, p: path}, nil
}

// weighMeasured computes the measured weights of g and its retimed copy
// (m.g): the collectives first, then each rank's operations in one walk
// (RankOps) that finds their waits and their incoming cross edges'
// weights and sets their measured times.
func weighMeasured(g *taskgraph.Graph, clocks *Clocks) *measured {
	nc := g.NumCollectives()
	m := &measured{g: g, orig: g, clocks: clocks, ranks: g.Ranks(),
		last: make([]int64, nc), done: make([]int64, nc), waits: map[waitKey]*WaitState{},
		collBase: taskgraph.NodeID(firstOp + g.NumOps())}
	m.off = make([]int64, len(m.ranks))
	for i, r := range m.ranks {
		m.off[i] = clocks.off(r)
	}
	m.xw = make([][]float64, len(m.ranks))
	names := g.Names()
	m.class = make([]nameClass, len(names))
	for i, name := range names {
		m.class[i] = classify(name)
	}
	collBase := m.collBase
	// The first exit of each nonblocking collective: the earliest end of
	// the operations that completed it.
	nb := false
	for c := range nc {
		nb = nb || g.IsNonblocking(collBase+taskgraph.NodeID(c))
	}
	var nbExit []int64
	var nbSeen []bool
	if nb {
		nbExit, nbSeen = make([]int64, nc), make([]bool, nc)
		for i, r := range m.ranks {
			v, _ := g.RankView(r)
			to, from := v.CrossIn()
			for x, f := range from {
				if f >= collBase {
					c := int(f - collBase)
					_, e := v.Times(int(to[x]))
					if t := e + m.off[i]; !nbSeen[c] || t < nbExit[c] {
						nbExit[c], nbSeen[c] = t, true
					}
				}
			}
		}
	}
	// Collectives: last arrival, first exit, the members' waits.
	for c := range nc {
		v := collBase + taskgraph.NodeID(c)
		_, _, name, fn := g.Describe(v)
		cl := m.class[fn]
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
		comp := reconstruct.CollectiveCompletionState(cl, m.orig.CollectiveMovesData(v))
		for _, r := range parts {
			s, e, _ := g.PartTimes(v, r)
			s, e = s+clocks.off(r), e+clocks.off(r)
			if e < m.done[c] {
				m.clamps.EarlyExits++
				m.clamps.EarlyExitsNS += m.done[c] - e
			}
			m.collWait(v, cl, name, fn, r, g.PartSite(v, r), min(e-s, last-s))
			if comp != "" {
				m.addWait(comp, r, name, fn, g.PartSite(v, r), reconstruct.CompletionWait(e, last, exit))
			}
		}
		if cl&classScan != 0 {
			m.scanWaits(v, name, fn, parts)
		}
		m.rootedWaits(v, cl, name, fn, parts)
	}
	t0set := false
	for i, r := range m.ranks {
		if i0, hasI, _, _ := g.RankEnds(r); hasI && (!t0set || i0+m.off[i] < m.T0) {
			m.T0, t0set = i0+m.off[i], true
		}
	}
	for i, r := range m.ranks {
		i0, hasI, f, hasF := g.RankEnds(r)
		if hasF {
			m.Span = max(m.Span, f+m.off[i]-m.T0)
		}
		if hasI {
			m.InitSkew = max(m.InitSkew, i0+m.off[i]-m.T0)
		}
	}
	m.g = g.Retimed(m) // calls RankOps for each rank
	return m
}

// RankOps implements taskgraph.RankTimes: it walks rank v's operations
// in program order, one call at a time, classifies each call's wait
// (waitGroup), weighs its incoming cross edges and sets its operations'
// measured times. The operations of one Waitall-like call (one event, not
// sending) wait as one call, at its first operation, which carries the
// call's times. An operation takes effect at its start when it sends a
// message, at its end otherwise.
func (m *measured) RankOps(v taskgraph.RankView, set *taskgraph.OpSetter) {
	ri := m.pos(v.Rank())
	to, from := v.CrossIn()
	xw := make([]float64, len(to))
	m.xw[ri] = xw
	n := v.Len()
	x := 0
	for i := 0; i < n; {
		s, e := v.Times(i)
		sends := v.Sends(i)
		end := i + 1
		if !sends {
			ev := v.Event(i)
			for end < n && v.Event(end) == ev && !v.Sends(end) {
				end++
			}
		}
		xe := x
		for xe < len(to) && int(to[xe]) < end {
			xe++
		}
		t := e
		if sends {
			t = s
		}
		var w int64
		if xe > x {
			w = m.waitGroup(v, ri, i, s, e, t, to[x:xe], from[x:xe], xw[x:xe])
		}
		set.Set(t-w, t)
		for u := i + 1; u < end; u++ {
			_, e := v.Times(u) // not sending: takes effect at its end
			set.Set(e, e)
		}
		x, i = xe, end
	}
}

// waitGroup classifies the wait of the call whose operations start at
// operation i of rank v (rank index ri), of times [s, e] and effect time
// t, whose operations' incoming cross edges are to and from, weighs those
// edges into xw and returns the first operation's wait.
func (m *measured) waitGroup(v taskgraph.RankView, ri, i int, s, e, t int64, to []uint32, from []taskgraph.NodeID, xw []float64) int64 {
	off := m.off[ri]
	dur := e - s
	s += off
	var best int64
	bestColl := taskgraph.None
	lastSend, sent := int64(0), false
	// The messages' send times and ranks, by edge (sends).
	m.sends = m.sends[:0]
	for _, f := range from {
		var st sendAt
		if f < m.collBase {
			st.t, st.ri = m.sendTime(f)
			if !sent || st.t > lastSend {
				lastSend, sent = st.t, true
			}
		}
		m.sends = append(m.sends, st)
	}
	for x, f := range from {
		u := int(to[x])
		// u's effect time: t for the call's first operation, the end of
		// the others (which do not send).
		tu := t
		if u != i {
			_, tu = v.Times(u)
		}
		tu += off
		var d int64
		if f >= m.collBase {
			c := m.collIdx(f)
			d = m.last[c] - s
			if early := tu - m.done[c]; early < 0 {
				m.clamps.EarlyExits++
				m.clamps.EarlyExitsNS -= early
			}
			xw[x] = float64(max(0, tu-m.done[c]))
		} else {
			sendAt, sri := m.sends[x].t, m.sends[x].ri
			d = sendAt - s
			// The matching send's late receiver: a blocking send that
			// started before this blocking receive was posted.
			if u == i {
				if _, rfn := v.Name(u); m.class[rfn]&classBlockingRecv != 0 {
					_, _, sname, sfn := m.orig.Describe(f)
					if m.class[sfn]&classBlockingSend != 0 {
						// A send that ended before the receive was posted
						// did not wait for it (an eager send).
						ss, se := m.orig.OpTimes(f)
						ss, se = ss+m.off[sri], se+m.off[sri]
						if se >= s {
							_, site := m.orig.OpSite(f)
							m.addWait(StateLateReceiver, m.ranks[sri], sname, sfn, site, min(se-ss, s-ss))
						}
					}
				}
			}
			// A message that completed before it was sent is clock error.
			if late := tu - sendAt; late < 0 {
				m.clamps.Messages++
				m.clamps.MessagesNS -= late
			}
			xw[x] = float64(max(0, tu-lastSend))
		}
		if d > best {
			best = d
			bestColl = taskgraph.None
			if f >= m.collBase {
				bestColl = f
			}
		}
	}
	w := max(0, min(dur, best))
	if w == 0 {
		return 0
	}
	name, fn := v.Name(i)
	// The wait is at the call that waited: for a nonblocking
	// collective, the call that completed it.
	site := v.Site(i)
	r := m.ranks[ri]
	if bestColl != taskgraph.None {
		_, _, cname, cfn := m.orig.Describe(bestColl)
		m.collWait(bestColl, m.class[cfn], cname, cfn, r, site, w)
		return w
	}
	m.addWait(StateLateSender, r, name, fn, site, w)
	return w
}

// rootedWaits adds the waits of a blocking rooted collective v (of class
// cl, function name, name index fn) with a known root: at a 1×N one each
// member's wait for the root to arrive (late broadcast), at an N×1 one the
// root's wait for the last other member to arrive (early reduce, as
// Scalasca 2.6 defines it: before, the root cannot have all it gets).
func (m *measured) rootedWaits(v taskgraph.NodeID, cl nameClass, name string, fn int, parts []int) {
	oneToN, nToOne := cl&classOneToN != 0, cl&classNToOne != 0
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
	lastSend, seen := int64(0), false
	for _, r := range parts {
		if r == root {
			continue
		}
		s, e, _ := times(r)
		if oneToN {
			m.addWait(StateLateBroadcast, r, name, fn, m.g.PartSite(v, r), min(e-s, rs-s))
		} else if !seen || s > lastSend {
			lastSend, seen = s, true
		}
	}
	if nToOne && seen {
		m.addWait(StateEarlyReduce, root, name, fn, m.g.PartSite(v, root), min(re-rs, lastSend-rs))
	}
}

// scanWaits adds the early-scan waits of the members of blocking
// MPI_Scan or MPI_Exscan v (function name, name index fn), in world rank
// order (reconstruct.ScanWaits).
func (m *measured) scanWaits(v taskgraph.NodeID, name string, fn int, parts []int) {
	ranks := slices.Sorted(slices.Values(parts))
	starts, ends := make([]int64, len(ranks)), make([]int64, len(ranks))
	for i, r := range ranks {
		s, e, _ := m.g.PartTimes(v, r)
		starts[i], ends[i] = s+m.clocks.off(r), e+m.clocks.off(r)
	}
	reconstruct.ScanWaits(starts, ends, func(i int, ns int64) {
		m.addWait(StateEarlyScan, ranks[i], name, fn, m.g.PartSite(v, ranks[i]), ns)
	})
}

// collWait adds a member's wait at collective v (of class cl, function
// name, name index fn), at call site site of rank r's table.
func (m *measured) collWait(v taskgraph.NodeID, cl nameClass, name string, fn int, r int, site uint32, ns int64) {
	if st := reconstruct.CollectiveWaitState(cl, m.orig.CollectiveMovesData(v)); st != "" {
		m.addWait(st, r, name, fn, site, ns)
	}
}

// addWait adds ns of rank r's wait in state at a call of name (name
// index fn) at call site site of r's table (0: not known).
func (m *measured) addWait(state string, r int, name string, fn int, site uint32, ns int64) {
	if ns <= 0 {
		return
	}
	k := waitKey{state: stateIndex(state), fn: int32(fn), rank: r, site: site}
	x := m.lastWait
	if x == nil || k != m.lastKey {
		x = m.waits[k]
		if x == nil {
			x = &WaitState{State: state, Rank: r, Function: name, SiteID: site}
			m.waits[k] = x
		}
		m.lastKey, m.lastWait = k, x
	}
	x.Count++
	x.Time += ns
}

// stateIndex numbers the wait states, for waitKey.
func stateIndex(state string) uint8 {
	switch state {
	case StateLateSender:
		return 0
	case StateLateReceiver:
		return 1
	case StateNxN:
		return 2
	case StateBarrier:
		return 3
	case StateLateBroadcast:
		return 4
	case StateEarlyReduce:
		return 5
	case StateEarlyScan:
		return 6
	case StateBarrierCompletion:
		return 7
	}
	return 8 // StateNxNCompletion
}

// Wait states (Scalasca's names).
const (
	StateLateSender    = reconstruct.StateLateSender
	StateLateReceiver  = reconstruct.StateLateReceiver
	StateNxN           = reconstruct.StateNxN
	StateBarrier       = reconstruct.StateBarrier
	StateLateBroadcast = reconstruct.StateLateBroadcast
	StateEarlyReduce   = reconstruct.StateEarlyReduce
	StateEarlyScan     = reconstruct.StateEarlyScan
	// StateBarrierCompletion and StateNxNCompletion: time in a collective
	// after its first member left.
	StateBarrierCompletion = reconstruct.StateBarrierCompletion
	StateNxNCompletion     = reconstruct.StateNxNCompletion
)

// WaitKey is what wait states are summed by. Site is a call site id (0:
// not known), for when call sites are recorded.
type WaitKey struct {
	State    string
	Rank     int
	Function string
	Site     uint32
}

// WaitState is the time one rank waited in one state at one function
// (and, for a trace with call sites, at one call site).
type WaitState struct {
	State    string `json:"state"`
	Rank     int    `json:"rank"`
	Function string `json:"function"`
	// SiteID is the call site's id in the rank's table (0: not known);
	// Site its label, set by LabelSites.
	SiteID uint32  `json:"-"`
	Site   string  `json:"site,omitempty"`
	Count  int     `json:"count"` // calls that waited
	Time   int64   `json:"time_ns"`
	Share  float64 `json:"share"` // of the measured run
}

// waitStates returns the wait states, most time first.
func (m *measured) waitStates(run int64) []WaitState {
	out := make([]WaitState, 0, len(m.waits))
	for _, x := range m.waits {
		if run > 0 {
			x.Share = float64(x.Time) / float64(run)
		}
		out = append(out, *x)
	}
	sortWaits(out)
	return out
}

func sortWaits(ws []WaitState) {
	slices.SortFunc(ws, func(a, b WaitState) int {
		return cmp.Or(cmp.Compare(b.Time, a.Time), cmp.Compare(a.State, b.State), cmp.Compare(a.Rank, b.Rank),
			cmp.Compare(a.Function, b.Function), cmp.Compare(a.Site, b.Site), cmp.Compare(a.SiteID, b.SiteID))
	})
}

// LabelSites names the wait states' call sites with label, merging the
// rows of one rank's state and function whose sites share a label; nil
// label (a trace without call sites) leaves them as they are.
func (r *RunInfo) LabelSites(label SiteLabel) {
	if r == nil || label == nil {
		return
	}
	type key struct {
		state, fn, site string
		rank            int
	}
	idx := map[key]int{}
	out := r.WaitStates[:0]
	for _, x := range r.WaitStates {
		x.Site = UnknownSite
		if x.SiteID != 0 {
			if l := label(x.Rank, x.SiteID); l != "" {
				x.Site = l
			}
		}
		k := key{x.State, x.Function, x.Site, x.Rank}
		if i, ok := idx[k]; ok {
			y := &out[i]
			y.Count += x.Count
			y.Time += x.Time
			y.Share += x.Share
			y.SiteID = min(y.SiteID, x.SiteID)
			continue
		}
		idx[k] = len(out)
		out = append(out, x)
	}
	r.WaitStates = out
	r.sites = true
	sortWaits(r.WaitStates)
}
