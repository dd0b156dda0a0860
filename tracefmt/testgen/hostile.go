package testgen

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/internal/zstdrle"
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

// BlockBomb returns the log of rank 0 of a one-rank world whose threads
// recorder threads each wrote one events block of about raw bytes (raw is
// at most spec.MaxBlockSize), all MPI_Test calls, each block a zstd frame
// of about raw/32768 bytes (RLEBlock). With 64 threads of 64 MiB it is a
// 134 KB file whose threads a reader merging them by time would hold 4 GiB
// of at once.
func BlockBomb(threads, raw int) []byte {
	return bomb("hostile-block-bomb", threads, 1, raw)
}

// EventsBomb returns the log of rank 0 of a one-rank world whose one
// recorder thread wrote blocks events blocks of about raw bytes each, all
// MPI_Test calls (RLEBlock): a reader in order holds one block at a time,
// but the file yields blocks × raw bytes of events. With 24 blocks of
// 16 MiB it is a 30 KB file of 67 M events.
func EventsBomb(blocks, raw int) []byte {
	return bomb("hostile-events-bomb", 1, blocks, raw)
}

// bomb returns the log of threads recorder threads that each wrote blocks
// events blocks of about raw bytes of MPI_Test calls.
func bomb(runID string, threads, blocks, raw int) []byte {
	out := [][]byte{HeaderBlock(0, 1, runID)}
	strs := appendString(binary.AppendUvarint(binary.AppendUvarint(nil, 1), 1), "MPI_Test")
	out = append(out, tracefmt.AppendBlock(nil, spec.BlockStrings, spec.CodecNone, len(strs), strs))
	// Every event is CallBytes bytes 01: kind Call, fn 1, gap -1, dur 1
	// (all of them end when the block's base does), site 1.
	n := max(raw-4*binary.MaxVarintLen64, CallBytes)
	n -= n % CallBytes
	count := uint64(n / CallBytes)
	for b := 0; b < blocks; b++ {
		for t := 0; t < threads; t++ {
			out = append(out, RLEBlock(spec.BlockEvents, uvarints(uint64(t), uint64(b)*count, count, 1_000_000_000+uint64(b)), 0x01, n))
		}
	}
	// The end record of the current version: reason, signal, events,
	// blocks, time, dropped, code, function and an empty message.
	total := uint64(threads * blocks)
	end := uvarints(spec.EndFinalize, 0, count*total, total, 1_000_000_000+uint64(blocks-1), 0, 0, 0, 0)
	out = append(out, tracefmt.AppendBlock(nil, spec.BlockEnd, spec.CodecNone, len(end), end))
	return RawFile(out...)
}

// CallBytes is the size of a Call event of the current version whose
// every field is 1 byte: kind, fn, gap, dur, site.
var CallBytes = 1 + len(spec.Kinds[spec.Call].Fields)

// RawFile returns the magic and the current format version followed by
// blocks (see tracefmt.AppendBlock).
func RawFile(blocks ...[]byte) []byte {
	f := binary.LittleEndian.AppendUint16([]byte(spec.Magic), spec.Current)
	for _, b := range blocks {
		f = append(f, b...)
	}
	return f
}

// HeaderBlock returns an uncompressed header block of a rank of a run.
func HeaderBlock(rank, size int, runID string) []byte {
	h := tracefmt.NewHeader(rank, size, runID)
	p := binary.AppendUvarint(nil, uint64(len(h.Meta)))
	for _, kv := range h.Meta {
		p = appendString(appendString(p, kv.Key), kv.Value)
	}
	return tracefmt.AppendBlock(nil, spec.BlockHeader, spec.CodecNone, len(p), p)
}

// RLEBlock returns a block of type typ whose payload is one zstd frame
// that decompresses to prefix followed by n copies of b, in about n/32768
// bytes (see zstdrle.Frame).
func RLEBlock(typ uint8, prefix []byte, b byte, n int) []byte {
	return tracefmt.AppendBlock(nil, typ, spec.CodecZstd, len(prefix)+n, zstdrle.Frame(prefix, b, n))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func uvarints(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}
