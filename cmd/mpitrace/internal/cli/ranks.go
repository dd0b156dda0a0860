package cli

import (
	"strconv"
	"strings"

	"github.com/mpitrace/mpitrace/analysis/render"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// parseRanks parses the values of a rank-selecting flag (dot --ranks, dump
// --rank): each a rank N, a range A-B, or a comma-separated list of them;
// a repeated flag adds to the set.
func parseRanks(flag string, values []string) (render.RankSet, error) {
	var ranges []render.RankRange
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			r, ok := parseRankItem(strings.TrimSpace(item))
			if !ok {
				return nil, flagErrorf("%s %q: want a rank N or a range A-B, or a list of them separated by commas (e.g. 0-3 or 0,2)", flag, v)
			}
			if r.Last < r.First {
				return nil, flagErrorf("%s %q: the range is empty (%d > %d)", flag, v, r.First, r.Last)
			}
			ranges = append(ranges, r)
		}
	}
	return render.NewRankSet(ranges...), nil
}

// parseRankItem parses "N" or "A-B" (decimal, no sign, no leading zeros).
func parseRankItem(s string) (render.RankRange, bool) {
	num := func(x string) (int, bool) {
		n, err := strconv.Atoi(x)
		return n, err == nil && n >= 0 && x == strconv.Itoa(n)
	}
	a, b, isRange := strings.Cut(s, "-")
	first, ok := num(a)
	if !ok {
		return render.RankRange{}, false
	}
	last := first
	if isRange {
		if last, ok = num(b); !ok {
			return render.RankRange{}, false
		}
	}
	return render.RankRange{First: first, Last: last}, true
}

// checkRanks fails with a usage error when the set names ranks the trace
// does not have.
func checkRanks(flag string, s render.RankSet, t *tracefmt.Trace) error {
	if s.Max() >= t.Size {
		return flagErrorf("%s %s: %s has ranks 0-%d", flag, s, t.Dir, t.Size-1)
	}
	return nil
}
