package main_test

// Launch setups: the launcher behind prefix commands or inside a shell
// script, MPMD command lines, and --include/--exclude names that are no MPI
// function.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeScript writes an executable script into dir.
func writeScript(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// recordMixed records argv, which must run fixtures/programs/mix.c on np
// ranks somehow, and checks that the program's output is plain's and that
// every rank's log holds every call.
func recordMixed(t *testing.T, dir string, np int, plain result, argv ...string) {
	t.Helper()
	out := filepath.Join(dir, "traces")
	r := record(t, out, nil, argv...)
	if r.code != 0 {
		t.Fatalf("record exited %d\nstderr:\n%s", r.code, r.stderr)
	}
	if !slices.Equal(sortedLines(r.stdout), sortedLines(plain.stdout)) {
		t.Fatalf("the program's output changed under record:\nrecorded:\n%s\nplain:\n%s", r.stdout, plain.stdout)
	}
	if lines := mpitraceLines(r.stderr); len(lines) != 1 || !strings.Contains(lines[0], fmt.Sprintf("%d rank logs in ", np)) {
		t.Errorf("want only the closing line from mpitrace, got %q", lines)
	}
	checkMixTrace(t, out, np)
}

// checkMixTrace reads the trace of a run of mix.c on np ranks and checks
// every rank's calls.
func checkMixTrace(t *testing.T, out string, np int) {
	t.Helper()
	tr, logs := readTrace(t, out)
	if tr.Size != np || len(logs) != np {
		t.Fatalf("world size %d, %d rank logs; want %d", tr.Size, len(logs), np)
	}
	checkMix(t, np, logs)
}

// TestRecordLauncherFound: the launcher is not the first word of the
// command. record finds it after prefix commands and inside shell scripts,
// builds the recorder for the launcher's MPI (the default mpicc here is
// Open MPI's, so MPICH runs fail when it guesses wrong) and records every
// rank.
func TestRecordLauncherFound(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			bin := m.compile(t, "mix")
			launch := strings.Join(m.launch(2, bin), " ")
			plain := run(t, t.TempDir(), m.launch(2, bin)...)
			if plain.code != 0 {
				t.Fatalf("without the recorder: exit %d\n%s", plain.code, plain.stderr)
			}
			for _, tc := range []struct {
				name string
				// both: run under Open MPI too. Open MPI is the default MPI
				// here, so its runs would succeed even with a wrong guess;
				// a few check the command is rewritten where the launcher
				// is.
				both bool
				argv func(dir string) []string
			}{
				{"env", false, func(string) []string { return append([]string{"env", "OMP_NUM_THREADS=1"}, m.launch(2, bin)...) }},
				{"env-u-nice", true, func(string) []string {
					return append([]string{"env", "-u", "NO_SUCH_VAR", "A=B", "nice", "-n", "5"}, m.launch(2, bin)...)
				}},
				{"time-stdbuf", false, func(string) []string { return append([]string{"time", "-p", "stdbuf", "-oL"}, m.launch(2, bin)...) }},
				{"taskset-chrt-ionice-setsid", false, func(string) []string {
					return append([]string{"taskset", "-c", "0,1", "chrt", "-o", "0", "ionice", "-c", "2", "-n", "7", "setsid", "-w"}, m.launch(2, bin)...)
				}},
				{"script", true, func(dir string) []string {
					// The launcher is in a variable; the program is the
					// script's argument.
					launcher := m.launch(2, bin)
					text := fmt.Sprintf("#!/bin/sh\n# runs the job\nset -e\nMPIRUN=%s\nNP=2\n\"$MPIRUN\" %s \\\n  -np $NP \"$@\"\n",
						launcher[0], strings.Join(launcher[1:len(launcher)-3], " "))
					return []string{writeScript(t, dir, "run.sh", text), bin}
				}},
				{"bash-c", false, func(string) []string { return []string{"bash", "-c", "exec " + launch} }},
				{"sh-script", false, func(dir string) []string {
					text := "echo starting >&2\nif true; then\n  env OMP_NUM_THREADS=1 " + launch + " </dev/null\nfi\n"
					return []string{"sh", writeScript(t, dir, "job.sh", text)}
				}},
			} {
				if m.name == "openmpi" && !tc.both {
					continue
				}
				t.Run(tc.name, func(t *testing.T) {
					dir := t.TempDir()
					recordMixed(t, dir, 2, plain, tc.argv(dir)...)
				})
			}
		})
	}
}

// TestRecordMPMD: every context of an MPMD command line is recorded (Open
// MPI's -x applies to its own context only), and the MPI is found from the
// context's programs when the first one is no MPI program.
func TestRecordMPMD(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			bin := m.compile(t, "mix")
			dir := t.TempDir()
			// A second program: the same one under another name.
			other := filepath.Join(dir, "mix2")
			b, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(other, b, 0o755); err != nil {
				t.Fatal(err)
			}
			argv := append(m.launch(1, bin), ":", "-np", "2", other)
			plain := run(t, dir, argv...)
			if plain.code != 0 {
				t.Fatalf("without the recorder: exit %d\n%s", plain.code, plain.stderr)
			}
			recordMixed(t, dir, 3, plain, argv...)
		})
	}
}

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

// TestAnalysisUnderLauncher: 'mpirun -np 3 mpitrace critpath ...' (the
// analysis started as an MPI job by mistake) stops every process with
// status 2 under both MPIs, writes no critPath.out, and says why in one
// line, not three.
func TestAnalysisUnderLauncher(t *testing.T) {
	trace, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "traces", "v5", "stencil"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			dir := t.TempDir()
			out := filepath.Join(dir, "critPath.out")
			r := run(t, dir, m.launch(3, mpitraceBin, "critpath", trace, "-o", out)...)
			if r.code != 2 {
				t.Errorf("exit status %d, want 2; stderr:\n%s", r.code, r.stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("critPath.out written by a process of the job")
			}
			if lines := mpitraceLines(r.stderr); len(lines) != 1 || !strings.Contains(lines[0], "as one of 3 processes") {
				t.Errorf("mpitrace's lines %q, want one saying the analysis runs as one process", lines)
			}
		})
	}
}
