package tracefmt

import (
	"slices"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Mapping is one executable segment of a file mapped in the recorded
// process (a Map event): the addresses [Start, End) held the file's bytes
// from Offset on. A return address ret in it is at file offset
// ret - Start + Offset.
type Mapping struct {
	Start, End, Offset uint64
	Path               string
	// BuildID is the file's GNU build id in lower-case hex, "" when the
	// file has none.
	BuildID string
}

// Sites is a rank's call-site table and the process's executable mappings,
// gathered from its Site and Map events (format version 5 on; empty for
// older files). Call events carry a site id (Event.Site) that Addr turns
// into the call's return address; Mappings resolve that address to a file
// and an offset in it after address-space randomisation.
//
// A RankReader fills its Sites as it reads events: the table is complete
// once Next has returned false. The recorder writes a site's Site event
// before the first call that uses it on the thread that first made the
// call, and the mappings before the first site they hold, so a
// single-threaded rank's table is also complete up to the current event.
type Sites struct {
	addrs []uint64 // by site id; 0: undefined
	n     int
	maps  []Mapping
}

// Site is the call-site id of a call event, 0 when the event has none
// (format versions before 5, or the recorder could not tell).
func (e *Event) Site() uint64 { return uint64(e.F[spec.Site]) }

// Addr returns the return address of call site id.
func (s *Sites) Addr(id uint64) (uint64, bool) {
	if s == nil || id >= uint64(len(s.addrs)) || s.addrs[id] == 0 {
		return 0, false
	}
	return s.addrs[id], true
}

// Len returns the number of sites defined.
func (s *Sites) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// IDs returns the defined site ids in increasing order.
func (s *Sites) IDs() []uint64 {
	if s == nil {
		return nil
	}
	ids := make([]uint64, 0, s.n)
	for id, a := range s.addrs {
		if a != 0 {
			ids = append(ids, uint64(id))
		}
	}
	return ids
}

// Mappings returns the mappings in the order the recorder wrote them. The
// slice is the table's own: do not modify it.
func (s *Sites) Mappings() []Mapping {
	if s == nil {
		return nil
	}
	return s.maps
}

// maxSiteID bounds the site ids a table indexes directly: ids are given in
// order from 1, so a larger one is damage (it is ignored).
const maxSiteID = 1 << 24

// Define records that site id is return address addr. It reports false,
// changing nothing, when id is 0, too large, or already defined with
// another address (or addr is 0).
func (s *Sites) Define(id, addr uint64) bool {
	if id == 0 || id >= maxSiteID || addr == 0 {
		return false
	}
	if id >= uint64(len(s.addrs)) {
		s.addrs = slices.Grow(s.addrs, int(id)+1-len(s.addrs))[:id+1]
	}
	switch s.addrs[id] {
	case 0:
		s.addrs[id] = addr
		s.n++
		return true
	case addr:
		return true
	}
	return false
}

// AddMapping appends a mapping.
func (s *Sites) AddMapping(m Mapping) { s.maps = append(s.maps, m) }

// Add records ev when it is a Site or Map event (names from strs) and
// reports whether it was one.
func (s *Sites) Add(ev *Event, strs *Strings) bool {
	switch ev.Kind {
	case spec.SiteDef:
		s.Define(uint64(ev.F[spec.Site]), uint64(ev.F[spec.Addr]))
	case spec.Map:
		start, size := uint64(ev.F[spec.Addr]), uint64(ev.F[spec.Size])
		m := Mapping{Start: start, End: start + size, Offset: uint64(ev.F[spec.FileOff]),
			Path: strs.Name(uint64(ev.F[spec.Path]))}
		if id := uint64(ev.F[spec.BuildID]); id != 0 {
			m.BuildID = strs.Name(id)
		}
		if m.End < m.Start {
			m.End = ^uint64(0)
		}
		s.AddMapping(m)
	default:
		return false
	}
	return true
}

// SitesOf returns src's call-site table: a RankReader's (complete once its
// events are read), or one gathered from a RankData's events.
func SitesOf(src Source) *Sites {
	switch s := src.(type) {
	case *RankReader:
		return &s.sites
	case *dataSource:
		return s.d.Sites()
	}
	return nil
}

// Sites gathers d's call-site table from its events.
func (d *RankData) Sites() *Sites {
	var s Sites
	for i := range d.Events {
		s.Add(&d.Events[i], &d.Strings)
	}
	return &s
}
