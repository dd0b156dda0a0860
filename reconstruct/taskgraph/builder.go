package taskgraph

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// MaxNames is the size of a graph's function-name table; further names
// share the entry TooManyNames.
const MaxNames = math.MaxUint16

// TooManyNames is the name given to functions beyond MaxNames.
const TooManyNames = "MPI_(too_many_names)"

// Builder assembles a Graph in three phases:
//
//  1. operations: each rank's RankBuilder adds its operations in program
//     order (RankBuilders of different ranks may be used concurrently);
//  2. Layout numbers the nodes;
//  3. collectives (AddCollective) and incoming cross edges
//     (RankBuilder.SetIncoming, concurrently for different ranks), then
//     Finish.
type Builder struct {
	size int

	mu        sync.Mutex
	names     []string
	nameIdx   map[string]NameID
	opNames   []opName
	opNameIdx map[opName]opNameID

	ranks    []RankBuilder // by rank index
	index    rankIndex
	laidOut  bool
	numOps   int
	collBase NodeID
	colls    []collective
	parts    []participant

	initName, finName string
}

// NewBuilder returns a builder for a world of size ranks, each of which
// may have operations.
func NewBuilder(size int) *Builder {
	return newBuilder(size, denseIndex(size))
}

// NewBuilderFor returns a builder for a world of size ranks of which only
// the given ones (sorted, distinct, in 0..size-1: the ranks with a log)
// may have operations. Its memory and time do not depend on size.
func NewBuilderFor(size int, ranks []int) (*Builder, error) {
	if size < 0 || size > math.MaxInt32 {
		return nil, fmt.Errorf("internal error: taskgraph: world size %d", size)
	}
	ids := make([]int32, len(ranks))
	for i, r := range ranks {
		if r < 0 || r >= size || i > 0 && r <= ranks[i-1] {
			return nil, fmt.Errorf("internal error: taskgraph: ranks %v are not sorted distinct ranks of a world of %d", ranks, size)
		}
		ids[i] = int32(r)
	}
	return newBuilder(size, rankIndex{ids}), nil
}

func newBuilder(size int, index rankIndex) *Builder {
	b := &Builder{size: size, nameIdx: make(map[string]NameID), opNameIdx: make(map[opName]opNameID),
		ranks: make([]RankBuilder, len(index.ids)), index: index, initName: "MPI_Init", finName: "MPI_Finalize"}
	for i := range b.ranks {
		b.ranks[i].b = b
		b.ranks[i].rank = index.rank(i)
	}
	return b
}

// Name returns the index of a function name, adding it to the table. It
// is safe for concurrent use.
func (b *Builder) Name(s string) NameID {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id, ok := b.nameIdx[s]; ok {
		return id
	}
	if len(b.names) >= MaxNames-1 {
		s = TooManyNames
		if id, ok := b.nameIdx[s]; ok {
			return id
		}
	}
	id := NameID(len(b.names))
	b.names = append(b.names, s)
	b.nameIdx[s] = id
	return id
}

// SetSharedNames sets the names of the Init and Finalize nodes
// (defaults MPI_Init and MPI_Finalize).
func (b *Builder) SetSharedNames(init, finalize string) {
	b.initName, b.finName = init, finalize
}

// Rank returns the builder of rank r's operations, nil when r is not one
// of the ranks that may have operations. A RankBuilder is not safe for
// concurrent use; builders of different ranks are independent.
func (b *Builder) Rank(r int) *RankBuilder {
	i, ok := b.index.find(r)
	if !ok {
		return nil
	}
	return &b.ranks[i]
}

// RankBuilder adds one rank's operations.
type RankBuilder struct {
	b    *Builder
	rank int
	d    rankData
	err  error
	// cache is a small table of op names in front of the builder's, while
	// the rank's operations are added (2 KiB: allocated on the first, freed
	// by Done, so that thousands of ranks do not each keep one).
	cache *opNameCache
}

type opNameCache [256]struct {
	key uint32
	id  opNameID
	ok  bool
}

// Op is an operation to add.
type Op struct {
	Name       NameID
	Kind       spec.Kind
	Start, End int64
	Bytes      uint64
	Event      int64 // index of the event in the rank's stream
	// Expanded marks one request of a Waitall-like call, or a half of an
	// MPI_Sendrecv.
	Expanded bool
	// RecvHalf marks the receive half of an MPI_Sendrecv.
	RecvHalf bool
}

// AddOp appends an operation and returns its local index (0 for the
// rank's first). After an error (too many operations) operations are
// ignored and Layout reports it.
func (rb *RankBuilder) AddOp(o Op) uint32 {
	d := &rb.d
	if rb.err != nil || rb.b.laidOut {
		if rb.err == nil {
			rb.err = errors.New("internal error: taskgraph: AddOp after Layout")
		}
		return uint32(max(d.ops.n-1, 0))
	}
	if d.ops.n >= math.MaxUint32/2 {
		rb.err = fmt.Errorf("rank %d: more than %d operations: too large for a task graph", rb.rank, d.ops.n)
		return uint32(d.ops.n - 1)
	}
	return d.ops.add(o.Start, o.End, o.Bytes, o.Event, rb.opName(o.Name, o.Kind, o.Expanded, o.RecvHalf))
}

// opName returns the id of an op name, through a small per-rank cache in
// front of the builder's table.
func (rb *RankBuilder) opName(fn NameID, kind spec.Kind, expanded, recvHalf bool) opNameID {
	key := uint32(fn)<<10 | uint32(kind)<<2
	if expanded {
		key |= 1
	}
	if recvHalf {
		key |= 2
	}
	if rb.cache == nil {
		rb.cache = new(opNameCache)
	}
	c := &rb.cache[(key^key>>10)&255]
	if c.ok && c.key == key {
		return c.id
	}
	id := rb.b.opName(opName{fn: fn, kind: kind, expanded: expanded, recvHalf: recvHalf})
	c.key, c.id, c.ok = key, id, true
	return id
}

func (b *Builder) opName(on opName) opNameID {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id, ok := b.opNameIdx[on]; ok {
		return id
	}
	if len(b.opNames) >= MaxNames-1 {
		// Too many distinct (name, kind) pairs: share the last entry.
		return opNameID(len(b.opNames) - 1)
	}
	id := opNameID(len(b.opNames))
	b.opNames = append(b.opNames, on)
	b.opNameIdx[on] = id
	return id
}

// Done says the rank's operations are added, for now: it frees what adding
// them needed and the room left in their last chunk. Adding more
// afterwards still works.
func (rb *RankBuilder) Done() {
	rb.cache = nil
	rb.d.ops.trim()
}

// Event returns the event index of operation local.
func (rb *RankBuilder) Event(local uint32) int64 { return rb.d.ops.event(local) }

// Times returns the start and end of operation local.
func (rb *RankBuilder) Times(local uint32) (start, end int64) {
	return rb.d.ops.start(local), rb.d.ops.end(local)
}

// Permute reorders the rank's operations: operation i becomes operation
// perm[i]. perm must be a permutation of 0..NumOps()-1; operations of one
// Waitall-like call must stay adjacent and in order.
func (rb *RankBuilder) Permute(perm []uint32) error {
	if len(perm) != rb.d.n() {
		return fmt.Errorf("internal error: taskgraph: rank %d: permutation of %d for %d operations", rb.rank, len(perm), rb.d.n())
	}
	seen := make([]bool, len(perm))
	for _, p := range perm {
		if int(p) >= len(perm) || seen[p] {
			return fmt.Errorf("internal error: taskgraph: rank %d: not a permutation", rb.rank)
		}
		seen[p] = true
	}
	rb.d.ops.permute(perm)
	return nil
}

// NumOps returns the number of operations added so far.
func (rb *RankBuilder) NumOps() int { return rb.d.ops.n }

// Truncate drops the operations from local index n on.
func (rb *RankBuilder) Truncate(n int) { rb.d.ops.truncate(n) }

// SetInit records the end of the rank's MPI_Init (on its clock).
func (rb *RankBuilder) SetInit(end int64) { rb.d.hasInit, rb.d.initEnd = true, end }

// SetFinalize records the start of the rank's MPI_Finalize.
func (rb *RankBuilder) SetFinalize(start int64) { rb.d.hasFin, rb.d.finStart = true, start }

// Layout freezes the operations and numbers the nodes. It fails when the
// graph would have more than 2^32-1 nodes or a rank failed.
func (b *Builder) Layout() error {
	if b.laidOut {
		return nil
	}
	n := uint64(firstOp)
	for ri := range b.ranks {
		rb := &b.ranks[ri]
		if rb.err != nil {
			return rb.err
		}
		rb.cache = nil
		rb.d.base = NodeID(min(n, math.MaxUint32))
		n += uint64(rb.d.n())
	}
	if n >= math.MaxUint32/2 {
		return fmt.Errorf("the task graph would have %d operations: more than this build handles", n-uint64(firstOp))
	}
	b.numOps = int(n) - int(firstOp)
	b.collBase = NodeID(n)
	b.laidOut = true
	return nil
}

// Index returns the position of rank r among the ranks that may have
// operations (0 for the lowest), false when r is not one of them.
func (b *Builder) Index(r int) (int, bool) { return b.index.find(r) }

// OpID returns the node id of rank r's operation with the given local
// index (None when r has no operations). Valid after Layout.
func (b *Builder) OpID(r int, local uint32) NodeID {
	i, ok := b.index.find(r)
	if !ok {
		return None
	}
	return b.ranks[i].d.base + NodeID(local)
}

// Part is one member's call of a collective.
type Part struct {
	Rank        int
	Nonblocking bool
	// At is, for a blocking call, the number of the rank's operations
	// that precede it (the collective sits on the rank's chain before
	// operation At); for a nonblocking call, the local index of the
	// posting operation.
	At uint32
	// Start and End are the times of the member's call (for a
	// nonblocking call, of the posting operation).
	Start, End int64
	// Event is the index of the call's event in the rank's stream.
	Event int64
}

// Collective is a collective instance to add.
type Collective struct {
	Name NameID
	GID  uint64
	// Members are the communicator's members, world ranks, sorted; the
	// slice is kept (several instances may share it). It may be nil for
	// MPI_COMM_WORLD, whose members are all the ranks 0..Procs-1.
	Members []int32
	// Procs is the number of members, the latency model's process count
	// (len(Members) when 0).
	Procs int
	// Bytes is the bytes per process the latency model takes.
	Bytes int64
	// MovesData says some member sent or received a byte (Bytes, a mean,
	// may round to 0 when few do).
	MovesData bool
	// Parts are the recorded calls, one per participating rank, sorted by
	// rank.
	Parts []Part
	// Root is the world rank of a rooted collective's root, when HasRoot.
	Root    int
	HasRoot bool
}

// ReserveCollectives makes room for n more collectives with parts
// participants in all, so that adding them does not copy the ones before.
func (b *Builder) ReserveCollectives(n, parts int) {
	b.colls = slices.Grow(b.colls, n)
	b.parts = slices.Grow(b.parts, parts)
}

// AddCollective adds a collective instance and returns its node id. Call
// it after Layout, in the order the ids should have.
func (b *Builder) AddCollective(c Collective) (NodeID, error) {
	if !b.laidOut {
		return None, errors.New("internal error: taskgraph: AddCollective before Layout")
	}
	if len(c.Parts) == 0 {
		return None, errors.New("internal error: taskgraph: a collective without participants")
	}
	if uint64(b.collBase)+uint64(len(b.colls)) >= math.MaxUint32-1 {
		return None, errors.New("the task graph has too many nodes")
	}
	ci := uint32(len(b.colls))
	col := collective{name: c.Name, gid: c.GID, members: c.Members, procs: c.Procs, bytes: c.Bytes,
		first: uint32(len(b.parts)), n: uint32(len(c.Parts)), root: -1, data: c.MovesData}
	if c.HasRoot && c.Root >= 0 && c.Root < b.size {
		col.root = int32(c.Root)
	}
	switch {
	case col.procs == 0:
		col.procs = len(c.Members)
	case c.Members != nil && col.procs != len(c.Members):
		return None, fmt.Errorf("internal error: taskgraph: a collective of %d processes with %d members listed", col.procs, len(c.Members))
	}
	for i, p := range c.Parts {
		ri, ok := b.index.find(p.Rank)
		if p.Rank >= b.size || !ok {
			return None, fmt.Errorf("internal error: taskgraph: collective participant rank %d out of range or without operations", p.Rank)
		}
		if i > 0 && c.Parts[i-1].Rank >= p.Rank {
			return None, errors.New("internal error: taskgraph: collective participants not sorted by rank")
		}
		n := uint32(b.ranks[ri].d.n())
		if p.Nonblocking && p.At >= n || !p.Nonblocking && p.At > n {
			return None, fmt.Errorf("internal error: taskgraph: rank %d: collective position %d out of range", p.Rank, p.At)
		}
		if p.Event < 0 || p.Event >= math.MaxUint32 {
			return None, fmt.Errorf("rank %d: event index %d too large for a task graph", p.Rank, p.Event)
		}
		if i == 0 || p.Start < col.start {
			col.start = p.Start
		}
		if i == 0 || p.End > col.end {
			col.end = p.End
		}
		col.nonblocking = col.nonblocking || p.Nonblocking
		b.parts = append(b.parts, participant{coll: ci, ri: int32(ri), at: p.At, nb: p.Nonblocking,
			ev: uint32(p.Event), start: p.Start, end: p.End})
	}
	b.colls = append(b.colls, col)
	return b.collBase + NodeID(ci), nil
}

// ReserveIncoming makes room for n incoming cross edges of the rank.
func (rb *RankBuilder) ReserveIncoming(n int) {
	d := &rb.d
	d.xTo = slices.Grow(d.xTo, n)
	d.xFrom = slices.Grow(d.xFrom, n)
	d.xBytes = slices.Grow(d.xBytes, n)
}

// AddIncoming adds an incoming cross edge of the rank: to the operation
// with local index to, strictly after the previous one's, from a sending
// operation (a Message) or a nonblocking collective (a CollOut edge),
// with the message's bytes. Call it after Layout; builders of different
// ranks may be used concurrently.
func (rb *RankBuilder) AddIncoming(to uint32, from NodeID, bytes uint64) error {
	d := &rb.d
	if n := len(d.xTo); to >= uint32(d.n()) || n > 0 && d.xTo[n-1] >= to {
		return fmt.Errorf("internal error: taskgraph: rank %d: incoming edge to operation %d not after the previous one, within the rank's %d operations", rb.rank, to, d.n())
	}
	if bytes >= maxU32 {
		if d.xBig == nil {
			d.xBig = make(map[uint32]uint64)
		}
		d.xBig[uint32(len(d.xTo))] = bytes
		bytes = maxU32
	}
	d.xTo = append(d.xTo, to)
	d.xFrom = append(d.xFrom, from)
	d.xBytes = append(d.xBytes, uint32(bytes))
	return nil
}

// Finish returns the graph. The builder must not be used afterwards.
func (b *Builder) Finish() (*Graph, error) {
	if err := b.Layout(); err != nil {
		return nil, err
	}
	g := &Graph{size: b.size, index: b.index, initName: b.initName, finName: b.finName, numOps: b.numOps, collBase: b.collBase,
		colls: b.colls, parts: b.parts}
	// Cross edges must come from existing nodes.
	limit := b.collBase + NodeID(len(b.colls))
	for ri := range b.ranks {
		for _, f := range b.ranks[ri].d.xFrom {
			if f < firstOp || f >= limit {
				return nil, fmt.Errorf("internal error: taskgraph: rank %d: incoming edge from node %d out of range", b.ranks[ri].rank, f)
			}
		}
	}
	// Sorted names, for determinism whatever order ranks added them in.
	order := make([]NameID, len(b.names))
	for i := range order {
		order[i] = NameID(i)
	}
	slices.SortFunc(order, func(x, y NameID) int { return cmp.Compare(b.names[x], b.names[y]) })
	remap := make([]NameID, len(b.names))
	g.names = make([]string, len(b.names))
	for newID, old := range order {
		remap[old] = NameID(newID)
		g.names[newID] = b.names[old]
	}
	for i := range b.opNames {
		b.opNames[i].fn = remap[b.opNames[i].fn]
	}
	oorder := make([]opNameID, len(b.opNames))
	for i := range oorder {
		oorder[i] = opNameID(i)
	}
	slices.SortFunc(oorder, func(x, y opNameID) int {
		a, c := b.opNames[x], b.opNames[y]
		if r := cmp.Compare(a.fn, c.fn); r != 0 {
			return r
		}
		if r := cmp.Compare(a.kind, c.kind); r != 0 {
			return r
		}
		if a.expanded != c.expanded {
			if !a.expanded {
				return -1
			}
			return 1
		}
		if a.recvHalf == c.recvHalf {
			return 0
		}
		if !a.recvHalf {
			return -1
		}
		return 1
	})
	oremap := make([]opNameID, len(b.opNames))
	g.opNames = make([]opName, len(b.opNames))
	for newID, old := range oorder {
		oremap[old] = opNameID(newID)
		g.opNames[newID] = b.opNames[old]
	}
	g.ranks = make([]rankData, len(b.ranks))
	for ri := range b.ranks {
		d := b.ranks[ri].d
		d.ops.remap(oremap)
		g.ranks[ri] = d
	}
	for i := range g.colls {
		g.colls[i].name = remap[g.colls[i].name]
	}
	g.rankIdx = make([]int32, (g.numOps+chunkLen-1)>>chunkBits)
	for ri, blk := 0, 0; blk < len(g.rankIdx); blk++ {
		v := firstOp + NodeID(blk)<<chunkBits
		for d := &g.ranks[ri]; d.base+NodeID(d.n()) <= v; d = &g.ranks[ri] {
			ri++
		}
		g.rankIdx[blk] = int32(ri)
	}
	g.sendBits = make([]uint64, (g.numOps+63)/64)
	for r := range g.ranks {
		for _, f := range g.ranks[r].xFrom {
			if f < g.collBase {
				i := f - firstOp
				g.sendBits[i>>6] |= 1 << (i & 63)
			}
		}
	}
	g.sendRank = make([]uint32, len(g.sendBits))
	for i, w := range g.sendBits {
		g.sendRank[i] = uint32(g.numSenders)
		g.numSenders += bits.OnesCount64(w)
	}
	g.partBits = make([]uint64, (g.numOps+63)/64)
	// Per-rank participation lists in program order.
	for j := range g.parts {
		pt := &g.parts[j]
		d := &g.ranks[pt.ri]
		if pt.nb {
			d.nb = append(d.nb, uint32(j))
		} else {
			d.blk = append(d.blk, uint32(j))
		}
	}
	for r := range g.ranks {
		d := &g.ranks[r]
		byPos := func(x, y uint32) int {
			px, py := &g.parts[x], &g.parts[y]
			if c := cmp.Compare(px.at, py.at); c != 0 {
				return c
			}
			return cmp.Compare(px.ev, py.ev)
		}
		slices.SortFunc(d.blk, byPos)
		slices.SortFunc(d.nb, byPos)
		for i, j := range d.blk {
			g.parts[j].idx = uint32(i)
			if at := g.parts[j].at; int(at) < d.n() {
				o := uint32(d.base-firstOp) + at
				g.partBits[o>>6] |= 1 << (o & 63)
			}
		}
		for i, j := range d.nb {
			g.parts[j].idx = uint32(i)
		}
	}
	*b = Builder{}
	return g, nil
}
