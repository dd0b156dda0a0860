package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/mpitrace/mpitrace/analysis/callsite"
	"github.com/mpitrace/mpitrace/analysis/driver"
	"github.com/mpitrace/mpitrace/analysis/render"
	"github.com/mpitrace/mpitrace/tracefmt"
)

type dumpOptions struct {
	Dir   string
	Ranks render.RankSet // nil: all
	// NoLocations leaves out the comment table of each rank's call sites.
	NoLocations bool
	traceFlags
	siteFlags

	ranksArg []string
}

func newDumpCmd(s *Streams, runF func(context.Context, *dumpOptions) error) *cobra.Command {
	opts := &dumpOptions{}
	cmd := &cobra.Command{
		Use:   "dump [TRACEDIR] [--rank LIST]...",
		Short: "Print a trace's events as text, one per line",
		Long: `Print the events of a trace in mpitrace's text form: for each rank its
header (meta lines), its string table, one line per event with its absolute
start time in ns, thread, kind, MPI function and arguments, and its end
record. The text form is lossless: it is what the golden tests use, and it
converts back to a binary trace.

Ranks are printed in order; --rank selects some: a rank N, a range A-B, or
a list of them (0,2-3), as dot --ranks takes them; it may be repeated.

Calls recorded with their call site (format version 5 on) carry site=N, an
id in the rank's call-site table (its Site events). After each such rank a
comment table (lines starting with #, which the text form ignores) gives
every site's return address and location, file:line and function, from the
binary's debug information; --no-locations leaves it out.`,
		Example: `  mpitrace dump traces/ --rank 0
  mpitrace dump traces/ --rank 1,3 | grep Send
  mpitrace dump traces/ --rank 4-7`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = traceDirArg(args)
			opts.Ranks = nil
			if cmd.Flags().Changed("rank") {
				var err error
				if opts.Ranks, err = parseRanks("--rank", opts.ranksArg); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDump(opts, s)
		},
	}
	cmd.Flags().StringArrayVar(&opts.ranksArg, "rank", nil, "print only these `ranks`: N, A-B, or a list of them (0,2-3)")
	cmd.Flags().BoolVar(&opts.Strict, "strict", false, "exit with status 3 when the trace lost data")
	cmd.Flags().BoolVar(&opts.NoLocations, "no-locations", false, "leave out the comment table of each rank's call sites")
	addSiteFlags(cmd.Flags(), &opts.siteFlags)
	return cmd
}

func runDump(opts *dumpOptions, s *Streams) error {
	resolver, err := opts.resolver()
	if err != nil {
		return err
	}
	t, err := openTrace(opts.Dir, s)
	if err != nil {
		return err
	}
	if err := checkRanks("--rank", opts.Ranks, t); err != nil {
		return err
	}
	for _, rr := range opts.Ranks {
		for r := rr.First; r <= rr.Last; r++ {
			if _, ok := t.Rank(r); !ok {
				return flagErrorf("--rank %s: %s has no log for rank %d", opts.Ranks, opts.Dir, r)
			}
		}
	}
	var diags tracefmt.Diagnostics
	diags.Merge(t.Diagnostics())
	out := bufio.NewWriterSize(s.Out, 1<<16)
	for _, f := range t.Files {
		if opts.Ranks != nil && !opts.Ranks.Contains(f.Rank) {
			continue
		}
		r, err := t.OpenRank(f.Rank)
		if err != nil {
			return err
		}
		err = tracefmt.WriteText(out, r)
		if err == nil && !opts.NoLocations {
			err = writeSiteComments(out, resolver, f.Rank, r.Sites())
		}
		diags.Merge(r.Diagnostics())
		r.Close()
		if err != nil {
			out.Flush()
			return fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	for _, p := range resolver.Problems() {
		fmt.Fprintf(s.Err, "mpitrace: note: %s\n", p)
	}
	return reportDiagnostics(s, &diags, &opts.traceFlags)
}

// writeSiteComments writes rank's call-site table as comment lines:
//
//	# call sites of rank 0: id, return address, location
//	# site 4 0x5627d3a3e2e4 stencil.c:31 exchange (/src/stencil.c:31 exchange)
//
// nothing for a rank without call sites.
func writeSiteComments(w io.Writer, r *callsite.Resolver, rank int, sites *tracefmt.Sites) error {
	if sites.Len() == 0 {
		return nil
	}
	t := driver.SiteTable(r, map[int]*tracefmt.Sites{rank: sites})
	ew := &ioErrWriter{w: w}
	fmt.Fprintf(ew, "# call sites of rank %d: id, return address, location\n", rank)
	for _, id := range sites.IDs() {
		addr, _ := sites.Addr(id)
		l := t.Location(rank, uint32(id))
		line := fmt.Sprintf("# site %d %#x %s", id, addr, l)
		if l.Known() && l.Long() != l.String() {
			line += " (" + l.Long() + ")"
		}
		if l.Problem != "" && !l.Known() {
			line += " [" + l.Problem + "]"
		}
		fmt.Fprintln(ew, line)
	}
	return ew.err
}
