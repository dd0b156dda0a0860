package critpath

import "github.com/mpitrace/mpitrace/analysis/fold"

// FoldAll folds p at every level without giving up: the references of
// TestFoldRule.
func FoldAll(p *Path) [numLevels]*Folded {
	var out [numLevels]*Folded
	for level := range numLevels {
		out[level] = p.foldAt(new(fold.Finder), p.numberSteps(), level, make([]uint32, p.NumVertices()), -1)
	}
	return out
}
