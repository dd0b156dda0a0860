package cli

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/latency"
)

// slowModel writes the default latency model with every message made
// extra ns slower and returns its file.
func slowModel(t *testing.T, extra float64) string {
	t.Helper()
	m := latency.Default()
	for i := range m.PointToPoint.Segments {
		m.PointToPoint.Segments[i].A += extra
	}
	file := filepath.Join(t.TempDir(), "slow.json")
	if err := writeOutput(file, m.Write); err != nil {
		t.Fatal(err)
	}
	return file
}

// pathCommands are the commands that compute a critical path, with the
// arguments that make each compute it on dir.
func pathCommands(t *testing.T, dir string) map[string][]string {
	out := filepath.Join(t.TempDir(), "out")
	return map[string][]string{
		"critpath": {"critpath", dir, "-o", out},
		"check":    {"check", dir, "--baseline", out, "--write-baseline"},
		"dot":      {"dot", dir, "--critical-only", "-o", out},
		"export":   {"export", dir, "-o", out},
		"regions":  {"regions", dir, "-o", out},
	}
}

// TestEveryPathCommandTakesModel: every command that computes a critical
// path takes --model, reads it, and names the file when it cannot.
func TestEveryPathCommandTakesModel(t *testing.T) {
	dir := filepath.Join(storedTraces, "v5", "regions")
	missing := filepath.Join(t.TempDir(), "no-such-model.json")
	slow := slowModel(t, 1e6)
	cmds := pathCommands(t, dir)
	cmds["record"] = []string{"record", "--critpath", "--", "true"}
	for name, args := range cmds {
		root := newRootCmd(&Streams{In: strings.NewReader("")})
		c, _, err := root.Find([]string{name})
		if err != nil || c.Flags().Lookup("model") == nil {
			t.Errorf("%s has no --model flag (%v)", name, err)
			continue
		}
		if name == "record" {
			continue // it runs a program: its --model is tested end to end
		}
		code, _, errs := runCLI(t, append(args, "--model", missing)...)
		if code == 0 || !strings.Contains(errs, "no-such-model.json") {
			t.Errorf("%s --model %s: exit %d, stderr %q; want a failure naming the file", name, missing, code, errs)
		}
		if code, _, errs := runCLI(t, append(args, "--model", slow)...); code != 0 {
			t.Errorf("%s --model %s: exit %d: %s", name, slow, code, errs)
		}
	}
}

// TestRegionsModel: regions marks the nodes by the path critpath finds
// with the same --model, and another model moves the path.
func TestRegionsModel(t *testing.T) {
	dir := kokkosTrace(t)
	type marks struct {
		nodes  map[string]int64 // the path's ns in each node on it
		length int64            // the path's length
	}
	shares := func(args ...string) (fromRegions, fromCritpath marks) {
		t.Helper()
		code, out, errs := runCLI(t, append([]string{"regions", dir, "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("regions %q: %d %s", args, code, errs)
		}
		var rj struct {
			Nodes        []regionNodeJSON `json:"nodes"`
			CriticalPath struct {
				Length float64 `json:"length_ns"`
			} `json:"critical_path"`
		}
		if err := json.Unmarshal([]byte(out), &rj); err != nil {
			t.Fatal(err)
		}
		fromRegions = marks{map[string]int64{}, int64(math.Round(rj.CriticalPath.Length))}
		flattenRegionNodes(rj.Nodes, "", fromRegions.nodes)
		code, out, errs = runCLI(t, append([]string{"critpath", dir, "--json", "-o", filepath.Join(t.TempDir(), "cp.out")}, args...)...)
		if code != 0 {
			t.Fatalf("critpath %q: %d %s", args, code, errs)
		}
		var cj struct {
			Summary struct {
				Length  float64 `json:"length_ns"`
				Regions struct {
					Nodes []struct {
						Path []string `json:"path"`
						Ns   int64    `json:"ns"`
					} `json:"nodes"`
				} `json:"regions"`
			} `json:"summary"`
		}
		if err := json.Unmarshal([]byte(out), &cj); err != nil {
			t.Fatal(err)
		}
		fromCritpath = marks{map[string]int64{}, int64(math.Round(cj.Summary.Length))}
		for _, n := range cj.Summary.Regions.Nodes {
			fromCritpath.nodes[strings.Join(n.Path, " > ")] = n.Ns
		}
		return fromRegions, fromCritpath
	}
	defR, defC := shares()
	slowR, slowC := shares("--model", slowModel(t, 1e6))
	for _, c := range []struct {
		model    string
		reg, cpt marks
	}{{"default", defR, defC}, {"slow", slowR, slowC}} {
		if c.reg.length != c.cpt.length || c.reg.length == 0 {
			t.Errorf("%s model: regions' path is %d ns long, critpath's %d", c.model, c.reg.length, c.cpt.length)
		}
		if len(c.reg.nodes) == 0 || len(c.reg.nodes) != len(c.cpt.nodes) {
			t.Errorf("%s model: regions marks %v, critpath attributes %v", c.model, c.reg.nodes, c.cpt.nodes)
		}
		for k, v := range c.cpt.nodes {
			if c.reg.nodes[k] != v {
				t.Errorf("%s model: node %q: regions says %d ns of the path, critpath %d", c.model, k, c.reg.nodes[k], v)
			}
		}
	}
	// 1 ms more per message on the path.
	if slowR.length < defR.length+1_000_000 {
		t.Errorf("regions --model slow: a path of %d ns, the default model's %d: the model was not used", slowR.length, defR.length)
	}
}

type regionNodeJSON struct {
	Name     string           `json:"name"`
	Kind     string           `json:"kind"`
	Ns       int64            `json:"critical_path_ns"`
	On       bool             `json:"on_critical_path"`
	Children []regionNodeJSON `json:"children"`
}

// flattenRegionNodes adds each node on the path, by its path of names, to
// m.
func flattenRegionNodes(nodes []regionNodeJSON, parent string, m map[string]int64) {
	for _, n := range nodes {
		key := n.Name
		if parent != "" {
			key = parent + " > " + n.Name
		}
		if n.On {
			m[key] = n.Ns
		}
		flattenRegionNodes(n.Children, key, m)
	}
}
