package main

import (
	"os"
	"strings"
	"testing"
)

const docPath = "../../../docs/format.md"

// TestDocUpToDate fails when the generated section of docs/format.md is not
// what gendoc writes from the spec table.
func TestDocUpToDate(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Section(doc)
	if err != nil {
		t.Fatal(err)
	}
	if want := Render(); got != want {
		t.Fatalf("the generated section of docs/format.md is stale: run go generate ./tracefmt\n%s", firstDiff(got, want))
	}
}

func TestSplice(t *testing.T) {
	doc := []byte("a\n" + beginMarker + "\nold\n" + endMarker + "\nb\n")
	out, err := Splice(doc, "new\n")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "a\n"+beginMarker+"\nnew\n"+endMarker+"\nb\n" {
		t.Errorf("%q", out)
	}
	if again, _ := Splice(out, "new\n"); string(again) != string(out) {
		t.Error("not idempotent")
	}
	if _, err := Splice([]byte("no markers"), "x"); err == nil {
		t.Error("no error without markers")
	}
	if !strings.Contains(Render(), "### Kind 2: Send") {
		t.Error("Send not rendered")
	}
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return "committed: " + x + "\ngenerated: " + y
		}
	}
	return ""
}
