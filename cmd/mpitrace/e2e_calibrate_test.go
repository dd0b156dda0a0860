package main_test

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/analysis/latency"
)

// TestCalibrate runs `mpitrace calibrate --quick` under each MPI with 2 and
// 3 ranks and checks the model it writes: calibrated, with finite
// non-negative coefficients for point-to-point and every benchmarked
// collective, and predictions that grow with the message size.
func TestCalibrate(t *testing.T) {
	for _, m := range mpis {
		for _, np := range []int{2, 3} {
			if m.name == "mpich" && np > 2 {
				continue // oversubscribed MPICH ranks poll each other very slowly
			}
			t.Run(fmt.Sprintf("%s/np%d", m.name, np), func(t *testing.T) {
				m.require(t)
				dir := t.TempDir()
				out := filepath.Join(dir, "model.json")
				args := append([]string{mpitraceBin, "calibrate", "--quick", "-o", out, "--"}, m.launch(np)...)
				r := run(t, dir, args...)
				if r.code != 0 {
					t.Fatalf("exit %d\n%s", r.code, r.stderr)
				}
				if !strings.Contains(r.stdout, "wrote "+out) {
					t.Errorf("stdout does not say where the model went:\n%s", r.stdout)
				}
				model, err := latency.Load(out)
				if err != nil {
					t.Fatal(err)
				}
				if model.IsDefault() || model.Source != latency.SourceCalibrated || model.Procs != np || model.MPI == "" {
					t.Fatalf("model metadata: source %q procs %d mpi %q", model.Source, model.Procs, model.MPI)
				}
				for _, seg := range model.PointToPoint.Segments {
					if !finite(seg.A) || !finite(seg.B) || seg.A < 0 || seg.B < 0 || seg.A+seg.B == 0 {
						t.Errorf("p2p segment %+v", seg)
					}
				}
				// Structure, not timing: every prediction is finite and positive
				// (whether 1 MiB costs more than 8 B depends on the machine's noise
				// when --quick measures only up to 4 KiB).
				for _, b := range []int64{8, 4096, 1 << 20} {
					if v := model.P2P(b); !finite(v) || v <= 0 {
						t.Errorf("p2p latency at %d bytes: %v", b, v)
					}
				}
				want := map[string]bool{"MPI_Barrier": true, "MPI_Bcast": true, "MPI_Alltoall": true, "MPI_Scatter": true,
					"MPI_Gather": true, "MPI_Reduce": true, "MPI_Allreduce": true, "MPI_Allgather": true}
				for _, c := range model.Collectives {
					delete(want, c.Name)
					for _, seg := range c.Segments {
						for _, term := range seg.Terms {
							if !finite(term.Coef) || term.Coef < 0 {
								t.Errorf("%s: term %s coefficient %v", c.Name, term.Name, term.Coef)
							}
						}
					}
					if v, ok := model.Collective(c.Name, 64, np); !ok || !finite(v) || v < 0 {
						t.Errorf("%s at 64 bytes, %d procs: %v %v", c.Name, np, v, ok)
					}
				}
				if len(want) > 0 {
					t.Errorf("collectives without a model: %v", want)
				}
			})
		}
	}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
