package latency

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testModel is a fitted model with every kind of part: a piecewise
// point-to-point line, collectives over several process counts, a
// one-process-count collective with a note, and an outlier.
func testModel(t *testing.T) *Model {
	t.Helper()
	pts := p2pPoints(eagerRendezvous, 0.01, 3)
	pts[2].Nanos *= 50
	pts = append(pts, collPoints("MPI_Allreduce", []int{2, 3, 4}, sizes(4, 4096),
		func(b, p float64) float64 { return 300 + 500*math.Log2(p) + 0.2*b*math.Log2(p) }, 0.01, 1)...)
	pts = append(pts, collPoints("MPI_Alltoall", []int{2}, sizes(4, 4096),
		func(b, p float64) float64 { return 900 + 0.3*b }, 0.01, 2)...)
	pts = append(pts, Point{"MPI_Barrier", 0, 2, 700}, Point{"MPI_Barrier", 0, 4, 1500})
	m, err := Fit(pts)
	if err != nil {
		t.Fatal(err)
	}
	m.Machine, m.MPI, m.Procs, m.CPUs = "node01", "MPICH Version:\t4.0.2\nMPICH Device:\tch4:ucx", 4, 8
	m.Created = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	return m
}

func write(t *testing.T, m *Model) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := m.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestWriteReadRoundTrip(t *testing.T) {
	m := testModel(t)
	if len(m.Outliers) != 1 {
		t.Fatalf("test model has outliers %v, want 1", m.Outliers)
	}
	data := write(t, m)
	got, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if again := write(t, got); !bytes.Equal(again, data) {
		t.Errorf("model changed in a write/read/write round trip:\n%s\n---\n%s", data, again)
	}
	if got.Machine != m.Machine || got.MPI != m.MPI || got.Procs != 4 || got.CPUs != 8 || !got.Created.Equal(m.Created) || got.Source != SourceCalibrated {
		t.Errorf("metadata %q %q %d %d %v %q", got.Machine, got.MPI, got.Procs, got.CPUs, got.Created, got.Source)
	}
	if len(got.Points) != len(m.Points) || len(got.Collectives) != 3 || len(got.Outliers) != 1 {
		t.Errorf("read %d points, %d collectives, %d outliers", len(got.Points), len(got.Collectives), len(got.Outliers))
	}
	for _, b := range []int64{0, 4, 8192, 8193, 1 << 22} {
		if got.P2P(b) != m.P2P(b) {
			t.Errorf("P2P(%d): %v after the round trip, %v before", b, got.P2P(b), m.P2P(b))
		}
	}
	for _, c := range m.Collectives {
		a, _ := m.Collective(c.Name, 1000, 3)
		b, ok := got.Collective(c.Name, 1000, 3)
		if !ok || a != b {
			t.Errorf("%s: %v after the round trip, %v before", c.Name, b, a)
		}
	}
}

func TestWriteDeterministic(t *testing.T) {
	m := testModel(t)
	want := write(t, m)
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(m.Points), func(i, j int) { m.Points[i], m.Points[j] = m.Points[j], m.Points[i] })
	r.Shuffle(len(m.Collectives), func(i, j int) { m.Collectives[i], m.Collectives[j] = m.Collectives[j], m.Collectives[i] })
	if got := write(t, m); !bytes.Equal(got, want) {
		t.Error("the same model in another order writes different bytes")
	}
	// One point per line, keys in a fixed order.
	if !bytes.Contains(want, []byte(`{"kind": "p2p", "bytes": 4, "procs": 2, "ns": `)) {
		t.Errorf("points are not written one per line:\n%s", want)
	}
}

func TestWriteInvalid(t *testing.T) {
	m := testModel(t)
	m.PointToPoint.Segments[0].A = math.NaN()
	var b bytes.Buffer
	err := m.Write(&b)
	if err == nil || !strings.Contains(err.Error(), "p2p.segments[0].a_ns: not a finite number") {
		t.Errorf("Write of a NaN coefficient: %v", err)
	}
}

func TestReadErrors(t *testing.T) {
	good := string(write(t, testModel(t)))
	replace := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("test model lacks %q", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	for _, tc := range []struct {
		name, data, want string
	}{
		{"empty", "", "empty file"},
		{"truncated", good[:len(good)/2], "truncated: the JSON ends early"},
		{"truncated after the version", `{"version": 1, "p2p": {`, "truncated"},
		{"syntax", replace(`"procs": 4,`, `"procs": 4;`), "malformed JSON at line 7, column"},
		{"wrong type", replace(`"procs": 4,`, `"procs": "four",`), "field procs: want int, have JSON string"},
		{"unknown field", replace(`"procs": 4,`, `"procs": 4, "colour": "blue",`), "unknown field colour"},
		{"newer version", replace(`"version": 1,`, `"version": 2,`), "unsupported model version 2 (this build reads 1)"},
		{"no version", replace(`"version": 1,`, ``), "field version: missing"},
		{"not an object", `[1, 2, 3]`, "not a JSON object"},
		{"trailing data", good + "{}", "data after the model's closing brace"},
		{"no segment", noSegment(t), "field p2p.segments: no segment"},
		{"breakpoints", replace(`"breakpoints": [8192]`, `"breakpoints": []`), "field p2p.breakpoints: 0 breakpoints for 2 segments, want 1"},
		{"bad term", replace(`"term": "log2(p)"`, `"term": "sqrt(p)"`), `collectives[0].segments[0].terms[1].term: unknown basis function "sqrt(p)"`},
		{"negative bytes", replace(`{"kind": "p2p", "bytes": 4,`, `{"kind": "p2p", "bytes": -4,`), "]: negative bytes"},
		{"huge number", replace(`"procs": 4,`, `"procs": 1e999,`), "field procs"},
	} {
		_, err := Read(strings.NewReader(tc.data))
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "latency model: ") || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("%s: error %q, want one line starting %q containing %q", tc.name, msg, "latency model: ", tc.want)
		}
	}
}

func noSegment(t *testing.T) string {
	m := testModel(t)
	m.PointToPoint = P2PModel{}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.json")
	data := write(t, testModel(t))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Machine != "node01" {
		t.Errorf("machine %q", m.Machine)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, data[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	if err == nil || !strings.Contains(err.Error(), "latency model "+bad+": truncated") {
		t.Errorf("Load of a truncated file: %v", err)
	}
	_, err = Load(filepath.Join(dir, "missing.json"))
	if err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func TestDefault(t *testing.T) {
	m := Default()
	if !m.IsDefault() || m.Source != DefaultSource {
		t.Errorf("source %q", m.Source)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if m.MPI == "" || m.Machine == "" || m.Procs < 2 || len(m.Points) == 0 {
		t.Errorf("default model lacks its provenance: machine %q, MPI %q, %d procs, %d points", m.Machine, m.MPI, m.Procs, len(m.Points))
	}
	for _, b := range []int64{0, 1, 4, 4096, 65536, 4 << 20, 1 << 30} {
		if v := m.P2P(b); !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("P2P(%d) = %v, want finite and positive", b, v)
		}
	}
	for _, name := range []string{"MPI_Barrier", "MPI_Bcast", "MPI_Scatter", "MPI_Gather", "MPI_Reduce", "MPI_Allreduce", "MPI_Allgather", "MPI_Alltoall"} {
		for _, p := range []int{2, 3, 4, 64, 4096} {
			for _, b := range []int64{0, 8, 4096, 1 << 20} {
				if name == "MPI_Barrier" && b > 0 {
					continue
				}
				v, ok := m.Collective(name, b, p)
				if !ok || !(v > 0) || math.IsInf(v, 0) {
					t.Errorf("Collective(%s, %d B, %d procs) = %v, %v; want finite and positive", name, b, p, v, ok)
				}
			}
		}
	}
	// Each call is a fresh copy.
	m.PointToPoint.Segments[0].A = -1
	if Default().PointToPoint.Segments[0].A == -1 {
		t.Error("Default returns shared state")
	}
	if s := m.Summary(); !strings.Contains(s, DefaultSource) || !strings.Contains(s, "MPI_Alltoall") {
		t.Errorf("summary:\n%s", s)
	}
}
