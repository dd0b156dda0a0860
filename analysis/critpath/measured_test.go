package critpath_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/internal/testmodel"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// build reconstructs the task graph of b's ranks and reads their clock
// offsets as the CLI does (the MPI_Init ClockSync).
func build(t *testing.T, b *testgen.Builder) (*taskgraph.Graph, *critpath.Clocks) {
	t.Helper()
	clocks := &critpath.Clocks{Offset: map[int]int64{}, Err: map[int]int64{}}
	var srcs []tracefmt.Source
	for r := 0; r < b.Size; r++ {
		data, err := b.Bytes(r)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := tracefmt.NewRankReader(bytes.NewReader(data), "mem")
		if err != nil {
			t.Fatal(err)
		}
		d, err := tracefmt.ReadAll(rr)
		if err != nil {
			t.Fatal(err)
		}
		for i := range d.Events {
			if ev := &d.Events[i]; ev.Kind == spec.ClockSync {
				clocks.Offset[r], clocks.Err[r] = ev.Offset(), int64(ev.OffsetErr())
			}
		}
		srcs = append(srcs, d.Source())
	}
	g, diags, err := reconstruct.BuildFromSources(srcs, reconstruct.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diags.Len() != 0 {
		t.Fatalf("diagnostics: %s", diags.Summary())
	}
	return g, clocks
}

// call records fn after compute ns, lasting dur ns.
func call(r *testgen.Rank, compute, dur int64, rec func(r *testgen.Rank)) {
	r.Compute(compute)
	r.Dur = dur
	rec(r)
}

func initRank(r *testgen.Rank, offset int64) {
	call(r, 0, 1000, func(r *testgen.Rank) { r.Call("MPI_Init") })
	if offset != 0 {
		r.Compute(0).ClockSync(spec.PhaseInit, offset, 10)
	}
}

func finalize(r *testgen.Rank, compute int64) {
	call(r, compute, 1000, func(r *testgen.Rank) { r.Call("MPI_Finalize") })
}

func waitStates(s *critpath.Summary) map[string]int64 {
	out := map[string]int64{}
	for _, w := range s.Run.WaitStates {
		out[w.State+" "+w.Function+" "+string(rune('0'+w.Rank))] += w.Time
	}
	return out
}

// TestMeasuredLateSender: rank 0 waits in MPI_Recv 39 µs for rank 1's
// send; the measured path goes through the message and is the run's span
// exactly, with and without a clock offset (rank 1's clock 5 µs behind
// rank 0's: its send starts 5 µs later than its own clock says).
func TestMeasuredLateSender(t *testing.T) {
	for _, offset := range []int64{0, 5000} {
		b := testgen.New(2)
		r0, r1 := b.Rank(0), b.Rank(1)
		initRank(r0, 0)
		initRank(r1, offset)
		// Times relative to 1 s: MPI_Init ends at 1000 on both clocks.
		call(r0, 1000, 50_000, func(r *testgen.Rank) { r.Recv(1, 7, 8) }) // [2000, 52000]
		finalize(r0, 1000)                                                // 53000
		call(r1, 40_000, 1000, func(r *testgen.Rank) { r.Send(0, 7, 8) }) // [41000, 42000] + offset
		finalize(r1, 500)
		g, clocks := build(t, b)
		p, err := critpath.ComputeMeasured(g, clocks)
		if err != nil {
			t.Fatal(err)
		}
		// The run: from the first MPI_Init end (1000) to the last
		// MPI_Finalize start (53000).
		if p.Length != 52_000 || p.Weights != critpath.WeightsMeasured {
			t.Errorf("offset %d: length %v (%s), want 52000", offset, p.Length, p.Weights)
		}
		var names []string
		for i := 0; i < p.NumVertices(); i++ {
			v := p.Vertex(i)
			names = append(names, v.Name+" "+string(rune('0'+max(v.Rank, 0))))
		}
		if got := strings.Join(names, ","); got != "MPI_Init 0,MPI_Send 1,MPI_Recv 0,MPI_Finalize 0" {
			t.Errorf("offset %d: path %s", offset, got)
		}
		// The message weighs the receive's end minus the send's start.
		if h := p.Hop(1); h.Kind != taskgraph.Message || h.Weight != float64(52_000-41_000-offset) {
			t.Errorf("offset %d: message hop %+v", offset, h)
		}
		s := critpath.Summarize(p, 5)
		if s.Run == nil || s.Run.Span != 52_000 || s.Weights != critpath.WeightsMeasured {
			t.Fatalf("offset %d: run %+v", offset, s.Run)
		}
		ws := waitStates(s)
		if len(ws) != 1 || ws["late_sender MPI_Recv 0"] != 39_000+offset {
			t.Errorf("offset %d: wait states %v", offset, ws)
		}
		if s.Run.Clamped != (critpath.Clamps{}) {
			t.Errorf("offset %d: clamped %+v", offset, s.Run.Clamped)
		}
	}
}

// TestMeasuredLateReceiver: rank 0's MPI_Ssend waits 28 µs for rank 1 to
// post its receive; that wait stays on rank 0's chain (the graph has no
// edge from the receive to the send), and the path is still the run.
func TestMeasuredLateReceiver(t *testing.T) {
	b := testgen.New(2)
	r0, r1 := b.Rank(0), b.Rank(1)
	initRank(r0, 0)
	initRank(r1, 0)
	call(r0, 1000, 30_000, func(r *testgen.Rank) { r.SendFn("MPI_Ssend", 1, 7, 1<<20) }) // [2000, 32000]
	finalize(r0, 1000)                                                                   // 33000
	call(r1, 29_000, 1500, func(r *testgen.Rank) { r.Recv(0, 7, 1<<20) })                // [30000, 31500]
	finalize(r1, 500)                                                                    // 32000
	g, clocks := build(t, b)
	p, err := critpath.ComputeMeasured(g, clocks)
	if err != nil {
		t.Fatal(err)
	}
	if p.Length != 32_000 {
		t.Errorf("length %v, want 32000", p.Length)
	}
	ws := waitStates(critpath.Summarize(p, 5))
	if len(ws) != 1 || ws["late_receiver MPI_Ssend 0"] != 28_000 {
		t.Errorf("wait states %v", ws)
	}
}

// TestMeasuredBarrier: three ranks arrive at a barrier 1, 5 and 10 µs
// after MPI_Init and all leave it at 10.3 µs: ranks 0 and 1 wait 9 and 5
// µs, the collective weighs 0.3 µs (last arrival to first exit).
func TestMeasuredBarrier(t *testing.T) {
	b := testgen.New(3)
	arrive := []int64{1000, 5000, 10_000}
	for r, a := range arrive {
		rk := b.Rank(r)
		initRank(rk, 0)
		call(rk, a, 10_300-a, func(r *testgen.Rank) { r.Barrier() })
		finalize(rk, 1000) // all at 12300
	}
	g, clocks := build(t, b)
	p, err := critpath.ComputeMeasured(g, clocks)
	if err != nil {
		t.Fatal(err)
	}
	if p.Length != 11_300 {
		t.Errorf("length %v, want 11300", p.Length)
	}
	if v := p.Vertex(1); v.Name != "MPI_Barrier" || v.Weight != 300 {
		t.Errorf("collective %+v", v)
	}
	if h := p.Hop(0); h.Rank != 2 {
		t.Errorf("the path reaches the barrier from rank %d, want the last to arrive (2)", h.Rank)
	}
	ws := waitStates(critpath.Summarize(p, 5))
	if len(ws) != 2 || ws["wait_at_barrier MPI_Barrier 0"] != 9000 || ws["wait_at_barrier MPI_Barrier 1"] != 5000 {
		t.Errorf("wait states %v", ws)
	}
}

// TestMeasuredWaitall: a Waitall of two Irecvs waits for the later of the
// two senders (rank 2): the path takes that message into the second
// expanded MPI_Wait, and the wait is one late-sender wait of the call.
func TestMeasuredWaitall(t *testing.T) {
	b := testgen.New(3)
	r0, r1, r2 := b.Rank(0), b.Rank(1), b.Rank(2)
	for _, r := range []*testgen.Rank{r0, r1, r2} {
		initRank(r, 0)
	}
	var q1, q2 uint64
	call(r0, 500, 500, func(r *testgen.Rank) { q1 = r.Irecv(1, 1, 8) }) // [1500, 2000]
	call(r0, 500, 500, func(r *testgen.Rank) { q2 = r.Irecv(2, 1, 8) }) // [2500, 3000]
	call(r0, 1000, 20_000, func(r *testgen.Rank) { r.Waitall(q1, q2) }) // [4000, 24000]
	finalize(r0, 1000)                                                  // 25000
	call(r1, 4000, 1000, func(r *testgen.Rank) { r.Send(0, 1, 8) })     // [5000, 6000]
	finalize(r1, 1000)                                                  // 7000
	call(r2, 19_000, 1000, func(r *testgen.Rank) { r.Send(0, 1, 8) })   // [20000, 21000]
	finalize(r2, 1000)                                                  // 22000
	g, clocks := build(t, b)
	p, err := critpath.ComputeMeasured(g, clocks)
	if err != nil {
		t.Fatal(err)
	}
	if p.Length != 24_000 {
		t.Errorf("length %v, want 24000", p.Length)
	}
	if v := p.Vertex(1); v.Rank != 2 || v.Name != "MPI_Send" {
		t.Errorf("the path starts at %+v, want rank 2's send", v)
	}
	ws := waitStates(critpath.Summarize(p, 5))
	if len(ws) != 1 || ws["late_sender MPI_Wait 0"] != 16_000 {
		t.Errorf("wait states %v", ws)
	}
}

// TestMeasuredClockError: a clock offset that makes a message complete
// before it was sent is clamped at 0 and counted; every weight stays
// non-negative.
func TestMeasuredClockError(t *testing.T) {
	b := testgen.New(2)
	r0, r1 := b.Rank(0), b.Rank(1)
	initRank(r0, 0)
	initRank(r1, 100_000) // far off: the send seems to start 100 µs late
	call(r0, 1000, 50_000, func(r *testgen.Rank) { r.Recv(1, 7, 8) })
	finalize(r0, 1000)
	call(r1, 40_000, 1000, func(r *testgen.Rank) { r.Send(0, 7, 8) })
	finalize(r1, 500)
	g, clocks := build(t, b)
	p, err := critpath.ComputeMeasured(g, clocks)
	if err != nil {
		t.Fatal(err)
	}
	s := critpath.Summarize(p, 5)
	if s.Run.Clamped.Messages != 1 || s.Run.Clamped.MessagesNS != 141_000-52_000 {
		t.Errorf("clamped %+v", s.Run.Clamped)
	}
	for i := 0; i+1 < p.NumVertices(); i++ {
		if h := p.Hop(i); h.Weight < 0 {
			t.Errorf("hop %d weighs %v", i, h.Weight)
		}
	}
	if s.Run.ClockErr != 10 {
		t.Errorf("clock error %d", s.Run.ClockErr)
	}
}

// TestExplain: the model path of the late-sender run misses the 39 µs
// rank 0 waits; Explain finds the measured path's difference in the
// message into MPI_Recv, and the causes add up.
func TestExplain(t *testing.T) {
	b := testgen.New(2)
	r0, r1 := b.Rank(0), b.Rank(1)
	initRank(r0, 0)
	initRank(r1, 0)
	call(r0, 1000, 50_000, func(r *testgen.Rank) { r.Recv(1, 7, 8) })
	call(r0, 1000, 30_000, func(r *testgen.Rank) { r.Call("MPI_Comm_size") }) // [53000, 83000]: a slow call
	finalize(r0, 1000)                                                        // 84000
	call(r1, 40_000, 1000, func(r *testgen.Rank) { r.Send(0, 7, 8) })
	finalize(r1, 500)
	g, clocks := build(t, b)
	mp, err := critpath.Compute(g, testmodel.Round{})
	if err != nil {
		t.Fatal(err)
	}
	meas, err := critpath.ComputeMeasured(g, clocks)
	if err != nil {
		t.Fatal(err)
	}
	why := critpath.Explain(mp, meas, 3, nil)
	var sum float64
	for _, c := range why.ByCause {
		sum += c.Measured - c.Model
	}
	// Run − ModelLength = Σ causes − OtherRoute.
	if d := (why.Run - why.ModelLength) - (sum - why.OtherRoute); d > 1e-6 || d < -1e-6 {
		t.Errorf("causes %v - other route %v != run %v - model %v", sum, why.OtherRoute, why.Run, why.ModelLength)
	}
	if why.Run != 83_000 {
		t.Errorf("run %v", why.Run)
	}
	found := map[string]bool{}
	for _, c := range why.ByCause {
		found[c.Cause+" "+c.Function] = c.Measured > c.Model
	}
	if !found["message MPI_Recv"] || !found["inside MPI_Comm_size"] {
		t.Errorf("causes %+v", why.ByCause)
	}
	// Inside MPI_Comm_size: its 30,000 ns, not the 1,000 ns of computation
	// before it too, which the model weighs as well.
	for _, c := range why.ByCause {
		if c.Cause == "inside" && c.Function == "MPI_Comm_size" && (c.Measured != 30_000 || c.Model != 0) {
			t.Errorf("inside MPI_Comm_size: measured %v, model %v; want the call's 30000 ns and 0", c.Measured, c.Model)
		}
	}
	if len(why.Largest) == 0 || len(why.Largest) > 3 {
		t.Errorf("largest %+v", why.Largest)
	}
	s := critpath.Summarize(mp, 5)
	s.Why = why
	var out bytes.Buffer
	if err := s.WriteText(&out, critpath.Microsecond); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"why the model path is", "messages into MPI_Recv", "inside MPI_Comm_size, not waiting", "largest single contributions"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := json.Marshal(s); err != nil {
		t.Fatal(err)
	}
}

// TestMeasuredRooted: Scalasca's late broadcast (members of an MPI_Bcast
// waiting for its root) and early reduce (an MPI_Reduce's root waiting
// for the first other member). Members that leave a rooted collective
// before its last member arrived are counted as early exits.
func TestMeasuredRooted(t *testing.T) {
	// arrive and leave are relative to 1 s; MPI_Init ends at 1000.
	type member struct{ arrive, leave int64 }
	for _, c := range []struct {
		name    string
		root    int64
		members []member
		want    map[string]int64
		early   int
	}{
		// Root 1 arrives at 6000: rank 0 waited 5000, rank 2 (later) none.
		{"MPI_Bcast", 1, []member{{1000, 6500}, {6000, 6300}, {9000, 9200}},
			map[string]int64{"late_broadcast MPI_Bcast 0": 5000}, 2},
		// Root 0 arrives at 1000, the first other member at 4000 (and
		// leaves before the last arrives), the last at 7000: the root
		// waited for the last (Scalasca 2.6), 6000.
		{"MPI_Reduce", 0, []member{{1000, 7300}, {4000, 4200}, {7000, 7200}},
			map[string]int64{"early_reduce MPI_Reduce 0": 6000}, 1},
		// The root arrives after the first and before the last: it waited
		// for the last, 2000.
		{"MPI_Reduce", 0, []member{{5000, 7300}, {4000, 4200}, {7000, 7200}},
			map[string]int64{"early_reduce MPI_Reduce 0": 2000}, 1},
	} {
		b := testgen.New(3)
		for r, mb := range c.members {
			rk := b.Rank(r)
			initRank(rk, 0)
			call(rk, mb.arrive-1000, mb.leave-mb.arrive, func(r *testgen.Rank) { r.Coll(c.name, c.root, 8, 8) })
			finalize(rk, 1000)
		}
		g, clocks := build(t, b)
		p, err := critpath.ComputeMeasured(g, clocks)
		if err != nil {
			t.Fatal(err)
		}
		s := critpath.Summarize(p, 5)
		ws := waitStates(s)
		for k, want := range c.want {
			if ws[k] != want {
				t.Errorf("%s: %s = %d, want %d (all: %v)", c.name, k, ws[k], want, ws)
			}
		}
		if len(ws) != 1 {
			t.Errorf("%s: wait states %v", c.name, ws)
		}
		if s.Run.Clamped.EarlyExits != c.early {
			t.Errorf("%s: %d early exits, want %d", c.name, s.Run.Clamped.EarlyExits, c.early)
		}
		// The last member's exit then 1000 ns to MPI_Finalize, from the end
		// of MPI_Init at 1000: the run's span.
		var last int64
		for _, mb := range c.members {
			last = max(last, mb.leave)
		}
		if p.Length != float64(last) {
			t.Errorf("%s: length %v, want %d", c.name, p.Length, last)
		}
	}
}

// TestMeasuredNonblockingCollective: rank 0 posts an MPI_Iallreduce early
// and waits 3.5 µs in its MPI_Wait for rank 1 to post; the path runs
// through rank 1's posting, the collective and its fan-out to rank 0's
// wait, and is the run's span.
func TestMeasuredNonblockingCollective(t *testing.T) {
	b := testgen.New(2)
	r0, r1 := b.Rank(0), b.Rank(1)
	initRank(r0, 0)
	initRank(r1, 0)
	var q0, q1 uint64
	call(r0, 1000, 500, func(r *testgen.Rank) { q0 = r.Icoll("MPI_Iallreduce", spec.RootNone, 8, 8) }) // [2000, 2500]
	call(r0, 2500, 4000, func(r *testgen.Rank) { r.Wait(q0) })                                         // [5000, 9000]
	finalize(r0, 1000)                                                                                 // 10000
	call(r1, 7000, 500, func(r *testgen.Rank) { q1 = r.Icoll("MPI_Iallreduce", spec.RootNone, 8, 8) }) // [8000, 8500]
	call(r1, 100, 200, func(r *testgen.Rank) { r.Wait(q1) })                                           // [8600, 8800]
	finalize(r1, 1000)                                                                                 // 9800
	g, clocks := build(t, b)
	p, err := critpath.ComputeMeasured(g, clocks)
	if err != nil {
		t.Fatal(err)
	}
	if p.Length != 9000 {
		t.Errorf("length %v, want 9000", p.Length)
	}
	var names []string
	for i := 0; i < p.NumVertices(); i++ {
		v := p.Vertex(i)
		names = append(names, v.Name)
	}
	if got := strings.Join(names, ","); got != "MPI_Init,MPI_Iallreduce,MPI_Iallreduce,MPI_Wait,MPI_Finalize" {
		t.Errorf("path %s", got)
	}
	// Last posting ends at 8500, the first wait at 8800: the collective
	// weighs 300, its fan-out to rank 0's wait (ending at 9000) 200.
	if v := p.Vertex(2); v.Weight != 300 {
		t.Errorf("collective %+v", v)
	}
	if h := p.Hop(2); h.Kind != taskgraph.CollOut || h.Weight != 200 {
		t.Errorf("fan-out %+v", h)
	}
	s := critpath.Summarize(p, 5)
	ws := waitStates(s)
	if len(ws) != 1 || ws["wait_at_nxn MPI_Iallreduce 0"] != 3500 {
		t.Errorf("wait states %v", ws)
	}
	if s.Computation+s.Communication != s.Length {
		t.Errorf("computation %v + communication %v != length %v", s.Computation, s.Communication, s.Length)
	}
}
