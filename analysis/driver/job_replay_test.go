package driver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// replayDigest is what a replay's result says: its length, steps (ids
// apart: a replay in groups does not number them), run time, shape and
// diagnostics, as text.
func replayDigest(res *reconstruct.ReplayResult) (string, error) {
	var b strings.Builder
	sh := res.Shape
	sh.IDs = false
	fmt.Fprintf(&b, "length %v steps %d run %d shape %+v\n", res.Length, res.NumSteps, res.RunTime, sh)
	for _, d := range res.Diags.All() {
		fmt.Fprintln(&b, d)
	}
	err := res.Steps(func(st *reconstruct.ReplayStep) error {
		s := *st
		s.ID = 0
		fmt.Fprintf(&b, "%+v\n", s)
		return nil
	})
	return b.String(), err
}

func critpathModel() reconstruct.ReplayWeights { return critpath.ModelWeights(latency.Default()) }

func replayOpts() reconstruct.Options { return reconstruct.Options{} }

// serialDigest is the single replay's digest of dir, or its error.
func serialDigest(dir string) (string, error) {
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		return "", err
	}
	res, err := reconstruct.ReplayTrace(tr, critpathModel(), replayOpts())
	if err != nil {
		return "", err
	}
	defer res.Close()
	return replayDigest(res)
}

// jobDigest is process 0's digest of dir replayed by a job of p
// processes (Job.Replay), or the error every process got.
func jobDigest(dir string, p int) (string, error) {
	digests := make([]string, p)
	errs := runLocal(p, func(x Exchange) error {
		j, err := OpenJob(dir, x, nil)
		if err != nil {
			return err
		}
		res, err := j.Replay(critpathModel(), replayOpts())
		if err != nil {
			return err
		}
		if (res != nil) != (x.Rank() == 0) {
			return fmt.Errorf("process %d: result %v", x.Rank(), res != nil)
		}
		if res != nil {
			defer res.Close()
			digests[x.Rank()], err = replayDigest(res)
		}
		return err
	})
	for q, err := range errs {
		if (err == nil) != (errs[0] == nil) || err != nil && err.Error() != errs[0].Error() {
			return "", fmt.Errorf("process %d's error %v, process 0's %v", q, err, errs[0])
		}
	}
	return digests[0], errs[0]
}

// TestJobReplay: a job of 1 to 4 processes, each replaying its ranks,
// finds the single replay's path and diagnostics on every stored trace
// and on generated ones (a trace the replay declines, declined alike).
func TestJobReplay(t *testing.T) {
	var dirs []string
	stored, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "traces", "v*", "*"))
	for _, d := range stored {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			dirs = append(dirs, d)
		}
	}
	for i, size := range []int{5, 33} {
		d := filepath.Join(t.TempDir(), fmt.Sprint("halo", size))
		if err := testgen.Halo(size, 12, uint64(i+1)).WriteDir(d); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	if len(dirs) < 10 {
		t.Fatalf("%d traces: the stored traces are missing", len(dirs))
	}
	compared := 0
	for _, dir := range dirs {
		want, werr := serialDigest(dir)
		for p := 1; p <= 4; p++ {
			got, err := jobDigest(dir, p)
			var ns1, ns2 *reconstruct.NotStreamableError
			switch {
			case errors.As(werr, &ns1) && errors.As(err, &ns2):
				// Declined both ways (for a reason each may find first).
			case werr != nil || err != nil:
				if werr == nil || err == nil || werr.Error() != err.Error() {
					t.Errorf("%s, %d processes: error %v, single replay's %v", dir, p, err, werr)
				}
			case got != want:
				t.Errorf("%s, %d processes:\n%s\nwant\n%s", dir, p, got, want)
			default:
				compared++
			}
		}
	}
	if compared < 4*len(dirs)/2 {
		t.Errorf("only %d of %d replays found a path to compare", compared, 4*len(dirs))
	}
}
