package textdiff

import "testing"

func TestLines(t *testing.T) {
	got := Lines("a\nb\nc\n", "a\nx\nc\n")
	want := "  a\n+ x\n- b\n  c\n  "
	if got != want {
		t.Fatalf("Lines = %q, want %q", got, want)
	}
	if d := Lines("same\n", "same\n"); d != "  same\n  " {
		t.Fatalf("equal texts: %q", d)
	}
}
