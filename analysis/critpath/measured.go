package critpath

import (
	"cmp"
	"slices"
	"strings"

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

// measured weighs a graph by what the run took (see WeighMeasured).
type measured struct {
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

const firstOp = 2

func (m *measured) opIdx(v taskgraph.NodeID) int { return int(v) - firstOp }

func (m *measured) collIdx(v taskgraph.NodeID) int { return int(v) - firstOp - m.g.NumOps() }

// aligned is op v's effect time on rank 0's clock.
func (m *measured) aligned(v taskgraph.NodeID) int64 {
	return m.t[m.opIdx(v)] + m.clocks.off(m.g.Rank(v))
}

// Cross implements taskgraph.CrossWeights: a message weighs its receive's
// completion minus its send's start (when one call completed several
// messages, that of the one sent last: each weighs as long as it took),
// a nonblocking collective's fan-out the completing call's end minus when
// the collective was done, both on rank 0's clock and at least 0.
func (m *measured) Cross(from, to taskgraph.NodeID, _ int64) float64 {
	if m.g.Kind(from) == taskgraph.KindCollective {
		return float64(max(0, m.aligned(to)-m.done[m.collIdx(from)]))
	}
	return float64(m.msg[m.opIdx(to)])
}

// Message implements taskgraph.Weights (Cross is used instead).
func (m *measured) Message(int64) float64 { return 0 }

// Collective implements taskgraph.Weights: from the last member's arrival
// to when the collective was done.
func (m *measured) Collective(v taskgraph.NodeID) float64 {
	i := m.collIdx(v)
	return float64(m.done[i] - m.last[i])
}

// Op, Part and InitEnd implement taskgraph.Times: an operation becomes
// [effect − wait, effect], a blocking collective call [its start, when
// the collective was done], MPI_Init ends at T0.
func (m *measured) Op(v taskgraph.NodeID, _, _ int64) (int64, int64) {
	i := m.opIdx(v)
	return m.t[i] - m.w[i], m.t[i]
}

func (m *measured) Part(v taskgraph.NodeID, rank int, start, end int64) (int64, int64) {
	if m.g.IsNonblocking(v) {
		return start, end
	}
	return start, m.done[m.collIdx(v)] - m.clocks.off(rank)
}

func (m *measured) InitEnd(rank int, _ int64) int64 { return m.T0 - m.clocks.off(rank) }

// blockingSend and blockingRecv name the calls whose wait states are
// late receiver (the send) and late sender (the receive) by themselves.
func blockingSend(name string) bool {
	switch strings.TrimSuffix(name, "_c") {
	case "MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend":
		return true
	}
	return false
}

func blockingRecv(name string) bool {
	switch strings.TrimSuffix(name, "_c") {
	case "MPI_Recv", "MPI_Mrecv", "MPI_Sendrecv", "MPI_Sendrecv_replace":
		return true
	}
	return false
}

// nxn reports whether a collective is N×N: every member's result needs
// every member's contribution (Scalasca's "wait at N×N").
func nxn(name string) bool {
	n := strings.TrimSuffix(strings.TrimPrefix(name, "MPI_"), "_c")
	// MPI_Iallreduce is the nonblocking MPI_Allreduce.
	return nxnNames[n] || len(n) > 1 && n[0] == 'I' && nxnNames[strings.ToUpper(n[1:2])+n[2:]]
}

var nxnNames = map[string]bool{
	"Allreduce": true, "Allgather": true, "Allgatherv": true, "Alltoall": true, "Alltoallv": true, "Alltoallw": true,
	"Reduce_scatter": true, "Reduce_scatter_block": true,
	"Comm_dup": true, "Comm_dup_with_info": true, "Comm_split": true, "Comm_split_type": true, "Comm_create": true,
	"Cart_create": true, "Cart_sub": true, "Graph_create": true, "Dist_graph_create": true, "Dist_graph_create_adjacent": true,
	"Intercomm_merge": true,
}

func barrier(name string) bool { return name == "MPI_Barrier" || name == "MPI_Ibarrier" }

// rooted says whether a blocking collective is 1×N (the root sends to
// all: Scalasca's late broadcast) or N×1 (all send to the root: early
// reduce).
func rooted(name string) (oneToN, nToOne bool) {
	switch strings.TrimSuffix(name, "_c") {
	case "MPI_Bcast", "MPI_Scatter", "MPI_Scatterv":
		return true, false
	case "MPI_Reduce", "MPI_Gather", "MPI_Gatherv":
		return false, true
	}
	return false, false
}

// weighMeasured computes the measured weights of g.
func weighMeasured(g *taskgraph.Graph, clocks *Clocks) *measured {
	n, nc := g.NumOps(), g.NumCollectives()
	m := &measured{g: g, clocks: clocks, t: make([]int64, n), w: make([]int64, n), msg: make([]int64, n),
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
			m.collWait(name, r, g.PartSite(v, r), min(e-s, last-s))
		}
		m.rootedWaits(v, name, parts)
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
			m.waitGroup(r, off, v, end, in, collBase)
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
func (m *measured) waitGroup(r int, off int64, v, end taskgraph.NodeID, in []taskgraph.NodeID, collBase taskgraph.NodeID) {
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
					m.addWait(StateLateReceiver, sr, sname, site, min(se-ss, s-ss))
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
		m.collWait(cname, r, site, w)
		return
	}
	m.addWait(StateLateSender, r, name, site, w)
}

// rootedWaits adds the waits of a blocking rooted collective v with a
// known root: at a 1×N one each member's wait for the root to arrive
// (late broadcast), at an N×1 one the root's wait for the first other
// member to arrive (early reduce: before, nothing could be sent to it).
func (m *measured) rootedWaits(v taskgraph.NodeID, name string, parts []int) {
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
	first, seen := int64(0), false
	for _, r := range parts {
		if r == root {
			continue
		}
		s, e, _ := times(r)
		if oneToN {
			m.addWait(StateLateBroadcast, r, name, m.g.PartSite(v, r), min(e-s, rs-s))
		} else if !seen || s < first {
			first, seen = s, true
		}
	}
	if nToOne && seen {
		m.addWait(StateEarlyReduce, root, name, m.g.PartSite(v, root), min(re-rs, first-rs))
	}
}

// collWait adds a member's wait at a collective, at call site site of
// rank r's table.
func (m *measured) collWait(name string, r int, site uint32, ns int64) {
	switch {
	case barrier(name):
		m.addWait(StateBarrier, r, name, site, ns)
	case nxn(name):
		m.addWait(StateNxN, r, name, site, ns)
	}
}

// addWait adds ns of rank r's wait in state at a call of fn at call site
// site of r's table (0: not known).
func (m *measured) addWait(state string, r int, fn string, site uint32, ns int64) {
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

// Wait states (Scalasca's names).
const (
	StateLateSender    = "late_sender"
	StateLateReceiver  = "late_receiver"
	StateNxN           = "wait_at_nxn"
	StateBarrier       = "wait_at_barrier"
	StateLateBroadcast = "late_broadcast"
	StateEarlyReduce   = "early_reduce"
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
