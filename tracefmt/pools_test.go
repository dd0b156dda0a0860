package tracefmt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// TestOpenReaderHoldsNoCoders: once opened, and between events blocks, a
// reader holds no zstd decoder and no buffer of compressed bytes: a merge
// of thousands of ranks keeps every rank's reader open at once.
func TestOpenReaderHoldsNoCoders(t *testing.T) {
	st := newStream()
	for i := 0; i < 2000; i++ {
		st.add(call(spec.Call, 0, 100, 50))
	}
	data := writeFile(t, 0, 1, st.evs, &WriterOptions{BlockSize: 4096}, nil) // several blocks
	path := filepath.Join(t.TempDir(), "rank-00000.mpit")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRank(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	check := func(when string) {
		t.Helper()
		if r.dec != nil || r.sdec != nil || r.cbuf != nil || r.scanBuf != nil || r.pfxFrame != nil {
			t.Errorf("%s: decoder %v, stream decoder %v, %d compressed bytes, scan buffer %d, prefix frame %d",
				when, r.dec != nil, r.sdec != nil, cap(r.cbuf), cap(r.scanBuf), cap(r.pfxFrame))
		}
	}
	check("opened")
	n := 0
	for r.Next() {
		if n++; n%100 == 0 {
			check("reading")
		}
	}
	if r.Err() != nil || n < 1000 || len(r.blocks) < 3 {
		t.Fatalf("%d events in %d blocks: %v", n, len(r.blocks), r.Err())
	}
	check("at the end")
}
