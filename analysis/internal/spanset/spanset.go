// Package spanset keeps where things ran, as intervals on each rank's
// clock, by key: the loops' executions, the regions' and kernels' calls.
// Its Index is what the critical path intersects its computation with
// (critpath.Spans), whichever analysis filled it.
package spanset

import (
	"cmp"
	"encoding/binary"
	"errors"
	"slices"
	"sort"
)

// Span is an interval [Start, End) on a rank's clock, in ns.
type Span struct{ Start, End int64 }

// Union sorts s and merges its overlapping intervals, dropping empty ones;
// it reuses s's storage.
func Union(s []Span) []Span {
	slices.SortFunc(s, func(a, b Span) int { return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End)) })
	out := s[:0]
	for _, x := range s {
		if x.End <= x.Start {
			continue
		}
		if k := len(out); k > 0 && x.Start <= out[k-1].End {
			out[k-1].End = max(out[k-1].End, x.End)
			continue
		}
		out = append(out, x)
	}
	return slices.Clip(out)
}

// Overlap is the time of [start, end) that the disjoint sorted s covers.
func Overlap(s []Span, start, end int64) int64 {
	i := sort.Search(len(s), func(i int) bool { return s[i].End > start })
	var t int64
	for ; i < len(s) && s[i].Start < end; i++ {
		t += min(s[i].End, end) - max(s[i].Start, start)
	}
	return t
}

// noParent marks a key seen under more than one parent.
const noParent = "\x00"

// described is what is known of keys: the least depth each was seen at,
// and its parent ("" at the top, noParent when it had several).
type described struct {
	depth  map[string]int
	parent map[string]string
}

func newDescribed() described {
	return described{depth: map[string]int{}, parent: map[string]string{}}
}

// see records that key was seen at depth under parent, and reports
// whether it is new.
func (d *described) see(key, parent string, depth int) bool {
	if x, ok := d.depth[key]; !ok || depth < x {
		d.depth[key] = depth
	}
	p, ok := d.parent[key]
	switch {
	case !ok:
		d.parent[key] = parent
		return true
	case p != parent:
		d.parent[key] = noParent
	}
	return false
}

// Rank gathers one rank's spans by key; Finish merges them.
type Rank struct {
	described
	keys  []string // sorted by Finish
	byKey map[string][]Span
	any   []Span // the union of every key's
}

// NewRank returns an empty rank.
func NewRank() *Rank { return &Rank{described: newDescribed(), byKey: map[string][]Span{}} }

// Add adds spans of key, which was seen at depth under parent ("" for a
// top-level key). Add keeps spans; the caller must not change them.
func (r *Rank) Add(key, parent string, depth int, spans []Span) {
	if r.see(key, parent, depth) {
		r.keys = append(r.keys, key)
	}
	r.byKey[key] = append(r.byKey[key], spans...)
	r.any = append(r.any, spans...)
}

// Finish merges each key's spans into disjoint sorted intervals; the rank
// takes no more Add.
func (r *Rank) Finish() {
	slices.Sort(r.keys)
	for k, s := range r.byKey {
		r.byKey[k] = Union(s)
	}
	r.any = Union(r.any)
}

// Index is where every rank's keys ran: it implements critpath.Spans.
type Index struct {
	described
	ranks   map[int]*Rank
	partial bool
}

// NewIndex returns an empty index.
func NewIndex() *Index { return &Index{described: newDescribed(), ranks: map[int]*Rank{}} }

// Add adds a finished rank.
func (x *Index) Add(rank int, r *Rank) {
	x.ranks[rank] = r
	for _, k := range r.keys {
		x.see(k, r.parent[k], r.depth[k])
	}
}

// SetPartial says that some keys were recorded only in part (Partial).
func (x *Index) SetPartial() { x.partial = true }

// Empty reports whether no rank has a key.
func (x *Index) Empty() bool { return len(x.depth) == 0 }

// Overlap calls add, for every key that ran on rank during [start, end),
// with the time of the interval it covered (each key counted once however
// many of its spans cover an instant), and with key "" for the time
// covered by any key.
func (x *Index) Overlap(rank int, start, end int64, add func(key string, ns int64)) {
	r := x.ranks[rank]
	if r == nil || end <= start {
		return
	}
	if t := Overlap(r.any, start, end); t > 0 {
		add("", t)
	} else {
		return
	}
	for _, k := range r.keys {
		if t := Overlap(r.byKey[k], start, end); t > 0 {
			add(k, t)
		}
	}
}

// Describe returns the least depth key was seen at, and its parent ("" for
// a top-level key, or one seen under more than one parent).
func (x *Index) Describe(key string) (depth int, parent string) {
	p := x.parent[key]
	if p == noParent {
		p = ""
	}
	return x.depth[key], p
}

// Partial reports whether SetPartial was called.
func (x *Index) Partial() bool { return x.partial }

// AppendRank appends finished rank r (nil allowed) to b, as ReadRank
// reads it: for the analysis run as an MPI job, which gathers every
// rank's spans to one process.
func AppendRank(b []byte, r *Rank) []byte {
	if r == nil {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(r.keys))+1)
	for _, k := range r.keys {
		b = AppendString(b, k)
		b = AppendString(b, r.parent[k])
		b = binary.AppendUvarint(b, uint64(r.depth[k]))
		b = appendSpans(b, r.byKey[k])
	}
	return appendSpans(b, r.any)
}

// ReadRank reads what AppendRank appended at the start of b, and returns
// the rest of b.
func ReadRank(b []byte) (*Rank, []byte, error) {
	d := Decoder{b: b}
	n := d.Uvarint()
	if n == 0 || d.err != nil {
		return nil, d.b, d.err
	}
	r := NewRank()
	for i := uint64(1); i < n && d.err == nil; i++ {
		k, parent := d.String(), d.String()
		depth := int(d.Uvarint())
		r.keys = append(r.keys, k)
		r.depth[k], r.parent[k] = depth, parent
		r.byKey[k] = d.spans()
	}
	r.any = d.spans()
	if d.err != nil {
		return nil, nil, d.err
	}
	return r, d.b, nil
}

// AppendString appends s, as Decoder.String reads it.
func AppendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendSpans appends sorted disjoint spans, each as its distance from
// the previous one's end and its length.
func appendSpans(b []byte, s []Span) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	var last int64
	for _, x := range s {
		b = binary.AppendVarint(b, x.Start-last)
		b = binary.AppendVarint(b, x.End-x.Start)
		last = x.End
	}
	return b
}

// Decoder reads what the append functions wrote (binary.AppendUvarint's
// numbers, AppendString's strings); its first error stays.
type Decoder struct {
	b   []byte
	err error
}

// NewDecoder reads b.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Err is the first error.
func (d *Decoder) Err() error { return d.err }

// Rest returns what is left of b, or the first error.
func (d *Decoder) Rest() ([]byte, error) {
	if d.err != nil {
		return nil, d.err
	}
	return d.b, nil
}

var errShort = errors.New("internal error: spans cut short")

// Uvarint reads a number binary.AppendUvarint appended.
func (d *Decoder) Uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Varint reads a number binary.AppendVarint appended.
func (d *Decoder) Varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return v
}

// String reads a string AppendString appended.
func (d *Decoder) String() string {
	n := d.Uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errShort
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *Decoder) spans() []Span {
	n := d.Uvarint()
	if d.err != nil || n > uint64(len(d.b))/2 {
		d.err = errShort
		return nil
	}
	s := make([]Span, 0, n)
	var last int64
	for i := uint64(0); i < n && d.err == nil; i++ {
		start := last + d.Varint()
		end := start + d.Varint()
		s = append(s, Span{start, end})
		last = end
	}
	return s
}
