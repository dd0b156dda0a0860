// Package graphviztest renders DOT with Graphviz's dot in tests, the way a
// user looks at mpitrace's pictures.
package graphviztest

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// Render runs dot -Tsvg on src and fails the test when Graphviz is not
// installed, refuses src or writes no SVG. It returns what dot wrote on
// stderr (its warnings), for callers that refuse them.
func Render(t testing.TB, src string) (warnings string) {
	t.Helper()
	dotBin, err := exec.LookPath("dot")
	if err != nil {
		t.Fatal("Graphviz's dot is not on PATH: install graphviz (make deps)")
	}
	cmd := exec.Command(dotBin, "-Tsvg")
	cmd.Stdin = strings.NewReader(src)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("dot -Tsvg: %v\n%.400s", err, errb.String())
	}
	if !strings.Contains(out.String(), "<svg") {
		t.Fatalf("dot -Tsvg wrote no SVG\n%.400s", errb.String())
	}
	return errb.String()
}
