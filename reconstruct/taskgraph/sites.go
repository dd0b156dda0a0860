package taskgraph

import (
	"math"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// siteCol is one rank's call-site ids by event index (format version 5
// on): 2 bytes an event, ids of 0xffff and above in an overflow map. It is
// empty (and costs nothing) for a rank without call sites.
type siteCol struct {
	ids []uint16
	big map[int64]uint32
}

func (c *siteCol) set(ev int64, site uint32) {
	if ev < 0 || ev >= math.MaxInt32 || site == 0 {
		return
	}
	if ev >= int64(len(c.ids)) {
		if ev >= int64(cap(c.ids)) {
			n := make([]uint16, ev+1, max(2*cap(c.ids), int(ev)+1, 1024))
			copy(n, c.ids)
			c.ids = n
		}
		c.ids = c.ids[:ev+1]
	}
	if site < math.MaxUint16 {
		c.ids[ev] = uint16(site)
		return
	}
	c.ids[ev] = math.MaxUint16
	if c.big == nil {
		c.big = make(map[int64]uint32)
	}
	c.big[ev] = site
}

func (c *siteCol) get(ev int64) uint32 {
	if ev < 0 || ev >= int64(len(c.ids)) {
		return 0
	}
	if s := c.ids[ev]; s != math.MaxUint16 {
		return uint32(s)
	}
	return c.big[ev]
}

// SetSite records that the rank's event ev (its index in the rank's
// stream) was made from call site id site (0: unknown, not recorded).
func (rb *RankBuilder) SetSite(ev int64, site uint64) {
	rb.d.sites.set(ev, uint32(min(site, math.MaxUint32)))
}

// SetSites gives the rank its call-site table and mappings.
func (rb *RankBuilder) SetSites(s *tracefmt.Sites) { rb.d.siteTab = s }

// EventSite returns the call-site id of rank r's event ev (an index in
// the rank's stream, as OpEvent and RankCollectives give), 0 when unknown
// (traces before format version 5).
func (g *Graph) EventSite(r int, ev int64) uint32 {
	i, ok := g.index.find(r)
	if !ok {
		return 0
	}
	return g.ranks[i].sites.get(ev)
}

// OpSite returns the rank and call-site id of operation v (site 0:
// unknown); rank -1 when v is not an operation. Every operation expanded
// from one call (a Waitall's requests, a Sendrecv's halves) has the call's
// site.
func (g *Graph) OpSite(v NodeID) (rank int, site uint32) {
	if g.Kind(v) != KindOp {
		return -1, 0
	}
	i := g.indexOf(v)
	d := &g.ranks[i]
	return g.index.rank(i), d.sites.get(d.ops.event(uint32(v - d.base)))
}

// PartSite returns the call-site id of rank r's call of collective v (for
// a nonblocking collective, of its posting call), 0 when unknown or r is
// not a participant.
func (g *Graph) PartSite(v NodeID, r int) uint32 {
	p := g.part(v, r)
	if p == nil {
		return 0
	}
	return g.ranks[p.ri].sites.get(int64(p.ev))
}

// PartEvent returns the index, in rank r's event stream, of its call of
// collective v (for a nonblocking collective, of its posting call); ok is
// false when r is not a participant.
func (g *Graph) PartEvent(v NodeID, r int) (ev int64, ok bool) {
	p := g.part(v, r)
	if p == nil {
		return 0, false
	}
	return int64(p.ev), true
}

// RankSites returns rank r's call-site table and mappings; an empty
// table when the rank has none (or no log).
func (g *Graph) RankSites(r int) *tracefmt.Sites {
	if i, ok := g.index.find(r); ok && g.ranks[i].siteTab != nil {
		return g.ranks[i].siteTab
	}
	return &tracefmt.Sites{}
}
