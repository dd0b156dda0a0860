package tracefmt

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/internal/textdiff"
)

// TestReadVersion1 reads files of format version 1, written by the recorder
// and writer of that version (testdata/v1, with the text and diagnostics
// the version-1 reader gave): this build must read them identically.
func TestReadVersion1(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "v1", "*.mpit"))
	if len(files) == 0 {
		t.Fatal("no version 1 files in testdata/v1")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			r, err := OpenRank(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Version() != 1 {
				t.Fatalf("version %d, want 1", r.Version())
			}
			var b bytes.Buffer
			if err := WriteText(&b, r); err != nil {
				t.Fatal(err)
			}
			for _, d := range r.Diagnostics().All() {
				b.WriteString("# diag " + d.Severity.String() + " " + d.Code + "\n")
			}
			want, err := os.ReadFile(strings.TrimSuffix(path, ".mpit") + ".txt")
			if err != nil {
				t.Fatal(err)
			}
			if b.String() != string(want) {
				t.Errorf("version 1 file reads differently:\n%s", textdiff.Lines(string(want), b.String()))
			}
		})
	}
}
