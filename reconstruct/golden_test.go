package reconstruct_test

import (
	"bytes"
	"flag"
	"fmt"
	"github.com/mpitrace/mpitrace/internal/textdiff"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/internal/testmodel"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
	"github.com/mpitrace/mpitrace/tracefmt"
)

var update = flag.Bool("update", false, "rewrite the -- graph -- and -- critpath -- sections of testdata/*.test")

// testModel is the golden tests' latency model, with round numbers.
type testModel = testmodel.Round

// A golden case is a txtar-like file: a comment, then sections "-- name --".
//
//	-- expect --     SUCCESS (no diagnostics at all), FAILURE "regexp" or `regexp` (Build
//	                 or Compute fails with a matching error), or one line
//	                 "diag SEVERITY CODE [COUNT]" per diagnostic code
//	                 expected (exactly these codes, counts default 1;
//	                 severity "data-loss" for data loss)
//	-- rankN --      rank N's events in the tracefmt text form, without the
//	                 "rank N" line; an "end" record is added unless the
//	                 section has one or a line "# noend"
//	-- graph --      taskgraph.Graph.WriteText
//	-- critpath --   critPath.out with unit ns and testModel
//
// go test ./reconstruct -run Golden -update rewrites graph and critpath.
type goldenCase struct {
	comment  string
	sections []section
}

type section struct {
	name, body string
}

func parseGolden(data string) goldenCase {
	var c goldenCase
	re := regexp.MustCompile(`(?m)^-- ([a-z0-9_]+) --$`)
	locs := re.FindAllStringSubmatchIndex(data, -1)
	if len(locs) == 0 {
		c.comment = data
		return c
	}
	c.comment = data[:locs[0][0]]
	for i, l := range locs {
		end := len(data)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		body := data[l[1]:end]
		body = strings.TrimPrefix(body, "\n")
		c.sections = append(c.sections, section{name: data[l[2]:l[3]], body: body})
	}
	return c
}

func (c *goldenCase) get(name string) (string, bool) {
	for _, s := range c.sections {
		if s.name == name {
			return s.body, true
		}
	}
	return "", false
}

func (c *goldenCase) set(name, body string) {
	for i := range c.sections {
		if c.sections[i].name == name {
			c.sections[i].body = body
			return
		}
	}
	c.sections = append(c.sections, section{name: name, body: body})
}

func (c *goldenCase) String() string {
	var b strings.Builder
	b.WriteString(c.comment)
	for _, s := range c.sections {
		fmt.Fprintf(&b, "-- %s --\n%s", s.name, s.body)
		if s.body != "" && !strings.HasSuffix(s.body, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// ranksText assembles the rank sections into one text-form document.
func (c *goldenCase) ranksText() (string, error) {
	var b strings.Builder
	for _, s := range c.sections {
		if !strings.HasPrefix(s.name, "rank") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(s.name, "rank"))
		if err != nil {
			return "", fmt.Errorf("section %q: not rankN", s.name)
		}
		fmt.Fprintf(&b, "rank %d\n%s\n", n, s.body)
		hasEnd := regexp.MustCompile(`(?m)^\s*end\b`).MatchString(s.body)
		if !hasEnd && !strings.Contains(s.body, "# noend") {
			b.WriteString("end reason=finalize\n")
		}
	}
	return b.String(), nil
}

type expectation struct {
	success bool
	failure *regexp.Regexp
	diags   map[string]string // code → "severity count"
}

func parseExpect(s string) (expectation, error) {
	var e expectation
	e.diags = make(map[string]string)
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case line == "SUCCESS":
			e.success = true
		case strings.HasPrefix(line, "FAILURE "):
			q, err := strconv.Unquote(strings.TrimSpace(strings.TrimPrefix(line, "FAILURE ")))
			if err != nil {
				return e, fmt.Errorf("FAILURE wants a quoted regexp: %v", err)
			}
			e.failure, err = regexp.Compile(q)
			if err != nil {
				return e, err
			}
		case strings.HasPrefix(line, "diag "):
			f := strings.Fields(line)
			if len(f) < 3 || len(f) > 4 {
				return e, fmt.Errorf("want diag SEVERITY CODE [COUNT]: %q", line)
			}
			n := "1"
			if len(f) == 4 {
				n = f[3]
			}
			e.diags[f[2]] = f[1] + " " + n
		default:
			return e, fmt.Errorf("unknown expectation %q", line)
		}
	}
	return e, nil
}

func sevName(s tracefmt.Severity) string { return strings.ReplaceAll(s.String(), " ", "-") }

// gotDiags summarises d by code: "severity count" (the most severe).
func gotDiags(d *tracefmt.Diagnostics) map[string]string {
	sev := make(map[string]tracefmt.Severity)
	for _, x := range d.All() {
		if s, ok := sev[x.Code]; !ok || x.Severity > s {
			sev[x.Code] = x.Severity
		}
	}
	out := make(map[string]string)
	for _, code := range d.Codes() {
		out[code] = fmt.Sprintf("%s %d", sevName(sev[code]), d.CountCode(code))
	}
	return out
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.test")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.test")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".test"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			c := parseGolden(string(data))
			expText, ok := c.get("expect")
			if !ok {
				t.Fatal("no -- expect -- section")
			}
			exp, err := parseExpect(expText)
			if err != nil {
				t.Fatal(err)
			}
			text, err := c.ranksText()
			if err != nil {
				t.Fatal(err)
			}
			ranks, err := tracefmt.ParseText(strings.NewReader(text))
			if err != nil {
				t.Fatalf("parsing the rank sections: %v", err)
			}
			g, diags, err := reconstruct.BuildFromRanks(ranks, reconstruct.Options{})
			var path *critpath.Path
			if err == nil {
				path, err = critpath.Compute(g, testModel{})
			}
			if exp.failure != nil {
				if err == nil || !exp.failure.MatchString(err.Error()) {
					t.Fatalf("want an error matching %q, got %v", exp.failure, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := gotDiags(diags)
			if exp.success && len(got) > 0 || !exp.success && !mapsEqual(got, exp.diags) {
				t.Errorf("diagnostics:\n got %s\nwant %s", fmtDiags(got), fmtDiags(exp.diags))
				for _, d := range diags.All() {
					t.Log(d)
				}
			}
			// Building twice, with one worker, gives the same graph.
			g1, _, err := reconstruct.BuildFromRanks(ranks, reconstruct.Options{Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			var gb, gb1, cb bytes.Buffer
			if err := g.WriteText(&gb); err != nil {
				t.Fatal(err)
			}
			g1.WriteText(&gb1)
			if gb.String() != gb1.String() {
				t.Errorf("the graph depends on the number of workers:\n%s", textdiff.Lines(gb1.String(), gb.String()))
			}
			checkGraph(t, g)
			if err := critpath.WriteCritPathOut(&cb, path, critpath.Nanosecond); err != nil {
				t.Fatal(err)
			}
			if *update {
				c.set("graph", gb.String())
				c.set("critpath", cb.String())
				if err := os.WriteFile(file, []byte(c.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, want := range []struct{ name, got string }{{"graph", gb.String()}, {"critpath", cb.String()}} {
				body, ok := c.get(want.name)
				if !ok {
					t.Errorf("no -- %s -- section (run with -update)", want.name)
					continue
				}
				if body != want.got {
					t.Errorf("%s differs (-want +got):\n%s", want.name, textdiff.Lines(body, want.got))
				}
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func fmtDiags(m map[string]string) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// checkGraph checks the graph's invariants: In and Out agree, Walk visits
// every node once after its predecessors.
func checkGraph(t *testing.T, g *taskgraph.Graph) {
	t.Helper()
	type key struct {
		from, to taskgraph.NodeID
		kind     taskgraph.EdgeKind
		rank     int
	}
	outs := make(map[key]taskgraph.Edge)
	for e := range g.Edges {
		k := key{e.From, e.To, e.Kind, e.Rank}
		if _, dup := outs[k]; dup {
			t.Errorf("edge %+v listed twice", e)
		}
		outs[k] = e
	}
	ins := 0
	var buf []taskgraph.Edge
	for v := taskgraph.NodeID(0); int(v) < g.NumNodes(); v++ {
		buf = g.In(v, buf[:0])
		for _, e := range buf {
			ins++
			if e.To != v {
				t.Errorf("In(%d) has an edge to %d", v, e.To)
			}
			if o, ok := outs[key{e.From, e.To, e.Kind, e.Rank}]; !ok || o != e {
				t.Errorf("In(%d) edge %+v is not among the out edges (%+v)", v, e, o)
			}
		}
	}
	if ins != len(outs) {
		t.Errorf("%d in edges, %d out edges", ins, len(outs))
	}
	seen := make([]bool, g.NumNodes())
	err := g.Walk(func(v taskgraph.NodeID, in []taskgraph.Edge) {
		if seen[v] {
			t.Errorf("Walk visits %d twice", v)
		}
		seen[v] = true
		want := g.In(v, nil)
		if !slices.Equal(in, want) {
			t.Errorf("Walk's in edges of %d: %+v, In: %+v", v, in, want)
		}
		for _, e := range in {
			if !seen[e.From] {
				t.Errorf("Walk visits %d before its predecessor %d", v, e.From)
			}
		}
	})
	if err != nil {
		t.Errorf("Walk: %v", err)
		return
	}
	for v, ok := range seen {
		if !ok {
			t.Errorf("Walk never visits %d", v)
		}
	}
}
