package critpath

import "github.com/mpitrace/mpitrace/analysis/fold"

// FoldLong folds p as a path of over bigFold vertices is folded (the
// merged level dropped after its count and folded again if taken).
func FoldLong(p *Path) *Folded {
	defer func(n int) { bigFold = n }(bigFold)
	bigFold = 0
	return Fold(p)
}

// FoldAll folds p at every level without giving up: the references of
// TestFoldRule.
func FoldAll(p *Path) [numLevels]*Folded {
	var out [numLevels]*Folded
	for level := range numLevels {
		out[level] = p.foldAt(new(fold.Finder), p.numberSteps(), level, make([]uint32, p.NumVertices()), -1)
	}
	return out
}
