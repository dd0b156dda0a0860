package render

import (
	"bufio"
	"cmp"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// chromeWriter writes the events of a Chrome trace-event JSON file
// (docs/cli.md, 'mpitrace export'): StreamChrome's output.
type chromeWriter struct {
	// ranks and window cut the output (StreamOptions); offsets are the
	// ns to add to each rank's clock to get the common clock.
	ranks   RankSet
	window  *Window
	offsets map[int]int64
	w       *bufio.Writer
	buf     []byte
	first   bool // an event has been written
	args    []chromeArg

	// origin is where rank r's clock starts for --window: the end of its
	// MPI_Init (the graph's origin, see the package's origin).
	origin func(r int) int64
}

func (c *chromeWriter) raw(s string) { c.w.WriteString(s) }

func (c *chromeWriter) offset(r int) int64 { return c.offsets[r] }

// keptAt reports whether rank r's slice starting at start (on r's clock)
// is written.
func (c *chromeWriter) keptAt(r int, start int64) bool {
	if c.ranks != nil && !c.ranks.Contains(r) {
		return false
	}
	return c.window == nil || c.window.Contains(time.Duration(start-c.origin(r)))
}

type spanOpen struct {
	kind spec.Kind
	i    int
}

type chromeArg struct {
	key  string
	s    string
	n    int64
	isS  bool
	flag bool // a boolean true
}

// spanNames name the spans of a name in their slices ("region NAME").
var spanNames = map[spec.Kind]string{spec.RegionBegin: "region", spec.KernelBegin: "kernel", spec.CopyBegin: "copy", spec.SectionBegin: "section"}

// callKinds marks the kinds that are MPI calls (a function and a duration).
var callKinds = func() (k [spec.NumKinds]bool) {
	for i := range k {
		fs := spec.Kinds[i].Fields
		k[i] = slices.Contains(fs, spec.Fn) && slices.Contains(fs, spec.Dur)
	}
	return k
}()

// callArgs are, per kind, the fields a call's slice shows in args.
var callArgs = func() (t [spec.NumKinds][]spec.Field) {
	for i := range t {
		for _, f := range []spec.Field{spec.Peer, spec.Tag, spec.Bytes, spec.Comm, spec.Root, spec.RPeer, spec.RTag, spec.Src, spec.STag, spec.SBytes, spec.RBytes} {
			if slices.Contains(spec.Kinds[i].Fields, f) {
				t[i] = append(t[i], f)
			}
		}
	}
	return t
}()

// writeEvent writes the slice of event ev of rank sr: a span at its
// begin, an MPI call (marked critical when sr's current event is on the
// path), nothing for other events or events cut by --ranks or --window.
// For a call written, it returns the middle of its slice on the common
// clock, where its flows attach.
func (c *chromeWriter) writeEvent(sr *streamRank, ev *tracefmt.Event) (mid int64, ok bool) {
	r, off, strs := sr.rank, sr.off, sr.strs
	k := ev.Kind
	switch k {
	case spec.LoopBegin, spec.IterBegin, spec.RegionBegin, spec.KernelBegin, spec.CopyBegin, spec.SectionBegin:
		end := sr.nextSpanEnd()
		if end < 0 || !c.keptAt(r, ev.Start) {
			return 0, false
		}
		var name string
		args := c.args[:0]
		switch k {
		case spec.LoopBegin:
			file, _ := strs.Lookup(uint64(ev.Get(spec.File)))
			loc := file + ":" + strconv.FormatInt(ev.Get(spec.Line), 10) + ":" + strconv.FormatInt(ev.Get(spec.Col), 10)
			name, args = "loop "+loc, append(args, chromeArg{key: "location", s: loc, isS: true})
		case spec.IterBegin:
			name, args = "iteration", append(args, chromeArg{key: "iter", n: ev.Get(spec.Iter)})
		default:
			n, _ := strs.Lookup(uint64(ev.Get(spec.Name)))
			name = spanNames[k] + " " + n
			if k == spec.CopyBegin {
				args = append(args, chromeArg{key: "bytes", n: ev.Get(spec.Bytes)})
			}
		}
		c.slice(r, ev.Thread, name, "span", ev.Start+off, max(end-ev.Start, 0), args)
		c.args = args
		return 0, false
	case spec.LoopEnd, spec.IterEnd, spec.RegionEnd, spec.KernelEnd, spec.CopyEnd, spec.SectionEnd:
		return 0, false // written at its begin
	}
	if int(k) >= len(callKinds) || !callKinds[k] || !c.keptAt(r, ev.Start) {
		return 0, false
	}
	name, ok := strs.Lookup(ev.Fn())
	if !ok {
		name = "fn " + strconv.FormatUint(ev.Fn(), 10)
	}
	args := c.args[:0]
	for _, f := range callArgs[k] {
		args = append(args, chromeArg{key: spec.Fields[f].Name, n: ev.Get(f)})
	}
	if sr.onPath() {
		args = append(args, chromeArg{key: "critical", flag: true})
	}
	start, dur := ev.Start+off, max(ev.End-ev.Start, 0)
	c.slice(r, ev.Thread, name, "mpi", start, dur, args)
	c.args = args
	return start + dur/2, true
}

// The writers of events. Keys are written in sorted order, args sorted
// by key.

func (c *chromeWriter) begin() {
	if c.first {
		c.buf = append(c.buf, ",\n"...)
	} else {
		c.buf = append(c.buf, '\n')
		c.first = true
	}
}

func (c *chromeWriter) flush() {
	c.w.Write(c.buf)
	c.buf = c.buf[:0]
}

// meta writes a metadata event: a process's or thread's name (what
// "process_name" or "thread_name", a string) or sort index.
func (c *chromeWriter) meta(pid, tid int, what string, arg chromeArg) {
	c.begin()
	c.buf = append(c.buf, `{"args":{`...)
	c.buf = c.appendArg(c.buf, arg)
	c.buf = append(c.buf, `},"name":"`...)
	c.buf = append(c.buf, what...)
	c.buf = append(c.buf, `","ph":"M","pid":`...)
	c.buf = c.ids(pid, tid)
	c.buf = append(c.buf, '}')
	c.flush()
}

// names writes the name and sort index of a process (tid < 0) or thread.
func (c *chromeWriter) names(pid, tid int, name string, index int) {
	what := "process_"
	if tid >= 0 {
		what = "thread_"
	}
	c.meta(pid, tid, what+"name", chromeArg{key: "name", s: name, isS: true})
	c.meta(pid, tid, what+"sort_index", chromeArg{key: "sort_index", n: int64(index)})
}

func (c *chromeWriter) appendArg(b []byte, a chromeArg) []byte {
	b = appendJSONString(b, a.key)
	b = append(b, ':')
	switch {
	case a.flag:
		return append(b, "true"...)
	case a.isS:
		return appendJSONString(b, a.s)
	}
	return strconv.AppendInt(b, a.n, 10)
}

// end writes an event's last keys, pid, tid and ts, and the event.
func (c *chromeWriter) end(pid, tid int, ts int64) {
	b := c.ids(pid, tid)
	b = append(b, `,"ts":`...)
	b = appendMicros(b, ts)
	c.buf = append(b, '}')
	c.flush()
}

// ids appends the pid (already keyed) and, for tid >= 0, the tid.
func (c *chromeWriter) ids(pid, tid int) []byte {
	b := strconv.AppendInt(c.buf, int64(pid), 10)
	if tid >= 0 {
		b = append(b, `,"tid":`...)
		b = strconv.AppendInt(b, int64(tid), 10)
	}
	return b
}

func (c *chromeWriter) slice(pid, tid int, name, cat string, ts, dur int64, args []chromeArg) {
	c.begin()
	b := c.buf
	if len(args) > 0 {
		byKey := func(a, b chromeArg) int { return cmp.Compare(a.key, b.key) }
		if !slices.IsSortedFunc(args, byKey) {
			slices.SortFunc(args, byKey)
		}
		b = append(b, `{"args":{`...)
		for i, a := range args {
			if i > 0 {
				b = append(b, ',')
			}
			b = c.appendArg(b, a)
		}
		b = append(b, `},"cat":"`...)
	} else {
		b = append(b, `{"cat":"`...)
	}
	b = append(b, cat...)
	b = append(b, `","dur":`...)
	b = appendMicros(b, dur)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, name)
	b = append(b, `,"ph":"X","pid":`...)
	c.buf = b
	c.end(pid, tid, ts)
}

func (c *chromeWriter) flow(pid, tid int, ph string, ts int64, id uint64, cat string) {
	c.begin()
	b := c.buf
	if ph == "f" {
		b = append(b, `{"bp":"e","cat":"`...)
	} else {
		b = append(b, `{"cat":"`...)
	}
	b = append(b, cat...)
	b = append(b, `","id":`...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, `,"name":"`...)
	b = append(b, cat...)
	b = append(b, `","ph":"`...)
	b = append(b, ph...)
	b = append(b, `","pid":`...)
	c.buf = b
	c.end(pid, tid, ts)
}

// appendMicros appends ns as microseconds with three decimals (exact).
func appendMicros(b []byte, ns int64) []byte {
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = uint64(-ns)
	}
	b = strconv.AppendUint(b, u/1000, 10)
	frac := u % 1000
	b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	return b
}

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		ch := s[i]
		if ch < utf8.RuneSelf {
			switch {
			case ch == '"' || ch == '\\':
				b = append(b, '\\', ch)
			case ch < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[ch>>4], hex[ch&15])
			default:
				b = append(b, ch)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
