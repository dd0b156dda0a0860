package tracefmt

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// sitesText is a rank of format 5: the mappings, two sites on the main
// thread, a third defined on thread 1, and a call on thread 0 using it
// before its Site event in time.
const sitesText = `rank 0
meta rank="0"
meta size="1"
meta run_id="r"
string 1 "MPI_Init"
string 2 "/bin/app"
string 3 "00aa11bb"
string 4 "/lib/libm.so"
string 5 "MPI_Barrier"
t=10 thr=0 Map addr=0x400000 size=4096 fileoff=0x1000 path=/bin/app buildid=00aa11bb
t=10 thr=0 Map addr=0x7f0000 size=100 fileoff=0x0 path=/lib/libm.so buildid=#0
t=10 thr=0 Site site=1 addr=0x400123
t=10 thr=0 Call fn=MPI_Init dur=5 site=1
t=20 thr=0 Site site=2 addr=0x400200
t=20 thr=0 Coll fn=MPI_Barrier dur=5 comm=1 root=-3 site=2
t=30 thr=0 Coll fn=MPI_Barrier dur=5 comm=1 root=-3 site=3
t=40 thr=1 Site site=3 addr=0x7f0010
t=40 thr=1 Coll fn=MPI_Barrier dur=5 comm=1 root=-3 site=3
t=50 thr=0 Coll fn=MPI_Barrier dur=5 comm=1 root=-3 site=2
`

func TestSitesReadBack(t *testing.T) {
	data := binaryOf(t, sitesText)
	r, err := NewRankReader(bytes.NewReader(data), "rank-00000.mpit")
	if err != nil {
		t.Fatal(err)
	}
	var sites []uint64
	for r.Next() {
		if spec.Kinds[r.Event().Kind].IsCall {
			sites = append(sites, r.Event().Site())
		}
	}
	if want := []uint64{1, 2, 3, 3, 2}; !slices.Equal(sites, want) {
		t.Errorf("call sites %v, want %v", sites, want)
	}
	s := r.Sites()
	if s.Len() != 3 || !slices.Equal(s.IDs(), []uint64{1, 2, 3}) {
		t.Fatalf("table %v", s.IDs())
	}
	for id, want := range map[uint64]uint64{1: 0x400123, 2: 0x400200, 3: 0x7f0010} {
		if a, ok := s.Addr(id); !ok || a != want {
			t.Errorf("site %d: %#x %v, want %#x", id, a, ok, want)
		}
	}
	if _, ok := s.Addr(4); ok {
		t.Error("site 4 defined")
	}
	want := []Mapping{{Start: 0x400000, End: 0x401000, Offset: 0x1000, Path: "/bin/app", BuildID: "00aa11bb"},
		{Start: 0x7f0000, End: 0x7f0064, Path: "/lib/libm.so"}}
	if !slices.Equal(s.Mappings(), want) {
		t.Errorf("mappings %+v, want %+v", s.Mappings(), want)
	}
	// The in-memory form gathers the same table.
	ds, err := ParseText(strings.NewReader(sitesText))
	if err != nil {
		t.Fatal(err)
	}
	if d := ds[0].Sites(); !slices.Equal(d.IDs(), s.IDs()) || !slices.Equal(d.Mappings(), s.Mappings()) {
		t.Errorf("RankData.Sites %v %v", d.IDs(), d.Mappings())
	}
	if d := SitesOf(ds[0].Source()); d.Len() != 3 {
		t.Errorf("SitesOf(RankData source): %d sites", d.Len())
	}
	// The dump shows sites and addresses, and reads back the same.
	txt := textOf(t, data)
	for _, line := range []string{"Site site=3 addr=0x7f0010", "Coll fn=MPI_Barrier dur=5 comm=1 root=-3 bytes=0 rbytes=0 req=0 site=2",
		"Map addr=0x400000 size=4096 fileoff=0x1000 path=/bin/app buildid=00aa11bb"} {
		if !strings.Contains(txt, line) {
			t.Errorf("dump lacks %q:\n%s", line, txt)
		}
	}
	if again := textOf(t, binaryOf(t, txt)); again != txt {
		t.Errorf("text round trip differs:\n%s\n%s", txt, again)
	}
	// A valid table: no diagnostics (site 3 used on thread 0 before thread
	// 1 defines it is fine).
	r2, _ := NewRankReader(bytes.NewReader(data), "x")
	d, err := Validate(r2)
	if err != nil || d.Len() != 0 {
		t.Errorf("validate: %v %s", err, d.Summary())
	}
}

func TestValidateSites(t *testing.T) {
	bad := sitesText + "t=60 thr=0 Call fn=MPI_Init site=9\nt=60 thr=0 Site site=2 addr=0x1\nt=60 thr=0 Site site=0 addr=0x1\n"
	r, err := NewRankReader(bytes.NewReader(binaryOf(t, bad)), "x")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := Validate(r)
	if d.CountCode(CodeUndefinedSite) != 1 || d.CountCode(CodeBadSite) != 2 {
		t.Fatalf("diagnostics: %s", d.Summary())
	}
	for _, x := range d.All() {
		if x.Code == CodeUndefinedSite && !strings.Contains(x.Message, "site 9 used") {
			t.Errorf("%v", x)
		}
		if x.Code == CodeBadSite && !strings.Contains(x.Message, "already defined with address 0x400200") &&
			!strings.Contains(x.Message, "id 0 means no site") {
			t.Errorf("%v", x)
		}
	}
	// The table keeps the first definition.
	r2, _ := NewRankReader(bytes.NewReader(binaryOf(t, bad)), "x")
	for r2.Next() {
	}
	if a, _ := r2.Sites().Addr(2); a != 0x400200 {
		t.Errorf("site 2 at %#x", a)
	}
}

// Files of earlier versions have no sites: every call reads site 0 and the
// table is empty.
func TestSitesOldVersion(t *testing.T) {
	r, err := OpenRank("testdata/v4/every-kind.mpit")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
		if r.Event().Site() != 0 {
			t.Fatalf("version 4 event with a site: %+v", r.Event())
		}
	}
	if r.Sites().Len() != 0 || len(r.Sites().Mappings()) != 0 {
		t.Error("version 4 file with a site table")
	}
}
