package reconstruct

import (
	"slices"
	"strings"
)

// blockingName maps a collective's name to its blocking, small-count form:
// MPI_Iallreduce_c → MPI_Allreduce.
func blockingName(fn string) string {
	fn = strings.TrimSuffix(fn, "_c")
	if strings.HasPrefix(fn, "MPI_I") && len(fn) > 5 {
		b := "MPI_" + strings.ToUpper(fn[5:6]) + fn[6:]
		if _, ok := collMeasure[b]; ok {
			return b
		}
	}
	return fn
}

// How the bytes per process of a collective derive from its members'
// calls (the recorder's bytes and rbytes, docs/recording.md).
const (
	measureNone      = iota + 1 // 0 (MPI_Barrier, communicator constructors)
	measureMaxBuffer            // the largest buffer: max over members of max(bytes, rbytes)
	measureMaxSend              // max over members of bytes
	measureMeanSend             // mean over members of bytes: each member's block
	measureMeanRecv             // mean over members of rbytes
	measureMeanBlock            // mean over members of bytes / procs: an all-to-all block
)

// collMeasure follows the latency model's calibration (recorder/calibrate:
// "the per-process block the call moves"): the buffer for MPI_Bcast,
// MPI_Reduce and MPI_Allreduce, the block each process sends or receives
// for gathers, scatters and all-to-alls, 0 for MPI_Barrier.
var collMeasure = map[string]int{
	"MPI_Barrier":              measureNone,
	"MPI_Bcast":                measureMaxBuffer,
	"MPI_Reduce":               measureMaxSend,
	"MPI_Allreduce":            measureMaxSend,
	"MPI_Scan":                 measureMaxSend,
	"MPI_Exscan":               measureMaxSend,
	"MPI_Reduce_scatter":       measureMaxSend,
	"MPI_Reduce_scatter_block": measureMaxSend,
	"MPI_Gather":               measureMeanSend,
	"MPI_Gatherv":              measureMeanSend,
	"MPI_Allgather":            measureMeanSend,
	"MPI_Allgatherv":           measureMeanSend,
	"MPI_Scatter":              measureMeanRecv,
	"MPI_Scatterv":             measureMeanRecv,
	"MPI_Alltoall":             measureMeanBlock,
	"MPI_Alltoallv":            measureMeanBlock,
	"MPI_Alltoallw":            measureMeanBlock,
}

// movesData reports whether some member of an instance sent or received
// a byte (the wait states' "moves data": collBytes, a mean, may round to
// 0 when few do).
func movesData(recs []*partRec) bool {
	return slices.ContainsFunc(recs, (*partRec).movesData)
}

// movesData reports whether the call sent or received a byte.
func (pr *partRec) movesData() bool { return pr.bytes > 0 || pr.rbytes > 0 }

// collBytes returns the bytes per process of a collective instance.
func collBytes(fn string, recs []*partRec, procs int) int64 {
	if commCollectives[fn] {
		return 0
	}
	m, ok := collMeasure[blockingName(fn)]
	if !ok {
		m = measureMaxBuffer
	}
	var mx, sum uint64
	for _, pr := range recs {
		switch m {
		case measureMaxBuffer:
			mx = max(mx, pr.bytes, pr.rbytes)
		case measureMaxSend:
			mx = max(mx, pr.bytes)
		case measureMeanSend:
			sum += pr.bytes
		case measureMeanRecv:
			sum += pr.rbytes
		case measureMeanBlock:
			sum += pr.bytes / uint64(max(procs, 1))
		}
	}
	switch m {
	case measureMaxBuffer, measureMaxSend:
		return int64(min(mx, 1<<62))
	case measureMeanSend, measureMeanRecv, measureMeanBlock:
		n := uint64(len(recs))
		return int64(min((sum+n/2)/n, 1<<62))
	}
	return 0
}
