package stats

import "github.com/mpitrace/mpitrace/tracefmt"

// siteOf is a call event's call-site id, 0 when unknown.
func siteOf(ev *tracefmt.Event) uint32 { return 0 }
