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
	"Allreduce": true, "Allgather": true, "Allgatherv": true, "Alltoall": true,
	"Reduce_scatter": true, "Reduce_scatter_block": true,
}

// CollectiveWaitState is the wait state of a member's wait at a
// collective of class c that moves bytes a process (the latency model's
// measure: collBytes) ("" for none: rooted collectives have their own,
// and an N×N collective that moves no data, a count of 0, makes no one
// wait for data, as Scalasca has it).
func CollectiveWaitState(c WaitClass, bytes int64) string {
	switch {
	case c&ClassBarrier != 0:
		return StateBarrier
	case c&ClassNxN != 0 && bytes > 0:
		return StateNxN
	}
	return ""
}
