package reconstruct_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

var randomFns = []string{
	"MPI_Init", "MPI_Init_thread", "MPI_Finalize", "MPI_Wtime", "MPI_Send", "MPI_Isend", "MPI_Send_init", "MPI_Ssend_init_c",
	"MPI_Recv", "MPI_Mrecv", "MPI_Irecv", "MPI_Imrecv", "MPI_Recv_init", "MPI_Sendrecv", "MPI_Probe", "MPI_Mprobe", "MPI_Improbe",
	"MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Testsome", "MPI_Testall", "MPI_Test", "MPI_Start", "MPI_Startall",
	"MPI_Request_free", "MPI_Cancel", "MPI_Barrier", "MPI_Bcast", "MPI_Ibarrier", "MPI_Iallreduce", "MPI_Alltoall", "MPI_Gatherv",
	"MPI_Comm_split", "MPI_Comm_dup", "MPI_Comm_create_group", "MPI_Comm_free",
}

// randomRanks makes a world of random, mostly inconsistent, event streams.
func randomRanks(rng *rand.Rand) []*tracefmt.RankData {
	size := 1 + rng.IntN(4)
	out := make([]*tracefmt.RankData, size)
	for r := range out {
		d := &tracefmt.RankData{Header: tracefmt.NewHeader(r, size, "random")}
		for i, fn := range randomFns {
			d.Strings.Define(uint64(i+1), fn)
		}
		t := int64(rng.IntN(1000))
		n := rng.IntN(40)
		small := func(lo, hi int) int64 { return int64(lo + rng.IntN(hi-lo+1)) }
		for i := 0; i < n; i++ {
			ev := tracefmt.Event{Kind: spec.Kind(1 + rng.IntN(int(spec.NumKinds)-1))}
			ev.SetUint(spec.Fn, uint64(1+rng.IntN(len(randomFns)+1))) // sometimes an unknown id
			ev.Start = t + small(-50, 500)
			ev.F[spec.Dur] = small(0, 300)
			ev.End = ev.Start + ev.F[spec.Dur]
			t = ev.End
			for _, f := range []spec.Field{spec.Peer, spec.Src, spec.RPeer, spec.Root} {
				ev.Set(f, small(-5, size))
			}
			for _, f := range []spec.Field{spec.Tag, spec.STag, spec.RTag} {
				ev.Set(f, small(-1, 2))
			}
			ev.SetUint(spec.Comm, uint64(small(0, 5)))
			ev.SetUint(spec.Parent, uint64(small(0, 4)))
			ev.SetUint(spec.GID, uint64(small(1, 12)))
			ev.SetUint(spec.Req, uint64(small(0, 5)))
			ev.SetUint(spec.Bytes, uint64(small(0, 64)))
			ev.SetUint(spec.SBytes, uint64(small(0, 64)))
			ev.SetUint(spec.RBytes, uint64(small(0, 64)))
			ev.SetUint(spec.Flag, uint64(small(0, 1)))
			switch spec.Kinds[ev.Kind].List {
			case spec.ListRanks:
				for k := small(0, 4); k > 0; k-- {
					ev.Ranks = append(ev.Ranks, small(-1, size))
				}
			case spec.ListReqs:
				for k := small(0, 3); k > 0; k-- {
					ev.Reqs = append(ev.Reqs, uint64(small(0, 5)))
				}
			case spec.ListCompletions:
				for k := small(0, 3); k > 0; k-- {
					ev.Completions = append(ev.Completions, tracefmt.Completion{Req: uint64(small(0, 5)), Src: small(-5, size),
						Tag: small(-1, 2), Bytes: uint64(small(0, 64)), Flags: uint64(small(0, 3))})
				}
			}
			d.Events = append(d.Events, ev)
		}
		if rng.IntN(4) > 0 {
			d.End = &tracefmt.End{Reason: spec.EndFinalize}
		}
		out[r] = d
	}
	return out
}

// TestRandomEvents: whatever the events, reconstruction neither panics nor
// fails, and the graph it builds is consistent; the critical path either
// exists or is a cycle error.
func TestRandomEvents(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cycles := 0
	for i := 0; i < 3000; i++ {
		ranks := randomRanks(rng)
		g, diags, err := reconstruct.BuildFromRanks(ranks, reconstruct.Options{Workers: 1 + i%3})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		_ = diags.Summary()
		p, err := critpath.Compute(g, testModel{})
		var ce *taskgraph.CycleError
		switch {
		case errors.As(err, &ce):
			cycles++
			continue
		case errors.Is(err, critpath.ErrEmpty):
			continue
		case err != nil:
			t.Fatalf("case %d: %v", i, err)
		}
		if p.NumVertices() < 2 {
			t.Fatalf("case %d: path %+v", i, p)
		}
		checkGraph(t, g)
		if t.Failed() {
			t.Fatalf("case %d", i)
		}
	}
	t.Logf("%d cycles", cycles)
}

// FuzzBuild drives TestRandomEvents' generator from the fuzzer's seed.
//
//	go test ./reconstruct -run '^$' -fuzz FuzzBuild -fuzztime 30s
func FuzzBuild(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(11), uint64(12))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		ranks := randomRanks(rand.New(rand.NewPCG(a, b)))
		g, _, err := reconstruct.BuildFromRanks(ranks, reconstruct.Options{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := critpath.Compute(g, testModel{}); err != nil {
			var ce *taskgraph.CycleError
			if !errors.As(err, &ce) && !errors.Is(err, critpath.ErrEmpty) {
				t.Fatal(err)
			}
			return
		}
		checkGraph(t, g)
	})
}
