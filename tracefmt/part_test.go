package tracefmt

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// writeTestTrace writes ranks 0..n-1 of a run of n ranks into dir, a
// send each.
func writeTestTrace(t *testing.T, dir string, n int) {
	t.Helper()
	for r := range n {
		s := newStream()
		s.add(call(spec.Send, 0, 10, 5))
		b := writeFile(t, r, n, s.evs, nil, nil)
		if err := os.WriteFile(filepath.Join(dir, RankFileName(r)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHeadersExchange: headers read by parts and exchanged as bytes open
// the trace OpenDir opens, with its diagnostics and errors: a foreign file
// and one of an unsupported version keep what errors.Is and errors.As
// match.
func TestHeadersExchange(t *testing.T) {
	dir := t.TempDir()
	writeTestTrace(t, dir, 3)
	if err := os.WriteFile(filepath.Join(dir, "rank-00003.mpit"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ListDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var all []HeaderResult
	for lo := 0; lo < len(l.Names); lo += 3 {
		b, err := EncodeHeaders(l.ReadHeaders(lo, min(lo+3, len(l.Names))))
		if err != nil {
			t.Fatal(err)
		}
		part, err := DecodeHeaders(b)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, part...)
	}
	if !errors.Is(all[3].Err, ErrNotMpitrace) {
		t.Errorf("the foreign file's error %v is not ErrNotMpitrace", all[3].Err)
	}
	got, err := l.Open(all)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Files, want.Files) || !slices.Equal(got.Diagnostics().All(), want.Diagnostics().All()) {
		t.Errorf("opened from exchanged headers:\n%+v\n%v\nwant\n%+v\n%v", got.Files, got.Diagnostics().All(), want.Files, want.Diagnostics().All())
	}
	b, _ := EncodeHeaders([]HeaderResult{{Err: &VersionError{File: "f", Version: 99}}})
	back, _ := DecodeHeaders(b)
	var ve *VersionError
	if !errors.As(back[0].Err, &ve) || ve.Version != 99 {
		t.Errorf("a version error came back as %v", back[0].Err)
	}
}

// TestFoundExchange: what the parts' readers found, added in order, is
// what one reading of the whole trace found.
func TestFoundExchange(t *testing.T) {
	dir := t.TempDir()
	writeTestTrace(t, dir, 4)
	tr, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.ForEachRank(0, func(r *RankReader) error {
		for r.Next() {
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A diagnostic of rank 2's, as if its reader had found it.
	tr.rankDiags[2].Add(Diagnostic{Severity: DataLoss, Code: CodeCRCMismatch, Rank: 2, Message: "x"})
	want := tr.Diagnostics()
	other, _ := OpenDir(dir)
	for i, bounds := range [][2]int{{0, 1}, {1, 3}, {3, 4}} {
		part := tr.Part(bounds[0], bounds[1])
		part.rankDiags = tr.rankDiags
		b, err := part.Found()
		if err != nil {
			t.Fatal(err)
		}
		if err := other.AddFound(b, i == 0); err != nil {
			t.Fatal(err)
		}
	}
	got := other.Diagnostics()
	if !slices.Equal(got.All(), want.All()) || got.Count(DataLoss) != want.Count(DataLoss) || got.CountCode(CodeCRCMismatch) != 1 {
		t.Errorf("diagnostics %v, want %v", got.All(), want.All())
	}
}
