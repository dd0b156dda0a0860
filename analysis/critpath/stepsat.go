package critpath

import (
	"errors"
	"fmt"
	"math"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/reconstruct/taskgraph"
)

// StepsAt returns the steps at path vertices idx (ascending), read in one
// pass over the path that stops after the last: what a picture of the
// path needs of the few vertices it names.
func (sp *StepPath) StepsAt(idx []int) ([]reconstruct.ReplayStep, error) {
	out := make([]reconstruct.ReplayStep, 0, len(idx))
	if len(idx) == 0 {
		return out, nil
	}
	i, j := 0, 0
	err := sp.Steps(func(st *reconstruct.ReplayStep) error {
		for j < len(idx) && idx[j] == i {
			out = append(out, *st)
			j++
		}
		i++
		if j == len(idx) {
			return errStepsRead
		}
		return nil
	})
	if err != nil && err != errStepsRead {
		return nil, err
	}
	if j < len(idx) {
		return nil, fmt.Errorf("critpath: path vertex %d asked of a path of %d (or not in order)", idx[j], i)
	}
	return out, nil
}

var errStepsRead = errors.New("critpath: steps read")

// StepPath returns the path f folds.
func (f *Folded) StepPath() *StepPath { return f.st.sp }

// Origin is, for a path the replay found, the time a picture of the graph
// measures rank's operations from (the end of its MPI_Init, or its first
// operation's start) and the graph id of its first operation; ok is false
// for the path of a graph, which the graph says.
func (sp *StepPath) Origin(rank int) (origin int64, firstOp taskgraph.NodeID, ok bool) {
	if sp.res == nil {
		return 0, taskgraph.None, false
	}
	return sp.res.Origin(rank), sp.res.FirstOp(rank), true
}

// EachStep calls fn for every step of the fold, in path order, with its
// path vertices [first, end), its weight (as StepWeight) and the lowest
// and highest rank of its vertices (-1 for a shared one), in one pass over the
// path: what a picture of the fold adds up, without a table of the
// steps.
func (f *Folded) EachStep(fn func(i, first, end int, w float64, lo, hi int)) error {
	n := f.Steps()
	if n == 0 {
		return nil
	}
	step, v := 0, 0
	first, end := f.StepVertices(0)
	var sw float64
	lo, hi := math.MaxInt, math.MinInt
	err := f.StepPath().Steps(func(st *reconstruct.ReplayStep) error {
		if v > 0 {
			sw += HopWeight(st)
		}
		if st.Kind == taskgraph.KindCollective {
			sw += st.Weight
		}
		lo, hi = min(lo, st.Rank), max(hi, st.Rank)
		v++
		if v < end {
			return nil
		}
		fn(step, first, end, sw, lo, hi)
		sw, lo, hi = 0, math.MaxInt, math.MinInt
		if step++; step == n {
			return errStepsRead
		}
		first, end = f.StepVertices(step)
		return nil
	})
	if err == errStepsRead {
		err = nil
	}
	if err == nil && step < n {
		err = fmt.Errorf("critpath: the path ended at step %d of the fold's %d", step, n)
	}
	return err
}

// StepLabelOf names step i, whose first vertex is on rank (-1: a shared
// vertex, which the name leaves out): "MPI_Irecv 1", "MPI_Allreduce".
func (f *Folded) StepLabelOf(i, rank int) string {
	first, _ := f.StepVertices(i)
	return f.label(first, rank)
}
