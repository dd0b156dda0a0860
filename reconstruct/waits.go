package reconstruct

import "strings"

// Wait states (Scalasca's names): what a rank waited for at a call, under
// measured weights (critpath's and ReplayMeasured's).
const (
	StateLateSender    = "late_sender"
	StateLateReceiver  = "late_receiver"
	StateNxN           = "wait_at_nxn"
	StateBarrier       = "wait_at_barrier"
	StateLateBroadcast = "late_broadcast"
	StateEarlyReduce   = "early_reduce"
	StateEarlyScan     = "early_scan"
	// StateBarrierCompletion and StateNxNCompletion: the time a member
	// spent in a barrier (an N×N collective that moves data) after the
	// first member left it.
	StateBarrierCompletion = "barrier_completion"
	StateNxNCompletion     = "nxn_completion"
)

// WaitClass says what a function's waits are, by its name.
type WaitClass uint8

const (
	// ClassBlockingSend and ClassBlockingRecv: calls whose wait states
	// are late receiver (the send) and late sender (the receive) by
	// themselves.
	ClassBlockingSend WaitClass = 1 << iota
	ClassBlockingRecv
	// ClassBarrier: MPI_Barrier, MPI_Ibarrier.
	ClassBarrier
	// ClassNxN: every member's result needs every member's contribution
	// (Scalasca's "wait at N×N": MPI_Allreduce, MPI_Allgather(v),
	// MPI_Alltoall, MPI_Reduce_scatter(_block) and their nonblocking
	// forms). Not MPI_Alltoallv and MPI_Alltoallw, whose members may
	// exchange with a few others only (a sparse Alltoallv does not make
	// each wait for all), nor the calls that make communicators, which
	// move no data: Scalasca leaves both out.
	ClassNxN
	// ClassOneToN and ClassNToOne: rooted collectives where the root
	// sends to all (late broadcast) or all send to the root (early
	// reduce).
	ClassOneToN
	ClassNToOne
	// ClassScan: MPI_Scan and MPI_Exscan (blocking), whose member r needs
	// the contributions of the members below it (early scan).
	ClassScan
)

// ClassifyWait returns the wait class of the MPI function name.
func ClassifyWait(name string) WaitClass {
	var c WaitClass
	base := strings.TrimSuffix(name, "_c")
	switch base {
	case "MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend":
		c |= ClassBlockingSend
	case "MPI_Recv", "MPI_Mrecv", "MPI_Sendrecv", "MPI_Sendrecv_replace":
		c |= ClassBlockingRecv
	case "MPI_Bcast", "MPI_Scatter", "MPI_Scatterv":
		c |= ClassOneToN
	case "MPI_Reduce", "MPI_Gather", "MPI_Gatherv":
		c |= ClassNToOne
	case "MPI_Scan", "MPI_Exscan":
		c |= ClassScan
	}
	if name == "MPI_Barrier" || name == "MPI_Ibarrier" {
		c |= ClassBarrier
	}
	n := strings.TrimPrefix(base, "MPI_")
	// MPI_Iallreduce is the nonblocking MPI_Allreduce.
	if nxnNames[n] || len(n) > 1 && n[0] == 'I' && nxnNames[strings.ToUpper(n[1:2])+n[2:]] {
		c |= ClassNxN
	}
	return c
}

var nxnNames = map[string]bool{
	"Allreduce": true, "Allgather": true, "Allgatherv": true, "Alltoall": true,
	"Reduce_scatter": true, "Reduce_scatter_block": true,
}

// CollectiveWaitState is the wait state of a member's wait at a
// collective of class c; data says some member sent or received a byte
// ("" for none: rooted collectives have their own, and an N×N collective
// that moves no data, a count of 0, makes no one wait for data, as
// Scalasca has it).
func CollectiveWaitState(c WaitClass, data bool) string {
	switch {
	case c&ClassBarrier != 0:
		return StateBarrier
	case c&ClassNxN != 0 && data:
		return StateNxN
	}
	return ""
}

// CollectiveCompletionState is the state of a member's time in a
// blocking collective of class c (data: it moves some) after the first
// member left it: Scalasca's Barrier Completion and N×N Completion ("" for
// none).
func CollectiveCompletionState(c WaitClass, data bool) string {
	switch {
	case c&ClassBarrier != 0:
		return StateBarrierCompletion
	case c&ClassNxN != 0 && data:
		return StateNxNCompletion
	}
	return ""
}

// CompletionWait is a member's completion time, leaving at x a blocking
// collective whose last member arrived at last and first member left at
// first: from the later of the two (an exit before the last arrival is
// clock error, clamped elsewhere) to x.
func CompletionWait(x, last, first int64) int64 { return max(0, x-max(first, last)) }

// ScanWaits calls add(j, ns) with the early-scan wait of each member j of
// a blocking MPI_Scan or MPI_Exscan, given by start and end in world rank
// order (the communicator's order when it follows the world's, as
// MPI_COMM_WORLD's and a split's without reordering keys): from its
// arrival to the last arrival of the members below it, at most its call.
func ScanWaits(start, end []int64, add func(j int, ns int64)) {
	var below int64
	for j := range start {
		if j > 0 {
			if w := min(end[j]-start[j], below-start[j]); w > 0 {
				add(j, w)
			}
		}
		if j == 0 || start[j] > below {
			below = start[j]
		}
	}
}
