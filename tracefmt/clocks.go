package tracefmt

import (
	"cmp"
	"slices"
	"strconv"
)

// Ranks that read one clock.
//
// The recorder measures each rank's clock offset against rank 0's at
// MPI_Init (and MPI_Finalize), by messages: on a loaded host the
// measurement errs by what a process waits for a core, milliseconds
// under an MPI that polls. Yet processes of one host read one clock (the
// kernel's CLOCK_MONOTONIC): between them the offset is 0, exactly. A
// header says where its rank ran (hostname), which clock it read (clock),
// and both clocks read at MPI_Init (init_realtime_ns, init_monotonic_ns):
// their difference is the host's boot time on the real-time clock, the
// same for every process of one boot of one host, and telling apart two
// machines that share a host name (virtual machines) or one host
// rebooted.

// BootTolerance is how far two ranks' boot times (init_realtime_ns −
// init_monotonic_ns) may differ for one clock: the two clocks are read
// one after the other, and a process can be preempted between the two
// reads, or the real-time clock slewed between two processes' reads.
// Two machines booted within it under one host name are not told apart.
const BootTolerance = 50_000_000 // ns

// ClockGroups returns the ranks whose logs read one clock, in groups of
// two or more, each in rank order, the groups in the order of their first
// rank: ranks of one host name and clock whose boot times differ by at
// most BootTolerance (in a chain, sorted by boot time). A rank whose
// header lacks any of the four keys is in no group.
func (t *Trace) ClockGroups() [][]int {
	type member struct {
		rank int
		boot int64
	}
	by := map[[2]string][]member{}
	for i := range t.Files {
		f := &t.Files[i]
		host, ok1 := f.Header.Get(KeyHostname)
		clock, ok2 := f.Header.Get(KeyClock)
		real, ok3 := f.Header.Get(KeyInitRealtimeNS)
		mono, ok4 := f.Header.Get(KeyInitMonotonicNS)
		if !ok1 || !ok2 || !ok3 || !ok4 || host == "" || clock == "" {
			continue
		}
		r, err1 := strconv.ParseInt(real, 10, 64)
		m, err2 := strconv.ParseInt(mono, 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		k := [2]string{host, clock}
		by[k] = append(by[k], member{f.Rank, r - m})
	}
	var groups [][]int
	for _, ms := range by {
		slices.SortFunc(ms, func(a, b member) int { return cmp.Or(cmp.Compare(a.boot, b.boot), cmp.Compare(a.rank, b.rank)) })
		for lo := 0; lo < len(ms); {
			hi := lo + 1
			for hi < len(ms) && ms[hi].boot-ms[hi-1].boot <= BootTolerance {
				hi++
			}
			if hi-lo > 1 {
				g := make([]int, 0, hi-lo)
				for _, m := range ms[lo:hi] {
					g = append(g, m.rank)
				}
				slices.Sort(g)
				groups = append(groups, g)
			}
			lo = hi
		}
	}
	slices.SortFunc(groups, func(a, b []int) int { return cmp.Compare(a[0], b[0]) })
	return groups
}

// ShareOffsets gives every rank of each group (ClockGroups) one clock
// offset in off (rank → the ns to add to its clock to read rank 0's): 0
// when the group holds rank 0, else that of the group's first rank with
// an offset in off (a group without any is left as it is). It returns,
// for every other rank of such a group, the rank whose offset it took.
func ShareOffsets(groups [][]int, off map[int]int64) map[int]int {
	from := map[int]int{}
	for _, g := range groups {
		src, v := -1, int64(0)
		for _, r := range g {
			if r == 0 {
				src, v = 0, 0
				break
			}
			if o, ok := off[r]; ok && src < 0 {
				src, v = r, o
			}
		}
		if src < 0 {
			continue
		}
		for _, r := range g {
			if r != src {
				off[r] = v
				from[r] = src
			}
		}
	}
	return from
}
