// Command sitecost measures what call sites cost in a recorded trace's
// compressed events: it re-encodes every rank's events in blocks of 256 KiB
// three ways — without the site field and the Site and Map events (format
// 4), with the field last (format 5), and with it right after fn —
// compresses each block
// with the zstd command at level 1 (the recorder's default) and prints the
// bytes per call of each. The same events in each layout: the difference
// is the field's cost alone, free of the run-to-run variation of
// timestamps that comparing two recordings has.
//
//	go run ./bench/sitecost TRACEDIR
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// enc appends ev in layout 0 (no site), 1 (site last) or 2 (site after fn).
func enc(b []byte, ev *tracefmt.Event, layout int) []byte {
	ks := &spec.Kinds[ev.Kind]
	b = binary.AppendUvarint(b, uint64(ev.Kind))
	fields := ks.Fields
	if ks.IsCall {
		fields = fields[:len(fields)-1]
	}
	for i, f := range fields {
		v := ev.F[f]
		if spec.Fields[f].Enc == spec.Svarint {
			b = binary.AppendVarint(b, v)
		} else {
			b = binary.AppendUvarint(b, uint64(v))
		}
		if i == 0 && ks.IsCall && layout == 2 {
			b = binary.AppendUvarint(b, uint64(ev.F[spec.Site]))
		}
	}
	if ks.IsCall && layout == 1 {
		b = binary.AppendUvarint(b, uint64(ev.F[spec.Site]))
	}
	switch ks.List {
	case spec.ListCompletions:
		b = binary.AppendUvarint(b, uint64(len(ev.Completions)))
		for _, c := range ev.Completions {
			b = binary.AppendUvarint(b, c.Req)
			b = binary.AppendVarint(b, c.Src)
			b = binary.AppendVarint(b, c.Tag)
			b = binary.AppendUvarint(b, c.Bytes)
			b = binary.AppendUvarint(b, c.Flags)
		}
	case spec.ListRanks:
		b = binary.AppendUvarint(b, uint64(len(ev.Ranks)))
		var p int64
		for _, r := range ev.Ranks {
			b = binary.AppendVarint(b, r-p)
			p = r
		}
	case spec.ListReqs:
		b = binary.AppendUvarint(b, uint64(len(ev.Reqs)))
		for _, r := range ev.Reqs {
			b = binary.AppendUvarint(b, r)
		}
	}
	return b
}

// zsize is the size of b compressed by zstd -1.
func zsize(b []byte) int {
	cmd := exec.Command("zstd", "-1", "-c", "-q")
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	if err != nil {
		panic(err)
	}
	return len(out)
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sitecost TRACEDIR")
		os.Exit(2)
	}
	tr, err := tracefmt.OpenDir(os.Args[1])
	if err != nil {
		panic(err)
	}
	var tot [3]int
	calls := 0
	for _, f := range tr.Files {
		r, err := tr.OpenRank(f.Rank)
		if err != nil {
			panic(err)
		}
		var bufs [3][]byte
		flush := func() {
			for l := range bufs {
				if len(bufs[l]) > 0 {
					tot[l] += zsize(bufs[l])
					bufs[l] = bufs[l][:0]
				}
			}
		}
		for r.Next() {
			ev := r.Event()
			if spec.Kinds[ev.Kind].IsCall {
				calls++
			}
			for l := range bufs {
				if l == 0 && (ev.Kind == spec.SiteDef || ev.Kind == spec.Map) {
					continue // format 4 has no call-site table either
				}
				bufs[l] = enc(bufs[l], ev, l)
			}
			if len(bufs[0]) >= 256<<10 {
				flush()
			}
		}
		flush()
		r.Close()
	}
	fmt.Printf("calls %d\n", calls)
	for l, n := range tot {
		fmt.Printf("%-16s %d bytes, %.3f B/call, +%.3f\n", []string{"no site", "site last (v5)", "site after fn"}[l], n, float64(n)/float64(calls), float64(n-tot[0])/float64(calls))
	}
}
