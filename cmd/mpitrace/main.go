// Command mpitrace records MPI programs and analyses their traces.
//
// See the README and docs/ for the user guide; every command has --help.
package main

import (
	"os"
	"runtime/debug"

	"github.com/mpitrace/mpitrace/cmd/mpitrace/internal/cli"
)

func main() {
	// The analyses hold little but what is in flight, and memory is what
	// limits them on large traces: a collection when the heap has grown by
	// half rather than doubled costs them 2 to 10% more CPU time and saves
	// 9 to 23% of their peak (docs/performance.md). GOGC, when set, decides.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	os.Exit(cli.Main(os.Args[1:]))
}
