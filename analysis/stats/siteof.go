package stats

import (
	"math"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// siteOf is a call event's call-site id, 0 when unknown.
func siteOf(ev *tracefmt.Event) uint32 { return uint32(min(ev.Site(), math.MaxUint32)) }

// Sites returns the rank's call-site table and mappings (empty for traces
// before format version 5).
func (r *Rank) Sites() *tracefmt.Sites {
	if r.sites == nil {
		return &tracefmt.Sites{}
	}
	return r.sites
}
