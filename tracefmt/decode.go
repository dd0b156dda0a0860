package tracefmt

import (
	"fmt"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// decodeError says where in a block an event failed to decode.
type decodeError struct {
	what  string // "Send.tag", "Complete.completions[3].stag", "kind"
	event uint64 // index of the event in the block
	count uint64 // events in the block
	pos   int    // payload byte
	err   error
}

func (e *decodeError) Error() string {
	return fmt.Sprintf("decoding %s (event %d of %d, payload byte %d): %v", e.what, e.event, e.count, e.pos, e.err)
}

// decodeEvent decodes the event at c.buf[c.pos:] into c.ev. This is the
// reader's hot loop: it allocates nothing (lists reuse their storage) and
// walks the kind's precomputed field codes.
func (c *cursor) decodeEvent() error {
	b := c.buf
	p := c.pos
	var kv uint64
	if p < len(b) && b[p] < 0x80 {
		kv = uint64(b[p])
		p++
	} else {
		var n int
		if kv, n = uvarint(b, p); n < 0 {
			return c.errAt("kind", p, varintErr(n))
		}
		p = n
	}
	if kv >= uint64(spec.NumKinds) || c.r.kinds[kv] == nil {
		return c.errAt("kind", c.pos, fmt.Errorf("%w %d (format version %d)", errUnknownKind, kv, c.r.version))
	}
	ki := c.r.kinds[kv]
	ev := &c.ev
	if k := spec.Kind(kv); ev.Kind != k {
		if ev.Kind < spec.NumKinds {
			for _, f := range clearTab[ev.Kind][k] {
				ev.F[f] = 0
			}
		}
		ev.Ranks, ev.Reqs, ev.Completions, ev.Values = ev.Ranks[:0], ev.Reqs[:0], ev.Completions[:0], ev.Values[:0]
		ev.Kind = k
	}
	for i, code := range ki.codes {
		// The one-byte case inline; uvarint is too large to inline.
		var x uint64
		if p < len(b) && b[p] < 0x80 {
			x = uint64(b[p])
			p++
		} else {
			var n int
			if x, n = uvarint(b, p); n < 0 {
				return c.errAt(ki.name+"."+spec.Fields[ki.fields[i]].Name, p, varintErr(n))
			}
			p = n
		}
		if code&signedBit != 0 {
			x = (x >> 1) ^ -(x & 1)
		}
		ev.F[code&^signedBit] = int64(x)
	}
	if ki.list != spec.NoList {
		var err error
		if p, err = c.decodeList(ki, p); err != nil {
			return err
		}
	}
	start := c.prevEnd + ev.F[spec.Gap]
	end := start
	if ki.hasDur {
		end += ev.F[spec.Dur]
	}
	ev.Start, ev.End = start, end
	c.prevEnd = end
	c.pos = p
	return nil
}

func (c *cursor) errAt(what string, pos int, err error) error {
	return &decodeError{what: what, event: c.n, count: c.blk.count, pos: c.winBase + pos, err: err}
}

// decodeList decodes the kind's list at b[p:], bounding its count by the
// bytes left before allocating.
func (c *cursor) decodeList(ki *kindInfo, p int) (int, error) {
	b := c.buf
	ev := &c.ev
	// The list's name is only built for an error: this is the hot path.
	lname := func() string { return ki.name + "." + ki.list.String() }
	n, q := uvarint(b, p)
	if q < 0 {
		return 0, c.errAt(lname(), p, varintErr(q))
	}
	if n > uint64(len(b)-q)/uint64(listElemMin(ki.list)) {
		return 0, c.errAt(lname(), p, fmt.Errorf("list of %d elements cannot fit in the %d bytes left", n, len(b)-q))
	}
	p = q
	switch ki.list {
	case spec.ListRanks:
		ev.Ranks = growList(ev.Ranks, int(n), &c.r.spareRanks)
		var prev int64
		for i := range ev.Ranks {
			var x uint64
			if p < len(b) && b[p] < 0x80 {
				x = uint64(b[p])
				p++
			} else {
				var q int
				if x, q = uvarint(b, p); q < 0 {
					return 0, c.errAt(fmt.Sprintf("%s[%d]", lname(), i), p, varintErr(q))
				}
				p = q
			}
			prev += unzigzag(x)
			ev.Ranks[i] = prev
		}
	case spec.ListReqs, spec.ListValues:
		list, spare := &ev.Reqs, &c.r.spareReqs
		if ki.list == spec.ListValues {
			list, spare = &ev.Values, &c.r.spareValues
		}
		*list = growList(*list, int(n), spare)
		for i := range *list {
			var x uint64
			if p < len(b) && b[p] < 0x80 {
				x = uint64(b[p])
				p++
			} else {
				var q int
				if x, q = uvarint(b, p); q < 0 {
					return 0, c.errAt(fmt.Sprintf("%s[%d]", lname(), i), p, varintErr(q))
				}
				p = q
			}
			(*list)[i] = x
		}
	case spec.ListCompletions:
		ev.Completions = growList(ev.Completions, int(n), &c.r.spareCompletions)
		for i := range ev.Completions {
			cp := &ev.Completions[i]
			for _, code := range compCodes {
				f := spec.Field(code &^ signedBit)
				var x uint64
				if p < len(b) && b[p] < 0x80 {
					x = uint64(b[p])
					p++
				} else {
					var q int
					if x, q = uvarint(b, p); q < 0 {
						return 0, c.errAt(fmt.Sprintf("%s[%d].%s", lname(), i, spec.Fields[f].Name), p, varintErr(q))
					}
					p = q
				}
				v := int64(x)
				if code&signedBit != 0 {
					v = unzigzag(x)
				}
				setCompletion(cp, f, v)
			}
		}
	}
	return p, nil
}

// growList returns s with length n: in its own storage when large enough,
// else in the spare's when that is (s becomes the spare), else in new
// storage of at least twice s's capacity, so that lists of growing lengths
// allocate at most twice the longest.
func growList[T any](s []T, n int, spare *[]T) []T {
	if cap(s) >= n {
		return s[:n]
	}
	if cap(*spare) >= n {
		s, *spare = (*spare)[:n], s[:0]
		return s
	}
	return make([]T, n, max(n, 2*cap(s)))
}
