package critpath

import (
	"errors"
	"fmt"

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
