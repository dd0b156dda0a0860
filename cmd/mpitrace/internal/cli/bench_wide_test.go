package cli

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/internal/benchtrace"
)

// BenchmarkWideRanks runs 'mpitrace critpath' and the streamed 'mpitrace
// export --critical=false' on a world of many short ranks
// (benchtrace.Wide: 16,384 ranks of 257 events, MPITRACE_BENCH_RANKS), where
// what a rank costs whatever its length is most of the memory
// (docs/performance.md, "Many short ranks").
//
//	MPITRACE_BENCH_DIR=/tmp/bench go test ./cmd/mpitrace/internal/cli -run '^$' -bench WideRanks -benchtime 1x -cpu 1
func BenchmarkWideRanks(b *testing.B) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"critpath", []string{"critpath", "-o", "CRITPATH"}},
		{"export-stream", []string{"export", "-o", "-", "--critical=false"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			benchtrace.RunShape(b, benchtrace.Wide, func(b *testing.B, dir string) {
				var errb strings.Builder
				args := append([]string{c.args[0], dir}, c.args[1:]...)
				for i, a := range args {
					if a == "CRITPATH" {
						args[i] = filepath.Join(b.TempDir(), "critPath.out")
					}
				}
				if code := run(context.Background(), args, &Streams{In: strings.NewReader(""), Out: io.Discard, Err: &errb}); code != ExitOK {
					b.Fatalf("mpitrace %s: exit status %d: %s", strings.Join(args, " "), code, errb.String())
				}
			})
		})
	}
}
