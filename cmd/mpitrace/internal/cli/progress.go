package cli

import (
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// Reading progress: openTrace gives every trace a command reads a progress
// bar on stderr, counted in bytes of the rank files read. It appears only
// when stderr is a terminal and the reading has gone on for progressDelay
// (a small trace shows none), and it goes away at the first thing the
// command writes on stderr, or on stdout when stdout is a terminal too, and
// at the latest when the command returns (run). mpb is used here only.

// progressDelay is how long a trace is read before its bar appears.
var progressDelay = time.Second

// forwardSettle is how long the removal of a bar a launcher forwards is
// given to reach the terminal before anything else is written.
const forwardSettle = 100 * time.Millisecond

// progressTick is how often the bar takes the count of bytes read.
const progressTick = 100 * time.Millisecond

// readProgress is the progress of reading one trace.
type readProgress struct {
	read  atomic.Int64 // bytes read (tracefmt.Trace.OnRead)
	total int64
	name  string
	out   io.Writer // stderr as it was, for the bar
	// width is the bar's line (0: the terminal's); settle how long stop
	// waits after removing the bar: a launcher copies stderr and stdout
	// from two pipes, and what comes after on stdout must reach the
	// terminal after the bar's removal, not before it (which would erase
	// it).
	width  int
	settle time.Duration

	mu      sync.Mutex
	stopped bool
	timer   *time.Timer
	bar     *mpb.Bar
	p       *mpb.Progress
	done    chan struct{} // closed to end the ticker
	ticked  sync.WaitGroup
}

// startProgress counts what t's readers read and, with stderr a terminal,
// shows it after progressDelay. It replaces s.Err (and s.Out when it is a
// terminal) by writers that stop the bar before anything is written.
func startProgress(s *Streams, t *tracefmt.Trace) {
	startProgressNamed(s, t, "reading "+filepath.Base(t.Dir))
}

// startProgressNamed is startProgress with the bar named name.
func startProgressNamed(s *Streams, t *tracefmt.Trace, name string) {
	if !s.ErrTTY {
		return
	}
	s.stopProgress() // a command that reads a second trace
	rp := &readProgress{total: t.FileBytes(), name: name, out: s.Err, width: s.errWidth}
	if s.forwarded {
		rp.settle = forwardSettle
	}
	t.OnRead = func(n int) { rp.read.Add(int64(n)) }
	rp.timer = time.AfterFunc(progressDelay, rp.show)
	s.progress = rp
	s.Err = stopOnWrite{s.Err, rp}
	if s.OutTTY {
		s.Out = stopOnWrite{s.Out, rp}
	}
}

// show draws the bar, and updates it every progressTick until stop.
func (rp *readProgress) show() {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.stopped {
		return
	}
	opts := []mpb.ContainerOption{mpb.WithOutput(rp.out), mpb.ForceTTY(), mpb.WithAutoRefresh(), mpb.WithRefreshRate(progressTick)}
	if rp.width > 0 {
		opts = append(opts, mpb.WithWidth(rp.width))
	}
	rp.p = mpb.New(opts...)
	rp.bar = rp.p.New(max(rp.total, 1), mpb.BarStyle(),
		mpb.PrependDecorators(decor.Name(rp.name)),
		mpb.AppendDecorators(decor.CountersKibiByte("% .1f / % .1f "), decor.Percentage()))
	rp.done = make(chan struct{})
	rp.ticked.Add(1)
	go func() {
		defer rp.ticked.Done()
		tick := time.NewTicker(progressTick)
		defer tick.Stop()
		for {
			rp.bar.SetCurrent(min(rp.read.Load(), rp.total-1))
			select {
			case <-rp.done:
				return
			case <-tick.C:
			}
		}
	}()
}

// shown reports whether the bar was drawn.
func (rp *readProgress) shown() bool {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.bar != nil
}

// stop removes the bar, if it was shown, and keeps it from showing.
func (rp *readProgress) stop() {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.stopped {
		return
	}
	rp.stopped = true
	rp.timer.Stop()
	if rp.bar == nil {
		return
	}
	close(rp.done)
	rp.ticked.Wait()
	rp.bar.Abort(true)
	rp.p.Wait()
	time.Sleep(rp.settle)
}

// stopProgress stops the bar of the trace being read, if any.
func (s *Streams) stopProgress() {
	if s.progress != nil {
		s.progress.stop()
		s.progress = nil
	}
}

// stopOnWrite is a stream that stops a progress bar before it is written.
type stopOnWrite struct {
	w  io.Writer
	rp *readProgress
}

func (w stopOnWrite) Write(b []byte) (int, error) {
	w.rp.stop()
	return w.w.Write(b)
}
