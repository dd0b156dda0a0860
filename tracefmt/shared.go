package tracefmt

import (
	"hash/maphash"
	"runtime"
	"slices"
	"sync"
	"unsafe"
	"weak"
)

// Every rank of a run defines the same strings (its function names) in
// the same order: the readers open at once (thousands, for a replay of
// every rank) share one dense table rather than each holding a copy.
// sharedDense finds a table by the hash of its strings; it holds the
// tables weakly, each forgotten once no Strings holds it. A shared table
// is never written: Strings only appends to its dense table (the slices
// given out have no room beyond their strings, so an append copies) or
// gives it up for a map.
var sharedDense = struct {
	mu   sync.Mutex
	seed maphash.Seed
	m    map[uint64][]denseRef
}{seed: maphash.MakeSeed(), m: make(map[uint64][]denseRef)}

// denseRef is a shared table: its first string and its length.
type denseRef struct {
	p weak.Pointer[string]
	n int
}

// shareDense returns a table equal to d (not to be written) and without
// room beyond its strings: one already shared, else d's strings in a new
// table, shared from now on.
func shareDense(d []string) []string {
	if len(d) == 0 {
		return nil
	}
	h := maphash.Hash{}
	h.SetSeed(sharedDense.seed)
	for _, s := range d {
		h.WriteString(s)
		h.WriteByte(0)
	}
	key := h.Sum64()
	s := &sharedDense
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ref := range s.m[key] {
		if ref.n != len(d) {
			continue
		}
		if p := ref.p.Value(); p != nil {
			if t := unsafe.Slice(p, ref.n); slices.Equal(t, d) {
				return t
			}
		}
	}
	t := slices.Clone(d)[:len(d):len(d)]
	s.m[key] = append(s.m[key], denseRef{p: weak.Make(&t[0]), n: len(t)})
	runtime.AddCleanup(&t[0], forgetDense, key)
	return t
}

// forgetDense drops the tables of hash key that are gone.
func forgetDense(key uint64) {
	s := &sharedDense
	s.mu.Lock()
	defer s.mu.Unlock()
	l := slices.DeleteFunc(s.m[key], func(r denseRef) bool { return r.p.Value() == nil })
	if len(l) == 0 {
		delete(s.m, key)
	} else {
		s.m[key] = l
	}
}
