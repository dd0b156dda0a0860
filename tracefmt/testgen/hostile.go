package testgen

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Hostile rank files: small files crafted to make a reader spend what they
// cannot justify. Readers must bound their memory by what the files hold.

// HugeWorld returns a valid log of the given rank of a world that claims
// size ranks (at most 1<<24, the largest a header may claim): MPI_Init, a
// barrier on MPI_COMM_WORLD, a message to the next rank, MPI_Finalize. The
// file is a few hundred bytes whatever the size.
func HugeWorld(rank, size int) ([]byte, error) {
	var buf bytes.Buffer
	h := tracefmt.NewHeader(rank, size, "hostile-huge-world")
	w, err := tracefmt.NewWriter(&buf, &h, nil)
	if err != nil {
		return nil, err
	}
	for i, name := range []string{"MPI_Init", "MPI_Barrier", "MPI_Send", "MPI_Finalize"} {
		if err := w.DefineString(uint64(i+1), name); err != nil {
			return nil, err
		}
	}
	t := int64(1_000_000_000)
	for i, k := range []spec.Kind{spec.Call, spec.Coll, spec.Send, spec.Call} {
		ev := tracefmt.Event{Kind: k, Start: t}
		ev.F[spec.Fn], ev.F[spec.Gap], ev.F[spec.Dur] = int64(i+1), 500, 1000
		switch k {
		case spec.Coll:
			ev.F[spec.Comm], ev.F[spec.Root] = spec.CommWorld, spec.RootNone
		case spec.Send:
			ev.F[spec.Peer], ev.F[spec.Comm], ev.F[spec.Tag], ev.F[spec.Bytes] = int64((rank+1)%size), spec.CommWorld, 7, 8
		}
		if err := w.WriteEvent(&ev); err != nil {
			return nil, err
		}
		t += 1500
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteHugeWorld writes the HugeWorld logs of the given ranks of a world of
// size ranks into dir.
func WriteHugeWorld(dir string, size int, ranks ...int) error {
	for _, r := range ranks {
		data, err := HugeWorld(r, size)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, tracefmt.RankFileName(r)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
