package stats

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// TestRanksExchange: the profiles of a real trace's ranks, encoded and
// decoded, merge into the same profile, call-site table and sites.
func TestRanksExchange(t *testing.T) {
	tr, err := tracefmt.OpenDir(filepath.Join("..", "..", "fixtures", "traces", "v5", "callsites"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := OfTrace(tr)
	if err != nil {
		t.Fatal(err)
	}
	if !want.HasSites() {
		t.Fatal("the trace has no call sites")
	}
	b, err := EncodeRanks(want.Ranks)
	if err != nil {
		t.Fatal(err)
	}
	ranks, err := DecodeRanks(b)
	if err != nil {
		t.Fatal(err)
	}
	got := Merge(ranks)
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if string(gj) != string(wj) {
		t.Errorf("profile\n%s\nwant\n%s", gj, wj)
	}
	label := func(rank int, site uint32) (string, string) {
		addr, _ := want.Ranks[rank].Sites().Addr(uint64(site))
		return string(rune('a'+rank)) + ":" + string(rune('0'+addr%10)), ""
	}
	if g, w := got.BySite(label), want.BySite(label); !reflect.DeepEqual(g, w) || len(w) == 0 {
		t.Errorf("by site %v, want %v", g, w)
	}
	for i := range want.Ranks {
		if !reflect.DeepEqual(got.Ranks[i].Sites().IDs(), want.Ranks[i].Sites().IDs()) ||
			!reflect.DeepEqual(got.Ranks[i].Sites().Mappings(), want.Ranks[i].Sites().Mappings()) {
			t.Errorf("rank %d: sites differ", i)
		}
	}
}
