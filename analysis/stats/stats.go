// Package stats computes an mpiP-like profile of a trace: for every MPI
// function, per rank and over all ranks, the number of calls, the time spent
// in them (total, mean, min, max) and the bytes they moved.
//
// It is a single-pass consumer: call Rank for each rank's events (ranks may
// be consumed concurrently, each by its own RankStats), then Merge them.
//
// Bytes are attributed to the call that moved them, as recorded: a send's
// bytes to the send (Send, Isend, ...), a receive's bytes to the call that
// returned its status (Recv, or the Wait/Test that completed an Irecv), a
// collective's bytes sent and received by the rank to the collective.
// Sends to MPI_PROC_NULL move nothing and count no bytes.
//
// MPI_Init (MPI_Init_thread) and MPI_Finalize are kept apart from the
// application's MPI functions, as mpiP's "MPI time" leaves them out: they
// hold MPI's start-up and shut-down and, in a recorded run, the recorder's
// clock synchronisation, and they lie outside the application time.
package stats

import (
	"slices"
	"sort"
	"sync"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Func is the profile of one MPI function.
type Func struct {
	Name     string `json:"name"`
	Calls    int64  `json:"calls"`
	TotalNs  int64  `json:"total_ns"`
	MinNs    int64  `json:"min_ns"`
	MaxNs    int64  `json:"max_ns"`
	Sent     uint64 `json:"bytes_sent"`
	Received uint64 `json:"bytes_received"`

	// site and siteF are, while a rank is profiled, the last call site
	// of the function's calls and their profile.
	site  uint32
	siteF *Func
}

// MeanNs is the mean time per call.
func (f *Func) MeanNs() float64 {
	if f.Calls == 0 {
		return 0
	}
	return float64(f.TotalNs) / float64(f.Calls)
}

func (f *Func) add(dur int64) {
	if f.Calls == 0 || dur < f.MinNs {
		f.MinNs = dur
	}
	if dur > f.MaxNs {
		f.MaxNs = dur
	}
	f.Calls++
	f.TotalNs += dur
}

func (f *Func) merge(g *Func) {
	if g.Calls == 0 {
		return
	}
	if f.Calls == 0 || g.MinNs < f.MinNs {
		f.MinNs = g.MinNs
	}
	if g.MaxNs > f.MaxNs {
		f.MaxNs = g.MaxNs
	}
	f.Calls += g.Calls
	f.TotalNs += g.TotalNs
	f.Sent += g.Sent
	f.Received += g.Received
}

// Rank is the profile of one rank.
type Rank struct {
	Rank int `json:"rank"`
	// AppNs is the time from the end of MPI_Init (or the first event) to the
	// start of MPI_Finalize (or the last event's end).
	AppNs int64 `json:"app_ns"`
	// MPINs is the time spent in recorded MPI calls within AppNs.
	MPINs int64 `json:"mpi_ns"`
	// Calls counts the application's MPI calls (Funcs').
	Calls int64   `json:"calls"`
	Funcs []*Func `json:"functions"` // by total time, descending
	// InitFinalize are MPI_Init, MPI_Init_thread and MPI_Finalize, apart
	// from Funcs and outside AppNs and MPINs.
	InitFinalize []*Func `json:"init_finalize"`
	// Unfinished are the calls that began and never returned in the log:
	// where the rank hung, or was stopped (one per thread at most).
	Unfinished []Unfinished `json:"unfinished,omitempty"`
	byName     map[string]*Func
	// bySite are the rank's calls by call site and function (Profile.BySite).
	bySite map[siteKey]*Func
	sites  *tracefmt.Sites
}

// Unfinished is an MPI call that never returned in a rank's log.
type Unfinished struct {
	Rank   int    `json:"rank"`
	Thread int    `json:"thread"`
	Name   string `json:"name"`
	// StartNs is when it began, from the end of the rank's MPI_Init (or its
	// first event).
	StartNs int64 `json:"start_ns"`
	// WaitedNs is how long it had been under way when the log ends: at
	// least that long.
	WaitedNs int64 `json:"waited_at_least_ns"`
}

// isInitFinalize reports whether the function is one of those kept apart.
func isInitFinalize(name string) bool {
	return name == "MPI_Init" || name == "MPI_Init_thread" || name == "MPI_Finalize"
}

// MPIPercent is the share of the application time spent in MPI.
func (r *Rank) MPIPercent() float64 {
	if r.AppNs <= 0 {
		return 0
	}
	return 100 * float64(r.MPINs) / float64(r.AppNs)
}

// Profile is the whole trace's profile.
type Profile struct {
	Ranks []*Rank `json:"ranks"` // by rank
	// All aggregates every rank: calls, times and bytes summed, min and max
	// over all calls.
	All []*Func `json:"aggregate"`
	// InitFinalize aggregates the ranks' InitFinalize.
	InitFinalize []*Func `json:"init_finalize"`
	// AppNs is the longest rank's application time.
	AppNs int64 `json:"app_ns"`
	MPINs int64 `json:"mpi_ns"` // summed over ranks
}

// MPIPercent is the share of the summed application time spent in MPI.
func (p *Profile) MPIPercent() float64 {
	var app int64
	for _, r := range p.Ranks {
		app += r.AppNs
	}
	if app <= 0 {
		return 0
	}
	return 100 * float64(p.MPINs) / float64(app)
}

// RankOf profiles one rank's events, read to the end from r.
func RankOf(r *tracefmt.RankReader) (*Rank, error) {
	rs := &Rank{Rank: r.Rank(), byName: map[string]*Func{}, bySite: map[siteKey]*Func{}}
	names := r.Strings()
	byID := map[uint64]*Func{}
	var first, last, initEnd, finStart int64 = -1, -1, -1, -1
	byIDSite := map[idSite]*Func{} // the calls by function id and call site
	for r.Next() {
		ev := r.Event()
		if ev.Kind >= spec.NumKinds || !spec.Kinds[ev.Kind].IsCall {
			continue
		}
		if first < 0 {
			first = ev.Start
		}
		if ev.End > last {
			last = ev.End
		}
		id := ev.Fn()
		f := byID[id]
		if f == nil {
			name, ok := names.Lookup(id)
			if !ok {
				name = "unknown function"
			}
			f = rs.byName[name]
			if f == nil {
				f = &Func{Name: name}
				rs.byName[name] = f
			}
			byID[id] = f
		}
		dur := ev.End - ev.Start
		f.add(dur)
		switch f.Name {
		case "MPI_Init", "MPI_Init_thread":
			initEnd = ev.End
		case "MPI_Finalize":
			finStart = ev.Start
		}
		sent, received := moved(ev)
		f.Sent += sent
		f.Received += received
		// By function and call site: each function caches its last site,
		// as a function is mostly called from one site at a time.
		site := siteOf(ev)
		sf := f.siteF
		if sf == nil || f.site != site {
			sk := idSite{id, site}
			if sf = byIDSite[sk]; sf == nil {
				sf = &Func{Name: f.Name}
				byIDSite[sk] = sf
			}
			f.site, f.siteF = site, sf
		}
		sf.add(dur)
		sf.Sent += sent
		sf.Received += received
		if !isInitFinalize(f.Name) {
			rs.MPINs += dur
			rs.Calls++
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	start, end := first, last
	if initEnd >= 0 {
		start = initEnd
	}
	rs.sites = r.Sites()
	for k, f := range byIDSite {
		sk := siteKey{k.site, f.Name}
		if g := rs.bySite[sk]; g != nil {
			g.merge(f) // two ids with one name
		} else {
			rs.bySite[sk] = f
		}
	}
	rs.Unfinished = unfinished(r, start, last)
	if finStart >= 0 {
		end = finStart
	}
	// A rank that hung in a call was in MPI until its log ends.
	for _, u := range rs.Unfinished {
		if start < 0 || u.Name == "MPI_Init" || u.Name == "MPI_Init_thread" {
			continue // stopped before the application began
		}
		end = max(end, start+u.StartNs+u.WaitedNs)
		rs.MPINs += u.WaitedNs
	}
	if end > start {
		rs.AppNs = end - start
	}
	rs.Funcs, rs.InitFinalize = splitFuncs(rs.byName)
	return rs, nil
}

// idSite is a call's function id and call site.
type idSite struct {
	id   uint64
	site uint32
}

// moved returns the bytes a call event sent and received.
func moved(ev *tracefmt.Event) (sent, received uint64) {
	switch ev.Kind {
	case spec.Send:
		if ev.Peer() != spec.ProcNull { // a send to MPI_PROC_NULL moves nothing
			sent = ev.Bytes()
		}
	case spec.Recv:
		received = ev.SBytes()
	case spec.Sendrecv:
		if ev.Peer() != spec.ProcNull {
			sent = ev.Bytes()
		}
		received = ev.SBytes()
	case spec.Complete:
		for _, c := range ev.Completions {
			received += c.Bytes
		}
	case spec.Coll:
		sent, received = ev.Bytes(), ev.RBytes()
	}
	return sent, received
}

// unfinished lists r's calls that never returned; origin is the rank's
// time origin, last the end of its last event.
func unfinished(r *tracefmt.RankReader, origin, last int64) []Unfinished {
	var out []Unfinished
	logEnd := last
	if e := r.End(); e != nil {
		logEnd = max(logEnd, e.Time)
	}
	for _, p := range r.Pending() {
		logEnd = max(logEnd, p.Time)
	}
	for _, p := range r.Unfinished() {
		name, ok := r.Strings().Lookup(p.Fn)
		if !ok {
			name = "unknown function"
		}
		u := Unfinished{Rank: r.Rank(), Thread: p.Thread, Name: name, WaitedNs: logEnd - p.Start}
		if origin >= 0 {
			u.StartNs = p.Start - origin
		}
		out = append(out, u)
	}
	return out
}

// OfTrace profiles every rank of t, concurrently.
func OfTrace(t *tracefmt.Trace) (*Profile, error) {
	ranks, err := RanksOf(t)
	if err != nil {
		return nil, err
	}
	return Merge(ranks), nil
}

// RanksOf profiles every rank of t, concurrently (in no order).
func RanksOf(t *tracefmt.Trace) ([]*Rank, error) {
	var (
		mu    sync.Mutex
		ranks []*Rank
	)
	err := t.ForEachRank(0, func(r *tracefmt.RankReader) error {
		rs, err := RankOf(r)
		if err != nil {
			return err
		}
		mu.Lock()
		ranks = append(ranks, rs)
		mu.Unlock()
		return nil
	})
	return ranks, err
}

// Merge builds the profile of the given ranks (in any order).
func Merge(ranks []*Rank) *Profile {
	p := &Profile{Ranks: append([]*Rank(nil), ranks...)}
	sort.Slice(p.Ranks, func(i, j int) bool { return p.Ranks[i].Rank < p.Ranks[j].Rank })
	all := map[string]*Func{}
	for _, r := range p.Ranks {
		for _, f := range slices.Concat(r.Funcs, r.InitFinalize) {
			a := all[f.Name]
			if a == nil {
				a = &Func{Name: f.Name}
				all[f.Name] = a
			}
			a.merge(f)
		}
		if r.AppNs > p.AppNs {
			p.AppNs = r.AppNs
		}
		p.MPINs += r.MPINs
	}
	p.All, p.InitFinalize = splitFuncs(all)
	return p
}

// splitFuncs sorts the functions of m into the application's and
// InitFinalize's.
func splitFuncs(m map[string]*Func) (app, initFin []*Func) {
	for _, f := range sortFuncs(m) {
		if isInitFinalize(f.Name) {
			initFin = append(initFin, f)
		} else {
			app = append(app, f)
		}
	}
	return app, initFin
}

// sortFuncs orders by total time, descending, then by name: deterministic.
func sortFuncs(m map[string]*Func) []*Func {
	fs := make([]*Func, 0, len(m))
	for _, f := range m {
		fs = append(fs, f)
	}
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].TotalNs != fs[j].TotalNs {
			return fs[i].TotalNs > fs[j].TotalNs
		}
		return fs[i].Name < fs[j].Name
	})
	return fs
}
