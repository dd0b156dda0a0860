// Package benchtrace is what the benchmarks of the analysis share: the
// synthetic traces they read, each written once per test binary to a
// temporary directory, and a meter of wall time, CPU time and peak memory
// that reports the figures docs/performance.md publishes.
package benchtrace

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// A Shape is a benchmark trace.
type Shape struct {
	// Name names the trace in sub-benchmark names.
	Name string
	// Env names the variable that scales the trace down (or up), and
	// Default is its default value.
	Env     string
	Default int
	// build returns the trace for scale n, events its number of events.
	build  func(n int) *testgen.Builder
	events func(n int) int64
}

var (
	// Halo is testgen.Halo on 100 ranks, 40,000 iterations
	// (MPITRACE_BENCH_ITERS): 20.4M events, 100 short parallel chains.
	Halo = &Shape{Name: "halo100", Env: "MPITRACE_BENCH_ITERS", Default: 40_000,
		build: func(iters int) *testgen.Builder { return testgen.Halo(100, iters, 1) },
		// 5 events per iteration, and an MPI_Allreduce every 10th.
		events: func(iters int) int64 { return 100 * int64(5*iters+iters/10) }}
	// Serial is testgen.Serial with 20M calls (MPITRACE_BENCH_CALLS) on
	// one rank: a critical path of 20M steps.
	Serial = &Shape{Name: "serial1", Env: "MPITRACE_BENCH_CALLS", Default: 20_000_000,
		build: func(calls int) *testgen.Builder { return testgen.Serial(calls, 1) },
		// calls rounded up to whole iterations, MPI_Init and MPI_Finalize.
		events: func(calls int) int64 { return int64((calls+9)/10*10) + 2 }}
)

// Shapes are the benchmark traces.
var Shapes = []*Shape{Halo, Serial}

// Wide is testgen.Halo on 16,384 ranks (MPITRACE_BENCH_RANKS) of 50
// iterations: 257 events a rank, 4.2 M events, a world of many short ranks
// whose cost is what each rank costs whatever its length. It is not one of
// Shapes: the benchmarks that run on it say so (RunShape).
var Wide = &Shape{Name: "wide", Env: "MPITRACE_BENCH_RANKS", Default: 16_384,
	build: func(ranks int) *testgen.Builder { return testgen.Halo(ranks, 50, 1) },
	// MPI_Init, 5 events an iteration, 5 MPI_Allreduce, MPI_Finalize.
	events: func(ranks int) int64 { return int64(ranks) * (2 + 5*50 + 5) }}

type written struct {
	once   sync.Once
	dir    string // temporary, removed by Main
	kept   string // below MPITRACE_BENCH_DIR
	events int64
	err    error
}

var (
	mu   sync.Mutex
	dirs = map[*Shape]*written{}
)

// Dir returns the directory of the trace s, writing it on first use, and
// its number of events. The trace goes to a temporary directory removed at
// the end, or, when MPITRACE_BENCH_DIR is set, to NAME-SCALE below it,
// kept for the next run (and for measuring the mpitrace binary on it).
func (s *Shape) Dir(b *testing.B) (string, int64) {
	mu.Lock()
	w := dirs[s]
	if w == nil {
		w = &written{}
		dirs[s] = w
	}
	mu.Unlock()
	w.once.Do(func() {
		n := s.Default
		if v := os.Getenv(s.Env); v != "" {
			if x, err := strconv.Atoi(v); err == nil && x > 0 {
				n = x
			}
		}
		w.events = s.events(n)
		if keep := os.Getenv("MPITRACE_BENCH_DIR"); keep != "" {
			dir := filepath.Join(keep, s.Name+"-"+strconv.Itoa(n))
			if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil {
				b.Logf("%s: reusing %s", s.Name, dir)
				w.kept = dir
				return
			}
			if err := s.build(n).WriteDir(dir); err != nil {
				w.err = fmt.Errorf("writing the %s trace: %w", s.Name, err)
			}
			w.kept = dir
			return
		}
		dir, err := os.MkdirTemp("", "mpitrace-bench-"+s.Name+"-")
		if err != nil {
			w.err = err
			return
		}
		w.dir = dir
		start := time.Now()
		if err := s.build(n).WriteDir(dir); err != nil {
			w.err = fmt.Errorf("writing the %s trace: %w", s.Name, err)
			return
		}
		b.Logf("%s: generated %d events in %v", s.Name, w.events, time.Since(start).Round(time.Millisecond))
	})
	if w.err != nil {
		b.Fatal(w.err)
	}
	if w.kept != "" {
		return w.kept, w.events
	}
	return w.dir, w.events
}

// Main is TestMain for a package with benchmarks that use the traces: it
// runs the tests and benchmarks, then removes the traces.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	for _, w := range dirs {
		if w.dir != "" {
			os.RemoveAll(w.dir)
		}
	}
	mu.Unlock()
	os.Exit(code)
}

// Run runs a sub-benchmark per shape of Shapes: f, once per iteration, on
// the shape's trace directory, metered, then reports the meter's figures.
// Whatever f does is measured, checks included: keep them cheap.
func Run(b *testing.B, f func(b *testing.B, dir string)) {
	for _, shape := range Shapes {
		RunShape(b, shape, f)
	}
}

// RunShape is Run on one shape.
func RunShape(b *testing.B, shape *Shape, f func(b *testing.B, dir string)) {
	b.Run(shape.Name, func(b *testing.B) {
		dir, events := shape.Dir(b)
		var m Meter
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			m.Start()
			b.StartTimer()
			f(b, dir)
			b.StopTimer()
			m.Stop()
			b.StartTimer()
		}
		m.Report(b, events)
	})
}

// A Meter measures benchmark iterations: wall and CPU time (user and
// system, all threads: the single-core rate even on a shared machine), the
// peak heap in use above what was in use at Start, and the peak memory
// held from the OS. Use it with the benchmark's timer stopped around Start
// and Stop.
type Meter struct {
	wall, cpu time.Duration
	peakHeap  uint64
	peakSys   uint64

	c0    time.Duration
	start time.Time
	base  uint64
	s     *sampler
}

// Start begins an iteration: it collects garbage first, so that the
// baseline is what is live.
func (m *Meter) Start() {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	m.base = base.HeapInuse
	m.s = startSampler()
	m.start, m.c0 = time.Now(), cpuTime()
}

// Stop ends an iteration.
func (m *Meter) Stop() {
	m.wall += time.Since(m.start)
	m.cpu += cpuTime() - m.c0
	m.s.finish()
	m.peakHeap = max(m.peakHeap, m.s.peakHeap-min(m.s.peakHeap, m.base))
	m.peakSys = max(m.peakSys, m.s.peakSys)
}

// Report reports the metrics of docs/performance.md for n iterations over
// a trace of events: events per second of wall time and of CPU time, and
// peak heap and OS memory per event.
func (m *Meter) Report(b *testing.B, events int64) {
	total := float64(events) * float64(b.N)
	b.ReportMetric(total/m.wall.Seconds(), "events/s")
	b.ReportMetric(total/m.cpu.Seconds(), "events/cpu-s")
	b.ReportMetric(float64(m.peakHeap)/float64(events), "heap-B/event")
	b.ReportMetric(float64(m.peakSys)/float64(events), "sys-B/event")
	b.ReportMetric(float64(events), "events")
}

// sampler records the peak heap in use and memory obtained from the OS
// while an iteration runs.
type sampler struct {
	stop     chan struct{}
	done     chan struct{}
	peakHeap uint64
	peakSys  uint64
}

func startSampler() *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.peakHeap = max(s.peakHeap, ms.HeapInuse)
	s.peakSys = max(s.peakSys, ms.Sys-ms.HeapReleased)
}

func (s *sampler) finish() {
	close(s.stop)
	<-s.done
	s.sample()
}

// cpuTime returns the CPU time (user and system) the process has used.
// CPUTime is the CPU time (user and system, all threads) the process has
// used so far: a benchmark's cost on a machine shared with other jobs.
func CPUTime() time.Duration { return cpuTime() }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
