package tracefmt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// The text form is one rank section per rank:
//
//	rank 0
//	meta rank="0"
//	meta size="2"
//	meta run_id="r1"
//	string 1 "MPI_Send"
//	t=1520 thr=0 Send fn=MPI_Send gap=1520 dur=312 peer=1 tag=7 comm=1 bytes=4096 req=0
//	t=1900 thr=0 Complete fn=MPI_Waitall dur=40 flag=1 completions=[{req=3 src=1 stag=7 sbytes=4096 flags=0}]
//	t=2000 thr=0 CommNew fn=MPI_Comm_split dur=5 parent=1 comm=3 gid=17 remote=0 ranks=[0,2,4]
//	pending thr=0 seq=3 fn=MPI_Recv t=2100 time=3100
//	end reason=finalize signal=0 events=3 blocks=1 time=2005 dropped=0
//
// An event line holds the absolute start time t, the thread, the kind name,
// then the kind's fields in table order (spec.Kinds) and its list. fn (and
// a loop's file) is shown by name when the name is a plain token (letters,
// digits and _ . : - /) defined once in the table, else as #ID. gap is shown only when it is not t minus the previous end of
// the same thread (0 for a thread's first event), so a dump reads as
// absolute times while staying lossless: WriteText then ParseText gives the
// same header, strings, events and end record.
//
// ParseText also accepts hand-written text (golden tests): fields left out
// are 0, t defaults to the previous end of the thread plus the gap, thr to 0,
// an fn name not in the table is added to it, and end-record keys left out
// are 0 (reason: finalize). A section without a size meta key gets the
// number of rank sections (at least its rank + 1). Blank lines and lines
// starting with # are ignored.
//
// Hand-written text may also say where a damaged log lost events: a line
// "lost thr=T events=N block=B" (block optional) is N events of thread T
// lost before the next event line, or after the last (a Loss, kept in
// RankData.Lost; WriteBinary writes it as lost blocks, see Writer.Skip).
// WriteText does not write these lines: a reader reports its losses as
// diagnostics.

// WriteText writes src as one rank section of the text form.
func WriteText(w io.Writer, src Source) error {
	bw, ok := w.(*bufio.Writer)
	if !ok {
		bw = bufio.NewWriterSize(w, 64<<10)
	}
	h := src.Header()
	fmt.Fprintf(bw, "rank %d\n", h.Rank)
	for _, kv := range h.Meta {
		bw.WriteString("meta ")
		bw.WriteString(quoteKey(kv.Key))
		bw.WriteByte('=')
		bw.WriteString(strconv.Quote(kv.Value))
		bw.WriteByte('\n')
	}
	strs := src.Strings()
	uses := make(map[string]int, strs.Len())
	for _, id := range strs.IDs() {
		s := strs.Name(id)
		uses[s]++
		bw.WriteString("string ")
		bw.WriteString(strconv.FormatUint(id, 10))
		bw.WriteByte(' ')
		bw.WriteString(strconv.Quote(s))
		bw.WriteByte('\n')
	}
	fnNames := make(map[uint64]string, strs.Len())
	for _, id := range strs.IDs() {
		switch s := strs.Name(id); {
		case uses[s] != 1:
		case isToken(s):
			fnNames[id] = s
		case s != "":
			// A region's or kernel's name with blanks, quoted.
			fnNames[id] = strconv.Quote(s)
		}
	}
	tw := textWriter{fnNames: fnNames, prevEnd: make(map[int]int64)}
	for src.Next() {
		tw.line = tw.appendEvent(tw.line[:0], src.Event())
		if _, err := bw.Write(tw.line); err != nil {
			return err
		}
	}
	if err := src.Err(); err != nil {
		return err
	}
	for _, p := range src.Pending() {
		fmt.Fprintf(bw, "pending thr=%d seq=%d fn=%s t=%d time=%d\n", p.Thread, p.Seq, tw.fnName(p.Fn), uint64(p.Start), uint64(p.Time))
	}
	if e := src.End(); e != nil {
		fmt.Fprintf(bw, "end reason=%s signal=%d events=%d blocks=%d time=%d dropped=%d",
			e.ReasonString(), e.Signal, e.Events, e.Blocks, uint64(e.Time), e.Dropped)
		if e.Code != 0 {
			fmt.Fprintf(bw, " code=%d", e.Code)
		}
		if e.Fn != 0 {
			fmt.Fprintf(bw, " fn=%s", tw.fnName(e.Fn))
		}
		if e.Message != "" {
			fmt.Fprintf(bw, " message=%s", strconv.Quote(e.Message))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// fnName is how a line shows a function's (or a file's) string id: its
// name, or #ID.
func (tw *textWriter) fnName(id uint64) string {
	if name, ok := tw.fnNames[id]; ok {
		return name
	}
	return "#" + strconv.FormatUint(id, 10)
}

type textWriter struct {
	fnNames map[uint64]string
	prevEnd map[int]int64 // per thread; absent before its first event
	line    []byte
}

func (tw *textWriter) appendEvent(b []byte, ev *Event) []byte {
	implied := int64(0)
	if pe, ok := tw.prevEnd[ev.Thread]; ok {
		implied = ev.Start - pe
	}
	tw.prevEnd[ev.Thread] = ev.End
	b = append(b, "t="...)
	b = strconv.AppendInt(b, ev.Start, 10)
	b = append(b, " thr="...)
	b = strconv.AppendInt(b, int64(ev.Thread), 10)
	b = append(b, ' ')
	b = append(b, ev.Name()...)
	if ev.Kind >= spec.NumKinds || !kindTab[ev.Kind].ok {
		return append(b, '\n')
	}
	ki := &kindTab[ev.Kind]
	for i, f := range ki.fields {
		v := ev.F[f]
		if f == spec.Gap && v == implied || f == spec.Site && v == 0 {
			// The gap the times imply; no call site (every event of
			// format versions before 5).
			continue
		}
		b = append(b, ' ')
		b = append(b, spec.Fields[f].Name...)
		b = append(b, '=')
		if spec.Fields[f].Str {
			b = append(b, tw.fnName(uint64(v))...)
			continue
		}
		if spec.Fields[f].Hex {
			b = append(b, "0x"...)
			b = strconv.AppendUint(b, uint64(v), 16)
			continue
		}
		b = appendValue(b, ki.codes[i], v)
	}
	if ki.list != spec.NoList {
		b = append(b, ' ')
		b = append(b, ki.list.String()...)
		b = append(b, "=["...)
		switch ki.list {
		case spec.ListRanks:
			for i, r := range ev.Ranks {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, r, 10)
			}
		case spec.ListReqs, spec.ListValues:
			list := ev.Reqs
			if ki.list == spec.ListValues {
				list = ev.Values
			}
			for i, r := range list {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendUint(b, r, 10)
			}
		case spec.ListCompletions:
			for i := range ev.Completions {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, '{')
				for j, code := range compCodes {
					if j > 0 {
						b = append(b, ' ')
					}
					f := spec.Field(code &^ signedBit)
					b = append(b, spec.Fields[f].Name...)
					b = append(b, '=')
					b = appendValue(b, code, getCompletion(&ev.Completions[i], f))
				}
				b = append(b, '}')
			}
		}
		b = append(b, ']')
	}
	return append(b, '\n')
}

func appendValue(b []byte, code uint8, v int64) []byte {
	if code&signedBit != 0 {
		return strconv.AppendInt(b, v, 10)
	}
	return strconv.AppendUint(b, uint64(v), 10)
}

// isToken reports whether s can stand unquoted as an fn name.
func isToken(s string) bool {
	if s == "" || s[0] == '#' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-' || c == '/') {
			return false
		}
	}
	return true
}

func quoteKey(k string) string {
	if isToken(k) && k[0] != '"' {
		return k
	}
	return strconv.Quote(k)
}

// ParseText reads the text form: one RankData per rank section.
func ParseText(r io.Reader) ([]*RankData, error) {
	br := bufio.NewReader(r)
	p := &textParser{}
	for {
		line, err := br.ReadString('\n')
		if line != "" || err == nil {
			p.lineNo++
			if perr := p.line(strings.TrimRight(line, "\r\n")); perr != nil {
				return nil, fmt.Errorf("text line %d: %w", p.lineNo, perr)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if err := p.finishSection(); err != nil {
		return nil, err
	}
	for _, s := range p.sections {
		h := &s.data.Header
		if _, ok := h.Get(KeySize); !ok {
			h.Size = max(len(p.sections), h.Rank+1)
		}
		if h.Size < 1 || h.Size > maxWorldSize || h.Rank >= h.Size {
			return nil, fmt.Errorf("text line %d: rank %d of a world of size %d", s.lineNo, h.Rank, h.Size)
		}
	}
	out := make([]*RankData, len(p.sections))
	for i, s := range p.sections {
		out[i] = s.data
	}
	return out, nil
}

type textSection struct {
	data     *RankData
	rankLine int
	lineNo   int           // of the rank line
	threads  map[int]int64 // previous end per thread
	names    map[string]uint64
	maxID    uint64
	ended    bool
}

type textParser struct {
	lineNo   int
	sections []*textSection
	cur      *textSection
}

func (p *textParser) finishSection() error {
	s := p.cur
	if s == nil {
		return nil
	}
	h := &s.data.Header
	if v, ok := h.Get(KeyRank); ok {
		if n, err := strconv.Atoi(v); err != nil || n != s.rankLine {
			return fmt.Errorf("rank %d: meta rank=%q disagrees with the section's rank line", s.rankLine, v)
		}
	}
	h.Rank = s.rankLine
	return nil
}

func (p *textParser) line(line string) error {
	t := strings.TrimSpace(line)
	if t == "" || t[0] == '#' {
		return nil
	}
	word, rest, _ := strings.Cut(t, " ")
	rest = strings.TrimSpace(rest)
	if word == "rank" {
		if err := p.finishSection(); err != nil {
			return err
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 0 || n >= maxWorldSize {
			return fmt.Errorf("rank %q: not a rank", rest)
		}
		p.cur = &textSection{data: &RankData{Header: Header{Version: spec.Current, Rank: n}}, rankLine: n, lineNo: p.lineNo,
			threads: make(map[int]int64), names: make(map[string]uint64)}
		p.sections = append(p.sections, p.cur)
		return nil
	}
	s := p.cur
	if s == nil {
		return errors.New("expected \"rank N\" to start a rank section")
	}
	switch word {
	case "meta":
		return s.meta(rest)
	case "string":
		return s.str(rest)
	case "end":
		return s.end(rest)
	case "pending":
		if s.ended {
			return errors.New("pending record after the end record")
		}
		return s.pending(rest)
	case "lost":
		if s.ended {
			return errors.New("lost record after the end record")
		}
		return s.lost(rest)
	}
	if s.ended {
		return errors.New("event after the end record")
	}
	return s.event(t)
}

func (s *textSection) meta(rest string) error {
	var key string
	if strings.HasPrefix(rest, `"`) {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return fmt.Errorf("meta: bad quoted key: %v", err)
		}
		key, _ = strconv.Unquote(q)
		rest = rest[len(q):]
		if !strings.HasPrefix(rest, "=") {
			return errors.New("meta: expected = after the key")
		}
		rest = rest[1:]
	} else {
		var ok bool
		key, rest, ok = strings.Cut(rest, "=")
		if !ok || key == "" {
			return errors.New("meta: expected key=value")
		}
	}
	value := rest
	if strings.HasPrefix(rest, `"`) {
		v, err := strconv.Unquote(rest)
		if err != nil {
			return fmt.Errorf("meta %s: bad quoted value: %v", key, err)
		}
		value = v
	}
	h := &s.data.Header
	_, dup := h.Get(key)
	h.Meta = append(h.Meta, KeyValue{key, value})
	if dup {
		// The typed fields mirror the first entry of a key, as Get does.
		return nil
	}
	switch key {
	case KeySize:
		n, err := strconv.Atoi(value)
		if err != nil {
			return fmt.Errorf("meta size=%q: not a world size", value)
		}
		h.Size = n
	case KeyRunID:
		h.RunID = value
	case KeyHostname:
		h.Hostname = value
	case KeyMPILibrary:
		h.MPILibrary = value
	}
	return nil
}

func (s *textSection) str(rest string) error {
	idText, q, ok := strings.Cut(rest, " ")
	if !ok {
		return errors.New(`string: expected ID "text"`)
	}
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil {
		return fmt.Errorf("string: bad id %q", idText)
	}
	v, err := strconv.Unquote(strings.TrimSpace(q))
	if err != nil {
		return fmt.Errorf("string %d: bad quoted text: %v", id, err)
	}
	return s.define(id, v)
}

func (s *textSection) define(id uint64, v string) error {
	if err := s.data.Strings.Define(id, v); err != nil {
		return err
	}
	if _, ok := s.names[v]; !ok {
		s.names[v] = id
	}
	s.maxID = max(s.maxID, id)
	return nil
}

func (s *textSection) end(rest string) error {
	if s.data.End != nil {
		return errors.New("second end record")
	}
	e := &End{Reason: spec.EndFinalize}
	toks, err := splitTokens(rest)
	if err != nil {
		return err
	}
	for _, tok := range toks {
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			return fmt.Errorf("end: expected key=value, got %q", tok)
		}
		switch k {
		case "reason":
			r, ok := parseEndReason(v)
			if !ok {
				return fmt.Errorf("end: unknown reason %q", v)
			}
			e.Reason = r
			continue
		case "fn":
			if e.Fn, err = s.fnID(v); err != nil {
				return fmt.Errorf("end: fn: %v", err)
			}
			continue
		case "message":
			if e.Message, err = strconv.Unquote(v); err != nil {
				return fmt.Errorf("end: message %s: bad quoted text", v)
			}
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("end: %s=%q: not a number", k, v)
		}
		switch k {
		case "signal":
			e.Signal = n
		case "events":
			e.Events = n
		case "blocks":
			e.Blocks = n
		case "time":
			e.Time = int64(n)
		case "dropped":
			e.Dropped = n
		case "code":
			e.Code = n
		default:
			return fmt.Errorf("end: unknown key %q", k)
		}
	}
	s.data.End = e
	s.ended = true
	return nil
}

// lost parses "lost thr=T events=N block=B": events lost before the next
// event line (after the last, when none follows).
func (s *textSection) lost(rest string) error {
	toks, err := splitTokens(rest)
	if err != nil {
		return err
	}
	l := Loss{Block: -1}
	for _, tok := range toks {
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			return fmt.Errorf("lost: expected key=value, got %q", tok)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 || n > math.MaxInt32 && k != "events" {
			return fmt.Errorf("lost: %s=%q: not a number in range", k, v)
		}
		switch k {
		case "thr":
			l.Thread = int(n)
		case "events":
			if n < 0 {
				return fmt.Errorf("lost: events=%d: not a count", n)
			}
			l.Events = uint64(n)
		case "block":
			l.Block = int(n)
		default:
			return fmt.Errorf("lost: unknown key %q", k)
		}
	}
	if l.Events == 0 {
		return errors.New("lost: events=N (N > 0) expected")
	}
	s.data.Lost = append(s.data.Lost, LossAt{Event: len(s.data.Events), Loss: l})
	return nil
}

// pending parses "pending thr=T seq=S fn=F t=START time=TIME".
func (s *textSection) pending(rest string) error {
	toks, err := splitTokens(rest)
	if err != nil {
		return err
	}
	var p Pending
	for _, tok := range toks {
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			return fmt.Errorf("pending: expected key=value, got %q", tok)
		}
		if k == "fn" {
			if p.Fn, err = s.fnID(v); err != nil {
				return fmt.Errorf("pending: fn: %v", err)
			}
			continue
		}
		n, err := strconv.ParseUint(v, 10, 63)
		if err != nil {
			return fmt.Errorf("pending: %s=%q: not a number", k, v)
		}
		switch k {
		case "thr":
			if n > math.MaxInt32 {
				return fmt.Errorf("pending: thr=%d out of range", n)
			}
			p.Thread = int(n)
		case "seq":
			p.Seq = n
		case "t":
			p.Start = int64(n)
		case "time":
			p.Time = int64(n)
		default:
			return fmt.Errorf("pending: unknown key %q", k)
		}
	}
	s.data.Pending = append(s.data.Pending, p)
	return nil
}

// splitTokens splits on spaces, keeping a [...] value (which may hold
// spaces) in one token.
func splitTokens(s string) ([]string, error) {
	var toks []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return toks, nil
		}
		i := 0
		depth := 0
		for ; i < len(s); i++ {
			c := s[i]
			if depth == 0 && (c == ' ' || c == '\t') {
				break
			}
			if c == '"' {
				// A quoted value (end's message) is one token.
				j := i + 1
				for ; j < len(s) && s[j] != '"'; j++ {
					if s[j] == '\\' {
						j++
					}
				}
				if j >= len(s) {
					return nil, errors.New("unterminated quoted text")
				}
				i = j
				continue
			}
			switch c {
			case '[':
				depth++
			case ']':
				depth--
				if depth < 0 {
					return nil, errors.New("unbalanced ]")
				}
			}
		}
		if depth != 0 {
			return nil, errors.New("unterminated [")
		}
		toks = append(toks, s[:i])
		s = s[i:]
	}
}

func (s *textSection) event(line string) error {
	toks, err := splitTokens(line)
	if err != nil {
		return err
	}
	var ev Event
	var kindTok string
	var ki *kindInfo
	haveT, haveGap := false, false
	seen := make(map[string]bool, len(toks))
	// First find the kind, so fields can be checked against it.
	for _, tok := range toks {
		if !strings.Contains(tok, "=") {
			if kindTok != "" {
				return fmt.Errorf("two kind names, %q and %q", kindTok, tok)
			}
			kindTok = tok
		}
	}
	if kindTok == "" {
		return errors.New("event without a kind name")
	}
	k, ok := spec.KindByName(kindTok)
	if !ok || kindTab[k].since > spec.Current {
		return fmt.Errorf("unknown event kind %q", kindTok)
	}
	ev.Kind = k
	ki = &kindTab[k]
	for _, tok := range toks {
		key, val, ok := strings.Cut(tok, "=")
		if !ok {
			continue
		}
		if seen[key] {
			return fmt.Errorf("%s: %s given twice", kindTok, key)
		}
		seen[key] = true
		switch key {
		case "t":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return fmt.Errorf("t=%q: not a time", val)
			}
			ev.Start, haveT = n, true
			continue
		case "thr":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil || n < 0 || n > math.MaxInt32 {
				return fmt.Errorf("thr=%q: not a thread index", val)
			}
			ev.Thread = int(n)
			continue
		}
		if ki.list != spec.NoList && key == ki.list.String() {
			if err := parseList(&ev, ki.list, val); err != nil {
				return fmt.Errorf("%s.%s: %w", kindTok, key, err)
			}
			continue
		}
		f, ok := spec.FieldByName(key)
		idx := -1
		if ok {
			for i, kf := range ki.fields {
				if kf == f {
					idx = i
				}
			}
		}
		if idx < 0 {
			return fmt.Errorf("%s has no field %q", kindTok, key)
		}
		if f == spec.Gap {
			haveGap = true
		}
		if spec.Fields[f].Str {
			id, err := s.fnID(val)
			if err != nil {
				return fmt.Errorf("%s.%s: %w", kindTok, key, err)
			}
			ev.F[f] = int64(id)
			continue
		}
		v, err := parseValue(ki.codes[idx], val)
		if h, ok := strings.CutPrefix(val, "0x"); ok && spec.Fields[f].Hex {
			var n uint64
			n, err = strconv.ParseUint(h, 16, 64)
			v = int64(n)
			if err != nil {
				err = fmt.Errorf("%q: not a hexadecimal unsigned integer", val)
			}
		}
		if err != nil {
			return fmt.Errorf("%s.%s: %w", kindTok, key, err)
		}
		ev.F[f] = v
	}
	prevEnd, threadSeen := s.threads[ev.Thread]
	switch {
	case haveT && !haveGap:
		if threadSeen {
			ev.F[spec.Gap] = ev.Start - prevEnd
		}
	case !haveT:
		ev.Start = prevEnd + ev.F[spec.Gap]
		if !threadSeen {
			ev.Start = ev.F[spec.Gap]
		}
	}
	ev.End = ev.Start
	if ki.hasDur {
		ev.End += ev.F[spec.Dur]
	}
	s.threads[ev.Thread] = ev.End
	s.data.Events = append(s.data.Events, ev)
	return nil
}

func (s *textSection) fnID(val string) (uint64, error) {
	if strings.HasPrefix(val, "#") {
		id, err := strconv.ParseUint(val[1:], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q: not a string id", val)
		}
		return id, nil
	}
	if strings.HasPrefix(val, `"`) {
		u, err := strconv.Unquote(val)
		if err != nil || u == "" {
			return 0, fmt.Errorf("%s: not a quoted name", val)
		}
		val = u
	} else if !isToken(val) {
		return 0, fmt.Errorf("%q: not a name", val)
	}
	if id, ok := s.names[val]; ok {
		return id, nil
	}
	if s.maxID == math.MaxUint64 {
		return 0, errors.New("string ids exhausted")
	}
	id := s.maxID + 1
	return id, s.define(id, val)
}

func parseValue(code uint8, val string) (int64, error) {
	if code&signedBit != 0 {
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q: not a signed integer", val)
		}
		return n, nil
	}
	n, err := strconv.ParseUint(val, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: not an unsigned integer", val)
	}
	return int64(n), nil
}

func parseList(ev *Event, l spec.List, val string) error {
	if len(val) < 2 || val[0] != '[' || val[len(val)-1] != ']' {
		return fmt.Errorf("%q: expected [...]", val)
	}
	body := strings.TrimSpace(val[1 : len(val)-1])
	if body == "" {
		return nil
	}
	switch l {
	case spec.ListRanks:
		for _, x := range strings.Split(body, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return fmt.Errorf("%q: not a rank", x)
			}
			ev.Ranks = append(ev.Ranks, n)
		}
	case spec.ListReqs, spec.ListValues:
		list, what := &ev.Reqs, "a request id"
		if l == spec.ListValues {
			list, what = &ev.Values, "an unsigned value"
		}
		for _, x := range strings.Split(body, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(x), 10, 64)
			if err != nil {
				return fmt.Errorf("%q: not %s", x, what)
			}
			*list = append(*list, n)
		}
	case spec.ListCompletions:
		for body != "" {
			if body[0] != '{' {
				return fmt.Errorf("%q: expected {", body)
			}
			end := strings.IndexByte(body, '}')
			if end < 0 {
				return errors.New("unterminated {")
			}
			var c Completion
			seen := map[string]bool{}
			for _, kv := range strings.Fields(body[1:end]) {
				key, v, ok := strings.Cut(kv, "=")
				f, fok := spec.FieldByName(key)
				code := -1
				for _, cc := range compCodes {
					if fok && spec.Field(cc&^signedBit) == f {
						code = int(cc)
					}
				}
				if !ok || code < 0 {
					return fmt.Errorf("%q: not a completion field", kv)
				}
				if seen[key] {
					return fmt.Errorf("completion field %s given twice", key)
				}
				seen[key] = true
				n, err := parseValue(uint8(code), v)
				if err != nil {
					return fmt.Errorf("completion %s: %w", key, err)
				}
				setCompletion(&c, f, n)
			}
			ev.Completions = append(ev.Completions, c)
			body = strings.TrimSpace(body[end+1:])
			if strings.HasPrefix(body, ",") {
				body = strings.TrimSpace(body[1:])
				if body == "" {
					return errors.New("trailing ,")
				}
			} else if body != "" {
				return fmt.Errorf("%q: expected , between completions", body)
			}
		}
	}
	return nil
}
