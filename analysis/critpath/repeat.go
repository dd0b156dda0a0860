package critpath

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"github.com/mpitrace/mpitrace/analysis/fold"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// StepKey is what makes two steps of a path the same step when the path
// is folded: a step is a vertex of the path with the hop into it. A
// coarser Level leaves fields zero.
type StepKey struct {
	Rank int32 // the vertex's rank, -1 for shared vertices
	Func int32 // the vertex's MPI function (its index among the path's functions)
	Kind taskgraph.EdgeKind
	Peer int32 // the rank of the vertex the hop comes from
	// Site is the vertex's call site (0 in traces without call sites),
	// numbered across ranks (programSites), or its id in its rank's table
	// (VertexSite) at level SameStep when the ranks recorded no table.
	Site uint32
}

// Levels of likeness of the steps of a path, from the finest: Fold tries
// them in turn until the folded path is small enough to draw.
const (
	// SameStep: same rank, MPI function, call site (when recorded), kind
	// of hop and rank it comes from.
	SameStep = iota
	// SameCall: same MPI function and kind of hop, and whether the hop
	// stays on one rank; the ranks may differ (a path that moves across
	// ranks from one iteration to the next).
	SameCall
	// SameFunction: same MPI function (the path may reach it by a
	// message in one iteration and by computation in the next).
	SameFunction
	// Merged: as SameFunction, and consecutive vertices of one MPI
	// function are one step (three MPI_Wait in one iteration, four in the
	// next).
	Merged
	numLevels
)

// stepKey is the signature of a step at a level: the vertex on rank rank
// with MPI function nameIdx called at call site site, reached by a hop of
// kind kind from a vertex on rank prev. It is the one place that decides
// which steps fold together.
func stepKey(level int, kind taskgraph.EdgeKind, rank, nameIdx, prev int, site uint32) StepKey {
	switch level {
	case SameStep:
		return StepKey{Rank: int32(rank), Func: int32(nameIdx), Kind: kind, Peer: int32(prev), Site: site}
	case SameCall:
		same := int32(0)
		if rank == prev {
			same = 1
		}
		return StepKey{Func: int32(nameIdx), Kind: kind, Peer: same, Site: site}
	}
	return StepKey{Func: int32(nameIdx)}
}

// Likeness says which steps f folds together.
func (f *Folded) Likeness() string {
	switch f.Level {
	case SameStep:
		if f.sites {
			return "same rank, MPI function, call site and hop"
		}
		return "same rank, MPI function and hop"
	case SameCall:
		if f.sites {
			return "same MPI function, call site and hop, on any rank"
		}
		return "same MPI function and hop, on any rank"
	case SameFunction:
		return "same MPI function, on any rank, reached by any hop"
	}
	return "same MPI function, on any rank, reached by any hop; consecutive calls of one function merged"
}

// Folded is a critical path folded by package fold: the repetitions of
// the loops of an iterative program, each body once with its count.
type Folded struct {
	// Nodes cover the steps 0 to Steps()-1: step i is vertex i and the
	// hop into it, or at level Merged the vertices StepVertices(i).
	Nodes []fold.Node
	// Level is the likeness of the steps folded together (SameStep...).
	Level int
	p     *Path // the path of the graph folded, nil for a replay's
	st    *steps
	w     []float64 // StepWeight's, once asked for
	// merged, at level Merged, finds the path vertices of each step (a
	// step is then a run of vertices of one MPI function); nil when a
	// step is a vertex.
	merged *mergedSteps
	// sites: the steps' call sites told them apart (level SameStep, a
	// trace with call sites).
	sites bool
}

// bigFold is the number of path vertices from which Fold collects garbage
// before it folds, and drops the merged level's fold after its count (it
// folds it again if taken): below it, what a level keeps is small.
var bigFold = 1 << 20 // a variable for the tests of long paths

// FoldTarget is the most vertices a folded path should draw: a path of
// at most this many is drawn unfolded, and Fold takes at once a fold that
// draws at most a third of it (see Fold).
const FoldTarget = 300

// Fold folds p: it gives each step a signature (at level SameStep, its
// vertex's rank, MPI function and call site, the kind of the hop into it
// and the rank it comes from) and finds the runs of repeated steps
// (package fold). The finest fold that draws at most FoldTarget/3
// vertices is taken; when no level's does, Fold keeps the finest whose
// fold draws at most 1.5 times the fewest vertices any level drew (a path
// whose iterations take other ranks or another number of waits folds
// well only at a coarse level: 239 vertices at SameFunction, 8 at Merged,
// for 1000 iterations of the stencil fixture).
//
// The coarsest level is folded first: the vertices it draws bound the
// fewest, so a finer level is given up as soon as its fold draws more
// than either rule could take (fold.FindWithin): on a path whose steps
// vary from one iteration to the next, the finer levels stop after a few
// hundred steps instead of folding the whole path, and the signatures of
// SameStep and SameCall are made only as far as the fold reads them
// (fold.Source), reading the path again. When no two consecutive vertices
// have one MPI function, the merged level's steps are the vertices and
// SameFunction's fold is the merged level's. It keeps a byte per vertex
// for its function (two on a path of more than 256 functions), and at
// level Merged, when it merges, 5 bytes per merged step; the fold itself
// keeps nothing per step but, at SameStep and SameCall, the signatures it
// read (1 to 4 bytes each), besides the folds.
func Fold(p *Path) *Folded {
	f, _ := p.StepPath().Fold() // a graph's path never fails
	return f
}

// Fold folds the path as Fold does.
func (sp *StepPath) Fold() (*Folded, error) {
	big := sp.NumSteps > bigFold
	if big {
		runtime.GC() // what made the path is garbage: make room first
	}
	st, err := sp.newSteps()
	if err != nil {
		return nil, err
	}
	return st.fold(big)
}

// fold is Fold of st.
func (st *steps) fold(big bool) (*Folded, error) {
	f, err := st.foldLevels(big)
	if err != nil {
		return nil, err
	}
	f.p = st.sp.p
	return f, nil
}

func (st *steps) foldLevels(big bool) (*Folded, error) {
	var fd fold.Finder
	var folds [numLevels]*Folded
	var leaves [numLevels]int
	coarse, err := st.foldAt(&fd, Merged, -1)
	if err != nil {
		return nil, err
	}
	leaves[Merged] = fold.Leaves(coarse.Nodes)
	// same: the merged level's steps are the vertices (merged nil), its
	// signatures SameFunction's.
	same := coarse.merged == nil
	var sameNodes []fold.Node
	if same {
		sameNodes = coarse.Nodes
	}
	if !big || same {
		// On a long path it is folded again if taken: its 5 bytes per
		// merged step need not wait through the finer levels.
		folds[Merged] = coarse
	}
	coarse = nil
	fewest := leaves[Merged]
	for level := range Merged {
		limit := max(FoldTarget/3, fewest*3/2)
		var f *Folded
		switch {
		case level != SameFunction || !same:
			if f, err = st.foldAt(&fd, level, limit); err != nil {
				return nil, err
			}
		case leaves[Merged] <= limit:
			f = &Folded{Level: level, st: st, Nodes: sameNodes}
		}
		if f == nil {
			continue // draws more than FoldTarget/3 and 1.5 times the fewest
		}
		n := fold.Leaves(f.Nodes)
		if n <= FoldTarget/3 {
			return f, nil
		}
		folds[level], leaves[level] = f, n
		fewest = min(fewest, n)
	}
	if leaves[Merged] > FoldTarget/3 {
		for level := range Merged {
			if folds[level] != nil && leaves[level]*2 <= fewest*3 {
				return folds[level], nil
			}
		}
	}
	if folds[Merged] == nil {
		return st.foldAt(&fd, Merged, -1)
	}
	return folds[Merged], nil
}

// foldAt folds st's path at level with fd; nil when the fold would draw
// more than limit vertices (limit < 0: no limit).
func (st *steps) foldAt(fd *fold.Finder, level, limit int) (*Folded, error) {
	f := &Folded{Level: level, st: st}
	var nodes []fold.Node
	ok := false
	switch level {
	case SameStep, SameCall:
		src := st.source(level)
		nodes, ok = fd.FindSource(src, limit)
		if err := src.close(); err != nil {
			return nil, err
		}
		f.sites = src.sites
	case SameFunction:
		nodes, ok = st.fn.find(fd, limit)
	default:
		var seq fnSeq
		seq, f.merged = merge(&st.fn, st.runs)
		nodes, ok = seq.find(fd, limit)
	}
	if !ok {
		return nil, nil
	}
	f.Nodes = nodes
	return f, nil
}

// fnSeq is the function of each vertex of a path, its index among the
// path's functions: a byte each while there are at most 256, then two.
type fnSeq struct {
	b []uint8
	w []uint16 // once an index does not fit a byte; b is then nil
}

func (s *fnSeq) len() int {
	if s.w != nil {
		return len(s.w)
	}
	return len(s.b)
}

func (s *fnSeq) at(i int) int {
	if s.w != nil {
		return int(s.w[i])
	}
	return int(s.b[i])
}

// add appends x (< 1<<16).
func (s *fnSeq) add(x int) {
	if s.w == nil && x > math.MaxUint8 {
		s.w = make([]uint16, len(s.b), max(cap(s.b), 1))
		for i, v := range s.b {
			s.w[i] = uint16(v)
		}
		s.b = nil
	}
	if s.w != nil {
		s.w = append(s.w, uint16(x))
	} else {
		s.b = append(s.b, uint8(x))
	}
}

// find folds s with fd (fold.FindWithin).
func (s *fnSeq) find(fd *fold.Finder, limit int) ([]fold.Node, bool) {
	if s.w != nil {
		return fold.FindSlice(fd, s.w, limit)
	}
	return fold.FindSlice(fd, s.b, limit)
}

// merge collapses each of the runs runs of equal neighbours of seq into
// one, and returns what is left and where each's vertices are; seq itself
// and nil when no two neighbours are equal.
func merge(seq *fnSeq, runs int) (fnSeq, *mergedSteps) {
	n := seq.len()
	if runs == n {
		return *seq, nil
	}
	var out fnSeq
	if seq.w != nil {
		out.w = make([]uint16, 0, runs)
	} else {
		out.b = make([]uint8, 0, runs)
	}
	m := &mergedSteps{fn: seq, n: n, steps: runs, every: make([]int32, 0, (runs+mergedEvery-1)/mergedEvery)}
	for i := range n {
		x := seq.at(i)
		if i > 0 && x == seq.at(i-1) {
			continue
		}
		if out.len()%mergedEvery == 0 {
			m.every = append(m.every, int32(i))
		}
		out.add(x)
	}
	m.at, m.first, m.end = 0, 0, m.runEnd(0)
	return out, m
}

// mergedEvery is the number of merged steps from one whose first vertex
// mergedSteps keeps to the next.
const mergedEvery = 64

// mergedSteps finds the path vertices of the steps of level Merged, runs
// of vertices of one function, keeping the first vertex of one step in
// mergedEvery: a step is found from the one kept before it, or from the
// step last found when the steps are asked for in order.
type mergedSteps struct {
	fn    *fnSeq
	n     int     // vertices
	steps int     // merged steps
	every []int32 // the first vertex of step k*mergedEvery
	// The step last found and its vertices [first, end).
	at, first, end int
}

// vertices returns step i's vertices [first, end).
func (m *mergedSteps) vertices(i int) (first, end int) {
	if i < m.at || i-m.at > mergedEvery {
		k := i / mergedEvery
		m.at, m.first = k*mergedEvery, int(m.every[k])
		m.end = m.runEnd(m.first)
	}
	for m.at < i {
		m.at, m.first = m.at+1, m.end
		m.end = m.runEnd(m.first)
	}
	return m.first, m.end
}

// runEnd returns the end of the run of vertices of one function from v.
func (m *mergedSteps) runEnd(v int) int {
	x := m.fn.at(v)
	for v++; v < m.n && m.fn.at(v) == x; v++ {
	}
	return v
}

// steps are what every level needs of a path's steps, made in one pass
// over the path: each vertex's MPI function (a byte or two), and where
// each class of steps last occurs. The finer levels' signatures are made
// as their fold reads them, from another pass (stepSource).
type steps struct {
	sp *StepPath
	n  int // the path's vertices
	// fn is each vertex's function, its index in names: the signature at
	// SameFunction and Merged.
	fn    fnSeq
	names []string
	idx   map[string]int // names' indices
	// lastCls is the last vertex of each class (class): a signature of
	// SameStep or SameCall occurs nowhere past the last vertex of its
	// class. Nil when a class is out of its range.
	lastCls []int32
	// runs is the number of runs of consecutive vertices of one function:
	// the steps at level Merged.
	runs int
	// prog numbers call sites across ranks (programSites); nil when the
	// ranks have no call-site tables.
	prog *programSites
}

// newSteps makes the path's steps: one pass over it.
func (sp *StepPath) newSteps() (*steps, error) {
	visit, finish := sp.stepsVisitor()
	var err error
	if sp.res != nil {
		// A replay's: the heads alone, which is what visit reads.
		var st reconstruct.ReplayStep
		err = sp.res.StepHeads(func(h *reconstruct.StepHead) error {
			st.Name, st.Rank, st.In.Kind = h.Name, h.Rank, h.In
			visit(&st)
			return nil
		})
	} else {
		err = sp.Steps(func(s *reconstruct.ReplayStep) error {
			visit(s)
			return nil
		})
	}
	if err != nil {
		return nil, err
	}
	return finish()
}

// stepsVisitor returns newSteps' pass: visit sees each step in order
// (reading its Name, Rank and In.Kind alone), finish returns the steps.
func (sp *StepPath) stepsVisitor() (visit func(*reconstruct.ReplayStep), finish func() (*steps, error)) {
	n := sp.NumSteps
	st := &steps{sp: sp, n: n, fn: fnSeq{b: make([]uint8, 0, n)}, idx: map[string]int{}, prog: newProgramSites(sp.tables())}
	var names nameCache
	var cls []int32 // by class, grown with the names
	known := true
	prev := -1
	i := 0
	visit = func(s *reconstruct.ReplayStep) {
		x := names.index(st, s.Name)
		ek := s.In.Kind
		if i == 0 {
			ek = 0
		}
		if i == 0 || x != st.fn.at(i-1) {
			st.runs++
		}
		st.fn.add(min(x, math.MaxUint16))
		if known {
			if c := class(x, ek, s.Rank, prev); c >= 0 {
				if c >= len(cls) {
					cls = append(cls, make([]int32, c+1-len(cls))...)
				}
				cls[c] = int32(i)
			} else {
				known, cls = false, nil // Last knows nothing
			}
		}
		prev = s.Rank
		i++
	}
	return visit, func() (*steps, error) {
		if i != n {
			return nil, fmt.Errorf("internal error: critpath: a path of %d steps gave %d", n, i)
		}
		if len(st.names) > math.MaxUint16+1 {
			return nil, fmt.Errorf("critpath: a path of %d MPI functions (at most %d are folded)", len(st.names), math.MaxUint16+1)
		}
		st.lastCls = cls
		return st, nil
	}
}

// nameCache finds a step's function's index, remembering the names seen
// by where their bytes are: a path's steps take a few functions in turn,
// and the names the replay or the graph gives are interned, so the same
// function comes with the same bytes each time and is found without
// hashing or comparing its text. A name met elsewhere in memory is looked
// up by its text, as a name the cache lost.
type nameCache struct {
	e [64]struct {
		p *byte
		n int
		x int
	}
}

// index returns name's index in st.names, adding it when new.
func (c *nameCache) index(st *steps, name string) int {
	p := unsafe.StringData(name)
	a := uintptr(unsafe.Pointer(p))
	e := &c.e[uint64(a)*0x9E3779B97F4A7C15>>58]
	if p != nil && e.p == p && e.n == len(name) {
		return e.x
	}
	x, ok := st.idx[name]
	if !ok {
		x = len(st.names)
		st.idx[name] = x
		st.names = append(st.names, name)
	}
	e.p, e.n, e.x = p, len(name), x
	return x
}

// numClasses is the number of classes (class) of each function.
const numClasses = 16

// class is a small number for the vertex of function nameIdx on rank
// rank reached by a hop of kind kind from rank prev, a function of its
// key at SameStep or SameCall (the function, the kind of hop, and whether
// the hop stays on one rank): when the last vertex of its class is
// behind, a key no longer occurs. -1 when out of range.
func class(nameIdx int, kind taskgraph.EdgeKind, rank, prev int) int {
	return classOf(nameIdx, kind, rank == prev)
}

// classOf is class of a vertex whose hop stays on one rank when same.
func classOf(nameIdx int, kind taskgraph.EdgeKind, same bool) int {
	if kind >= numClasses/2 {
		return -1
	}
	c := ((nameIdx+1)*numClasses/2 + int(kind)) * 2
	if same {
		c++
	}
	return c
}

// signature is the symbol of a key of a level whose keys are not
// numbered: Func < len(names)+2, Kind < 256, Peer 0 or 1.
func signature(k StepKey) uint32 {
	return (uint32(k.Func)<<8|uint32(k.Kind))<<1 | uint32(k.Peer)
}

// source returns the signatures of the steps at SameStep or SameCall, to
// be folded: made from another pass over the path, which close ends.
func (st *steps) source(level int) *stepSource {
	s := &stepSource{st: st, level: level, ids: make(map[StepKey]uint32), prev: -1,
		numbered: level == SameStep || st.prog != nil}
	s.next, s.stop = iter.Pull(st.sp.stepRecords(st, &s.err))
	return s
}

// stepRec is what a level's signature needs of a step.
type stepRec struct {
	rank    int32
	nameIdx int32
	kind    taskgraph.EdgeKind // of the hop into it (0 for the first)
	site    uint32             // numbered across ranks (programSites) when the ranks have tables
}

// stepBatch is the number of steps a pass over the path gives at once.
const stepBatch = 1 << 10

// stepRecords returns a pass over the path giving its steps' records in
// batches; a failed pass leaves its error in *err.
func (sp *StepPath) stepRecords(st *steps, err *error) iter.Seq[[]stepRec] {
	return func(yield func([]stepRec) bool) {
		batch := make([]stepRec, 0, stepBatch)
		var names nameCache
		errStop := errors.New("stop")
		i := 0
		e := sp.Steps(func(s *reconstruct.ReplayStep) error {
			ek := s.In.Kind
			if i == 0 {
				ek = 0
			}
			i++
			site := s.Site
			if st.prog != nil {
				site = st.prog.id(s.SiteRank, site)
			}
			batch = append(batch, stepRec{rank: int32(s.Rank), nameIdx: int32(names.index(st, s.Name)), kind: ek, site: site})
			if len(batch) == stepBatch {
				if !yield(batch) {
					return errStop
				}
				batch = batch[:0]
			}
			return nil
		})
		if e != nil && e != errStop {
			*err = e
			return
		}
		if e == nil && len(batch) > 0 {
			yield(batch)
		}
	}
}

// stepSource makes the signatures of a path's steps at level SameStep or
// SameCall in order (a fold.Source), from a pass over the path. SameStep,
// and SameCall in a trace with call sites, number the signatures in the
// order they first occur; SameCall in a trace without them makes the
// signatures from the function's name index.
type stepSource struct {
	st       *steps
	level    int
	numbered bool
	ids      map[StepKey]uint32
	cls      []int32 // the class of each numbered signature
	// A path repeats a few keys: a small table in front of the map finds
	// most of them without hashing the key.
	recent [64]struct {
		k  StepKey
		id uint32
		ok bool
	}
	prev  int  // the rank of the vertex before the next to fill
	sites bool // call sites told steps apart
	// The pass over the path: next gives the next batch of steps.
	next  func() ([]stepRec, bool)
	stop  func()
	batch []stepRec
	err   error
}

func (s *stepSource) Len() int { return s.st.n }

// close ends the pass over the path, and returns its error.
func (s *stepSource) close() error {
	s.stop()
	return s.err
}

// Last is the last vertex of the class of signature sym.
func (s *stepSource) Last(sym uint32) int {
	st := s.st
	if st.lastCls == nil {
		return st.n - 1
	}
	var c int
	if s.numbered {
		c = int(s.cls[sym])
	} else {
		c = classOf(int(sym>>9), taskgraph.EdgeKind(sym>>1&0xff), sym&1 != 0)
	}
	return int(st.lastCls[c])
}

func (s *stepSource) Fill(dst []uint32, from int) {
	for d := range dst {
		if len(s.batch) == 0 {
			var ok bool
			if s.batch, ok = s.next(); !ok {
				// A pass that failed (close tells) or fell short (the
				// first pass counted the steps): what is left is 0.
				clear(dst[d:])
				if s.err == nil {
					s.err = fmt.Errorf("internal error: critpath: a path of %d steps gave %d", s.st.n, from+d)
				}
				return
			}
		}
		r := &s.batch[0]
		s.batch = s.batch[1:]
		rank := int(r.rank)
		var site uint32
		if s.numbered {
			site = r.site
		}
		k := stepKey(s.level, r.kind, rank, int(r.nameIdx), s.prev, site)
		c := class(int(r.nameIdx), r.kind, rank, s.prev)
		s.prev = rank
		if !s.numbered {
			dst[d] = signature(k)
			continue
		}
		rc := &s.recent[(uint32(k.Func)*7+uint32(k.Rank)*13+uint32(k.Peer)*5+uint32(k.Kind)*3+k.Site)&63]
		if !rc.ok || rc.k != k {
			id, ok := s.ids[k]
			if !ok {
				id = uint32(len(s.ids))
				s.ids[k] = id
				s.cls = append(s.cls, int32(c))
				s.sites = s.sites || k.Site != 0
			}
			rc.k, rc.id, rc.ok = k, id, true
		}
		dst[d] = rc.id
	}
}

// programSites numbers call sites by their place in the program: the
// object file holding the return address and the offset in that file.
// Ranks intern their call sites apart, and ASLR loads each rank's objects
// at its own addresses, but ranks running one binary give one line of it
// one number here.
type programSites struct {
	tables map[int]*tracefmt.Sites
	byRank map[[2]int64]uint32 // (rank, rank's site id) -> number
	byProg map[progSite]uint32
}

type progSite struct {
	path string
	off  uint64
}

// newProgramSites returns the numbering of the call sites of the ranks'
// tables, nil when no rank has call sites.
func newProgramSites(tables map[int]*tracefmt.Sites) *programSites {
	for _, t := range tables {
		if t.Len() > 0 {
			return &programSites{tables: tables, byRank: map[[2]int64]uint32{}, byProg: map[progSite]uint32{}}
		}
	}
	return nil
}

// id returns the number of rank's call site site, 0 for 0. A site whose
// address lies in no recorded mapping is numbered apart.
func (ps *programSites) id(rank int, site uint32) uint32 {
	if site == 0 {
		return 0
	}
	rk := [2]int64{int64(rank), int64(site)}
	if n, ok := ps.byRank[rk]; ok {
		return n
	}
	tab := ps.tables[rank]
	addr, _ := tab.Addr(uint64(site))
	key := progSite{path: "\x00rank " + strconv.Itoa(rank), off: uint64(site)}
	for _, m := range tab.Mappings() {
		if addr >= m.Start && addr < m.End {
			key = progSite{path: m.Path, off: addr - m.Start + m.Offset}
			break
		}
	}
	n, ok := ps.byProg[key]
	if !ok {
		n = uint32(len(ps.byProg)) + 1
		ps.byProg[key] = n
	}
	ps.byRank[rk] = n
	return n
}

// Path returns the folded path of the graph, nil for a path the replay
// found.
func (f *Folded) Path() *Path { return f.p }

// Vertices returns the number of vertices of the folded path.
func (f *Folded) Vertices() int { return f.st.n }

// Steps returns the number of steps of the fold: the path's vertices, or
// at level Merged the runs of vertices of one MPI function.
func (f *Folded) Steps() int {
	if f.merged != nil {
		return f.merged.steps
	}
	return f.st.n
}

// StepVertices returns the path vertices [first, end) of step i.
func (f *Folded) StepVertices(i int) (first, end int) {
	if f.merged == nil {
		return i, i + 1
	}
	return f.merged.vertices(i)
}

// StepWeight returns step i's share of the path in ns: the hops into its
// vertices (none into vertex 0) and their own weights (a collective's).
// The first call reads the path once for every step's.
func (f *Folded) StepWeight(i int) float64 {
	if f.w == nil {
		ranges := make([][2]int, f.Steps())
		for i := range ranges {
			ranges[i] = [2]int{i, i + 1}
		}
		f.w, _ = f.weights(ranges, nil) // a graph's path never fails
	}
	return f.w[i]
}

// weights returns the weight of each range [from, to) of steps, the
// ranges in order and apart: the sum of the StepWeight of its steps, in
// one pass over the path. It also sets ranks[v] to the rank of each path
// vertex v that ranks holds.
func (f *Folded) weights(ranges [][2]int, ranks map[int]int) ([]float64, error) {
	out := make([]float64, len(ranges))
	if len(ranges) == 0 {
		return out, nil
	}
	r, step, v := 0, 0, 0 // the range, step and vertex next
	_, end := f.StepVertices(0)
	var sw float64 // step's weight so far
	errDone := errors.New("done")
	err := f.st.sp.Steps(func(st *reconstruct.ReplayStep) error {
		if _, ok := ranks[v]; ok {
			ranks[v] = st.Rank
		}
		if v > 0 {
			sw += HopWeight(st)
		}
		if st.Kind == taskgraph.KindCollective {
			sw += st.Weight
		}
		v++
		if v < end {
			return nil
		}
		// Step done.
		if step >= ranges[r][0] && step < ranges[r][1] {
			out[r] += sw
		}
		sw = 0
		step++
		if step >= ranges[r][1] {
			if r++; r == len(ranges) {
				return errDone
			}
		}
		if step < f.Steps() {
			_, end = f.StepVertices(step)
		}
		return nil
	})
	if err == errDone {
		err = nil
	}
	return out, err
}

// rankOf is the rank of path vertex v of a graph's path (f.p).
func (f *Folded) rankOf(v int) int {
	_, r, _, _ := f.p.g.Describe(f.p.p.Node(v))
	return r
}

// Weight returns the total StepWeight of the steps in [from, to).
func (f *Folded) Weight(from, to int) float64 {
	var w float64
	for i := from; i < to; i++ {
		w += f.StepWeight(i)
	}
	return w
}

// label names path vertex v on rank rank.
func (f *Folded) label(v, rank int) string {
	name := f.st.names[f.st.fn.at(v)]
	if rank < 0 {
		return name
	}
	return name + " " + strconv.Itoa(rank)
}

// Repetition is the heaviest stretch of the path that repeats one body of
// steps: "the path is 200 iterations of a 6-step body".
type Repetition struct {
	Iterations int `json:"iterations"`
	BodySteps  int `json:"body_steps"`
	// First and Last name the body's first and last vertex ("MPI_Irecv 1",
	// "MPI_Allreduce").
	First string `json:"first"`
	Last  string `json:"last"`
	// Start is the path vertex where the repetition starts.
	Start  int     `json:"start_vertex"`
	Weight float64 `json:"weight_ns"`
	Share  float64 `json:"share"`       // of the path's length
	Steps  float64 `json:"steps_share"` // of the path's vertices
	// Vertices is the number of path vertices the repetition covers; it
	// is Iterations*BodySteps but when Merged folds several calls of one
	// function into one step.
	Vertices int    `json:"vertices"`
	Likeness string `json:"likeness"` // which steps are alike (Folded.Likeness)
}

// minRepetitionShare is the share of the path's length or vertices a
// repetition needs for the summary to name it.
const minRepetitionShare = 0.1

// minIterations is the repeat count a run needs for the summary to name it.
const minIterations = 3

// SummarizeRepetition returns the heaviest run at the top of f, nil when
// the path has none of at least minIterations repetitions covering at
// least a tenth of its length or of its vertices. It reads the path once,
// for the runs' weights.
func SummarizeRepetition(f *Folded) (*Repetition, error) {
	var runs []*fold.Node
	var ranges [][2]int
	for i := range f.Nodes {
		nd := &f.Nodes[i]
		if !nd.IsRun() || nd.Count < minIterations {
			continue
		}
		runs = append(runs, nd)
		ranges = append(ranges, [2]int{nd.Start, nd.End()})
	}
	// The ranks of the vertices the runs' bodies start and end with, for
	// their names: from the same pass.
	ranks := map[int]int{}
	if f.p == nil {
		for _, nd := range runs {
			first, _ := f.StepVertices(nd.Start)
			last, _ := f.StepVertices(nd.Start + nd.Period - 1)
			ranks[first], ranks[last] = -1, -1
		}
	}
	ws, err := f.weights(ranges, ranks)
	if err != nil {
		return nil, err
	}
	label := func(step int) string {
		v, _ := f.StepVertices(step)
		if f.p != nil {
			return f.label(v, f.rankOf(v))
		}
		return f.label(v, ranks[v])
	}
	var best *Repetition
	length := f.st.sp.Length
	for k, nd := range runs {
		r := &Repetition{Iterations: nd.Count, BodySteps: nd.Period, Start: nd.Start,
			First: label(nd.Start), Last: label(nd.Start + nd.Period - 1),
			Weight: ws[k], Likeness: f.Likeness()}
		first, _ := f.StepVertices(nd.Start)
		_, end := f.StepVertices(nd.End() - 1)
		r.Vertices = end - first
		r.Steps = float64(r.Vertices) / float64(f.Vertices())
		if length > 0 {
			r.Share = r.Weight / length
		}
		if best == nil || r.Weight > best.Weight || r.Weight == best.Weight && nd.Len() > best.Iterations*best.BodySteps {
			best = r
		}
	}
	if best == nil || best.Share < minRepetitionShare && best.Steps < minRepetitionShare {
		return nil, nil
	}
	return best, nil
}

// Body describes the repeated body: "MPI_Irecv 1 -> ... -> MPI_Allreduce".
func (r *Repetition) Body() string {
	switch r.BodySteps {
	case 1:
		return r.First
	case 2:
		return r.First + " -> " + r.Last
	}
	return r.First + " -> ... -> " + r.Last
}

// WriteText writes the repetition's line: "the path is 200 iterations of a body
// of 6 steps (MPI_Irecv 1 -> ... -> MPI_Allreduce), 100.0% of the path", or
// for a part of it "200 iterations ... make 93.0% of the path (95.1% of
// its vertices)".
func (r *Repetition) WriteText(w io.Writer) error {
	var b strings.Builder
	steps := "steps"
	if r.BodySteps == 1 {
		steps = "step"
	}
	what := fmt.Sprintf("%d iterations of a body of %d %s (%s)", r.Iterations, r.BodySteps, steps, r.Body())
	if r.Share >= 0.995 && r.Steps >= 0.995 {
		fmt.Fprintf(&b, "the path is %s, %.1f%% of the path", what, 100*r.Share)
	} else {
		fmt.Fprintf(&b, "%s make %.1f%% of the path (%.1f%% of its vertices)", what, 100*r.Share, 100*r.Steps)
	}
	if r.Vertices != r.Iterations*r.BodySteps {
		fmt.Fprintf(&b, "; %.1f vertices an iteration, consecutive calls of one function counted as one step", float64(r.Vertices)/float64(r.Iterations))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
