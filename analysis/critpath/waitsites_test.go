package critpath_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/internal/testmodel"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// twoRecvGraph: rank 0 receives twice, at call sites 1 and 2 of its table,
// each message sent late by rank 1 (its sites 5 and 6): rank 0 waits
// 39990 ns in the first MPI_Recv and 39900 ns in the second.
func twoRecvGraph(t *testing.T) *taskgraph.Graph {
	t.Helper()
	b := taskgraph.NewBuilder(2)
	send, recv := b.Name("MPI_Send"), b.Name("MPI_Recv")
	r0, r1 := b.Rank(0), b.Rank(1)
	r0.SetInit(0)
	r1.SetInit(0)
	r0.AddOp(taskgraph.Op{Name: recv, Kind: spec.Recv, Start: 10, End: 50_000, Bytes: 8, Event: 0})
	r0.SetSite(0, 1)
	r0.AddOp(taskgraph.Op{Name: recv, Kind: spec.Recv, Start: 50_100, End: 100_000, Bytes: 8, Event: 1})
	r0.SetSite(1, 2)
	r1.AddOp(taskgraph.Op{Name: send, Kind: spec.Send, Start: 40_000, End: 40_100, Bytes: 8, Event: 0})
	r1.SetSite(0, 5)
	r1.AddOp(taskgraph.Op{Name: send, Kind: spec.Send, Start: 90_000, End: 90_100, Bytes: 8, Event: 1})
	r1.SetSite(1, 6)
	r0.SetFinalize(100_100)
	r1.SetFinalize(95_000)
	if err := b.Layout(); err != nil {
		t.Fatal(err)
	}
	for i := range uint32(2) {
		if err := r0.AddIncoming(i, b.OpID(1, i), 8); err != nil {
			t.Fatal(err)
		}
	}
	g, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func twoRecvNames(rank int, site uint32) string {
	switch {
	case rank == 0 && site == 1:
		return "w.c:10 first"
	case rank == 0 && site == 2:
		return "w.c:20 second"
	case rank == 1 && site == 5:
		return "w.c:30 sendA"
	case rank == 1 && site == 6:
		return "w.c:40 sendB"
	}
	return ""
}

// TestWaitStatesBySite: the two receives of one rank and function wait
// at different call sites: two rows, each labelled; labels that name both
// sites alike merge them; without labels the table has no call-site
// column.
func TestWaitStatesBySite(t *testing.T) {
	g := twoRecvGraph(t)
	p, err := critpath.ComputeMeasured(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := critpath.Summarize(p, 5)
	if len(s.Run.WaitStates) != 2 {
		t.Fatalf("wait states %+v, want two rows", s.Run.WaitStates)
	}
	var plain bytes.Buffer
	if err := s.WriteText(&plain, critpath.Microsecond); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "call site") {
		t.Errorf("summary without labels has a call-site column:\n%s", plain.String())
	}
	s.Run.LabelSites(twoRecvNames)
	got := map[string]int64{}
	for _, w := range s.Run.WaitStates {
		if w.State != critpath.StateLateSender || w.Rank != 0 || w.Function != "MPI_Recv" || w.Count != 1 {
			t.Errorf("wait state %+v", w)
		}
		got[w.Site] = w.Time
	}
	if got["w.c:10 first"] != 39_990 || got["w.c:20 second"] != 39_900 {
		t.Errorf("wait states by site %v", got)
	}
	var out bytes.Buffer
	if err := s.WriteText(&out, critpath.Microsecond); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"share  call site\n", "39.990 us   40.0%  w.c:10 first\n", "39.900 us   39.9%  w.c:20 second\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	js, err := json.Marshal(s.Run.WaitStates)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"site":"w.c:10 first"`) {
		t.Errorf("JSON lacks the site: %s", js)
	}

	// One label for both sites: one row of 2 calls; an unlabelled site
	// is the unknown call site.
	s = critpath.Summarize(p, 5)
	s.Run.LabelSites(func(r int, site uint32) string { return "w.c:5 recvs" })
	if ws := s.Run.WaitStates; len(ws) != 1 || ws[0].Count != 2 || ws[0].Time != 79_890 || ws[0].Site != "w.c:5 recvs" {
		t.Errorf("merged wait states %+v", ws)
	}
	s = critpath.Summarize(p, 5)
	s.Run.LabelSites(func(int, uint32) string { return "" })
	if ws := s.Run.WaitStates; len(ws) != 1 || ws[0].Site != critpath.UnknownSite {
		t.Errorf("unlabelled wait states %+v", ws)
	}
}

// TestExplainBySite: the why block splits the messages beyond the model
// by the receiving call site, and names the call sites at both ends of
// its largest contributions.
func TestExplainBySite(t *testing.T) {
	g := twoRecvGraph(t)
	mp, err := critpath.Compute(g, testmodel.Round{})
	if err != nil {
		t.Fatal(err)
	}
	meas, err := critpath.ComputeMeasured(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	if why := critpath.Explain(mp, meas, 5, nil); len(why.BySite) != 0 || why.Largest[0].FromSite != "" {
		t.Errorf("without labels: by site %+v, largest %+v", why.BySite, why.Largest)
	}
	why := critpath.Explain(mp, meas, 5, twoRecvNames)
	bySite := map[string]float64{}
	for _, c := range why.BySite {
		if c.Measured <= c.Model {
			t.Errorf("by site row without a positive difference: %+v", c)
		}
		bySite[c.Site+" "+c.Cause+" "+c.Function] = c.Measured - c.Model
	}
	// The run's path: rank 1's two sends (the first one's 100 ns inside
	// the call after it took effect, which the model weighs 0), the
	// message into the second receive, 10000 ns measured (sent at 90000,
	// received at 100000) against the model's 1008.
	want := map[string]float64{"w.c:20 second message MPI_Recv": 10_000 - 1008, "w.c:30 sendA inside MPI_Send": 100}
	if len(bySite) != len(want) {
		t.Errorf("by site %v, want %v", bySite, want)
	}
	for k, w := range want {
		if bySite[k] != w {
			t.Errorf("by site %q = %v, want %v (all: %v)", k, bySite[k], w, bySite)
		}
	}
	var msg *critpath.WhyItem
	for i := range why.Largest {
		if why.Largest[i].Cause == "message" {
			msg = &why.Largest[i]
			break
		}
	}
	if msg == nil || msg.FromSite != "w.c:40 sendB" || msg.ToSite != "w.c:20 second" {
		t.Fatalf("largest %+v: no message with the call sites of both ends", why.Largest)
	}
	s := critpath.Summarize(mp, 5)
	s.Why = why
	var out bytes.Buffer
	if err := s.WriteText(&out, critpath.Microsecond); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"the largest by call site", "w.c:20 second: messages into MPI_Recv", "message 8 bytes: MPI_Send 1 at w.c:40 sendB -> MPI_Recv 0 at w.c:20 second"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
}
