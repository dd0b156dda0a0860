package latency

import (
	"bytes"
	"slices"
	"testing"
)

// TestFingerprint: a model's fingerprint depends on what weighs only (the
// lines, terms and breakpoints), not on the file's layout, the order of its
// collectives, its points or the fits' quality; any change of what weighs
// changes it.
func TestFingerprint(t *testing.T) {
	m := Default()
	fp := m.Fingerprint()
	if len(fp) != 16 {
		t.Fatalf("fingerprint %q: want 16 hex digits", fp)
	}
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	again, err := readNamed(&buf, "rewritten")
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(again.Collectives)
	again.Points, again.Machine = nil, "elsewhere"
	again.PointToPoint.Segments[0].R2, again.PointToPoint.Segments[0].Points = 0.5, 3
	again.Collectives[0].Note, again.Collectives[0].Segments[0].R2 = "refitted", 0.25
	if got := again.Fingerprint(); got != fp {
		t.Errorf("the same fits, rewritten and reordered: %s, want %s", got, fp)
	}
	again.PointToPoint.Segments[0].B *= 1.0000001
	if again.Fingerprint() == fp {
		t.Errorf("a changed point-to-point slope kept the fingerprint")
	}
	other := Default()
	other.Collectives[0].Segments[0].Terms[0].Coef++
	if other.Fingerprint() == fp {
		t.Errorf("a changed collective coefficient kept the fingerprint")
	}
	other = Default()
	other.PointToPoint.Breakpoints[0]++
	if other.Fingerprint() == fp {
		t.Errorf("a changed point-to-point breakpoint kept the fingerprint")
	}
}
