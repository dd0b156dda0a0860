package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
