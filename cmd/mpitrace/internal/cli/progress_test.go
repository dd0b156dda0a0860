package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// fakeTerminal is a stderr that says it is a terminal (Streams.ErrTTY) and
// keeps what was written, from any goroutine.
type fakeTerminal struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (f *fakeTerminal) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Write(b)
}

func (f *fakeTerminal) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.String()
}

// setProgressDelay sets progressDelay for one test.
func setProgressDelay(t *testing.T, d time.Duration) {
	old := progressDelay
	progressDelay = d
	t.Cleanup(func() { progressDelay = old })
}

// slowRead opens the trace in dir with progress on s, and reads it as a
// slow disk would: its bytes in 20 parts over about dur.
func slowRead(t *testing.T, s *Streams, dir string, dur time.Duration) *tracefmt.Trace {
	t.Helper()
	tr, err := openTrace(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	if s.ErrTTY && tr.OnRead == nil {
		t.Fatal("openTrace left the trace without a progress count")
	}
	total := tr.FileBytes()
	for i := 0; i < 20; i++ {
		if tr.OnRead != nil {
			tr.OnRead(int(total / 20))
		}
		time.Sleep(dur / 20)
	}
	return tr
}

// TestProgressSlowRead: a read longer than progressDelay shows the bar on
// a terminal, naming the trace and counting bytes; it is gone before the
// command's next line on stderr.
func TestProgressSlowRead(t *testing.T) {
	setProgressDelay(t, 50*time.Millisecond)
	dir := writeTrace(t)
	term := &fakeTerminal{}
	var out bytes.Buffer
	s := &Streams{Out: &out, Err: term, ErrTTY: true}
	slowRead(t, s, dir, 600*time.Millisecond)
	if s.progress == nil || !s.progress.shown() {
		t.Fatal("no progress bar after a read longer than progressDelay")
	}
	bar := term.String()
	if !strings.Contains(bar, "reading "+filepath.Base(dir)) || !strings.Contains(bar, "KiB") || !strings.Contains(bar, "%") {
		t.Fatalf("the bar does not name the trace and count bytes:\n%q", bar)
	}
	if _, err := s.Err.Write([]byte("mpitrace: done\n")); err != nil {
		t.Fatal(err)
	}
	got := term.String()
	if !strings.HasSuffix(got, "mpitrace: done\n") || strings.Count(got, "mpitrace: done") != 1 {
		t.Fatalf("the bar was drawn after the command's line:\n%q", got)
	}
	if out.Len() != 0 {
		t.Fatalf("progress went to stdout: %q", out.String())
	}
	s.stopProgress() // what run does when the command returns; again is harmless
	if term.String() != got {
		t.Fatalf("the bar was drawn after it stopped:\n%q", term.String()[len(got):])
	}
}

// TestProgressFastRead: a read shorter than progressDelay shows nothing,
// and the command's output is the same as without a terminal.
func TestProgressFastRead(t *testing.T) {
	dir := writeTrace(t)
	term := &fakeTerminal{}
	var out bytes.Buffer
	s := &Streams{In: strings.NewReader(""), Out: &out, Err: term, ErrTTY: true}
	if code := run(context.Background(), []string{"stats", dir}, s); code != ExitOK {
		t.Fatalf("stats: exit %d\n%s", code, term.String())
	}
	code, want, wantErr := runCLI(t, "stats", dir)
	if code != ExitOK || out.String() != want || term.String() != wantErr {
		t.Fatalf("stats on a terminal printed\n%q\n%q\nwithout one\n%q\n%q", out.String(), term.String(), want, wantErr)
	}
	slowRead(t, s, dir, 0)
	time.Sleep(10 * time.Millisecond)
	s.stopProgress()
	if term.String() != wantErr {
		t.Fatalf("a fast read drew a bar:\n%q", term.String())
	}
}

// TestProgressNotTerminal: with stderr not a terminal nothing is counted
// or drawn, however long the read.
func TestProgressNotTerminal(t *testing.T) {
	setProgressDelay(t, 0)
	dir := writeTrace(t)
	var out, errb bytes.Buffer
	s := &Streams{Out: &out, Err: &errb}
	tr := slowRead(t, s, dir, 100*time.Millisecond)
	s.stopProgress()
	if tr.OnRead != nil || s.progress != nil {
		t.Fatal("progress counted with stderr not a terminal")
	}
	if errb.Len() != 0 || out.Len() != 0 {
		t.Fatalf("progress printed with stderr not a terminal: %q %q", out.String(), errb.String())
	}
}
