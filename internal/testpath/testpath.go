// Package testpath is what tests share to get a critical path from a
// synthetic trace: write it, read it back, rebuild its task graph and find
// its path.
package testpath

import (
	"path/filepath"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// Of writes b's trace to a temporary directory of t and returns its task
// graph and its critical path under model m; any failure fails t.
func Of(t testing.TB, b *testgen.Builder, m critpath.Model) (*taskgraph.Graph, *critpath.Path) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "traces")
	if err := b.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := reconstruct.Build(tr, reconstruct.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := critpath.Compute(g, m)
	if err != nil {
		t.Fatal(err)
	}
	return g, p
}
