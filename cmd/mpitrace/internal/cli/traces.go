package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// traceFlags are the flags of every command that reads a trace.
type traceFlags struct {
	Strict bool
	// MaxDiagnostics bounds the diagnostic lines printed (the rest are counted).
	MaxDiagnostics int
}

// openTrace opens a trace directory with an error that says what to do.
func openTrace(dir string) (*tracefmt.Trace, error) {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if dir == "traces" {
				return nil, fmt.Errorf("no trace directory traces/ here: record one with 'mpitrace record -- mpirun -np 4 ./app', or name the directory")
			}
			return nil, fmt.Errorf("%s: no such trace directory", dir)
		}
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory: name the trace directory that holds the rank-*.mpit files", dir)
	}
	return tracefmt.OpenDir(dir)
}

// reportDiagnostics prints the trace's diagnostics on stderr, one line each,
// and returns the error that decides the exit status: errors always fail,
// data loss fails only with --strict.
func reportDiagnostics(s *Streams, d *tracefmt.Diagnostics, f *traceFlags) error {
	max := f.MaxDiagnostics
	if max <= 0 {
		max = 20
	}
	shown := 0
	for _, x := range d.All() {
		if x.Severity == tracefmt.Info {
			continue
		}
		if shown == max {
			break
		}
		fmt.Fprintf(s.Err, "mpitrace: %s\n", x)
		shown++
	}
	rest := d.Len() - d.Count(tracefmt.Info) - shown
	if rest > 0 {
		fmt.Fprintf(s.Err, "mpitrace: ... and %d more diagnostics\n", rest)
	}
	if n := d.Count(tracefmt.Error); n > 0 {
		return &ExitCodeError{Code: ExitError, Err: fmt.Errorf("the trace has %d errors (see above)", n)}
	}
	if n := d.Count(tracefmt.DataLoss); n > 0 && f.Strict {
		return &ExitCodeError{Code: ExitDataLoss, Err: fmt.Errorf("--strict: the trace lost data (%d data-loss diagnostics, see above)", n)}
	}
	return nil
}
