// Command kokkos measures what the recorder costs as a Kokkos tool, and
// what mpitrace_region_push/pop cost (docs/kokkos.md, docs/performance.md).
//
//	go run ./bench/kokkos [-n 2000000] [-rounds 7] [-callgrind]
//
// It builds bench/programs/kokkos_launch.cpp against Debian's Kokkos
// (libtrilinos-kokkos-dev), a Kokkos tool that does nothing
// (kokkos_null_tool.c), bench/programs/regions.c and the recorder without
// MPI, then runs in interleaved rounds: a loop of tiny labelled
// parallel_for launches with no tool (Kokkos' own launch cost), with the
// null tool (what Kokkos adds when any tool is loaded), with the recorder
// as the tool, and the floor of a timing tool (two clock reads per launch);
// and a loop of region push/pop pairs without the recorder, with it, and
// an empty loop. It prints the medians in ns and the ratios.
//
// With -callgrind (valgrind must be installed: apt-get install valgrind) it
// also counts instructions per launch and per region pair with
// valgrind --tool=callgrind: the difference between runs of two lengths,
// so that start-up and Kokkos' initialisation cancel out.
package main

import (
	"bufio"
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
)

func main() {
	n := flag.Int("n", 2000000, "launches (and region pairs ×10) per run")
	rounds := flag.Int("rounds", 7, "interleaved rounds (the median is reported)")
	cg := flag.Bool("callgrind", false, "also count instructions with valgrind --tool=callgrind")
	flag.Parse()
	if err := run(*n, *rounds, *cg); err != nil {
		fmt.Fprintln(os.Stderr, "kokkos:", err)
		os.Exit(1)
	}
}

// variant is one way of running a program.
type variant struct {
	name string
	bin  string
	mode string
	n    int
	env  []string
}

func run(n, rounds int, cg bool) error {
	work, err := os.MkdirTemp("", "mpitrace-kokkos-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	abs := func(p string) string {
		a, _ := filepath.Abs(p)
		return a
	}
	launch := filepath.Join(work, "kokkos_launch")
	null := filepath.Join(work, "libkokkos_null_tool.so")
	regions := filepath.Join(work, "regions")
	for _, c := range [][]string{
		{"g++", "-O2", "-std=c++17", "-I", "/usr/include/trilinos", "-o", launch, abs("bench/programs/kokkos_launch.cpp"),
			"-ltrilinos_kokkoscontainers", "-ltrilinos_kokkoscore", "-ldl"},
		{"cc", "-O2", "-shared", "-fPIC", "-o", null, abs("bench/programs/kokkos_null_tool.c")},
		{"cc", "-O2", "-I", abs("recorder/c"), "-o", regions, abs("bench/programs/regions.c")},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v (Kokkos missing? make deps installs libtrilinos-kokkos-dev)\n%s", strings.Join(c, " "), err, out)
		}
	}
	lib, err := recorder.BuildCore(context.Background(), "cc", recorder.BuildOptions{})
	if err != nil {
		return err
	}
	tool := func(path string) []string {
		return []string{recorder.KokkosProfileLibrary + "=" + path, recorder.KokkosToolsLibs + "=" + path}
	}
	rec := append([]string{"LD_PRELOAD=" + lib.Path}, tool(lib.Path)...)
	variants := []variant{
		{"launch, no tool", launch, "launch", n, nil},
		{"launch, null tool", launch, "launch", n, tool(null)},
		{"launch, recorder", launch, "launch", n, rec},
		{"floor: 2 clock reads", launch, "floor", n, nil},
		{"empty loop", regions, "empty", 10 * n, nil},
		{"region pair, no recorder", regions, "regions", 10 * n, nil},
		{"region pair, recorder", regions, "regions", n, []string{"LD_PRELOAD=" + lib.Path}},
	}
	times := map[string][]float64{}
	for r := 0; r < rounds; r++ {
		for i, v := range variants {
			dir := filepath.Join(work, fmt.Sprintf("trace-%d-%d", i, r))
			out, err := runVariant(v, nil, dir)
			if err != nil {
				return err
			}
			f := strings.Fields(out)
			if len(f) != 2 {
				return fmt.Errorf("%s: unexpected output %q", v.name, out)
			}
			x, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return err
			}
			times[v.name] = append(times[v.name], x)
			os.RemoveAll(dir)
		}
	}
	med := func(name string) float64 { return benchutil.Median(times[name]) }
	fmt.Printf("n=%d rounds=%d (medians, ns; Kokkos Serial; recorder %s)\n", n, rounds, lib.Path)
	own, nullT, recT, floor := med("launch, no tool"), med("launch, null tool"), med("launch, recorder"), med("floor: 2 clock reads")
	fmt.Printf("%-28s %8.2f ns per launch: Kokkos' own launch cost\n", "launch, no tool", own)
	fmt.Printf("%-28s %8.2f ns per launch: +%.2f ns, Kokkos' own work for a loaded tool\n", "launch, null tool", nullT, nullT-own)
	fmt.Printf("%-28s %8.2f ns per launch: +%.2f ns = %.2f× Kokkos' own launch cost (target ≤ 1.5×)\n", "launch, recorder", recT, recT-own, (recT-own)/own)
	fmt.Printf("%-28s %8.2f ns per launch (the recorder above the null tool: %.2f ns, %.2f× the floor)\n", "floor: 2 clock reads", floor, recT-nullT, (recT-nullT)/floor)
	empty := med("empty loop")
	for _, v := range variants[5:] {
		t := med(v.name)
		fmt.Printf("%-28s %8.2f ns per pair: +%.2f ns over the empty loop (%.2f ns)\n", v.name, t, t-empty, empty)
	}
	if !cg {
		return nil
	}
	if _, err := exec.LookPath("valgrind"); err != nil {
		return fmt.Errorf("-callgrind: valgrind not found: apt-get install valgrind")
	}
	fmt.Printf("\ninstructions (valgrind --tool=callgrind; per launch or pair: the runs of 22000 and 2000 differ by 20000)\n")
	irs := map[string]float64{}
	for i, v := range variants {
		if v.mode == "floor" {
			continue
		}
		var ir [2]float64
		for j, k := range []int{2000, 22000} {
			v.n = k
			file := filepath.Join(work, fmt.Sprintf("callgrind-%d-%d.out", i, j))
			if _, err := runVariant(v, []string{"valgrind", "--tool=callgrind", "--callgrind-out-file=" + file}, filepath.Join(work, fmt.Sprintf("cg-%d-%d", i, j))); err != nil {
				return err
			}
			if ir[j], err = callgrindTotal(file); err != nil {
				return err
			}
		}
		irs[v.name] = (ir[1] - ir[0]) / 20000
	}
	fmt.Printf("%-28s %8.1f instructions per launch\n", "launch, no tool", irs["launch, no tool"])
	fmt.Printf("%-28s %8.1f instructions per launch (+%.1f)\n", "launch, null tool", irs["launch, null tool"], irs["launch, null tool"]-irs["launch, no tool"])
	fmt.Printf("%-28s %8.1f instructions per launch (+%.1f = %.2f× Kokkos' own)\n", "launch, recorder", irs["launch, recorder"],
		irs["launch, recorder"]-irs["launch, no tool"], (irs["launch, recorder"]-irs["launch, no tool"])/irs["launch, no tool"])
	for _, name := range []string{"region pair, no recorder", "region pair, recorder"} {
		fmt.Printf("%-28s %8.1f instructions per pair (+%.1f over the empty loop)\n", name, irs[name], irs[name]-irs["empty loop"])
	}
	return nil
}

// runVariant runs v (under the command prefix, if any) and returns its
// standard output; a recorded run writes its trace into dir.
func runVariant(v variant, prefix []string, dir string) (string, error) {
	argv := append(append(prefix[:len(prefix):len(prefix)], v.bin, v.mode), strconv.Itoa(v.n))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = os.Environ()
	if v.env != nil {
		cmd.Env = append(append(cmd.Env, v.env...), "MPITRACE_DIR="+dir)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %v\n%s", v.name, err, errb.String())
	}
	return out.String(), nil
}

// callgrindTotal reads the instruction count of a callgrind output file.
func callgrindTotal(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, p := range []string{"summary:", "totals:"} {
			if rest, ok := strings.CutPrefix(line, p); ok {
				fs := strings.Fields(rest)
				if len(fs) > 0 {
					return strconv.ParseFloat(fs[0], 64)
				}
			}
		}
	}
	return 0, fmt.Errorf("%s: no summary line", path)
}
