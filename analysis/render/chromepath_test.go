package render

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// TestChromePathReplay: on the stored traces of real runs, the export's
// marks of the path the replay finds are those of the graph's path: the
// same calls of each rank, the same steps of the path's track.
func TestChromePathReplay(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "fixtures", "traces", "v*", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatal(dirs, err)
	}
	compared := 0
	for _, dir := range dirs {
		tr, err := tracefmt.OpenDir(dir)
		if err != nil {
			continue // not a trace directory
		}
		g, _, err := reconstruct.Build(tr, reconstruct.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := latency.Default()
		p, err := critpath.Compute(g, m)
		if err != nil {
			continue
		}
		want, err := NewChromePath(p.StepPath())
		if err != nil {
			t.Fatal(err)
		}
		res, err := reconstruct.ReplayTrace(tr, critpath.ModelWeights(m), reconstruct.Options{})
		if err != nil {
			t.Logf("%s: %v", dir, err)
			continue
		}
		got, err := NewChromePath(critpath.ReplayPath(res, critpath.WeightsModel, m, nil))
		if err != nil {
			t.Fatal(err)
		}
		gm, wm := marksOf(t, got), marksOf(t, want)
		res.Close()
		if gm != wm {
			t.Errorf("%s: the replay's marks\n%s\nthe graph's\n%s", dir, gm, wm)
		}
		if len(want.events) == 0 || len(want.steps) == 0 || got.sp == nil || len(got.steps) != 0 {
			t.Errorf("%s: no call or step marked, or the replay's track held (%d steps)", dir, len(got.steps))
		}
		compared++
	}
	if compared < len(dirs)/2 {
		t.Errorf("compared %d of %d", compared, len(dirs))
	}
}

// marksOf lists what cp marks: each rank's calls, the track's steps.
func marksOf(t *testing.T, cp *ChromePath) string {
	var b strings.Builder
	ranks := slices.Sorted(maps.Keys(cp.events))
	for _, r := range ranks {
		fmt.Fprintf(&b, "rank %d: %v\n", r, cp.Events(r))
	}
	if err := cp.track(func(s *trackStep) { fmt.Fprintf(&b, "%+v\n", *s) }); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "length %v\n", cp.length)
	return b.String()
}

// TestPathEvents: a rank's events on the path, given in any order and
// repeated, read back sorted and once, and a cursor finds exactly them.
func TestPathEvents(t *testing.T) {
	in := []int64{3, 3, 4, 10, 2, 300, 301, 7, 100000, 5, 100000, 0}
	pe := &pathEvents{last: -1}
	for _, ev := range in {
		pe.add(ev)
	}
	pe.finish()
	cp := &ChromePath{events: map[int]*pathEvents{1: pe}}
	want := []int64{0, 2, 3, 4, 5, 7, 10, 300, 301, 100000}
	if got := cp.Events(1); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	c := cp.cursorOf(1)
	var found []int64
	for idx := int64(0); idx <= 100001; idx++ {
		if c.has(idx) {
			found = append(found, idx)
		}
	}
	if !slices.Equal(found, want) {
		t.Errorf("the cursor finds %v, want %v", found, want)
	}
	if none := cp.cursorOf(2); none.has(0) || none.has(5) {
		t.Error("a rank without events on the path has some")
	}
	var zero pathCursor
	if zero.has(0) {
		t.Error("the zero cursor has event 0")
	}
}
