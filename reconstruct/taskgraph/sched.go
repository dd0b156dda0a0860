package taskgraph

// sched is what Walk and Longest share to move the ranks along their
// chains: the queue of ranks that can advance, the ranks at the end of
// theirs, and the collectives ranks wait for.
type sched struct {
	g        *Graph
	arrived  []uint32           // per collective: participations arrived
	collDone []bool             // per collective: every participant arrived
	collWait map[uint32][]int32 // ranks waiting for a collective, by collective
	queue    []int32            // ranks (rank indices) that may advance
	queued   []bool
	finished []bool // per rank index: the rank reached the end of its chain
}

func newSched(g *Graph) sched {
	return sched{g: g, arrived: make([]uint32, len(g.colls)), collDone: make([]bool, len(g.colls)),
		collWait: make(map[uint32][]int32), queued: make([]bool, len(g.ranks)), finished: make([]bool, len(g.ranks))}
}

// enqueue lets the rank with index ri advance, unless it is queued or
// finished.
func (s *sched) enqueue(ri int32) {
	if !s.queued[ri] && !s.finished[ri] {
		s.queued[ri] = true
		s.queue = append(s.queue, ri)
	}
}

// release marks collective ci done and lets its blocking participants and
// the ranks waiting for it advance.
func (s *sched) release(ci uint32) {
	c := &s.g.colls[ci]
	s.collDone[ci] = true
	for j := c.first; j < c.first+c.n; j++ {
		if !s.g.parts[j].nb {
			s.enqueue(s.g.parts[j].ri)
		}
	}
	if ws, ok := s.collWait[ci]; ok {
		for _, r := range ws {
			s.enqueue(r)
		}
		delete(s.collWait, ci)
	}
}

// run advances queued ranks until none can, and returns how many ranks did
// not reach the end of their chain (a cycle) and the index of the first.
func (s *sched) run(advance func(ri int)) (stuck, first int) {
	for h := 0; h < len(s.queue); h++ {
		r := s.queue[h]
		s.queued[r] = false
		if !s.finished[r] {
			advance(int(r))
		}
		if h > 4096 && h > len(s.queue)/2 {
			s.queue = append(s.queue[:0], s.queue[h+1:]...)
			h = -1
		}
	}
	first = -1
	for r, done := range s.finished {
		if !done {
			stuck++
			if first < 0 {
				first = r
			}
		}
	}
	return stuck, first
}
