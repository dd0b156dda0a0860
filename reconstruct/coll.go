package reconstruct

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
)

func itoa(i int) string { return strconv.Itoa(i) }

func commName(k commKey) string {
	switch {
	case k.gid == 1:
		return "MPI_COMM_WORLD"
	case k.self >= 0:
		return "MPI_COMM_SELF"
	}
	return fmt.Sprintf("communicator %#x", k.gid)
}

// members returns the member list of every communicator some rank
// defined: the lowest rank's description wins, a different one is an
// error.
func (b *build) members() map[commKey][]int32 {
	m := make(map[commKey][]int32)
	owner := make(map[commKey]int)
	reported := make(map[commKey]bool)
	for _, res := range b.res {
		if res == nil {
			continue
		}
		r := res.p.rank
		// Deterministic order: the rank's keys in first-use order.
		for _, k := range res.p.keys {
			def, ok := res.p.commDefs[k]
			if !ok {
				continue
			}
			prev, seen := m[k]
			if !seen {
				m[k], owner[k] = def, r
				continue
			}
			if !slices.Equal(prev, def) && !reported[k] {
				reported[k] = true
				addDiag(&b.diags, tracefmt.Error, CodeCommMembers, r, res.p.file,
					"%s has members %s on rank %d but %s on rank %d; rank %d's list is used",
					commName(k), rankList(def), r, rankList(prev), owner[k], owner[k])
			}
		}
		res.p.commDefs = nil
	}
	return m
}

// memberSet is a communicator's members: a sorted list of world ranks, or
// all the ranks of the world, which are never listed (a world may claim
// 2^24 ranks of which few have a log).
type memberSet struct {
	list  []int32
	world int // > 0: the members are 0..world-1
}

func (m memberSet) len() int {
	if m.world > 0 {
		return m.world
	}
	return len(m.list)
}

func (m memberSet) has(r int32) bool {
	if m.world > 0 {
		return r >= 0 && int(r) < m.world
	}
	_, ok := slices.BinarySearch(m.list, r)
	return ok
}

func (m memberSet) String() string {
	if m.world > 0 {
		return fmt.Sprintf("the world's %d ranks", m.world)
	}
	return rankList(m.list)
}

func (b *build) membersOf(m map[commKey][]int32, k commKey) (memberSet, bool) {
	switch {
	case k.gid == 1:
		return memberSet{world: b.size}, true
	case k.self >= 0:
		return memberSet{list: []int32{k.self}}, true
	}
	l, ok := m[k]
	return memberSet{list: l}, ok
}

// logged calls fn for each member of mem that has a log, in rank order,
// and returns how many members have none and the first limit of them.
func (b *build) logged(mem memberSet, limit int, fn func(r int32)) (nAbsent int, absent []int32) {
	if mem.world == 0 {
		for _, r := range mem.list {
			if b.result(int(r)) != nil {
				fn(r)
				continue
			}
			if nAbsent++; len(absent) < limit {
				absent = append(absent, r)
			}
		}
		return nAbsent, absent
	}
	next := 0 // ranks next.. up to the following log have none
	gap := func(end int) {
		for r := next; r < end && len(absent) < limit; r++ {
			absent = append(absent, int32(r))
		}
		nAbsent += end - next
		next = end + 1
	}
	for _, r := range b.ranks {
		gap(r)
		fn(int32(r))
	}
	gap(mem.world)
	return nAbsent, absent
}

func rankList(rs []int32) string {
	var sb strings.Builder
	for i, r := range rs {
		if i > 0 {
			sb.WriteByte(',')
		}
		if i == 16 && len(rs) > 20 {
			fmt.Fprintf(&sb, "...(%d ranks)", len(rs))
			break
		}
		sb.WriteString(strconv.Itoa(int(r)))
	}
	return "[" + sb.String() + "]"
}

// collGroup is the collective calls on one communicator, per rank.
type collGroup struct {
	key   commKey
	ranks []int32
	lists [][]uint32 // indices into the rank's parts, program order
}

type instPart struct {
	rank int32
	part uint32
}

type instance struct {
	key     commKey
	members memberSet
	k       int
	first   int // into the parts pool
	n       int
	minRank int32
	ev      int64
}

// collectives matches the k-th collective call on a communicator on every
// member and adds one node per instance, in order of the lowest
// participating rank and that rank's program order.
func (b *build) collectives(members map[commKey][]int32) error {
	groups := make(map[commKey]*collGroup)
	var order []*collGroup
	for _, res := range b.res {
		if res == nil {
			continue
		}
		r := res.p.rank
		res.partNode = make([]taskgraph.NodeID, len(res.p.parts))
		for j := range res.p.parts {
			res.partNode[j] = taskgraph.None
			key := res.p.keys[res.p.parts[j].comm]
			g := groups[key]
			if g == nil {
				g = &collGroup{key: key}
				groups[key] = g
				order = append(order, g)
			}
			if n := len(g.ranks); n == 0 || g.ranks[n-1] != int32(r) {
				g.ranks = append(g.ranks, int32(r))
				g.lists = append(g.lists, nil)
			}
			g.lists[len(g.lists)-1] = append(g.lists[len(g.lists)-1], uint32(j))
		}
	}
	// Room for every instance and participation up front: appending them
	// one by one would copy them over and over.
	nParts, nInsts := 0, 0
	for _, g := range order {
		maxLen := 0
		for _, l := range g.lists {
			nParts += len(l)
			maxLen = max(maxLen, len(l))
		}
		nInsts += maxLen
	}
	pool := make([]instPart, 0, nParts)
	insts := make([]instance, 0, nInsts)
	b.gb.ReserveCollectives(nInsts, nParts)
	for _, g := range order {
		mem, known := b.membersOf(members, g.key)
		if !known {
			mem = memberSet{list: g.ranks}
		}
		maxLen := 0
		for _, l := range g.lists {
			maxLen = max(maxLen, len(l))
		}
		lossy := b.lossy && b.groupLossy(g)
		if lossy {
			// The members that lost events are told of by their losses.
			maxLen, _ = b.lossyCount(g)
		}
		// Count mismatches, per member: those with a log, then those
		// without (they made no call), one by one while they are few.
		const maxListed = 32
		mismatch := func(m int32, n int) {
			sev, note := b.missing(int(m))
			file := ""
			if res := b.result(int(m)); res != nil {
				file = res.p.file
			}
			if lossy && maxLen == 0 {
				// Every member with a log lost events: how many
				// instances there were is not known.
				addDiag(&b.diags, sev, CodeCollectiveCount, int(m), file,
					"rank %d made %d collective calls on %s; the other members' logs lost events, so how many instances lack its call is not known%s",
					m, n, commName(g.key), note)
				return
			}
			collCountDiag(&b.diags, sev, note, m, file, n, maxLen, g.key)
		}
		nAbsent, absent := b.logged(mem, maxListed, func(m int32) {
			if lossy && b.result(int(m)).p.lossy() {
				return
			}
			n := 0
			if i, ok := slices.BinarySearch(g.ranks, m); ok {
				n = len(g.lists[i])
			}
			if n != maxLen {
				mismatch(m, n)
			}
		})
		if nAbsent <= maxListed {
			for _, m := range absent {
				mismatch(m, 0)
			}
		} else {
			collAbsentDiag(&b.diags, nAbsent, absent, maxLen, g.key)
		}
		for i, r := range g.ranks {
			if !mem.has(r) {
				addDiag(&b.diags, tracefmt.Error, CodeNotMember, int(r), b.result(int(r)).p.file,
					"rank %d made %d collective calls on %s, whose members are %s", r, len(g.lists[i]), commName(g.key), mem)
			}
		}
		if lossy {
			b.lossyInstances(g, mem, &pool, &insts)
			continue
		}
		for k := 0; k < maxLen; k++ {
			inst := instance{key: g.key, members: mem, k: k, first: len(pool)}
			for i, r := range g.ranks {
				if k < len(g.lists[i]) {
					pool = append(pool, instPart{rank: r, part: g.lists[i][k]})
				}
			}
			inst.n = len(pool) - inst.first
			p0 := pool[inst.first]
			inst.minRank, inst.ev = p0.rank, b.result(int(p0.rank)).p.parts[p0.part].ev
			insts = append(insts, inst)
		}
	}
	slices.SortFunc(insts, func(x, y instance) int {
		if c := cmp.Compare(x.minRank, y.minRank); c != 0 {
			return c
		}
		return cmp.Compare(x.ev, y.ev)
	})
	var parts []taskgraph.Part
	var recs []*partRec
	for _, inst := range insts {
		parts, recs = parts[:0], recs[:0]
		for _, ip := range pool[inst.first : inst.first+inst.n] {
			pr := &b.result(int(ip.rank)).p.parts[ip.part]
			recs = append(recs, pr)
			parts = append(parts, taskgraph.Part{Rank: int(ip.rank), Nonblocking: pr.nb, At: pr.at, Start: pr.start, End: pr.end, Event: pr.ev})
		}
		b.checkInstance(inst, pool[inst.first:inst.first+inst.n], recs)
		coll := taskgraph.Collective{Name: recs[0].name, GID: inst.key.gid, Members: inst.members.list,
			Procs: inst.members.len(), Bytes: collBytes(recs[0].fn, recs, inst.members.len()), MovesData: movesData(recs), Parts: parts}
		coll.Root, coll.HasRoot = collRoot(recs)
		id, err := b.gb.AddCollective(coll)
		if err != nil {
			return err
		}
		for _, ip := range pool[inst.first : inst.first+inst.n] {
			b.result(int(ip.rank)).partNode[ip.part] = id
		}
	}
	for _, res := range b.res {
		if res != nil {
			res.p.parts = nil
		}
	}
	return nil
}

// checkInstance reports members whose k-th call differs from the lowest
// participant's: another function (blocking against nonblocking too) or
// another root.
func (b *build) checkInstance(inst instance, ips []instPart, recs []*partRec) {
	for i, pr := range recs[1:] {
		r := int(ips[i+1].rank)
		instanceDiag(&b.diags, r, b.result(r).p.file, pr, recs[0], inst.minRank, inst.k, inst.key)
	}
}

// instanceDiag reports rank r's call pr to the k-th collective instance
// on key when it differs from p0, the lowest participant's (rank
// minRank): another function (blocking against nonblocking too) or
// another root. k < 0 counts from the end.
func instanceDiag(t *tracefmt.Diagnostics, r int, file string, pr, p0 *partRec, minRank int32, k int, key commKey) {
	var what string
	switch {
	case pr.name != p0.name:
		what = fmt.Sprintf("%s where rank %d calls %s", pr.fn, minRank, p0.fn)
	case isRoot(pr.root) && isRoot(p0.root) && pr.root != p0.root:
		what = fmt.Sprintf("%s with root %d where rank %d uses root %d", pr.fn, pr.root, minRank, p0.root)
	default:
		return
	}
	call := fmt.Sprintf("collective call %d", k+1)
	if k < 0 {
		call = fmt.Sprintf("collective call %d from the end", -k)
	}
	addDiag(t, tracefmt.Error, CodeCollectiveMismatch, r, file,
		"event %d: %s on %s is %s; they are one vertex, named %s", pr.ev, call, commName(key), what, p0.fn)
}

// collCountDiag reports that member m (of severity sev, note from
// missing) made n collective calls on key where others made up to maxLen.
func collCountDiag(t *tracefmt.Diagnostics, sev tracefmt.Severity, note string, m int32, file string, n, maxLen int, key commKey) {
	addDiag(t, sev, CodeCollectiveCount, int(m), file,
		"rank %d made %d collective calls on %s, other members up to %d: the last instances lack its call%s",
		m, n, commName(key), maxLen, note)
}

// collAbsentDiag reports the nAbsent members of key without a log, the
// first of them listed in absent, when too many to report one by one.
func collAbsentDiag(t *tracefmt.Diagnostics, nAbsent int, absent []int32, maxLen int, key commKey) {
	const shown = 16
	addDiag(t, tracefmt.DataLoss, CodeCollectiveCount, -1, "",
		"%d members of %s have no log (%s and %d more): the %d collective instances on it lack their calls",
		nAbsent, commName(key), rankList(absent[:shown]), nAbsent-shown, maxLen)
}

func isRoot(r int64) bool { return r >= 0 }

// collRoot is an instance's root world rank: the lowest participant's
// (a mismatch is reported by checkInstance), else the first participant
// that names one; ok is false when none does.
func collRoot(recs []*partRec) (root int, ok bool) {
	for _, pr := range recs {
		if isRoot(pr.root) && pr.root <= math.MaxInt32 {
			return int(pr.root), true
		}
	}
	return -1, false
}
