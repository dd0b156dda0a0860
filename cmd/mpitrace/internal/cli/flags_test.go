package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/analysis/latency"
)

// outputOf parses args with the command's flags and returns where its
// output goes.
func outputOf(t *testing.T, name string, args ...string) string {
	t.Helper()
	s := &Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
	var got string
	var cmd *cobra.Command
	switch name {
	case "record":
		cmd = newRecordCmd(s, func(_ context.Context, o *recordOptions) error { got = o.Out; return nil })
		args = append(args, "--", "mpirun", "./a")
	case "critpath":
		cmd = newCritpathCmd(s, func(_ context.Context, o *critpathOptions) error { got = o.Out; return nil })
	case "calibrate":
		cmd = newCalibrateCmd(s, func(_ context.Context, o *calibrateOptions) error { got = o.Out; return nil })
		args = append(args, "--", "mpirun", "-np", "2")
	case "dot":
		cmd = newDotCmd(s, func(_ context.Context, o *dotOptions) error { got = o.Output; return nil })
	case "wrap":
		cmd = newWrapCmd(s, func(_ context.Context, o *wrapOptions) error { got = o.Output; return nil })
		args = append(args, "a.w")
	default:
		t.Fatalf("no command %s", name)
	}
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return got
}

// Every command that writes a file spells its flag -o/--output; --out, the
// spelling record, critpath and calibrate had, still works.
func TestOutputFlagSpelling(t *testing.T) {
	for _, name := range []string{"record", "critpath", "calibrate", "dot", "wrap"} {
		for _, spelling := range [][]string{{"-o", "x"}, {"--output", "x"}, {"--output=x"}, {"--out", "x"}, {"--out=x"}, {"-ox"}} {
			if got := outputOf(t, name, spelling...); got != "x" {
				t.Errorf("%s %v: output %q, want x", name, spelling, got)
			}
		}
		code, out, _ := runCLI(t, name, "--help")
		if code != 0 || !strings.Contains(out, "-o, --output ") || strings.Contains(out, "--out ") {
			t.Errorf("%s --help: exit %d; want -o, --output and no --out:\n%s", name, code, out)
		}
	}
}

// An empty -o is a usage error where the output has a default file.
func TestOutputFlagEmpty(t *testing.T) {
	for _, args := range [][]string{{"critpath", writeTrace(t), "-o", ""}, {"calibrate", "-o", "", "--", "mpirun", "-np", "2"}} {
		code, out, errs := runCLI(t, args...)
		if code != ExitUsage || out != "" || !strings.HasPrefix(errs, "mpitrace: -o needs a file name (or - for stdout)\nusage: ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}

// --out is deprecated: one warning line on stderr, nothing on stdout.
func TestOutputFlagDeprecated(t *testing.T) {
	dir := writeTrace(t)
	file := filepath.Join(t.TempDir(), "cp.out")
	code, out, errs := runCLI(t, "critpath", dir, "--out", file)
	if code != 0 || errs != "mpitrace: warning: --out is deprecated: use -o or --output\n" {
		t.Fatalf("critpath --out: exit %d, stderr %q", code, errs)
	}
	if strings.Contains(out, "deprecated") || !strings.Contains(out, "written to "+file) {
		t.Errorf("critpath --out: stdout %q", out)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("critpath --out did not write the file: %v", err)
	}
	if code, _, errs := runCLI(t, "critpath", dir, "-o", file); code != 0 || errs != "" {
		t.Errorf("critpath -o: exit %d, stderr %q", code, errs)
	}
}

// calibrate -o - writes the model on stdout and the fits on stderr.
func TestCalibrateWriteModel(t *testing.T) {
	m := latency.Default()
	var out, errb bytes.Buffer
	s := &Streams{Out: &out, Err: &errb}
	if err := writeModel(s, "-", m, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := latency.Read(bytes.NewReader(out.Bytes())); err != nil {
		t.Fatalf("stdout is not a model: %v\n%.200s", err, out.String())
	}
	if !strings.Contains(errb.String(), "latency model") || strings.Contains(errb.String(), "wrote ") {
		t.Errorf("stderr: %q", errb.String())
	}

	out.Reset()
	errb.Reset()
	file := filepath.Join(t.TempDir(), "model.json")
	if err := writeModel(s, file, m, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := latency.Load(file); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "latency model") || !strings.Contains(out.String(), "wrote "+file) || errb.Len() != 0 {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}
}
