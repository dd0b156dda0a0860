package driver

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCPUsListed reads Linux's list of online processors.
func TestCPUsListed(t *testing.T) {
	dir := t.TempDir()
	for text, want := range map[string]int{
		"0\n":          1,
		"0-1\n":        2,
		"0-3,6\n":      5,
		"0-3,8-11\n":   8,
		"0,2,4\n":      3,
		"":             0,
		"x\n":          0,
		"3-1\n":        0,
		"0-\n":         0,
		"-1\n":         0,
		"0-63,128-191": 128,
	} {
		f := filepath.Join(dir, "online")
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := cpusListed(f); got != want {
			t.Errorf("cpusListed(%q) = %d, want %d", text, got, want)
		}
	}
	if got := cpusListed(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("onlineCPUs of a missing file = %d", got)
	}
}
