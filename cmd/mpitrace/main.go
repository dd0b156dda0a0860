// Command mpitrace records MPI programs and analyses their traces.
//
// See the README and docs/ for the user guide; every command has --help.
package main

import (
	"os"

	"github.com/mpitrace/mpitrace/cmd/mpitrace/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
