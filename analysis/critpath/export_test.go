package critpath

import "github.com/mpitrace/mpitrace/analysis/fold"

// FoldLong folds p as a path of over bigFold vertices is folded (the
// merged level dropped after its count and folded again if taken).
func FoldLong(p *Path) *Folded {
	defer func(n int) { bigFold = n }(bigFold)
	bigFold = 0
	return Fold(p)
}

// FoldAll folds p at every level without giving up, each level's
// signatures made in full before it is folded: the references of
// TestFoldRule.
func FoldAll(p *Path) [numLevels]*Folded {
	var out [numLevels]*Folded
	st, err := p.StepPath().newSteps()
	if err != nil {
		panic(err)
	}
	for level := range numLevels {
		f := &Folded{Level: level, p: p, st: st}
		fn := st.fn
		switch level {
		case SameStep, SameCall:
			src := st.source(level)
			seq := make([]uint32, p.NumVertices())
			src.Fill(seq, 0)
			if err := src.close(); err != nil {
				panic(err)
			}
			f.sites = src.sites
			f.Nodes = fold.Find(seq)
			out[level] = f
			continue
		case Merged:
			fn, f.merged = merge(&st.fn, st.runs)
		}
		seq := make([]uint32, fn.len())
		for i := range seq {
			seq[i] = uint32(fn.at(i))
		}
		f.Nodes = fold.Find(seq)
		out[level] = f
	}
	return out
}
