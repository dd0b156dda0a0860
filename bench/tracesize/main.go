// Command tracesize measures the recorder's log size per recorded MPI call.
//
//	go run ./bench/tracesize [-mpicc mpicc.openmpi] [-mpirun mpirun.openmpi] [-np 4]
//
// It records two programs with `mpitrace record`: the end-to-end fixture
// (fixtures/programs/mix.c, a short program that touches every kind of call)
// and the stencil example run long (fixtures/programs/stencil.c, 5000
// iterations), then prints, for each, the calls recorded, the bytes of all
// rank logs, the bytes per call, and the same for the events blocks alone
// (without the per-file header and string table, which do not grow with the
// run).
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

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
	mpitrace := filepath.Join(work, "mpitrace")
	if out, err := exec.Command("go", "build", "-o", mpitrace, "./cmd/mpitrace").CombinedOutput(); err != nil {
		return fmt.Errorf("building mpitrace: %v\n%s", err, out)
	}
	fmt.Printf("mpicc=%s np=%d\n", mpicc, np)
	fmt.Printf("%-22s %10s %12s %10s %16s\n", "program", "calls", "log bytes", "B/call", "events B/call")
	for _, p := range []struct {
		name string
		args []string
	}{
		{"mix", nil},
		{"stencil", []string{"5000", "2000"}},
	} {
		bin := filepath.Join(work, p.name)
		src := filepath.Join("fixtures", "programs", p.name+".c")
		if out, err := exec.Command(mpicc, "-O2", "-o", bin, src, "-lm").CombinedOutput(); err != nil {
			return fmt.Errorf("compiling %s: %v\n%s", src, err, out)
		}
		dir := filepath.Join(work, "traces-"+p.name)
		argv := []string{"record", "-o", dir, "--", mpirun}
		if filepath.Base(mpirun) == "mpirun.openmpi" || filepath.Base(mpirun) == "mpirun" {
			argv = append(argv, "--oversubscribe")
		}
		argv = append(argv, "-np", fmt.Sprint(np), bin)
		argv = append(argv, p.args...)
		cmd := exec.Command(mpitrace, argv...)
		cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("recording %s: %v", p.name, err)
		}
		calls, total, events, err := measure(dir)
		if err != nil {
			return err
		}
		label := p.name
		if len(p.args) > 0 {
			label = fmt.Sprintf("%s %v", p.name, p.args)
		}
		fmt.Printf("%-22s %10d %12d %10.2f %16.2f\n", label, calls, total, float64(total)/float64(calls), float64(events)/float64(calls))
	}
	return nil
}

// measure counts the recorded calls of a trace and its bytes: all of the
// rank logs, and the events blocks alone.
func measure(dir string) (calls, total, events int64, err error) {
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, f := range tr.Files {
		r, err := tr.OpenRank(f.Rank)
		if err != nil {
			return 0, 0, 0, err
		}
		for r.Next() {
			if spec.Kinds[r.Event().Kind].IsCall {
				calls++
			}
		}
		r.Close()
		b, err := os.ReadFile(f.Path)
		if err != nil {
			return 0, 0, 0, err
		}
		total += int64(len(b))
		events += eventsBlockBytes(b)
	}
	return calls, total, events, nil
}

// eventsBlockBytes walks a rank file's frames (docs/format.md) and adds up
// the events blocks, frame headers included.
func eventsBlockBytes(b []byte) int64 {
	var n int64
	off := len(spec.Magic) + 2
	for off+spec.BlockHeaderSize <= len(b) {
		typ := b[off+4]
		stored := int(binary.LittleEndian.Uint32(b[off+8:]))
		size := spec.BlockHeaderSize + stored
		if typ == spec.BlockEvents {
			n += int64(size)
		}
		off += size
	}
	return n
}
