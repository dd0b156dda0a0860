package cli

import (
	"strings"
	"testing"
)

// Usage errors of instrument and cc come before any work (with or
// without cgo).
func TestInstrumentUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"instrument"}, "instrument takes one source file"},
		{[]string{"instrument", "a.c", "b.c"}, "instrument takes one source file"},
		{[]string{"instrument", "--chance", "1.5", "a.c"}, "--chance 1.5: give a probability from 0 to 1"},
		{[]string{"instrument", "a.c", "--", "-DX"}, "flags after -- are for --preprocess"},
		{[]string{"cc"}, "name the compiler after --"},
		{[]string{"cc", "--chance", "-1", "--", "gcc", "-c", "a.c"}, "--chance -1: give a probability"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != ExitUsage || !strings.Contains(errOut, c.msg) {
			t.Errorf("mpitrace %v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, ExitUsage, c.msg)
		}
	}
}
