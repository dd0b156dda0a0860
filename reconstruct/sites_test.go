package reconstruct_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// Every vertex reaches its call site: operations (a Waitall's expanded
// requests share their call's), each member's call of a collective, and
// every rank's table and mappings.
func TestGraphSites(t *testing.T) {
	const text = `rank 0
meta size="2"
Map addr=0x1000 size=256 fileoff=0x0 path=/app
Site site=1 addr=0x1010
Call fn=MPI_Init site=1
Site site=2 addr=0x1020
Irecv fn=MPI_Irecv peer=1 tag=1 comm=1 bytes=8 req=1 site=2
Site site=3 addr=0x1030
Send fn=MPI_Isend peer=1 tag=2 comm=1 bytes=8 req=2 site=3
Site site=4 addr=0x1040
Complete fn=MPI_Waitall flag=1 site=4 completions=[{req=1 src=1 stag=1 sbytes=8},{req=2}]
Site site=5 addr=0x1050
Coll fn=MPI_Barrier comm=1 root=-3 site=5
Call fn=MPI_Finalize
rank 1
meta size="2"
Site site=1 addr=0x2010
Call fn=MPI_Init site=1
Send fn=MPI_Send peer=0 tag=1 comm=1 bytes=8 site=0
Site site=2 addr=0x2020
Recv fn=MPI_Recv peer=0 tag=2 comm=1 bytes=8 src=0 stag=2 sbytes=8 site=2
Site site=7 addr=0x2070
Coll fn=MPI_Barrier comm=1 root=-3 site=7
Call fn=MPI_Finalize
`
	ranks, err := tracefmt.ParseText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := reconstruct.BuildFromRanks(ranks, reconstruct.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int][]uint32{}
	for r := 0; r < 2; r++ {
		first, n := g.RankOps(r)
		for v := first; v < first+taskgraph.NodeID(n); v++ {
			rank, site := g.OpSite(v)
			if rank != r {
				t.Errorf("op %d: rank %d, want %d", v, rank, r)
			}
			got[r] = append(got[r], site)
			if s := g.EventSite(r, g.OpEvent(v)); s != site {
				t.Errorf("op %d: EventSite %d, OpSite %d", v, s, site)
			}
		}
		g.RankCollectives(r, func(v taskgraph.NodeID, ev int64) bool {
			want := map[int]uint32{0: 5, 1: 7}[r]
			if s := g.PartSite(v, r); s != want || g.EventSite(r, ev) != want {
				t.Errorf("rank %d collective %d: site %d, want %d", r, v, s, want)
			}
			return true
		})
	}
	// Rank 0: Irecv, Isend, the Waitall's two requests; rank 1: Send
	// (site unknown), Recv.
	if !slices.Equal(got[0], []uint32{2, 3, 4, 4}) || !slices.Equal(got[1], []uint32{0, 2}) {
		t.Errorf("op sites %v", got)
	}
	if r, s := g.OpSite(taskgraph.NodeID(0)); r != -1 || s != 0 {
		t.Errorf("the Init vertex: rank %d site %d", r, s)
	}
	s0 := g.RankSites(0)
	if a, ok := s0.Addr(4); !ok || a != 0x1040 || s0.Len() != 5 {
		t.Errorf("rank 0 table: %v", s0.IDs())
	}
	if m := s0.Mappings(); len(m) != 1 || m[0] != (tracefmt.Mapping{Start: 0x1000, End: 0x1100, Path: "/app"}) {
		t.Errorf("rank 0 mappings %+v", m)
	}
	if a, _ := g.RankSites(1).Addr(7); a != 0x2070 || len(g.RankSites(1).Mappings()) != 0 {
		t.Errorf("rank 1 table %v", g.RankSites(1).IDs())
	}
	if g.RankSites(5).Len() != 0 {
		t.Error("a rank outside the world has sites")
	}
}
