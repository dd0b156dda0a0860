package reconstruct_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// compareGroups replays srcs() as one group and in 2 and 3 groups
// (ReplayGroups) and reports how the results differ: "" when they agree.
func compareGroups(srcs func() []tracefmt.Source) (string, error) {
	one, err1 := reconstruct.ReplaySources(srcs(), replayWeights{}, reconstruct.Options{})
	if one != nil {
		defer one.Close()
	}
	for _, groups := range []int{2, 3, 5} {
		res, err := reconstruct.ReplayGroups(srcs(), replayWeights{}, reconstruct.Options{}, groups)
		var ns1, ns *reconstruct.NotStreamableError
		if errors.As(err, &ns) && errors.As(err1, &ns1) {
			continue // declined both ways (for a reason each may find first)
		}
		if (err == nil) != (err1 == nil) || err != nil && err.Error() != err1.Error() {
			if res != nil {
				res.Close()
			}
			return fmt.Sprintf("%d groups: error %v, one group's %v", groups, err, err1), nil
		}
		if err != nil {
			continue
		}
		d, err := sameResult(one, res)
		res.Close()
		if err != nil || d != "" {
			return fmt.Sprintf("%d groups: %s", groups, d), err
		}
	}
	return "", nil
}

// sameResult compares two replays' results (the ids of the steps apart).
func sameResult(a, b *reconstruct.ReplayResult) (string, error) {
	if a.Length != b.Length || a.NumSteps != b.NumSteps || a.RunTime != b.RunTime {
		return fmt.Sprintf("length %v, %d steps, run %d; want %v, %d, %d", b.Length, b.NumSteps, b.RunTime, a.Length, a.NumSteps, a.RunTime), nil
	}
	sa, sb := a.Shape, b.Shape
	sa.IDs, sb.IDs = false, false
	if sa != sb {
		return fmt.Sprintf("shape %+v, want %+v", sb, sa), nil
	}
	if da, db := a.Diags.All(), b.Diags.All(); !slices.Equal(da, db) {
		var sb strings.Builder
		for _, d := range db {
			fmt.Fprintln(&sb, "  ", d)
		}
		sb.WriteString("want\n")
		for _, d := range da {
			fmt.Fprintln(&sb, "  ", d)
		}
		return "diagnostics\n" + sb.String(), nil
	}
	steps := func(r *reconstruct.ReplayResult) ([]reconstruct.ReplayStep, error) {
		var out []reconstruct.ReplayStep
		err := r.Steps(func(st *reconstruct.ReplayStep) error {
			s := *st
			s.ID = 0
			out = append(out, s)
			return nil
		})
		return out, err
	}
	pa, err := steps(a)
	if err != nil {
		return "", err
	}
	pb, err := steps(b)
	if err != nil {
		return "", err
	}
	for i := range pa {
		if pa[i] != pb[i] {
			return fmt.Sprintf("step %d: %+v\nwant %+v", i, pb[i], pa[i]), nil
		}
	}
	return "", nil
}

// TestReplayGroupsGolden: in groups, the replay gives one group's result
// on every golden case and every case where the replay once differed.
func TestReplayGroupsGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.test")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	more, _ := filepath.Glob("testdata/replay/*.test")
	for _, file := range append(files, more...) {
		diff, err := compareGroups(dataSources(goldenRanks(t, file)))
		if err != nil || diff != "" {
			t.Errorf("%s: %v %s", file, err, diff)
		}
	}
}

// TestReplayGroupsRandom: in groups, the replay gives one group's result
// on random traces.
func TestReplayGroupsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	n := 2000
	if testing.Short() {
		n = 300
	}
	for i := 0; i < n; i++ {
		ranks := randomRanks(rng)
		diff, err := compareGroups(dataSources(ranks))
		if err != nil || diff != "" {
			var sb strings.Builder
			for _, d := range ranks {
				_ = tracefmt.WriteText(&sb, d.Source())
			}
			t.Fatalf("case %d: %v %s\n%s", i, err, diff, sb.String())
		}
	}
}

// TestReplayGroupsGenerated: in groups, the replay of generated traces
// and of the stored traces of real runs is one group's.
func TestReplayGroupsGenerated(t *testing.T) {
	var dirs []string
	for _, b := range []*testgen.Builder{testgen.Halo(7, 60, 3), testgen.Serial(2000, 5), testgen.Halo(40, 5, 1)} {
		dir := t.TempDir()
		if err := b.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	stored, _ := filepath.Glob("../fixtures/traces/v*/*")
	for _, dir := range append(dirs, stored...) {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.mpit")); len(m) == 0 {
			continue
		}
		var open []func()
		srcs := func() []tracefmt.Source {
			s, done := spooledSources(t, dir)
			open = append(open, done)
			return s
		}
		diff, err := compareGroups(srcs)
		for _, done := range open {
			done()
		}
		if err != nil || diff != "" {
			t.Errorf("%s: %v %s", dir, err, diff)
		}
	}
}
