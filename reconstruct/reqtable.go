package reconstruct

import "slices"

// Request kinds.
const (
	reqSend = iota + 1
	reqRecv
	reqColl
)

// reqEntry is the state of one live request of a rank.
type reqEntry struct {
	id         uint64
	kind       uint8
	persistent bool
	active     bool
	unknown    bool // persistent, and a loss hid whether it is active (gaps.go)
	mrecv      bool // an MPI_Imrecv: posted where its MPI_Improbe matched
	cancelled  bool // MPI_Cancel was called on it since it was last started
	commOK     bool
	comm       uint32 // rank-local communicator key id
	peer       int64  // destination or requested source
	tag        int64
	bytes      uint64 // send bytes or receive capacity
	post       uint32 // receive posting sequence number
	rec        int32  // send record, or collective participation, index; -1 none
}

// reqTable maps a rank's request ids to their state: open addressing with
// linear probing and backward-shift deletion, so that the millions of
// short-lived requests of a long run cost no allocation each.
type reqTable struct {
	keys []uint64 // 0: empty slot (0 is never a request id)
	vals []int32  // index into pool
	n    int
	pool []reqEntry
	free []int32
}

func hashReq(id uint64) uint64 { return (id * 0x9E3779B97F4A7C15) >> 7 }

func (t *reqTable) find(id uint64) int {
	if len(t.keys) == 0 {
		return -1
	}
	mask := uint64(len(t.keys) - 1)
	for i := hashReq(id) & mask; ; i = (i + 1) & mask {
		switch t.keys[i] {
		case id:
			return int(i)
		case 0:
			return -1
		}
	}
}

// get returns the entry of id, or nil. The pointer is valid until the
// next put.
func (t *reqTable) get(id uint64) *reqEntry {
	if i := t.find(id); i >= 0 {
		return &t.pool[t.vals[i]]
	}
	return nil
}

// put returns a fresh entry for id; existed says whether id was live (its
// entry is reset).
func (t *reqTable) put(id uint64) (e *reqEntry, existed bool) {
	if i := t.find(id); i >= 0 {
		e = &t.pool[t.vals[i]]
		*e = reqEntry{id: id, rec: -1}
		return e, true
	}
	if (t.n+1)*4 > len(t.keys)*3 {
		t.grow()
	}
	var v int32
	if k := len(t.free); k > 0 {
		v = t.free[k-1]
		t.free = t.free[:k-1]
	} else {
		v = int32(len(t.pool))
		t.pool = append(t.pool, reqEntry{})
	}
	t.pool[v] = reqEntry{id: id, rec: -1}
	mask := uint64(len(t.keys) - 1)
	i := hashReq(id) & mask
	for t.keys[i] != 0 {
		i = (i + 1) & mask
	}
	t.keys[i], t.vals[i] = id, v
	t.n++
	return &t.pool[v], false
}

func (t *reqTable) grow() {
	old, oldv := t.keys, t.vals
	size := max(16, 2*len(old))
	t.keys = make([]uint64, size)
	t.vals = make([]int32, size)
	mask := uint64(size - 1)
	for j, k := range old {
		if k == 0 {
			continue
		}
		i := hashReq(k) & mask
		for t.keys[i] != 0 {
			i = (i + 1) & mask
		}
		t.keys[i], t.vals[i] = k, oldv[j]
	}
}

// del removes id.
func (t *reqTable) del(id uint64) {
	i := t.find(id)
	if i < 0 {
		return
	}
	t.free = append(t.free, t.vals[i])
	mask := len(t.keys) - 1
	// Backward-shift deletion keeps every probe sequence unbroken.
	for {
		t.keys[i] = 0
		j := i
		for {
			j = (j + 1) & mask
			if t.keys[j] == 0 {
				t.n--
				return
			}
			h := int(hashReq(t.keys[j])) & mask
			// Move keys[j] into i unless its home lies cyclically in (i, j].
			if i <= j {
				if i < h && h <= j {
					continue
				}
			} else if i < h || h <= j {
				continue
			}
			t.keys[i], t.vals[i] = t.keys[j], t.vals[j]
			i = j
			break
		}
	}
}

// each calls fn for each live entry, in no particular order.
func (t *reqTable) each(fn func(*reqEntry)) {
	for i, k := range t.keys {
		if k != 0 {
			fn(&t.pool[t.vals[i]])
		}
	}
}

// live returns the live entries in request id order.
func (t *reqTable) live() []*reqEntry {
	var out []*reqEntry
	for i, k := range t.keys {
		if k != 0 {
			out = append(out, &t.pool[t.vals[i]])
		}
	}
	slices.SortFunc(out, func(a, b *reqEntry) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	return out
}
