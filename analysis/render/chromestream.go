package render

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// StreamOptions are the options of StreamChrome.
type StreamOptions struct {
	// Ranks, when not nil, keeps only these ranks' tracks.
	Ranks RankSet
	// Window, when not nil, keeps only the slices that start within it,
	// on each rank's own clock from the end of its MPI_Init (as in
	// DOTOptions).
	Window *Window
	// Path, when not nil, is the critical path to mark: its calls get
	// args.critical and its steps a track of their own (pid Size).
	Path *ChromePath
	// Size is the world's size; Logged the ranks with a log, in order.
	Size   int
	Logged []int
	// ClockGroups are the ranks that read one clock
	// (tracefmt.Trace.ClockGroups): each group's ranks share one offset
	// (tracefmt.ShareOffsets).
	ClockGroups [][]int
	// Open opens the event stream of a rank; StreamChrome closes it with
	// close. It is called twice per rank (two passes).
	Open func(rank int) (src tracefmt.Source, close func() error, err error)
	// TempDir holds the temporary file of each rank's span ends while
	// StreamChrome runs ("": the system's).
	TempDir string
	// Progress, when not nil, is called after every 1<<16 events of the
	// second pass with the events read so far (for tests of the memory
	// used).
	Progress func(events int64)
}

// StreamChrome writes a trace in the Chrome trace-event JSON format that
// Perfetto UI and chrome://tracing open (docs/cli.md, 'mpitrace
// export'): a track per rank (pid) and recorder thread (tid) holding each
// MPI call as a complete slice, the loops, iterations, regions, kernels,
// copies and sections recorded around them as enclosing slices, a flow
// per matched message (from the send's slice to the slice that completed
// the receive) and per collective member (from its slice to the last
// member to arrive's), and, with o.Path, the critical path marked. It
// reads the ranks' streams alone, in memory independent of the trace's
// length (o.Path apart):
//
//   - a first pass reads each rank in turn for its clock offset, the end
//     of its MPI_Init and the ends of its spans, which go to a temporary
//     file (8 bytes a span; a span is written when it begins, before the
//     calls inside it, as viewers want);
//   - a second pass reads every rank at once, merged by time on the
//     common clock, and writes each slice as its event is read; a
//     reconstruct.Linker pairs the messages and groups the collective
//     calls by Build's rules, and the flows are written as soon as both
//     ends are known (a file's flows may come in any order).
//
// What it keeps is a read buffer per rank, the spans open on each thread,
// and the Linker's messages, receives, requests and collective instances
// in flight. The events are in the merged order, the flows numbered in
// the order they complete: same input, same bytes.
func StreamChrome(w io.Writer, o StreamOptions) error {
	if o.Open == nil {
		return fmt.Errorf("internal error: render: StreamChrome without Open")
	}
	if w := o.Window; w != nil && (w.Start < 0 || w.End < 0 || w.End != 0 && w.End <= w.Start) {
		return fmt.Errorf("internal error: render: bad window %v", *w)
	}
	tmp, err := os.MkdirTemp(o.TempDir, "mpitrace-export-")
	if err != nil {
		return fmt.Errorf("export: temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	s := &streamer{o: o, ranks: make([]*streamRank, len(o.Logged))}
	s.cw = &chromeWriter{ranks: o.Ranks, window: o.Window, offsets: map[int]int64{}, w: bufio.NewWriterSize(w, 1<<16)}
	origins := map[int]int64{}
	s.cw.origin = func(r int) int64 { return origins[r] }
	defer func() {
		for _, sr := range s.ranks {
			if sr != nil {
				sr.close()
			}
		}
	}()
	for i, r := range o.Logged {
		sr, err := s.firstPass(r, tmp)
		if err != nil {
			return err
		}
		s.ranks[i] = sr
		origins[r] = sr.origin
		if sr.offFound {
			s.cw.offsets[r] = sr.off
		}
	}
	tracefmt.ShareOffsets(o.ClockGroups, s.cw.offsets)
	for _, sr := range s.ranks {
		sr.off = s.cw.offsets[sr.rank]
	}
	s.cw.raw(`{"displayTimeUnit":"ns","traceEvents":[`)
	for _, sr := range s.ranks {
		if s.keptRank(sr.rank) {
			s.cw.names(sr.rank, -1, "rank "+strconv.Itoa(sr.rank), sr.rank)
		}
	}
	if err := s.merge(); err != nil {
		return err
	}
	if o.Path != nil {
		// The track starts at the earliest end of MPI_Init on the common
		// clock.
		t0 := int64(0)
		for i, sr := range s.ranks {
			if t := sr.origin + sr.off; i == 0 || t < t0 {
				t0 = t
			}
		}
		if err := s.cw.criticalTrack(o.Path, o.Size, t0); err != nil {
			return err
		}
	}
	s.cw.raw("\n]}\n")
	return s.cw.w.Flush()
}

type streamer struct {
	o      StreamOptions
	cw     *chromeWriter
	ranks  []*streamRank
	flowID uint64
}

// streamRank is a rank in the second pass.
type streamRank struct {
	rank int
	off  int64
	// offFound: off is the log's ClockSync offset (else 0, none found).
	offFound bool
	origin   int64
	src      tracefmt.Source
	closeFn  func() error
	strs     *tracefmt.Strings
	idx      int64 // index of the current event
	at       int64 // its start on the common clock
	rl       *reconstruct.RankLinker
	threads  map[int]bool
	ends     *os.File // the span ends, 8 bytes each in begin order
	endsR    *bufio.Reader
	nSpans   int64
	read     int64      // span ends read
	path     pathCursor // its events on the critical path, from the current one on
	err      error
}

func (sr *streamRank) close() {
	if sr.closeFn != nil {
		sr.closeFn()
		sr.closeFn = nil
	}
	if sr.ends != nil {
		sr.ends.Close()
		sr.ends = nil
	}
}

func (s *streamer) keptRank(r int) bool { return s.o.Ranks == nil || s.o.Ranks.Contains(r) }

// firstPass reads rank r for its clock offset, its origin and its span
// ends (to a file in dir, when it has spans and is kept).
func (s *streamer) firstPass(r int, dir string) (*streamRank, error) {
	src, closeSrc, err := s.o.Open(r)
	if err != nil {
		return nil, err
	}
	defer closeSrc()
	sr := &streamRank{rank: r, threads: map[int]bool{}}
	var (
		co      ClockOffset
		spans   *spanSpill
		strs    = src.Strings()
		keep    = s.keptRank(r)
		isInit  = map[uint64]bool{} // by function id
		running bool                // past MPI_Init, or a call that needs MPI
		initEnd int64
		hasInit bool
		first   = int64(-1) // the start of the first call
	)
	for src.Next() {
		ev := src.Event()
		co.Event(ev)
		k := ev.Kind
		if keep && (spanBegin(k) || spanEnd(k)) {
			if spans == nil {
				f, err := os.CreateTemp(dir, "spans-"+strconv.Itoa(r)+"-")
				if err != nil {
					return nil, fmt.Errorf("export: rank %d: temporary file: %w", r, err)
				}
				sr.ends = f
				spans = newSpanSpill(f)
			}
			spans.Event(ev)
			continue
		}
		if hasInit || int(k) >= len(callKinds) || !callKinds[k] {
			continue
		}
		// The rank's clock starts at the end of its MPI_Init, as the
		// graph's (origin); without one, at its first call.
		in, ok := isInit[ev.Fn()]
		if !ok {
			in = reconstruct.IsInit(strs.Name(ev.Fn()))
			isInit[ev.Fn()] = in
		}
		switch {
		case in && !running:
			initEnd, hasInit = ev.End, true
		case first < 0:
			first = ev.Start
		}
		running = running || k != spec.Call
	}
	sr.origin = max(first, 0)
	if hasInit {
		sr.origin = initEnd
	}
	if err := src.Err(); err != nil {
		return nil, err
	}
	sr.off, sr.offFound = co.Offset()
	if spans != nil {
		if err := spans.finish(); err != nil {
			return nil, fmt.Errorf("export: rank %d: temporary file: %w", r, err)
		}
		sr.nSpans = spans.n
		if _, err := sr.ends.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		sr.endsR = bufio.NewReaderSize(sr.ends, 4096)
	}
	return sr, nil
}

func spanBegin(k spec.Kind) bool {
	switch k {
	case spec.LoopBegin, spec.IterBegin, spec.RegionBegin, spec.KernelBegin, spec.CopyBegin, spec.SectionBegin:
		return true
	}
	return false
}

func spanEnd(k spec.Kind) bool {
	switch k {
	case spec.LoopEnd, spec.IterEnd, spec.RegionEnd, spec.KernelEnd, spec.CopyEnd, spec.SectionEnd:
		return true
	}
	return false
}

// nextSpanEnd reads the end of the rank's next span (eventSource).
func (sr *streamRank) nextSpanEnd() int64 {
	if sr.endsR == nil || sr.read >= sr.nSpans {
		return -1
	}
	sr.read++
	var b [8]byte
	if _, err := io.ReadFull(sr.endsR, b[:]); err != nil {
		sr.err = fmt.Errorf("export: rank %d: reading back its span ends: %w", sr.rank, err)
		return -1
	}
	return int64(binary.LittleEndian.Uint64(b[:]))
}

// onPath reports whether the current event is on the critical path.
func (sr *streamRank) onPath() bool {
	return sr.path.has(sr.idx)
}

// rankHeap orders the ranks by the start of their current event on the
// common clock, then by rank.
type rankHeap []*streamRank

func (h rankHeap) Len() int { return len(h) }
func (h rankHeap) Less(i, j int) bool {
	return cmp.Or(cmp.Compare(h[i].at, h[j].at), cmp.Compare(h[i].rank, h[j].rank)) < 0
}
func (h rankHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *rankHeap) Push(x any)   { *h = append(*h, x.(*streamRank)) }
func (h *rankHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// advance moves rank sr to its next event; false at the end of its
// stream (or on an error, kept in sr.err).
func (sr *streamRank) advance() bool {
	if !sr.src.Next() {
		sr.err = sr.src.Err()
		return false
	}
	sr.idx++
	sr.at = sr.src.Event().Start + sr.off
	return true
}

// merge is the second pass.
func (s *streamer) merge() error {
	l := reconstruct.NewLinker(s.o.Size, s.o.Logged)
	l.Message = s.message
	l.Collective = s.collective
	h := make(rankHeap, 0, len(s.ranks))
	for _, sr := range s.ranks {
		src, closeSrc, err := s.o.Open(sr.rank)
		if err != nil {
			return err
		}
		sr.src, sr.closeFn, sr.strs, sr.idx = src, closeSrc, src.Strings(), -1
		sr.rl = l.Rank(sr.rank, sr.strs)
		if s.o.Path != nil {
			sr.path = s.o.Path.cursorOf(sr.rank)
		}
		if sr.advance() {
			h = append(h, sr)
		} else if sr.err != nil {
			return sr.err
		} else {
			sr.rl.Finish()
		}
	}
	heap.Init(&h)
	var n int64
	for len(h) > 0 {
		sr := h[0]
		s.event(sr, sr.src.Event())
		if sr.err != nil {
			return sr.err
		}
		if n++; n&(1<<16-1) == 0 && s.o.Progress != nil {
			s.o.Progress(n)
		}
		if sr.advance() {
			heap.Fix(&h, 0)
			continue
		}
		if sr.err != nil {
			return sr.err
		}
		heap.Pop(&h)
		sr.rl.Finish()
		sr.close()
	}
	l.Finish()
	return nil
}

func (s *streamer) event(sr *streamRank, ev *tracefmt.Event) {
	r, c := sr.rank, s.cw
	if s.keptRank(r) && !sr.threads[ev.Thread] {
		sr.threads[ev.Thread] = true
		c.names(r, ev.Thread, "thread "+strconv.Itoa(ev.Thread), ev.Thread)
	}
	mid, kept := c.writeEvent(sr, ev)
	if l := tracefmt.SourceLoss(sr.src); l.Events > 0 {
		sr.rl.Lost(l)
	}
	sr.rl.Event(ev, reconstruct.Endpoint{Rank: r, Thread: ev.Thread, Event: sr.idx, At: mid, Start: ev.Start + sr.off, Keep: kept})
}

func (s *streamer) message(send, recv *reconstruct.Endpoint) {
	if !send.Keep || !recv.Keep {
		return
	}
	s.flowID++
	s.cw.flow(send.Rank, send.Thread, "s", send.At, s.flowID, "message")
	s.cw.flow(recv.Rank, recv.Thread, "f", recv.At, s.flowID, "message")
}

func (s *streamer) collective(ms []reconstruct.Endpoint, last int) {
	to := &ms[last]
	if !to.Keep {
		return
	}
	for i := range ms {
		if m := &ms[i]; i != last && m.Keep {
			s.flowID++
			s.cw.flow(m.Rank, m.Thread, "s", m.At, s.flowID, "collective")
			s.cw.flow(to.Rank, to.Thread, "f", to.At, s.flowID, "collective")
		}
	}
}

// spanSpill pairs a rank's span begins and ends and writes the ends to a
// file in begin order, 8 bytes each (-1: a span never closed). An end
// closes the innermost open span of its thread when that span is of its
// begin's kind (End kinds follow their Begin kinds); any other end does
// not nest and is ignored (the validator reports both). The last
// spanWindow spans begun stay in memory until their slot is written; a
// span still open when its slot is written (a loop around much of the
// run) is patched in place at its end.
type spanSpill struct {
	f        *os.File
	w        *bufio.Writer
	open     map[int][]spanOpen
	n        int64   // spans begun
	base     int64   // the index of ring[0]: spans before it are in the file
	ring     []int64 // the ends of spans base..n-1 (-1: open or never closed)
	patch    []int64 // spans written open, closed since: index, end pairs
	nPatched int64
	err      error
}

const spanWindow = 4096

func newSpanSpill(f *os.File) *spanSpill {
	return &spanSpill{f: f, w: bufio.NewWriterSize(f, 1<<15), open: map[int][]spanOpen{}}
}

func (s *spanSpill) Event(ev *tracefmt.Event) {
	switch k := ev.Kind; {
	case spanBegin(k):
		s.open[ev.Thread] = append(s.open[ev.Thread], spanOpen{k, int(s.n)})
		s.ring = append(s.ring, -1)
		s.n++
		if len(s.ring) >= 2*spanWindow {
			s.spill(spanWindow)
		}
	case spanEnd(k):
		st := s.open[ev.Thread]
		if n := len(st); n > 0 && st[n-1].kind == k-1 {
			i := int64(st[n-1].i)
			if i >= s.base {
				s.ring[i-s.base] = ev.Start
			} else {
				s.patch = append(s.patch, i, ev.Start)
				if len(s.patch) >= 2*spanWindow {
					s.applyPatches()
				}
			}
			s.open[ev.Thread] = st[:n-1]
		}
	}
}

// spill writes the first n ends of the ring.
func (s *spanSpill) spill(n int) {
	var b [8]byte
	for _, e := range s.ring[:n] {
		binary.LittleEndian.PutUint64(b[:], uint64(e))
		if _, err := s.w.Write(b[:]); err != nil && s.err == nil {
			s.err = err
		}
	}
	m := copy(s.ring, s.ring[n:])
	s.ring = s.ring[:m]
	s.base += int64(n)
}

func (s *spanSpill) applyPatches() {
	if err := s.w.Flush(); err != nil && s.err == nil {
		s.err = err
	}
	var b [8]byte
	s.nPatched += int64(len(s.patch) / 2)
	for i := 0; i+1 < len(s.patch); i += 2 {
		binary.LittleEndian.PutUint64(b[:], uint64(s.patch[i+1]))
		if _, err := s.f.WriteAt(b[:], s.patch[i]*8); err != nil && s.err == nil {
			s.err = err
		}
	}
	s.patch = s.patch[:0]
}

func (s *spanSpill) finish() error {
	s.spill(len(s.ring))
	s.applyPatches()
	return s.err
}

// ClockOffset finds a rank's clock offset in its events: that of its
// MPI_Init clock synchronisation, else of its first other one (that of
// MPI_Finalize).
type ClockOffset struct {
	off         int64
	found, init bool
}

// Event takes the rank's next event.
func (c *ClockOffset) Event(ev *tracefmt.Event) {
	if ev.Kind != spec.ClockSync || c.init {
		return
	}
	if ev.Phase() == spec.PhaseInit || !c.found {
		c.found, c.init, c.off = true, ev.Phase() == spec.PhaseInit, ev.Offset()
	}
}

// Offset returns the ns to add to the rank's clock, and whether a clock
// synchronisation gave it.
func (c *ClockOffset) Offset() (int64, bool) { return c.off, c.found }
