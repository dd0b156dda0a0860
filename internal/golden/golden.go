// Package golden compares what a test produced with a golden file under
// testdata, or rewrites the file when the test runs with -update.
package golden

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mpitrace/mpitrace/internal/textdiff"
)

// Check compares got with the content of file and reports a line diff when
// they differ. With update it writes got to file instead (creating its
// directory).
func Check(t testing.TB, file, got string, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", file, textdiff.Lines(string(want), got))
	}
}
