package main_test

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/internal/graphviztest"
)

// TestDotFoldsStencil records the stencil fixture for 1000 iterations on 2
// ranks under Open MPI: the default picture of its critical path (8,000
// vertices) is folded to a few vertices naming the 1000 iterations,
// Graphviz lays it out, and the critpath summary names the repetition.
func TestDotFoldsStencil(t *testing.T) {
	m := mpis[0]
	m.require(t)
	bin := m.compile(t, "stencil")
	out := filepath.Join(t.TempDir(), "traces")
	if r := record(t, out, nil, m.launch(2, bin, "1000", "2000")...); r.code != 0 {
		t.Fatalf("record: exit %d\n%s", r.code, r.stderr)
	}
	r := run(t, filepath.Dir(out), mpitraceBin, "dot", out, "--critical-only")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("dot --critical-only: exit %d, stderr %q", r.code, r.stderr)
	}
	dot := r.stdout
	if n := strings.Count(dot, "shape="); n > 100 {
		t.Errorf("the folded path has %d vertices, want at most 100:\n%.3000s", n, dot)
	}
	// The loop's count: a cluster of N iterations, or M in all for a body
	// nested in the 100 ten-iteration stretches between MPI_Allreduce. On
	// a loaded machine the path can take another route through some
	// stretches (a rank descheduled for milliseconds in an MPI_Allreduce
	// changes the steps of its stretch), and the fold then names the
	// longest run of like stretches: 670 iterations in a CI run. So the
	// count must be most of the 1000 and never more (that the fold names
	// the whole loop whatever the route is issue 19's repetition count).
	found := false
	for _, m := range regexp.MustCompile(`label="(\d+) x |\((\d+) in all\)`).FindAllStringSubmatch(dot, -1) {
		n, _ := strconv.Atoi(m[1] + m[2])
		found = found || n >= 500 && n <= 1000
	}
	if !found {
		t.Errorf("no cluster names most of the 1000 iterations:\n%.3000s", dot)
	}
	graphviztest.Render(t, dot)

	// --unfold draws every vertex of the path.
	r = run(t, filepath.Dir(out), mpitraceBin, "dot", out, "--critical-only", "--unfold")
	if n := strings.Count(r.stdout, "shape="); r.code != 0 || n < 8000 {
		t.Errorf("dot --critical-only --unfold: exit %d, %d vertices", r.code, n)
	}

	r = run(t, filepath.Dir(out), mpitraceBin, "critpath", out, "-o", filepath.Join(t.TempDir(), "critPath.out"))
	if r.code != 0 || !regexp.MustCompile(`\n(the path is )?\d+ iterations of a body of \d+ steps \(`).MatchString(r.stdout) {
		t.Errorf("critpath: exit %d, no repetition line:\n%s", r.code, r.stdout)
	}
}
