package reconstruct

import (
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// The streaming replay.
//
// Replay finds the longest path from MPI_Init to MPI_Finalize while it
// reads the ranks' events, without the task graph: it is
// taskgraph.Graph.Longest run over operations as a rank's pass (rankPass,
// the same rules as Build) produces them, with the k-th receive posted on
// a channel paired with the k-th message sent on it as soon as both are
// known (match.go's rule, applied as the records come). What it keeps is
// what is still needed: per rank its position, path value and the
// operations read but not yet replayed; per message sent and not yet
// received, per receive completed and not yet paired, per collective
// instance some members reached and others not, what the other side will
// need.
//
// A rank's replay reads its log as far as it goes, and further ahead
// when an operation cannot be weighed yet: the receive a message answers
// takes its place on the channel only once every receive its rank posted
// earlier and that might take the same place is complete (a wildcard
// until its status says where), and a message only once its request says
// it was not cancelled. A replay that waits for a value another rank has
// not reached yet stops, and the other rank's replay wakes it. When no
// replay can go on, every rank reads ahead (a member that never reaches a
// collective is then found at the end of its log); when nothing is left
// to read, the data is inconsistent: a cycle.
//
// Equal paths are broken as Longest breaks them (the chain before a
// message, the lowest rank into a collective and into MPI_Finalize), so
// the path is Longest's.
//
// Declined (NotStreamableError, for Build and Longest to do): logs that
// lost events (rule 7 places a rank's calls after a loss from the end of
// its log), ranks whose calls overlap (several threads: the operations
// are reordered once the log is read), collectives on a communicator
// whose members no call described, communicators two ranks describe
// differently (Build takes the lowest rank's list), calls on a
// communicator by a rank that is not a member, and more than 2^31
// messages sent by one rank.
//
// The diagnostics are Build's, in Build's order (see diagnostics).

// ReplayWeights weigh what crosses ranks, in ns (finite, not negative).
type ReplayWeights interface {
	// Message is the weight of a message of bytes.
	Message(bytes int64) float64
	// Collective is the weight of a collective instance.
	Collective(c taskgraph.CollectiveInfo) float64
}

// NotStreamableError says why Replay declined a trace.
type NotStreamableError struct {
	Rank int
	Why  string
}

func (e *NotStreamableError) Error() string {
	return fmt.Sprintf("rank %d: %s: the streaming replay does not handle it", e.Rank, e.Why)
}

// ReplayStep is a vertex of a path Replay found.
type ReplayStep struct {
	Kind taskgraph.NodeKind
	Name string
	// Rank is an operation's world rank, -1 for the shared vertices.
	Rank int
	// Event locates an operation's event (as taskgraph.Node.Event); Index
	// and Completion are -1 for the shared vertices.
	Event taskgraph.EventRef
	// Cross says the path reached the vertex by a message or a
	// collective's fan-out to a nonblocking completion.
	Cross bool
	// Start and End are an operation's call times; for a collective the
	// earliest start and latest end of its calls (as taskgraph.Node).
	Start, End int64
	// Bytes is an operation's event's bytes, a collective's bytes per
	// process (the model's input); MsgBytes the bytes of the message the
	// path reached the vertex by.
	Bytes, MsgBytes int64
	// A collective's communicator, its members, the calls recorded and
	// whether some call is nonblocking.
	GID          uint64
	Procs        int
	Participants int
	Nonblocking  bool
	// Weight is a collective's weight (the model's time, or under
	// measured weights from the last arrival to when it was done).
	Weight float64
	// Site is the vertex's call site (0: unknown), an id in the call-site
	// table of rank SiteRank (ReplayResult.RankSites): an operation's
	// own, a collective's lowest participant's call's.
	Site     uint32
	SiteRank int
	// In is the edge by which the path reaches the vertex (none for
	// MPI_Init): as taskgraph.Path.Edge gives it, without its end nodes.
	In ReplayEdge
	// ID is the vertex's id in the task graph Build makes of the trace,
	// when ReplayResult.Shape.IDs says so.
	ID taskgraph.NodeID
}

// ReplayEdge is an edge of a path Replay found.
type ReplayEdge struct {
	Kind taskgraph.EdgeKind
	// Rank, Weight and Bytes are taskgraph.Edge's.
	Rank   int
	Weight int64
	Bytes  int64
	// Cross is a cross edge's weight: a message's (the model's latency,
	// or under measured weights its measured time), a nonblocking
	// collective's fan-out (0 under the model).
	Cross float64
	// End is, for a computation edge (any kind but Message) of positive
	// Weight, when the computation ended on rank Rank's clock: the start
	// of the call it leads into (Rank's call of a collective, the start
	// of Rank's MPI_Finalize); 0 for any other edge. The computation ran
	// from End-Weight to End.
	End int64
	// Orig is a chain edge's weight (any edge but a message and a
	// nonblocking collective's fan-out) on the times as recorded: its
	// weight under the model, which measured weights change (Weight is
	// then the retimed one).
	Orig int64
	// FromShift is how much later the call the edge leaves ended on rank
	// Rank as recorded than as retimed under measured weights (a send's own
	// duration); 0 under the model.
	FromShift int64
	// FromSite and ToSite are, when the edge leaves or reaches a
	// collective, the call site of rank Rank's call of it (0: unknown, or
	// not a collective); FromEvent and ToEvent that call's index in rank
	// Rank's event stream (-1: not a collective).
	FromSite, ToSite   uint32
	FromEvent, ToEvent int64
}

// ReplayResult is the longest path Replay found. Its steps are in a
// temporary file when they are many: Close releases it.
type ReplayResult struct {
	// Diags are the reconstruction's diagnostics, Build's (in its order).
	Diags    *tracefmt.Diagnostics
	Length   float64
	NumSteps int
	// MaxQueued is the most operations read and not yet replayed one rank
	// held at once (how far the replay had to read ahead).
	MaxQueued int
	// Stalls counts the times no rank's replay could go on and every rank
	// read ahead.
	Stalls int
	// Run is, under measured weights, the run's span and wait states.
	Run *MeasuredRun
	// RunTime is the largest, over the ranks with both, time from the end
	// of MPI_Init to the start of MPI_Finalize on the rank's clock, as
	// recorded (taskgraph.Graph.RankSpan); 0 when no rank has both.
	RunTime int64
	// Shape is what the task graph of the trace would hold.
	Shape GraphShape

	// By index of rank (ranks: with a log, sorted): the id of its first
	// operation, the instances before its first as lowest participant,
	// its picture's origin (replay_shape.go).
	ranks      []int
	opBase     []taskgraph.NodeID
	collBefore []uint32
	origins    []int64
	collBase   taskgraph.NodeID

	store store
	path  blocks
	colls blocks // the collective steps
	cenc  []byte
	sites map[int]*tracefmt.Sites
	enc   []byte
	base  stepBase // the path block's (encodeStep)
	names []string
}

// ReplaySources replays one Source per rank (each rank at most once),
// reading them in one goroutine.
func ReplaySources(srcs []tracefmt.Source, w ReplayWeights, opts Options) (*ReplayResult, error) {
	e, err := newEngine(srcs, w, opts)
	if err != nil {
		return nil, err
	}
	defer e.close()
	return e.run()
}

// close releases the engine's temporary files (the result's are its own).
func (e *engine) close() {
	e.items.close()
	e.recs.close()
}

// newEngine prepares the replay of srcs.
func newEngine(srcs []tracefmt.Source, w ReplayWeights, opts Options) (*engine, error) {
	size := len(srcs)
	for _, s := range srcs {
		size = max(size, s.Header().Size)
	}
	names := opts.names
	if names == nil {
		names = &nameTable{m: make(map[string]nameInfo)}
	}
	e := &engine{size: size, w: w, opts: opts, names: names,
		chans: make(map[pchanKey]*pchan), insts: make(map[rinstKey]*sinst), live: make(map[commKey][]*sinst),
		fin: finBest{rank: -1}}
	for _, s := range srcs {
		h := s.Header()
		if h.Rank < 0 || h.Rank >= size {
			return nil, fmt.Errorf("a source has rank %d in a world of %d", h.Rank, size)
		}
		e.ranks = append(e.ranks, &streamRank{e: e, rank: h.Rank, src: s})
	}
	slices.SortFunc(e.ranks, func(a, b *streamRank) int { return cmp.Compare(a.rank, b.rank) })
	for i, r := range e.ranks {
		if i > 0 && e.ranks[i-1].rank == r.rank {
			return nil, fmt.Errorf("two sources for rank %d", r.rank)
		}
		r.idx = int32(i)
		r.siteEv = -1
		r.lr, _ = r.src.(tracefmt.LossReporter)
		file := ""
		switch s := r.src.(type) {
		case traceRank:
			file = s.Name()
		case proxyRank:
			file = s.name
		}
		r.file = file
		if opts.owns != nil && !opts.owns(i) {
			// Another group's rank: a proxy (replay_part.go).
			r.remote = true
			continue
		}
		r.p = newRankPass(r.rank, size, file, r, e.names, r.src.Strings())
		r.p.hook(r)
		if opts.Observe != nil {
			r.observe = opts.Observe(r.src.Header(), r.src.Strings())
		}
		r.log = blocks{s: &e.items, limit: min(max(int(blockBudget)/len(srcs), 256), 64<<10)}
	}
	if c := opts.Cut; c != nil && opts.owns == nil && opts.measured == nil {
		e.cut = c
		c.init(len(e.ranks))
	}
	if size <= 4*len(e.ranks)+1024 {
		// A table by world rank (a world may claim many more ranks than
		// have a log: then a search).
		e.byRank = make([]int32, size)
		for i := range e.byRank {
			e.byRank[i] = -1
		}
		for i, r := range e.ranks {
			e.byRank[r.rank] = int32(i)
		}
	}
	return e, nil
}

// preInitMax is the most calls a rank may make before MPI_Init in a
// replay: Build keeps them until MPI_Init drops them, which a log without
// MPI_Init never does (a variable for the tests).
var preInitMax = 1 << 16

// blockBudget is what the ranks' blocks being filled may take together
// (a rank's is 256 bytes to 64 KiB): the walk back's cache holds a decoded
// block of each of up to 256 ranks, about 9 times as large.
const blockBudget = 1 << 20

// engine is one replay.
type engine struct {
	opts Options
	// meas: measured weights (replay_measured.go): off are the ranks'
	// clock offsets (by index), t0 the earliest end of MPI_Init on rank
	// 0's clock.
	meas bool
	off  []int64
	t0   int64
	mrun *measuredRun // the wait states and the run, under measured weights
	// classes are the wait classes of the names classed (class).
	classes []WaitClass
	classed []bool
	items   store // the ranks' item records
	size    int
	w       ReplayWeights
	names   *nameTable
	ranks   []*streamRank // by rank
	// byRank maps a world rank to its index in ranks (-1: no log), when
	// the world is not much larger than the ranks with a log.
	byRank []int32
	chans  map[pchanKey]*pchan
	defs   map[commKey][]int32 // communicators' members, as first described
	// empties counts the channels with nothing in them; gen changes when
	// they are swept (the ranks' caches then miss).
	empties int
	gen     uint32
	insts   map[rinstKey]*sinst
	// nbOpen are, replayed in groups under measured weights, the
	// nonblocking instances not yet timed (sinst.nb), complete or not.
	nbOpen    map[rinstKey]*sinst
	live      map[commKey][]*sinst // instances not complete, by communicator
	nrecs     uint32               // complete instances
	ownLow    uint32               // of them, those whose lowest participant's rank it replays
	recs      store                // their instRecs, by id
	runq      []int32
	fin       finBest
	err       error
	instDiags []instDiag // instances whose calls differ
	maxQueued int
	events    int64 // read
	stalls    int   // times no replay could go on
	shape     shapeCount
	// cut, when not nil, collects a part of the graph (Options.Cut).
	cut *Cut
	// grp, when not nil, is the engine's group among those of a
	// partitioned replay (replay_part.go): it replays the ranks the group
	// owns, the others are its proxies.
	grp *group
}

// replayEvery, when set (by tests), is called every 65,536 events read.
var replayEvery func()

type finBest struct {
	val  float64
	rank int32 // index, -1: none yet
}

// pchanKey is a channel: communicator, sender, receiver, tag.
type pchanKey struct {
	ck       commKey
	src, dst int32
	tag      int64
}

// pchan is a channel's messages sent[sh:] and receives recvs[rh:] not
// paired yet. An empty channel stays in engine.chans until a sweep.
type pchan struct {
	sends []*smsg
	recvs []*srecv
	sh    int
	rh    int
	empty bool // counted in engine.empties
}

func (c *pchan) addSend(e *engine, m *smsg) {
	c.sends = append(c.sends, m)
	c.filled(e)
}

func (c *pchan) addRecv(e *engine, x *srecv) {
	c.recvs = append(c.recvs, x)
	c.filled(e)
}

// dropUnmatched empties channel c, one of whose receives was found
// unmatched, when no message is left on it: its sender's log ended, so
// none of its receives will ever be matched (a receive not yet completed
// is found unmatched when it is, without the channel). The channel does
// not keep the receives from a sender whose log was cut short.
func (c *pchan) dropUnmatched(e *engine) {
	if c.sh != len(c.sends) || c.rh == len(c.recvs) {
		return
	}
	clear(c.recvs[c.rh:])
	c.recvs, c.rh = c.recvs[:0], 0
	c.emptied(e)
}

// emptied counts the channel in engine.empties once it holds nothing.
func (c *pchan) emptied(e *engine) {
	if len(c.sends) == 0 && len(c.recvs) == 0 && !c.empty {
		c.empty = true
		e.empties++
	}
}

func (c *pchan) filled(e *engine) {
	if c.empty {
		c.empty = false
		e.empties--
	}
}

// sweepMin is how many channels must be empty (and half of them) for a
// sweep to drop them (tests lower it).
var sweepMin = 4096

// replayChans is a rank's recently used channels.
type replayChans [8]struct {
	key pchanKey
	c   *pchan
	gen uint32
}

// channel returns the channel of key, made when new.
func (e *engine) channel(r *streamRank, key pchanKey) *pchan {
	if r.cc == nil {
		r.cc = new(replayChans)
	}
	h := (uint32(key.src)*0x9E3779B1 ^ uint32(key.dst)*0x85EBCA77 ^ uint32(key.tag)*0xC2B2AE3D ^ uint32(key.ck.gid)*0x27D4EB2F) >> 29
	ce := &r.cc[h]
	if ce.c != nil && ce.gen == e.gen && ce.key == key {
		return ce.c
	}
	c := e.chans[key]
	if c == nil {
		if e.empties > sweepMin && 2*e.empties > len(e.chans) {
			// Channels of tags used once (a tag per iteration, say).
			for k, c := range e.chans {
				if c.empty {
					delete(e.chans, k)
				}
			}
			e.empties = 0
			e.gen++
		}
		c = &pchan{}
		e.chans[key] = c
	}
	ce.key, ce.c, ce.gen = key, c, e.gen
	return c
}

// unmatchedRec is a receive no message matched, or a message no receive
// took: its channel and place on it (a receive's posting order, a
// message's number), and what its diagnostic says.
type unmatchedRec struct {
	ch    uint32
	seq   uint32
	key   chanKey
	ev    int64
	bytes uint64 // a message's
}

func (a *unmatchedRec) before(b *unmatchedRec) bool {
	return a.ch < b.ch || a.ch == b.ch && a.seq < b.seq
}

// unmatchedSet holds a rank's receives no message matched (or its
// messages no receive took) in bounded memory: the first
// tracefmt.MaxStoredPerCode of them by channel and place, the ones the
// diagnostics store (a heap of the largest first once full), and how many
// others each peer had, which the diagnostics only count. A rank whose
// peer's log was cut short may have millions.
type unmatchedSet struct {
	first []unmatchedRec
	more  map[int32]int
}

func (u *unmatchedSet) add(x unmatchedRec) {
	if len(u.first) < tracefmt.MaxStoredPerCode {
		u.first = append(u.first, x)
		if len(u.first) == tracefmt.MaxStoredPerCode {
			heap.Init(u)
		}
		return
	}
	if u.more == nil {
		u.more = make(map[int32]int)
	}
	if top := &u.first[0]; x.before(top) {
		u.more[top.key.peer]++
		*top = x
		heap.Fix(u, 0)
		return
	}
	u.more[x.key.peer]++
}

// The heap of the first records, the largest first (container/heap's
// methods; add only fixes it, never pushes nor pops).
func (u *unmatchedSet) Len() int           { return len(u.first) }
func (u *unmatchedSet) Less(i, j int) bool { return u.first[j].before(&u.first[i]) }
func (u *unmatchedSet) Swap(i, j int)      { u.first[i], u.first[j] = u.first[j], u.first[i] }
func (u *unmatchedSet) Push(any)           { panic("unmatchedSet: Push") }
func (u *unmatchedSet) Pop() any           { panic("unmatchedSet: Pop") }

// diags adds the set's diagnostics to t, in channel and place order: diag
// adds the one of a record, which has code; the others (beyond those t
// stores) are counted, with the severity missing gives their peer.
func (u *unmatchedSet) diags(t *tracefmt.Diagnostics, code string, diag func(x *unmatchedRec), missing func(int) (tracefmt.Severity, string)) {
	slices.SortFunc(u.first, func(a, b unmatchedRec) int {
		switch {
		case a.before(&b):
			return -1
		case b.before(&a):
			return 1
		}
		return 0
	})
	for i := range u.first {
		diag(&u.first[i])
	}
	for peer, n := range u.more {
		sev, _ := missing(int(peer))
		t.AddCounted(sev, code, n)
	}
}

// sizeMismatch is a message its receive cannot hold or whose status
// counts otherwise.
type sizeMismatch struct {
	seq   uint32 // the receive's place in completion order
	ev    int64
	from  int
	bytes uint64
	rc    recvRec
}

// smsg is a message sent.
type smsg struct {
	from      int32 // sender's index
	id        int32
	ch        uint32  // the sender's send channel's number
	key       chanKey // and the channel
	ev        int64   // the sending call's event
	node      uint32  // sending operation
	item      uint32  // its item on the path record, once replayed
	bytes     uint64
	req       uint64 // 0: a blocking send, settled
	val       float64
	settled   bool
	cancelled bool
	visited   bool
	waiter    int32 // +1: the index of the rank waiting for val; 0 none
	start     int64 // the sending call's start (its rank's clock)
	end       int64 // and end
	sname     taskgraph.NameID
	ssite     uint32
	dst       int32  // world rank
	c         *pchan // its channel, nil: the destination has no log
	rcv       *srecv // the receive that took it, once paired
	remote    bool   // its destination is another group's (replay_part.go)
	// Under measured weights, of a remote message: whether a receive
	// completed by an operation took it, as its destination's group says
	// (rxUnknown until it does), and whether the sender asked.
	rx    uint8
	asked bool
	// never: no receive took it, its destination's log having ended with
	// none left on the channel (pair took it off).
	never bool
}

// A remote message's reception, under measured weights (smsg.rx).
const (
	rxUnknown uint8 = iota
	rxTaken
	rxNotTaken
)

// srecv is a receive completed (or freed), waiting for its message.
type srecv struct {
	rank   int32 // receiver's index
	post   uint32
	ch     uint32  // the receiver's channel's number
	key    chanKey // and the channel
	seq    uint32  // its place in completion order
	ev     int64   // the completing call's event, -1: none
	sbytes uint32
	cap    uint32
	state  uint8
	waited bool
	msg    *smsg
	src    int32  // sender's world rank
	c      *pchan // its channel, once released
}

const (
	recvPending  = iota // its place in the order is not known yet
	recvReleased        // on its channel, no message yet
	recvPaired
	recvUnmatched
)

type rinstKey struct {
	ck commKey
	k  uint32
}

// sinst is a collective instance.
type sinst struct {
	key      rinstKey
	members  memberSet
	expected int // participants to arrive: members with a log, less those known never to
	arrived  int
	done     bool
	best     float64
	bestRank int32 // index
	bestItem int64 // item before the participation (blocking; -1 Init) or the posting operation (nonblocking)
	bestNB   bool
	bestW    int64   // the best arrival's edge weight (blocking: its chain edge)
	bestAt   int64   // and when that edge ended (its call's start)
	bestSite uint32  // and its call's site
	bestEv   int64   // and event
	doneT    int64   // measured weights: when it was done, on rank 0's clock
	data     bool    // some member sent or received a byte (movesData), once complete
	w        float64 // its weight, with val
	// Measured weights of a nonblocking instance (replay_measured.go):
	// its last arrival, the ranks whose calls completed it, the earliest
	// end of those calls; timed once they are all known, valued once its
	// value is.
	lastT    int64
	compl    map[int32]bool
	exitT    int64
	timed    bool
	valued   bool
	bestInit bool  // the best arrival's edge leaves MPI_Init
	anyNB    bool  // some call is nonblocking
	start    int64 // earliest call start
	end      int64 // latest call end
	val      float64
	low      int32 // lowest participant's rank
	lowEv    int64 // and the event of its call
	lowName  taskgraph.NameID
	lowFn    string
	lowSite  uint32
	parts    []partRec // the participants' calls
	sites    []uint32  // measured weights: their call sites
	who      []int32   // and their ranks
	waiters  []int32
	id       uint32 // in engine.recs, once complete
	// nb is, replayed in groups, the groups' agreement on when a
	// nonblocking instance was done (replay_part.go); nil otherwise.
	nb *nbAgree
}

// instRec is what the path needs of a complete instance: how it is
// reached, and what its step says.
type instRec struct {
	bestItem   int64
	bestRank   int32
	name       taskgraph.NameID
	bestNB     bool
	bestInit   bool
	nb         bool
	bestW      int64
	bestAt     int64
	bestSite   uint32
	bestEv     int64
	bytes      int64
	procs      int32
	parts      int32
	gid        uint64
	start, end int64
	low        int32 // lowest participant's rank
	lowSite    uint32
	// lowIdx is its place among the instances whose lowest participant
	// is low, by that participant's call (Build's order of collectives).
	lowIdx uint32
}

// instRecSize is an instRec's size in engine.recs.
const instRecSize = 96

func (e *engine) putInst(ir *instRec) {
	var b [instRecSize]byte
	le := binary.LittleEndian
	le.PutUint64(b[0:], uint64(ir.bestItem))
	le.PutUint32(b[8:], uint32(ir.bestRank))
	le.PutUint16(b[12:], uint16(ir.name))
	if ir.bestNB {
		b[14] |= 1
	}
	if ir.bestInit {
		b[14] |= 2
	}
	if ir.nb {
		b[14] |= 4
	}
	le.PutUint64(b[16:], uint64(ir.bestW))
	le.PutUint64(b[24:], uint64(ir.bytes))
	le.PutUint32(b[32:], uint32(ir.procs))
	le.PutUint32(b[36:], uint32(ir.parts))
	le.PutUint64(b[40:], ir.gid)
	le.PutUint64(b[48:], uint64(ir.start))
	le.PutUint64(b[56:], uint64(ir.end))
	le.PutUint32(b[64:], uint32(ir.low))
	le.PutUint32(b[68:], ir.lowSite)
	le.PutUint64(b[72:], uint64(ir.bestAt))
	le.PutUint32(b[80:], ir.bestSite)
	le.PutUint64(b[84:], uint64(ir.bestEv))
	le.PutUint32(b[92:], ir.lowIdx)
	e.recs.append(b[:])
}

func (e *engine) inst(id int32) (*instRec, error) {
	var b [instRecSize]byte
	if id < 0 || uint32(id) >= e.nrecs {
		return nil, fmt.Errorf("internal error: reconstruct: the path reaches collective instance %d of %d", id, e.nrecs)
	}
	if err := e.recs.readAt(b[:], int64(id)*instRecSize); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	return &instRec{bestItem: int64(le.Uint64(b[0:])), bestRank: int32(le.Uint32(b[8:])), name: taskgraph.NameID(le.Uint16(b[12:])),
		bestNB: b[14]&1 != 0, bestInit: b[14]&2 != 0, nb: b[14]&4 != 0, bestW: int64(le.Uint64(b[16:])), bytes: int64(le.Uint64(b[24:])),
		procs: int32(le.Uint32(b[32:])), parts: int32(le.Uint32(b[36:])), gid: le.Uint64(b[40:]),
		start: int64(le.Uint64(b[48:])), end: int64(le.Uint64(b[56:])), low: int32(le.Uint32(b[64:])), lowSite: le.Uint32(b[68:]),
		bestAt: int64(le.Uint64(b[72:])), bestSite: le.Uint32(b[80:]), bestEv: int64(le.Uint64(b[84:])),
		lowIdx: le.Uint32(b[92:])}, nil
}

// sop is an operation read and not replayed yet.
// Under measured weights (replay_measured.go) start and end become the
// measured times, xw is the weight of the message (or nonblocking
// collective) that reaches the operation, and timed says they are set.
// 88 bytes (a queue of a few ops each on thousands of ranks).
type sop struct {
	start, end   int64
	ostart, oend int64 // the times as recorded (measured weights move start, end)
	ev           int64
	bytes        uint64
	xw           float64
	in           *srecv  // the receive it completes
	collIn       *nbPart // the nonblocking collective it completes, and the rank's call of it
	comp         int32
	site         uint32
	name         taskgraph.NameID
	kind         spec.Kind
	timed        bool
}

// nbPart is a rank's nonblocking collective call not completed yet: the
// instance and the call's site.
type nbPart struct {
	in   *sinst
	site uint32
	ev   int64
}

// spart is a collective call of a rank.
type spart struct {
	at         uint32
	site       uint32
	inst       *sinst
	start, end int64
	ev         int64
	arrived    bool
}

// Items are what a rank's chain holds, in order: its operations and its
// blocking collective calls. itemRec is an item's path record.
type itemRec struct {
	ev           int64
	start, end   int64
	ostart, oend int64   // as recorded (measured weights move start, end)
	psite        uint32  // a part's site; an itemCollIn's call of the collective's
	pev          int64   // an itemCollIn's call of the collective's event
	bytes        uint64  // the operation's
	mbytes       uint64  // the message's that reaches it
	xw           float64 // the weight of the cross edge that reaches it
	cw           float64 // a collective's weight (reached by the item)
	from         int32   // message: sender's index; collective: instance id
	fitem        uint32  // message: the sender's item
	comp         int32
	site         uint32
	op           uint32 // an operation's local index (decodeItems)
	name         taskgraph.NameID
	kind         uint8
}

const (
	itemOp     = iota // reached along the chain
	itemMsg           // an operation reached by its message
	itemCollIn        // an operation reached by its nonblocking collective
	itemPart          // a blocking collective call (from: the instance)
)

// streamRank is a rank's reading and replay; it is the pass's sink.
type streamRank struct {
	e    *engine
	idx  int32
	rank int
	src  tracefmt.Source
	lr   tracefmt.LossReporter
	p    *rankPass
	done bool // read to the end

	// Read and not replayed: operations q[qh:], the first of local index
	// qbase+qh.
	q       []sop
	qh      int
	qbase   uint32
	nops    uint32
	hasInit bool
	hasFin  bool
	initEnd int64
	finStr  int64
	initRec int64 // initEnd as recorded (measured weights move initEnd)
	siteEv  int64 // the event site is the call site of (-1: none)
	site    uint32
	sites   *tracefmt.Sites // the rank's call-site table, once read

	observe   func(*tracefmt.Event)
	sendSeq   int32
	unsettled []*smsg // see unsettle
	uh, ukept int
	// settledNow are the messages the pass settled during the event.
	settledNow []*smsg
	cc         *replayChans
	relN       int // live requests at the last release
	relC       int // cancellations at the last release
	bl         []blocker
	outbox     []*smsg
	oh         int
	pend       []*srecv // receives not on their channel yet, by post
	recvNew    bool
	blk        []spart
	bh         int
	nb         []spart
	nh         int
	nbLive     map[int32]nbPart
	count      []uint32 // collective calls per rank-local communicator key

	// Replay.
	k        uint32 // next operation
	items    uint32
	val      float64
	lastKind uint8
	lastEnd  int64
	queued   bool
	yielded  bool // its replay let the others go first (replayRank)
	finished bool
	rxWait   bool // in its group's rxWaiting (replay_part.go)
	// blocked: its replay waits (for a value, an instance, a message);
	// readWaiters wait for it to wait or to end its log (resolve).
	blocked     bool
	readWaiters []int32
	waitsFor    *sinst // the instance it is among the waiters of
	readAt      int64  // the start of the last event read
	log         blocks // item records
	firstStart  int64  // the start of its first operation, as recorded

	// For the diagnostics of matching (Build's, in Build's order).
	end        rankEnd
	finalCalls map[commKey]uint32 // collective calls by communicator, once read
	collOrder  []commKey          // communicators in the order of the rank's first collective call on each
	recvSeq    uint32             // receives recorded
	unmatched  unmatchedSet
	sizes      []sizeMismatch
	noRecv     []*smsg // messages to ranks without a log
	// neverRecv: its messages no receive took, known before the end
	// (pair), as the records of their diagnostics.
	neverRecv  unmatchedSet
	noRecvKept int // noRecv's length after recordNoRecv
	enc        itemEnc
	slot       int16 // in the walk's cache, -1 none
	file       string
	// remote: another group replays the rank (replay_part.go); rmsgs are
	// its messages to this group's ranks not yet settled and valued.
	remote bool
	rmsgs  map[int32]*smsg
	// waiting (of a proxy) are the group's ranks waiting for its records;
	// ahead (of a rank of the group) are the channels to other groups'
	// ranks on which they wait for its records (replay_part.go).
	waiting map[int32]bool
	ahead   map[pchanKey]bool
}

const (
	posInit uint8 = iota + 1
	posOp
	posPart
	posFin
)

func (r *streamRank) chainW(a uint8, end int64, b uint8, start int64) int64 {
	if a == posInit && !r.hasInit || b == posFin && !r.hasFin {
		return 0
	}
	return max(start-end, 0)
}

// The sink (opSink).

func (r *streamRank) AddOp(o taskgraph.Op) uint32 {
	comp := int32(-1)
	if o.Expanded {
		comp = 0
		// The parts of one call come in one event, before any replay.
		if n := len(r.q); n > r.qh && r.q[n-1].ev == o.Event && r.q[n-1].comp >= 0 {
			comp = r.q[n-1].comp + 1
		}
	}
	var site uint32
	if o.Event == r.siteEv {
		site = r.site
	}
	r.q = append(r.q, sop{start: o.Start, end: o.End, ostart: o.Start, oend: o.End, ev: o.Event, bytes: o.Bytes, name: o.Name, kind: o.Kind, comp: comp, site: site})
	r.nops++
	return r.nops - 1
}

func (r *streamRank) SetSite(ev int64, site uint64) {
	r.siteEv, r.site = ev, uint32(min(site, math.MaxUint32))
}
func (r *streamRank) SetSites(s *tracefmt.Sites) { r.sites = s }
func (r *streamRank) NumOps() int                { return int(r.nops) }
func (r *streamRank) SetInit(end int64)          { r.hasInit, r.initEnd, r.initRec = true, end, end }
func (r *streamRank) SetFinalize(start int64)    { r.hasFin, r.finStr = true, start }
func (r *streamRank) Permute([]uint32) error {
	return fmt.Errorf("the streaming replay does not reorder")
}
func (r *streamRank) Times(uint32) (int64, int64) { return 0, 0 }

// Truncate drops the operations before MPI_Init (n is 0): none was
// replayed, the replay waits for the phase to begin.
func (r *streamRank) Truncate(n int) {
	r.q = r.q[:r.qh+n]
	r.nops = r.qbase + uint32(len(r.q))
}

func (r *streamRank) decline(why string) {
	if r.e.err == nil {
		r.e.err = &NotStreamableError{Rank: r.rank, Why: why}
	}
}

func (r *streamRank) op(local uint32) *sop { return &r.q[local-r.qbase] }

// send is a message on communicator ck to world rank peer.
func (r *streamRank) send(ck commKey, k chanKey, node uint32, bytes uint64, req uint64, ch uint32, ev int64) int32 {
	peer, tag := k.peer, k.tag
	if r.sendSeq == math.MaxInt32 {
		r.decline("more than 2^31 messages sent")
		return -1
	}
	o := r.op(node)
	m := &smsg{from: r.idx, id: r.sendSeq, node: node, bytes: bytes, req: req, settled: req == 0, ch: ch, key: k, ev: ev,
		start: o.start, end: o.end, sname: o.name, ssite: o.site, dst: peer}
	r.sendSeq++
	r.outbox = append(r.outbox, m)
	if req != 0 {
		r.unsettle(m) // its request may yet cancel it
	}
	di := r.e.index(int(peer))
	if di < 0 {
		// Never received (no channel): one without a request is the
		// record of its diagnostic at once; one with a request, once its
		// request says whether it was cancelled.
		if req == 0 {
			r.neverRecv.add(m.unmatched())
		} else {
			r.noRecv = append(r.noRecv, m)
			r.recordNoRecv()
		}
		return m.id
	}
	if g := r.e.grp; g != nil && g.owner[di] != int32(g.id) {
		m.remote = true
		g.sendRec(r, m, pchanKey{ck: ck, src: int32(r.rank), dst: peer, tag: tag}, int(g.owner[di]))
		return m.id
	}
	c := r.e.channel(r, pchanKey{ck: ck, src: int32(r.rank), dst: peer, tag: tag})
	m.c = c
	c.addSend(r.e, m)
	// A message with a request is paired after the event: its request
	// does not know the message yet (settled). One to a rank whose log
	// ended may be one no receive takes.
	if req == 0 && (c.rh < len(c.recvs) || r.e.ranks[di].done) {
		r.e.pair(c)
	}
	return m.id
}

// unmatched is the record of the diagnostic of message m, which no
// receive took.
func (m *smsg) unmatched() unmatchedRec {
	return unmatchedRec{ch: m.ch, seq: uint32(m.id), key: m.key, ev: m.ev, bytes: m.bytes}
}

// recordNoRecv turns the settled messages of r.noRecv into the records of
// their diagnostics (the cancelled ones have none) once it holds twice as
// many as were left unsettled the last time, so that messages to ranks
// without a log are not held.
func (r *streamRank) recordNoRecv() {
	if len(r.noRecv) < 1024 || len(r.noRecv) < 2*r.noRecvKept {
		return
	}
	keep := r.noRecv[:0]
	for _, m := range r.noRecv {
		switch {
		case !m.settled:
			keep = append(keep, m)
		case !m.cancelled:
			r.neverRecv.add(m.unmatched())
		}
	}
	clear(r.noRecv[len(keep):])
	r.noRecv, r.noRecvKept = keep, len(keep)
}

// unsettledMin is how many messages a rank must hold unsettled for
// unsettle to compact them (a variable for the tests).
var unsettledMin = 1024

// unsettle adds m to the messages whose requests may still say they
// were cancelled (unsettled[uh:], by id).
func (r *streamRank) unsettle(m *smsg) {
	if n := len(r.unsettled) - r.uh; n >= unsettledMin && n >= 2*r.ukept {
		// Drop the settled ones behind one that is not. The list is
		// detached while settled runs: settling one trims the list's head
		// of the settled ones behind it, which would clear the entries
		// still to go through.
		old := r.unsettled[r.uh:]
		r.unsettled, r.uh = nil, 0
		keep := old[:0]
		for _, u := range old {
			if u != nil && !r.e.settled(u) {
				keep = append(keep, u)
			}
		}
		clear(old[len(keep):])
		r.unsettled, r.uh, r.ukept = keep, 0, len(keep)
	}
	r.unsettled = append(r.unsettled, m)
}

// settle marks message id settled: its channel pairs it after the event
// (afterEvent). The sender's pass says so; no other rank asks it.
func (r *streamRank) settle(id int32) {
	l := r.unsettled[r.uh:]
	if i, ok := slices.BinarySearchFunc(l, id, func(m *smsg, id int32) int { return cmp.Compare(m.id, id) }); ok && !l[i].settled {
		l[i].settled = true
		r.settledNow = append(r.settledNow, l[i])
	}
}

// changed: the replay passes receives on after each event (afterEvent).
func (r *streamRank) changed() {}

func (r *streamRank) cancel(id int32) {
	l := r.unsettled[r.uh:]
	if i, ok := slices.BinarySearchFunc(l, id, func(m *smsg, id int32) int { return cmp.Compare(m.id, id) }); ok {
		l[i].cancelled = true
	}
}

// recv takes a receive record of the pass.
func (r *streamRank) recv(rc recvRec, k chanKey) {
	if rc.coll() {
		nb := r.nbLive[int32(rc.ch)]
		in := nb.in
		delete(r.nbLive, int32(rc.ch))
		if in != nil && rc.node != noNode {
			o := r.op(rc.node)
			o.collIn = &nbPart{in: in, site: nb.site, ev: nb.ev}
			if r.e.meas {
				in.completed(r, o.end+r.e.off[r.idx])
			}
		}
		return
	}
	x := &srecv{rank: r.idx, post: rc.post, ch: rc.ch, key: k, seq: r.recvSeq, ev: -1, sbytes: rc.sbytes, cap: rc.cap}
	r.recvSeq++
	if rc.node != noNode {
		o := r.op(rc.node)
		o.in, x.ev = x, o.ev
	}
	i, _ := slices.BinarySearchFunc(r.pend, rc.post, func(a *srecv, p uint32) int { return cmp.Compare(a.post, p) })
	r.pend = slices.Insert(r.pend, i, x)
	r.recvNew = true
}

// index returns the index of world rank rank, -1 when it has no log.
func (e *engine) index(rank int) int {
	if e.byRank != nil {
		if rank < 0 || rank >= len(e.byRank) {
			return -1
		}
		return int(e.byRank[rank])
	}
	i, ok := slices.BinarySearchFunc(e.ranks, rank, func(r *streamRank, x int) int { return cmp.Compare(r.rank, x) })
	if !ok {
		return -1
	}
	return i
}

// afterEvent passes what the rank's last event recorded on.
func (e *engine) afterEvent(r *streamRank) {
	p := r.p
	for i := range p.parts {
		e.part(r, &p.parts[i], int32(p.partBase+i))
	}
	p.partBase += len(p.parts)
	p.parts = p.parts[:0]
	if len(r.settledNow) > 0 {
		e.pairSettled(r)
	}
	// Only a receive recorded, or a live one gone (completed, freed,
	// cancelled: the requests change), can let a receive take its place.
	if len(r.pend) > 0 && (r.recvNew || p.reqs.n != r.relN || p.cancels != r.relC) {
		e.release(r)
	}
	r.recvNew = false
	if n := len(r.q) - r.qh; n > e.maxQueued {
		e.maxQueued = n
	}
}

// release passes the rank's receives whose place in the posting order
// is settled to their channels (rankPass.gate).
func (e *engine) release(r *streamRank) {
	p := r.p
	r.pend, r.bl = releaseHeld(p, r.pend, r.bl, func(x *srecv) (uint32, chanKey) { return x.post, x.key }, func(x *srecv, k chanKey) {
		x.src = k.peer
		x.state = recvReleased
		x.c = e.channel(r, pchanKey{ck: p.keys[k.comm], src: k.peer, dst: int32(r.rank), tag: k.tag})
		x.c.addRecv(e, x)
		e.pair(x.c)
	})
	r.relN, r.relC = p.reqs.n, p.cancels
}

// settled reports whether message m's request says whether it was
// cancelled: its sender's pass said so (settle), or its log ended.
func (e *engine) settled(m *smsg) bool { return m.settled }

// pairSettled pairs the messages of rank r that its last event settled,
// and drops the settled ones at the head of its unsettled list.
func (e *engine) pairSettled(r *streamRank) {
	for i, m := range r.settledNow {
		switch {
		case m.remote:
			e.grp.settle(r, m)
		case m.c != nil:
			e.pair(m.c)
		}
		r.settledNow[i] = nil
	}
	r.settledNow = r.settledNow[:0]
	for r.uh < len(r.unsettled) && r.unsettled[r.uh].settled {
		r.unsettled[r.uh] = nil
		r.uh++
	}
	if r.uh == len(r.unsettled) {
		r.unsettled, r.uh = r.unsettled[:0], 0
	}
}

// pair pairs channel c's receives with its messages, in order.
func (e *engine) pair(c *pchan) {
	for c.sh < len(c.sends) {
		m := c.sends[c.sh]
		if !e.settled(m) {
			break
		}
		if !m.cancelled {
			if c.rh == len(c.recvs) {
				break
			}
			x := c.recvs[c.rh]
			c.recvs[c.rh] = nil
			c.rh++
			x.msg, x.state, m.rcv = m, recvPaired, x
			if e.meas && e.grp != nil && e.ranks[m.from].remote {
				e.grp.answer(m) // its sender's retime asks
			}
			if rc := (recvRec{sbytes: x.sbytes, cap: x.cap}); x.ev >= 0 && sizeDiffers(m.bytes, &rc) {
				xr := e.ranks[x.rank]
				xr.sizes = append(xr.sizes, sizeMismatch{seq: x.seq, ev: x.ev, from: e.ranks[m.from].rank, bytes: m.bytes, rc: rc})
			}
			if x.waited {
				e.enqueue(x.rank)
			}
		}
		c.sends[c.sh] = nil
		c.sh++
	}
	// The messages no receive can take any more (their destination's log
	// ended with no receive left on the channel) are kept as the records
	// of their diagnostics, not as messages: a rank whose peer's log was
	// cut short may send millions. Those of another group's rank go to
	// its group, which keeps its records.
	for c.sh < len(c.sends) && c.rh == len(c.recvs) {
		m := c.sends[c.sh]
		if !e.settled(m) {
			break
		}
		if d := e.ranks[e.index(int(m.dst))]; !d.done || d.remote {
			break
		}
		s := e.ranks[m.from]
		if s.remote && e.grp.ending {
			break // its group has it with the messages left (group.result)
		}
		m.never = true
		if !m.cancelled {
			if s.remote {
				e.grp.never(m)
			} else {
				s.neverRecv.add(m.unmatched())
			}
		}
		c.sends[c.sh] = nil
		c.sh++
	}
	c.sends, c.sh = dropHead(c.sends, c.sh)
	c.recvs, c.rh = dropHead(c.recvs, c.rh)
	c.emptied(e)
}

// part takes collective call pr (number abs among the rank's).
func (e *engine) part(r *streamRank, pr *partRec, abs int32) {
	p := r.p
	if int(pr.comm) >= len(r.count) {
		r.count = slices.Grow(r.count, int(pr.comm)+1-len(r.count))[:pr.comm+1]
	}
	key := rinstKey{ck: p.keys[pr.comm], k: r.count[pr.comm]}
	if key.k == 0 {
		r.collOrder = append(r.collOrder, key.ck)
	}
	r.count[pr.comm]++
	in := e.insts[key]
	if in == nil {
		mem, ok := e.members(r, key.ck)
		if !ok {
			r.decline(fmt.Sprintf("collective on %s, whose members no call described", commName(key.ck)))
			return
		}
		in = e.newInst(key, mem)
	}
	if !in.members.has(int32(r.rank)) {
		r.decline(fmt.Sprintf("collective call on %s, of which rank %d is no member", commName(key.ck), r.rank))
		return
	}
	site := uint32(0)
	if pr.ev == r.siteEv {
		site = r.site
	}
	e.join(in, int32(r.rank), pr, site)
	if e.grp != nil {
		e.grp.part(in, r, pr, site)
	}
	sp := spart{at: pr.at, inst: in, start: pr.start, end: pr.end, ev: pr.ev, site: site}
	if pr.nb {
		r.nb = append(r.nb, sp)
		if r.nbLive == nil {
			r.nbLive = make(map[int32]nbPart)
		}
		r.nbLive[abs] = nbPart{in, sp.site, sp.ev}
		return
	}
	r.blk = append(r.blk, sp)
}

// newInst makes instance key of members mem, expecting the members
// with a log that did not end short of it.
func (e *engine) newInst(key rinstKey, mem memberSet) *sinst {
	in := &sinst{key: key, members: mem, low: math.MaxInt32, bestRank: -1}
	e.logged(mem, func(s *streamRank) {
		if !s.done || s.calls(key.ck) > key.k {
			in.expected++
		}
	})
	e.insts[key] = in
	e.live[key.ck] = append(e.live[key.ck], in)
	return in
}

// join adds world rank rank's call pr (at call site site) to in.
func (e *engine) join(in *sinst, rank int32, pr *partRec, site uint32) {
	if rank < in.low {
		in.low, in.lowEv, in.lowName, in.lowFn, in.lowSite = rank, pr.ev, pr.name, pr.fn, site
	}
	in.parts = append(in.parts, *pr)
	in.who = append(in.who, rank)
	if e.meas {
		in.sites = append(in.sites, site)
	}
	if len(in.parts) == 1 || pr.start < in.start {
		in.start = pr.start
	}
	if len(in.parts) == 1 || pr.end > in.end {
		in.end = pr.end
	}
	in.anyNB = in.anyNB || pr.nb
	if pr.nb && in.nb == nil && e.meas && e.grp != nil && len(e.grp.out) > 1 {
		in.nb = &nbAgree{}
		if e.nbOpen == nil {
			e.nbOpen = make(map[rinstKey]*sinst)
		}
		e.nbOpen[in.key] = in
	}
}

// calls returns how many collective calls the rank made on ck.
func (r *streamRank) calls(ck commKey) uint32 {
	if r.remote {
		return r.finalCalls[ck]
	}
	if id, ok := r.p.keyIdx[ck]; ok && int(id) < len(r.count) {
		return r.count[id]
	}
	return 0
}

// defined takes rank r's description of communicator ck's members:
// Build takes the lowest rank's when they differ, which the replay
// cannot know before every rank is read.
func (r *streamRank) defined(ck commKey, members []int32) []int32 {
	e := r.e
	if e.grp != nil {
		return e.grp.defined(r, ck, members)
	}
	if e.defs == nil {
		e.defs = make(map[commKey][]int32)
	}
	return define(e.defs, r, ck, members)
}

// define records rank r's description of ck's members in defs: the first
// description's list, shared, when it is the same; a replay declines
// when they differ.
func define(defs map[commKey][]int32, r *streamRank, ck commKey, members []int32) []int32 {
	d, ok := defs[ck]
	switch {
	case !ok:
		defs[ck] = members
	case slices.Equal(d, members):
		return d // the first description's, shared
	default:
		r.decline(fmt.Sprintf("%s has other members on another rank", commName(ck)))
	}
	return members
}

// members returns communicator ck's members, as rank r knows them.
func (e *engine) members(r *streamRank, ck commKey) (memberSet, bool) {
	switch {
	case ck.gid == 1:
		return memberSet{world: e.size}, true
	case ck.self >= 0:
		return memberSet{list: []int32{ck.self}}, true
	}
	l, ok := r.p.commDefs[ck]
	return memberSet{list: l}, ok
}

// logged calls fn for each member of mem with a log.
func (e *engine) logged(mem memberSet, fn func(*streamRank)) {
	if mem.world > 0 {
		for _, s := range e.ranks {
			fn(s)
		}
		return
	}
	for _, m := range mem.list {
		if i := e.index(int(m)); i >= 0 {
			fn(e.ranks[i])
		}
	}
}

// arrive is rank r's arrival at in with value v, by an edge of weight
// w (from MPI_Init when init) from item (see sinst.bestItem).
func (e *engine) arrive(in *sinst, r *streamRank, v float64, item int64, nb bool, w, at int64, pt *spart, init bool) {
	if e.grp != nil {
		e.grp.arrive(in, r, v, item, nb, w, at, pt, init)
	}
	e.arrival(in, r.idx, v, item, nb, w, at, pt.site, pt.ev, init)
}

// arrival is an arrival at in, of rank index idx (arrive's).
func (e *engine) arrival(in *sinst, idx int32, v float64, item int64, nb bool, w, at int64, site uint32, ev int64, init bool) {
	if in.arrived == 0 || v > in.best || v == in.best && idx < in.bestRank {
		in.best, in.bestRank, in.bestItem, in.bestNB, in.bestW, in.bestAt, in.bestInit = v, idx, item, nb, w, at, init
		in.bestSite, in.bestEv = site, ev
	}
	in.arrived++
	if in.arrived >= in.expected {
		e.complete(in)
	}
}

func (e *engine) complete(in *sinst) {
	if in.done {
		return
	}
	recs := make([]*partRec, len(in.parts))
	for i := range in.parts {
		recs[i] = &in.parts[i]
	}
	procs := in.members.len()
	info := taskgraph.CollectiveInfo{Name: e.names.name(in.lowName), Bytes: collBytes(in.lowFn, recs, procs), Procs: procs}
	in.data = movesData(recs)
	switch {
	case e.meas && in.anyNB:
		// Its weight needs the calls that complete it (instValue).
	case e.meas:
		in.w = e.measuredCollective(in)
		in.val = in.best + in.w
	default:
		in.w = e.w.Collective(info)
		in.val = in.best + in.w
	}
	in.done = true
	in.id = e.nrecs
	e.nrecs++
	if e.grp == nil || e.grp.owns(e.index(int(in.low))) {
		e.ownLow++
	}
	lowIdx := e.shape.lowIndex(e.index(int(in.low)), in.lowEv, len(e.ranks))
	e.putInst(&instRec{lowIdx: lowIdx, name: in.lowName, bestRank: in.bestRank, bestNB: in.bestNB, bestItem: in.bestItem,
		bestW: in.bestW, bestAt: in.bestAt, bestSite: in.bestSite, bestEv: in.bestEv, bestInit: in.bestInit, nb: in.anyNB, bytes: info.Bytes, procs: int32(min(procs, math.MaxInt32)),
		parts: int32(len(in.parts)), gid: in.key.ck.gid, start: in.start, end: in.end, low: in.low, lowSite: in.lowSite})
	e.checkInstance(in)
	if !e.meas || !in.anyNB || in.timed {
		in.parts, in.who, in.compl, in.sites = nil, nil, nil, nil
	}
	delete(e.insts, in.key)
	l := e.live[in.key.ck]
	if i := slices.Index(l, in); i >= 0 {
		l = slices.Delete(l, i, i+1)
	}
	if len(l) == 0 {
		delete(e.live, in.key.ck)
	} else {
		e.live[in.key.ck] = l
	}
	for _, w := range in.waiters {
		e.enqueue(w)
	}
	in.waiters = nil
}

func (e *engine) enqueue(i int32) {
	r := e.ranks[i]
	if r.remote {
		panic(fmt.Sprintf("internal error: reconstruct: rank %d, another group's, queued", r.rank))
	}
	if !r.queued && !r.finished {
		r.queued = true
		e.runq = append(e.runq, i)
	}
}

// read reads up to n more events of the rank; false when its log is
// read to the end (or the replay stops).
func (e *engine) read(r *streamRank, n int) bool {
	for ; n > 0 && !r.done && e.err == nil; n-- {
		if !r.src.Next() {
			e.finishRank(r)
			return false
		}
		ev := r.src.Event()
		r.readAt = ev.Start
		if r.lr != nil {
			if l := r.lr.Lost(); l.Events > 0 {
				r.decline("the log lost events")
				return false
			}
		}
		r.p.Event(ev)
		if r.p.phase == phaseBefore && len(r.q)-r.qh > preInitMax {
			// Kept until MPI_Init drops them: without it, all of the log.
			r.decline(fmt.Sprintf("more than %d calls before MPI_Init", preInitMax))
			return false
		}
		e.afterEvent(r)
		if r.observe != nil {
			r.observe(ev)
		}
		if e.events++; e.events&0xffff == 0 {
			if replayEvery != nil {
				replayEvery()
			}
			if e.opts.Partial != nil {
				e.partial()
			}
			if stop := e.opts.Stop; stop != nil && stop.Load() && e.err == nil {
				e.err = ErrStopped
			}
		}
	}
	return !r.done && e.err == nil
}

// partial tells Options.Partial what the replay found so far.
func (e *engine) partial() {
	var path float64
	var run int64
	for _, r := range e.ranks {
		if r.remote || r.k == 0 || !r.hasInit {
			continue
		}
		path = max(path, r.val)
		run = max(run, r.lastEnd-r.initRec)
	}
	e.opts.Partial(path, run)
}

// yieldTurns is how many operations (or events read) a rank's replay
// goes through before it lets the other ranks ready to run go first (a
// variable for the tests).
var yieldTurns = 4096

// finishRank ends the rank's reading.
func (e *engine) finishRank(r *streamRank) {
	if err := r.src.Err(); err != nil {
		e.err = fmt.Errorf("rank %d: %w", r.rank, err)
		return
	}
	damaged := false
	if tr, ok := r.src.(traceRank); ok {
		d := tr.Diagnostics()
		damaged = d.Count(tracefmt.DataLoss) > 0 || d.Count(tracefmt.Error) > 0
	}
	end := endOf(r.src.End(), damaged)
	if tail := tracefmt.SourceLoss(r.src); tail.Events > 0 {
		r.decline("the log lost events at its end")
		return
	}
	calls := make(map[commKey]uint32, len(r.count))
	for id, n := range r.count {
		calls[r.p.keys[id]] = n
	}
	end.lossy = end.lossy || r.p.lossy()
	r.p.Finish(end)
	r.end, r.finalCalls = end, calls
	// Finish drops what held receives back (matched probes' reservations
	// too, which no count shows): release what is pending.
	r.recvNew = true
	e.afterEvent(r)
	r.done = true
	e.wakeReaders(r)
	for _, m := range r.unsettled[r.uh:] {
		if !m.settled {
			m.settled = true
			r.settledNow = append(r.settledNow, m)
		}
	}
	e.pairSettled(r)
	r.unsettled, r.uh = nil, 0
	if e.grp != nil {
		e.grp.done(r)
	}
	e.ended(r, calls)
}

// ended: rank r's log ended with calls collective calls per
// communicator: the instances it will not reach no longer wait for it.
func (e *engine) ended(r *streamRank, calls map[commKey]uint32) {
	for ck, l := range e.live {
		n := calls[ck]
		for _, in := range slices.Clone(l) {
			if n <= in.key.k && in.members.has(int32(r.rank)) {
				in.expected--
				if in.arrived >= in.expected && in.arrived > 0 {
					e.complete(in)
				}
			}
		}
	}
}

// resolve reads ahead until receive x is paired or known unmatched.
//
// The sender is read ahead only when its own replay waits: while it can
// go on, r waits for it (it reads as it replays, holding little), and is
// woken when the message is paired, or when the sender waits or its log
// ends. It returns false when r must wait, or the replay stops.
func (e *engine) resolve(r *streamRank, x *srecv) bool {
	for e.err == nil {
		switch x.state {
		case recvPaired, recvUnmatched:
			return true
		case recvPending:
			if !e.read(r, 1) && x.state == recvPending {
				if e.err == nil {
					e.err = fmt.Errorf("internal error: reconstruct: rank %d: a receive kept no place after its log ended", r.rank)
				}
				return false
			}
		case recvReleased:
			s := e.index(int(x.src))
			if s < 0 || e.ranks[s].done {
				e.pair(x.c)
				if x.state == recvReleased {
					x.state = recvUnmatched
					if x.ev >= 0 {
						r.unmatched.add(unmatchedRec{ch: x.ch, seq: x.post, key: x.key, ev: x.ev})
					}
					x.c.dropUnmatched(e)
				}
				continue
			}
			if sr := e.ranks[s]; sr.remote {
				// Another group's rank: its group reads it ahead when
				// it waits (replay_part.go).
				x.waited = true
				e.grp.waitOn(r, sr, pchanKey{ck: r.p.keys[x.key.comm], src: x.src, dst: int32(r.rank), tag: x.key.tag})
				return false
			}
			if sr := e.ranks[s]; sr != r && !sr.blocked && !sr.finished {
				x.waited = true
				sr.readWaiters = append(sr.readWaiters, r.idx)
				e.enqueue(sr.idx)
				return false
			}
			e.read(e.ranks[s], 1)
			if x.state == recvReleased {
				e.pair(x.c)
			}
		}
	}
	return false
}

// advance replays the rank as far as it can go; then, unless it is
// finished, it waits, and the ranks that wait for it to wait (resolve)
// can go on.
func (e *engine) advance(r *streamRank) {
	r.blocked = false
	r.yielded = false
	e.replayRank(r)
	if r.yielded {
		return // not waiting: queued again
	}
	if !r.finished && e.err == nil {
		r.blocked = true
		e.wakeReaders(r)
		if len(r.ahead) > 0 {
			e.grp.readAhead(r)
		}
	}
}

// waitFor makes rank r wait for instance in to complete (once, however
// often it is woken meanwhile).
func (e *engine) waitFor(r *streamRank, in *sinst) {
	if r.waitsFor != in {
		r.waitsFor = in
		in.waiters = append(in.waiters, r.idx)
	}
}

// wakeReaders wakes the ranks waiting for r to wait or end its log.
func (e *engine) wakeReaders(r *streamRank) {
	for _, w := range r.readWaiters {
		e.enqueue(w)
	}
	r.readWaiters = r.readWaiters[:0]
}

// replayRank is advance's replay.
func (e *engine) replayRank(r *streamRank) {
	// Calls before MPI_Init are dropped when it comes: none is replayed
	// before the rank's MPI runs.
	for r.p.phase == phaseBefore && e.read(r, 1) {
	}
	if r.lastKind == 0 {
		r.lastKind, r.lastEnd = posInit, r.initEnd
	}
	for turn := 0; e.err == nil; turn++ {
		if turn > 0 && turn >= yieldTurns && (len(e.runq) > 0 || e.grp != nil && e.grp.full()) {
			// A rank that never waits would run ahead of the ranks it
			// sends to, its messages held until they take them: it
			// lets the others run (those of other groups once its
			// group's batches are full), and is queued again.
			r.yielded = true
			e.enqueue(r.idx)
			return
		}
		if r.bh < len(r.blk) && r.blk[r.bh].at == r.k {
			pt := &r.blk[r.bh]
			in := pt.inst
			if !in.done {
				if !pt.arrived {
					pt.arrived = true
					w := r.chainW(r.lastKind, r.lastEnd, posPart, pt.start)
					e.arrive(in, r, r.val+float64(w), int64(r.items)-1, false, w, pt.start, pt, r.lastKind == posInit)
				}
				if !in.done {
					e.waitFor(r, in)
					return
				}
			}
			pend := pt.end
			if e.meas && !in.anyNB {
				pend = in.doneT - e.off[r.idx]
			}
			if !e.nbReady(r, in) {
				return
			}
			if c := e.cut; c != nil {
				c.part(r, in, r.chainW(r.lastKind, r.lastEnd, posPart, pt.start))
			}
			r.val, r.lastKind, r.lastEnd = e.instValue(in), posPart, pend
			if e.err != nil {
				return
			}
			r.logItem(&itemRec{kind: itemPart, from: int32(in.id), ev: pt.ev, start: pt.start, end: pend, ostart: pt.start, oend: pt.end,
				psite: pt.site, cw: in.w})
			r.items++
			r.bh++
			r.blk[r.bh-1] = spart{}
			r.blk, r.bh = dropHead(r.blk, r.bh)
			continue
		}
		if r.qh == len(r.q) {
			// One event at a time: what is read ahead is held (with
			// thousands of ranks, a batch each would add up).
			if e.read(r, 1) || r.qh < len(r.q) || r.bh < len(r.blk) {
				continue
			}
			if e.err != nil {
				return
			}
			e.finishReplay(r)
			return
		}
		if e.meas && !r.q[r.qh].timed {
			if !e.retime(r) {
				return
			}
		}
		o := &r.q[r.qh]
		start, end := o.start, o.end
		val := r.val + float64(r.chainW(r.lastKind, r.lastEnd, posOp, start))
		rec := itemRec{kind: itemOp, ev: o.ev, start: start, end: end, ostart: o.ostart, oend: o.oend, bytes: o.bytes, comp: o.comp, name: o.name, site: o.site}
		paired := false
		if x := o.in; x != nil {
			if x.state != recvPaired && x.state != recvUnmatched {
				if !e.resolve(r, x) {
					return
				}
				o = &r.q[r.qh] // reading ahead may have moved the queue
			}
			if x.state == recvPaired {
				paired = true
				m := x.msg
				if !m.visited {
					m.waiter = r.idx + 1
					x.waited = true
					return
				}
				xw := o.xw
				if !e.meas {
					xw = e.w.Message(int64(m.bytes))
				}
				if sv := m.val + xw; sv > val {
					val = sv
					rec.kind, rec.from, rec.fitem, rec.mbytes, rec.xw = itemMsg, m.from, m.item, m.bytes, xw
				}
			}
		}
		if nb := o.collIn; nb != nil {
			in := nb.in
			if !in.done {
				e.waitFor(r, in)
				return
			}
			if !e.nbReady(r, in) {
				return
			}
			sv := e.instValue(in)
			if e.err != nil {
				return
			}
			var xw float64
			if e.meas {
				xw = o.xw
			}
			if sv += xw; sv > val {
				val = sv
				rec.kind, rec.from, rec.cw, rec.xw, rec.psite, rec.pev = itemCollIn, int32(in.id), in.w, xw, nb.site, nb.ev
			}
		}
		k := r.k
		item := r.items
		if k == 0 {
			r.firstStart = o.ostart
		}
		e.shape.crossEdges += count(paired) + count(o.collIn != nil)
		e.shape.messages += count(paired)
		if c := e.cut; c != nil {
			e.cutOp(r, k, o, paired)
		}
		r.logItem(&rec)
		r.items++
		r.val, r.lastKind, r.lastEnd = val, posOp, end
		r.k++
		r.q[r.qh] = sop{}
		r.qh++
		head := r.qh
		r.q, r.qh = dropHead(r.q, r.qh)
		r.qbase += uint32(head - r.qh)
		for r.oh < len(r.outbox) && r.outbox[r.oh].node == k {
			m := r.outbox[r.oh]
			r.outbox[r.oh] = nil
			r.oh++
			m.val, m.item, m.visited = val, item, true
			if m.waiter > 0 {
				e.enqueue(m.waiter - 1)
			}
			if m.remote {
				e.grp.value(r, m)
			}
		}
		r.outbox, r.oh = dropHead(r.outbox, r.oh)
		for r.nh < len(r.nb) && r.nb[r.nh].at == k {
			pt := r.nb[r.nh]
			r.nb[r.nh] = spart{}
			r.nh++
			e.shape.nbCalls++
			if c := e.cut; c != nil {
				c.post(r, k, pt.inst)
			}
			e.arrive(pt.inst, r, val, int64(item), true, 0, 0, &pt, false)
		}
		r.nb, r.nh = dropHead(r.nb, r.nh)
	}
}

// dropHead drops the elements before head of a queue s[head:] (cleared
// by the caller) once they are all of it, or at least 8 and no fewer than
// those left: the queue's array stays within about twice what it holds
// (a queue that never empties would grow for ever).
func dropHead[T any](s []T, head int) ([]T, int) {
	switch {
	case head == len(s):
		return s[:0], 0
	case head >= 8 && 2*head >= len(s):
		n := copy(s, s[head:])
		clear(s[n:])
		return s[:n], 0
	}
	return s, head
}

// finishReplay ends the rank's replay at MPI_Finalize.
func (e *engine) finishReplay(r *streamRank) {
	r.finished = true
	if r.items == 0 {
		return
	}
	w := r.chainW(r.lastKind, r.lastEnd, posFin, r.finStr)
	if c := e.cut; c != nil {
		c.fin(r, w)
	}
	v := r.val + float64(w)
	if e.fin.rank < 0 || v > e.fin.val || v == e.fin.val && r.idx < e.fin.rank {
		e.fin = finBest{val: v, rank: r.idx}
	}
}

func (e *engine) run() (*ReplayResult, error) {
	if e.meas {
		e.measuredInit()
	}
	for i := range e.ranks {
		e.enqueue(int32(i))
	}
	// When no replay can go on, every rank reads ahead: an event each,
	// twice as many each time that does not help.
	chunk := 1
	for e.err == nil {
		e.drain()
		if e.err != nil {
			break
		}
		stuck := 0
		read := false
		for _, r := range e.ranks {
			if r.finished {
				continue
			}
			stuck++
			if !r.done {
				e.read(r, chunk)
				read = true
			}
		}
		if stuck == 0 {
			break
		}
		if !read && len(e.runq) == 0 {
			return nil, e.stuckError()
		}
		e.stalls++
		if len(e.runq) == 0 {
			chunk = min(2*chunk, 1<<20)
		} else {
			chunk = 1
		}
	}
	if e.err != nil {
		return nil, e.err
	}
	return e.result()
}

// result is the replay's result, once every rank is replayed: the path
// found, walked back, and the diagnostics.
func (e *engine) result() (*ReplayResult, error) {
	if e.fin.rank < 0 {
		return nil, fmt.Errorf("the task graph has no operations: no path from MPI_Init to MPI_Finalize")
	}
	res := &ReplayResult{Length: e.fin.val, MaxQueued: e.maxQueued, Stalls: e.stalls, Diags: e.diagnostics()}
	if e.meas {
		res.Run = e.measuredRun()
	}
	e.names.mu.Lock()
	res.names = append(slices.Clip(e.names.names), "MPI_Init", "MPI_Init_thread", "MPI_Finalize")
	e.names.mu.Unlock()
	res.path = blocks{s: &res.store, limit: 32 << 10}
	res.colls = blocks{s: &res.store, limit: 16 << 10}
	e.graphShape(res)
	if err := e.back(res); err != nil {
		res.Close()
		return nil, err
	}
	if e.cut != nil {
		if err := e.cut.finish(e, res); err != nil {
			res.Close()
			return nil, err
		}
	}
	return res, nil
}

// drain replays the ranks of the run queue until it is empty.
func (e *engine) drain() {
	for len(e.runq) > 0 && e.err == nil {
		if e.grp != nil && e.grp.full() {
			return // the other groups' turn (group.work)
		}
		i := e.runq[0]
		e.runq = e.runq[1:]
		r := e.ranks[i]
		r.queued = false
		if r.finished {
			continue // woken while it replayed its end
		}
		e.advance(r)
	}
}

// stuckError says where the replay stopped with nothing left to read.
func (e *engine) stuckError() error {
	for _, r := range e.ranks {
		if r.finished {
			continue
		}
		if r.bh < len(r.blk) && r.blk[r.bh].at == r.k {
			return fmt.Errorf("the task graph has a cycle: rank %d waits at collective call %d on %s for ranks that never arrive", r.rank, r.blk[r.bh].inst.key.k+1, commName(r.blk[r.bh].inst.key.ck))
		}
		if r.qh < len(r.q) {
			o := &r.q[r.qh]
			return fmt.Errorf("the task graph has a cycle: rank %d waits at event %d for a message not sent before it", r.rank, o.ev)
		}
	}
	return fmt.Errorf("the task graph has a cycle")
}

// back walks the path from MPI_Finalize back to MPI_Init, writing its
// steps to the result's spill (backwards). Each step is written once the
// edge into it is known: when the walk has found its predecessor.
func (e *engine) back(res *ReplayResult) error {
	k := e.walker(res, func(st *ReplayStep, name int) error {
		res.add(st, name)
		return nil
	})
	if err := k.start(); err != nil {
		return err
	}
	if done, err := k.run(); err != nil || !done {
		return cmp.Or(err, fmt.Errorf("internal error: reconstruct: the path back leaves the ranks replayed"))
	}
	res.add(&ReplayStep{Kind: taskgraph.KindInit, Rank: -1, Event: noEvent, SiteRank: -1, ID: taskgraph.Init}, res.sharedName(e.initName()))
	res.sites = make(map[int]*tracefmt.Sites)
	for _, r := range e.ranks {
		if r.sites != nil {
			res.sites[r.rank] = r.sites
		}
	}
	res.path.flush()
	res.colls.flush()
	return res.store.err
}

// initName is MPI_Init's name (nameInit, nameInitThread): MPI_Init_thread
// when every rank that called one called it.
func (e *engine) initName() int {
	some, all := false, true
	for _, r := range e.ranks {
		if r.p.hasInit {
			some = true
			all = all && r.p.initTh
		}
	}
	if some && all {
		return nameInitThread
	}
	return nameInit
}

// walker walks the path back over the ranks its engine replayed, giving
// each step to emit as it is found (name: its index in res.names). At a
// rank another group replayed it stops, its position saying where to go
// on (replay_part.go).
type walker struct {
	e     *engine
	res   *ReplayResult // the steps' ids and names
	emit  func(st *ReplayStep, name int) error
	cache *walkCache
	n     int64 // steps found
	// The position: rank index ri, item; coll, when set, is a collective's
	// step found, whose edge in leaves rank ri's item (its best arrival).
	ri   int32
	item int64
	coll *pendColl
	// step is the operation step being found (emit does not keep it): one
	// for the walk, not an allocation a step.
	step ReplayStep
}

// pendColl is a collective's step waiting for its edge in.
type pendColl struct {
	st   ReplayStep
	name int
	ir   instRec
}

func (e *engine) walker(res *ReplayResult, emit func(*ReplayStep, int) error) *walker {
	for _, r := range e.ranks {
		if !r.remote {
			r.log.flush()
		}
		r.slot = -1
	}
	return &walker{e: e, res: res, emit: emit, cache: &walkCache{}}
}

// at reads rank r's item i.
func (k *walker) at(r *streamRank, i int64) (itemRec, error) {
	rec, err := k.cache.at(k.e, r, uint32(i))
	if err != nil {
		return itemRec{}, err
	}
	return *rec, nil
}

// chainIn is the chain edge of rank r into an element of kind b starting
// at start (ostart as recorded), from item i-1 (MPI_Init when i is 0).
func (k *walker) chainIn(r *streamRank, i int64, b uint8, start, ostart int64) (ReplayEdge, error) {
	ed := ReplayEdge{FromEvent: -1, ToEvent: -1}
	if i == 0 {
		ed = ReplayEdge{Kind: taskgraph.InitOut, Rank: r.rank, Weight: r.chainW(posInit, r.initEnd, b, start),
			Orig: r.chainW(posInit, r.initRec, b, ostart), FromShift: r.initRec - r.initEnd, FromEvent: -1, ToEvent: -1}
	} else {
		prev, err := k.at(r, i-1)
		if err != nil {
			return ReplayEdge{}, err
		}
		a := posOp
		if prev.kind == itemPart {
			a = posPart
			ed.FromSite, ed.FromEvent = prev.psite, prev.ev
		}
		ed.Kind, ed.Rank, ed.Weight = chainKindOf(a, b), r.rank, r.chainW(a, prev.end, b, start)
		ed.Orig, ed.FromShift = r.chainW(a, prev.oend, b, ostart), prev.oend-prev.end
	}
	if ed.Weight > 0 {
		ed.End = start
	}
	return ed, nil
}

// start finds the step of MPI_Finalize, reached from the rank of the
// longest path's end.
func (k *walker) start() error {
	e, res := k.e, k.res
	k.ri, k.item = e.fin.rank, int64(e.ranks[e.fin.rank].items)-1
	st := ReplayStep{Kind: taskgraph.KindFinalize, Rank: -1, Event: noEvent, SiteRank: -1, ID: taskgraph.Finalize}
	r := e.ranks[k.ri]
	in, err := k.chainIn(r, k.item+1, posFin, r.finStr, r.finStr)
	if err != nil {
		return err
	}
	st.In = in
	return k.found(&st, res.sharedName(nameFinalize))
}

func (k *walker) found(st *ReplayStep, name int) error {
	if k.n++; k.n > 1<<40 {
		return fmt.Errorf("internal error: reconstruct: the path back does not reach MPI_Init")
	}
	return k.emit(st, name)
}

// collective finds the step of instance id (of the engine owner) and
// moves to its best arrival.
func (k *walker) collective(owner *engine, id int32, cw float64) error {
	e, res := k.e, k.res
	ir, err := owner.inst(id)
	if err != nil {
		return err
	}
	k.coll = &pendColl{st: ReplayStep{Kind: taskgraph.KindCollective, Rank: -1, Event: noEvent,
		Start: ir.start, End: ir.end, Bytes: ir.bytes, GID: ir.gid, Procs: int(ir.procs), Participants: int(ir.parts), Nonblocking: ir.nb,
		Site: ir.lowSite, SiteRank: int(ir.low), Weight: cw, ID: res.collID(e.index(int(ir.low)), ir)}, name: int(ir.name), ir: *ir}
	k.ri, k.item = ir.bestRank, ir.bestItem
	return nil
}

// collIn finds the edge into the pending collective from its best
// arrival, on rank br, and the step.
func (k *walker) collIn(br *streamRank) error {
	pc := k.coll
	st, ir := &pc.st, &pc.ir
	switch {
	case ir.bestNB:
		st.In = ReplayEdge{Kind: taskgraph.CollIn, Rank: br.rank, FromEvent: -1}
	case ir.bestInit:
		st.In = ReplayEdge{Kind: taskgraph.InitOut, Rank: br.rank, Weight: ir.bestW,
			Orig: br.chainW(posInit, br.initRec, posPart, ir.bestAt), FromShift: br.initRec - br.initEnd, FromEvent: -1}
	default:
		prev, err := k.at(br, ir.bestItem)
		if err != nil {
			return err
		}
		a := posOp
		st.In.FromEvent = -1
		if prev.kind == itemPart {
			a = posPart
			st.In.FromSite, st.In.FromEvent = prev.psite, prev.ev
		}
		st.In.Kind, st.In.Rank, st.In.Weight = taskgraph.CollIn, br.rank, ir.bestW
		st.In.Orig, st.In.FromShift = br.chainW(a, prev.oend, posPart, ir.bestAt), prev.oend-prev.end
	}
	st.In.ToSite, st.In.ToEvent = ir.bestSite, ir.bestEv
	if st.In.Weight > 0 {
		st.In.End = ir.bestAt
	}
	k.coll = nil
	return k.found(st, pc.name)
}

// run walks back until MPI_Init (done) or a rank the engine did not
// replay.
func (k *walker) run() (done bool, err error) {
	e, res := k.e, k.res
	for {
		if k.item < 0 && k.coll == nil {
			return true, nil
		}
		r := e.ranks[k.ri]
		if r.remote {
			return false, nil
		}
		if k.coll != nil {
			if err := k.collIn(r); err != nil {
				return false, err
			}
			continue
		}
		rec, err := k.at(r, k.item)
		if err != nil {
			return false, err
		}
		if rec.kind == itemPart {
			if err := k.collective(r.e, rec.from, rec.cw); err != nil {
				return false, err
			}
			continue
		}
		st := &k.step
		*st = ReplayStep{Kind: taskgraph.KindOp, Rank: r.rank,
			Event: taskgraph.EventRef{Rank: r.rank, Index: rec.ev, Completion: int(rec.comp)},
			Start: rec.start, End: rec.end, Bytes: int64(min(rec.bytes, math.MaxInt64)), Site: rec.site, SiteRank: r.rank,
			ID: res.opID(int(r.idx), rec.op)}
		switch rec.kind {
		case itemMsg:
			st.Cross, st.MsgBytes = true, int64(min(rec.mbytes, math.MaxInt64))
			st.In = ReplayEdge{Kind: taskgraph.Message, Rank: r.rank, Bytes: st.MsgBytes, Cross: rec.xw, FromEvent: -1, ToEvent: -1}
			if err := k.found(st, int(rec.name)); err != nil {
				return false, err
			}
			k.ri, k.item = rec.from, int64(rec.fitem)
		case itemCollIn:
			st.Cross = true
			st.In = ReplayEdge{Kind: taskgraph.CollOut, Rank: r.rank, Cross: rec.xw, FromSite: rec.psite, FromEvent: rec.pev, ToEvent: -1}
			if err := k.found(st, int(rec.name)); err != nil {
				return false, err
			}
			if err := k.collective(r.e, rec.from, rec.cw); err != nil {
				return false, err
			}
		default:
			in, err := k.chainIn(r, k.item, posOp, rec.start, rec.ostart)
			if err != nil {
				return false, err
			}
			st.In = in
			if err := k.found(st, int(rec.name)); err != nil {
				return false, err
			}
			k.item--
		}
	}
}

// chainKindOf is the kind of the chain edge from an element of kind a to
// one of kind b (taskgraph's rule).
func chainKindOf(a, b uint8) taskgraph.EdgeKind {
	switch {
	case a == posInit:
		return taskgraph.InitOut
	case b == posFin:
		return taskgraph.FinalizeIn
	case b == posPart:
		return taskgraph.CollIn
	case a == posPart:
		return taskgraph.CollOut
	}
	return taskgraph.Compute
}

var noEvent = taskgraph.EventRef{Rank: -1, Index: -1, Completion: -1}

// walkCache holds the decoded blocks of item records the walk back reads,
// for up to 256 ranks at a time (the walk goes back along one rank's
// items most of the time, jumping to another at a message or a
// collective; around a ring of ranks, it comes back to each after the
// others). Blocks are smaller the more ranks there are (blockBudget):
// the cache holds at most about 9 MiB.
type walkCache struct {
	slots [256]struct {
		ri    int32
		k     int
		first uint32
		recs  []itemRec
		buf   []byte
	}
	next int
}

func (w *walkCache) at(e *engine, r *streamRank, i uint32) (*itemRec, error) {
	if r.slot >= 0 {
		sl := &w.slots[r.slot]
		if sl.k >= 0 && i >= sl.first && int(i-sl.first) < len(sl.recs) {
			return &sl.recs[i-sl.first], nil
		}
	} else {
		j := w.next % len(w.slots)
		w.next++
		sl := &w.slots[j]
		if sl.recs != nil || sl.buf != nil {
			e.ranks[sl.ri].slot = -1
		}
		sl.ri, sl.k, sl.recs = r.idx, -1, sl.recs[:0]
		r.slot = int16(j)
	}
	sl := &w.slots[r.slot]
	k := r.log.block(i)
	b, first, err := r.log.read(k, sl.buf)
	if err != nil {
		return nil, err
	}
	if k < len(r.log.idx) {
		sl.buf = b
	}
	recs, err := decodeItems(b, sl.recs)
	if err != nil {
		return nil, err
	}
	sl.k, sl.first, sl.recs = k, first, recs
	if i < first || int(i-first) >= len(recs) {
		return nil, fmt.Errorf("internal error: reconstruct: item %d of rank %d is not in its block", i, r.rank)
	}
	return &recs[i-first], nil
}

// The path's steps, spilled as the walk back finds them.

// A step is spilled as a word of flags, its rank and name, then only the
// fields the flags say differ from their usual value (most steps are an
// operation reached along its rank's chain: a few varints).
const (
	sfKind      = 7 // taskgraph.NodeKind
	sfCross     = 1 << 3
	sfIndex     = 1 << 4 // Event.Index (else -1)
	sfComp      = 1 << 5 // Event.Completion (else -1)
	sfBytes     = 1 << 6
	sfMsgBytes  = 1 << 7
	sfInRank    = 1 << 8 // In.Rank (else Rank)
	sfInWeight  = 1 << 9
	sfInBytes   = 1 << 10
	sfSite      = 1 << 11
	sfSiteRank  = 1 << 12 // SiteRank (else Rank)
	sfWeight    = 1 << 13
	sfInCross   = 1 << 14
	sfInEndAt   = 1 << 15 // In.End is Start
	sfInEnd     = 1 << 16 // In.End (from Start)
	sfStart     = 1 << 17
	sfDur       = 1 << 18 // End (from Start)
	sfInKindPos = 19      // In.Kind, 4 bits
	sfOrig      = 1 << 23 // In.Orig (else In.Weight)
	sfFromShift = 1 << 24
	sfFromSite  = 1 << 25
	sfToSite    = 1 << 26
	sfFromEv    = 1 << 27 // In.FromEvent (else -1)
	sfToEv      = 1 << 28 // In.ToEvent (else -1)
)

// add appends step st, whose name is res.names[name]; a collective's goes
// to the collectives' steps too, with its index on the path from its end.
func (res *ReplayResult) add(st *ReplayStep, name int) {
	f := stepFlags(st)
	if res.path.begin() {
		res.base = stepBase{}
	}
	res.enc = res.encodeStep(res.enc[:0], f, st, name, &res.base)
	if st.Kind == taskgraph.KindCollective {
		// The collectives' own steps: their index from the path's end
		// first, each on its own (no base).
		c := binary.AppendUvarint(res.cenc[:0], uint64(res.NumSteps))
		c = res.encodeStep(c, f, st, name, &stepBase{})
		res.colls.add(c)
		res.cenc = c
	}
	res.path.add(res.enc)
	res.NumSteps++
}

// stepFlags are the flags of step st's record.
func stepFlags(st *ReplayStep) uint64 {
	var f uint64
	f |= uint64(st.Kind) & sfKind
	if st.Cross {
		f |= sfCross
	}
	set := func(bit uint64, ok bool) {
		if ok {
			f |= bit
		}
	}
	set(sfIndex, st.Event.Index != -1)
	set(sfComp, st.Event.Completion != -1)
	set(sfBytes, st.Bytes != 0)
	set(sfMsgBytes, st.MsgBytes != 0)
	set(sfInRank, st.In.Rank != st.Rank)
	set(sfInWeight, st.In.Weight != 0)
	set(sfInBytes, st.In.Bytes != 0)
	set(sfSite, st.Site != 0)
	set(sfSiteRank, st.SiteRank != st.Rank)
	set(sfWeight, st.Weight != 0)
	set(sfInCross, st.In.Cross != 0)
	switch {
	case st.In.End == st.Start:
		f |= sfInEndAt
	case st.In.End != 0:
		f |= sfInEnd
	}
	set(sfStart, st.Start != 0)
	set(sfDur, st.End != st.Start)
	set(sfOrig, st.In.Orig != st.In.Weight)
	set(sfFromShift, st.In.FromShift != 0)
	set(sfFromSite, st.In.FromSite != 0)
	set(sfToSite, st.In.ToSite != 0)
	set(sfFromEv, st.In.FromEvent != -1)
	set(sfToEv, st.In.ToEvent != -1)
	f |= uint64(st.In.Kind&15) << sfInKindPos
	return f
}

// stepBase is what a step's record is coded against: the last event
// index and start time its block gave (the walk back writes neighbours
// of the path one after the other: a few apart).
type stepBase struct {
	f            uint64 // flags (a record holds them xor its base's)
	index, start int64
	gap          int64 // an operation's event index less its local index
}

// encodeStep appends step st's record, of flags f, to b.
func (res *ReplayResult) encodeStep(b []byte, f uint64, st *ReplayStep, name int, base *stepBase) []byte {
	b = binary.AppendUvarint(b, f^base.f)
	base.f = f
	b = binary.AppendUvarint(b, uint64(st.Rank+1))
	b = binary.AppendUvarint(b, uint64(name))
	if f&sfIndex != 0 {
		b = binary.AppendVarint(b, st.Event.Index-base.index)
		base.index = st.Event.Index
	}
	if f&sfComp != 0 {
		b = binary.AppendVarint(b, int64(st.Event.Completion))
	}
	if f&sfStart != 0 {
		b = binary.AppendVarint(b, st.Start-base.start)
		base.start = st.Start
	}
	if f&sfDur != 0 {
		b = binary.AppendUvarint(b, uint64(st.End-st.Start))
	}
	if f&sfBytes != 0 {
		b = binary.AppendUvarint(b, uint64(st.Bytes))
	}
	if f&sfMsgBytes != 0 {
		b = binary.AppendUvarint(b, uint64(st.MsgBytes))
	}
	if f&sfInRank != 0 {
		b = binary.AppendUvarint(b, uint64(st.In.Rank+1))
	}
	if f&sfInWeight != 0 {
		b = binary.AppendVarint(b, st.In.Weight)
	}
	if f&sfInBytes != 0 {
		b = binary.AppendUvarint(b, uint64(st.In.Bytes))
	}
	if f&sfSite != 0 {
		b = binary.AppendUvarint(b, uint64(st.Site))
	}
	if f&sfSiteRank != 0 {
		b = binary.AppendUvarint(b, uint64(st.SiteRank+1))
	}
	if f&sfWeight != 0 {
		b = binary.AppendUvarint(b, math.Float64bits(st.Weight))
	}
	if f&sfInCross != 0 {
		b = binary.AppendUvarint(b, math.Float64bits(st.In.Cross))
	}
	if f&sfInEnd != 0 {
		b = binary.AppendVarint(b, st.In.End-st.Start)
	}
	if f&sfOrig != 0 {
		b = binary.AppendVarint(b, st.In.Orig-st.In.Weight)
	}
	if f&sfFromShift != 0 {
		b = binary.AppendVarint(b, st.In.FromShift)
	}
	if f&sfFromSite != 0 {
		b = binary.AppendUvarint(b, uint64(st.In.FromSite))
	}
	if f&sfToSite != 0 {
		b = binary.AppendUvarint(b, uint64(st.In.ToSite))
	}
	if f&sfFromEv != 0 {
		b = binary.AppendVarint(b, st.In.FromEvent)
	}
	if f&sfToEv != 0 {
		b = binary.AppendVarint(b, st.In.ToEvent)
	}
	switch st.Kind {
	case taskgraph.KindOp:
		// The local index, from the event's (most often a few apart, by
		// about as much as the last operation's).
		gap := st.Event.Index - int64(st.ID-res.opBase[res.rankIndex(st.Rank)])
		b = binary.AppendVarint(b, gap-base.gap)
		base.gap = gap
	case taskgraph.KindCollective:
		x := uint64(0) // None
		if st.ID != taskgraph.None {
			x = uint64(st.ID-res.collBase) + 1
		}
		b = binary.AppendUvarint(b, x)
	}
	if st.Kind == taskgraph.KindCollective {
		nb := uint64(0)
		if st.Nonblocking {
			nb = 1
		}
		b = binary.AppendUvarint(b, st.GID)
		b = binary.AppendUvarint(b, uint64(st.Procs))
		b = binary.AppendUvarint(b, uint64(st.Participants))
		b = binary.AppendUvarint(b, nb)
	}
	return b
}

// Names of the shared vertices, after the functions' in res.names.
const (
	nameInit = iota
	nameInitThread
	nameFinalize
	numShared
)

// sharedName returns the index in res.names of a shared vertex's name.
func (res *ReplayResult) sharedName(which int) int { return len(res.names) - numShared + which }

// Steps calls fn for each step of the path, from MPI_Init to
// MPI_Finalize; it stops at fn's first error. The step is fn's only
// during the call.
func (res *ReplayResult) Steps(fn func(*ReplayStep) error) error {
	return res.readSteps(&res.path, false, func(_ int, st *ReplayStep) error { return fn(st) })
}

// Collectives calls fn for each collective step of the path, in order,
// with its index on the path; it stops at fn's first error.
func (res *ReplayResult) Collectives(fn func(i int, st *ReplayStep) error) error {
	return res.readSteps(&res.colls, true, fn)
}

// StepHead is what a fold reads of a step (Steps gives the rest).
type StepHead struct {
	Name string
	Rank int
	In   taskgraph.EdgeKind // the kind of the edge into the step
}

// stepVarints are the flags of the fields a step has one varint for.
const stepVarints = sfIndex | sfComp | sfStart | sfDur | sfBytes | sfMsgBytes | sfInRank | sfInWeight | sfInBytes |
	sfSite | sfSiteRank | sfWeight | sfInCross | sfInEnd | sfOrig | sfFromShift | sfFromSite | sfToSite | sfFromEv | sfToEv

// StepHeads calls fn for each step of the path, in order, with its
// head: Steps, decoding only what the head needs and skipping the rest.
func (res *ReplayResult) StepHeads(fn func(*StepHead) error) error {
	var heads []StepHead
	return res.path.backward(func(blk []byte) error {
		heads = heads[:0]
		d := recDec{b: blk}
		var f uint64
		for len(d.b) > 0 {
			f ^= d.u()
			h := StepHead{Rank: int(d.u()) - 1, In: taskgraph.EdgeKind(f >> sfInKindPos & 15)}
			if id := d.u(); id < uint64(len(res.names)) {
				h.Name = res.names[id]
			}
			skip := bits.OnesCount64(f & stepVarints)
			switch taskgraph.NodeKind(f & sfKind) {
			case taskgraph.KindOp:
				skip++
			case taskgraph.KindCollective:
				skip += 5
			}
			for ; skip > 0 && len(d.b) > 0; d.b = d.b[1:] {
				if d.b[0] < 0x80 {
					skip--
				}
			}
			if skip > 0 || d.bad {
				return fmt.Errorf("internal error: reconstruct: a path step does not decode")
			}
			heads = append(heads, h)
		}
		for i := len(heads) - 1; i >= 0; i-- {
			if err := fn(&heads[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// backward calls fn with each block of b, the last first (a block read
// into the buffer of the one before, fn's only while it runs).
func (b *blocks) backward(fn func(blk []byte) error) error {
	var buf []byte
	for k := len(b.idx); k >= 0; k-- {
		blk, _, err := b.read(k, buf)
		if err != nil {
			return err
		}
		if k < len(b.idx) {
			buf = blk
		}
		if err := fn(blk); err != nil {
			return err
		}
	}
	return nil
}

// readSteps decodes the steps of b, written backwards, in path order;
// indexed: each starts with its index from the path's end.
func (res *ReplayResult) readSteps(b *blocks, indexed bool, fn func(int, *ReplayStep) error) error {
	var steps []ReplayStep
	var at []int
	return b.backward(func(blk []byte) error {
		steps, at = steps[:0], at[:0]
		d := recDec{b: blk}
		var base stepBase
		for len(d.b) > 0 {
			if indexed {
				at = append(at, res.NumSteps-1-int(d.u()))
				base = stepBase{} // each on its own
			}
			steps = append(steps, ReplayStep{})
			res.decodeStep(&d, &steps[len(steps)-1], &base)
			if d.bad {
				return fmt.Errorf("internal error: reconstruct: a path step does not decode")
			}
		}
		for i := len(steps) - 1; i >= 0; i-- {
			x := 0
			if indexed {
				x = at[i]
			}
			if err := fn(x, &steps[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// decodeStep decodes a step that add encoded.
func (res *ReplayResult) decodeStep(d *recDec, st *ReplayStep, base *stepBase) {
	f := d.u() ^ base.f
	base.f = f
	st.Kind = taskgraph.NodeKind(f & sfKind)
	st.Cross = f&sfCross != 0
	st.Rank = int(d.u()) - 1
	if id := d.u(); id < uint64(len(res.names)) {
		st.Name = res.names[id]
	}
	st.Event = taskgraph.EventRef{Rank: st.Rank, Index: -1, Completion: -1}
	if f&sfIndex != 0 {
		st.Event.Index = base.index + d.s()
		base.index = st.Event.Index
	}
	if f&sfComp != 0 {
		st.Event.Completion = int(d.s())
	}
	if f&sfStart != 0 {
		st.Start = base.start + d.s()
		base.start = st.Start
	}
	st.End = st.Start
	if f&sfDur != 0 {
		st.End += int64(d.u())
	}
	if f&sfBytes != 0 {
		st.Bytes = int64(d.u())
	}
	if f&sfMsgBytes != 0 {
		st.MsgBytes = int64(d.u())
	}
	st.In.Kind = taskgraph.EdgeKind(f >> sfInKindPos & 15)
	st.In.Rank = st.Rank
	if f&sfInRank != 0 {
		st.In.Rank = int(d.u()) - 1
	}
	if f&sfInWeight != 0 {
		st.In.Weight = d.s()
	}
	if f&sfInBytes != 0 {
		st.In.Bytes = int64(d.u())
	}
	if f&sfSite != 0 {
		st.Site = uint32(d.u())
	}
	st.SiteRank = st.Rank
	if f&sfSiteRank != 0 {
		st.SiteRank = int(d.u()) - 1
	}
	if f&sfWeight != 0 {
		st.Weight = math.Float64frombits(d.u())
	}
	if f&sfInCross != 0 {
		st.In.Cross = math.Float64frombits(d.u())
	}
	switch {
	case f&sfInEndAt != 0:
		st.In.End = st.Start
	case f&sfInEnd != 0:
		st.In.End = st.Start + d.s()
	}
	st.In.Orig = st.In.Weight
	if f&sfOrig != 0 {
		st.In.Orig += d.s()
	}
	if f&sfFromShift != 0 {
		st.In.FromShift = d.s()
	}
	if f&sfFromSite != 0 {
		st.In.FromSite = uint32(d.u())
	}
	if f&sfToSite != 0 {
		st.In.ToSite = uint32(d.u())
	}
	st.In.FromEvent, st.In.ToEvent = -1, -1
	if f&sfFromEv != 0 {
		st.In.FromEvent = d.s()
	}
	if f&sfToEv != 0 {
		st.In.ToEvent = d.s()
	}
	switch st.Kind {
	case taskgraph.KindInit:
		st.ID = taskgraph.Init
	case taskgraph.KindFinalize:
		st.ID = taskgraph.Finalize
	case taskgraph.KindOp:
		st.ID = taskgraph.None
		gap := base.gap + d.s()
		base.gap = gap
		if ri := res.rankIndex(st.Rank); ri >= 0 {
			st.ID = res.opBase[ri] + taskgraph.NodeID(st.Event.Index-gap)
		}
	case taskgraph.KindCollective:
		st.ID = taskgraph.None
		if x := d.u(); x > 0 {
			st.ID = res.collBase + taskgraph.NodeID(x-1)
		}
	}
	if st.Kind == taskgraph.KindCollective {
		st.GID = d.u()
		st.Procs = int(d.u())
		st.Participants = int(d.u())
		st.Nonblocking = d.u() != 0
	}
}

// RankSites returns rank's call-site table (nil when it has none).
func (res *ReplayResult) RankSites(rank int) *tracefmt.Sites { return res.sites[rank] }

// Sites returns the call-site tables of the ranks that have one, by rank.
// Do not modify it.
func (res *ReplayResult) Sites() map[int]*tracefmt.Sites { return res.sites }

// Close releases the path's temporary file.
func (res *ReplayResult) Close() { res.store.close() }

// The diagnostics of matching, in Build's order: each rank's pass's; the
// collectives' (calls missing on a communicator, then instances whose
// calls differ, in Build's order of instances); each rank's receives
// (unmatched, by channel and posting order, then messages of the wrong
// size, in completion order); each rank's messages never received (by
// channel and posting order).

// instDiag is an instance whose calls differ from its lowest
// participant's: the diagnostics, and where Build's order puts them.
type instDiag struct {
	minRank int32
	ev      int64
	diags   tracefmt.Diagnostics
}

// checkInstance looks for calls of in that differ from its lowest
// participant's (as Build's checkInstance).
func (e *engine) checkInstance(in *sinst) {
	if len(in.parts) < 2 {
		return
	}
	order := make([]int, len(in.parts))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(in.who[a], in.who[b]) })
	p0 := &in.parts[order[0]]
	var d instDiag
	for _, i := range order[1:] {
		r := int(in.who[i])
		instanceDiag(&d.diags, r, e.ranks[e.index(r)].file, &in.parts[i], p0, in.who[order[0]], int(in.key.k), in.key.ck)
	}
	if d.diags.Len() > 0 {
		d.minRank, d.ev = in.who[order[0]], p0.ev
		e.instDiags = append(e.instDiags, d)
	}
}

func (e *engine) missing(r int) (tracefmt.Severity, string) {
	var end *rankEnd
	if i := e.index(r); i >= 0 {
		end = &e.ranks[i].end
	}
	return missingSev(r, end, e.opts.Filtered)
}

// diagnostics returns the replay's diagnostics, once every rank is read:
// the passes', the collectives', the receives', then the messages never
// received (a replay in groups makes each part in each group and puts
// them together in this order: replay_part.go).
func (e *engine) diagnostics() *tracefmt.Diagnostics {
	d := e.passDiags()
	d.Merge(e.collDiags(e.collOrder(nil, nil), e.instDiags))
	d.Merge(e.matchDiags())
	e.leftovers(func(m *smsg) {
		s := e.ranks[m.from]
		s.noRecv = append(s.noRecv, m)
	})
	d.Merge(e.noRecvDiags())
	return d
}

// passDiags are the passes' diagnostics of the ranks the engine replayed,
// by rank.
func (e *engine) passDiags() *tracefmt.Diagnostics {
	d := &tracefmt.Diagnostics{}
	for _, r := range e.ranks {
		if !r.remote {
			d.Merge(&r.p.diags)
		}
	}
	return d
}

// collOrder appends to order the communicators of the ranks the engine
// replayed not in seen, in the order of their ranks' first collective
// call on each.
func (e *engine) collOrder(seen map[commKey]bool, order []commKey) []commKey {
	if seen == nil {
		seen = make(map[commKey]bool)
	}
	for _, r := range e.ranks {
		for _, ck := range r.collOrder {
			if !seen[ck] {
				seen[ck] = true
				order = append(order, ck)
			}
		}
	}
	return order
}

// collDiags are the diagnostics of the collectives: the members of each
// communicator of order that made fewer calls, then the calls that differ
// from their lowest participant's (inst).
func (e *engine) collDiags(order []commKey, inst []instDiag) *tracefmt.Diagnostics {
	var colls tracefmt.Diagnostics
	for _, ck := range order {
		e.collCounts(&colls, ck)
	}
	slices.SortStableFunc(inst, func(a, b instDiag) int {
		if c := cmp.Compare(a.minRank, b.minRank); c != 0 {
			return c
		}
		return cmp.Compare(a.ev, b.ev)
	})
	for i := range inst {
		for _, x := range inst[i].diags.All() {
			addDiag(&colls, x.Severity, x.Code, x.Rank, x.File, "%s", x.Message)
		}
	}
	return &colls
}

// matchDiags are the receives no message matched and the messages their
// receives cannot hold, of the ranks the engine replayed.
func (e *engine) matchDiags() *tracefmt.Diagnostics {
	d := &tracefmt.Diagnostics{}
	for _, r := range e.ranks {
		if r.remote {
			continue
		}
		var t tracefmt.Diagnostics
		r.unmatched.diags(&t, CodeUnmatchedRecv, func(x *unmatchedRec) { unmatchedRecvDiag(&t, r.p, x.key, x.ev, e.missing) }, e.missing)
		slices.SortFunc(r.sizes, func(a, b sizeMismatch) int { return cmp.Compare(a.seq, b.seq) })
		for i := range r.sizes {
			m := &r.sizes[i]
			sizeDiag(&t, r.rank, r.p.file, m.ev, m.from, m.bytes, &m.rc)
		}
		d.Merge(&t)
	}
	return d
}

// leftovers calls fn for each message left on the engine's channels: never
// received (the receives freed before completion take their messages
// first).
func (e *engine) leftovers(fn func(m *smsg)) {
	for _, c := range e.chans {
		e.pair(c)
		for _, m := range c.sends[c.sh:] {
			if !m.cancelled {
				fn(m)
			}
		}
	}
}

// noRecvDiags are the messages never received of the ranks the engine
// replayed.
func (e *engine) noRecvDiags() *tracefmt.Diagnostics {
	d := &tracefmt.Diagnostics{}
	for _, r := range e.ranks {
		if r.remote {
			continue
		}
		for _, m := range r.noRecv {
			if !m.cancelled {
				r.neverRecv.add(m.unmatched())
			}
		}
		r.noRecv = nil
		var t tracefmt.Diagnostics
		r.neverRecv.diags(&t, CodeUnmatchedSend, func(x *unmatchedRec) { unmatchedSendDiag(&t, r.p, x.key, x.ev, x.bytes, e.missing) }, e.missing)
		d.Merge(&t)
	}
	return d
}

// collCounts reports the members of communicator ck that made fewer
// collective calls on it than another (as Build's collectives).
func (e *engine) collCounts(t *tracefmt.Diagnostics, ck commKey) {
	mem, ok := e.memberSet(ck)
	if !ok {
		return // declined
	}
	maxLen := 0
	for _, r := range e.ranks {
		maxLen = max(maxLen, int(r.finalCalls[ck]))
	}
	const maxListed = 32
	mismatch := func(m int32, n int) {
		sev, note := e.missing(int(m))
		file := ""
		if i := e.index(int(m)); i >= 0 {
			file = e.ranks[i].file
		}
		collCountDiag(t, sev, note, m, file, n, maxLen, ck)
	}
	var absent []int32
	nAbsent := 0
	each := func(m int32) {
		if i := e.index(int(m)); i >= 0 {
			if n := int(e.ranks[i].finalCalls[ck]); n != maxLen {
				mismatch(m, n)
			}
			return
		}
		if nAbsent++; len(absent) < maxListed {
			absent = append(absent, m)
		}
	}
	if mem.world > 0 {
		// Walk the ranks with a log, counting the others between them.
		next := int32(0)
		for _, r := range e.ranks {
			for m := next; m < int32(r.rank) && len(absent) < maxListed; m++ {
				absent = append(absent, m)
			}
			nAbsent += r.rank - int(next)
			each(int32(r.rank))
			next = int32(r.rank) + 1
		}
		for m := next; m < int32(mem.world) && len(absent) < maxListed; m++ {
			absent = append(absent, m)
		}
		nAbsent += mem.world - int(next)
	} else {
		for _, m := range mem.list {
			each(m)
		}
	}
	if nAbsent <= maxListed {
		for _, m := range absent {
			mismatch(m, 0)
		}
	} else {
		collAbsentDiag(t, nAbsent, absent, maxLen, ck)
	}
}

// memberSet returns communicator ck's members as the ranks described them.
func (e *engine) memberSet(ck commKey) (memberSet, bool) {
	switch {
	case ck.gid == 1:
		return memberSet{world: e.size}, true
	case ck.self >= 0:
		return memberSet{list: []int32{ck.self}}, true
	}
	if e.grp != nil {
		l, ok := e.grp.def(ck)
		return memberSet{list: l}, ok
	}
	l, ok := e.defs[ck]
	return memberSet{list: l}, ok
}
