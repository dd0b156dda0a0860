// Command genheader writes recorder/c/mpit_events.h from the event spec.
// It runs from `go generate ./recorder`.
package main

import (
	"fmt"
	"os"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

func main() {
	if err := os.WriteFile("c/mpit_events.h", spec.CHeader(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genheader:", err)
		os.Exit(1)
	}
}
