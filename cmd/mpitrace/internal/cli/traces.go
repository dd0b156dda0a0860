package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// traceFlags are the flags of every command that reads a trace.
type traceFlags struct {
	Strict bool
	// MaxDiagnostics bounds the diagnostic lines printed (the rest are counted).
	MaxDiagnostics int
}

// openTrace opens a trace directory with an error that says what to do.
// Every command that reads a trace opens it here: reading it shows a
// progress bar on a terminal's stderr (progress.go).
func openTrace(dir string, s *Streams) (*tracefmt.Trace, error) {
	if err := checkTraceDir(dir); err != nil {
		return nil, err
	}
	t, err := tracefmt.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	startProgress(s, t)
	return t, nil
}

// checkTraceDir says what to do when dir is not a directory.
func checkTraceDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if dir == "traces" {
				return fmt.Errorf("no trace directory traces/ here: record one with 'mpitrace record -- mpirun -np 4 ./app', or name the directory")
			}
			return fmt.Errorf("%s: no such trace directory", dir)
		}
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory: name the trace directory that holds the rank-*.mpit files", dir)
	}
	return nil
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

// diagnosticsJSON is a diagnostics table in --json outputs: counts by
// severity (every severity, 0 included) and by code, and the list.
type diagnosticsJSON struct {
	Counts struct {
		Info     int `json:"info"`
		Warning  int `json:"warning"`
		DataLoss int `json:"data_loss"`
		Error    int `json:"error"`
	} `json:"counts"`
	Codes map[string]int `json:"codes"`
	// Elided counts the diagnostics counted but not listed (beyond 1000 of
	// one code).
	Elided int              `json:"elided,omitempty"`
	List   []diagnosticJSON `json:"list"`
}

type diagnosticJSON struct {
	Severity string `json:"severity"` // info, warning, data_loss or error
	Code     string `json:"code"`
	Rank     int    `json:"rank"` // -1: not about one rank
	File     string `json:"file,omitempty"`
	Block    *int   `json:"block,omitempty"`
	Offset   *int64 `json:"offset,omitempty"`
	Message  string `json:"message"`
}

// severityJSON names a severity in JSON.
func severityJSON(s tracefmt.Severity) string {
	return strings.ReplaceAll(s.String(), " ", "_")
}

func newDiagnosticsJSON(d *tracefmt.Diagnostics) *diagnosticsJSON {
	j := &diagnosticsJSON{Codes: map[string]int{}, Elided: d.Elided(), List: []diagnosticJSON{}}
	j.Counts.Info, j.Counts.Warning = d.Count(tracefmt.Info), d.Count(tracefmt.Warning)
	j.Counts.DataLoss, j.Counts.Error = d.Count(tracefmt.DataLoss), d.Count(tracefmt.Error)
	for _, c := range d.Codes() {
		j.Codes[c] = d.CountCode(c)
	}
	for _, x := range d.All() {
		dj := diagnosticJSON{Severity: severityJSON(x.Severity), Code: x.Code, Rank: x.Rank, File: x.File, Message: x.Message}
		if x.Block >= 0 {
			dj.Block = &x.Block
		}
		if x.Offset >= 0 {
			dj.Offset = &x.Offset
		}
		j.List = append(j.List, dj)
	}
	return j
}

// dataLossLine is the line a text summary gives when data was lost, ""
// when none was.
func dataLossLine(d *tracefmt.Diagnostics) string {
	n := d.Count(tracefmt.DataLoss)
	if n == 0 {
		return ""
	}
	s := "s"
	if n == 1 {
		s = ""
	}
	return fmt.Sprintf("Data lost: %d data-loss diagnostic%s (listed on stderr): the figures cover what the logs kept\n", n, s)
}
