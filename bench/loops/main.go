// Command loops measures the cost of the loop markers (docs/loops.md).
//
//	go run ./bench/loops [-cc cc] [-n 20000000] [-rounds 7]
//
// It builds bench/programs/loops.c (a loop with markers, and the same loop
// without) and the recorder without MPI, then runs, in interleaved rounds:
// the loop without markers; with markers and no recorder (not recorded:
// one predictable branch per marker); with the recorder at chance 0
// (every iteration counted, none sampled); at chance 1 without counters
// (every iteration sampled: two events with their clock reads); at chance
// 1 with counters (two counter reads more); and the floor of a sampled
// iteration, the loop reading the clock twice per iteration. It prints the median
// nanoseconds per iteration of each, what the markers add per iteration
// and per marker call (an iteration makes two: its begin and its end), and
// the ratios to the loop without markers. Medians of side-by-side rounds
// are what to compare on a noisy machine, not the absolute times.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mpitrace/mpitrace/bench/internal/benchutil"
	"github.com/mpitrace/mpitrace/recorder"
	"github.com/mpitrace/mpitrace/tracefmt"
)

func main() {
	cc := flag.String("cc", "cc", "C compiler")
	n := flag.Int("n", 20000000, "iterations per run (runs that sample every iteration do fewer)")
	rounds := flag.Int("rounds", 7, "interleaved rounds (the median is reported)")
	flag.Parse()
	if err := run(*cc, *n, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "loops:", err)
		os.Exit(1)
	}
}

type variant struct {
	name, mode string
	n          int      // iterations
	env        []string // nil: no recorder
}

func run(cc string, n, rounds int) error {
	work, err := os.MkdirTemp("", "mpitrace-loops-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	src, err := filepath.Abs("bench/programs/loops.c")
	if err != nil {
		return err
	}
	inc, err := filepath.Abs("recorder/c")
	if err != nil {
		return err
	}
	bin := filepath.Join(work, "loops")
	if out, err := exec.Command(cc, "-O2", "-I", inc, "-o", bin, src).CombinedOutput(); err != nil {
		return fmt.Errorf("compiling loops.c: %v\n%s", err, out)
	}
	lib, err := recorder.BuildCore(context.Background(), cc, recorder.BuildOptions{})
	if err != nil {
		return err
	}
	rec := func(chance, counters string) []string {
		return []string{"LD_PRELOAD=" + lib.Path, "MPITRACE_LOOP_CHANCE=" + chance, "MPITRACE_LOOP_COUNTERS=" + counters}
	}
	variants := []variant{
		{"no markers", "plain", n, nil},
		{"markers, not recorded", "markers", n, nil},
		{"recorded, chance 0", "markers", n, rec("0", "none")},
		{"recorded, chance 1, no counters", "markers", n / 10, rec("1", "none")},
		{"recorded, chance 1, counters", "markers", n / 100, rec("1", "auto")},
		{"floor: 2 clock reads per iteration", "floor", n / 10, nil},
	}
	times := map[string][]float64{}
	counters := ""
	for r := 0; r < rounds; r++ {
		for i, v := range variants {
			dir := filepath.Join(work, fmt.Sprintf("trace-%d-%d", i, r))
			cmd := exec.Command(bin, v.mode, strconv.Itoa(v.n))
			cmd.Env = os.Environ()
			if v.env != nil {
				cmd.Env = append(append(cmd.Env, v.env...), "MPITRACE_DIR="+dir)
			}
			var out bytes.Buffer
			cmd.Stdout = &out
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s: %v", v.name, err)
			}
			f := strings.Fields(out.String())
			if len(f) != 2 {
				return fmt.Errorf("%s: unexpected output %q", v.name, out.String())
			}
			x, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return err
			}
			times[v.name] = append(times[v.name], x)
			if v.env != nil && strings.Contains(v.name, ", counters") && counters == "" {
				counters = headerCounters(filepath.Join(dir, "rank-00000.mpit"))
			}
			os.RemoveAll(dir)
		}
	}
	base := benchutil.Median(times["no markers"])
	fmt.Printf("cc=%s n=%d rounds=%d (medians, ns per iteration; 2 marker calls per iteration)\n", cc, n, rounds)
	fmt.Printf("%-34s %8.2f ns\n", "no markers", base)
	floor := benchutil.Median(times[variants[len(variants)-1].name])
	for _, v := range variants[1:] {
		t := benchutil.Median(times[v.name])
		if v.mode == "floor" {
			fmt.Printf("%-34s %8.2f ns: +%.2f ns per iteration\n", v.name, t, t-base)
			continue
		}
		name := v.name
		if strings.Contains(name, ", counters") {
			name += " (" + counters + ")"
		}
		if strings.Contains(v.name, "chance 1") {
			defer fmt.Printf("%-34s %.2f ns per sampled iteration above the floor of its two clock reads\n", v.name, t-floor)
		}
		fmt.Printf("%-34s %8.2f ns: +%.2f ns per iteration, +%.2f ns per marker, %.2f× the loop without markers\n",
			name, t, t-base, (t-base)/2, t/base)
	}
	return nil
}

// headerCounters returns the loop_counters value of a rank file's header.
func headerCounters(path string) string {
	h, err := tracefmt.ReadHeader(path)
	if err != nil {
		return "?"
	}
	if c, _ := h.Get("loop_counters"); c != "" {
		return c
	}
	return "no counters"
}
