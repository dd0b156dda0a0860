package render

import (
	"path/filepath"
	"reflect"
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
		res.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the replay's marks\n%+v\nthe graph's\n%+v", dir, got, want)
		}
		if len(want.events) == 0 || len(want.steps) == 0 {
			t.Errorf("%s: no call or step marked", dir)
		}
		compared++
	}
	if compared < len(dirs)/2 {
		t.Errorf("compared %d of %d", compared, len(dirs))
	}
}
