package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// critpathJSON is what critpath --json prints, as far as the tests read it.
type critpathJSON struct {
	Trace   string                 `json:"trace"`
	Output  string                 `json:"critpath_out"`
	Unit    string                 `json:"unit"`
	Summary struct{ Vertices int } `json:"summary"`
	Path    *struct {
		Vertices []struct {
			Name string `json:"name"`
			Rank int    `json:"rank"`
			Kind string `json:"kind"`
		} `json:"vertices"`
		Edges []struct {
			Kind     string  `json:"kind"`
			Rank     int     `json:"rank"`
			Weight   float64 `json:"weight_ns"`
			Measured int64   `json:"measured_ns"`
			Bytes    int64   `json:"bytes"`
		} `json:"edges"`
	} `json:"path"`
}

// decodeOnly decodes s, which must hold one JSON value and nothing else.
func decodeOnly(t *testing.T, s string, v any) {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	if err := d.Decode(v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%.300s", err, s)
	}
	if d.More() || strings.TrimSpace(s[d.InputOffset():]) != "" {
		t.Fatalf("stdout holds more than one JSON value:\n%.300s", s[d.InputOffset():])
	}
}

// critpath --json gives the path itself, the same as critPath.out, and
// writes no critPath.out unless -o asks for one; --json -o - prints the
// JSON alone.
func TestCritpathJSON(t *testing.T) {
	dir := writeTrace(t)
	t.Chdir(t.TempDir())

	code, out, errs := runCLI(t, "critpath", dir, "-o", "cp.out")
	if code != 0 || errs != "" {
		t.Fatalf("critpath: exit %d, %s", code, errs)
	}
	want, err := os.ReadFile("cp.out")
	if err != nil {
		t.Fatal(err)
	}

	code, out, errs = runCLI(t, "critpath", dir, "--json")
	if code != 0 || errs != "" {
		t.Fatalf("critpath --json: exit %d, %s", code, errs)
	}
	var j critpathJSON
	decodeOnly(t, out, &j)
	if _, err := os.Stat("critPath.out"); err == nil {
		t.Errorf("critpath --json wrote critPath.out, unasked")
	}
	if j.Output != "" {
		t.Errorf("critpath --json: critpath_out %q, but no file was written", j.Output)
	}
	if j.Path == nil || len(j.Path.Vertices) != j.Summary.Vertices || len(j.Path.Edges) != len(j.Path.Vertices)-1 {
		t.Fatalf("critpath --json: no path, or not %d vertices and the edges between them:\n%.600s", j.Summary.Vertices, out)
	}
	// The JSON path, written as critPath.out would be.
	var b strings.Builder
	for i, v := range j.Path.Vertices {
		fmt.Fprintf(&b, "%s %d\n", v.Name, v.Rank)
		if i < len(j.Path.Edges) {
			e := j.Path.Edges[i]
			if e.Kind == "message" {
				fmt.Fprintf(&b, "%d\n", e.Bytes)
			} else {
				fmt.Fprintf(&b, "%d\n", (e.Measured+500)/1000)
			}
		}
	}
	if b.String() != string(want) {
		t.Errorf("the JSON path differs from critPath.out:\n%s\nwant\n%s", b.String(), want)
	}
	if k := j.Path.Vertices[0].Kind; k != "init" {
		t.Errorf("first vertex kind %q", k)
	}

	code, out2, errs := runCLI(t, "critpath", dir, "--json", "-o", "-")
	if code != 0 || errs != "" || out2 != out {
		t.Errorf("critpath --json -o -: exit %d, %s; stdout differs from --json's:\n%.300s", code, errs, out2)
	}
	if _, err := os.Stat("-"); err == nil {
		t.Errorf("critpath --json -o - wrote a file named -")
	}

	code, out, errs = runCLI(t, "critpath", dir, "--json", "-o", "asked.out")
	decodeOnly(t, out, &j)
	got, err := os.ReadFile("asked.out")
	if code != 0 || errs != "" || err != nil || string(got) != string(want) || j.Output != "asked.out" {
		t.Errorf("critpath --json -o asked.out: exit %d, %s, %v, critpath_out %q", code, errs, err, j.Output)
	}

	// Without --json, critPath.out is the default.
	if code, _, _ := runCLI(t, "critpath", dir); code != 0 {
		t.Fatalf("critpath: exit %d", code)
	}
	if got, err := os.ReadFile(filepath.Join(".", "critPath.out")); err != nil || string(got) != string(want) {
		t.Errorf("critpath without -o: %v", err)
	}
}

// critpath --weights: measured states itself in the text and the JSON
// (with the wait states), model stays the default, anything else is a
// usage error of one line.
func TestCritpathWeights(t *testing.T) {
	dir := writeTrace(t)
	out := filepath.Join(t.TempDir(), "critPath.out")
	code, txt, errs := runCLI(t, "critpath", dir, "-o", out, "--weights", "measured")
	if code != ExitOK || errs != "" {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	for _, want := range []string{"Weights: measured", "the run on rank 0's clock", "wait states (Scalasca's"} {
		if !strings.Contains(txt, want) {
			t.Errorf("the summary lacks %q:\n%s", want, txt)
		}
	}
	if strings.Contains(txt, "Latency model:") {
		t.Errorf("the measured summary names the latency model as if it weighed the path:\n%s", txt)
	}
	var j struct {
		Summary struct {
			Weights string          `json:"weights"`
			Run     json.RawMessage `json:"run"`
		} `json:"summary"`
	}
	for _, c := range []struct {
		args    []string
		weights string
		run     bool
	}{
		{nil, "model", false},
		{[]string{"--weights", "model"}, "model", false},
		{[]string{"--weights", "measured"}, "measured", true},
	} {
		code, s, errs := runCLI(t, append([]string{"critpath", dir, "--json"}, c.args...)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s", c.args, code, errs)
		}
		decodeOnly(t, s, &j)
		if j.Summary.Weights != c.weights || (j.Summary.Run != nil) != c.run {
			t.Errorf("%v: weights %q, run %s", c.args, j.Summary.Weights, j.Summary.Run)
		}
		j.Summary.Run = nil
	}
	code, s, errs := runCLI(t, "critpath", dir, "--weights", "wall")
	if first, _, _ := strings.Cut(errs, "\n"); code != ExitUsage || s != "" || first != `mpitrace: --weights "wall": want model or measured` {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, s, errs)
	}
}
