package callsite

import (
	"fmt"
	"sync"
)

// Table resolves the call sites of a trace's ranks: each rank's call-site
// ids, its return addresses and mappings, through one Resolver. It caches
// each site's location and is safe for concurrent use.
type Table struct {
	r     *Resolver
	mu    sync.Mutex
	ranks map[int]*rankTable
}

type rankTable struct {
	maps  []Mapping
	addrs map[uint32]uint64
	locs  map[uint32]Location
}

// NewTable returns an empty table resolving through r.
func NewTable(r *Resolver) *Table { return &Table{r: r, ranks: map[int]*rankTable{}} }

// SetRank gives a rank's mappings and call-site table (site id -> return
// address).
func (t *Table) SetRank(rank int, maps []Mapping, addrs map[uint32]uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ranks[rank] = &rankTable{maps: maps, addrs: addrs, locs: map[uint32]Location{}}
}

// Empty reports whether no rank has a call site.
func (t *Table) Empty() bool {
	if t == nil {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, rt := range t.ranks {
		if len(rt.addrs) > 0 {
			return false
		}
	}
	return true
}

// Location returns where call site id of rank was. A site the rank's table
// does not define has only a Problem.
func (t *Table) Location(rank int, site uint32) Location {
	if t == nil || site == 0 {
		return Location{Problem: "no call site recorded"}
	}
	t.mu.Lock()
	rt := t.ranks[rank]
	if rt == nil {
		t.mu.Unlock()
		return Location{Problem: fmt.Sprintf("rank %d has no call-site table", rank)}
	}
	if l, ok := rt.locs[site]; ok {
		t.mu.Unlock()
		return l
	}
	addr, ok := rt.addrs[site]
	t.mu.Unlock()
	var l Location
	if ok {
		l = t.r.Resolve(rt.maps, addr)
	} else {
		l = Location{Problem: fmt.Sprintf("rank %d: call site %d is not in its table", rank, site)}
	}
	t.mu.Lock()
	rt.locs[site] = l
	t.mu.Unlock()
	return l
}

// Label is the short form of Location ("stencil.c:88 exchange"), "" for
// site 0 and for a site the rank's table does not define.
func (t *Table) Label(rank int, site uint32) string {
	if site == 0 {
		return ""
	}
	l := t.Location(rank, site)
	if !l.Known() && l.Module == "" {
		return ""
	}
	return l.String()
}

// Problems returns the resolver's problems (see Resolver.Problems).
func (t *Table) Problems() []string {
	if t == nil {
		return nil
	}
	return t.r.Problems()
}
