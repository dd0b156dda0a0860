package calibrate

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// FormatVersion is the version of the benchmark's output format this
// package reads and writes.
const FormatVersion = 1

// HeaderKind is the first word of the benchmark's header line.
const HeaderKind = "mpitrace-calibrate"

// maxLine bounds one output line (MPI library strings are long, not this long).
const maxLine = 1 << 20

// KindP2P is the Kind of point-to-point points; collective points carry the
// collective's MPI name ("MPI_Allreduce").
const KindP2P = "p2p"

// Point is one measurement. Its fields are those of latency.Point, so
// latency.Point(p) converts it.
type Point struct {
	Kind  string  // KindP2P or the collective's MPI name
	Bytes int64   // per-process block size (see the package doc)
	Procs int     // processes taking part (2 for point-to-point)
	Nanos float64 // one-way latency, or per-call time of the collective, in ns
}

// Result is a parsed benchmark run.
type Result struct {
	Version int    // output format version
	MPI     string // MPI_Get_library_version of the benchmark's MPI
	Host    string // MPI_Get_processor_name of rank 0
	Procs   int    // ranks in MPI_COMM_WORLD
	CPUs    int    // online CPUs on rank 0's host (0: unknown)
	Config  Config // the configuration the benchmark ran with
	Points  []Point
}

// Oversubscribed reports whether the run had more ranks than rank 0's host
// has CPUs; such timings include the operating system's scheduling and are
// much slower than a real run's (valid for a single-host run only).
func (r *Result) Oversubscribed() bool {
	return r.CPUs > 0 && r.Procs > r.CPUs
}

// Parse reads the benchmark's output. Lines before the header line (a
// launcher's banner) and after the end record are ignored; every other line
// must be a well-formed record. Errors name the line.
func Parse(r io.Reader) (*Result, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var (
		res       *Result
		lineNo    int
		sawConfig bool
	)
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), "\r")
		if res == nil {
			if kind, _, _ := strings.Cut(line, " "); kind != HeaderKind {
				continue
			}
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		kind, fields, err := splitRecord(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		if res == nil {
			res = &Result{}
			if err := parseHeader(res, fields); err != nil {
				return nil, fmt.Errorf("line %d: header: %w", lineNo, err)
			}
			continue
		}
		switch kind {
		case "config":
			if sawConfig {
				return nil, fmt.Errorf("line %d: a second config record", lineNo)
			}
			sawConfig = true
			if err := parseConfig(&res.Config, fields); err != nil {
				return nil, fmt.Errorf("line %d: config: %w", lineNo, err)
			}
		case "p2p", "coll":
			p, err := parsePoint(kind, fields, res.Procs)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %w", lineNo, kind, err)
			}
			res.Points = append(res.Points, p)
		case "end":
			n, err := fields.int("points", 0, math.MaxInt32)
			if err == nil {
				err = fields.done()
			}
			if err != nil {
				return nil, fmt.Errorf("line %d: end: %w", lineNo, err)
			}
			if n != int64(len(res.Points)) {
				return nil, fmt.Errorf("line %d: end: the benchmark wrote %d points but %d were read", lineNo, n, len(res.Points))
			}
			return res, nil
		case HeaderKind:
			return nil, fmt.Errorf("line %d: a second header: two runs' output mixed?", lineNo)
		default:
			return nil, fmt.Errorf("line %d: unknown record %q", lineNo, truncate(kind))
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d bytes", lineNo+1, maxLine)
		}
		return nil, fmt.Errorf("reading the benchmark's output: %w", err)
	}
	if res == nil {
		return nil, fmt.Errorf("no %q header line: not the calibration benchmark's output", HeaderKind)
	}
	return nil, fmt.Errorf("truncated output: no end record after line %d (the benchmark stopped early; %d points read)", lineNo, len(res.Points))
}

func parseHeader(res *Result, f *fields) error {
	v, err := f.int("version", 0, math.MaxInt32)
	if err != nil {
		return err
	}
	if v != FormatVersion {
		return fmt.Errorf("unsupported output format version %d (this build reads %d): rebuild the benchmark with this mpitrace", v, FormatVersion)
	}
	res.Version = int(v)
	procs, err := f.int("procs", 2, math.MaxInt32)
	if err != nil {
		return err
	}
	res.Procs = int(procs)
	cpus, err := f.int("cpus", -1, math.MaxInt32)
	if err != nil {
		return err
	}
	res.CPUs = max(int(cpus), 0)
	if res.Host, err = f.str("host"); err != nil {
		return err
	}
	if res.MPI, err = f.str("mpi"); err != nil {
		return err
	}
	return f.done()
}

func parseConfig(c *Config, f *fields) error {
	var err error
	get := func(key string, lo, hi int64) int64 {
		if err != nil {
			return 0
		}
		var v int64
		v, err = f.int(key, lo, hi)
		return v
	}
	c.P2PMin = get("p2p_min", 1, maxBytes)
	c.P2PMax = get("p2p_max", 1, maxBytes)
	c.CollMin = get("coll_min", 1, maxBytes)
	c.CollMax = get("coll_max", 1, maxBytes)
	c.MaxReps = int(get("reps", 1, math.MaxInt32))
	c.MinReps = int(get("min_reps", 1, math.MaxInt32))
	c.Trials = int(get("trials", 1, math.MaxInt32))
	c.MaxProcs = int(get("max_procs", 0, math.MaxInt32))
	c.Target = time.Duration(get("target_us", 1, math.MaxInt32)) * time.Microsecond
	if err != nil {
		return err
	}
	list, err := f.str("collectives")
	if err != nil {
		return err
	}
	c.Collectives = nil
	if list != "" {
		c.Collectives = strings.Split(list, ",")
	}
	return f.done()
}

func parsePoint(kind string, f *fields, worldProcs int) (Point, error) {
	p := Point{Kind: KindP2P}
	if kind == "coll" {
		name, err := f.str("name")
		if err != nil {
			return p, err
		}
		if !validCollectiveName(name) {
			return p, fmt.Errorf("name %q: not an MPI function name", truncate(name))
		}
		p.Kind = name
	}
	b, err := f.int("bytes", 0, maxBytes)
	if err != nil {
		return p, err
	}
	p.Bytes = b
	procs, err := f.int("procs", 2, int64(worldProcs))
	if err != nil {
		return p, err
	}
	p.Procs = int(procs)
	if kind == "p2p" && p.Procs != 2 {
		return p, fmt.Errorf("procs=%d: a ping-pong has 2", p.Procs)
	}
	if f.has("reps") {
		if _, err := f.int("reps", 1, math.MaxInt64); err != nil {
			return p, err
		}
	}
	ns, err := f.float("ns")
	if err != nil {
		return p, err
	}
	p.Nanos = ns
	return p, f.done()
}

func validCollectiveName(s string) bool {
	if len(s) <= 4 || len(s) > 64 || !strings.HasPrefix(s, "MPI_") {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// fields are a record's key=value pairs, consumed by the parser; done
// reports any left over.
type fields struct {
	keys []string
	vals map[string]string
	used map[string]bool
}

// splitRecord splits `kind key=value key="quoted value" ...`.
func splitRecord(line string) (kind string, f *fields, err error) {
	kind, rest, _ := strings.Cut(line, " ")
	if kind == "" {
		return "", nil, errors.New("record starts with a space")
	}
	f = &fields{vals: map[string]string{}, used: map[string]bool{}}
	for {
		rest = strings.TrimLeft(rest, " ")
		if rest == "" {
			return kind, f, nil
		}
		eq := strings.IndexAny(rest, "= ")
		if eq <= 0 || rest[eq] != '=' {
			tok, _, _ := strings.Cut(rest, " ")
			return "", nil, fmt.Errorf("field %q: want key=value", truncate(tok))
		}
		key := rest[:eq]
		rest = rest[eq+1:]
		var val string
		if strings.HasPrefix(rest, `"`) {
			end := closingQuote(rest)
			if end < 0 {
				return "", nil, fmt.Errorf("field %s: unterminated string", truncate(key))
			}
			val, err = strconv.Unquote(rest[:end+1])
			if err != nil {
				return "", nil, fmt.Errorf("field %s: malformed quoted string (bad escape or raw control character)", truncate(key))
			}
			rest = rest[end+1:]
			if rest != "" && rest[0] != ' ' {
				return "", nil, fmt.Errorf("field %s: text after the closing quote", truncate(key))
			}
		} else {
			val, rest, _ = strings.Cut(rest, " ")
		}
		if _, dup := f.vals[key]; dup {
			return "", nil, fmt.Errorf("field %s appears twice", truncate(key))
		}
		f.keys = append(f.keys, key)
		f.vals[key] = val
	}
}

// closingQuote returns the index of the quote that closes the string
// starting at s[0], or -1.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

func (f *fields) has(key string) bool { _, ok := f.vals[key]; return ok }

func (f *fields) raw(key string) (string, error) {
	v, ok := f.vals[key]
	if !ok {
		return "", fmt.Errorf("missing field %s", key)
	}
	f.used[key] = true
	return v, nil
}

func (f *fields) str(key string) (string, error) { return f.raw(key) }

func (f *fields) int(key string, lo, hi int64) (int64, error) {
	s, err := f.raw(key)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%s: not an integer", key, truncate(s))
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("%s=%d: out of range [%d, %d]", key, v, lo, hi)
	}
	return v, nil
}

func (f *fields) float(key string) (float64, error) {
	s, err := f.raw(key)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s=%s: not a finite number", key, truncate(s))
	}
	if v < 0 {
		return 0, fmt.Errorf("%s=%s: negative", key, truncate(s))
	}
	return v, nil
}

func (f *fields) done() error {
	for _, k := range f.keys {
		if !f.used[k] {
			return fmt.Errorf("unknown field %s", truncate(k))
		}
	}
	return nil
}

// truncate shortens s for an error message and escapes what would break
// the message's line (control characters, invalid UTF-8).
func truncate(s string) string {
	long := len(s) > 40
	if long {
		s = s[:40]
	}
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		s = q[1 : len(q)-1]
	}
	if long {
		s += "..."
	}
	return s
}

// WriteText writes r in the benchmark's output format; Parse reads it back.
// Repetition counts are not kept in a Result and are left out.
func (r *Result) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s version=%d procs=%d cpus=%d host=%s mpi=%s\n", HeaderKind, FormatVersion, r.Procs, r.CPUs,
		strconv.Quote(r.Host), strconv.Quote(r.MPI))
	if c := r.Config; c.P2PMin != 0 {
		fmt.Fprintf(bw, "config p2p_min=%d p2p_max=%d coll_min=%d coll_max=%d reps=%d min_reps=%d trials=%d max_procs=%d target_us=%d collectives=%s\n",
			c.P2PMin, c.P2PMax, c.CollMin, c.CollMax, c.MaxReps, c.MinReps, c.Trials, c.MaxProcs, c.Target.Microseconds(),
			strconv.Quote(strings.Join(c.Collectives, ",")))
	}
	for _, p := range r.Points {
		ns := strconv.FormatFloat(p.Nanos, 'g', -1, 64)
		if p.Kind == KindP2P {
			fmt.Fprintf(bw, "p2p bytes=%d procs=%d ns=%s\n", p.Bytes, p.Procs, ns)
		} else {
			fmt.Fprintf(bw, "coll name=%s bytes=%d procs=%d ns=%s\n", p.Kind, p.Bytes, p.Procs, ns)
		}
	}
	fmt.Fprintf(bw, "end points=%d\n", len(r.Points))
	return bw.Flush()
}
