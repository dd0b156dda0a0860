package tracefmt_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mpitrace/mpitrace/internal/allocs"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// ring builds a ring exchange of size ranks with iters iterations.
func ring(size, iters int) *testgen.Builder { return ringOf(testgen.New(size), iters) }

// ringOf writes the ring exchange of ring into b, whose options (before
// its first rank is made) are the writers'.
func ringOf(b *testgen.Builder, iters int) *testgen.Builder {
	size := b.Size
	for it := 0; it < iters; it++ {
		for r := 0; r < size; r++ {
			rk := b.Rank(r)
			next, prev := int64((r+1)%size), int64((r+size-1)%size)
			rq := rk.Irecv(prev, 7, 4096)
			sq := rk.Compute(2000).Isend(next, 7, 4096)
			rk.Waitall(rq, sq)
			rk.Allreduce(8)
		}
	}
	return b
}

func writeRing(t *testing.T, size, iters int) string {
	dir := t.TempDir()
	if err := ring(size, iters).WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestOpenDir(t *testing.T) {
	dir := writeRing(t, 4, 10)
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Size != 4 || tr.RunID != "testgen-run" || len(tr.Files) != 4 || tr.Manifest == nil || tr.Manifest.WorldSize != 4 {
		t.Fatalf("trace %+v", tr)
	}
	if d := tr.Diagnostics(); d.Len() != 0 {
		t.Fatal(d.Summary())
	}
	for i, f := range tr.Files {
		if f.Rank != i || f.Header.Rank != i || filepath.Base(f.Path) != tracefmt.RankFileName(i) {
			t.Errorf("file %d: %+v", i, f)
		}
	}
	r, err := tr.OpenRank(2)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The reader's header keys are the trace's (one copy a rank, however
	// many readers are open), and equal to what the file says.
	if m, tm := r.Header().Meta, tr.Files[2].Header.Meta; len(m) == 0 || &m[0] != &tm[0] {
		t.Errorf("the reader holds its own copy of the header's %d keys", len(m))
	}
	d, err := tracefmt.Validate(r)
	if err != nil || d.Len() != 0 {
		t.Fatalf("validate: %v %s", err, d.Summary())
	}
	if _, err := tr.OpenRank(9); err == nil {
		t.Error("rank 9 opened")
	}
}

func TestForEachRank(t *testing.T) {
	dir := writeRing(t, 8, 200)
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var total, validated atomic.Int64
	err = tr.ForEachRank(0, func(r *tracefmt.RankReader) error {
		v := tracefmt.NewValidator(r.Header(), r.Strings(), r.Name())
		n := 0
		for r.Next() {
			v.Event(r.Event())
			n++
		}
		if v.Finish().Len() != 0 {
			t.Errorf("rank %d: %s", r.Rank(), v.Finish().Summary())
		}
		validated.Add(1)
		total.Add(int64(n))
		return r.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if total.Load() != 8*200*4 || validated.Load() != 8 {
		t.Errorf("%d events over %d ranks", total.Load(), validated.Load())
	}
	// An error stops the walk and is returned; with one worker, ranks run in
	// order, so rank 3's error is the one returned.
	var calls atomic.Int64
	err = tr.ForEachRank(1, func(r *tracefmt.RankReader) error {
		calls.Add(1)
		if r.Rank() >= 3 {
			return errors.New("stop at " + r.Name())
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "rank-00003") || calls.Load() != 4 {
		t.Errorf("err %v after %d calls", err, calls.Load())
	}
}

func TestOpenDirRunIDMix(t *testing.T) {
	dir := writeRing(t, 2, 1)
	other := testgen.New(2)
	other.RunID = "another-run"
	other.Rank(1).Barrier()
	data, err := other.Bytes(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, tracefmt.RankFileName(1)), data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = tracefmt.OpenDir(dir)
	if err == nil {
		t.Fatal("mixed run ids accepted")
	}
	for _, want := range []string{"rank-00000.mpit", "rank-00001.mpit", `"testgen-run"`, `"another-run"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestOpenDirProblems(t *testing.T) {
	t.Run("missing rank", func(t *testing.T) {
		dir := writeRing(t, 4, 1)
		os.Remove(filepath.Join(dir, tracefmt.RankFileName(2)))
		tr, err := tracefmt.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		d := tr.Diagnostics()
		if d.CountCode(tracefmt.CodeMissingRank) != 1 || d.Count(tracefmt.DataLoss) != 1 || len(tr.Files) != 3 {
			t.Fatalf("%s", d.Summary())
		}
		if x := d.All()[0]; x.Rank != 2 || !strings.Contains(x.Message, "rank 2 of 4") {
			t.Errorf("%v", x)
		}
	})
	t.Run("duplicate rank", func(t *testing.T) {
		dir := writeRing(t, 2, 1)
		data, _ := os.ReadFile(filepath.Join(dir, tracefmt.RankFileName(0)))
		os.WriteFile(filepath.Join(dir, "rank-00007.mpit"), data, 0o644)
		_, err := tracefmt.OpenDir(dir)
		if err == nil || !strings.Contains(err.Error(), "two files for rank 0") || !strings.Contains(err.Error(), "rank-00007.mpit") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("world size mismatch", func(t *testing.T) {
		dir := writeRing(t, 2, 1)
		b := testgen.New(3)
		data, _ := b.Bytes(2)
		os.WriteFile(filepath.Join(dir, tracefmt.RankFileName(2)), data, 0o644)
		_, err := tracefmt.OpenDir(dir)
		if err == nil || !strings.Contains(err.Error(), "says the world has 2 ranks") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("manifest of another run", func(t *testing.T) {
		dir := writeRing(t, 2, 1)
		m, _ := tracefmt.ReadManifest(dir)
		m.RunID = "old"
		tracefmt.WriteManifest(dir, m)
		_, err := tracefmt.OpenDir(dir)
		if err == nil || !strings.Contains(err.Error(), `manifest.json is from run "old"`) {
			t.Errorf("err %v", err)
		}
	})
	t.Run("bad manifest and renamed file", func(t *testing.T) {
		dir := writeRing(t, 2, 1)
		os.WriteFile(filepath.Join(dir, tracefmt.ManifestName), []byte("{"), 0o644)
		os.Rename(filepath.Join(dir, tracefmt.RankFileName(1)), filepath.Join(dir, "rank-00005.mpit"))
		tr, err := tracefmt.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		d := tr.Diagnostics()
		if d.CountCode(tracefmt.CodeBadManifest) != 1 || d.CountCode(tracefmt.CodeFileNameRank) != 1 || len(tr.Files) != 2 {
			t.Errorf("%s", d.Summary())
		}
	})
	t.Run("unreadable rank", func(t *testing.T) {
		dir := writeRing(t, 3, 1)
		path := filepath.Join(dir, tracefmt.RankFileName(1))
		data, _ := os.ReadFile(path)
		os.WriteFile(path, data[:15], 0o644) // magic, version, a partial frame
		tr, err := tracefmt.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		d := tr.Diagnostics()
		if d.CountCode(tracefmt.CodeUnreadableRank) != 1 || d.CountCode(tracefmt.CodeMissingRank) != 1 || d.Count(tracefmt.DataLoss) != 2 {
			t.Errorf("%s", d.Summary())
		}
	})
	t.Run("empty and garbage files alike", func(t *testing.T) {
		// A zero-length file (a rank that died before its recorder wrote
		// anything), a file that is not an mpitrace file, one of a version
		// this build does not read and one whose header is damaged are all
		// skipped the same way: the good ranks are read.
		dir := writeRing(t, 5, 1)
		os.WriteFile(filepath.Join(dir, tracefmt.RankFileName(1)), nil, 0o644)
		os.WriteFile(filepath.Join(dir, tracefmt.RankFileName(2)), []byte("hello"), 0o644)
		os.WriteFile(filepath.Join(dir, tracefmt.RankFileName(3)), append([]byte(spec.Magic), 99, 0), 0o644)
		os.WriteFile(filepath.Join(dir, tracefmt.RankFileName(4)), append([]byte(spec.Magic), 1, 0, 'M'), 0o644)
		tr, err := tracefmt.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		d := tr.Diagnostics()
		if len(tr.Files) != 1 || d.CountCode(tracefmt.CodeUnreadableRank) != 4 || d.CountCode(tracefmt.CodeMissingRank) != 4 ||
			d.Count(tracefmt.DataLoss) != 8 || d.Count(tracefmt.Error) != 0 {
			t.Fatalf("%d files; %s", len(tr.Files), d.Summary())
		}
		want := map[int]string{1: "empty file: not an mpitrace file?", 2: "not an mpitrace file?", 3: "unsupported format version 99", 4: "no header block"}
		for _, x := range d.All() {
			if x.Code != tracefmt.CodeUnreadableRank {
				continue
			}
			var r int
			for r = 1; r < 5 && x.File != filepath.Join(dir, tracefmt.RankFileName(r)); r++ {
			}
			if r == 5 || !strings.Contains(x.Message, "skipped") || !strings.Contains(x.Message, want[r]) {
				t.Errorf("%v", x)
			}
			delete(want, r)
		}
		if len(want) != 0 {
			t.Errorf("no diagnostic for %v", want)
		}
	})
	t.Run("no usable file", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, tracefmt.RankFileName(0)), nil, 0o644)
		os.WriteFile(filepath.Join(dir, tracefmt.RankFileName(1)), []byte("hello"), 0o644)
		_, err := tracefmt.OpenDir(dir)
		if !errors.Is(err, tracefmt.ErrNotMpitrace) || strings.Contains(err.Error(), "\n") ||
			!strings.Contains(err.Error(), "none of the 2 rank files is usable") ||
			!strings.Contains(err.Error(), "rank-00000.mpit: empty file: not an mpitrace file?") {
			t.Errorf("err %v", err)
		}
		os.Remove(filepath.Join(dir, tracefmt.RankFileName(0)))
		_, err = tracefmt.OpenDir(dir)
		if !errors.Is(err, tracefmt.ErrNotMpitrace) || !strings.Contains(err.Error(), "rank-00001.mpit: not an mpitrace file?") {
			t.Errorf("err %v", err)
		}
		os.WriteFile(filepath.Join(dir, tracefmt.RankFileName(1)), append([]byte(spec.Magic), 99, 0), 0o644)
		_, err = tracefmt.OpenDir(dir)
		if !errors.As(err, new(*tracefmt.VersionError)) || !strings.Contains(err.Error(), "unsupported format version 99") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("empty directory", func(t *testing.T) {
		_, err := tracefmt.OpenDir(t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "no rank-*.mpit files") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("rank diagnostics collected", func(t *testing.T) {
		b := ring(3, 2)
		b.Rank(1).NoEnd()
		b.Rank(2).Dropped(4)
		dir := t.TempDir()
		if err := b.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		tr, err := tracefmt.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.ForEachRank(2, func(r *tracefmt.RankReader) error {
			for r.Next() {
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		d := tr.Diagnostics()
		if d.CountCode(tracefmt.CodeMissingEnd) != 1 || d.CountCode(tracefmt.CodeDroppedEvents) != 1 {
			t.Errorf("%s", d.Summary())
		}
		if all := d.All(); all[0].Rank != 1 || all[1].Rank != 2 {
			t.Errorf("not in rank order: %v", all)
		}
	})
}

func TestTestgenTimesAndRequests(t *testing.T) {
	b := testgen.New(2)
	b.Options.Compression = tracefmt.NoCompression
	r0 := b.Rank(0)
	q := r0.Isend(1, 3, 10)
	r0.Compute(10_000).Wait(q)
	c := r0.CommNew("MPI_Comm_split", spec.CommWorld, 77, 0, 1)
	r0.On(c).Barrier()
	r0.Thread(1).Call("MPI_Wtime")
	r0.ClockSync(spec.PhaseInit, -40, 3)
	data, err := b.Bytes(0)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := tracefmt.NewRankReader(strings.NewReader(string(data)), "r0")
	if err != nil {
		t.Fatal(err)
	}
	rd, err := tracefmt.ReadAll(rr)
	if err != nil {
		t.Fatal(err)
	}
	ev := rd.Events
	if len(ev) != 6 {
		t.Fatalf("%d events", len(ev))
	}
	if ev[0].Start != b.Start || ev[0].End != b.Start+1000 || ev[1].Start != ev[0].End+10_000 || ev[1].Completions[0].Req != q {
		t.Errorf("times %+v", ev[:2])
	}
	if ev[2].Comm() != 3 || ev[3].Comm() != 3 || rd.Strings.Name(ev[5].Fn()) != "MPI_Wtime" || ev[5].Thread != 1 || ev[4].Kind != spec.ClockSync || ev[4].Start != ev[5].Start {
		t.Errorf("events %+v", ev)
	}
	d, _ := tracefmt.Validate(rd.Source())
	if d.Len() != 0 {
		t.Error(d.Summary())
	}
}

// A file may claim a world of 2^24 ranks in a few hundred bytes: the
// directory is opened without allocating per claimed rank, and the missing
// ranks are one diagnostic naming the file that claims them.
func TestOpenDirHugeWorld(t *testing.T) {
	for _, rank := range []int{0, 1<<24 - 1} {
		dir := t.TempDir()
		if err := testgen.WriteHugeWorld(dir, 1<<24, rank); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, tracefmt.RankFileName(rank))
		var tr *tracefmt.Trace
		var err error
		n := allocs.Bytes(func() { tr, err = tracefmt.OpenDir(dir) })
		if err != nil {
			t.Fatal(err)
		}
		if n > 1<<20 {
			t.Errorf("rank %d: opening a file claiming 2^24 ranks allocated %d bytes", rank, n)
		}
		d := tr.Diagnostics()
		if tr.Size != 1<<24 || len(tr.Files) != 1 || d.Len() != 1 || d.CountCode(tracefmt.CodeMissingRank) != 1 {
			t.Fatalf("size %d, %d files: %s", tr.Size, len(tr.Files), diagLines(d))
		}
		want := "0-16777214"
		if rank == 0 {
			want = "1-16777215"
		}
		if x := d.All()[0]; x.File != path || x.Rank != rank || !strings.Contains(x.Message, "16777215 of them have no usable file") ||
			!strings.Contains(x.Message, want) {
			t.Errorf("%v", x)
		}
	}
	// Many gaps: the ranges listed are bounded too.
	b := testgen.New(400)
	dir := t.TempDir()
	for r := 0; r < 400; r += 2 {
		data, _ := b.Bytes(r)
		os.WriteFile(filepath.Join(dir, tracefmt.RankFileName(r)), data, 0o644)
	}
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := tr.Diagnostics()
	if d.Len() != 1 || len(d.All()[0].Message) > 300 || !strings.Contains(d.All()[0].Message, "1, 3, 5") {
		t.Errorf("%s", diagLines(d))
	}
}

func diagLines(d *tracefmt.Diagnostics) string {
	var s []string
	for _, x := range d.All() {
		s = append(s, x.String())
	}
	return strings.Join(s, "\n")
}

// TestOnRead: the readers of ForEachRank and OpenRank tell OnRead how far
// they got, and reading every event adds up to FileBytes: the count a
// progress bar shows against it.
func TestOnRead(t *testing.T) {
	dir := writeRing(t, 4, 300)
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	total := tr.FileBytes()
	var n atomic.Int64
	tr.OnRead = func(b int) { n.Add(int64(b)) }
	if err := tr.ForEachRank(0, func(r *tracefmt.RankReader) error {
		for r.Next() {
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != total {
		t.Errorf("ForEachRank counted %d bytes of %d bytes of rank files", got, total)
	}
	n.Store(0)
	r, err := tr.OpenRank(tr.Files[0].Rank)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
	}
	r.Close()
	if f, _ := os.Stat(tr.Files[0].Path); n.Load() != f.Size() {
		t.Errorf("OpenRank's reader counted %d bytes of its file's %d", n.Load(), f.Size())
	}
}
