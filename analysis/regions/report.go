package regions

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/mpitrace/mpitrace/analysis/internal/spanset"
	"github.com/mpitrace/mpitrace/analysis/stats"
)

// Report is the regions of a trace, over all ranks.
type Report struct {
	// Ranks is the number of ranks read: per-rank figures (mean, min,
	// max) are over all of them, a rank that did not run a node counting 0.
	Ranks int `json:"ranks"`
	// Counts are the region events that did not nest, over ranks.
	Counts Counts `json:"unbalanced"`
	// Nodes are the roots of the tree (regions, kernels and copies run
	// outside any region, and sections); each node's children are sorted,
	// as the roots, by total time (most first), then kind, then name.
	Nodes []*Node `json:"nodes"`
	// Memory is per memory space, by name.
	Memory []*Space `json:"memory"`
	// Meta are the declared metadata by key, each with its distinct values.
	Meta []*MetaKey `json:"meta"`
	// Marks are the profile events by name: how many times each happened.
	Marks []Count `json:"marks"`
	// DualViews are the DualView syncs and modifications by label.
	DualViews []*DualViewCount `json:"dual_views"`
	// Devices are the kernels (and fences) by Kokkos device type.
	Devices []Count `json:"devices"`
	// CriticalPath says whether the nodes' on_critical_path were computed
	// (MarkCriticalPath, NoCriticalPath); nil until one of them is called.
	CriticalPath *CriticalPath `json:"critical_path,omitempty"`

	byKey map[string]*Node
}

// Node is a region, kernel, fence, deep copy or section in one calling
// context (the chain of nodes around it), over all ranks and threads.
type Node struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // region, for, reduce, scan, fence, copy, section (kernel: unknown type)
	// Figures summed over ranks (and threads).
	Figures
	// Ranks that ran it; the per-rank TotalNs' mean, min and max over all
	// ranks of the report, the lowest rank with the max, and Imbalance =
	// max / mean.
	Ranks     int     `json:"ranks"`
	MeanNs    float64 `json:"mean_ns"`
	MinNs     int64   `json:"min_ns"`
	MaxNs     int64   `json:"max_ns"`
	MaxRank   int     `json:"max_rank"`
	Imbalance float64 `json:"imbalance"`
	// OnCriticalPath: some of the critical path's computation ran inside
	// it, CriticalPathNs of it (MarkCriticalPath).
	OnCriticalPath bool    `json:"on_critical_path"`
	CriticalPathNs float64 `json:"critical_path_ns,omitempty"`
	// PerRank are the figures of each rank that ran it, by rank.
	PerRank  []RankFigures `json:"per_rank"`
	Children []*Node       `json:"children"`

	// Key identifies the node (its path of kinds and names); Depth is 0 at
	// the top.
	Key   string `json:"-"`
	Depth int    `json:"-"`
}

// RankFigures are a node's figures on one rank.
type RankFigures struct {
	Rank int `json:"rank"`
	Figures
}

// Space is a memory space: its allocations, and its high-water mark of
// live bytes per rank.
type Space struct {
	Space string `json:"space"`
	MemCounts
	// HighWaterMax is the largest rank's high-water mark, MaxRank the
	// lowest rank that has it, HighWaterMean the mean over all ranks (0
	// for a rank that never allocated in the space).
	HighWaterMax  int64        `json:"high_water_max_bytes"`
	MaxRank       int          `json:"max_rank"`
	HighWaterMean float64      `json:"high_water_mean_bytes"`
	PerRank       []RankMemory `json:"per_rank"`
}

// RankMemory is a memory space on one rank.
type RankMemory struct {
	Rank int `json:"rank"`
	MemCounts
	HighWater int64 `json:"high_water_bytes"`
	// LiveAtEnd is what was allocated and not freed when the rank's
	// events ended (negative when more was freed than allocated: memory
	// allocated before recording began).
	LiveAtEnd int64 `json:"live_at_end_bytes"`
}

// MemCounts count a memory space's allocations, deallocations and the
// bytes allocated.
type MemCounts struct {
	Allocations uint64 `json:"allocations"`
	Frees       uint64 `json:"frees"`
	Allocated   uint64 `json:"bytes_allocated"`
}

// MetaKey is a metadata key with its distinct values.
type MetaKey struct {
	Key    string       `json:"key"`
	Values []*MetaValue `json:"values"`
}

// MetaValue is a metadata value and the ranks that declared it, e.g.
// "0-3,5".
type MetaValue struct {
	Value string `json:"value"`
	Ranks string `json:"ranks"`
	ranks []int
}

// Count is a name and how many.
type Count struct {
	Name  string `json:"name"`
	Count uint64 `json:"count"`
}

// DualViewCount counts a DualView's syncs and modifications by side.
type DualViewCount struct {
	Name         string `json:"name"`
	SyncHost     uint64 `json:"sync_host"`
	SyncDevice   uint64 `json:"sync_device"`
	ModifyHost   uint64 `json:"modify_host"`
	ModifyDevice uint64 `json:"modify_device"`
}

// CriticalPath says whether, and how, the nodes were matched with the
// critical path.
type CriticalPath struct {
	Computed bool `json:"computed"`
	// Note says why there is no path.
	Note string `json:"note,omitempty"`
	// LengthNs is the path's length, ComputationNs its computation (the
	// part that runs inside nodes, or not).
	LengthNs      float64 `json:"length_ns,omitempty"`
	ComputationNs float64 `json:"computation_ns,omitempty"`
}

// Merge merges the ranks' regions into one report.
func Merge(ranks []*RankRegions) *Report {
	ranks = slices.Clone(ranks)
	slices.SortFunc(ranks, func(a, b *RankRegions) int { return cmp.Compare(a.Rank, b.Rank) })
	rep := &Report{Ranks: len(ranks), Nodes: []*Node{}, Memory: []*Space{}, Meta: []*MetaKey{}, Marks: []Count{},
		DualViews: []*DualViewCount{}, Devices: []Count{}, byKey: map[string]*Node{}}
	var order []string
	spaces := map[string]*Space{}
	meta := map[string]*MetaKey{}
	marks, devices := map[string]uint64{}, map[string]uint64{}
	dvs := map[string]*DualViewCount{}
	for _, r := range ranks {
		addCounts(&rep.Counts, &r.Counts)
		for _, k := range r.order {
			rn := r.nodes[k]
			n := rep.byKey[k]
			if n == nil {
				n = &Node{Name: rn.name, Kind: rn.kind, Key: k, Depth: rn.depth, Children: []*Node{}}
				rep.byKey[k] = n
				order = append(order, k)
			}
			addCounts(&n.Figures, &rn.Figures)
			n.PerRank = append(n.PerRank, RankFigures{Rank: r.Rank, Figures: rn.Figures})
			if rn.parent == "" {
				continue
			}
			if p := rep.byKey[rn.parent]; p != nil && len(n.PerRank) == 1 {
				p.Children = append(p.Children, n)
			}
		}
		for name, m := range r.mem {
			s := spaces[name]
			if s == nil {
				s = &Space{Space: name}
				spaces[name] = s
			}
			addCounts(&s.MemCounts, &m.MemCounts)
			s.PerRank = append(s.PerRank, RankMemory{Rank: r.Rank, MemCounts: m.MemCounts, HighWater: m.high, LiveAtEnd: m.live})
		}
		for _, kv := range r.meta {
			mk := meta[kv[0]]
			if mk == nil {
				mk = &MetaKey{Key: kv[0]}
				meta[kv[0]] = mk
			}
			i := slices.IndexFunc(mk.Values, func(v *MetaValue) bool { return v.Value == kv[1] })
			if i < 0 {
				mk.Values = append(mk.Values, &MetaValue{Value: kv[1]})
				i = len(mk.Values) - 1
			}
			mk.Values[i].ranks = append(mk.Values[i].ranks, r.Rank)
		}
		for name, n := range r.marks {
			marks[name] += n
		}
		for name, n := range r.devices {
			devices[name] += n
		}
		for name, d := range r.dvs {
			x := dvs[name]
			if x == nil {
				x = &DualViewCount{Name: name}
				dvs[name] = x
			}
			addCounts(x, d)
		}
	}
	for _, k := range order {
		n := rep.byKey[k]
		n.figures(rep.Ranks)
		if n.Depth == 0 {
			rep.Nodes = append(rep.Nodes, n)
		}
	}
	sortNodes(rep.Nodes)
	for _, s := range spaces {
		s.MaxRank = -1
		var sum float64
		for _, x := range s.PerRank {
			sum += float64(x.HighWater)
			if s.MaxRank < 0 || x.HighWater > s.HighWaterMax {
				s.HighWaterMax, s.MaxRank = x.HighWater, x.Rank
			}
		}
		if rep.Ranks > 0 {
			s.HighWaterMean = sum / float64(rep.Ranks)
		}
		rep.Memory = append(rep.Memory, s)
	}
	slices.SortFunc(rep.Memory, func(a, b *Space) int { return cmp.Compare(a.Space, b.Space) })
	for _, mk := range meta {
		for _, v := range mk.Values {
			v.Ranks = stats.Ranks(v.ranks, ",")
		}
		rep.Meta = append(rep.Meta, mk)
	}
	slices.SortFunc(rep.Meta, func(a, b *MetaKey) int { return cmp.Compare(a.Key, b.Key) })
	rep.Marks = counts(marks)
	rep.Devices = counts(devices)
	for _, d := range dvs {
		rep.DualViews = append(rep.DualViews, d)
	}
	slices.SortFunc(rep.DualViews, func(a, b *DualViewCount) int { return cmp.Compare(a.Name, b.Name) })
	return rep
}

// figures computes the per-rank statistics over ranks ranks.
func (n *Node) figures(ranks int) {
	n.Ranks = len(n.PerRank)
	n.MaxRank = -1
	for i, x := range n.PerRank {
		if i == 0 || x.TotalNs > n.MaxNs {
			n.MaxNs, n.MaxRank = x.TotalNs, x.Rank
		}
		if i == 0 || x.TotalNs < n.MinNs {
			n.MinNs = x.TotalNs
		}
	}
	if n.Ranks < ranks {
		n.MinNs = 0
	}
	if ranks > 0 {
		n.MeanNs = float64(n.TotalNs) / float64(ranks)
	}
	if n.MeanNs > 0 {
		n.Imbalance = float64(n.MaxNs) / n.MeanNs
	}
}

// sortNodes sorts nodes and, below them, their children: by total time,
// most first, then by kind and name.
func sortNodes(nodes []*Node) {
	slices.SortFunc(nodes, func(a, b *Node) int {
		return cmp.Or(cmp.Compare(b.TotalNs, a.TotalNs), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	for _, n := range nodes {
		sortNodes(n.Children)
	}
}

// counts lists m by count, most first, then by name.
func counts(m map[string]uint64) []Count {
	out := make([]Count, 0, len(m))
	for name, n := range m {
		out = append(out, Count{name, n})
	}
	slices.SortFunc(out, func(a, b Count) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Name, b.Name)) })
	return out
}

// Empty reports whether the trace has no region, kernel, copy or section,
// and no allocation.
func (r *Report) Empty() bool { return len(r.Nodes) == 0 && len(r.Memory) == 0 }

// Walk calls fn for every node, depth first, in the report's order.
func (r *Report) Walk(fn func(n *Node)) {
	var walk func([]*Node)
	walk = func(ns []*Node) {
		for _, n := range ns {
			fn(n)
			walk(n.Children)
		}
	}
	walk(r.Nodes)
}

// Node returns the node of a key (Node.Key, the keys of Spans), or nil.
func (r *Report) Node(key string) *Node { return r.byKey[key] }

// MarkCriticalPath marks the nodes inside which the critical path's
// computation ran: pathNs gives each node's share in ns by key (as
// critpath.StepPath.Report finds it); length and computation are the
// path's.
func (r *Report) MarkCriticalPath(pathNs map[string]float64, length, computation float64) {
	r.CriticalPath = &CriticalPath{Computed: true, LengthNs: length, ComputationNs: computation}
	for k, ns := range pathNs {
		if n := r.byKey[k]; n != nil && ns > 0 {
			n.OnCriticalPath, n.CriticalPathNs = true, ns
		}
	}
}

// NoCriticalPath records why the nodes were not matched with a critical
// path (a program without MPI, a trace whose task graph has none).
func (r *Report) NoCriticalPath(note string) {
	r.CriticalPath = &CriticalPath{Note: note}
}

// Spans are where every rank's regions, kernels, copies and sections ran,
// by node key: the critical path's attribution (critpath.RegionSpans).
// Build it from ranks aggregated with KeepSpans.
type Spans struct {
	*spanset.Index
	nodes map[string][2]string // kind, name
}

// NewSpans gathers the spans of ranks aggregated with KeepSpans.
func NewSpans(ranks []*RankRegions) *Spans {
	s := &Spans{Index: spanset.NewIndex(), nodes: map[string][2]string{}}
	for _, r := range ranks {
		if r.spans == nil {
			continue
		}
		s.Add(r.Rank, r.spans)
		for k, n := range r.nodes {
			s.nodes[k] = [2]string{n.kind, n.name}
		}
	}
	return s
}

// Node implements critpath.RegionSpans: the kind and name of a key.
func (s *Spans) Node(key string) (kind, name string) {
	n := s.nodes[key]
	return n[0], n[1]
}

// AppendSpans appends to b where r's regions ran (r aggregated with
// KeepSpans or not) and the kind and name of each, as SpansOf reads it:
// the analysis run as an MPI job gathers them from the process that read
// the rank.
func (r *RankRegions) AppendSpans(b []byte) []byte {
	b = spanset.AppendRank(b, r.spans)
	if r.spans == nil {
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(r.order)))
	for _, k := range r.order {
		n := r.nodes[k]
		b = spanset.AppendString(spanset.AppendString(spanset.AppendString(b, k), n.kind), n.name)
	}
	return b
}

// SpansOf reads what AppendSpans appended at the start of b: rank's
// regions with their spans, kinds and names only (for NewSpans), and the
// rest of b.
func SpansOf(rank int, b []byte) (*RankRegions, []byte, error) {
	r := &RankRegions{Rank: rank}
	var err error
	if r.spans, b, err = spanset.ReadRank(b); err != nil || r.spans == nil {
		return r, b, err
	}
	d := spanset.NewDecoder(b)
	n := d.Uvarint()
	r.nodes = map[string]*rankNode{}
	for i := uint64(0); i < n && d.Err() == nil; i++ {
		key, kind, name := d.String(), d.String(), d.String()
		r.nodes[key] = &rankNode{kind: kind, name: name}
		r.order = append(r.order, key)
	}
	if b, err = d.Rest(); err != nil {
		return nil, nil, err
	}
	return r, b, nil
}
