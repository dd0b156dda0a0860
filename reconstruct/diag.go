package reconstruct

import (
	"errors"
	"fmt"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// Diagnostic codes of the reconstruction, in addition to the reader's
// (tracefmt.Code*). docs/reconstruction.md lists them with their
// severities.
const (
	// CodeUnmatchedSend: a message no receive matched. Data loss when the
	// receiving rank's log is incomplete, a warning when that rank ended
	// early (MPI_Abort, a signal), else an error.
	CodeUnmatchedSend = "unmatched_send"
	// CodeUnmatchedRecv: a completed receive no send matched. Data loss
	// when the sending rank's log is incomplete, a warning when that rank
	// ended early, else an error.
	CodeUnmatchedRecv = "unmatched_recv"
	// CodeUnknownRequest: a request completed, started or freed that was
	// never created (error). Same code as tracefmt.Validate's.
	CodeUnknownRequest = tracefmt.CodeUnknownRequest
	// CodeRequestReused: a request id created again while live (error).
	CodeRequestReused = tracefmt.CodeRequestReused
	// CodeUndefinedComm: a communicator index no CommNew defined (error).
	CodeUndefinedComm = tracefmt.CodeUndefinedComm
	// CodeBadPeer: a destination or source that is not a world rank
	// (error).
	CodeBadPeer = "bad_peer"
	// CodeUnresolvedWildcard: a wildcard receive whose status has no
	// usable source or tag (error); no message edge.
	CodeUnresolvedWildcard = "unresolved_wildcard"
	// CodeStatusMismatch: a receive's status names another source or tag
	// than the receive asked for (warning); the requested envelope is used.
	CodeStatusMismatch = "status_mismatch"
	// CodeMessageSize: the receiver's status counts other bytes than the
	// sender sent (warning); the edge carries the sender's bytes.
	CodeMessageSize = "message_size_mismatch"
	// CodeMessageTruncated: the sender sent more bytes than the receive
	// could hold (error: MPI_ERR_TRUNCATE).
	CodeMessageTruncated = "message_truncated"
	// CodeCollectiveCount: members of a communicator made different
	// numbers of collective calls on it. Data loss when a member's log is
	// incomplete, a warning when it ended early, else an error.
	CodeCollectiveCount = "collective_count_mismatch"
	// CodeCollectiveMismatch: the k-th collective on a communicator is not
	// the same call (function or root) on every member (error).
	CodeCollectiveMismatch = "collective_mismatch"
	// CodeNotMember: a rank called a collective on a communicator whose
	// member list does not include it (error).
	CodeNotMember = "collective_not_member"
	// CodeCommMembers: ranks describe one communicator id with different
	// member lists (error); the lowest rank's list is used.
	CodeCommMembers = "comm_members_mismatch"
	// CodeNegativeCompute: calls that overlap on a rank's timeline (several
	// threads, or a clock step): computation edges clamped to 0 (warning,
	// one per rank).
	CodeNegativeCompute = "negative_compute"
	// CodeMissingInit: a rank without an MPI_Init event (warning): its first
	// operation hangs off the shared MPI_Init with weight 0.
	CodeMissingInit = "missing_init"
	// CodeMissingFinalize: a complete log without MPI_Finalize (warning):
	// its last operation leads to the shared MPI_Finalize with weight 0.
	CodeMissingFinalize = "missing_finalize"
	// CodeTruncatedRank: a rank whose log stops early (no end record, an
	// abnormal end, lost blocks) and has no MPI_Finalize (data loss).
	CodeTruncatedRank = "truncated_rank"
	// CodeDuplicateInit: a second MPI_Init or MPI_Finalize (warning); it is
	// an ordinary operation.
	CodeDuplicateInit = "duplicate_init"
	// CodeOutsideInit: calls before MPI_Init or after MPI_Finalize, which
	// are not vertices (info, one per rank).
	CodeOutsideInit = "outside_init_finalize"
	// CodeRequestPending: requests still active at the end of a rank's log
	// (info, one per rank).
	CodeRequestPending = "request_not_completed"
	// CodeRequestFreed: a receive request freed with MPI_Request_free
	// before completion: its message has no edge (info).
	CodeRequestFreed = "request_freed"
	// CodeCancelled: requests whose status says they were cancelled; they
	// carry no message (info, one per rank).
	CodeCancelled = "cancelled_request"
	// CodeBadStart: MPI_Start of a request that is not persistent or is
	// already active (error).
	CodeBadStart = "bad_start"
	// CodeLostEvents: a place in a rank's log where the reader lost events
	// (a damaged block), and how the calls after it were placed (data
	// loss, one per place; see "Lost events" in docs/reconstruction.md).
	CodeLostEvents = "lost_events"
	// CodeUnplacedCalls: calls near lost events that could not be placed
	// in the matching order: vertices without messages or collective
	// partners (data loss, one per place that has them).
	CodeUnplacedCalls = "unplaced_calls"
)

// HasDataLoss reports whether d holds data-loss diagnostics: the graph is
// consistent but parts of the run are missing. mpitrace's --strict turns
// them into a failure.
func HasDataLoss(d *tracefmt.Diagnostics) bool {
	return d != nil && d.Count(tracefmt.DataLoss) > 0
}

// HasErrors reports whether d holds error diagnostics: the trace is
// inconsistent and analyses of the graph may be wrong.
func HasErrors(d *tracefmt.Diagnostics) bool {
	return d != nil && d.Count(tracefmt.Error) > 0
}

// ErrDiagnostics is wrapped by the error Check returns.
var ErrDiagnostics = errors.New("trace diagnostics")

// Check returns an error wrapping ErrDiagnostics when d holds errors, or,
// with strict, data loss; nil otherwise. The message counts them, e.g.
// "trace diagnostics: 2 errors, 1 data loss (unmatched_send 3)".
func Check(d *tracefmt.Diagnostics, strict bool) error {
	if HasErrors(d) || strict && HasDataLoss(d) {
		return fmt.Errorf("%w: %s", ErrDiagnostics, d.Summary())
	}
	return nil
}

// diagMax is how many diagnostics of one code a table stores with their
// message; beyond it they are only counted (tracefmt.Diagnostics stores
// 1000), so formatting the message is skipped.
const diagMax = 1000

func addDiag(t *tracefmt.Diagnostics, sev tracefmt.Severity, code string, rank int, file string, format string, args ...any) {
	addDiagAt(t, sev, code, rank, file, -1, format, args...)
}

// addDiagAt is addDiag naming a block of the file (-1: none).
func addDiagAt(t *tracefmt.Diagnostics, sev tracefmt.Severity, code string, rank int, file string, block int, format string, args ...any) {
	msg := ""
	if t.CountCode(code) < diagMax {
		msg = fmt.Sprintf(format, args...)
	}
	t.Add(tracefmt.Diagnostic{Severity: sev, Code: code, Rank: rank, File: file, Block: block, Offset: -1, Message: msg})
}
