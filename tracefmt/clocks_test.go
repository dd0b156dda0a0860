package tracefmt

import (
	"fmt"
	"maps"
	"reflect"
	"testing"
)

// clockTrace is a trace of headers only: rank r on hosts[r], its clock
// read at MPI_Init as boots[r] + 1e9·r on the real-time clock and 1e9·r
// on the monotonic one ("" host: no keys at all).
func clockTrace(hosts []string, boots []int64, clocks []string) *Trace {
	t := &Trace{Size: len(hosts)}
	for r, h := range hosts {
		hd := NewHeader(r, len(hosts), "run")
		if h != "" {
			hd.Set(KeyHostname, h)
			hd.Set(KeyClock, clocks[r])
			hd.Set(KeyInitRealtimeNS, fmt.Sprint(boots[r]+1e9*int64(r)))
			hd.Set(KeyInitMonotonicNS, fmt.Sprint(1e9*int64(r)))
		}
		t.Files = append(t.Files, RankFile{Rank: r, Header: hd})
	}
	return t
}

// TestClockGroups: ranks of one host name, clock and boot read one clock;
// another boot (a rebooted host, another machine of the same name),
// another host or clock, or a header without the keys do not.
func TestClockGroups(t *testing.T) {
	const boot = int64(1_700_000_000_000_000_000)
	mono := "CLOCK_MONOTONIC"
	for _, c := range []struct {
		name   string
		hosts  []string
		boots  []int64
		clocks []string
		want   [][]int
	}{
		{"one host", []string{"a", "a", "a", "a"}, []int64{boot, boot + 3, boot - 2, boot}, nil, [][]int{{0, 1, 2, 3}}},
		{"two hosts", []string{"a", "b", "a", "b"}, []int64{boot, boot, boot, boot}, nil, [][]int{{0, 2}, {1, 3}}},
		{"alone on its host", []string{"a", "b", "a"}, []int64{boot, boot, boot}, nil, [][]int{{0, 2}}},
		{"one name, two boots", []string{"vm", "vm", "vm", "vm"}, []int64{boot, boot + 3_600e9, boot, boot + 3_600e9 + 1e6}, nil, [][]int{{0, 2}, {1, 3}}},
		{"within the tolerance", []string{"a", "a"}, []int64{boot, boot + BootTolerance}, nil, [][]int{{0, 1}}},
		{"past it", []string{"a", "a"}, []int64{boot, boot + BootTolerance + 1}, nil, nil},
		{"a chain", []string{"a", "a", "a"}, []int64{boot, boot + 2*BootTolerance, boot + BootTolerance}, nil, [][]int{{0, 1, 2}}},
		{"no keys", []string{"", "a", ""}, []int64{boot, boot, boot}, nil, nil},
		{"two clocks", []string{"a", "a", "a"}, []int64{boot, boot, boot}, []string{mono, "CLOCK_REALTIME", mono}, [][]int{{0, 2}}},
	} {
		clocks := c.clocks
		if clocks == nil {
			for range c.hosts {
				clocks = append(clocks, mono)
			}
		}
		if got := clockTrace(c.hosts, c.boots, clocks).ClockGroups(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: groups %v, want %v", c.name, got, c.want)
		}
	}
	// A value that is not a number: no group.
	tr := clockTrace([]string{"a", "a"}, []int64{boot, boot}, []string{mono, mono})
	tr.Files[1].Header.Set(KeyInitMonotonicNS, "x")
	if g := tr.ClockGroups(); g != nil {
		t.Errorf("a bad init_monotonic_ns: groups %v", g)
	}
}

// TestShareOffsets: a group's ranks take rank 0's offset (0) when it is
// one of them, else the first with an offset; ranks of no group keep
// theirs.
func TestShareOffsets(t *testing.T) {
	off := map[int]int64{0: 0, 1: 4_300_000, 2: -120, 3: 7, 4: 900, 5: 1000, 7: 5}
	from := ShareOffsets([][]int{{0, 1, 2}, {3, 4, 6}, {5}, {8, 9}}, off)
	want := map[int]int64{0: 0, 1: 0, 2: 0, 3: 7, 4: 7, 5: 1000, 6: 7, 7: 5}
	if !maps.Equal(off, want) {
		t.Errorf("offsets %v, want %v", off, want)
	}
	if wantFrom := map[int]int{1: 0, 2: 0, 4: 3, 6: 3}; !maps.Equal(from, wantFrom) {
		t.Errorf("taken from %v, want %v", from, wantFrom)
	}
	// Again: the same.
	again := maps.Clone(off)
	if from := ShareOffsets([][]int{{0, 1, 2}, {3, 4, 6}}, again); !maps.Equal(again, off) || len(from) != 4 {
		t.Errorf("a second time: %v from %v", again, from)
	}
	// A group of ranks without offsets: left as it is.
	off = map[int]int64{}
	if from := ShareOffsets([][]int{{1, 2}}, off); len(from) != 0 || len(off) != 0 {
		t.Errorf("no offsets: %v, %v", off, from)
	}
}
