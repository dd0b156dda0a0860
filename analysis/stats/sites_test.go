package stats

import (
	"bytes"
	"strings"
	"testing"
)

func TestBySite(t *testing.T) {
	mk := func(rank int, mpi int64, sites map[siteKey][]int64) *Rank {
		r := &Rank{Rank: rank, MPINs: mpi, AppNs: 10 * mpi, bySite: map[siteKey]*Func{}}
		for k, durs := range sites {
			f := &Func{Name: k.fn}
			for _, d := range durs {
				f.add(d)
			}
			f.Sent = uint64(len(durs)) * 100
			r.bySite[k] = f
		}
		return r
	}
	// Ranks 0 and 1 call MPI_Waitall at the same line through different
	// site ids; rank 1's site 9 is not in its table; MPI_Init is left out.
	p := Merge([]*Rank{
		mk(1, 1000, map[siteKey][]int64{{2, "MPI_Waitall"}: {300, 500}, {9, "MPI_Send"}: {50}, {0, "MPI_Recv"}: {150}}),
		mk(0, 1000, map[siteKey][]int64{{1, "MPI_Waitall"}: {500, 100}, {3, "MPI_Send"}: {400}, {4, "MPI_Init"}: {1e9}}),
	})
	label := func(rank int, site uint32) (string, string) {
		switch {
		case rank == 0 && site == 1, rank == 1 && site == 2:
			return "stencil.c:88 exchange", "/src/stencil.c:88 exchange"
		case rank == 0 && site == 3:
			return "stencil.c:90 exchange", "/src/stencil.c:90 exchange"
		}
		return "", ""
	}
	if !p.HasSites() {
		t.Fatal("HasSites() = false")
	}
	got := p.BySite(label)
	var b strings.Builder
	for _, s := range got {
		b.WriteString(s.Site + " " + s.Name + "\n")
	}
	want := "stencil.c:88 exchange MPI_Waitall\nstencil.c:90 exchange MPI_Send\n(unknown call site) MPI_Recv\n(unknown call site) MPI_Send\n"
	if b.String() != want {
		t.Fatalf("rows:\n%s\nwant\n%s", b.String(), want)
	}
	w := got[0]
	if w.Calls != 4 || w.TotalNs != 1400 || w.MaxNs != 500 || w.MaxRank != 0 || w.Ranks != 2 || w.Sent != 400 || w.Location != "/src/stencil.c:88 exchange" {
		t.Errorf("Waitall row: %+v", w)
	}
	if w.MPIShare != 0.7 {
		t.Errorf("Waitall share %v, want 0.7", w.MPIShare)
	}
	var out bytes.Buffer
	if err := WriteSitesText(&out, p, got, 3); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"call site", "stencil.c:88 exchange  MPI_Waitall  4", "(1 more)"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, out.String())
		}
	}
	if strings.Contains(out.String(), "  MPI_Init") {
		t.Errorf("MPI_Init in the call-site table:\n%s", out.String())
	}
	if Merge([]*Rank{mk(0, 1, map[siteKey][]int64{{0, "MPI_Send"}: {1}})}).HasSites() {
		t.Error("a profile without sites: HasSites() = true")
	}
}
