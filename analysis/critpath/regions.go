package critpath

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mpitrace/mpitrace/analysis/internal/textout"
)

// RegionSpans are where a trace's regions, kernels, deep copies and
// sections ran: the regions package's Spans. A key is a node of the call
// tree (its path of kinds and names).
type RegionSpans interface {
	Spans
	// Node names a key's node: its kind (region, for, reduce, scan,
	// fence, copy, section) and name.
	Node(key string) (kind, name string)
}

// RegionSummary is how much of the path's computation ran inside regions,
// kernels, deep copies and sections.
type RegionSummary struct {
	// InRegions is the path's computation time inside any of them, and
	// its shares of the path's length and of its computation.
	InRegions        float64 `json:"in_regions_ns"`
	Share            float64 `json:"share"`
	ComputationShare float64 `json:"computation_share"`
	// Unplaced is computation time the analysis could not place in time:
	// counted in no node.
	Unplaced float64 `json:"unplaced_ns,omitempty"`
	// Nodes are by time on the path, most first, then outer before inner,
	// then by key.
	Nodes []RegionShare `json:"nodes"`
}

// RegionShare is the path's computation inside one node of the call tree.
type RegionShare struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Path are the names of the nodes from the top down to this one.
	Path  []string `json:"path"`
	Depth int      `json:"depth"`
	// Ns is the path's computation inside the node (inclusive of the nodes
	// nested in it); SelfNs the same less what its children hold (the
	// computation for which it is the innermost node).
	Ns               float64 `json:"ns"`
	SelfNs           float64 `json:"self_ns"`
	Share            float64 `json:"share"`             // of the path's length
	ComputationShare float64 `json:"computation_share"` // of its computation

	// Key and Parent are the node's and its parent's keys in the spans.
	Key    string `json:"-"`
	Parent string `json:"-"`
}

// regions is the path's computation inside the regions, kernels, copies
// and sections (ReportOptions.Regions) of an attribution: per node, the
// time of the path's computation inside it (with what is nested in it)
// and inside it alone.
func (a *attribution) regions(sum *Summary, spans RegionSpans) *RegionSummary {
	rs := &RegionSummary{InRegions: float64(a.in), Unplaced: a.unplaced, Nodes: []RegionShare{}}
	rs.Share, rs.ComputationShare = sum.shares(rs.InRegions)
	children := map[string]int64{}
	for key, ns := range a.byKey {
		if _, parent := spans.Describe(key); parent != "" {
			children[parent] += ns
		}
	}
	for key, ns := range a.byKey {
		x := RegionShare{Key: key, Ns: float64(ns), SelfNs: float64(max(ns-children[key], 0))}
		x.Kind, x.Name = spans.Node(key)
		x.Depth, x.Parent = spans.Describe(key)
		for k := key; k != ""; _, k = spans.Describe(k) {
			_, name := spans.Node(k)
			x.Path = append(x.Path, name)
		}
		slices.Reverse(x.Path)
		x.Share, x.ComputationShare = sum.shares(x.Ns)
		rs.Nodes = append(rs.Nodes, x)
	}
	slices.SortFunc(rs.Nodes, func(a, b RegionShare) int {
		return cmp.Or(cmp.Compare(b.Ns, a.Ns), cmp.Compare(a.Depth, b.Depth), cmp.Compare(a.Key, b.Key))
	})
	return rs
}

// Describe names a node for people: `region "timestep"`, `kernel "axpy"
// (parallel_for)`, `fence "sync"`, `section "io"`, or a deep copy's name.
func (x *RegionShare) Describe() string {
	q := strconv.Quote(x.Name)
	switch x.Kind {
	case "for", "reduce", "scan":
		return "kernel " + q + " (parallel_" + x.Kind + ")"
	case "copy":
		return x.Name
	}
	return x.Kind + " " + q
}

// maxRegionRows bounds the text table of nodes (--json has them all).
const maxRegionRows = 10

// WriteText writes the region summary: a headline naming the node that
// holds most of the path and the nodes in it that hold most of that, then
// the nodes that hold most of the path.
func (rs *RegionSummary) WriteText(w io.Writer, unit Unit) error {
	t := func(ns float64) string { return fmt.Sprintf("%.3f %s", ns/float64(unit), unit) }
	ew := &textout.ErrWriter{W: w}
	writeInLine(ew, "regions and kernels", rs.InRegions, rs.Share, rs.ComputationShare, t)
	if len(rs.Nodes) > 0 {
		chain := headline(len(rs.Nodes), func(i int) (string, string, int, float64) {
			x := &rs.Nodes[i]
			return x.Key, x.Parent, x.Depth, x.Ns
		})
		for i, c := range chain {
			x := &rs.Nodes[c]
			if i == 0 {
				fmt.Fprintf(ew, "%.0f%% of the path is in %s", 100*x.Share, x.Describe())
			} else {
				fmt.Fprintf(ew, ", %.0f%% in its %s", 100*x.Share, x.Describe())
			}
		}
		fmt.Fprintln(ew)
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		width := len("node")
		for i := range min(len(rs.Nodes), maxRegionRows) {
			width = max(width, len(rs.Nodes[i].label()))
		}
		fmt.Fprintf(tw, "%-*s\tkind\tdepth\ttime\tself\tshare\tof computation\t\n", width, "node")
		for i, x := range rs.Nodes {
			if i == maxRegionRows {
				fmt.Fprintf(tw, "(%d more: --json lists them)\t\t\t\t\t\t\t\n", len(rs.Nodes)-i)
				break
			}
			fmt.Fprintf(tw, "%-*s\t%s\t%d\t%s\t%s\t%5.1f%%\t%5.1f%%\t\n", width, x.label(), x.Kind, x.Depth, t(x.Ns), t(x.SelfNs),
				100*x.Share, 100*x.ComputationShare)
		}
		tw.Flush()
	}
	writeUnplaced(ew, rs.Unplaced, "region or kernel", t)
	return ew.Err
}

// label is the node's path, "timestep > axpy", for the table.
func (x *RegionShare) label() string { return strings.Join(x.Path, " > ") }
