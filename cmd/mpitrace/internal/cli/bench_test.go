package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/driver"
	"github.com/mpitrace/mpitrace/analysis/fold"
	"github.com/mpitrace/mpitrace/internal/benchtrace"
)

func TestMain(m *testing.M) { benchtrace.Main(m) }

// BenchmarkCritpath runs the whole 'mpitrace critpath TRACEDIR -o FILE'
// command on each benchmark trace (benchtrace.Shapes): decoding,
// reconstruction, the critical path, critPath.out and the summary (to
// io.Discard). It reports what BenchmarkReconstructCritpath reports.
//
//	go test ./cmd/mpitrace/internal/cli -run '^$' -bench Critpath -benchtime 1x -cpu 1,2
func BenchmarkCritpath(b *testing.B) {
	benchtrace.Run(b, func(b *testing.B, dir string) {
		out := filepath.Join(b.TempDir(), "critPath.out")
		var errb strings.Builder
		code := run(context.Background(), []string{"critpath", dir, "-o", out}, &Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errb})
		if code != ExitOK {
			b.Fatalf("mpitrace critpath: exit status %d: %s", code, errb.String())
		}
		if st, err := os.Stat(out); err != nil || st.Size() == 0 {
			b.Fatalf("critPath.out: %v", err)
		}
	})
}

// BenchmarkCritpathMeasured is BenchmarkCritpath with --weights measured:
// the measured weights (a pass over the operations and a copy of them)
// and the wait states, besides the model path the summary compares with.
//
//	go test ./cmd/mpitrace/internal/cli -run '^$' -bench CritpathMeasured -benchtime 1x -cpu 1
func BenchmarkCritpathMeasured(b *testing.B) {
	benchtrace.Run(b, func(b *testing.B, dir string) {
		out := filepath.Join(b.TempDir(), "critPath.out")
		var errb strings.Builder
		code := run(context.Background(), []string{"critpath", dir, "-o", out, "--weights", "measured"}, &Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errb})
		if code != ExitOK {
			b.Fatalf("mpitrace critpath --weights measured: exit status %d: %s", code, errb.String())
		}
	})
}

// BenchmarkExport runs the whole 'mpitrace export TRACEDIR -o FILE'
// command on each benchmark trace: decoding, reconstruction and the
// critical path (the first pass), then the second pass that writes the
// JSON to a temporary file, removed after each run. It reports what
// BenchmarkCritpath reports, and the file's size in bytes per event.
//
//	go test ./cmd/mpitrace/internal/cli -run '^$' -bench Export -benchtime 1x -cpu 1,2
func BenchmarkExport(b *testing.B) {
	benchtrace.Run(b, func(b *testing.B, dir string) {
		out := filepath.Join(b.TempDir(), "trace.json")
		var errb strings.Builder
		code := run(context.Background(), []string{"export", dir, "-o", out}, &Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errb})
		if code != ExitOK {
			b.Fatalf("mpitrace export: exit status %d: %s", code, errb.String())
		}
		st, err := os.Stat(out)
		if err != nil || st.Size() == 0 {
			b.Fatalf("trace.json: %v", err)
		}
		b.Logf("trace.json: %d bytes", st.Size())
		os.Remove(out)
	})
}

// BenchmarkExportStream runs 'mpitrace export TRACEDIR -o FILE
// --critical=false' on each benchmark trace: the streamed export, whose
// peak heap does not grow with the trace (docs/performance.md, "Export").
// The JSON goes to a discarding writer (it is 210 bytes an event).
//
//	go test ./cmd/mpitrace/internal/cli -run '^$' -bench ExportStream -benchtime 1x -cpu 1
func BenchmarkExportStream(b *testing.B) {
	benchtrace.Run(b, func(b *testing.B, dir string) {
		var errb strings.Builder
		var out countingWriter
		code := run(context.Background(), []string{"export", dir, "-o", "-", "--critical=false"}, &Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != ExitOK || out == 0 {
			b.Fatalf("mpitrace export --critical=false: exit status %d, %d bytes: %s", code, out, errb.String())
		}
		b.Logf("trace.json: %d bytes", out)
	})
}

// countingWriter counts and discards what is written.
type countingWriter int64

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}

// BenchmarkCheck runs 'mpitrace check TRACEDIR --baseline FILE
// --write-baseline' on each benchmark trace: the profile per MPI function
// (one pass), then decoding, reconstruction, the critical path and its
// summary (a second pass). Comparing with a baseline reads the trace the
// same way; the comparison itself is a few dozen figures.
//
//	go test ./cmd/mpitrace/internal/cli -run '^$' -bench Check -benchtime 1x -cpu 1,2
func BenchmarkCheck(b *testing.B) {
	benchtrace.Run(b, func(b *testing.B, dir string) {
		file := filepath.Join(b.TempDir(), "baseline.json")
		var errb strings.Builder
		code := run(context.Background(), []string{"check", dir, "--baseline", file, "--write-baseline"}, &Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errb})
		if code != ExitOK {
			b.Fatalf("mpitrace check: exit status %d: %s", code, errb.String())
		}
	})
}

// BenchmarkStats runs 'mpitrace stats TRACEDIR' on each benchmark trace:
// one pass that profiles every call by function and by call site.
//
//	go test ./cmd/mpitrace/internal/cli -run '^$' -bench Stats -benchtime 1x -cpu 1,2
func BenchmarkStats(b *testing.B) {
	benchtrace.Run(b, func(b *testing.B, dir string) {
		var errb strings.Builder
		code := run(context.Background(), []string{"stats", dir}, &Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errb})
		if code != ExitOK {
			b.Fatalf("mpitrace stats: exit status %d: %s", code, errb.String())
		}
	})
}

// BenchmarkFold times the fold alone on each benchmark trace's critical
// path as critpath finds it (the streaming replay's, read back from its
// spill: the reading counts), for the summary's repetition line and the
// folded picture: every level it tries, from the path's steps to the
// fold. It reports the path's steps folded per second and per CPU-second.
//
//	go test ./cmd/mpitrace/internal/cli -run '^$' -bench Fold -benchtime 3x -cpu 1
func BenchmarkFold(b *testing.B) {
	for _, shape := range benchtrace.Shapes {
		b.Run(shape.Name, func(b *testing.B) {
			dir, _ := shape.Dir(b)
			a, err := analyzePath(dir, driver.Options{Stream: true}, &Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
			if err != nil || a.PathErr != nil || a.Steps == nil {
				b.Fatalf("critical path of %s: %v %v", dir, err, a.PathErr)
			}
			defer a.Close()
			if a.Path != nil {
				b.Fatalf("%s: the path came from the graph, not the replay", dir)
			}
			b.ResetTimer()
			cpu := benchtrace.CPUTime()
			var f *critpath.Folded
			for i := 0; i < b.N; i++ {
				if f, err = a.Steps.Fold(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu = benchtrace.CPUTime() - cpu
			b.ReportMetric(float64(a.Steps.NumSteps)*float64(b.N)/b.Elapsed().Seconds(), "steps/s")
			b.ReportMetric(float64(a.Steps.NumSteps)*float64(b.N)/cpu.Seconds(), "steps/cpu-s")
			b.Logf("%s: %d steps fold to %d vertices at level %d", shape.Name, a.Steps.NumSteps, fold.Leaves(f.Nodes), f.Level)
		})
	}
}
