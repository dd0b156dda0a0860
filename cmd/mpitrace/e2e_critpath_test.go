package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// critPathItems reads a critPath.out, checking its strict format on the
// way: one item per line, vertices ("MPI_Name rank") alternating with
// integer edges, single spaces, '\n' line ends and a final '\n'.
func critPathItems(t *testing.T, path string) (vertices []string, edges []int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasSuffix(s, "\n") || strings.Contains(s, "\r") || strings.Contains(s, "  ") {
		t.Fatalf("%s: not '\\n'-terminated single-spaced lines:\n%q", path, s)
	}
	vertexRE := regexp.MustCompile(`^MPI_[A-Z][a-z_A-Z0-9]* (-1|[0-9]+)$`)
	for i, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if i%2 == 0 {
			if !vertexRE.MatchString(line) {
				t.Fatalf("%s line %d: %q is not a vertex", path, i+1, line)
			}
			vertices = append(vertices, line)
			continue
		}
		v, err := strconv.ParseInt(line, 10, 64)
		if err != nil || v < 0 {
			t.Fatalf("%s line %d: %q is not an integer edge", path, i+1, line)
		}
		edges = append(edges, v)
	}
	if len(vertices) != len(edges)+1 || vertices[0] != "MPI_Init -1" || vertices[len(vertices)-1] != "MPI_Finalize -1" {
		t.Fatalf("%s: must run from MPI_Init -1 to MPI_Finalize -1 alternating with edges: %v", path, vertices)
	}
	return vertices, edges
}

// TestCritpathKnown records programs whose critical path is known by
// construction (fixtures/programs/known.c) and checks the exact vertex
// sequence of critPath.out, and that the computation edges are at least the
// time each rank was made to compute (a sleep: a lower bound, not a timing
// equality), ordered as constructed.
func TestCritpathKnown(t *testing.T) {
	const unitMs = 100
	unitUs := int64(unitMs * 1000)
	for _, m := range mpis {
		bin := ""
		for _, tc := range []struct {
			mode     string
			vertices []string
			// compute lists, for the edge before the given vertex index,
			// the units of computation the program does there.
			compute map[int]int64
			bytes   map[int]int64 // message edges before vertex index: bytes
		}{
			{"late",
				[]string{"MPI_Init -1", "MPI_Comm_rank 2", "MPI_Comm_size 2", "MPI_Send 2", "MPI_Recv 0", "MPI_Finalize -1"},
				map[int]int64{3: 3, 5: 1}, map[int]int64{4: 1024}},
			{"chain",
				[]string{"MPI_Init -1", "MPI_Comm_rank 0", "MPI_Comm_size 0", "MPI_Send 0", "MPI_Recv 1", "MPI_Send 1",
					"MPI_Recv 2", "MPI_Send 2", "MPI_Recv 3", "MPI_Finalize -1"},
				map[int]int64{3: 1, 5: 2, 7: 3, 9: 4}, map[int]int64{4: 32, 6: 32, 8: 32}},
			{"coll",
				[]string{"MPI_Init -1", "MPI_Comm_rank 3", "MPI_Comm_size 3", "MPI_Barrier -1", "MPI_Finalize -1"},
				map[int]int64{3: 4, 4: 1}, nil},
		} {
			t.Run(m.name+"/"+tc.mode, func(t *testing.T) {
				m.require(t)
				if bin == "" {
					bin = m.compile(t, "known")
				}
				dir := t.TempDir()
				out := filepath.Join(dir, "traces")
				if r := record(t, out, nil, m.launch(4, bin, tc.mode, fmt.Sprint(unitMs))...); r.code != 0 {
					t.Fatalf("record: exit %d\n%s", r.code, r.stderr)
				}
				cp := filepath.Join(dir, "critPath.out")
				r := run(t, dir, mpitraceBin, "critpath", out, "-o", cp)
				if r.code != 0 || r.stderr != "" {
					t.Fatalf("critpath: exit %d\n%s", r.code, r.stderr)
				}
				if !strings.Contains(r.stdout, "default model embedded") {
					t.Errorf("the summary does not say which latency model it used:\n%s", r.stdout)
				}
				vertices, edges := critPathItems(t, cp)
				if !slices.Equal(vertices, tc.vertices) {
					t.Fatalf("critical path %v\nwant %v", vertices, tc.vertices)
				}
				for i, units := range tc.compute {
					e := edges[i-1]
					if e < units*unitUs {
						t.Errorf("edge before %s: %d us, but the rank computed %d us there", vertices[i], e, units*unitUs)
					}
					for j, other := range tc.compute {
						if units > other && e <= edges[j-1] {
							t.Errorf("the %d-unit edge before %s (%d us) is not longer than the %d-unit edge before %s (%d us)",
								units, vertices[i], e, other, vertices[j], edges[j-1])
						}
					}
				}
				for i, b := range tc.bytes {
					if edges[i-1] != b {
						t.Errorf("message edge before %s: %d, want %d bytes", vertices[i], edges[i-1], b)
					}
				}
				// The picture of the same trace renders with Graphviz.
				d := run(t, dir, mpitraceBin, "dot", out, "-o", filepath.Join(dir, "g.dot"))
				if d.code != 0 {
					t.Fatalf("dot: exit %d\n%s", d.code, d.stderr)
				}
				if svg := run(t, dir, "dot", "-Tsvg", "-o", filepath.Join(dir, "g.svg"), filepath.Join(dir, "g.dot")); svg.code != 0 {
					t.Fatalf("Graphviz rejected mpitrace's DOT: %s", svg.stderr)
				}
			})
		}
	}
}

// TestRecordCritpath: record --critpath leaves critPath.out and the DOT next
// to the logs, prints the summary on stderr and leaves the application's
// stdout alone.
func TestRecordCritpath(t *testing.T) {
	m := mpis[0]
	m.require(t)
	bin := m.compile(t, "known")
	dir := t.TempDir()
	out := filepath.Join(dir, "traces")
	plain := run(t, dir, m.launch(4, bin, "coll", "100")...)
	r := record(t, out, []string{"--critpath"}, m.launch(4, bin, "coll", "100")...)
	if r.code != 0 || r.stdout != plain.stdout {
		t.Fatalf("exit %d, stdout %q (alone: %q)\n%s", r.code, r.stdout, plain.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "critical path:") || !strings.Contains(r.stderr, "xdot "+filepath.Join(out, "taskgraph.dot")) {
		t.Fatalf("no summary on stderr:\n%s", r.stderr)
	}
	vertices, _ := critPathItems(t, filepath.Join(out, "critPath.out"))
	if want := []string{"MPI_Init -1", "MPI_Comm_rank 3", "MPI_Comm_size 3", "MPI_Barrier -1", "MPI_Finalize -1"}; !slices.Equal(vertices, want) {
		t.Fatalf("critical path %v, want %v", vertices, want)
	}
	if svg := run(t, dir, "dot", "-Tsvg", "-o", filepath.Join(dir, "g.svg"), filepath.Join(out, "taskgraph.dot")); svg.code != 0 {
		t.Fatalf("Graphviz rejected taskgraph.dot: %s", svg.stderr)
	}
	// --force replaces the analysis too, not only the logs.
	r = record(t, out, []string{"--force"}, m.launch(4, bin, "coll", "100")...)
	if _, err := os.Stat(filepath.Join(out, "critPath.out")); r.code != 0 || err == nil {
		t.Fatalf("--force kept the earlier run's critPath.out (exit %d)", r.code)
	}
}
