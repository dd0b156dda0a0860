package reconstruct_test

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// The benchmark trace: testgen.Halo on 100 ranks, 40000 iterations (about
// 20.4M events), written once to a temporary directory. MPITRACE_BENCH_ITERS
// overrides the iterations.
var benchTrace struct {
	once   sync.Once
	dir    string
	events int64
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchTrace.dir != "" {
		os.RemoveAll(benchTrace.dir)
	}
	os.Exit(code)
}

func haloTrace(b *testing.B) (string, int64) {
	benchTrace.once.Do(func() {
		iters := 40000
		if s := os.Getenv("MPITRACE_BENCH_ITERS"); s != "" {
			if n, err := strconv.Atoi(s); err == nil && n > 0 {
				iters = n
			}
		}
		dir, err := os.MkdirTemp("", "mpitrace-bench-")
		if err != nil {
			benchTrace.err = err
			return
		}
		benchTrace.dir = dir
		const ranks = 100
		start := time.Now()
		if err := testgen.Halo(ranks, iters, 1).WriteDir(dir); err != nil {
			benchTrace.err = err
			return
		}
		// 5 events per iteration, and an MPI_Allreduce every 10th.
		benchTrace.events = int64(ranks) * int64(5*iters+iters/10)
		b.Logf("generated %d events in %v", benchTrace.events, time.Since(start).Round(time.Millisecond))
	})
	if benchTrace.err != nil {
		b.Fatal(benchTrace.err)
	}
	return benchTrace.dir, benchTrace.events
}

// memSampler records the peak heap in use and memory obtained from the
// OS while a benchmark iteration runs.
type memSampler struct {
	stop     chan struct{}
	done     chan struct{}
	peakHeap uint64
	peakSys  uint64
}

func startSampler() *memSampler {
	s := &memSampler{stop: make(chan struct{}), done: make(chan struct{})}
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

func (s *memSampler) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.peakHeap = max(s.peakHeap, ms.HeapInuse)
	s.peakSys = max(s.peakSys, ms.Sys-ms.HeapReleased)
}

func (s *memSampler) finish() {
	close(s.stop)
	<-s.done
	s.sample()
}

// BenchmarkReconstructCritpath decodes a 100-rank halo-exchange trace,
// reconstructs its task graph and computes its critical path, end to end.
// It reports events per second of wall time and of CPU time (user and
// system, all threads: the single-core rate even on a shared machine), and
// peak memory per event: heap in use (above what was in use before) and
// memory held from the OS.
//
//	go test ./reconstruct -run '^$' -bench ReconstructCritpath -benchtime 1x -cpu 1,2
func BenchmarkReconstructCritpath(b *testing.B) {
	dir, events := haloTrace(b)
	var peakHeap, peakSys uint64
	var elapsed, cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		s := startSampler()
		b.StartTimer()
		t0, c0 := time.Now(), cpuTime()
		tr, err := tracefmt.OpenDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		g, diags, err := reconstruct.Build(tr, reconstruct.Options{})
		if err != nil {
			b.Fatal(err)
		}
		p, err := critpath.Compute(g, latency.Default())
		if err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(t0)
		cpu += cpuTime() - c0
		b.StopTimer()
		s.finish()
		peakHeap = max(peakHeap, s.peakHeap-min(s.peakHeap, base.HeapInuse))
		peakSys = max(peakSys, s.peakSys)
		if reconstruct.HasErrors(diags) || len(p.Vertices) < 3 {
			b.Fatalf("diagnostics %s, path of %d vertices", diags.Summary(), len(p.Vertices))
		}
		if i == 0 {
			b.Logf("%d nodes (%d ops, %d collectives), %d messages; path %d vertices, %.3f ms; diagnostics: %s",
				g.NumNodes(), g.NumOps(), g.NumCollectives(), g.NumMessages(), len(p.Vertices), p.Length/1e6, diags.Summary())
		}
		runtime.KeepAlive(g)
		b.StartTimer()
	}
	b.ReportMetric(float64(events)*float64(b.N)/elapsed.Seconds(), "events/s")
	// Events per second of CPU time (user + system, all threads): the
	// single-core rate even when other processes share the machine.
	b.ReportMetric(float64(events)*float64(b.N)/cpu.Seconds(), "events/cpu-s")
	b.ReportMetric(float64(peakHeap)/float64(events), "heap-B/event")
	b.ReportMetric(float64(peakSys)/float64(events), "sys-B/event")
	b.ReportMetric(float64(events), "events")
}

// cpuTime returns the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
