package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/analysis/callsite"
	"github.com/mpitrace/mpitrace/analysis/driver"
	"github.com/mpitrace/mpitrace/analysis/stats"
	"github.com/mpitrace/mpitrace/tracefmt"
)

type statsOptions struct {
	Dir     string
	JSON    bool
	PerRank bool
	Top     int
	By      string // "function" or "callsite"
	traceFlags
	siteFlags
	mpi mpiFlags
}

func newStatsCmd(s *Streams, runF func(context.Context, *statsOptions) error) *cobra.Command {
	opts := &statsOptions{}
	cmd := &cobra.Command{
		Use:   "stats [TRACEDIR]",
		Short: "Per-function MPI time and bytes, per rank and over all ranks (mpiP-like)",
		Long: `Profile a trace like mpiP: for every MPI function, the number of calls,
the time spent in them (total, mean, min, max) and the bytes sent and
received, over all ranks and per rank; and per rank the application time
(MPI_Init to MPI_Finalize), the share of it spent in MPI and the MPI calls
made in it.

MPI_Init and MPI_Finalize are listed apart, and left out of the time in MPI
(as mpiP does): they hold MPI's start-up and shut-down and the recorder's
clock synchronisation, which can take longer than the whole application.

Bytes are counted where they were moved: a send's bytes at the send, a
receive's at the call that returned its status (Recv, or the Wait/Test that
completed an Irecv), a collective's at the collective (bytes this rank sent
and received). Functions are sorted by total time.

--by callsite prints mpiP's call-site table instead: per call site (file,
line and function of the call, from the binary's debug information) and
MPI function, over all ranks, the calls, total, mean and max time with the
rank of the max, the share of the time in MPI, and bytes. Build the program
with -g; a binary without debug information, changed or missing since the
run gets one note on stderr (--binary points at a copy). Traces recorded
before call sites were (format 1-4) have none: every call is at an unknown
site.

--json prints the same as one JSON object, with the trace's diagnostics
(counts by severity and code, and a list with severity, code, rank and
message). Problems in the trace are printed on stderr, one line each; when
data was lost the text output says so first. The exit status is 1 when the
trace has errors, and with --strict 3 when it lost data.`,
		Example: `  mpitrace stats traces/
  mpitrace stats traces/ --per-rank --top 10
  mpitrace stats traces/ --json | jq '.aggregate[0]'
  mpitrace stats traces/ --by callsite --top 20`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = traceDirArg(args)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runStats(cmd.Context(), opts, s)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.JSON, "json", false, "print the profile as JSON")
	f.BoolVar(&opts.PerRank, "per-rank", false, "add a function table for every rank")
	f.IntVar(&opts.Top, "top", 0, "show at most this many functions (call sites) per table (0: all)")
	f.StringVar(&opts.By, "by", "function", "group the calls by `function` or by callsite (mpiP's call-site table)")
	addSiteFlags(f, &opts.siteFlags)
	addMPIFlags(f, &opts.mpi)
	f.BoolVar(&opts.Strict, "strict", false, "exit with status 3 when the trace lost data")
	return cmd
}

func runStats(ctx context.Context, opts *statsOptions, s *Streams) error {
	if opts.Top < 0 {
		return flagErrorf("--top must be 0 or more")
	}
	switch opts.By {
	case "function", "", "callsite":
	default:
		return flagErrorf("--by %q: group by function or callsite", opts.By)
	}
	if err := opts.mpi.check(); err != nil {
		return err
	}
	resolver, err := opts.resolver()
	if err != nil {
		return err
	}
	if opts.mpi.MPI {
		return runMPI(ctx, s, opts.Dir, &opts.mpi, func(j *driver.Job, s *Streams) error {
			p, err := j.Profile()
			if err != nil || p == nil {
				return err
			}
			return printStats(opts, s, j.Trace, p, resolver)
		})
	}
	t, err := openTrace(opts.Dir, s)
	if err != nil {
		return err
	}
	p, err := stats.OfTrace(t)
	if err != nil {
		return err
	}
	return printStats(opts, s, t, p, resolver)
}

// printStats prints profile p of trace t.
func printStats(opts *statsOptions, s *Streams, t *tracefmt.Trace, p *stats.Profile, resolver *callsite.Resolver) error {
	bySite := opts.By == "callsite"
	diags := t.Diagnostics()
	var err error
	if bySite {
		return runStatsBySite(opts, s, t, p, resolver, diags)
	}
	if opts.JSON {
		err = writeJSON(s.Out, struct {
			*stats.Profile
			Diagnostics *diagnosticsJSON `json:"diagnostics"`
		}{p, newDiagnosticsJSON(diags)})
	} else {
		fmt.Fprint(s.Out, dataLossLine(diags))
		if driver.WithoutMPI(t) && len(p.All) == 0 && len(p.InitFinalize) == 0 && diags.Count(tracefmt.DataLoss) == 0 {
			// Nothing to profile: say so rather than print empty tables.
			_, err = fmt.Fprintf(s.Out, "A program without MPI: no MPI calls were recorded. 'mpitrace loops %s' shows its loops.\n", t.Dir)
			if err != nil {
				return err
			}
			return reportDiagnostics(s, diags, &opts.traceFlags)
		}
		err = stats.WriteText(s.Out, p, stats.TextOptions{PerRank: opts.PerRank, Top: opts.Top})
	}
	if err != nil {
		return err
	}
	return reportDiagnostics(s, diags, &opts.traceFlags)
}

// runStatsBySite prints the call-site table of profile p.
func runStatsBySite(opts *statsOptions, s *Streams, t *tracefmt.Trace, p *stats.Profile, r *callsite.Resolver, diags *tracefmt.Diagnostics) error {
	ranks := map[int]*tracefmt.Sites{}
	for _, rk := range p.Ranks {
		ranks[rk.Rank] = rk.Sites()
	}
	table := driver.SiteTable(r, ranks)
	sites := p.BySite(func(rank int, site uint32) (string, string) {
		l := table.Location(rank, site)
		if !l.Known() && l.Module == "" {
			return "", ""
		}
		return l.String(), l.Long()
	})
	var err error
	if opts.JSON {
		err = writeJSON(s.Out, struct {
			Trace       string            `json:"trace"`
			AppNs       int64             `json:"app_ns"`
			MPINs       int64             `json:"mpi_ns"`
			Sites       []*stats.SiteFunc `json:"callsites"`
			Problems    []string          `json:"callsite_problems"`
			Diagnostics *diagnosticsJSON  `json:"diagnostics"`
		}{t.Dir, p.AppNs, p.MPINs, sites, append([]string{}, table.Problems()...), newDiagnosticsJSON(diags)})
	} else {
		fmt.Fprint(s.Out, dataLossLine(diags))
		err = stats.WriteSitesText(s.Out, p, sites, opts.Top)
	}
	if err != nil {
		return err
	}
	if !p.HasSites() {
		fmt.Fprintf(s.Err, "mpitrace: note: %s has no call sites (format version %s; call sites came with version 5): every call is at an unknown site\n", t.Dir, traceVersions(t))
	}
	reportSiteProblems(s, table)
	return reportDiagnostics(s, diags, &opts.traceFlags)
}

// traceVersions lists the format versions of t's rank files ("4", "3-4").
func traceVersions(t *tracefmt.Trace) string {
	lo, hi := uint16(0), uint16(0)
	for i, f := range t.Files {
		v := f.Header.Version
		if i == 0 || v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}
