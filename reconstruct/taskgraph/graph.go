package taskgraph

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// NodeID identifies a node of a Graph (see the package documentation for
// the numbering).
type NodeID uint32

const (
	// Init is the shared MPI_Init node.
	Init NodeID = 0
	// Finalize is the shared MPI_Finalize node.
	Finalize NodeID = 1
	// None is no node.
	None NodeID = math.MaxUint32

	firstOp NodeID = 2
)

// NameID indexes a graph's table of function names.
type NameID uint16

// NodeKind is the kind of a node.
type NodeKind uint8

const (
	KindInit       NodeKind = iota + 1 // the shared MPI_Init node
	KindFinalize                       // the shared MPI_Finalize node
	KindOp                             // one MPI operation of one rank
	KindCollective                     // one collective instance, shared by its members
)

func (k NodeKind) String() string {
	switch k {
	case KindInit:
		return "init"
	case KindFinalize:
		return "finalize"
	case KindOp:
		return "op"
	case KindCollective:
		return "collective"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// EdgeKind is the kind of an edge.
type EdgeKind uint8

const (
	// Compute joins consecutive operations of a rank; its weight is the
	// time from the end of one call to the start of the next.
	Compute EdgeKind = iota + 1
	// Message joins a send to the operation that completed its receive;
	// it carries the message's bytes and no measured weight.
	Message
	// InitOut joins Init to a rank's first operation (weight: from the end
	// of the rank's MPI_Init to the start of the operation).
	InitOut
	// FinalizeIn joins a rank's last operation to Finalize (weight: to the
	// start of the rank's MPI_Finalize).
	FinalizeIn
	// CollIn joins a member's previous operation (blocking collective) or
	// posting operation (nonblocking, weight 0) to a collective.
	CollIn
	// CollOut joins a collective to a member's next operation (blocking)
	// or to the operation that completed the member's request
	// (nonblocking, weight 0).
	CollOut
)

var edgeKindNames = [...]string{Compute: "compute", Message: "message", InitOut: "init_out", FinalizeIn: "finalize_in", CollIn: "coll_in", CollOut: "coll_out"}

func (k EdgeKind) String() string {
	if int(k) < len(edgeKindNames) && edgeKindNames[k] != "" {
		return edgeKindNames[k]
	}
	return fmt.Sprintf("edge kind %d", uint8(k))
}

// IsComputation reports whether edges of kind k weigh a measured time
// (every kind but Message).
func (k EdgeKind) IsComputation() bool { return k != Message }

// EventRef locates the event an operation comes from.
type EventRef struct {
	Rank int
	// Index is the event's position in the rank's event stream (0 is the
	// first event the reader returns, whatever its kind).
	Index int64
	// Completion is, for an operation expanded from a Waitall-like call,
	// the index of its request in the call's completion list; for the
	// halves of an MPI_Sendrecv 0 (send) and 1 (receive); -1 otherwise.
	Completion int
}

// Node describes one node.
type Node struct {
	ID   NodeID
	Kind NodeKind
	// Name is the MPI function name exactly as MPI spells it (MPI_Isend,
	// MPI_Wait for the parts of an expanded MPI_Waitall, MPI_Allreduce).
	Name string
	// Rank is the world rank of an operation, -1 for shared nodes.
	Rank int
	// Start and End are the call's times in ns on its rank's clock. For a
	// collective they are the earliest start and latest end over its
	// members' calls, each on its own clock: indicative only. For Init,
	// the earliest end of a rank's MPI_Init, for Finalize the latest
	// start of MPI_Finalize (0 when no rank has one).
	Start, End int64
	// EventKind is the kind of the event an operation comes from.
	EventKind spec.Kind
	// Bytes is, for an operation, the event's bytes field (for the parts
	// of an expanded Waitall, the bytes the request's status reports);
	// for a collective, the bytes per process the latency model takes.
	Bytes int64
	// Event locates an operation's event.
	Event EventRef

	// Collectives only.
	GID uint64 // global communicator id
	// Members are the communicator's members, world ranks, sorted (do not
	// modify); nil for MPI_COMM_WORLD, whose members are all the ranks
	// 0..Procs-1.
	Members      []int32
	Procs        int  // number of members, the model's process count
	Participants int  // members whose call was recorded
	Nonblocking  bool // an I-collective (the instance sits beside the chains)
}

// Edge is one edge. Edges are values computed on demand.
type Edge struct {
	Kind     EdgeKind
	From, To NodeID
	// Rank is the rank whose timeline the edge belongs to: for chain
	// edges the rank, for a Message and a nonblocking CollOut the rank of
	// To, for a nonblocking CollIn the rank of From.
	Rank int
	// Weight is the measured time in ns of a computation edge (never
	// negative); 0 for messages.
	Weight int64
	// Bytes is a message's size (the sender's byte count).
	Bytes int64
}

// rankData holds one rank's operations and its links.
type rankData struct {
	base NodeID // id of the first operation
	ops  opStore

	hasInit, hasFin   bool
	initEnd, finStart int64

	// blk and nb are this rank's blocking and nonblocking collective
	// participations (indices into Graph.parts) in program order.
	blk, nb []uint32

	// Incoming cross edges, sorted by xTo (local operation index,
	// strictly increasing); xBytes holds maxU32 for sizes in xBig.
	xTo    []uint32
	xFrom  []NodeID
	xBytes []uint32
	xBig   map[uint32]uint64 // by index into xTo

	sites   siteCol         // call-site ids by event index
	siteTab *tracefmt.Sites // the rank's call-site table, nil: none
}

func (d *rankData) n() int { return d.ops.n }

func (d *rankData) hasChain() bool { return d.ops.n > 0 || len(d.blk) > 0 }

func (d *rankData) crossBytes(x int) int64 {
	if b := d.xBytes[x]; b != maxU32 {
		return int64(b)
	}
	return int64(min(d.xBig[uint32(x)], math.MaxInt64))
}

type collective struct {
	name        NameID
	gid         uint64
	members     []int32 // nil: the world
	procs       int
	bytes       int64
	first, n    uint32 // participants: Graph.parts[first : first+n], by rank
	start, end  int64
	nonblocking bool
	data        bool  // some member sent or received a byte
	root        int32 // world rank, -1: none or not known
}

type participant struct {
	coll uint32
	ri   int32 // the member's rank index (see rankIndex)
	// at is, for a blocking participation, the local index of the
	// operation the collective precedes on the rank's chain (the number of
	// operations before it); for a nonblocking one, the local index of the
	// posting operation.
	at  uint32
	idx uint32 // position in the rank's blk or nb list
	nb  bool
	ev  uint32
	// start and end are the member's call times (blocking) or the posting
	// operation's (nonblocking).
	start, end int64
}

// rankIndex numbers the ranks a graph holds operations for, the ranks
// with a log, 0, 1, ... in increasing world rank: a graph's per-rank
// tables are indexed by it, so that a world that claims many ranks but has
// few logs costs only what the logs hold. Every world rank with a log is
// in the index; the others of 0..size-1 have no operations.
type rankIndex struct {
	ids []int32 // world rank of each index, increasing
}

// denseIndex is the index of a world whose every rank has a log.
func denseIndex(size int) rankIndex {
	ids := make([]int32, size)
	for i := range ids {
		ids[i] = int32(i)
	}
	return rankIndex{ids}
}

// find returns the index of world rank r.
func (x *rankIndex) find(r int) (int, bool) {
	if r >= 0 && r < len(x.ids) && x.ids[r] == int32(r) {
		return r, true // ranks 0..r all have a log: the common case
	}
	if r < 0 || r > math.MaxInt32 {
		return 0, false
	}
	return slices.BinarySearch(x.ids, int32(r))
}

// rank returns the world rank of index i.
func (x *rankIndex) rank(i int) int { return int(x.ids[i]) }

// Graph is an MPI task graph. It is immutable once built and safe for
// concurrent use.
type Graph struct {
	size     int
	names    []string
	opNames  []opName
	initName string
	finName  string
	ranks    []rankData // by rank index
	index    rankIndex
	numOps   int
	collBase NodeID
	colls    []collective
	parts    []participant

	// sendBits marks the operations that send cross edges (bit i for
	// operation id 2+i); sendRank[w] counts the marks before word w.
	sendBits   []uint64
	sendRank   []uint32
	numSenders int
	// partBits marks the operations that a blocking collective precedes
	// on their rank's chain (bit i for operation id 2+i).
	partBits []uint64
	// rankIdx[b] is the rank index of operation id 2+b*4096.
	rankIdx []int32

	outOnce sync.Once
	out     *outIndex
}

// Size returns the number of ranks (the world size the logs claim).
func (g *Graph) Size() int { return g.size }

// Ranks returns the world ranks the graph holds operations for — the ranks
// with a log — in increasing order. The other ranks of 0..Size()-1 have
// none: RankOps gives them no operations and HasChain is false.
func (g *Graph) Ranks() []int {
	out := make([]int, len(g.index.ids))
	for i, r := range g.index.ids {
		out[i] = int(r)
	}
	return out
}

// NumNodes returns the number of nodes: 2 + NumOps + NumCollectives.
func (g *Graph) NumNodes() int { return 2 + g.numOps + len(g.colls) }

// NumOps returns the number of operation nodes.
func (g *Graph) NumOps() int { return g.numOps }

// NumCollectives returns the number of collective nodes.
func (g *Graph) NumCollectives() int { return len(g.colls) }

// NumMessages returns the number of Message edges.
func (g *Graph) NumMessages() int {
	n := 0
	for r := range g.ranks {
		d := &g.ranks[r]
		for _, f := range d.xFrom {
			if f < g.collBase {
				n++
			}
		}
	}
	return n
}

// Names returns the table of function names, sorted. Do not modify it.
func (g *Graph) Names() []string { return g.names }

// RankOps returns the id of rank r's first operation and how many it has;
// they are first, first+1, ... in program order.
func (g *Graph) RankOps(r int) (first NodeID, n int) {
	i, ok := g.index.find(r)
	if !ok {
		return None, 0
	}
	d := &g.ranks[i]
	return d.base, d.n()
}

// OpEvent returns the index, in its rank's event stream, of the event
// operation v comes from (what Node(v).Event.Index gives, cheaply); -1
// when v is not an operation.
func (g *Graph) OpEvent(v NodeID) int64 {
	if g.Kind(v) != KindOp {
		return -1
	}
	d := &g.ranks[g.indexOf(v)]
	return d.ops.event(uint32(v - d.base))
}

// RankCollectives calls yield for every collective call of rank r, with
// the collective's node and the index of the call's event in the rank's
// stream (for a nonblocking collective, of its posting call): the
// blocking calls in program order, then the nonblocking ones. It stops
// when yield returns false.
func (g *Graph) RankCollectives(r int, yield func(v NodeID, event int64) bool) {
	i, ok := g.index.find(r)
	if !ok {
		return
	}
	d := &g.ranks[i]
	for _, list := range [][]uint32{d.blk, d.nb} {
		for _, j := range list {
			p := &g.parts[j]
			if !yield(g.collBase+NodeID(p.coll), int64(p.ev)) {
				return
			}
		}
	}
}

// RankSpan returns the end of rank r's MPI_Init and the start of its
// MPI_Finalize on its clock; ok is false when the rank lacks either.
func (g *Graph) RankSpan(r int) (initEnd, finalizeStart int64, ok bool) {
	i, found := g.index.find(r)
	if !found {
		return 0, 0, false
	}
	d := &g.ranks[i]
	return d.initEnd, d.finStart, d.hasInit && d.hasFin
}

// EdgeEnd returns, for a computation edge e (any kind but Message) of
// positive weight, when its computation ended on rank e.Rank's clock: the
// start of the call it leads into (e.Rank's call of a collective, the
// start of e.Rank's MPI_Finalize). The computation ran from
// EdgeEnd-e.Weight to EdgeEnd. It returns 0 for any other edge, and for
// one that reaches no call of e.Rank.
func (g *Graph) EdgeEnd(e Edge) int64 {
	if e.Kind == Message || e.Weight <= 0 {
		return 0
	}
	switch g.Kind(e.To) {
	case KindOp:
		if g.Rank(e.To) == e.Rank {
			start, _ := g.OpTimes(e.To)
			return start
		}
	case KindCollective:
		if start, _, ok := g.PartTimes(e.To, e.Rank); ok {
			return start
		}
	case KindFinalize:
		if i, ok := g.index.find(e.Rank); ok && g.ranks[i].hasFin {
			return g.ranks[i].finStart
		}
	}
	return 0
}

// HasChain reports whether rank r has any operation or collective call,
// i.e. edges from Init and to Finalize.
func (g *Graph) HasChain(r int) bool {
	i, ok := g.index.find(r)
	return ok && g.ranks[i].hasChain()
}

// Kind returns the kind of node v (0 for an id out of range).
func (g *Graph) Kind(v NodeID) NodeKind {
	switch {
	case v == Init:
		return KindInit
	case v == Finalize:
		return KindFinalize
	case v < g.collBase:
		return KindOp
	case int(v-g.collBase) < len(g.colls):
		return KindCollective
	}
	return 0
}

// Rank returns the rank of an operation node, -1 for any other node.
func (g *Graph) Rank(v NodeID) int {
	if v < firstOp || v >= g.collBase {
		return -1
	}
	return g.index.rank(g.indexOf(v))
}

// indexOf returns the rank index of operation v: rankIdx gives the index
// of the first operation of v's block of 4096 ids, and a rank rarely ends
// inside a block.
func (g *Graph) indexOf(v NodeID) int {
	ri := int(g.rankIdx[(v-firstOp)>>chunkBits])
	for d := &g.ranks[ri]; d.base+NodeID(d.n()) <= v; d = &g.ranks[ri] {
		ri++
	}
	return ri
}

// Name returns the function name of node v.
func (g *Graph) Name(v NodeID) string {
	_, _, name, _ := g.Describe(v)
	return name
}

// Describe returns node v's kind, rank and function name (Kind, Rank and
// Name at once, for code that visits many nodes), and a small number that
// stands for the name, for tables indexed by function: its index in
// Names(), len(Names()) for Init and len(Names())+1 for Finalize. Nodes
// with the same number have the same name.
func (g *Graph) Describe(v NodeID) (kind NodeKind, rank int, name string, nameIdx int) {
	switch kind = g.Kind(v); kind {
	case KindInit:
		return kind, -1, g.initName, len(g.names)
	case KindFinalize:
		return kind, -1, g.finName, len(g.names) + 1
	case KindOp:
		ri := g.indexOf(v)
		d := &g.ranks[ri]
		fn := g.opNames[d.ops.name(uint32(v-d.base))].fn
		return kind, g.index.rank(ri), g.names[fn], int(fn)
	case KindCollective:
		fn := g.colls[v-g.collBase].name
		return kind, -1, g.names[fn], int(fn)
	}
	return 0, -1, "", -1
}

// CollectiveInfo is what a latency model needs of a collective node.
type CollectiveInfo struct {
	Name  string
	Bytes int64 // bytes per process
	Procs int   // members of the communicator
}

// CollectiveMovesData reports whether some member of collective node v
// sent or received a byte.
func (g *Graph) CollectiveMovesData(v NodeID) bool {
	return g.Kind(v) == KindCollective && g.colls[v-g.collBase].data
}

// Collective returns the model inputs of collective node v; ok is false
// when v is not a collective.
func (g *Graph) Collective(v NodeID) (CollectiveInfo, bool) {
	if g.Kind(v) != KindCollective {
		return CollectiveInfo{}, false
	}
	c := &g.colls[v-g.collBase]
	return CollectiveInfo{Name: g.names[c.name], Bytes: c.bytes, Procs: c.procs}, true
}

// Node returns the description of node v. It panics if v is not a node.
func (g *Graph) Node(v NodeID) Node {
	switch g.Kind(v) {
	case KindInit:
		n := Node{ID: v, Kind: KindInit, Name: g.initName, Rank: -1}
		first := true
		for r := range g.ranks {
			if d := &g.ranks[r]; d.hasInit && (first || d.initEnd < n.Start) {
				n.Start, n.End, first = d.initEnd, d.initEnd, false
			}
		}
		return n
	case KindFinalize:
		n := Node{ID: v, Kind: KindFinalize, Name: g.finName, Rank: -1}
		for r := range g.ranks {
			if d := &g.ranks[r]; d.hasFin && d.finStart > n.Start {
				n.Start, n.End = d.finStart, d.finStart
			}
		}
		return n
	case KindOp:
		ri := g.indexOf(v)
		r := g.index.rank(ri)
		d := &g.ranks[ri]
		i := uint32(v - d.base)
		on := g.opNames[d.ops.name(i)]
		n := Node{ID: v, Kind: KindOp, Name: g.names[on.fn], Rank: r, Start: d.ops.start(i), End: d.ops.end(i),
			EventKind: on.kind, Bytes: d.ops.bytes(i), Event: EventRef{Rank: r, Index: d.ops.event(i), Completion: -1}}
		switch {
		case on.kind == spec.Sendrecv && on.expanded:
			n.Event.Completion = 0
			if on.recvHalf {
				n.Event.Completion = 1
			}
		case on.expanded:
			j := i
			for j > 0 && d.ops.event(j-1) == n.Event.Index && g.opNames[d.ops.name(j-1)].expanded {
				j--
			}
			n.Event.Completion = int(i - j)
		}
		return n
	case KindCollective:
		c := &g.colls[v-g.collBase]
		return Node{ID: v, Kind: KindCollective, Name: g.names[c.name], Rank: -1, Start: c.start, End: c.end,
			EventKind: spec.Coll, Bytes: c.bytes, Event: EventRef{Rank: -1, Index: -1, Completion: -1},
			GID: c.gid, Members: c.members, Procs: c.procs, Participants: int(c.n), Nonblocking: c.nonblocking}
	}
	panic(fmt.Sprintf("taskgraph: node %d out of range (the graph has %d nodes)", v, g.NumNodes()))
}

// Participants returns the ranks whose calls make up collective v, in
// rank order (nil when v is not a collective).
func (g *Graph) Participants(v NodeID) []int {
	if g.Kind(v) != KindCollective {
		return nil
	}
	c := &g.colls[v-g.collBase]
	out := make([]int, c.n)
	for i := range out {
		out[i] = g.index.rank(int(g.parts[c.first+uint32(i)].ri))
	}
	return out
}

// PartTimes returns when rank r's call of collective v started and ended
// (on r's clock); ok is false when v is not a collective or r does not
// take part in it.
func (g *Graph) PartTimes(v NodeID, r int) (start, end int64, ok bool) {
	p := g.part(v, r)
	if p == nil {
		return 0, 0, false
	}
	return p.start, p.end, true
}

// part returns rank r's participation in collective v, nil when there is none.
func (g *Graph) part(v NodeID, r int) *participant {
	if g.Kind(v) != KindCollective {
		return nil
	}
	c := &g.colls[v-g.collBase]
	// The parts are in rank order.
	i := sort.Search(int(c.n), func(i int) bool { return g.index.rank(int(g.parts[c.first+uint32(i)].ri)) >= r })
	if i == int(c.n) {
		return nil
	}
	p := &g.parts[c.first+uint32(i)]
	if g.index.rank(int(p.ri)) != r {
		return nil
	}
	return p
}

// clamp returns max(d, 0).
func clamp(d int64) int64 {
	if d < 0 {
		return 0
	}
	return d
}
