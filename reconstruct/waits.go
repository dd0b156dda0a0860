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
	// (Scalasca's "wait at N×N").
	ClassNxN
	// ClassOneToN and ClassNToOne: rooted collectives where the root
	// sends to all (late broadcast) or all send to the root (early
	// reduce).
	ClassOneToN
	ClassNToOne
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
	"Allreduce": true, "Allgather": true, "Allgatherv": true, "Alltoall": true, "Alltoallv": true, "Alltoallw": true,
	"Reduce_scatter": true, "Reduce_scatter_block": true,
	"Comm_dup": true, "Comm_dup_with_info": true, "Comm_split": true, "Comm_split_type": true, "Comm_create": true,
	"Cart_create": true, "Cart_sub": true, "Graph_create": true, "Dist_graph_create": true, "Dist_graph_create_adjacent": true,
	"Intercomm_merge": true,
}

// CollectiveWaitState is the wait state of a member's wait at a
// collective of class c ("" for none: rooted collectives have their own).
func CollectiveWaitState(c WaitClass) string {
	switch {
	case c&ClassBarrier != 0:
		return StateBarrier
	case c&ClassNxN != 0:
		return StateNxN
	}
	return ""
}
