package cli

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// clockObserver collects, while the trace is read for the task graph,
// each rank's clock offset to rank 0 and its uncertainty: those of its
// MPI_Init clock synchronisation, else of its MPI_Finalize one (as
// export does).
type clockObserver struct {
	mu     sync.Mutex
	clocks critpath.Clocks
}

func newClockObserver() *clockObserver {
	return &clockObserver{clocks: critpath.Clocks{Offset: map[int]int64{}, Err: map[int]int64{}}}
}

func (c *clockObserver) observe(h *tracefmt.Header, _ *tracefmt.Strings, _ string) func(*tracefmt.Event) {
	rank, found, init := h.Rank, false, false
	return func(ev *tracefmt.Event) {
		if ev.Kind != spec.ClockSync || init {
			return
		}
		if ev.Phase() == spec.PhaseInit || !found {
			found, init = true, ev.Phase() == spec.PhaseInit
			c.mu.Lock()
			c.clocks.Offset[rank] = ev.Offset()
			c.clocks.Err[rank] = int64(min(ev.OffsetErr(), 1<<62))
			c.mu.Unlock()
		}
	}
}

// thisMachine names the machine mpitrace runs on and its CPU count: a
// trace recorded here gets its CPU count from it. Tests with goldens
// replace it.
var thisMachine = func() (string, int) {
	h, err := os.Hostname()
	if err != nil {
		return "", 0
	}
	return h, runtime.NumCPU()
}

// traceHosts counts the ranks of t per host (the headers' hostname) and
// gives each host's CPU count: the headers' cpus (recorders since
// 2026-11-24), else this machine's when the host is this machine.
func traceHosts(t *tracefmt.Trace) []critpath.Host {
	by := map[string]int{}
	recorded := map[string]int{} // the headers' cpus, by host
	for _, f := range t.Files {
		name := f.Header.Hostname
		if name == "" {
			name = "(unnamed)"
		}
		by[name]++
		if v, ok := f.Header.Get(tracefmt.KeyCPUs); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				recorded[name] = max(recorded[name], n)
			}
		}
	}
	here, cpus := thisMachine()
	out := make([]critpath.Host, 0, len(by))
	for name, n := range by {
		h := critpath.Host{Name: name, Ranks: n}
		switch {
		case recorded[name] > 0:
			h.CPUs, h.CPUsFrom = recorded[name], "recorded"
		case name == here && cpus > 0:
			h.CPUs, h.CPUsFrom = cpus, "this machine"
		}
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b critpath.Host) int {
		if a.Ranks != b.Ranks {
			return b.Ranks - a.Ranks
		}
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return out
}

// measuredPath returns the critical path of a under measured weights,
// computing it once.
func (a *analysis) measuredPath() (*critpath.Path, error) {
	if a.mpath == nil && a.mpathErr == nil {
		var clocks *critpath.Clocks
		if a.clocks != nil {
			clocks = &a.clocks.clocks
		}
		a.mpath, a.mpathErr = critpath.ComputeMeasured(a.graph, clocks)
	}
	return a.mpath, a.mpathErr
}

// explain adds to sum, when the model's path is far below the measured
// run, where the difference went.
func explain(a *analysis, sum *critpath.Summary) error {
	if !sum.NeedsWhy(a.path.Length) {
		return nil
	}
	mp, err := a.measuredPath()
	if err != nil {
		return err
	}
	sum.Why = critpath.Explain(a.path, mp, 5, a.siteLabel())
	sum.Why.Hosts = traceHosts(a.trace)
	return nil
}
