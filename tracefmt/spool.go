package tracefmt

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// A Spool keeps the decompressed events blocks of many rank readers in a
// temporary file, for a reader of each rank at once (a merge of the ranks
// by time): a reader spooling to it (RankReader.SpoolTo) holds a window of
// a few KiB of its current block instead of the whole block, up to 16 MiB
// (256 KiB as the recorder writes them). The file is removed from its
// directory as soon as it is created, so that it is gone when the process
// ends however it ends; it grows by the decompressed size of the blocks
// read (bounded like them by the files' budgets). A Spool is safe for
// concurrent use.
type Spool struct {
	dir    string
	mu     sync.Mutex
	f      *os.File
	end    int64
	window int // a cursor's first window, 0: spoolWindow
}

// SetWindow sets the window a reader's cursor holds of its block at
// first (4 KiB by default, at least 256 bytes): fewer reads of the spool for
// more memory per reader (thousands of readers at once want less). Call
// it before the readers read.
func (s *Spool) SetWindow(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.window = max(n, spoolMinWindow)
}

func (s *Spool) windowSize() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.window > 0 {
		return s.window
	}
	return spoolWindow
}

// NewSpool returns a spool whose file is created, on first use, in dir
// ("" for the default temporary directory).
func NewSpool(dir string) *Spool { return &Spool{dir: dir} }

// write appends p to the spool and returns its offset.
func (s *Spool) write(p []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, "mpitrace-spool-*")
		if err != nil {
			return 0, fmt.Errorf("spooling decompressed blocks: %w (set TMPDIR to a directory with room)", err)
		}
		os.Remove(f.Name())
		s.f = f
	}
	off := s.end
	if _, err := s.f.WriteAt(p, off); err != nil {
		return 0, fmt.Errorf("spooling decompressed blocks: %w (set TMPDIR to a directory with room)", err)
	}
	s.end += int64(len(p))
	return off, nil
}

// ReadAt reads the spool's bytes at off.
func (s *Spool) ReadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	f := s.f
	s.mu.Unlock()
	if f == nil {
		return 0, io.EOF
	}
	return f.ReadAt(p, off)
}

// Size returns the bytes spooled so far.
func (s *Spool) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end
}

// Close releases the spool's file.
func (s *Spool) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

const (
	// spoolWindow is a spooling cursor's window at first: it grows, by
	// doubling, only for an event larger than it (a long list).
	spoolWindow = 4096
	// spoolMargin: an event is decoded without a check of the window's
	// end when at least this many bytes of the window are left (a quarter
	// of a smaller window); the window is moved on before. (Decoding
	// checks every bound: an event longer than that, not in the window,
	// fails and is decoded again from a window that starts at it.)
	spoolMargin = 1024
	// spoolMinWindow is the smallest window SetWindow sets.
	spoolMinWindow = 256
)

// SpoolTo makes the reader keep its events blocks in s, each thread
// holding only a window of its current block. Call it before the first
// Next. The events, losses and diagnostics are those of a reader without
// a spool.
func (r *RankReader) SpoolTo(s *Spool) { r.spool = s }

// scratch buffers (*[]byte) decompress a block before it is spooled.
var scratchBufs sync.Pool

// spoolBlock loads block b of a spooling cursor: its payload is checked,
// decompressed into a pooled buffer and written to the spool (an
// uncompressed block is read from the file where it is), and the window
// is filled from its start. ok is false when the block cannot be used
// (diagnosed here) or on an I/O error (r.err).
func (c *cursor) spoolBlock(b *eventsBlock) (ok bool) {
	r := c.r
	var scratch []byte
	if p, ok := scratchBufs.Get().(*[]byte); ok {
		scratch = *p
	}
	defer func() { scratchBufs.Put(&scratch) }()
	if b.f.codec == spec.CodecNone && cap(scratch) < int(b.f.stored) {
		scratch = make([]byte, b.f.stored)
	}
	payload, ok := r.eventsPayload(b, scratch)
	if !ok {
		return false
	}
	if cap(c.win) == 0 {
		c.win = make([]byte, r.spool.windowSize()+rawSlack)
	}
	if b.f.codec == spec.CodecNone {
		c.src, c.srcOff = r.ra, b.off+spec.BlockHeaderSize
	} else {
		// A block that fits the window is decompressed into it, neither
		// written to the spool nor read back.
		held := int(b.f.raw)+rawSlack <= cap(c.win)
		dst := scratch[:0]
		if held {
			dst = c.win[:0]
		}
		out, err := decompressPooled(payload, int(b.f.raw), dst)
		if !held {
			scratch = out
		}
		r.putPayloadBuf()
		if err != nil {
			r.diag(DataLoss, CodeUndecodableBlock, b.index, b.off, "decompressing events block: %v; thread %d: %s lost", err, c.thread, nEvents(b.count))
			return false
		}
		if held {
			c.buf, c.src, c.srcOff = out, heldBlock{}, 0
			c.rawLen, c.winBase, c.refillAt = len(out), 0, math.MaxInt
			return true
		}
		off, err := r.spool.write(out)
		if err != nil {
			r.err = err
			return false
		}
		c.src, c.srcOff = r.spool, off
	}
	c.rawLen = int(b.f.raw)
	return c.fill(0)
}

// heldBlock is the source of a block held whole in a cursor's window,
// which is never read again.
type heldBlock struct{}

func (heldBlock) ReadAt([]byte, int64) (int, error) {
	return 0, errors.New("internal error: tracefmt: a block held in its window was read again")
}

// fill moves a spooling cursor's window to start at byte from of its
// block; false on an I/O error (r.err).
func (c *cursor) fill(from int) bool {
	n := min(cap(c.win), c.rawLen-from)
	c.buf = c.win[:n]
	// A ReaderAt may return io.EOF with every byte asked for.
	if got, err := c.src.ReadAt(c.buf, c.srcOff+int64(from)); got < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		c.r.err = fmt.Errorf("%s: reading a spooled events block: %w", c.r.name, err)
		return false
	}
	c.winBase = from
	c.refillAt = math.MaxInt
	if from+n < c.rawLen {
		c.refillAt = n - min(spoolMargin, cap(c.win)/4)
	}
	return true
}

// refill moves the window of a spooling cursor to start at the next event,
// twice as large when the event did not fit a window starting at it;
// false when the window already reaches the block's end (nothing more to
// read) or on an I/O error.
func (c *cursor) refill(grow bool) bool {
	if c.src == nil || c.winBase+len(c.buf) >= c.rawLen {
		return false
	}
	if grow && c.pos == 0 {
		c.win = make([]byte, 2*cap(c.win))
	}
	from := c.winBase + c.pos
	c.pos = 0
	return c.fill(from)
}
