package main_test

// Hostile files: trace directories crafted to make the readers spend what
// the files cannot justify, or to block them. Every command that reads
// traces says what is wrong in one line naming the file, exits with a
// documented status (docs/cli.md) and stays within a small memory bound.

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// goodRanks writes a 2-rank trace into dir.
func goodRanks(t *testing.T, dir string) {
	t.Helper()
	b := testgen.New(2)
	for r := 0; r < 2; r++ {
		rk := b.Rank(r)
		rk.Call("MPI_Init")
		rk.Send(int64(1-r), 5, 64)
		rk.Recv(int64(1-r), 5, 64)
		rk.Barrier()
		rk.Call("MPI_Finalize")
	}
	if err := b.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
}

func TestHostileFiles(t *testing.T) {
	root := t.TempDir()
	type dir struct {
		name string
		// file is the hostile file, whose name the output must give.
		file string
		// code is the exit status of stats, dump, critpath and dot; with
		// --strict stats exits strict; regions exits 1 (no region events).
		code, strict int
		// oneLine: the commands print exactly one line on stderr (and
		// --strict its conclusion).
		oneLine bool
		// want is in that line, or in one of the lines.
		want string
	}
	var dirs []dir
	add := func(name, file string, code, strict int, oneLine bool, want string, make func(dir, path string) error) {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(d, file)
		if err := make(d, path); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		dirs = append(dirs, dir{name, path, code, strict, oneLine, want})
	}
	write := func(data []byte) func(string, string) error {
		return func(_, path string) error { return os.WriteFile(path, data, 0o644) }
	}
	withGood := func(mk func(string, string) error) func(string, string) error {
		return func(d, path string) error {
			goodRanks(t, d)
			return mk(d, path)
		}
	}
	fifo := func(_, path string) error { return syscall.Mkfifo(path, 0o644) }
	huge, err := testgen.HugeWorld(0, 1<<24)
	if err != nil {
		t.Fatal(err)
	}
	rank0, rank2 := tracefmt.RankFileName(0), tracefmt.RankFileName(2)
	// 300 bytes that claim a world of 2^24 ranks: the analyses run on the
	// one rank there is; its unmatched message and collective are data loss.
	add("huge-world", rank0, 0, 3, false, "the header says the world has 16777216 ranks, but 16777215 of them have no usable file", write(huge))
	// 134 KB whose 64 threads each declare a 64 MiB events block.
	add("block-bomb", rank0, 0, 3, false, "64 events blocks from this one on (4294965184 bytes decompressed) would take this 134",
		write(testgen.BlockBomb(64, 64<<20)))
	// 14 KB of one thread's 24 events blocks of 16 MiB: 80 M events, read
	// one block at a time; none fits the file's budget for its events.
	add("events-bomb", rank0, 0, 3, false, "24 events blocks from this one on (402652533 bytes decompressed) would take this 13625-byte file's events past its budget",
		write(testgen.EventsBomb(24, 16<<20)))
	// 15 KB of 256 blocks of 256 KiB: 13 M events, of which the budget
	// keeps the first 18 blocks (0.9 M events), analysed.
	add("events-bomb-kept", rank0, 0, 3, false, "238 events blocks from this one on (62382871 bytes decompressed) would take this 14690-byte file's events past its budget",
		write(testgen.EventsBomb(256, 256<<10)))
	// A FIFO named like a rank file: never opened.
	add("fifo", rank0, 1, 1, true, "not a regular file (a named pipe)", fifo)
	add("fifo-beside-ranks", rank2, 0, 3, true, "not a regular file (a named pipe)", withGood(fifo))
	// An empty file and a garbage file, alone and beside good ranks.
	add("empty", rank0, 1, 1, true, "empty file: not an mpitrace file?", write(nil))
	add("empty-beside-ranks", rank2, 0, 3, true, "empty file: not an mpitrace file?", withGood(write(nil)))
	add("garbage-beside-ranks", rank2, 0, 3, true, "not an mpitrace file?", withGood(write([]byte("garbage, not a trace"))))

	const maxRSS = 256 << 20
	for _, d := range dirs {
		for _, argv := range [][]string{
			{"stats", d.file},
			{"stats", "--strict", d.file},
			{"dump", d.file},
			{"critpath", "-o", filepath.Join(root, d.name+".critPath.out"), d.file},
			{"dot", "-o", filepath.Join(root, d.name+".dot"), d.file},
			{"regions", d.file},
		} {
			argv[len(argv)-1] = filepath.Dir(d.file)
			t.Run(d.name+"/"+strings.Join(argv[:len(argv)-1], " "), func(t *testing.T) {
				res := runMeasured(t, root, append([]string{mpitraceBin}, argv...)...)
				want := d.code
				if argv[1] == "--strict" {
					want = d.strict
				}
				if (d.name == "block-bomb" || d.name == "events-bomb") && (argv[0] == "critpath" || argv[0] == "dot") {
					want = 1 // every block is lost: there is no path
				}
				if argv[0] == "regions" {
					want = 1 // no region events in these traces: said after what was lost
				}
				stderr := strings.TrimRight(res.stderr, "\n")
				lines := strings.Split(stderr, "\n")
				if res.code != want || strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
					t.Fatalf("exit %d (want %d), stderr:\n%s", res.code, want, stderr)
				}
				diags := len(lines)
				if strings.HasPrefix(lines[diags-1], "mpitrace: --strict: ") ||
					diags > 1 && strings.Contains(lines[diags-1], "no region, kernel or allocation events") {
					diags-- // the conclusion of --strict, or of regions
				}
				if d.oneLine && diags != 1 || diags > 22 {
					t.Errorf("%d lines on stderr:\n%s", len(lines), stderr)
				}
				named := false
				for _, l := range lines {
					if !strings.HasPrefix(l, "mpitrace: ") {
						t.Errorf("a line without the mpitrace: prefix: %q", l)
					}
					named = named || strings.Contains(l, d.file) && strings.Contains(l, d.want)
				}
				if !named {
					t.Errorf("no line names %s with %q:\n%s", d.file, d.want, stderr)
				}
				if res.maxRSS > maxRSS {
					t.Errorf("peak memory %d MB, bound %d MB", res.maxRSS>>20, maxRSS>>20)
				}
			})
		}
	}
}
