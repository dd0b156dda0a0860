package cli

import (
	"os"
	"runtime"
	"slices"
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
// gives the CPU count of a host that is this machine.
func traceHosts(t *tracefmt.Trace) []critpath.Host {
	by := map[string]int{}
	for _, f := range t.Files {
		name := f.Header.Hostname
		if name == "" {
			name = "(unnamed)"
		}
		by[name]++
	}
	here, cpus := thisMachine()
	out := make([]critpath.Host, 0, len(by))
	for name, n := range by {
		h := critpath.Host{Name: name, Ranks: n}
		if name == here && cpus > 0 {
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
	sum.Why = critpath.Explain(a.path, mp, 5)
	sum.Why.Hosts = traceHosts(a.trace)
	return nil
}
