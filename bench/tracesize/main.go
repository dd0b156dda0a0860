// Command tracesize measures the recorder's log size per recorded MPI call.
//
//	go run ./bench/tracesize [-mpicc mpicc.openmpi] [-mpirun mpirun.openmpi] [-np 4]
//
// It records three programs with `mpitrace record`: the end-to-end fixture
// (fixtures/programs/mix.c, a short program that touches every kind of call),
// the stencil example run long (fixtures/programs/stencil.c, 5000
// iterations) and polling loops (bench/programs/poll.c, on 2 ranks, with
// the default buffer and with 16 MiB buffers), then prints, for each, the
// calls recorded, the bytes of all rank logs, the bytes per call, the same
// for the events blocks alone (without the per-file header and string table,
// which do not grow with the run), and the compression ratio of the events
// blocks: overall and of the block that compresses best. Readers allow 256
// (tracefmt.DefaultMaxRatio).
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/mpitrace/mpitrace/bench/internal/benchutil"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

func main() {
	mpicc := flag.String("mpicc", "mpicc.openmpi", "MPI compiler wrapper")
	mpirun := flag.String("mpirun", "mpirun.openmpi", "MPI launcher")
	np := flag.Int("np", 4, "ranks")
	flag.Parse()
	if err := run(*mpicc, *mpirun, *np); err != nil {
		fmt.Fprintln(os.Stderr, "tracesize:", err)
		os.Exit(1)
	}
}

func run(mpicc, mpirun string, np int) error {
	work, err := os.MkdirTemp("", "mpitrace-tracesize-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	mpitrace, err := benchutil.BuildMpitrace(work)
	if err != nil {
		return err
	}
	fmt.Printf("mpicc=%s np=%d\n", mpicc, np)
	fmt.Printf("%-22s %10s %12s %10s %16s %8s %8s\n", "program", "calls", "log bytes", "B/call", "events B/call", "ratio", "best")
	for _, p := range []struct {
		name, dir string
		np        int
		flags     []string
		args      []string
	}{
		{name: "mix", dir: "fixtures"},
		{name: "stencil", dir: "fixtures", args: []string{"5000", "2000"}},
		{name: "poll", dir: "bench", np: 2, args: []string{"2"}},
		{name: "poll", dir: "bench", np: 2, flags: []string{"--buffer", "16M"}, args: []string{"2"}},
	} {
		bin := filepath.Join(work, p.name)
		src := filepath.Join(p.dir, "programs", p.name+".c")
		if out, err := exec.Command(mpicc, "-O2", "-o", bin, src, "-lm").CombinedOutput(); err != nil {
			return fmt.Errorf("compiling %s: %v\n%s", src, err, out)
		}
		dir, err := os.MkdirTemp(work, "traces-"+p.name)
		if err != nil {
			return err
		}
		os.Remove(dir) // record makes it
		argv := append([]string{"record", "-o", dir}, p.flags...)
		argv = append(argv, "--", mpirun)
		if filepath.Base(mpirun) == "mpirun.openmpi" || filepath.Base(mpirun) == "mpirun" {
			argv = append(argv, "--oversubscribe")
		}
		n := np
		if p.np > 0 {
			n = p.np
		}
		argv = append(argv, "-np", fmt.Sprint(n), bin)
		argv = append(argv, p.args...)
		cmd := exec.Command(mpitrace, argv...)
		cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("recording %s: %v", p.name, err)
		}
		m, err := measure(dir)
		if err != nil {
			return err
		}
		label := p.name
		if len(p.args)+len(p.flags) > 0 {
			label = fmt.Sprintf("%s %v", p.name, append(p.flags, p.args...))
		}
		fmt.Printf("%-22s %10d %12d %10.2f %16.2f %8.1f %8.1f\n", label, m.calls, m.total, float64(m.total)/float64(m.calls),
			float64(m.events)/float64(m.calls), float64(m.raw)/float64(m.stored), m.best)
	}
	return nil
}

// sizes are a trace's measures.
type sizes struct {
	calls, total int64
	events       int64 // bytes of the events blocks, frame headers included
	raw, stored  int64 // the events blocks' payloads, decompressed and stored
	best         float64
}

// measure counts the recorded calls of a trace and its bytes: all of the
// rank logs, and the events blocks alone.
func measure(dir string) (sizes, error) {
	var m sizes
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		return m, err
	}
	for _, f := range tr.Files {
		r, err := tr.OpenRank(f.Rank)
		if err != nil {
			return m, err
		}
		for r.Next() {
			if spec.Kinds[r.Event().Kind].IsCall {
				m.calls++
			}
		}
		r.Close()
		b, err := os.ReadFile(f.Path)
		if err != nil {
			return m, err
		}
		m.total += int64(len(b))
		m.eventsBlocks(b)
	}
	return m, nil
}

// eventsBlocks walks a rank file's frames (docs/format.md) and adds up the
// events blocks.
func (m *sizes) eventsBlocks(b []byte) {
	off := len(spec.Magic) + 2
	for off+spec.BlockHeaderSize <= len(b) {
		typ := b[off+4]
		stored := int(binary.LittleEndian.Uint32(b[off+8:]))
		raw := int(binary.LittleEndian.Uint32(b[off+12:]))
		size := spec.BlockHeaderSize + stored
		if typ == spec.BlockEvents {
			m.events += int64(size)
			m.raw += int64(raw)
			m.stored += int64(stored)
			m.best = max(m.best, float64(raw)/float64(max(stored, 1)))
		}
		off += size
	}
}
