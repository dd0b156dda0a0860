package stats

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// siteKey is one MPI function's calls at one call site of a rank.
type siteKey struct {
	site uint32 // the rank's call-site id, 0: unknown
	fn   string
}

// SiteLabel names call site site of rank's table: a short label that
// groups sites across ranks ("stencil.c:88 exchange") and a long one
// (with the file's directory); "" when unknown.
type SiteLabel func(rank int, site uint32) (short, long string)

// UnknownSite is the label of calls whose call site is not known.
const UnknownSite = "(unknown call site)"

// SiteFunc is the profile of one MPI function's calls at one call site,
// over all ranks (mpiP's call-site table).
type SiteFunc struct {
	Site     string `json:"site"`
	Location string `json:"location,omitempty"` // the long label
	Func
	// MaxRank is the rank of the longest call (the lowest such rank).
	MaxRank int `json:"max_rank"`
	// Ranks is the number of ranks that made such calls.
	Ranks int `json:"ranks"`
	// MPIShare is the calls' share of the time in MPI, all ranks.
	MPIShare float64 `json:"mpi_share"`
}

// HasSites reports whether any call of p has a call site.
func (p *Profile) HasSites() bool {
	for _, r := range p.Ranks {
		for k := range r.bySite {
			if k.site != 0 {
				return true
			}
		}
	}
	return false
}

// BySite returns the application's MPI calls by call site and function
// over all ranks, the sites named by label, by total time, descending
// (then site and function): deterministic. MPI_Init and MPI_Finalize are
// left out, as from the time in MPI.
func (p *Profile) BySite(label SiteLabel) []*SiteFunc {
	type key struct{ site, fn string }
	all := map[key]*SiteFunc{}
	for _, r := range p.Ranks { // by rank: the lowest rank wins ties of MaxNs
		for k, f := range r.bySite {
			if isInitFinalize(k.fn) {
				continue
			}
			short, long := "", ""
			if k.site != 0 {
				short, long = label(r.Rank, k.site)
			}
			if short == "" {
				short, long = UnknownSite, ""
			}
			a := all[key{short, k.fn}]
			if a == nil {
				a = &SiteFunc{Site: short, Location: long, Func: Func{Name: k.fn}, MaxRank: r.Rank}
				all[key{short, k.fn}] = a
			}
			if f.Calls > 0 && (a.Calls == 0 || f.MaxNs > a.MaxNs || f.MaxNs == a.MaxNs && r.Rank < a.MaxRank) {
				a.MaxRank = r.Rank
			}
			a.Func.merge(f)
			a.Ranks++
		}
	}
	out := make([]*SiteFunc, 0, len(all))
	for _, a := range all {
		if p.MPINs > 0 {
			a.MPIShare = float64(a.TotalNs) / float64(p.MPINs)
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *SiteFunc) int {
		return cmp.Or(cmp.Compare(b.TotalNs, a.TotalNs), cmp.Compare(a.Site, b.Site), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// WriteSitesText prints the call-site table: per call site and function,
// calls, total, mean and max time with the rank of the max, the share of
// the time in MPI, and bytes. At most top rows (0: all).
func WriteSitesText(w io.Writer, p *Profile, sites []*SiteFunc, top int) error {
	fmt.Fprintf(w, "Application time (MPI_Init to MPI_Finalize, longest rank): %s; time in MPI: %.1f%% over %d ranks\n\n",
		Duration(p.AppNs), p.MPIPercent(), len(p.Ranks))
	fmt.Fprintf(w, "MPI calls by call site, all ranks:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "call site\tfunction\tcalls\ttotal\tmean\tmax\tmax rank\t% MPI\tsent\treceived")
	for i, s := range sites {
		if top > 0 && i == top {
			fmt.Fprintf(tw, "(%d more)\n", len(sites)-top)
			break
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%.1f\t%s\t%s\n", s.Site, s.Name, s.Calls, Duration(s.TotalNs),
			Duration(int64(s.MeanNs()+0.5)), Duration(s.MaxNs), s.MaxRank, 100*s.MPIShare, Bytes(s.Sent), Bytes(s.Received))
	}
	return tw.Flush()
}
