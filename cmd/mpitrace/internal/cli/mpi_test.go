package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestProcessorShare: a process of the job runs on its share of its
// node's processors, or on fewer when the launcher bound it to fewer,
// unless the user chose or it is alone.
func TestProcessorShare(t *testing.T) {
	for _, c := range []struct {
		local            int
		set              bool
		online, affinity int
		want             int
	}{
		{2, false, 2, 2, 1},
		{3, false, 2, 2, 1},    // more processes than processors
		{4, false, 64, 64, 16}, // four processes on a node of 64
		{3, false, 64, 64, 21},
		{1, false, 64, 64, 0},  // alone on its node
		{4, true, 64, 64, 0},   // GOMAXPROCS set by the user
		{4, false, 64, 16, 16}, // bound by the launcher to a socket of 16
		{64, false, 64, 32, 1}, // to a socket of 32 that 32 processes share
		{4, false, 64, 2, 2},   // to 2 cores
		{4, false, 0, 64, 0},   // the node's processors unknown
		{0, false, 64, 64, 0},  // no count
		{64, false, 8, 8, 1},   // never 0
		{2, false, 3, 3, 1},    // rounded down
		{2, false, 2, 1, 1},    // bound to one processor
		{8, false, 128, 128, 16},
	} {
		if got := processorShare(c.local, c.set, c.online, c.affinity); got != c.want {
			t.Errorf("processorShare(%d, %v, %d, %d) = %d, want %d", c.local, c.set, c.online, c.affinity, got, c.want)
		}
	}
}

// TestOnlineCPUs reads Linux's list of online processors.
func TestOnlineCPUs(t *testing.T) {
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
		if got := onlineCPUs(f); got != want {
			t.Errorf("onlineCPUs(%q) = %d, want %d", text, got, want)
		}
	}
	if got := onlineCPUs(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("onlineCPUs of a missing file = %d", got)
	}
}
