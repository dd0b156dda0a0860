package tracefmt_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// TestOpenFilesBounded reads the 16 ranks of a trace (in blocks of 256
// bytes, so that each is read many times) one event at a time in turn,
// with the pool bounded to 3 open files: every rank gives its events as
// read alone, and no more than 3 files are open at once.
func TestOpenFilesBounded(t *testing.T) {
	tr := smallBlocksRing(t, 16, 40)
	alone := make([]string, len(tr.Files))
	for i, f := range tr.Files {
		rr, err := tr.OpenRank(f.Rank)
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		for rr.Next() {
			sb.WriteString(fmt.Sprintf("%+v\n", *rr.Event()))
		}
		if err := rr.Close(); err != nil || rr.Err() != nil {
			t.Fatal(err, rr.Err())
		}
		alone[i] = sb.String()
	}

	defer tracefmt.SetOpenFiles(tracefmt.SetOpenFiles(3))
	tracefmt.OpenFiles() // the peak from here
	readers := make([]*tracefmt.RankReader, len(tr.Files))
	got := make([]strings.Builder, len(tr.Files))
	for i, f := range tr.Files {
		var err error
		if readers[i], err = tr.OpenRank(f.Rank); err != nil {
			t.Fatal(err)
		}
	}
	for left := len(readers); left > 0; {
		left = 0
		for i, rr := range readers {
			if rr.Next() {
				got[i].WriteString(fmt.Sprintf("%+v\n", *rr.Event()))
				left++
			}
		}
	}
	for i, rr := range readers {
		if err := rr.Err(); err != nil {
			t.Fatalf("rank %d: %v", i, err)
		}
		if got[i].String() != alone[i] {
			t.Errorf("rank %d: %d bytes of events read in turn, %d alone", i, got[i].Len(), len(alone[i]))
		}
		rr.Close()
	}
	if now, peak := tracefmt.OpenFiles(); now != 0 || peak > 3 || peak < 1 {
		t.Errorf("%d files open after, at most %d at once; want 0, and 1 to 3", now, peak)
	}
}

// TestOpenFilesReplaced: a rank file closed by the pool and replaced
// before it is read again is an error naming it, not other data.
func TestOpenFilesReplaced(t *testing.T) {
	tr := smallBlocksRing(t, 2, 40)
	dir := tr.Dir
	defer tracefmt.SetOpenFiles(tracefmt.SetOpenFiles(1))
	r0, err := tr.OpenRank(0)
	if err != nil {
		t.Fatal(err)
	}
	defer r0.Close()
	r1, err := tr.OpenRank(1) // closes rank 0's file
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	p0, p1 := tr.Files[0].Path, tr.Files[1].Path
	data, err := os.ReadFile(p1)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "new")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p0); err != nil {
		t.Fatal(err)
	}
	for r0.Next() {
	}
	if err := r0.Err(); err == nil || !strings.Contains(err.Error(), p0) || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("reading a replaced file: %v", err)
	}
}

// smallBlocksRing writes ring(size, iters) in events blocks of 256 bytes
// (each file read again and again) and opens it.
func smallBlocksRing(t *testing.T, size, iters int) *tracefmt.Trace {
	t.Helper()
	b := testgen.New(size)
	b.Options.BlockSize = 256
	dir := t.TempDir()
	if err := ringOf(b, iters).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := tr.OpenRank(tr.Files[0].Rank)
	if err != nil {
		t.Fatal(err)
	}
	for rr.Next() {
	}
	if e := rr.End(); e == nil || e.Blocks < 4 {
		t.Fatalf("rank %d's log has %v: want several events blocks", tr.Files[0].Rank, e)
	}
	rr.Close()
	return tr
}
