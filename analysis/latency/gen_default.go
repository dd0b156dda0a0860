//go:build ignore

// gen_default regenerates default_model.json, the model Default embeds: it
// builds the calibration benchmark with an MPI compiler wrapper, runs it
// under a launcher with calibrate.DefaultConfig, fits the points and writes
// the model with Source DefaultSource. From this directory:
//
//	go run gen_default.go                   # mpicc; mpirun --oversubscribe -np 4
//	go run gen_default.go -mpicc mpicc.mpich -launcher "mpirun.mpich -np 4"
//
// Run as root, Open MPI also needs OMPI_ALLOW_RUN_AS_ROOT=1 and
// OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in the environment.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/mpitrace/mpitrace/analysis/latency"
	"github.com/mpitrace/mpitrace/recorder/calibrate"
)

func main() {
	mpicc := flag.String("mpicc", "mpicc", "MPI C compiler wrapper")
	launcher := flag.String("launcher", "mpirun --oversubscribe -np 4", "launcher command")
	out := flag.String("o", "default_model.json", "output file")
	raw := flag.String("raw", "", "also keep the benchmark's output in this file")
	from := flag.String("from", "", "fit this saved benchmark output instead of running the benchmark")
	flag.Parse()
	if err := run(*mpicc, strings.Fields(*launcher), *out, *raw, *from); err != nil {
		fmt.Fprintln(os.Stderr, "gen_default:", err)
		os.Exit(1)
	}
}

func run(mpicc string, launcher []string, out, raw, from string) error {
	res, err := measure(mpicc, launcher, from)
	if err != nil {
		return err
	}
	if raw != "" {
		var b bytes.Buffer
		if err := res.WriteText(&b); err != nil {
			return err
		}
		if err := os.WriteFile(raw, b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	pts := make([]latency.Point, len(res.Points))
	for i, p := range res.Points {
		pts[i] = latency.Point(p)
	}
	m, err := latency.Fit(pts)
	if err != nil {
		return err
	}
	m.Source = latency.DefaultSource
	m.Machine, m.MPI, m.Procs, m.CPUs = res.Host, res.MPI, res.Procs, res.CPUs
	var b bytes.Buffer
	if err := m.Write(&b); err != nil {
		return err
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Print(m.Summary())
	return nil
}

func measure(mpicc string, launcher []string, from string) (*calibrate.Result, error) {
	if from != "" {
		f, err := os.Open(from)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		res, err := calibrate.Parse(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", from, err)
		}
		return res, nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	bin, err := calibrate.Build(ctx, mpicc, "")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(filepath.Dir(bin))
	return calibrate.Run(ctx, launcher, bin, calibrate.DefaultConfig(), os.Stderr)
}
