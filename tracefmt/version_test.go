package tracefmt

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/internal/textdiff"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// TestReadOldVersions reads files of every earlier format version, written
// by the recorder and writer of that version (testdata/vN, with the text and
// diagnostics that version's reader gave): this build must read them
// identically, forever.
func TestReadOldVersions(t *testing.T) {
	for _, v := range spec.Versions {
		if v == spec.Current {
			continue
		}
		dir := filepath.Join("testdata", "v"+strconv.Itoa(int(v)))
		files, _ := filepath.Glob(filepath.Join(dir, "*.mpit"))
		if len(files) == 0 {
			t.Errorf("no version %d files in %s", v, dir)
		}
		for _, path := range files {
			t.Run(filepath.Base(dir)+"/"+filepath.Base(path), func(t *testing.T) {
				r, err := OpenRank(path)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				if r.Version() != v {
					t.Fatalf("version %d, want %d", r.Version(), v)
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
					t.Errorf("version %d file reads differently:\n%s", v, textdiff.Lines(string(want), b.String()))
				}
			})
		}
	}
}
