package latency

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
)

// maxModelFile bounds the size of a model file Read accepts.
const maxModelFile = 64 << 20

//go:embed default_model.json
var defaultModel []byte

// Default returns the model embedded in mpitrace, a calibration of the
// machine mpitrace was developed on (see gen_default.go), with Source
// DefaultSource so callers can say which model they used. Each call
// returns a new copy.
func Default() *Model {
	m, err := readNamed(bytes.NewReader(defaultModel), "default_model.json (embedded)")
	if err != nil {
		panic("internal error: " + err.Error())
	}
	m.Source = DefaultSource
	return m
}

// Write writes m as indented JSON, collectives sorted by name and points
// sorted by kind, processes, bytes and time, so a model writes the same
// bytes every time. m must be valid (Validate).
func (m *Model) Write(w io.Writer) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("writing latency model: %w", err)
	}
	c := *m
	c.Collectives = slices.Clone(m.Collectives)
	sort.SliceStable(c.Collectives, func(i, j int) bool { return c.Collectives[i].Name < c.Collectives[j].Name })
	c.Points = slices.Clone(m.Points)
	sortPoints(c.Points)
	c.Outliers = slices.Clone(m.Outliers)
	sortPoints(c.Outliers)
	if c.Collectives == nil {
		c.Collectives = []CollectiveModel{}
	}
	if c.Points == nil {
		c.Points = []Point{}
	}
	if c.PointToPoint.Breakpoints == nil {
		c.PointToPoint.Breakpoints = []int64{}
	}
	for i := range c.Collectives {
		if c.Collectives[i].Breakpoints == nil {
			c.Collectives[i].Breakpoints = []int64{}
		}
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return fmt.Errorf("writing latency model: %w", err)
	}
	var out bytes.Buffer
	indentJSON(&out, b, 0, 0)
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

// indentJSON writes the compact JSON value at src[i:] indented like
// json.MarshalIndent with two spaces, except that an object or array that
// holds no object or array (a point, a term, a list of breakpoints) stays
// on one line, and returns the index after the value.
func indentJSON(b *bytes.Buffer, src []byte, i, depth int) int {
	switch src[i] {
	case '{', '[':
	case '"':
		end := stringEnd(src, i)
		b.Write(src[i:end])
		return end
	default:
		end := i
		for end < len(src) && !strings.ContainsRune(",]}", rune(src[end])) {
			end++
		}
		b.Write(src[i:end])
		return end
	}
	end, leaf := i+1, true
	for lvl := 1; lvl > 0; {
		switch src[end] {
		case '"':
			end = stringEnd(src, end)
			continue
		case '{', '[':
			lvl++
			leaf = false
		case '}', ']':
			lvl--
		}
		end++
	}
	if leaf {
		for j := i; j < end; {
			if src[j] == '"' {
				k := stringEnd(src, j)
				b.Write(src[j:k])
				j = k
				continue
			}
			b.WriteByte(src[j])
			if src[j] == ',' || src[j] == ':' {
				b.WriteByte(' ')
			}
			j++
		}
		return end
	}
	open, pad := src[i], strings.Repeat("  ", depth+1)
	b.WriteByte(open)
	j := i + 1
	for first := true; src[j] != '}' && src[j] != ']'; first = false {
		if !first {
			j++ // the comma
			b.WriteByte(',')
		}
		b.WriteString("\n" + pad)
		if open == '{' {
			k := stringEnd(src, j)
			b.Write(src[j:k])
			b.WriteString(": ")
			j = k + 1 // the colon
		}
		j = indentJSON(b, src, j, depth+1)
	}
	b.WriteString("\n" + strings.Repeat("  ", depth))
	b.WriteByte(src[j])
	return j + 1
}

// stringEnd returns the index after the JSON string starting at src[i].
func stringEnd(src []byte, i int) int {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(src)
}

// Read reads and validates a model written by Write.
func Read(r io.Reader) (*Model, error) { return readNamed(r, "") }

// Load reads and validates the model file at path.
func Load(path string) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("latency model: %w", err)
	}
	defer f.Close()
	return readNamed(f, path)
}

func readNamed(r io.Reader, name string) (*Model, error) {
	prefix := "latency model"
	if name != "" {
		prefix += " " + name
	}
	data, err := io.ReadAll(io.LimitReader(r, maxModelFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", prefix, err)
	}
	if len(data) > maxModelFile {
		return nil, fmt.Errorf("%s: larger than %d bytes: not a latency model", prefix, maxModelFile)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty file", prefix)
	}
	if data = bytes.TrimSpace(data); data[0] != '{' {
		return nil, fmt.Errorf("%s: not a JSON object: not a latency model", prefix)
	}
	// The version first, so a newer file gets a version error rather
	// than an unknown-field one.
	var v struct {
		Version *int `json:"version"`
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: %s", prefix, jsonError(data, err))
	}
	if v.Version == nil {
		return nil, fmt.Errorf("%s: field version: missing (not a latency model?)", prefix)
	}
	if *v.Version != ModelVersion {
		return nil, fmt.Errorf("%s: unsupported model version %d (this build reads %d)", prefix, *v.Version, ModelVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	m := new(Model)
	if err := dec.Decode(m); err != nil {
		return nil, fmt.Errorf("%s: %s", prefix, jsonError(data, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: data after the model's closing brace", prefix)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", prefix, err)
	}
	return m, nil
}

// jsonError rewrites a decoding error as one line naming the place or the
// field.
func jsonError(data []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated: the JSON ends early"
	case errors.As(err, &syn):
		if syn.Offset >= int64(len(data)) {
			return "truncated: the JSON ends early"
		}
		line, col := lineCol(data, syn.Offset)
		return fmt.Sprintf("malformed JSON at line %d, column %d: %v", line, col, syn)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(top level)"
		}
		return fmt.Sprintf("field %s: want %s, have JSON %s", field, typ.Type, typ.Value)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		return "unknown field " + strings.Trim(f, `"`)
	}
	return msg
}

func lineCol(data []byte, off int64) (line, col int) {
	line, col = 1, 1
	for _, c := range data[:min(off, int64(len(data)))] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// Validate checks m's fields; the error names the first bad field as its
// JSON path (p2p.segments[1].a_ns).
func (m *Model) Validate() error {
	if m.Version != ModelVersion {
		return fmt.Errorf("field version: %d, want %d", m.Version, ModelVersion)
	}
	if m.Procs < 0 {
		return fmt.Errorf("field procs: negative")
	}
	if m.CPUs < 0 {
		return fmt.Errorf("field cpus: negative")
	}
	p := m.PointToPoint
	if err := checkBreakpoints("p2p", p.Breakpoints, len(p.Segments)); err != nil {
		return err
	}
	for i, s := range p.Segments {
		at := fmt.Sprintf("p2p.segments[%d]", i)
		for _, f := range []struct {
			name string
			v    float64
		}{{"a_ns", s.A}, {"b_ns_per_byte", s.B}, {"r2", s.R2}, {"rel_rms", s.RelRMS}} {
			if !finite(f.v) {
				return fmt.Errorf("field %s.%s: not a finite number", at, f.name)
			}
		}
		if s.FirstBytes < 0 || s.LastBytes < s.FirstBytes {
			return fmt.Errorf("field %s: first_bytes %d and last_bytes %d: want 0 <= first <= last", at, s.FirstBytes, s.LastBytes)
		}
		if s.Points < 0 {
			return fmt.Errorf("field %s.points: negative", at)
		}
	}
	seen := map[string]bool{}
	for i, c := range m.Collectives {
		at := fmt.Sprintf("collectives[%d]", i)
		if c.Name == "" {
			return fmt.Errorf("field %s.name: empty", at)
		}
		if seen[c.Name] {
			return fmt.Errorf("field %s.name: %s appears twice", at, c.Name)
		}
		seen[c.Name] = true
		if err := checkBreakpoints(at, c.Breakpoints, len(c.Segments)); err != nil {
			return err
		}
		for k, s := range c.Segments {
			at := fmt.Sprintf("%s.segments[%d]", at, k)
			if len(s.Terms) == 0 {
				return fmt.Errorf("field %s.terms: no term", at)
			}
			names := map[string]bool{}
			for j, t := range s.Terms {
				if _, ok := terms[t.Name]; !ok {
					return fmt.Errorf("field %s.terms[%d].term: unknown basis function %q", at, j, t.Name)
				}
				if names[t.Name] {
					return fmt.Errorf("field %s.terms[%d].term: %q appears twice", at, j, t.Name)
				}
				names[t.Name] = true
				if !finite(t.Coef) {
					return fmt.Errorf("field %s.terms[%d].coef: not a finite number", at, j)
				}
			}
			if !finite(s.R2) {
				return fmt.Errorf("field %s.r2: not a finite number", at)
			}
			if !finite(s.RelRMS) {
				return fmt.Errorf("field %s.rel_rms: not a finite number", at)
			}
			if s.FirstBytes < 0 || s.LastBytes < s.FirstBytes {
				return fmt.Errorf("field %s: first_bytes %d and last_bytes %d: want 0 <= first <= last", at, s.FirstBytes, s.LastBytes)
			}
		}
		for j, p := range c.Procs {
			if p < 1 {
				return fmt.Errorf("field %s.procs[%d]: %d, want at least 1", at, j, p)
			}
		}
	}
	for i, pt := range m.Points {
		if err := pt.validate(); err != nil {
			return fmt.Errorf("field points[%d]: %w", i, err)
		}
	}
	for i, pt := range m.Outliers {
		if err := pt.validate(); err != nil {
			return fmt.Errorf("field outliers[%d]: %w", i, err)
		}
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func checkBreakpoints(at string, bp []int64, segments int) error {
	if segments == 0 {
		return fmt.Errorf("field %s.segments: no segment", at)
	}
	if len(bp) != segments-1 {
		return fmt.Errorf("field %s.breakpoints: %d breakpoints for %d segments, want %d", at, len(bp), segments, segments-1)
	}
	for i, b := range bp {
		if b < 0 || i > 0 && b <= bp[i-1] {
			return fmt.Errorf("field %s.breakpoints[%d]: %d: breakpoints must be non-negative and increasing", at, i, b)
		}
	}
	return nil
}
