package taskgraph

// Path is a path of a graph from Init to Finalize, as Longest finds it. It
// keeps, per node, the node and the edge by which the path arrives at it
// (11 bytes a step, 15 in a chunk of steps with a rank past 65534), in
// chunks filled as the walk back from Finalize goes, so that a long path
// is never copied. A Path is immutable and safe for concurrent use.
type Path struct {
	n      int
	chunks []pathChunk   // steps from Finalize back to Init
	big    map[int]int64 // values of steps that do not fit in 32 bits
}

// A path chunk holds pathLen steps: a node, and the edge into it (none for
// Init): its kind (with crossBit for a cross edge), its rank, and its
// Bytes (cross edge) or Weight (any other), maxU32 when in Path.big.
const (
	pathBits = 13
	pathLen  = 1 << pathBits
	pathMask = pathLen - 1
)

type pathChunk struct {
	*pathCols
	wideRank *[pathLen]int32 // the ranks, once one does not fit in rank
}

// pathCols are a chunk's columns: exactly 11 pages of 8 KiB.
type pathCols struct {
	node [pathLen]NodeID
	rank [pathLen]uint16
	kind [pathLen]uint8
	val  [pathLen]uint32
}

func (c *pathChunk) rankAt(j int) int {
	if c.wideRank != nil {
		return int(c.wideRank[j])
	}
	return int(c.rank[j])
}

const crossBit = 0x80

// Len returns the number of nodes on the path (its edges are one fewer).
func (p *Path) Len() int { return p.n }

// Node returns the path's node i: Node(0) is Init, Node(Len()-1) Finalize.
func (p *Path) Node(i int) NodeID {
	k := p.n - 1 - i
	return p.chunks[k>>pathBits].node[k&pathMask]
}

// Edge returns the path's edge i, from Node(i) to Node(i+1).
func (p *Path) Edge(i int) Edge {
	k := p.n - 2 - i // the step of Node(i+1)
	c, j := &p.chunks[k>>pathBits], k&pathMask
	e := Edge{Kind: EdgeKind(c.kind[j] &^ crossBit), From: p.Node(i), To: c.node[j], Rank: c.rankAt(j)}
	val := int64(c.val[j])
	if val == maxU32 {
		val = p.big[k]
	}
	if c.kind[j]&crossBit != 0 {
		e.Bytes = val
	} else {
		e.Weight = val
	}
	return e
}

// EdgeAt returns what Edge(i) holds but its end nodes: its kind, rank,
// Weight and Bytes. It is cheaper than Edge, for a pass over a long path.
func (p *Path) EdgeAt(i int) (kind EdgeKind, rank int, weight, bytes int64) {
	k := p.n - 2 - i // the step of Node(i+1)
	c, j := &p.chunks[k>>pathBits], k&pathMask
	val := int64(c.val[j])
	if val == maxU32 {
		val = p.big[k]
	}
	if c.kind[j]&crossBit != 0 {
		return EdgeKind(c.kind[j] &^ crossBit), c.rankAt(j), 0, val
	}
	return EdgeKind(c.kind[j]), c.rankAt(j), val, 0
}

// push appends the next step of the walk back: node v and the edge e into
// it (e.To is v; e.From the next node pushed), a cross edge if cross.
func (p *Path) push(v NodeID, e Edge, cross bool) {
	j := p.n & pathMask
	if j == 0 {
		p.chunks = append(p.chunks, pathChunk{pathCols: new(pathCols)})
	}
	c := &p.chunks[p.n>>pathBits]
	val := e.Weight
	c.kind[j] = uint8(e.Kind)
	if cross {
		val = e.Bytes
		c.kind[j] |= crossBit
	}
	c.node[j] = v
	if r := e.Rank; c.wideRank == nil && r >= 0 && r < maxU16 {
		c.rank[j] = uint16(r)
	} else {
		if c.wideRank == nil {
			c.wideRank = new([pathLen]int32)
			for k := 0; k < j; k++ {
				c.wideRank[k] = int32(c.rank[k])
			}
		}
		c.wideRank[j] = int32(r)
	}
	if val >= 0 && val < maxU32 {
		c.val[j] = uint32(val)
	} else {
		c.val[j] = maxU32
		if p.big == nil {
			p.big = make(map[int]int64)
		}
		p.big[p.n] = val
	}
	p.n++
}
