package calibrate

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, that what it accepts is valid,
// and that WriteText writes it back to the same Result. Named seeds are in
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte(small))
	f.Add([]byte("mpitrace-calibrate version=1 procs=2 cpus=0 host=\"\" mpi=\"\"\nend points=0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<20 {
			return
		}
		res, err := Parse(bytes.NewReader(data))
		if err != nil {
			if res != nil {
				t.Fatal("a result with an error")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q spans lines", err)
			}
			return
		}
		if res.Version != FormatVersion || res.Procs < 2 || res.CPUs < 0 {
			t.Fatalf("accepted header %+v", res)
		}
		for _, p := range res.Points {
			if p.Kind == "" || p.Bytes < 0 || p.Procs < 2 || p.Procs > res.Procs || p.Nanos < 0 || math.IsNaN(p.Nanos) || math.IsInf(p.Nanos, 0) {
				t.Fatalf("accepted point %+v", p)
			}
		}
		var b bytes.Buffer
		if err := res.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		again, err := Parse(&b)
		if err != nil {
			t.Fatalf("rereading %q: %v", b.String(), err)
		}
		if !reflect.DeepEqual(res, again) {
			t.Fatalf("round trip:\n%+v\n%+v", res, again)
		}
	})
}
