package taskgraph

import (
	"math"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Operations are stored per rank in chunks of columns, so that adding one
// never copies more than the rank's first chunk and a rank wastes at most
// one partly filled chunk. An operation takes 16 bytes: its start relative
// to the chunk's first operation's (4), its duration (4), its bytes (4),
// its event index relative to the chunk's first operation's (2) and its op
// name (2). A chunk whose operations span more than 4.29 s (or go back in
// time) keeps its starts whole instead (8 more bytes an operation); other
// values that do not fit (calls longer than 4.29 s, 4 GiB messages, events
// far apart) go to per-rank overflow maps.
//
// A chunk holds chunkLen operations, 64 KiB of columns (48 KiB and two of
// 8 KiB: whole pages, where a larger object would take another one),
// except a rank's first, which starts with room for firstChunkLen and
// grows fourfold as it fills, up to chunkLen: a rank of a few operations costs a
// few hundred bytes, not 64 KiB (a world of thousands of short ranks).
// The chunks only store the operations: node ids and the rank index of a
// block of ids (Graph.rankIdx) do not depend on them.
const (
	chunkBits     = 12
	chunkLen      = 1 << chunkBits
	chunkMask     = chunkLen - 1
	firstChunkLen = 8
)

// opChunk is a chunk: its columns, of equal length (its capacity), and
// what they are relative to.
type opChunk struct {
	start  []uint32 // start - base, while wide is nil
	dur    []uint32
	bytes  []uint32
	ev     []uint16
	name   []opNameID
	wide   []int64 // the starts, once one is not base + a uint32
	base   int64   // start of the chunk's first operation
	evBase int64   // event index of the chunk's first operation
}

// newOpChunk returns a chunk with room for n operations.
func newOpChunk(n int, base, evBase int64) opChunk {
	u := make([]uint32, 3*n)
	return opChunk{start: u[:n:n], dur: u[n : 2*n : 2*n], bytes: u[2*n:], ev: make([]uint16, n), name: make([]opNameID, n),
		base: base, evBase: evBase}
}

// grow gives the chunk four times the room, up to chunkLen operations
// (what a rank keeps is trimmed when its pass ends: RankBuilder.Done).
func (c *opChunk) grow() { c.resize(min(4*len(c.dur), chunkLen)) }

// resize gives the chunk room for n operations, keeping the first n.
func (c *opChunk) resize(n int) {
	d := newOpChunk(n, c.base, c.evBase)
	copy(d.start, c.start)
	copy(d.dur, c.dur)
	copy(d.bytes, c.bytes)
	copy(d.ev, c.ev)
	copy(d.name, c.name)
	if c.wide != nil {
		d.wide = make([]int64, n)
		copy(d.wide, c.wide)
	}
	*c = d
}

// opNameID indexes a graph's op names: a function name with the event
// kind and whether the operation was expanded from a Waitall-like call.
type opNameID uint16

type opName struct {
	fn       NameID
	kind     spec.Kind
	expanded bool
	recvHalf bool // the receive half of an MPI_Sendrecv
}

const (
	maxU16 = math.MaxUint16
	maxU32 = math.MaxUint32
)

// opStore is one rank's operations.
type opStore struct {
	n        int
	chunks   []opChunk
	bigDur   map[uint32]int64
	bigBytes map[uint32]uint64
	bigEv    map[uint32]int64
}

func (s *opStore) add(start, end int64, bytes uint64, ev int64, name opNameID) uint32 {
	i := uint32(s.n)
	j := i & chunkMask
	if j == 0 {
		n := chunkLen
		if i == 0 {
			n = firstChunkLen
		}
		s.chunks = append(s.chunks, newOpChunk(n, start, ev))
	}
	c := &s.chunks[i>>chunkBits]
	if int(j) == len(c.dur) {
		c.grow()
	}
	s.setTimes(c, i, start, end)
	if bytes < maxU32 {
		c.bytes[j] = uint32(bytes)
	} else {
		c.bytes[j] = maxU32
		setBig(&s.bigBytes, i, bytes)
	}
	if d := ev - c.evBase; d >= 0 && d < maxU16 {
		c.ev[j] = uint16(d)
	} else {
		c.ev[j] = maxU16
		setBig(&s.bigEv, i, ev)
	}
	c.name[j] = name
	s.n++
	return i
}

// setBig keeps v, a value too large for its column, as operation i's in
// the overflow map m, made on first use.
func setBig[V any](m *map[uint32]V, i uint32, v V) {
	if *m == nil {
		*m = make(map[uint32]V)
	}
	(*m)[i] = v
}

// setTimes sets the start and end of operation i, in chunk c.
func (s *opStore) setTimes(c *opChunk, i uint32, start, end int64) {
	j := i & chunkMask
	if d := start - c.base; c.wide == nil && d >= 0 && d <= maxU32 {
		c.start[j] = uint32(d)
	} else {
		if c.wide == nil {
			c.wide = make([]int64, len(c.dur))
			for k := uint32(0); k < j; k++ {
				c.wide[k] = c.base + int64(c.start[k])
			}
		}
		c.wide[j] = start
	}
	if d := end - start; d >= 0 && d < maxU32 {
		c.dur[j] = uint32(d)
	} else {
		c.dur[j] = maxU32
		setBig(&s.bigDur, i, d)
	}
}

// trim shrinks the last chunk to the operations it holds, so that a rank
// done adding keeps no room it will not fill (it grows again if more come).
func (s *opStore) trim() {
	if len(s.chunks) == 0 {
		return
	}
	c := &s.chunks[len(s.chunks)-1]
	n := s.n - (len(s.chunks)-1)*chunkLen
	if n < len(c.dur) {
		c.resize(n)
	}
}

// truncate drops the operations from n on.
func (s *opStore) truncate(n int) {
	if n >= s.n {
		return
	}
	for _, m := range []map[uint32]int64{s.bigDur, s.bigEv} {
		for i := range m {
			if int(i) >= n {
				delete(m, i)
			}
		}
	}
	for i := range s.bigBytes {
		if int(i) >= n {
			delete(s.bigBytes, i)
		}
	}
	s.n = n
	s.chunks = s.chunks[:(n+chunkLen-1)>>chunkBits]
}

func (s *opStore) start(i uint32) int64 { return s.chunks[i>>chunkBits].startAt(i & chunkMask) }

func (c *opChunk) startAt(j uint32) int64 {
	if c.wide != nil {
		return c.wide[j]
	}
	return c.base + int64(c.start[j])
}

func (s *opStore) end(i uint32) int64 {
	c := &s.chunks[i>>chunkBits]
	j := i & chunkMask
	if d := c.dur[j]; d != maxU32 {
		return c.startAt(j) + int64(d)
	}
	return c.startAt(j) + s.bigDur[i]
}

// times returns operation i's start and end (start and end at once).
func (s *opStore) times(i uint32) (start, end int64) {
	c := &s.chunks[i>>chunkBits]
	j := i & chunkMask
	start = c.startAt(j)
	if d := c.dur[j]; d != maxU32 {
		return start, start + int64(d)
	}
	return start, start + s.bigDur[i]
}

func (s *opStore) bytes(i uint32) int64 {
	if b := s.chunks[i>>chunkBits].bytes[i&chunkMask]; b != maxU32 {
		return int64(b)
	}
	return int64(min(s.bigBytes[i], math.MaxInt64))
}

func (s *opStore) event(i uint32) int64 {
	c := &s.chunks[i>>chunkBits]
	if d := c.ev[i&chunkMask]; d != maxU16 {
		return c.evBase + int64(d)
	}
	return s.bigEv[i]
}

func (s *opStore) name(i uint32) opNameID { return s.chunks[i>>chunkBits].name[i&chunkMask] }

// remap renames every operation.
func (s *opStore) remap(m []opNameID) {
	for ci, c := range s.chunks {
		n := min(chunkLen, s.n-ci*chunkLen)
		for j := 0; j < n; j++ {
			c.name[j] = m[c.name[j]]
		}
	}
}

// permute reorders the operations: operation i moves to perm[i].
func (s *opStore) permute(perm []uint32) {
	var t opStore
	order := make([]uint32, s.n)
	for i, p := range perm {
		order[p] = uint32(i)
	}
	for _, i := range order {
		c := &s.chunks[i>>chunkBits]
		j := i & chunkMask
		t.add(c.startAt(j), s.end(i), uint64(s.bytes(i)), s.event(i), c.name[j])
	}
	*s = t
}
