package baseline

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func sample() *Baseline {
	b := New("traces", 4)
	b.Shape.Calls["MPI_Send"] = 40
	b.Shape.Calls["MPI_Allreduce"] = 8
	b.SetTime(CritpathLength, 1_000_000.4)
	b.SetTime(CritpathComputation, 900_000)
	b.SetTime(MPIFunction("MPI_Send"), 50_000)
	b.SetTime(Region("region iteration"), 2_000_000)
	return b
}

func clone(t *testing.T, b *Baseline) *Baseline {
	t.Helper()
	var buf bytes.Buffer
	if err := b.Write(&buf); err != nil {
		t.Fatal(err)
	}
	c, err := Read(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRoundTripAndBytes(t *testing.T) {
	b := sample()
	var one, two bytes.Buffer
	if err := b.Write(&one); err != nil {
		t.Fatal(err)
	}
	// Same figures, set in another order: the same bytes.
	c := New("traces", 4)
	c.SetTime(Region("region iteration"), 2_000_000)
	c.SetTime(MPIFunction("MPI_Send"), 50_000)
	c.SetTime(CritpathComputation, 900_000)
	c.SetTime(CritpathLength, 1_000_000)
	c.Shape.Calls["MPI_Allreduce"] = 8
	c.Shape.Calls["MPI_Send"] = 40
	if err := c.Write(&two); err != nil {
		t.Fatal(err)
	}
	if one.String() != two.String() {
		t.Fatalf("bytes differ:\n%s\n%s", one.String(), two.String())
	}
	want := `{
  "mpitrace_baseline": 1,
  "trace": "traces",
  "shape": {
    "ranks": 4,
    "calls": {
      "MPI_Allreduce": 8,
      "MPI_Send": 40
    }
  },
  "times_ns": {
    "critical path computation": 900000,
    "critical path length": 1000000,
    "region region iteration": 2000000,
    "time in MPI_Send": 50000
  }
}
`
	if one.String() != want {
		t.Errorf("file:\n%s\nwant:\n%s", one.String(), want)
	}
	back := clone(t, b)
	if r := Compare(b, back, Options{}); len(r.Changes)+len(r.Shape) != 0 || r.Compared != 4 {
		t.Errorf("round trip compares as %+v", r)
	}
}

func TestReadErrors(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"empty", ``, "not valid JSON"},
		{"garbage", `{"mpitrace_baseline": 1,`, "not valid JSON"},
		{"other json", `{"a": 1}`, "not an mpitrace baseline"},
		{"version", `{"mpitrace_baseline": 2, "shape": {"ranks": 1}, "times_ns": {"x": 1}}`, "unsupported baseline version 2 (this build reads 1)"},
		{"version type", `{"mpitrace_baseline": "1"}`, "not valid JSON"},
		{"unknown field", `{"mpitrace_baseline": 1, "shape": {"ranks": 1}, "times_ns": {"x": 1}, "extra": 0}`, "unknown field"},
		{"no ranks", `{"mpitrace_baseline": 1, "shape": {"ranks": 0}, "times_ns": {"x": 1}}`, "shape.ranks is 0"},
		{"no times", `{"mpitrace_baseline": 1, "shape": {"ranks": 2}}`, "no times_ns"},
		{"negative time", `{"mpitrace_baseline": 1, "shape": {"ranks": 2}, "times_ns": {"x": -1}}`, `"x" is negative`},
		{"negative calls", `{"mpitrace_baseline": 1, "shape": {"ranks": 2, "calls": {"MPI_Send": -3}}, "times_ns": {"x": 1}}`, `"MPI_Send" is negative`},
		{"float time", `{"mpitrace_baseline": 1, "shape": {"ranks": 2}, "times_ns": {"x": 1.5}}`, "invalid baseline"},
	} {
		_, err := Read([]byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		}
	}
}

func TestCompare(t *testing.T) {
	old := sample()
	now := clone(t, old)
	now.Times[CritpathLength] = 1_049_000             // +4.9%: within 5%
	now.Times[CritpathComputation] = 1_000_000        // +11%: slower
	now.Times[MPIFunction("MPI_Send")] = 20_000       // -60% but 30 us: under the floor
	now.Times[Region("region iteration")] = 1_000_000 // -50%: faster
	now.Times[CritpathFunction("MPI_Recv")] = 500_000 // new
	r := Compare(old, now, Options{Tolerance: 0.05, Floor: 50_000})
	if r.Compared != 5 || r.Regressions != 2 || len(r.Shape) != 0 {
		t.Fatalf("compared %d, regressions %d, shape %v", r.Compared, r.Regressions, r.Shape)
	}
	got := []string{}
	for _, c := range r.Changes {
		got = append(got, c.Name)
	}
	want := []string{CritpathComputation, CritpathFunction("MPI_Recv"), Region("region iteration")}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("changes %q, want %q", got, want)
	}
	if c := r.Changes[0]; math.Abs(c.Ratio-0.1111) > 0.001 || !c.Regression {
		t.Errorf("computation: %+v", c)
	}
	if c := r.Changes[1]; !math.IsInf(c.Ratio, 1) || !c.Regression {
		t.Errorf("new figure: %+v", c)
	}
	if c := r.Changes[2]; c.Ratio != -0.5 || c.Regression {
		t.Errorf("faster region: %+v", c)
	}

	// A figure gone counts as faster (-100%), not as a regression.
	gone := clone(t, old)
	delete(gone.Times, Region("region iteration"))
	r = Compare(old, gone, Options{Tolerance: 0.05})
	if r.Regressions != 0 || len(r.Changes) != 1 || r.Changes[0].Ratio != -1 {
		t.Errorf("region gone: %+v", r)
	}
	// Tolerance is inclusive: exactly 5% does not count.
	edge := clone(t, old)
	edge.Times[CritpathLength] = 1_050_000
	if r := Compare(old, edge, Options{Tolerance: 0.05}); len(r.Changes) != 0 {
		t.Errorf("exactly the tolerance: %+v", r.Changes)
	}
	// The floor is inclusive too.
	if r := Compare(old, edge, Options{Tolerance: 0, Floor: 50_000}); len(r.Changes) != 0 {
		t.Errorf("exactly the floor: %+v", r.Changes)
	}
	if r := Compare(old, edge, Options{Tolerance: 0, Floor: 49_999}); r.Regressions != 1 {
		t.Errorf("past the floor: %+v", r.Changes)
	}
}

func TestCompareShape(t *testing.T) {
	old := sample()
	now := clone(t, old)
	now.Shape.Ranks = 8
	now.Shape.Calls["MPI_Send"] = 80
	delete(now.Shape.Calls, "MPI_Allreduce")
	now.Shape.Calls["MPI_Bcast"] = 1
	now.Times[CritpathLength] *= 3
	r := Compare(old, now, Options{Tolerance: 0.05})
	want := []ShapeChange{{"ranks", 4, 8}, {"MPI_Allreduce", 8, 0}, {"MPI_Bcast", 0, 1}, {"MPI_Send", 40, 80}}
	if len(r.Shape) != len(want) {
		t.Fatalf("shape %+v, want %+v", r.Shape, want)
	}
	for i := range want {
		if r.Shape[i] != want[i] {
			t.Errorf("shape[%d] = %+v, want %+v", i, r.Shape[i], want[i])
		}
	}
	if r.Compared != 0 || len(r.Changes) != 0 || r.Regressions != 0 {
		t.Errorf("times compared despite the shape: %+v", r)
	}
}
