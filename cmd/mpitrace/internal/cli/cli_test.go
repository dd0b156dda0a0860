package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// runCLI runs mpitrace with args and returns exit status, stdout, stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	if strings.Contains(errb.String(), "goroutine ") || strings.Contains(errb.String(), "panic:") {
		t.Fatalf("mpitrace %v panicked:\n%s", args, errb.String())
	}
	return code, out.String(), errb.String()
}

// lines counts stderr's lines.
func lines(s string) int { return strings.Count(strings.TrimRight(s, "\n"), "\n") + 1 }

// writeTrace writes a small 2-rank trace and returns its directory.
func writeTrace(t *testing.T) string {
	t.Helper()
	b := testgen.New(2)
	b.Options.BlockSize = 256 // many blocks, to damage one in the middle
	for r := 0; r < 2; r++ {
		rk := b.Rank(r)
		rk.Call("MPI_Init")
		for i := 0; i < 200; i++ {
			rk.Send(int64(1-r), 5, 64)
			rk.Recv(int64(1-r), 5, 64)
		}
		rk.Barrier()
		rk.Call("MPI_Finalize")
	}
	return saveTrace(t, b)
}

// saveTrace writes b's trace into a new directory and returns it.
func saveTrace(t *testing.T, b *testgen.Builder) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "traces")
	if err := b.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReadCommandsOnGoodTrace(t *testing.T) {
	dir := writeTrace(t)
	code, out, errs := runCLI(t, "stats", dir)
	if code != 0 || errs != "" || !strings.Contains(out, "MPI_Send") {
		t.Fatalf("stats: %d %q %q", code, out, errs)
	}
	code, out, errs = runCLI(t, "dump", dir, "--rank", "1")
	if code != 0 || errs != "" || !strings.HasPrefix(out, "rank 1\n") || strings.Count(out, " Send fn=MPI_Send") != 200 {
		t.Fatalf("dump --rank 1: %d %q", code, errs)
	}
	code, out, _ = runCLI(t, "stats", dir, "--json")
	if code != 0 || !strings.Contains(out, `"aggregate"`) {
		t.Fatalf("stats --json: %d %q", code, out)
	}
}

// Unreadable input: one line naming the file, rank or flag, and a
// documented status; never a panic.
func TestUnreadableInput(t *testing.T) {
	tmp := t.TempDir()
	notTrace := filepath.Join(tmp, "not")
	os.MkdirAll(notTrace, 0o755)
	os.WriteFile(filepath.Join(notTrace, "rank-00000.mpit"), []byte("this is not a trace at all"), 0o644)
	wrongVersion := filepath.Join(tmp, "version")
	os.MkdirAll(wrongVersion, 0o755)
	os.WriteFile(filepath.Join(wrongVersion, "rank-00000.mpit"), append([]byte(spec.Magic), 99, 0), 0o644)
	empty := filepath.Join(tmp, "empty")
	os.MkdirAll(empty, 0o755)
	file := filepath.Join(tmp, "file")
	os.WriteFile(file, []byte("x"), 0o644)

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"not a trace", []string{"dump", notTrace}, 1, "not an mpitrace file?"},
		{"wrong version", []string{"stats", wrongVersion}, 1, "unsupported format version 99"},
		{"no rank logs", []string{"stats", empty}, 1, "no rank-*.mpit files"},
		{"not a directory", []string{"stats", file}, 1, "is not a directory"},
		{"missing directory", []string{"dump", filepath.Join(tmp, "nope")}, 1, "no such trace directory"},
		{"bad flag", []string{"stats", "--bogus", empty}, 2, "unknown flag: --bogus"},
		{"bad --top", []string{"stats", "--top", "-1", empty}, 2, "--top"},
		{"too many args", []string{"dump", empty, empty}, 2, "accepts at most 1 arg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Fatalf("mpitrace %v: exit %d, stderr %q; want %d and %q", tc.args, code, errs, tc.code, tc.want)
			}
			if tc.code == 1 && lines(errs) != 1 {
				t.Errorf("want one line, got:\n%s", errs)
			}
			if !strings.HasPrefix(errs, "mpitrace: ") {
				t.Errorf("message does not start with mpitrace: %q", errs)
			}
		})
	}
}

func TestDamagedTrace(t *testing.T) {
	t.Run("truncated", func(t *testing.T) {
		dir := writeTrace(t)
		p := filepath.Join(dir, "rank-00001.mpit")
		b, _ := os.ReadFile(p)
		os.WriteFile(p, b[:len(b)*2/3], 0o644)
		code, out, errs := runCLI(t, "dump", dir, "--rank", "1")
		if code != 0 || !strings.Contains(errs, "data loss") || !strings.Contains(errs, "rank 1") {
			t.Fatalf("truncated: exit %d, stderr %q", code, errs)
		}
		if n := strings.Count(out, " Send fn=MPI_Send"); n == 0 || n >= 200 {
			t.Fatalf("truncated: %d sends read, want the complete blocks' (some, not all)", n)
		}
		if code, _, _ := runCLI(t, "stats", "--strict", dir); code != ExitDataLoss {
			t.Fatalf("stats --strict on a truncated trace: exit %d, want %d", code, ExitDataLoss)
		}
	})
	t.Run("bit flip", func(t *testing.T) {
		dir := writeTrace(t)
		p := filepath.Join(dir, "rank-00000.mpit")
		b, _ := os.ReadFile(p)
		b[len(b)/2] ^= 0x10
		os.WriteFile(p, b, 0o644)
		code, out, errs := runCLI(t, "dump", dir, "--rank", "0")
		if code != 0 || !strings.Contains(errs, "rank 0: block ") || !strings.Contains(errs, "crc") {
			t.Fatalf("bit flip: exit %d, stderr %q", code, errs)
		}
		if !strings.Contains(out, "MPI_Finalize") {
			t.Fatalf("bit flip: the blocks after the damaged one were not read")
		}
	})
}

// Flags reach the options: the commands are tested through runF.
func TestFlagParsing(t *testing.T) {
	s := &Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
	var got *recordOptions
	cmd := newRecordCmd(s, func(_ context.Context, o *recordOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--out", "x", "--exclude", "MPI_Wtime", "--buffer", "1M", "--clocksync", "0", "--", "mpirun", "-np", "2", "./a"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Out != "x" || got.Exclude != "MPI_Wtime" || got.Buffer != "1M" || got.ClockSync != 0 ||
		strings.Join(got.Argv, " ") != "mpirun -np 2 ./a" {
		t.Fatalf("record options: %+v", got)
	}
	var st *statsOptions
	sc := newStatsCmd(s, func(_ context.Context, o *statsOptions) error { st = o; return nil })
	sc.SetArgs([]string{"--json", "--per-rank", "--top", "5", "--strict"})
	if err := sc.Execute(); err != nil {
		t.Fatal(err)
	}
	if st.Dir != "traces" || !st.JSON || !st.PerRank || st.Top != 5 || !st.Strict {
		t.Fatalf("stats options: %+v", st)
	}
	var dp *dumpOptions
	dc := newDumpCmd(s, func(_ context.Context, o *dumpOptions) error { dp = o; return nil })
	dc.SetArgs([]string{"run2", "--rank", "1,3", "--rank", "5"})
	if err := dc.Execute(); err != nil {
		t.Fatal(err)
	}
	if dp.Dir != "run2" || dp.Ranks.String() != "1,3,5" {
		t.Fatalf("dump options: %+v", dp)
	}
	if _, err := parseSize("3"); err == nil {
		t.Errorf("parseSize accepted a buffer below 4k")
	}
	if v, err := parseSize("256k"); err != nil || v != 256<<10 {
		t.Errorf("parseSize(256k) = %d, %v", v, err)
	}
}

// An unknown command is a usage error (exit 2) said in one line that names
// it and what to do, at the top level, under recorder, and to help.
func TestUnknownCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `mpitrace: unknown command "frobnicate": the commands are calibrate, cc, check, critpath, dot, dump, export, instrument, loops, record, recorder, regions, stats, wrap ('mpitrace --help' says more)`},
		{[]string{"frobnicate", "traces"}, `mpitrace: unknown command "frobnicate": the commands are`},
		{[]string{"critpth", "traces"}, `mpitrace: unknown command "critpth": did you mean critpath? ('mpitrace --help' lists the commands)`},
		{[]string{"recorder", "frob"}, `mpitrace: unknown command "frob" for "mpitrace recorder": the commands are build, include ('mpitrace recorder --help' says more)`},
		{[]string{"help", "frobnicate"}, `mpitrace: unknown command "frobnicate": the commands are`},
	} {
		code, out, errs := runCLI(t, c.args...)
		if code != ExitUsage || out != "" || lines(errs) != 1 || !strings.HasPrefix(errs, c.want) {
			t.Errorf("mpitrace %v: exit %d, stdout %.60q, stderr %q; want %d and one line %q", c.args, code, out, errs, ExitUsage, c.want)
		}
	}
	// Without a command, the help, successfully.
	for _, args := range [][]string{{}, {"recorder"}, {"help"}, {"help", "dot"}, {"--help"}} {
		if code, out, errs := runCLI(t, args...); code != 0 || !strings.Contains(out, "Usage:") || errs != "" {
			t.Errorf("mpitrace %v: exit %d, stderr %q", args, code, errs)
		}
	}
}
