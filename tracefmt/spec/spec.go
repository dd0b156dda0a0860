// Package spec defines the mpitrace event kinds once, as data.
//
// The table below is the single source of truth for the binary layout of
// every event: the Go reader and writer walk it, the C recorder's encoder
// functions are generated from it (CHeader, written to recorder/c/mpit_events.h),
// and docs/format.md describes it. Kinds and fields are only ever appended;
// a number, once used, is never reused or re-purposed. Each format version
// reads a prefix of the table (see Versions).
package spec

import "strconv"

// Kind identifies an event kind. It is the first varint of every event.
type Kind uint8

// Field identifies one scalar argument an event can carry. Every event keeps
// its arguments in an array indexed by Field, so a field means the same thing
// in every kind that has it.
type Field uint8

// Encoding is how one field is stored on disk.
type Encoding uint8

const (
	// Uvarint is an unsigned LEB128 varint.
	Uvarint Encoding = iota + 1
	// Svarint is a zigzag-encoded signed varint.
	Svarint
)

// List is the shape of the variable-length list an event may end with.
type List uint8

const (
	// NoList: the event has only scalar fields.
	NoList List = iota
	// ListRanks is a count followed by that many world ranks, each stored as
	// the zigzag difference from the previous one (the first from 0).
	ListRanks
	// ListReqs is a count followed by that many request ids (uvarint).
	ListReqs
	// ListCompletions is a count followed by that many completion records,
	// each the fields CompletionFields in order.
	ListCompletions
	// ListValues is a count followed by that many unsigned values (uvarint)
	// whose meaning the kind defines (version 3).
	ListValues
)

// Fields. Append only.
const (
	FieldNone Field = iota
	// Gap is the time in nanoseconds from the end of the previous event of
	// the same block (for the block's first event, from the block's base
	// time) to this event's start.
	Gap
	// Dur is the event's duration in nanoseconds.
	Dur
	// Fn is the string id of the MPI function's name.
	Fn
	// Peer is a world rank: destination of a send, requested source of a
	// receive or probe. Negative values are the sentinels AnySource and ProcNull.
	Peer
	// Tag is a message tag; AnyTag for a wildcard receive.
	Tag
	// Comm is the rank-local communicator index (CommWorld, CommSelf, or one
	// defined by an earlier CommNew event); CommNull is 0.
	Comm
	// Bytes is count × MPI_Type_size of the call's (send or posted receive) buffer.
	Bytes
	// Req is the rank-unique request id (0: none). Ids are never reused
	// within a rank, unlike MPI request handles.
	Req
	// Src is the source world rank read from the completed receive's status.
	Src
	// STag is the tag read from the completed receive's status.
	STag
	// SBytes is the number of bytes the status says were received.
	SBytes
	// RPeer is the requested source of the receive half of a Sendrecv.
	RPeer
	// RTag is the requested tag of the receive half of a Sendrecv.
	RTag
	// RBytes is the receive capacity (Sendrecv) or the bytes this rank
	// receives in a collective.
	RBytes
	// Root is the world rank of a rooted collective's root, RootNone otherwise.
	Root
	// Flag is the outcome flag of a probe or test (1 true, 0 false).
	Flag
	// Parent is the communicator index a new communicator was derived from.
	Parent
	// GID is the communicator's global id: equal on every member, computed
	// without communication from the parent's id and the creation sequence.
	GID
	// Remote is, for an intercommunicator, how many of the listed ranks (the
	// last ones) form the remote group; 0 for an intracommunicator.
	Remote
	// Phase says which clock synchronisation this is (PhaseInit, PhaseFinalize).
	Phase
	// Offset is the nanoseconds to add to this rank's clock to get rank 0's.
	Offset
	// Err is the uncertainty of Offset in nanoseconds (half the best round trip).
	Err
	// Flags is a bit set whose meaning depends on the kind (see CompletionFlag).
	Flags
	// Count is a generic count (e.g. events dropped, a loop's iterations).
	Count
	// File is the string id of a source file's path, as the instrumenter
	// saw it (version 3).
	File
	// Line is a 1-based source line (version 3).
	Line
	// Col is a 1-based source column, in bytes (version 3).
	Col
	// Iter is an iteration's 1-based number within its loop execution
	// (version 3).
	Iter
	// Name is the string id of a name: a region, a Kokkos kernel or fence,
	// a profile section or event, a View's label, a metadata key (version 4).
	Name
	// Value is the string id of a declared metadata value (version 4).
	Value
	// Type is a kernel's type: KernelFor, KernelReduce, KernelScan,
	// KernelFence (version 4).
	Type
	// Dev is the Kokkos device id of a kernel or fence, as Kokkos passed it:
	// the top 8 bits are the device type, the next 7 the device, the low 17
	// the execution space instance (version 4).
	Dev
	// Space is the string id of a Kokkos memory space's name (the
	// destination's, for a deep copy) (version 4).
	Space
	// SrcSpace is the string id of a deep copy's source memory space (version 4).
	SrcSpace
	// SrcName is the string id of a deep copy's source View label (version 4).
	SrcName
	// Sec is a profile section's id, as the recorder gave it (version 4).
	Sec
	// Site is the call site's id in the rank's call-site table (its Site
	// event), 0 when unknown (version 5).
	Site
	// Addr is an address in the recorded process: a call site's return
	// address, the start of a mapping (version 5).
	Addr
	// Size is a mapping's length in bytes (version 5).
	Size
	// FileOff is the offset in its file of a mapping's first byte (version 5).
	FileOff
	// Path is the string id of a mapped file's path (version 5).
	Path
	// BuildID is the string id of a mapped file's GNU build id in lower-case
	// hex, "" when the file has none (version 5).
	BuildID

	NumFields // not a field: the number of fields
)

// Sentinel values of the rank-valued fields.
const (
	AnySource = -1 // MPI_ANY_SOURCE
	ProcNull  = -2 // MPI_PROC_NULL
	RootNone  = -3 // collective without a root
	RootSelf  = -4 // MPI_ROOT (intercommunicator root side)
	AnyTag    = -1 // MPI_ANY_TAG
	Undefined = -5 // a rank that could not be translated to a world rank
)

// Rank-local communicator indices that every rank has.
const (
	CommNull  = 0
	CommWorld = 1
	CommSelf  = 2
)

// Clock synchronisation phases.
const (
	PhaseInit     = 0
	PhaseFinalize = 1
)

// Loop end flags (the Flags field of a LoopEnd event).
const (
	// LoopUnwound: the loop did not reach its end marker; the recorder
	// closed it when it found the thread outside the loop (longjmp, thread
	// or program end) and count is the iterations begun until then.
	LoopUnwound = 1 << 0
	// LoopUncounted: the loop's iterations ran on other threads (an OpenMP
	// worksharing loop) and count is 0, not the iterations.
	LoopUncounted = 1 << 1
)

// Kernel types (the Type field of a KernelBegin event).
const (
	KernelFor    = 1 // Kokkos parallel_for
	KernelReduce = 2 // Kokkos parallel_reduce
	KernelScan   = 3 // Kokkos parallel_scan
	KernelFence  = 4 // a Kokkos fence
)

// End flags of regions, kernels and deep copies (the Flags field of
// RegionEnd, KernelEnd, CopyEnd).
const (
	// EndUnwound: the recorder closed the region, kernel or copy itself,
	// at the end of its thread or of the program, at Kokkos' finalisation,
	// or because an end further out came first.
	EndUnwound = 1 << 0
	// EndUnmatched (RegionEnd only): a pop without an open region; it closes
	// nothing.
	EndUnmatched = 1 << 1
)

// Dual view flags (the Flags field of a DualView event).
const (
	DualViewModify = 1 << 0 // modify (else sync)
	DualViewDevice = 1 << 1 // on the device side (else host)
)

// Completion flags (the Flags field of a completion record).
const (
	// CompletionCancelled: the status says the request was cancelled.
	CompletionCancelled = 1 << 0
	// CompletionPersistent: the request is persistent and stays allocated.
	CompletionPersistent = 1 << 1
	// CompletionError: the status carries an error code other than MPI_SUCCESS.
	CompletionError = 1 << 2
)

// CompletionFields are the fields of one completion record, in order.
var CompletionFields = []Field{Req, Src, STag, SBytes, Flags}

// Kinds. Append only; experimental kinds go at 200 and above.
const (
	KindNone Kind = iota
	Call
	Send
	Recv
	Irecv
	Sendrecv
	Probe
	Complete
	Coll
	CommNew
	CommFree
	Start
	ReqFree
	ClockSync
	LoopBegin
	LoopEnd
	IterBegin
	IterEnd
	RegionBegin
	RegionEnd
	KernelBegin
	KernelEnd
	CopyBegin
	CopyEnd
	Alloc
	Free
	SectionBegin
	SectionEnd
	Mark
	Meta
	DualView
	SiteDef
	Map

	NumKinds // not a kind: one more than the highest kind
)

// FieldSpec describes one field: its name in the text form and its encoding.
type FieldSpec struct {
	Name string
	Enc  Encoding
	// Rank is true for fields holding a world rank (or a rank sentinel).
	Rank bool
	// Str is true for fields holding a string id: the text form shows the
	// string.
	Str bool
	// Hex is true for unsigned fields the text form shows in hexadecimal
	// (0x...): addresses and file offsets.
	Hex bool
	Doc string
}

// Fields describes every field, indexed by Field.
var Fields = [NumFields]FieldSpec{
	Gap:      {Name: "gap", Enc: Svarint, Doc: "ns from the previous event's end (or block base) to this event's start"},
	Dur:      {Name: "dur", Enc: Uvarint, Doc: "duration in ns"},
	Fn:       {Name: "fn", Enc: Uvarint, Str: true, Doc: "string id of the MPI function name"},
	Peer:     {Name: "peer", Enc: Svarint, Rank: true, Doc: "destination or requested source, world rank"},
	Tag:      {Name: "tag", Enc: Svarint, Doc: "tag (-1: MPI_ANY_TAG)"},
	Comm:     {Name: "comm", Enc: Uvarint, Doc: "rank-local communicator index"},
	Bytes:    {Name: "bytes", Enc: Uvarint, Doc: "count × MPI_Type_size"},
	Req:      {Name: "req", Enc: Uvarint, Doc: "rank-unique request id, 0 for none"},
	Src:      {Name: "src", Enc: Svarint, Rank: true, Doc: "status source, world rank"},
	STag:     {Name: "stag", Enc: Svarint, Doc: "status tag"},
	SBytes:   {Name: "sbytes", Enc: Uvarint, Doc: "bytes received according to the status"},
	RPeer:    {Name: "rpeer", Enc: Svarint, Rank: true, Doc: "requested source of Sendrecv's receive, world rank"},
	RTag:     {Name: "rtag", Enc: Svarint, Doc: "requested tag of Sendrecv's receive"},
	RBytes:   {Name: "rbytes", Enc: Uvarint, Doc: "receive capacity (Sendrecv) or bytes received (collective)"},
	Root:     {Name: "root", Enc: Svarint, Rank: true, Doc: "root world rank, or a root sentinel"},
	Flag:     {Name: "flag", Enc: Uvarint, Doc: "outcome of a probe or test"},
	Parent:   {Name: "parent", Enc: Uvarint, Doc: "communicator index of the parent"},
	GID:      {Name: "gid", Enc: Uvarint, Doc: "global communicator id, equal on all members"},
	Remote:   {Name: "remote", Enc: Uvarint, Doc: "size of the remote group of an intercommunicator"},
	Phase:    {Name: "phase", Enc: Uvarint, Doc: "0 at MPI_Init, 1 at MPI_Finalize"},
	Offset:   {Name: "offset", Enc: Svarint, Doc: "ns to add to the local clock to get rank 0's"},
	Err:      {Name: "err", Enc: Uvarint, Doc: "uncertainty of offset in ns"},
	Flags:    {Name: "flags", Enc: Uvarint, Doc: "kind-specific bits"},
	Count:    {Name: "count", Enc: Uvarint, Doc: "a count"},
	File:     {Name: "file", Enc: Uvarint, Str: true, Doc: "string id of a source file's path"},
	Line:     {Name: "line", Enc: Uvarint, Doc: "1-based source line"},
	Col:      {Name: "col", Enc: Uvarint, Doc: "1-based source column in bytes"},
	Iter:     {Name: "iter", Enc: Uvarint, Doc: "1-based iteration number within the loop execution"},
	Name:     {Name: "name", Enc: Uvarint, Str: true, Doc: "string id of a name (region, kernel, section, label, metadata key)"},
	Value:    {Name: "value", Enc: Uvarint, Str: true, Doc: "string id of a metadata value"},
	Type:     {Name: "type", Enc: Uvarint, Doc: "kernel type: 1 for, 2 reduce, 3 scan, 4 fence"},
	Dev:      {Name: "dev", Enc: Uvarint, Doc: "Kokkos device id: type << 24 | device << 17 | instance"},
	Space:    {Name: "space", Enc: Uvarint, Str: true, Doc: "string id of a memory space (a copy's destination)"},
	SrcSpace: {Name: "srcspace", Enc: Uvarint, Str: true, Doc: "string id of a deep copy's source memory space"},
	SrcName:  {Name: "srcname", Enc: Uvarint, Str: true, Doc: "string id of a deep copy's source label"},
	Sec:      {Name: "sec", Enc: Uvarint, Doc: "profile section id"},
	Site:     {Name: "site", Enc: Uvarint, Doc: "call-site id in the rank's call-site table, 0: unknown"},
	Addr:     {Name: "addr", Enc: Uvarint, Hex: true, Doc: "an address in the recorded process (return address, mapping start)"},
	Size:     {Name: "size", Enc: Uvarint, Doc: "a mapping's length in bytes"},
	FileOff:  {Name: "fileoff", Enc: Uvarint, Hex: true, Doc: "file offset of a mapping's first byte"},
	Path:     {Name: "path", Enc: Uvarint, Str: true, Doc: "string id of a mapped file's path"},
	BuildID:  {Name: "buildid", Enc: Uvarint, Str: true, Doc: "string id of a mapped file's GNU build id in hex, empty if none"},
}

// KindSpec describes one event kind.
type KindSpec struct {
	Name string
	// Fields are the scalar fields in on-disk order.
	Fields []Field
	// List is the list that follows the scalar fields, if any.
	List List
	// IsCall is true when the event is one MPI call (it has Fn, Gap and Dur).
	IsCall bool
	// Since is the first format version that has this kind.
	Since uint16
	// Grown records the fields appended to the kind after its first
	// version: before version Grown[i].Since the kind has only its first
	// Grown[i].N fields. Fields holds the current layout.
	Grown []Growth
	Doc   string
}

// Growth is one version's addition of fields to a kind (see KindSpec.Grown).
type Growth struct {
	Since uint16
	N     int
}

// FieldsAt returns the kind's scalar fields in format version v, in
// on-disk order: a prefix of Fields.
func (k *KindSpec) FieldsAt(v uint16) []Field {
	n := len(k.Fields)
	for _, g := range k.Grown {
		if v < g.Since {
			n = min(n, g.N)
		}
	}
	return k.Fields[:n]
}

// callHead is the prefix of every call event.
var callHead = []Field{Fn, Gap, Dur}

// call returns a call kind's fields: the head, rest, then (version 5) the
// call site.
func call(rest ...Field) []Field {
	return append(append(append([]Field{}, callHead...), rest...), Site)
}

// siteGrowth: version 5 appended Site to every call kind.
func siteGrowth(fields []Field) []Growth { return []Growth{{Since: 5, N: len(fields) - 1}} }

// Kinds describes every event kind, indexed by Kind.
var Kinds = [NumKinds]KindSpec{
	Call: {Name: "Call", Fields: call(), IsCall: true, Since: 1,
		Doc: "any MPI call without recorded arguments"},
	Send: {Name: "Send", Fields: call(Peer, Tag, Comm, Bytes, Req), IsCall: true, Since: 1,
		Doc: "Send, Ssend, Bsend, Rsend (req 0); their I-forms; their persistent *_init forms (request created, not started)"},
	Recv: {Name: "Recv", Fields: call(Peer, Tag, Comm, Bytes, Src, STag, SBytes), IsCall: true, Since: 1,
		Doc: "blocking receive (Recv, Mrecv) with its status"},
	Irecv: {Name: "Irecv", Fields: call(Peer, Tag, Comm, Bytes, Req), IsCall: true, Since: 1,
		Doc: "Irecv, Imrecv, Recv_init: a receive request"},
	Sendrecv: {Name: "Sendrecv", Fields: call(Peer, Tag, Bytes, RPeer, RTag, RBytes, Comm, Src, STag, SBytes), IsCall: true, Since: 1,
		Doc: "Sendrecv, Sendrecv_replace: a send and a receive with the receive's status"},
	Probe: {Name: "Probe", Fields: call(Peer, Tag, Comm, Flag, Src, STag, SBytes), IsCall: true, Since: 1,
		Doc: "Probe, Iprobe, Mprobe, Improbe with the status when flag is 1"},
	Complete: {Name: "Complete", Fields: call(Flag), List: ListCompletions, IsCall: true, Since: 1,
		Doc: "Wait/Test family: the requests this call completed, in the order of the request array, with statuses; flag is the Test flag (1 for Wait)"},
	Coll: {Name: "Coll", Fields: call(Comm, Root, Bytes, RBytes, Req), IsCall: true, Since: 1,
		Doc: "a collective (req 0 when blocking): bytes sent and received by this rank"},
	CommNew: {Name: "CommNew", Fields: call(Parent, Comm, GID, Remote), List: ListRanks, IsCall: true, Since: 1,
		Doc: "a communicator was created: its members in world ranks, in communicator rank order (local group, then remote group)"},
	CommFree: {Name: "CommFree", Fields: call(Comm), IsCall: true, Since: 1,
		Doc: "a communicator was freed or disconnected"},
	Start: {Name: "Start", Fields: call(), List: ListReqs, IsCall: true, Since: 1,
		Doc: "Start, Startall: persistent requests started"},
	ReqFree: {Name: "ReqFree", Fields: call(Req), IsCall: true, Since: 1,
		Doc: "Request_free or Cancel of a request"},
	ClockSync: {Name: "ClockSync", Fields: []Field{Gap, Phase, Offset, Err}, Since: 1,
		Doc: "this rank's clock offset to rank 0, measured by ping-pong"},
	LoopBegin: {Name: "LoopBegin", Fields: []Field{Gap, File, Line, Col}, Since: 3,
		Doc: "an instrumented loop starts executing; the loop is the one at file:line:col"},
	LoopEnd: {Name: "LoopEnd", Fields: []Field{Gap, Count, Flags}, Since: 3,
		Doc: "the innermost open loop of the thread ends after count iterations (every iteration, sampled or not); flags: LoopUnwound, LoopUncounted"},
	IterBegin: {Name: "IterBegin", Fields: []Field{Gap, Iter}, Since: 3,
		Doc: "a sampled iteration of the innermost open loop starts"},
	IterEnd: {Name: "IterEnd", Fields: []Field{Gap}, List: ListValues, Since: 3,
		Doc: "the sampled iteration ends; values: the counters' increments over the iteration, in the order of the header's loop_counters"},
	RegionBegin: {Name: "RegionBegin", Fields: []Field{Gap, Name}, Since: 4,
		Doc: "a named region starts on this thread (Kokkos push_profile_region, mpitrace_region_push)"},
	RegionEnd: {Name: "RegionEnd", Fields: []Field{Gap, Flags}, Since: 4,
		Doc: "the innermost open region of the thread ends; flags: EndUnwound, EndUnmatched"},
	KernelBegin: {Name: "KernelBegin", Fields: []Field{Gap, Type, Name, Dev}, Since: 4,
		Doc: "a Kokkos kernel (parallel_for, parallel_reduce, parallel_scan) or fence starts"},
	KernelEnd: {Name: "KernelEnd", Fields: []Field{Gap, Flags}, Since: 4,
		Doc: "the innermost open kernel or fence of the thread ends; flags: EndUnwound"},
	CopyBegin: {Name: "CopyBegin", Fields: []Field{Gap, Space, Name, SrcSpace, SrcName, Bytes}, Since: 4,
		Doc: "a Kokkos deep copy of bytes from srcname in srcspace to name in space starts"},
	CopyEnd: {Name: "CopyEnd", Fields: []Field{Gap, Flags}, Since: 4,
		Doc: "the innermost open deep copy of the thread ends; flags: EndUnwound"},
	Alloc: {Name: "Alloc", Fields: []Field{Gap, Space, Name, Bytes}, Since: 4,
		Doc: "a Kokkos allocation of bytes in a memory space for the View labelled name"},
	Free: {Name: "Free", Fields: []Field{Gap, Space, Name, Bytes}, Since: 4,
		Doc: "a Kokkos deallocation of bytes in a memory space of the View labelled name"},
	SectionBegin: {Name: "SectionBegin", Fields: []Field{Gap, Sec, Name}, Since: 4,
		Doc: "a Kokkos profile section starts (sections need not nest)"},
	SectionEnd: {Name: "SectionEnd", Fields: []Field{Gap, Sec}, Since: 4,
		Doc: "the profile section sec stops"},
	Mark: {Name: "Mark", Fields: []Field{Gap, Name}, Since: 4,
		Doc: "a Kokkos profile event: an instant with a name"},
	Meta: {Name: "Meta", Fields: []Field{Gap, Name, Value}, Since: 4,
		Doc: "a key/value pair the program declared (Kokkos declare_metadata) or the recorder learnt while it ran (keys kokkos.*)"},
	DualView: {Name: "DualView", Fields: []Field{Gap, Name, Flags}, Since: 4,
		Doc: "a Kokkos DualView labelled name was synced or marked modified; flags: DualViewModify, DualViewDevice"},
	SiteDef: {Name: "Site", Fields: []Field{Gap, Site, Addr}, Since: 5,
		Doc: "an entry of the rank's call-site table: call events with this site id were called from return address addr; written once per site, before its first use on the thread that first made the call"},
	Map: {Name: "Map", Fields: []Field{Gap, Addr, Size, FileOff, Path, BuildID}, Since: 5,
		Doc: "an executable segment of a file mapped in the process: [addr, addr+size) holds the file's bytes from fileoff on; written for every loaded object before the first call site, and for objects loaded later before their first call site"},
}

func init() {
	for k := range Kinds {
		if Kinds[k].IsCall {
			Kinds[k].Grown = siteGrowth(Kinds[k].Fields)
		}
	}
}

// Versions lists the format versions this build reads, oldest first.
// Version v reads every kind whose Since is at most v, the block types up to
// MaxBlockType(v), and the end record's fields of EndFields(v).
var Versions = []uint16{1, 2, 3, 4, 5}

// Current is the version the writers produce.
const Current uint16 = 5

// MaxBlockType is the highest block type of version v: pending blocks came
// with version 2.
func MaxBlockType(v uint16) uint8 {
	if v >= 2 {
		return BlockPending
	}
	return BlockEnd
}

// EndFields is the number of uvarint fields (after which a string may
// follow) of the end record in version v: reason, signal, events, blocks,
// time, dropped; version 2 adds code and fn, then the message string.
func EndFields(v uint16) int {
	if v >= 2 {
		return 8
	}
	return 6
}

// Supported reports whether v is a version this build reads.
func Supported(v uint16) bool {
	for _, s := range Versions {
		if s == v {
			return true
		}
	}
	return false
}

// String returns the encoding's name: "uvarint" or "svarint".
func (e Encoding) String() string {
	switch e {
	case Uvarint:
		return "uvarint"
	case Svarint:
		return "svarint"
	}
	return "encoding " + strconv.Itoa(int(e))
}

// String returns the list's text-form name ("ranks", "reqs",
// "completions"), "" for NoList.
func (l List) String() string {
	switch l {
	case ListRanks:
		return "ranks"
	case ListReqs:
		return "reqs"
	case ListCompletions:
		return "completions"
	case ListValues:
		return "values"
	}
	return ""
}

// KindByName returns the kind with the given text-form name.
func KindByName(name string) (Kind, bool) {
	for k := Kind(1); k < NumKinds; k++ {
		if Kinds[k].Name == name {
			return k, true
		}
	}
	return KindNone, false
}

// FieldByName returns the field with the given text-form name.
func FieldByName(name string) (Field, bool) {
	for f := Field(1); f < NumFields; f++ {
		if Fields[f].Name == name {
			return f, true
		}
	}
	return FieldNone, false
}

// Block types of the file framing.
const (
	BlockHeader  = 1 // key/value metadata of the rank
	BlockStrings = 2 // string table entries
	BlockEvents  = 3 // one thread's events
	BlockEnd     = 4 // end-of-trace record
	// BlockPending: an MPI call that had begun, and not returned, when the
	// block was written (version 2).
	BlockPending = 5
)

// Codecs of a block payload.
const (
	CodecNone = 0
	CodecZstd = 1
)

// Framing constants.
const (
	// Magic starts every file; it is followed by a little-endian u16 version.
	Magic = "mpitrace\x00"
	// BlockSync starts every block (little-endian u32 "MBLK").
	BlockSync uint32 = 0x4b4c424d
	// BlockHeaderSize is the size of a block's frame header in bytes.
	BlockHeaderSize = 20
	// MaxBlockSize bounds a block's stored and raw payload sizes.
	MaxBlockSize = 64 << 20
)

// End reasons (the reason field of the end record).
const (
	EndFinalize     = 1 // normal exit after MPI_Finalize
	EndExit         = 2 // exit() without MPI_Finalize
	EndAbort        = 3 // MPI_Abort
	EndSignal       = 4 // fatal signal; the signal number follows
	EndWriteFailure = 5 // recording stopped because the log could not be written
	EndMPIError     = 6 // an MPI error the error handler treats as fatal (version 2)
)
