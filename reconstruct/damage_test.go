package reconstruct_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// A damaged block in the middle of one rank's log loses the events it held;
// counted from the start, the rank's later calls would be matched with the
// wrong messages and collective instances and the task graph would have
// cycles (rule 7 of docs/reconstruction.md, gaps.go).

// damageTraces are the stored traces of the current format whose logs are
// rewritten with small blocks (so that a rank's log has blocks in the
// middle), and how many mutants of each are tried.
var damageTraces = []struct {
	name    string
	mutants int
}{
	{"stencil", 150}, {"mix", 150}, {"known-chain", 40}, {"callsites", 40}, {"loopsmpi", 40}, {"regions", 40},
}

// reblocked returns the files of a stored trace with every rank's events
// rewritten in blocks of about blockSize bytes (the events as read, in the
// current format).
func reblocked(t *testing.T, dir string, blockSize int) map[string][]byte {
	t.Helper()
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for i, d := range readRanks(t, tr) {
		f := tr.Files[i]
		var b bytes.Buffer
		if err := d.WriteBinary(&b, &tracefmt.WriterOptions{BlockSize: blockSize}); err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(f.Path)] = b.Bytes()
	}
	m, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	files["manifest.json"] = m
	return files
}

// eventsBlocks returns the offsets and sizes of a rank file's events
// blocks, in file order.
func eventsBlocks(data []byte) (offs, sizes []int) {
	off := len(spec.Magic) + 2
	for off+spec.BlockHeaderSize <= len(data) {
		stored := int(binary.LittleEndian.Uint32(data[off+8:]))
		if data[off+4] == spec.BlockEvents {
			offs, sizes = append(offs, off), append(sizes, stored)
		}
		off += spec.BlockHeaderSize + stored
	}
	return offs, sizes
}

// buildFiles writes files to a new directory and reconstructs it, with the
// critical path; it also returns each rank's events as read.
func buildFiles(t *testing.T, files map[string][]byte) (*taskgraph.Graph, *tracefmt.Diagnostics, *critpath.Path, []*tracefmt.RankData, error) {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ranks := readRanks(t, tr)
	g, diags, err := reconstruct.Build(tr, reconstruct.Options{Workers: 2})
	if err != nil {
		return nil, nil, nil, ranks, err
	}
	path, err := critpath.Compute(g, testModel{})
	return g, diags, path, ranks, err
}

// TestDamagedBlocks flips one bit in an events block of one rank of the
// stored traces (rewritten with small blocks), deterministically, many
// times. For every mutant: the reader reports the damage (CRC-32C sees
// every flipped bit); the graph is built without a cycle and has a
// critical path; a loss followed by events of its rank is reported as
// lost_events naming the rank and the first block read after it; every
// message and collective instance of the damaged graph is one of the whole
// trace's (the damaged rank's event indices shifted by the events lost
// before them), so nothing is matched wrongly; and the streaming Linker
// pairs a part of what Build pairs.
func TestDamagedBlocks(t *testing.T) {
	for _, tc := range damageTraces {
		t.Run(tc.name, func(t *testing.T) {
			files := reblocked(t, filepath.Join("..", "fixtures", "traces", "v"+fmt.Sprint(spec.Current), tc.name), 160)
			g0, d0, _, whole, err := buildFiles(t, files)
			if err != nil {
				t.Fatal(err)
			}
			if d0.CountCode(reconstruct.CodeLostEvents) != 0 {
				t.Fatalf("the rewritten trace lost events: %s", d0.Summary())
			}
			want := graphLinks(g0)
			threads := map[int]int{}
			for _, d := range whole {
				ts := map[int]bool{}
				for i := range d.Events {
					ts[d.Events[i].Thread] = true
				}
				threads[d.Header.Rank] = len(ts)
			}
			var names []string
			for name := range files {
				if strings.HasPrefix(name, "rank-") {
					names = append(names, name)
				}
			}
			slices.Sort(names)
			rng := rand.New(rand.NewPCG(17, uint64(len(tc.name))))
			lossy := 0
			for m := range tc.mutants {
				name := names[m%len(names)]
				offs, sizes := eventsBlocks(files[name])
				bi := rng.IntN(len(offs))
				at := offs[bi] + spec.BlockHeaderSize + rng.IntN(sizes[bi])
				bit := byte(1) << rng.IntN(8)
				what := fmt.Sprintf("mutant %d: %s, events block %d of %d, byte %d ^ %#x", m, name, bi+1, len(offs), at, bit)
				mut := make(map[string][]byte, len(files))
				for k, v := range files {
					mut[k] = v
				}
				mut[name] = bytes.Clone(files[name])
				mut[name][at] ^= bit

				g, diags, path, ranks, err := buildFiles(t, mut)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if n := path.NumVertices(); n < 3 || path.Vertex(0).Kind != taskgraph.KindInit || path.Vertex(n-1).Kind != taskgraph.KindFinalize {
					t.Fatalf("%s: no critical path through an operation", what)
				}
				var rank int
				fmt.Sscanf(name, "rank-%d.mpit", &rank)
				var d *tracefmt.RankData
				for _, x := range ranks {
					if x.Header.Rank == rank {
						d = x
					}
				}
				if diags.Count(tracefmt.DataLoss) == 0 {
					t.Fatalf("%s: the damage was not reported: %s", what, diags.Summary())
				}
				if slices.ContainsFunc(d.Lost, func(l tracefmt.LossAt) bool { return l.Event < len(d.Events) }) {
					lossy++
					named := false
					for _, x := range diags.All() {
						named = named || x.Code == reconstruct.CodeLostEvents && x.Rank == rank && x.Block >= 0
					}
					if !named {
						t.Errorf("%s: no lost_events diagnostic naming rank %d and a block:\n%s", what, rank, diags.Summary())
					}
				}
				got := graphLinks(g)
				if threads[rank] == 1 {
					// The damaged rank's events, numbered as in the whole log.
					shift := func(ev int) int {
						n := ev
						for _, l := range d.Lost {
							if l.Event <= ev {
								n += int(l.Events)
							}
						}
						return n
					}
					mapped := make([]string, len(got))
					for i, l := range got {
						mapped[i] = remapLink(l, rank, shift)
					}
					slices.Sort(mapped)
					if !subsetLinks(mapped, want) {
						t.Errorf("%s: links the whole trace does not have:\n%s", what, strings.Join(notIn(mapped, want), "\n"))
					}
				}
				if l := linkerLinks(ranks, -1); !subsetLinks(l, got) {
					t.Errorf("%s: the Linker links what Build does not:\n%s", what, strings.Join(notIn(l, got), "\n"))
				}
			}
			t.Logf("%d mutants, %d with events lost before others of their rank: each has a critical path", tc.mutants, lossy)
		})
	}
}

// remapLink renumbers rank's events in a link ("r:e -> r:e" or
// "coll r:e ...") with shift.
func remapLink(l string, rank int, shift func(int) int) string {
	f := strings.Fields(l)
	for i, x := range f {
		var r, e int
		if n, _ := fmt.Sscanf(x, "%d:%d", &r, &e); n == 2 && r == rank {
			f[i] = fmt.Sprintf("%d:%d", r, shift(e))
		}
	}
	return strings.Join(f, " ")
}

// notIn returns the links of got that are not in want (for messages).
func notIn(got, want []string) []string {
	var out []string
	for _, l := range got {
		if _, ok := slices.BinarySearch(want, l); !ok {
			out = append(out, l)
		}
	}
	return out
}
