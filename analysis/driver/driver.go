// Package driver runs an analysis of a trace from end to end: it loads
// the latency model, reads every rank's log once (the streaming replay, or
// the task graph where the trace needs it, with the loops, regions and
// clock offsets seen on the way), finds the critical path, and derives
// from it, read as steps (critpath.StepPath), what the commands report —
// critPath.out, the summary with its call sites, loops, regions, fold and
// "why" block, the path under measured weights, a check baseline.
//
// The commands (cmd/mpitrace/internal/cli) parse flags, open the trace,
// show progress and print; every command that computes a path does it
// here, with the model it was given, so that two commands given the same
// model find the same path.
package driver

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mpitrace/mpitrace/analysis/baseline"
	"github.com/mpitrace/mpitrace/analysis/callsite"
	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/analysis/loops"
	"github.com/mpitrace/mpitrace/analysis/regions"
	"github.com/mpitrace/mpitrace/analysis/stats"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Observer is what else a caller wants to see of each rank's events: it
// is given the rank's header, strings and file, and returns what sees
// the events.
type Observer func(h *tracefmt.Header, strs *tracefmt.Strings, file string) func(*tracefmt.Event)

// Options say how to analyse a trace.
type Options struct {
	// Model is the latency model's file, "" for the built-in model.
	Model string
	// NoSpans leaves out the loops' and regions' intervals: the path's
	// share in them is then not known (export does not need it).
	NoSpans bool
	// Observe, when set, also sees each rank's events: twice for a trace
	// the replay declines (Stream), the second time the graph's.
	Observe Observer
	// Resolver resolves the call sites; nil for the default resolver.
	Resolver *callsite.Resolver
	// Stream finds the path with the streaming replay, in memory that does
	// not grow with the trace, without the task graph (Graph and Path are
	// then nil; Steps is the path): when the trace allows it, else (the
	// replay declines lost events, overlapping calls of threads,
	// undescribed communicators, or fails) as without.
	Stream bool
	// Baseline says the caller will want Baseline: in a job
	// (Job.Analyze), each process's loops' and regions' figures are
	// gathered too.
	Baseline bool
	// Measured says the caller will want MeasuredPath: with Stream, the
	// path under measured weights is replayed at once beside the model's
	// (on another core), with the clock offsets ClockOffsets reads first,
	// when the files of both fit the process's limit of open files.
	Measured bool
	// Why says the caller will call Explain: in a job (Job.Analyze), the
	// processes replay the trace under measured weights when the "why"
	// block needs it (the model's path far below the run).
	Why bool
	// Cut, with Stream, collects a part of the graph in the replay
	// (reconstruct.Cut: dot's --ranks and --window); its Graph stays nil
	// when the trace is not replayed or the steps' ids are not the
	// graph's.
	Cut *reconstruct.Cut
}

// Analysis is a trace's task graph and critical path, and what derives
// from them, each computed once when first asked for.
type Analysis struct {
	Trace *tracefmt.Trace
	Graph *taskgraph.Graph
	Diags *tracefmt.Diagnostics
	Model *latency.Model
	// ModelName says which model weighed the path (its file and first
	// line, or the built-in model's description).
	ModelName string
	// Path is the critical path under the model; PathErr says why there
	// is none (no operations, or inconsistent data making a cycle): the
	// graph is still there.
	Path    *critpath.Path
	PathErr error
	// Steps is the path under the model read as its steps: Path's, or the
	// replay's (Options.Stream). Nil when there is none.
	Steps *critpath.StepPath
	// Note, when not "", is a note for the user about the reading (a
	// record filter that may explain unmatched messages).
	Note string

	resolver *callsite.Resolver
	sites    *callsite.Table // made on first use by SiteLabel

	fold *critpath.Folded // Folded folds Path once

	loopAggs    []*loops.Aggregator
	regionAggs  []*regions.Aggregator
	loopRanks   []*loops.RankLoops     // the aggregators' Finish
	regionRanks []*regions.RankRegions // the aggregators' Finish

	// spanTimes are, in an analysis run as a job (Job.Analyze with
	// Options.Baseline), every process's loops' and regions' baseline
	// figures summed: process 0 does not hold the ranks' loops.
	spanTimes map[string]int64
	// spansOnly says the loops and regions are where they ran only
	// (a job's, gathered to process 0), without their figures.
	spansOnly bool

	clocks   *clockObserver
	mpath    *critpath.StepPath // the path under measured weights, once computed
	mpathErr error

	replays []*reconstruct.ReplayResult // the replays' results, to Close
}

// LoadModel returns the latency model of the file path (a --model), or
// the embedded default for "", and how to name it to the user.
func LoadModel(path string) (*latency.Model, string, error) {
	if path == "" {
		return latency.Default(), "default model embedded in mpitrace (run mpitrace calibrate for this machine)", nil
	}
	m, err := latency.Load(path)
	if err != nil {
		return nil, "", fmt.Errorf("--model: %w", err)
	}
	return m, fmt.Sprintf("%s (calibrated on %s, %d ranks, %s)", path, m.Machine, m.Procs, firstLine(m.MPI)), nil
}

// firstLine returns s up to its first newline or tab, and at most 60
// bytes.
func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' || r == '\t' || i >= 60 {
			return s[:i]
		}
	}
	return s
}

// Analyze looks for the critical path of an opened trace with the latency
// model o.Model: with o.Stream by the streaming replay (Steps), else, or
// for a trace the replay declines, with the task graph (Graph, Path,
// Steps). A trace whose path cannot be found is not an error: PathErr
// says why, and the graph is there.
func Analyze(t *tracefmt.Trace, o Options) (*Analysis, error) {
	a := &Analysis{Trace: t, clocks: newClockObserver(), resolver: o.Resolver}
	var err error
	if a.Model, a.ModelName, err = LoadModel(o.Model); err != nil {
		return nil, err
	}
	note := ""
	if o.Stream {
		// What the replay reads, so that the reading's progress can start
		// again for the graph's.
		var read atomic.Int64
		onRead := t.OnRead
		if onRead != nil {
			t.OnRead = func(n int) { read.Add(int64(n)); onRead(n) }
		}
		err := a.replay(o)
		t.OnRead = onRead
		if err == nil {
			return a, nil
		}
		var bug replayPanic
		if errors.As(err, &bug) {
			// Said, so that it is reported; the graph gives the answer.
			note = fmt.Sprintf("%v; the path was found with the task graph instead (please report this with the trace)", bug)
		}
		// Declined (or failed, which Build says better): the graph, with
		// what the replay observed forgotten, in the memory it held.
		if onRead != nil {
			onRead(-int(read.Load()))
		}
		runtime.GC()
		a = &Analysis{Trace: t, clocks: newClockObserver(), resolver: o.Resolver, Model: a.Model, ModelName: a.ModelName}
	}
	a.Graph, a.Diags, err = reconstruct.Build(t, reconstruct.Options{Filtered: RecordFilter(t) != "", Observe: a.observer(o)})
	if err != nil {
		return nil, err
	}
	a.Note = filterNote(t, a.Diags)
	if note != "" {
		a.Note = strings.TrimPrefix(a.Note+"; "+note, "; ")
	}
	a.Path, a.PathErr = critpath.Compute(a.Graph, a.Model)
	if a.Path != nil {
		a.Steps = a.Path.StepPath()
	}
	return a, nil
}

// replay finds the path with the streaming replay: an error when the
// replay declines the trace or fails.
func (a *Analysis) replay(o Options) (err error) {
	t := a.Trace
	filtered := RecordFilter(t) != ""
	var mres *reconstruct.ReplayResult
	var merr error
	var offsets map[int]int64
	var wg sync.WaitGroup
	var stop atomic.Bool
	stopped := false // the measured replay beside stopped before its end
	measured := func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if besideHold != nil {
				besideHold(&stop)
			}
			if stopped = stop.Load(); stopped {
				return
			}
			// The offsets, from the ends of the logs, while the model's
			// replay runs.
			offsets = ClockOffsets(t).Offset
			if stopped = stop.Load(); stopped {
				return
			}
			mres, merr = safely(func() (*reconstruct.ReplayResult, error) {
				return reconstruct.ReplayTraceMeasured(t, offsets, reconstruct.Options{Filtered: filtered, Windows: replayWindows / 2, Stop: &stop})
			})
			stopped = errors.Is(merr, reconstruct.ErrStopped)
		}()
	}
	mo := reconstruct.Options{Filtered: filtered, Observe: a.observer(o), Cut: o.Cut}
	// The "why" block's measured replay starts beside the model's once
	// the model's path so far is far below the run so far (as on most
	// real traces: the block will be needed), and is stopped if the whole
	// path says it is not.
	guess := !o.Measured && o.Why && runtime.GOMAXPROCS(0) > 1 && len(t.Files) <= besideRanks
	started := false
	switch {
	case o.Measured && len(t.Files) <= besideRanks:
		mo.Windows = replayWindows / 2 // two replays at once
		measured()
		started = true
	case guess:
		mo.Windows = replayWindows / 2 // two replays at once, maybe
		// Called in the replay's goroutine: replayTrace runs one engine.
		mo.Partial = func(path float64, run int64) {
			if !started && run > 0 && needsWhy(path, run) {
				started = true
				measured()
			}
		}
	}
	res, err := safely(func() (*reconstruct.ReplayResult, error) {
		return replayTrace(t, critpath.ModelWeights(a.Model), mo)
	})
	var steps *critpath.StepPath
	if err == nil {
		steps = critpath.ReplayPath(res, critpath.WeightsModel, a.Model, nil)
		if guess && !needsWhy(steps.Length, steps.RunTime) {
			stop.Store(true)
		}
	} else {
		stop.Store(true)
	}
	wg.Wait()
	if stop.Load() && mres != nil { // as after an error
		mres.Close()
		mres = nil
	}
	if err != nil {
		return err
	}
	a.replays = append(a.replays, res)
	a.Diags = res.Diags
	a.Note = filterNote(t, a.Diags)
	a.Steps = steps
	switch {
	case mres == nil:
	case merr == nil && maps.Equal(offsets, a.clockOffsets().Offset):
		a.replays = append(a.replays, mres)
		a.mpath = critpath.ReplayPath(mres, critpath.WeightsMeasured, nil, a.clockOffsets())
	default:
		mres.Close() // MeasuredPath replays with the offsets seen
	}
	if besideGuessed != nil && guess {
		besideGuessed(started, a.mpath != nil, stopped)
	}
	return nil
}

// needsWhy says whether a model path of length below a run of run ns
// needs the "why" block (critpath.Summary.NeedsWhy).
func needsWhy(length float64, run int64) bool {
	return (&critpath.Summary{Measured: run}).NeedsWhy(length)
}

// besideGuessed, when set (by tests), is told whether a measured replay
// for the "why" block started beside the model's, whether it was kept,
// and whether it was stopped before its end; besideHold, when set, is
// called first in the goroutine of a measured replay beside the model's.
var (
	besideGuessed func(started, kept, stopped bool)
	besideHold    func(stop *atomic.Bool)
)

// besideRanks is the most ranks whose measured replay runs beside the
// model's: two replays at once hold every rank's state twice (about 10 KB
// a rank, and as much again of the collector's headroom). Beyond, the
// measured replay runs after the model's, when asked (MeasuredPath): the
// peak is one replay's, the time two's (a variable for the tests).
var besideRanks = 4096

// replayWindows is what a replay's readers hold of their blocks
// (reconstruct.Options.Windows' default).
const replayWindows = 32 << 20

// replayTrace is reconstruct.ReplayTrace (a test makes it panic).
var replayTrace = reconstruct.ReplayTrace

// replayPanic is a panic of the replay: an internal error, which the
// analysis survives with the graph (and says).
type replayPanic struct{ v any }

func (p replayPanic) Error() string {
	return fmt.Sprintf("internal error in the streaming replay: %v", p.v)
}

// safely runs a replay, its panic an error (replayPanic).
func safely(replay func() (*reconstruct.ReplayResult, error)) (res *reconstruct.ReplayResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			if res != nil {
				res.Close()
			}
			res, err = nil, replayPanic{v}
		}
	}()
	return replay()
}

// ClockOffsets reads each rank's clock offset to rank 0 and its
// uncertainty as the analysis observes them (its MPI_Init clock
// synchronisation, else its first), reading only the first and the last
// events block of each log (tracefmt.RankReader.OnlyEnds), and of the
// first only as far as the MPI_Init synchronisation: the recorder
// synchronises in MPI_Init and in MPI_Finalize, and a log without either
// is not read through. A synchronisation elsewhere in a log without one in
// MPI_Init is missed: the caller checks against what the analysis
// observed. A rank whose log cannot be read has none.
func ClockOffsets(t *tracefmt.Trace) *critpath.Clocks {
	c := newClockObserver()
	for _, f := range t.Files {
		rr, err := t.OpenRankUncounted(f.Rank)
		if err != nil {
			continue
		}
		rr.OnlyEnds()
		see := c.observe(rr.Header())
		for rr.Next() {
			if ev := rr.Event(); ev.Kind == spec.ClockSync {
				see(ev)
				if ev.Phase() == spec.PhaseInit {
					break
				}
			}
		}
		rr.Close()
	}
	shareClocks(t, &c.clocks)
	return &c.clocks
}

// clockOffsets is the ranks' clock offsets the analysis saw, ranks that
// read one clock sharing one (shareClocks). Once every rank was read.
func (a *Analysis) clockOffsets() *critpath.Clocks {
	shareClocks(a.Trace, &a.clocks.clocks)
	return &a.clocks.clocks
}

// shareClocks gives the ranks that read one clock (tracefmt's
// ClockGroups: one host, one boot) one offset, and its uncertainty: 0
// between them, where the recorder's measurement by messages errs by
// what a process waits for a core (docs/reconstruction.md, "Measured
// weights"). Idempotent: called whenever the offsets are used.
func shareClocks(t *tracefmt.Trace, c *critpath.Clocks) {
	for r, src := range tracefmt.ShareOffsets(t.ClockGroups(), c.Offset) {
		c.Err[r] = c.Err[src] // rank 0's: none
	}
}

// Close releases the temporary files of the replays.
func (a *Analysis) Close() {
	for _, res := range a.replays {
		res.Close()
	}
	a.replays = nil
}

// observer returns what sees each rank's events while the trace is read:
// the loops, the regions, the clock offsets and o.Observe.
func (a *Analysis) observer(o Options) func(h *tracefmt.Header, strs *tracefmt.Strings) func(*tracefmt.Event) {
	t := a.Trace
	var mu sync.Mutex
	observe := func(h *tracefmt.Header, strs *tracefmt.Strings) func(*tracefmt.Event) {
		// Where the loops and regions ran, for the critical path's share
		// in them: little more than a switch per event in a trace without.
		ag := loops.NewAggregator(h, strs)
		ag.KeepSpans = !o.NoSpans
		rg := regions.NewAggregator(h, strs)
		rg.KeepSpans = !o.NoSpans
		var more func(*tracefmt.Event)
		if o.Observe != nil {
			file := ""
			if f, ok := t.Rank(h.Rank); ok {
				file = f.Path
			}
			more = o.Observe(h, strs, file)
		}
		mu.Lock()
		a.loopAggs = append(a.loopAggs, ag)
		a.regionAggs = append(a.regionAggs, rg)
		mu.Unlock()
		clk := a.clocks.observe(h)
		return func(ev *tracefmt.Event) {
			ag.Event(ev)
			rg.Event(ev)
			clk(ev)
			if more != nil {
				more(ev)
			}
		}
	}
	return observe
}

// ErrNoMPI is the error of a program recorded without MPI: there is no
// critical path across ranks.
var ErrNoMPI = errors.New("a program without MPI (no MPI call recorded, no MPI library in the logs)")

// NeedPath returns why a has no critical path, nil when it has one: for a
// program without MPI an error wrapping ErrNoMPI that names the trace,
// else PathErr.
func (a *Analysis) NeedPath() error {
	if a.NoMPI() {
		return fmt.Errorf("%s: %w: there is no critical path across ranks; 'mpitrace loops %s' shows its loops", a.Trace.Dir, ErrNoMPI, a.Trace.Dir)
	}
	return a.PathErr
}

// WithoutMPI reports whether t may come from a program without MPI: the
// recorder without MPI writes no mpi_library in any rank's header.
func WithoutMPI(t *tracefmt.Trace) bool {
	for _, f := range t.Files {
		if f.Header.MPILibrary != "" {
			return false
		}
	}
	return len(t.Files) > 0
}

// NoMPI reports whether the trace is a program without MPI rather than a
// damaged trace: no MPI library named, no operation in the graph, and
// nothing lost.
func (a *Analysis) NoMPI() bool {
	return WithoutMPI(a.Trace) && errors.Is(a.PathErr, critpath.ErrEmpty) && a.Diags.Count(tracefmt.DataLoss) == 0
}

// Sites returns the table of the call sites SiteLabel resolved, nil
// before.
func (a *Analysis) Sites() *callsite.Table { return a.sites }

// SiteLabel returns the labeller of the graph's call sites, nil when the
// graph has none (traces before format version 5).
func (a *Analysis) SiteLabel() critpath.SiteLabel {
	if a.sites == nil {
		r := a.resolver
		if r == nil {
			r = callsite.NewResolver()
		}
		ranks := map[int]*tracefmt.Sites{}
		if a.Graph != nil {
			for _, rk := range a.Graph.Ranks() {
				ranks[rk] = a.Graph.RankSites(rk)
			}
		} else if len(a.replays) > 0 {
			ranks = a.replays[0].Sites()
		}
		a.sites = SiteTable(r, ranks)
	}
	if a.sites.Empty() {
		return nil
	}
	return a.sites.Label
}

// SiteTable returns the call sites of the given ranks' tables (nil tables
// are skipped), resolved through r.
func SiteTable(r *callsite.Resolver, ranks map[int]*tracefmt.Sites) *callsite.Table {
	t := callsite.NewTable(r)
	for rank, s := range ranks {
		if s.Len() == 0 {
			continue
		}
		addrs := make(map[uint32]uint64, s.Len())
		for _, id := range s.IDs() {
			if a, ok := s.Addr(id); ok && id <= 1<<32-1 {
				addrs[uint32(id)] = a
			}
		}
		ms := s.Mappings()
		maps := make([]callsite.Mapping, len(ms))
		for i, m := range ms {
			maps[i] = callsite.Mapping(m)
		}
		t.SetRank(rank, maps, addrs)
	}
	return t
}

// Folded returns the critical path folded (critpath.Fold), folding it
// once.
func (a *Analysis) Folded() (*critpath.Folded, error) {
	if a.fold == nil {
		var err error
		if a.Path != nil {
			a.fold = critpath.Fold(a.Path)
		} else if a.fold, err = a.Steps.Fold(); err != nil {
			return nil, err
		}
	}
	return a.fold, nil
}

// Loops returns each rank's loops, as the reconstruction saw them.
func (a *Analysis) Loops() []*loops.RankLoops { return finishOnce(&a.loopRanks, a.loopAggs) }

// Regions returns each rank's regions, as the reconstruction saw them.
func (a *Analysis) Regions() []*regions.RankRegions { return finishOnce(&a.regionRanks, a.regionAggs) }

// finishOnce returns what each aggregator's Finish returns, calling it
// once per aggregator: later calls return *done.
func finishOnce[A interface{ Finish() R }, R any](done *[]R, aggs []A) []R {
	if *done == nil {
		*done = make([]R, len(aggs))
		for i, ag := range aggs {
			(*done)[i] = ag.Finish()
		}
	}
	return *done
}

// Report writes critPath.out of sp, a path of a (Steps, or
// MeasuredPath's), to out when it is not nil, and returns its summary:
// its repetition and, when the trace has them, its call sites, loops and
// regions (critpath.StepPath.Report).
func (a *Analysis) Report(sp *critpath.StepPath, out io.Writer, unit critpath.Unit, top int) (*critpath.Summary, error) {
	o := critpath.ReportOptions{Out: out, Unit: unit, Top: top, Label: a.SiteLabel(), Fold: true}
	if spans := loops.NewSpans(a.Loops()); !spans.Empty() {
		o.Loops = spans
	}
	if spans := regions.NewSpans(a.Regions()); !spans.Empty() {
		o.Regions = spans
	}
	sum, f, err := sp.Report(o)
	if err != nil {
		return nil, err
	}
	if sp == a.Steps && a.fold == nil && a.Path != nil {
		a.fold = f // for the picture
	}
	sum.Run.LabelSites(o.Label)
	return sum, nil
}

// MeasuredPath returns the critical path under measured weights,
// computing it once: from the graph, or with a second replay of the trace
// (the clock offsets seen by the first).
func (a *Analysis) MeasuredPath() (*critpath.StepPath, error) {
	if a.mpath != nil || a.mpathErr != nil {
		return a.mpath, a.mpathErr
	}
	if a.Graph != nil {
		var p *critpath.Path
		if p, a.mpathErr = critpath.ComputeMeasured(a.Graph, a.clockOffsets()); p != nil {
			a.mpath = p.StepPath()
		}
		return a.mpath, a.mpathErr
	}
	res, err := safely(func() (*reconstruct.ReplayResult, error) {
		return reconstruct.ReplayTraceMeasured(a.Trace, a.clockOffsets().Offset, reconstruct.Options{Filtered: RecordFilter(a.Trace) != ""})
	})
	if err != nil {
		// Where the model's replay went, this one goes too but for a
		// failure of its own (a temporary file, say): the graph.
		g, _, err := reconstruct.Build(a.Trace, reconstruct.Options{Filtered: RecordFilter(a.Trace) != ""})
		if err != nil {
			a.mpathErr = err
			return nil, err
		}
		var p *critpath.Path
		if p, a.mpathErr = critpath.ComputeMeasured(g, a.clockOffsets()); p != nil {
			a.mpath = p.StepPath()
		}
		return a.mpath, a.mpathErr
	}
	a.replays = append(a.replays, res)
	a.mpath = critpath.ReplayPath(res, critpath.WeightsMeasured, nil, a.clockOffsets())
	return a.mpath, nil
}

// Explain adds to sum, when the model's path is far below the measured
// run, where the difference went: the path under measured weights
// weighed again with the model (critpath.ExplainSteps).
func (a *Analysis) Explain(sum *critpath.Summary) error {
	if !sum.NeedsWhy(a.Steps.Length) {
		return nil
	}
	mp, err := a.MeasuredPath()
	if err != nil {
		return err
	}
	if sum.Why, err = critpath.ExplainSteps(a.Steps.Length, a.Model, mp, 5, a.SiteLabel()); err != nil {
		return err
	}
	sum.Why.Hosts = Hosts(a.Trace)
	return nil
}

// Baseline returns the figures check compares, for the trace named name:
// prof's MPI functions, the critical path's length and parts by function,
// the regions' and loops' times, and the model's fingerprint when it is
// not the built-in one.
func (a *Analysis) Baseline(name string, prof *stats.Profile) (*baseline.Baseline, error) {
	b := baseline.New(name, a.Trace.Size)
	if fp := a.Model.Fingerprint(); fp != latency.Default().Fingerprint() {
		b.Model = fp
	}
	for _, f := range prof.All {
		b.Shape.Calls[f.Name] = f.Calls
		b.Times[baseline.MPIFunction(f.Name)] = f.TotalNs
	}
	sum, err := a.Steps.Summarize(0) // the figures only: no loops, regions or call sites
	if err != nil {
		return nil, err
	}
	b.SetTime(baseline.CritpathLength, sum.Length)
	b.SetTime(baseline.CritpathComputation, sum.Computation)
	b.SetTime(baseline.CritpathCommunication, sum.Communication)
	for _, fs := range sum.ByFunction {
		b.SetTime(baseline.CritpathFunction(fs.Name), fs.Computation+fs.Communication)
	}
	times := a.spanTimes
	if times == nil {
		if a.spansOnly {
			return nil, errors.New("internal error: a job's baseline without its loops' and regions' figures (Options.Baseline)")
		}
		times = spanTimes(a.Loops(), a.Regions())
	}
	maps.Copy(b.Times, times)
	return b, nil
}

// spanTimes are the figures of a baseline of the loops and regions of
// ranks: each region's inclusive time and each loop's measured time,
// summed over the ranks, each named by its path from the top. (Sums: the
// figures of a job are the sums of its processes'.)
func spanTimes(ls []*loops.RankLoops, rs []*regions.RankRegions) map[string]int64 {
	times := map[string]int64{}
	addRegions(times, regions.Merge(rs).Nodes, "")
	var stack []string
	for _, l := range loops.Merge(ls).Loops {
		stack = append(stack[:min(l.Depth, len(stack))], l.Location)
		times[baseline.Loop(strings.Join(stack, " > "))] = l.Measured
	}
	return times
}

// addRegions adds the inclusive time of nodes and their children, each
// named by its path from the top.
func addRegions(times map[string]int64, nodes []*regions.Node, parent string) {
	for _, n := range nodes {
		path := n.Kind + " " + n.Name
		if parent != "" {
			path = parent + " > " + path
		}
		times[baseline.Region(path)] = n.TotalNs
		addRegions(times, n.Children, path)
	}
}

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

func (c *clockObserver) observe(h *tracefmt.Header) func(*tracefmt.Event) {
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

// ThisMachine names the machine mpitrace runs on and its CPU count: a
// trace recorded here gets its CPU count from it. Tests with goldens
// replace it.
var ThisMachine = func() (string, int) {
	h, err := os.Hostname()
	if err != nil {
		return "", 0
	}
	return h, OnlineCPUs()
}

// OnlineCPUs is the machine's online CPUs, not those this process may
// run on (runtime.NumCPU): under a launcher that binds it to a core (Open
// MPI's mpirun with 1 or 2 processes, --mpi), the machine still has what
// the recorded ranks shared. At least runtime.NumCPU, which it is when
// Linux's list cannot be read.
func OnlineCPUs() int { return max(cpusListed("/sys/devices/system/cpu/online"), runtime.NumCPU()) }

// cpusListed counts the processors file lists (Linux's
// /sys/devices/system/cpu/online: "0-3,6"), 0 when it cannot be read.
func cpusListed(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0
		}
		z := a
		if isRange {
			if z, err = strconv.Atoi(hi); err != nil || z < a {
				return 0
			}
		}
		n += z - a + 1
	}
	return n
}

// Hosts counts the ranks of t per host (the headers' hostname) and gives
// each host's CPU count: the headers' cpus (recorders since 2026-11-24),
// else this machine's when the host is this machine.
func Hosts(t *tracefmt.Trace) []critpath.Host {
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
	here, cpus := ThisMachine()
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

// RecordFilter returns the --include and --exclude a trace was recorded
// with, as flags ("--exclude MPI_Recv"), from the rank headers' options;
// "" when there were none.
func RecordFilter(t *tracefmt.Trace) string {
	var filters []string
	for _, f := range t.Files {
		v, ok := f.Header.Get(tracefmt.KeyOptions)
		if !ok {
			continue
		}
		opts := parseRecorderOptions(v)
		var flags []string
		for _, k := range []string{"include", "exclude"} {
			if opts[k] != "" {
				flags = append(flags, "--"+k+" "+opts[k])
			}
		}
		if s := strings.Join(flags, " "); s != "" && !slices.Contains(filters, s) {
			filters = append(filters, s)
		}
	}
	return strings.Join(filters, "; ")
}

// parseRecorderOptions reads a header's options, "key=value" separated by
// spaces; a word without "=" belongs to the value before it (a list given
// with spaces).
func parseRecorderOptions(s string) map[string]string {
	m := map[string]string{}
	last := ""
	for _, w := range strings.Fields(s) {
		if k, v, ok := strings.Cut(w, "="); ok {
			m[k], last = v, k
		} else if last != "" {
			m[last] += " " + w
		}
	}
	return m
}

// filterNote says, when a trace recorded with --include or --exclude has
// unmatched messages, that the filter may explain them; "" otherwise.
func filterNote(t *tracefmt.Trace, d *tracefmt.Diagnostics) string {
	n := d.CountCode(reconstruct.CodeUnmatchedSend) + d.CountCode(reconstruct.CodeUnmatchedRecv)
	if n == 0 {
		return ""
	}
	filter := RecordFilter(t)
	if filter == "" {
		return ""
	}
	if n == 1 {
		return fmt.Sprintf("the trace was recorded with %s: 1 unmatched message may be one whose send or receive it left out", filter)
	}
	return fmt.Sprintf("the trace was recorded with %s: %d unmatched messages may be those whose send or receive it left out", filter, n)
}
