package main_test

// Launch setups: --include/--exclude names that are no MPI function.

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordFunctionNames: --include and --exclude name functions of the
// MPI's mpi.h; a name that is none gets one warning line per flag, and the
// run goes on.
func TestRecordFunctionNames(t *testing.T) {
	m := mpis[0]
	m.require(t)
	bin := m.compile(t, "mix")
	dir := t.TempDir()
	out := filepath.Join(dir, "traces")
	r := record(t, out, []string{"--include", "MPI_Send,MPI_Bogus*,MPI_Init", "--exclude", "MPI_recv,MPI_Wtime,Barrier"}, m.launch(2, bin)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var warnings []string
	for _, l := range mpitraceLines(r.stderr) {
		if strings.Contains(l, "warning") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != 2 {
		t.Fatalf("want one warning for --include and one for --exclude, got %q", warnings)
	}
	inc, exc := warnings[0], warnings[1]
	if !strings.Contains(inc, "--include") || !strings.Contains(inc, "MPI_Bogus*") || strings.Contains(inc, "MPI_Send") {
		t.Errorf("--include warning: %s", inc)
	}
	if !strings.Contains(exc, "--exclude") || !strings.Contains(exc, "MPI_recv") || !strings.Contains(exc, "MPI_Recv?") ||
		!strings.Contains(exc, "Barrier") || strings.Contains(exc, "MPI_Wtime") {
		t.Errorf("--exclude warning: %s", exc)
	}
	_, logs := readTrace(t, out)
	for _, l := range logs {
		for _, c := range l.calls {
			if c.fn != "MPI_Send" && c.fn != "MPI_Init" && c.fn != "MPI_Finalize" {
				t.Fatalf("rank %d recorded %s with --include MPI_Send", l.rank, c.fn)
			}
		}
	}
}
