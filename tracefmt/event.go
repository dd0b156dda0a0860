package tracefmt

import (
	"slices"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Completion is one record of a Complete event's list: a request the call
// completed and the status MPI returned for it (spec.CompletionFields).
type Completion struct {
	Req   uint64 // field req: the request id
	Src   int64  // field src: status source, world rank
	Tag   int64  // field stag: status tag
	Bytes uint64 // field sbytes: bytes received according to the status
	Flags uint64 // field flags: spec.CompletionCancelled, ...
}

// Event is one decoded event.
//
// A RankReader reuses one Event (and its lists' storage) per thread: the
// pointer returned by RankReader.Event is valid until the next call to Next.
// Use Clone to keep an event.
//
// The scalar arguments are kept in F, indexed by spec.Field, so a field means
// the same thing in every kind that has it. Fields the kind does not have are
// zero. Unsigned (uvarint) fields are stored as their two's complement bit
// pattern, so a value above math.MaxInt64 reads back unchanged through the
// unsigned accessors (Bytes, Req, ...) or uint64(F[f]).
type Event struct {
	Kind   spec.Kind
	Thread int // recorder thread index (0: the thread that called MPI_Init first)
	// Start is the absolute start time in ns: the previous event's end (of
	// the same thread) plus the gap. End is Start + Dur, or Start for kinds
	// without a duration.
	Start, End int64
	F          [spec.NumFields]int64

	// The event's list, per spec.Kinds[Kind].List; the others are empty.
	Ranks       []int64      // spec.ListRanks: world ranks
	Reqs        []uint64     // spec.ListReqs: request ids
	Completions []Completion // spec.ListCompletions
	Values      []uint64     // spec.ListValues: kind-defined values
}

// Name returns the kind's text-form name ("Send"), or "kind N".
func (e *Event) Name() string { return kindName(uint64(e.Kind)) }

// Has reports whether the event's kind has field f.
func (e *Event) Has(f spec.Field) bool {
	if e.Kind >= spec.NumKinds {
		return false
	}
	return slices.Contains(kindTab[e.Kind].fields, f)
}

// Get returns field f as stored (an unsigned field as its bit pattern).
func (e *Event) Get(f spec.Field) int64 { return e.F[f] }

// Set sets field f.
func (e *Event) Set(f spec.Field, v int64) { e.F[f] = v }

// SetUint sets an unsigned field f.
func (e *Event) SetUint(f spec.Field, v uint64) { e.F[f] = int64(v) }

// Gap is the time from the previous event's end (or the block's base) to Start.
func (e *Event) Gap() int64 { return e.F[spec.Gap] }

// Dur is the duration in ns (End - Start).
func (e *Event) Dur() int64 { return e.F[spec.Dur] }

// Fn is the string id of the MPI function's name (see Strings.Name).
func (e *Event) Fn() uint64 { return uint64(e.F[spec.Fn]) }

// Peer is the destination or requested source, a world rank or a sentinel
// (spec.AnySource, spec.ProcNull, spec.Undefined).
func (e *Event) Peer() int64 { return e.F[spec.Peer] }

// Tag is the message tag (spec.AnyTag for a wildcard receive).
func (e *Event) Tag() int64 { return e.F[spec.Tag] }

// Comm is the rank-local communicator index.
func (e *Event) Comm() uint64 { return uint64(e.F[spec.Comm]) }

// Bytes is count × MPI_Type_size of the call's buffer.
func (e *Event) Bytes() uint64 { return uint64(e.F[spec.Bytes]) }

// Req is the rank-unique request id (0: none).
func (e *Event) Req() uint64 { return uint64(e.F[spec.Req]) }

// Src is the source world rank from the status.
func (e *Event) Src() int64 { return e.F[spec.Src] }

// STag is the tag from the status.
func (e *Event) STag() int64 { return e.F[spec.STag] }

// SBytes is the byte count from the status.
func (e *Event) SBytes() uint64 { return uint64(e.F[spec.SBytes]) }

// RPeer is the requested source of a Sendrecv's receive.
func (e *Event) RPeer() int64 { return e.F[spec.RPeer] }

// RTag is the requested tag of a Sendrecv's receive.
func (e *Event) RTag() int64 { return e.F[spec.RTag] }

// RBytes is the receive capacity (Sendrecv) or bytes received (collective).
func (e *Event) RBytes() uint64 { return uint64(e.F[spec.RBytes]) }

// Root is a rooted collective's root world rank, or a root sentinel.
func (e *Event) Root() int64 { return e.F[spec.Root] }

// Flag is the outcome flag of a probe or test.
func (e *Event) Flag() uint64 { return uint64(e.F[spec.Flag]) }

// Parent is the communicator index a new communicator was derived from.
func (e *Event) Parent() uint64 { return uint64(e.F[spec.Parent]) }

// GID is a communicator's global id.
func (e *Event) GID() uint64 { return uint64(e.F[spec.GID]) }

// Remote is the size of an intercommunicator's remote group.
func (e *Event) Remote() uint64 { return uint64(e.F[spec.Remote]) }

// Phase is the clock synchronisation phase (spec.PhaseInit, spec.PhaseFinalize).
func (e *Event) Phase() uint64 { return uint64(e.F[spec.Phase]) }

// Offset is the ns to add to this rank's clock to get rank 0's.
func (e *Event) Offset() int64 { return e.F[spec.Offset] }

// OffsetErr is the uncertainty of Offset in ns (field err).
func (e *Event) OffsetErr() uint64 { return uint64(e.F[spec.Err]) }

// Flags is the kind-specific bit set.
func (e *Event) Flags() uint64 { return uint64(e.F[spec.Flags]) }

// Count is the generic count field.
func (e *Event) Count() uint64 { return uint64(e.F[spec.Count]) }

// Reset clears e, keeping the lists' storage.
func (e *Event) Reset() {
	ranks, reqs, comps, vals := e.Ranks[:0], e.Reqs[:0], e.Completions[:0], e.Values[:0]
	*e = Event{Ranks: ranks, Reqs: reqs, Completions: comps, Values: vals}
}

// Clone returns a deep copy of e that shares no storage with it. Empty lists
// are nil in the copy.
func (e *Event) Clone() Event {
	c := *e
	c.Ranks = cloneOrNil(e.Ranks)
	c.Reqs = cloneOrNil(e.Reqs)
	c.Completions = cloneOrNil(e.Completions)
	c.Values = cloneOrNil(e.Values)
	return c
}

// CopyFrom makes e a deep copy of src, reusing e's list storage.
func (e *Event) CopyFrom(src *Event) {
	ranks := append(e.Ranks[:0], src.Ranks...)
	reqs := append(e.Reqs[:0], src.Reqs...)
	comps := append(e.Completions[:0], src.Completions...)
	vals := append(e.Values[:0], src.Values...)
	*e = *src
	e.Ranks, e.Reqs, e.Completions, e.Values = ranks, reqs, comps, vals
}

func cloneOrNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

// Equal reports whether e and o are the same event: kind, thread, times,
// every field and the lists (an empty list equals a nil one).
func (e *Event) Equal(o *Event) bool {
	return e.Kind == o.Kind && e.Thread == o.Thread && e.Start == o.Start && e.End == o.End &&
		e.F == o.F && slices.Equal(e.Ranks, o.Ranks) && slices.Equal(e.Reqs, o.Reqs) &&
		slices.Equal(e.Completions, o.Completions) && slices.Equal(e.Values, o.Values)
}
