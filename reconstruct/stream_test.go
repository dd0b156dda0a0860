package reconstruct_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// links are a graph's or a Linker's messages, "rank:event -> rank:event",
// and collective instances, "coll rank:event rank:event ...", sorted.
func graphLinks(g *taskgraph.Graph) []string {
	var out []string
	var edges []taskgraph.Edge
	for v := range taskgraph.NodeID(g.NumNodes()) {
		if g.Kind(v) != taskgraph.KindOp {
			continue
		}
		edges = g.Out(v, edges[:0])
		for _, e := range edges {
			if e.Kind == taskgraph.Message {
				out = append(out, fmt.Sprintf("%d:%d -> %d:%d", g.Rank(e.From), g.OpEvent(e.From), g.Rank(e.To), g.OpEvent(e.To)))
			}
		}
	}
	parts := map[taskgraph.NodeID][]string{}
	for _, r := range g.Ranks() {
		g.RankCollectives(r, func(v taskgraph.NodeID, ev int64) bool {
			parts[v] = append(parts[v], fmt.Sprintf("%d:%d", r, ev))
			return true
		})
	}
	for _, ps := range parts {
		out = append(out, "coll "+strings.Join(ps, " "))
	}
	slices.Sort(out)
	return out
}

// linkerLinks runs a Linker over ranks, interleaving their events as
// order says: -1 rank after rank, else a random interleaving from seed;
// the links sorted.
func linkerLinks(ranks []*tracefmt.RankData, seed int) []string {
	out := linkerOrder(ranks, seed)
	slices.Sort(out)
	return out
}

// linkerOrder is linkerLinks in the order the Linker reports them.
func linkerOrder(ranks []*tracefmt.RankData, seed int) []string {
	size := 0
	var ids []int
	for _, d := range ranks {
		size = d.Header.Size
		ids = append(ids, d.Header.Rank)
	}
	var out []string
	l := reconstruct.NewLinker(size, ids)
	l.Message = func(s, r *reconstruct.Endpoint) {
		out = append(out, fmt.Sprintf("%d:%d -> %d:%d", s.Rank, s.Event, r.Rank, r.Event))
	}
	l.Collective = func(ms []reconstruct.Endpoint, _ int) {
		var ps []string
		for _, m := range ms {
			ps = append(ps, fmt.Sprintf("%d:%d", m.Rank, m.Event))
		}
		out = append(out, "coll "+strings.Join(ps, " "))
	}
	rls := make([]*reconstruct.RankLinker, len(ranks))
	next := make([]int, len(ranks))
	for i, d := range ranks {
		rls[i] = l.Rank(d.Header.Rank, &d.Strings)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	step := func(i int) {
		d := ranks[i]
		if next[i] == len(d.Events) {
			return
		}
		j := next[i]
		next[i]++
		ev := &d.Events[j]
		for _, l := range d.Lost {
			if l.Event == j {
				rls[i].Lost(l.Loss)
			}
		}
		rls[i].Event(ev, reconstruct.Endpoint{Rank: d.Header.Rank, Event: int64(j), Start: ev.Start})
		if next[i] == len(d.Events) {
			rls[i].Finish()
		}
	}
	if seed < 0 {
		for i, d := range ranks {
			for range d.Events {
				step(i)
			}
			if len(d.Events) == 0 {
				rls[i].Finish()
			}
		}
	} else {
		for i, d := range ranks {
			if len(d.Events) == 0 {
				rls[i].Finish()
			}
		}
		for {
			var left []int
			for i, d := range ranks {
				if next[i] < len(d.Events) {
					left = append(left, i)
				}
			}
			if len(left) == 0 {
				break
			}
			step(left[rng.IntN(len(left))])
		}
	}
	l.Finish()
	return out
}

// checkLinker compares a Linker's links under several interleavings with
// Build's graph: the same links, or, where a rank lost events, some of
// Build's (the Linker leaves out the calls after a loss, which Build
// places from the end of the log).
func checkLinker(t *testing.T, name string, ranks []*tracefmt.RankData) bool {
	_, ok := checkLinkerN(t, name, ranks)
	return ok
}

// checkLinkerN is checkLinker that also returns the number of links
// compared (-1 when the case was skipped).
func checkLinkerN(t *testing.T, name string, ranks []*tracefmt.RankData) (int, bool) {
	t.Helper()
	g, diags, err := reconstruct.BuildFromRanks(ranks, reconstruct.Options{Workers: 1})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if diags.CountCode(reconstruct.CodeCommMembers)+diags.CountCode(reconstruct.CodeNotMember) > 0 {
		// Members that disagree: Build groups the k-th calls of
		// whichever ranks made them, the Linker closes an instance once
		// the members it read first arrived (documented).
		return -1, true
	}
	want := graphLinks(g)
	lossy := false
	for _, d := range ranks {
		lossy = lossy || len(d.Lost) > 0
	}
	for _, seed := range []int{-1, 1, 2, 3} {
		got := linkerLinks(ranks, seed)
		if lossy && subsetLinks(got, want) {
			continue
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s, interleaving %d: the Linker's links differ from Build's:\nlinker: %q\nbuild:  %q", name, seed, got, want)
			return len(want), false
		}
	}
	return len(want), true
}

// subsetLinks reports whether every link of got is one of want's, a
// collective instance of got being all or part of one of want's.
func subsetLinks(got, want []string) bool {
	inst := map[string]int{} // member → instance of want
	for i, w := range want {
		if m, ok := strings.CutPrefix(w, "coll "); ok {
			for _, x := range strings.Fields(m) {
				inst[x] = i
			}
		}
	}
	for _, l := range got {
		m, ok := strings.CutPrefix(l, "coll ")
		if !ok {
			if _, found := slices.BinarySearch(want, l); !found {
				return false
			}
			continue
		}
		f := strings.Fields(m)
		i, ok := inst[f[0]]
		for _, x := range f[1:] {
			ok = ok && inst[x] == i
		}
		if !ok {
			return false
		}
	}
	return true
}

// TestLinkerGolden: on every golden case, the Linker pairs the messages
// and groups the collectives as Build does, whatever the interleaving of
// the ranks.
func TestLinkerGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.test")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := parseGolden(string(data))
		text, err := c.ranksText()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ranks, err := tracefmt.ParseText(strings.NewReader(text))
		if err != nil {
			continue // the bad-input cases
		}
		checkLinker(t, f, ranks)
	}
}

// TestLinkerGenerated: the same on the generators' traces.
func TestLinkerGenerated(t *testing.T) {
	for name, b := range map[string]*testgen.Builder{
		"halo": testgen.Halo(6, 30, 3), "serial": testgen.Serial(200, 1),
	} {
		checkLinker(t, name, ranksOf(t, b))
	}
}

// ranksOf returns the ranks b built, written and read back.
func ranksOf(t *testing.T, b *testgen.Builder) []*tracefmt.RankData {
	t.Helper()
	dir := t.TempDir()
	if err := b.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return readRanks(t, tr)
}

// readRanks reads every rank of tr whole, in tr.Files' order.
func readRanks(t *testing.T, tr *tracefmt.Trace) []*tracefmt.RankData {
	t.Helper()
	var ranks []*tracefmt.RankData
	for _, f := range tr.Files {
		r, err := tracefmt.OpenRank(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		d, err := tracefmt.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		ranks = append(ranks, d)
	}
	return ranks
}

// TestLinkerInFlight: what the Linker holds is what is in flight: with
// the ranks read in step, a receive posted and never completed on one
// channel does not hold back the thousands of messages of another, and
// the messages pair as they come.
func TestLinkerInFlight(t *testing.T) {
	b := testgen.New(2)
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.Call("MPI_Init")
	r1.Call("MPI_Init")
	r1.Irecv(0, 99, 8) // never completed
	const n = 5000
	for range n {
		r0.Send(1, 1, 8)
		r1.Recv(0, 1, 8)
		q := r1.Irecv(0, 2, 8)
		r0.Send(1, 2, 8)
		r1.Wait(q)
	}
	r0.Call("MPI_Finalize")
	r1.Call("MPI_Finalize")
	ranks := ranksOf(t, b)
	pairs, most := 0, 0
	l := reconstruct.NewLinker(2, []int{0, 1})
	l.Message = func(_, _ *reconstruct.Endpoint) { pairs++ }
	rls := []*reconstruct.RankLinker{l.Rank(0, &ranks[0].Strings), l.Rank(1, &ranks[1].Strings)}
	// In step: rank 0's 2 events of an iteration, then rank 1's 3.
	next := []int{0, 0}
	feed := func(r, k int) {
		for ; k > 0 && next[r] < len(ranks[r].Events); k-- {
			rls[r].Event(&ranks[r].Events[next[r]], reconstruct.Endpoint{Rank: r, Event: int64(next[r])})
			next[r]++
			m, rc, _ := l.Pending()
			most = max(most, m+rc)
		}
	}
	feed(0, 1)
	feed(1, 2)
	for range n + 1 {
		feed(0, 2)
		feed(1, 3)
	}
	rls[0].Finish()
	rls[1].Finish()
	l.Finish()
	if pairs != 2*n {
		t.Errorf("%d messages paired, want %d", pairs, 2*n)
	}
	if most > 4 {
		t.Errorf("the Linker held up to %d messages and receives at once: it holds more than what is in flight", most)
	}
}

// TestLinkerRandom: the same on random event streams, mostly
// inconsistent ones.
func TestLinkerRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	bad, skipped, links := 0, 0, 0
	for i := 0; i < 3000 && bad < 3; i++ {
		n, ok := checkLinkerN(t, fmt.Sprintf("case %d", i), randomRanks(rng))
		if !ok {
			bad++
		}
		if n < 0 {
			skipped++
		} else {
			links += n
		}
	}
	t.Logf("%d links compared, %d cases skipped", links, skipped)
	if links < 1000 || skipped > 300 {
		t.Errorf("the random cases compared %d links and skipped %d cases: too weak a test", links, skipped)
	}
}

// TestLinkerCompletionOrder: the Linker reports a call's pairs in the order
// of its completions (export numbers its flows so): a receive that a
// wildcard held back takes its message when the wildcard's completion
// (or cancellation) is read, before the call's next completion pairs, and
// at the end of a log the requests still live are settled in id order.
func TestLinkerCompletionOrder(t *testing.T) {
	const rank0 = `rank 0
t=100 Call fn=MPI_Init dur=10
t=200 Send fn=MPI_Send peer=1 tag=0 comm=1 bytes=8 dur=10
t=300 Send fn=MPI_Send peer=1 tag=0 comm=1 bytes=8 dur=10
t=400 Recv fn=MPI_Recv peer=1 tag=5 comm=1 bytes=8 src=1 stag=5 sbytes=8 dur=10
t=900 Call fn=MPI_Finalize dur=10
end reason=finalize
`
	for _, c := range []struct {
		name, rank1 string
		want        []string
	}{
		{"a wildcard completed", `rank 1
t=100 Call fn=MPI_Init dur=10
t=200 Irecv fn=MPI_Irecv peer=-1 tag=0 comm=1 bytes=8 req=1 dur=10
t=300 Recv fn=MPI_Recv peer=0 tag=0 comm=1 bytes=8 src=0 stag=0 sbytes=8 dur=10
t=400 Send fn=MPI_Isend peer=0 tag=5 comm=1 bytes=8 req=2 dur=10
t=500 Complete fn=MPI_Waitall flag=1 completions=[{req=1 src=0 stag=0 sbytes=8 flags=0},{req=2 src=-5 stag=-1 sbytes=0 flags=0}] dur=10
t=900 Call fn=MPI_Finalize dur=10
end reason=finalize
`, []string{"0:1 -> 1:4", "0:2 -> 1:2", "1:3 -> 0:3"}},
		{"a wildcard cancelled", `rank 1
t=100 Call fn=MPI_Init dur=10
t=200 Irecv fn=MPI_Irecv peer=-1 tag=0 comm=1 bytes=8 req=1 dur=10
t=300 Recv fn=MPI_Recv peer=0 tag=0 comm=1 bytes=8 src=0 stag=0 sbytes=8 dur=10
t=320 Recv fn=MPI_Recv peer=0 tag=0 comm=1 bytes=8 src=0 stag=0 sbytes=8 dur=10
t=340 ReqFree fn=MPI_Cancel req=1 dur=10
t=400 Send fn=MPI_Isend peer=0 tag=5 comm=1 bytes=8 req=2 dur=10
t=500 Complete fn=MPI_Waitall flag=1 completions=[{req=1 src=-5 stag=-1 sbytes=0 flags=1},{req=2 src=-5 stag=-1 sbytes=0 flags=0}] dur=10
t=900 Call fn=MPI_Finalize dur=10
end reason=finalize
`, []string{"0:1 -> 1:2", "0:2 -> 1:3", "1:5 -> 0:3"}},
		{"live at the end", `rank 1
t=100 Call fn=MPI_Init dur=10
t=150 Recv fn=MPI_Recv peer=0 tag=0 comm=1 bytes=8 src=0 stag=0 sbytes=8 dur=10
t=200 Irecv fn=MPI_Irecv peer=-1 tag=0 comm=1 bytes=8 req=1 dur=10
t=300 Recv fn=MPI_Recv peer=0 tag=0 comm=1 bytes=8 src=0 stag=0 sbytes=8 dur=10
t=400 Send fn=MPI_Isend peer=0 tag=5 comm=1 bytes=8 req=2 dur=10
t=900 Call fn=MPI_Finalize dur=10
end reason=finalize
`, []string{"0:1 -> 1:1", "0:2 -> 1:3", "1:4 -> 0:3"}},
	} {
		ranks, err := tracefmt.ParseText(strings.NewReader(rank0 + c.rank1))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := linkerOrder(ranks, -1); !slices.Equal(got, c.want) {
			t.Errorf("%s: the Linker reports %q, want (completion order) %q", c.name, got, c.want)
		}
		checkLinker(t, c.name, ranks)
	}
}

// TestLinkerSharedMembers: what a rank costs the Linker does not grow with
// the size of the communicators its ranks describe: n ranks each listing
// the n members of a duplicate of MPI_COMM_WORLD, read at once, cost the
// same per rank at 512 and 2048 ranks (each rank's pass keeping its own
// list made it grow as n: 2 KB more a rank at 512, 8 KB at 2048).
func TestLinkerSharedMembers(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("thousands of ranks")
	}
	perRank := func(n int) float64 {
		b := testgen.New(n)
		members := make([]int64, n)
		for i := range members {
			members[i] = int64(i)
		}
		for r := 0; r < n; r++ {
			rk := b.Rank(r)
			rk.Call("MPI_Init")
			rk.On(rk.CommNew("MPI_Comm_dup", 1, 77, members...)).Barrier()
		}
		ranks := ranksOf(t, b)
		ids := make([]int, n)
		for i := range ids {
			ids[i] = i
		}
		base := liveHeap()
		l := reconstruct.NewLinker(n, ids)
		rls := make([]*reconstruct.RankLinker, n)
		for i, d := range ranks {
			rls[i] = l.Rank(d.Header.Rank, &d.Strings)
			for j := 0; j < 2; j++ { // MPI_Init and the communicator's creation
				rls[i].Event(&d.Events[j], reconstruct.Endpoint{Rank: i, Event: int64(j)})
			}
		}
		used := int64(liveHeap()) - int64(base)
		runtime.KeepAlive(rls)
		return float64(used) / float64(n)
	}
	small, large := perRank(512), perRank(2048)
	t.Logf("%.0f B a rank at 512 ranks, %.0f at 2048", small, large)
	if large > 1.5*small+512 {
		t.Errorf("a rank costs %.0f B at 2048 ranks against %.0f at 512: the member lists are held per rank", large, small)
	}
}

// TestLinkerManyTags: a program that sends each message on a new tag
// (tag = iteration) does not make the Linker grow with its length: each
// rank's pass remembers a bounded number of channels (it used to keep
// every channel: about 100 bytes a tag).
func TestLinkerManyTags(t *testing.T) {
	if testing.Short() {
		t.Skip("hundreds of thousands of messages")
	}
	held := func(n int) int64 {
		ranks := ranksOf(t, tagsTrace(n, false))
		base := int64(liveHeap())
		pairs := 0
		l := reconstruct.NewLinker(2, []int{0, 1})
		l.Message = func(_, _ *reconstruct.Endpoint) { pairs++ }
		rls := []*reconstruct.RankLinker{l.Rank(0, &ranks[0].Strings), l.Rank(1, &ranks[1].Strings)}
		for j := range ranks[0].Events {
			for r := range rls {
				rls[r].Event(&ranks[r].Events[j], reconstruct.Endpoint{Rank: r, Event: int64(j)})
			}
		}
		used := int64(liveHeap()) - base
		if pairs != n {
			t.Fatalf("%d tags: %d messages paired", n, pairs)
		}
		runtime.KeepAlive(rls)
		return used
	}
	small, large := held(20_000), held(200_000)
	t.Logf("the Linker holds %d KB after 20,000 tags, %d KB after 200,000", small>>10, large>>10)
	if large > small+1<<20 {
		t.Errorf("the Linker holds %d KB after 200,000 tags against %d KB after 20,000: it grows with the tags", large>>10, small>>10)
	}
}

// tagsTrace is two ranks, rank 0 sending n messages to rank 1 each on a
// new tag (tag = iteration), and with pingPong rank 1 answering each on
// the same tag (neither rank can then run ahead in a replay).
func tagsTrace(n int, pingPong bool) *testgen.Builder {
	b := testgen.New(2)
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.Call("MPI_Init")
	r1.Call("MPI_Init")
	for i := range n {
		r0.Send(1, int64(i), 8)
		r1.Recv(0, int64(i), 8)
		if pingPong {
			r1.Send(0, int64(i), 8)
			r0.Recv(1, int64(i), 8)
		}
	}
	r0.Call("MPI_Finalize")
	r1.Call("MPI_Finalize")
	return b
}
