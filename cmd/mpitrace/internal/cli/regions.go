package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/driver"
	"github.com/mpitrace/mpitrace/analysis/regions"
	"github.com/mpitrace/mpitrace/tracefmt"
)

type regionsOptions struct {
	reportOptions
	Model string
}

func newRegionsCmd(s *Streams, runF func(context.Context, *regionsOptions) error) *cobra.Command {
	opts := &regionsOptions{}
	cmd := reportCmd(&cobra.Command{
		Use:   "regions [TRACEDIR] [--json] [--by rank] [-o FILE]",
		Short: "Regions and Kokkos kernels as a call tree across ranks: time, imbalance, MPI inside, memory",
		Long: `Analyse the region events of a trace of a Kokkos program recorded with the
Kokkos tools interface, or of a program that marks regions with
mpitrace_region_push/mpitrace_region_pop (recorder/c/mpitrace.h).

Regions, kernels (parallel_for, parallel_reduce, parallel_scan), fences and
deep copies nest per thread into a call tree; the same path of names on any
thread of any rank is one node. Profile sections are nodes of their own at
the top. Per node: its calls, its inclusive time summed over ranks, the mean,
min and max of the ranks' totals over all ranks (a rank that did not run it
counts 0), the rank with the max, imbalance (max / mean), its self time
(without the nodes nested in it), and the time of the MPI calls made inside
it. Nodes inside which the critical path's computation runs are marked *
(the path of 'mpitrace critpath' with the same --model, the default model
without one; a program without MPI has none). Then, per memory space, the high-water mark of live bytes per
rank (max, its rank, mean), and the metadata, profile events and DualViews
the program declared (docs/regions.md says how each is computed).

--by rank adds the tree of every rank; --json prints one JSON object with the
tree, the memory, the metadata and the trace's diagnostics (docs/cli.md gives
the schema). -o writes the output to a file instead of stdout.

Region events that do not nest (an end with nothing open, a pop without a
push, what is left open at a thread's end) are reported as diagnostics on
stderr and counted. A trace without region events says so in one line and
exits 1. The exit status is 1 when the trace has errors, and with --strict 3
when it lost data.`,
		Example: `  mpitrace regions traces/
  mpitrace regions traces/ --by rank
  mpitrace regions traces/ --json | jq '.nodes[] | {name, kind, imbalance}'`,
	}, opts, &opts.reportOptions, "tree, memory and metadata", "the tree of every rank", runF, func(o *regionsOptions) error { return runRegions(o, s) })
	addModelFlag(cmd.Flags(), &opts.Model, "the critical path the nodes are marked by")
	return cmd
}

// regionCodes are the validation codes of region events: the regions
// command reports these with the reading's and the reconstruction's.
var regionCodes = []string{tracefmt.CodeUnknownString, tracefmt.CodeBadKernelType, tracefmt.CodeRegionEndUnopened,
	tracefmt.CodeRegionEndCrossed, tracefmt.CodeRegionUnmatched, tracefmt.CodeRegionUnwound, tracefmt.CodeRegionUnclosed,
	tracefmt.CodeSectionEndUnopened}

// noRegionsError is the one line of a trace without region events.
func noRegionsError(dir string) error {
	return fmt.Errorf("%s: no region, kernel or allocation events: record a Kokkos program with 'mpitrace record --kokkos', or mark regions with mpitrace_region_push/mpitrace_region_pop (recorder/c/mpitrace.h)", dir)
}

// readRegions rebuilds the task graph of t (for the critical path under
// the latency model of modelPath) while aggregating its regions, and
// returns the report with the nodes on the path marked, and the
// diagnostics.
func readRegions(t *tracefmt.Trace, modelPath string, s *Streams) (*regions.Report, *tracefmt.Diagnostics, error) {
	var (
		mu         sync.Mutex
		validators = map[int]*tracefmt.Validator{}
	)
	a, err := analyze(t, driver.Options{Model: modelPath, Stream: true, Observe: func(h *tracefmt.Header, strs *tracefmt.Strings, file string) func(*tracefmt.Event) {
		v := tracefmt.NewValidator(h, strs, file)
		mu.Lock()
		validators[h.Rank] = v
		mu.Unlock()
		return v.Event
	}}, s)
	if err != nil {
		return nil, nil, err
	}
	rep := regions.Merge(a.Regions())
	diags := &tracefmt.Diagnostics{}
	noMPI := a.NoMPI()
	if noMPI {
		// Nothing to reconstruct: the reconstruction's complaints about
		// a run without MPI calls say nothing.
		diags.Merge(t.Diagnostics())
	} else {
		diags.Merge(a.Diags)
	}
	for _, f := range t.Files {
		if v := validators[f.Rank]; v != nil {
			for _, x := range v.Finish().All() {
				if slices.Contains(regionCodes, x.Code) {
					diags.Add(x)
				}
			}
		}
	}
	switch {
	case noMPI:
		rep.NoCriticalPath("a program without MPI (no MPI call recorded)")
	case a.PathErr != nil:
		rep.NoCriticalPath(a.PathErr.Error())
	default:
		defer a.Close()
		// The path's sums and its share in the regions, in one pass.
		sum, _, err := a.Steps.Report(critpath.ReportOptions{Regions: regions.NewSpans(a.Regions())})
		if err != nil {
			return nil, nil, err
		}
		ns := make(map[string]float64, len(sum.Regions.Nodes))
		for _, x := range sum.Regions.Nodes {
			ns[x.Key] = x.Ns
		}
		rep.MarkCriticalPath(ns, sum.Length, sum.Computation)
	}
	return rep, diags, nil
}

func runRegions(opts *regionsOptions, s *Streams) error {
	return runReport(&opts.reportOptions, s, func(t *tracefmt.Trace) (*report, error) {
		rep, diags, err := readRegions(t, opts.Model, s)
		if err != nil {
			return nil, err
		}
		if rep.Empty() {
			// A damaged trace may have lost them: say what was lost first.
			if diags.Count(tracefmt.DataLoss)+diags.Count(tracefmt.Error) > 0 {
				reportDiagnostics(s, diags, &opts.traceFlags)
			}
			return nil, noRegionsError(t.Dir)
		}
		return &report{
			json: struct {
				Trace string `json:"trace"`
				*regions.Report
				Diagnostics *diagnosticsJSON `json:"diagnostics"`
			}{opts.Dir, rep, newDiagnosticsJSON(diags)},
			text: func(w io.Writer, byRank bool) error {
				return regions.WriteText(w, rep, regions.TextOptions{ByRank: byRank})
			},
			diags: diags,
		}, nil
	})
}
