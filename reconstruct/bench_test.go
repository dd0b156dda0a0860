package reconstruct_test

import (
	"runtime"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/internal/benchtrace"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

func TestMain(m *testing.M) { benchtrace.Main(m) }

// BenchmarkReconstructCritpath decodes each benchmark trace
// (benchtrace.Shapes: a 100-rank halo exchange and a one-rank run whose
// critical path has a step per call), reconstructs its task graph and
// computes its critical path, end to end. It reports events per second of
// wall time and of CPU time, and peak memory per event: heap in use (above
// what was in use before) and memory held from the OS.
//
//	go test ./reconstruct -run '^$' -bench ReconstructCritpath -benchtime 1x -cpu 1,2
func BenchmarkReconstructCritpath(b *testing.B) {
	logged := map[string]bool{}
	benchtrace.Run(b, func(b *testing.B, dir string) {
		_, g, diags := buildDir(b, dir, reconstruct.Options{})
		p, err := critpath.Compute(g, latency.Default())
		if err != nil {
			b.Fatal(err)
		}
		if reconstruct.HasErrors(diags) || p.NumVertices() < 3 {
			b.Fatalf("diagnostics %s, path of %d vertices", diags.Summary(), p.NumVertices())
		}
		if !logged[b.Name()] {
			logged[b.Name()] = true
			b.Logf("%d nodes (%d ops, %d collectives), %d messages; path %d vertices, %.3f ms; diagnostics: %s",
				g.NumNodes(), g.NumOps(), g.NumCollectives(), g.NumMessages(), p.NumVertices(), p.Length/1e6, diags.Summary())
		}
		runtime.KeepAlive(g)
	})
}

// modelWeights weigh a replay with a latency model as critpath does.
type modelWeights struct{ m *latency.Model }

func (w modelWeights) Message(bytes int64) float64 { return w.m.P2P(bytes) }
func (w modelWeights) Collective(c taskgraph.CollectiveInfo) float64 {
	ns, _ := w.m.CollectiveOrFallback(c.Name, c.Bytes, c.Procs)
	return ns
}

// BenchmarkReplayCritpath is BenchmarkReconstructCritpath's work done by
// the streaming replay (reconstruct.ReplaySources): the same traces, the
// same path, without the task graph.
//
//	go test ./reconstruct -run '^$' -bench 'ReconstructCritpath|ReplayCritpath' -benchtime 1x
func BenchmarkReplayCritpath(b *testing.B) {
	benchtrace.Run(b, replayCritpath(map[string]bool{}))
}

// BenchmarkReplayWide is BenchmarkReplayCritpath on benchtrace.Wide:
// 16,384 ranks of 257 events, what each rank costs whatever its length.
//
//	go test ./reconstruct -run '^$' -bench ReplayWide -benchtime 1x
func BenchmarkReplayWide(b *testing.B) {
	benchtrace.RunShape(b, benchtrace.Wide, replayCritpath(map[string]bool{}))
}

// BenchmarkReplayGroups is BenchmarkReplayCritpath replayed in two
// groups (reconstruct.ReplayGroups), one per core.
//
//	go test ./reconstruct -run '^$' -bench 'ReplayCritpath|ReplayGroups' -benchtime 1x
func BenchmarkReplayGroups(b *testing.B) {
	benchtrace.Run(b, replayIn(2, map[string]bool{}))
	benchtrace.RunShape(b, benchtrace.Wide, replayIn(2, map[string]bool{}))
}

func replayCritpath(logged map[string]bool) func(b *testing.B, dir string) {
	return replayIn(1, logged)
}

func replayIn(groups int, logged map[string]bool) func(b *testing.B, dir string) {
	return func(b *testing.B, dir string) {
		srcs, done := spooledSources(b, dir)
		defer done()
		res, err := reconstruct.ReplayGroups(srcs, modelWeights{latency.Default()}, reconstruct.Options{}, groups)
		if err != nil {
			b.Fatal(err)
		}
		defer res.Close()
		if !logged[b.Name()] {
			logged[b.Name()] = true
			b.Logf("path %d vertices, %.3f ms; read ahead at most %d operations", res.NumSteps, res.Length/1e6, res.MaxQueued)
		}
	}
}

// BenchmarkReconstructMeasured is BenchmarkReconstructCritpath under
// measured weights: the graph, then critpath.ComputeMeasured (the
// benchmark traces have no clock offsets).
//
//	go test ./reconstruct -run '^$' -bench 'ReconstructMeasured|ReplayMeasured' -benchtime 1x
func BenchmarkReconstructMeasured(b *testing.B) {
	benchtrace.Run(b, func(b *testing.B, dir string) {
		_, g, _ := buildDir(b, dir, reconstruct.Options{})
		p, err := critpath.ComputeMeasured(g, nil)
		if err != nil || p.NumVertices() < 3 {
			b.Fatal(err)
		}
		runtime.KeepAlive(g)
	})
}

// BenchmarkReplayMeasured is BenchmarkReconstructMeasured's path found by
// reconstruct.ReplayMeasured, without the graph.
func BenchmarkReplayMeasured(b *testing.B) {
	benchtrace.Run(b, func(b *testing.B, dir string) {
		srcs, done := spooledSources(b, dir)
		defer done()
		res, err := reconstruct.ReplayMeasured(srcs, nil, reconstruct.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if res.NumSteps < 3 {
			b.Fatalf("a path of %d steps", res.NumSteps)
		}
		res.Close()
	})
}
