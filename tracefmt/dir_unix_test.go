//go:build unix

package tracefmt_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// mkfifo makes a named pipe; a reader that opens it for reading blocks
// until a writer comes.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// within runs fn and fails the test when it takes longer than d. A reader
// blocked in open(2) on a FIFO cannot be interrupted: unblock then opens
// the FIFOs for writing (and closes them) so that the test ends.
func within(t *testing.T, d time.Duration, fifos []string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
		return
	case <-time.After(d):
		t.Errorf("still blocked after %v (opening a FIFO for reading?)", d)
	}
	for {
		for _, p := range fifos {
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
		select {
		case <-done:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Files that are not regular files, also behind a symlink, are skipped with
// a diagnostic and never opened: opening a FIFO for reading blocks.
func TestOpenDirNonRegularFiles(t *testing.T) {
	dir := writeRing(t, 4, 1)
	other := t.TempDir()
	// Rank 1 behind a symlink to a regular file: read as usual.
	moved := filepath.Join(other, "rank1.mpit")
	if err := os.Rename(filepath.Join(dir, tracefmt.RankFileName(1)), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, filepath.Join(dir, tracefmt.RankFileName(1))); err != nil {
		t.Fatal(err)
	}
	// Rank 2 a FIFO, rank 3 a symlink to one, and a directory named like a
	// rank file.
	fifo2, fifo3 := filepath.Join(dir, tracefmt.RankFileName(2)), filepath.Join(other, "fifo")
	os.Remove(fifo2)
	mkfifo(t, fifo2)
	mkfifo(t, fifo3)
	os.Remove(filepath.Join(dir, tracefmt.RankFileName(3)))
	if err := os.Symlink(fifo3, filepath.Join(dir, tracefmt.RankFileName(3))); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, tracefmt.RankFileName(7)), 0o755); err != nil {
		t.Fatal(err)
	}
	var tr *tracefmt.Trace
	var err error
	within(t, 3*time.Second, []string{fifo2, fifo3}, func() { tr, err = tracefmt.OpenDir(dir) })
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Files) != 2 || tr.Files[1].Rank != 1 {
		t.Fatalf("files %+v", tr.Files)
	}
	d := tr.Diagnostics()
	if d.CountCode(tracefmt.CodeUnreadableRank) != 3 || d.CountCode(tracefmt.CodeMissingRank) != 2 || d.Count(tracefmt.Error) != 0 {
		t.Fatalf("%s", d.Summary())
	}
	want := map[string]string{
		fifo2: "not a regular file (a named pipe)",
		filepath.Join(dir, tracefmt.RankFileName(3)): "not a regular file (a named pipe)",
		filepath.Join(dir, tracefmt.RankFileName(7)): "not a regular file (a directory)",
	}
	for _, x := range d.All() {
		if x.Code == tracefmt.CodeUnreadableRank {
			if w, ok := want[x.File]; !ok || !strings.Contains(x.Message, w) {
				t.Errorf("%v", x)
			}
			delete(want, x.File)
		}
	}
	if len(want) != 0 {
		t.Errorf("no diagnostic for %v", want)
	}

	// A file that becomes a FIFO after OpenDir checked it: reading the rank
	// fails with an error naming the file, without blocking.
	if err := os.Remove(filepath.Join(dir, tracefmt.RankFileName(0))); err != nil {
		t.Fatal(err)
	}
	fifo0 := filepath.Join(dir, tracefmt.RankFileName(0))
	mkfifo(t, fifo0)
	within(t, 3*time.Second, []string{fifo0}, func() {
		err = tr.ForEachRank(1, func(r *tracefmt.RankReader) error { return nil })
	})
	if err == nil || !strings.Contains(err.Error(), fifo0+": not a regular file (a named pipe)") {
		t.Errorf("ForEachRank over a FIFO: %v", err)
	}
	within(t, 3*time.Second, []string{fifo0}, func() { _, err = tracefmt.ReadHeader(fifo0) })
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("ReadHeader of a FIFO: %v", err)
	}

	// Only a FIFO: one error naming it.
	only := t.TempDir()
	fifo := filepath.Join(only, tracefmt.RankFileName(0))
	mkfifo(t, fifo)
	within(t, 3*time.Second, []string{fifo}, func() { _, err = tracefmt.OpenDir(only) })
	if err == nil || !strings.Contains(err.Error(), fifo+": not a regular file (a named pipe)") {
		t.Errorf("a directory with only a FIFO: %v", err)
	}
}
