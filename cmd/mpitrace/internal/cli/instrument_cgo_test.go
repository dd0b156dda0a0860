//go:build cgo

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInstrumentCommand(t *testing.T) {
	t.Setenv("MPITRACE_CACHE", t.TempDir())
	dir := t.TempDir()
	src := filepath.Join(dir, "k.c")
	text := "int f(int n) {\n\tint s = 0;\n\tfor (int i = 0; i < n; i++)\n\t\ts += i;\n\treturn s;\n}\n"
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "instrument", "--chance", "0.25", src)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.HasPrefix(out, "#include \"mpitrace.h\"\n#line 1 \""+src+"\"\n") ||
		!strings.Contains(out, "MPITRACE_LOOP(mpitrace_l3_2, \""+src+"\", 3, 2); for") ||
		!strings.Contains(out, "{ MPITRACE_ITER(mpitrace_i3_2, mpitrace_l3_2, 0.25); s += i; } }") {
		t.Errorf("unexpected output:\n%s", out)
	}
	dst := filepath.Join(dir, "k.inst.c")
	if code, _, errOut := runCLI(t, "instrument", "-o", dst, src); code != 0 {
		t.Fatalf("-o: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(dst); string(b) != strings.Replace(out, "0.25", "0.01", 1) {
		t.Errorf("-o wrote\n%s", b)
	}
	if code, _, errOut := runCLI(t, "instrument", filepath.Join(dir, "x.f90")); code != ExitUsage || !strings.Contains(errOut, "not a C or C++ source") {
		t.Errorf("a Fortran file: exit %d, %q", code, errOut)
	}
	// cc passes the compiler's status on.
	if code, _, _ := runCLI(t, "cc", "--", "false"); code != 1 {
		t.Errorf("cc -- false: exit %d, want 1", code)
	}
	fake := filepath.Join(dir, "fakecc")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nkill -TERM $$\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := runCLI(t, "cc", "--", fake, "-c", src); code != 128+15 {
		t.Errorf("cc with a compiler killed by SIGTERM: exit %d, want 143", code)
	}
	if code, _, errOut := runCLI(t, "cc", "--", "no-such-compiler-xyz", "-c", src); code != 127 || !strings.Contains(errOut, "no-such-compiler-xyz") {
		t.Errorf("cc with a missing compiler: exit %d, %q; want 127", code, errOut)
	}
}
