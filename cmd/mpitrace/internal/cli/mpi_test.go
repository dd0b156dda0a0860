package cli

import "testing"

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
