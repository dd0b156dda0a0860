package tracefmt

import (
	"fmt"
	"slices"
	"strings"
)

// Severity grades a Diagnostic.
type Severity uint8

const (
	// Info: worth knowing, nothing is wrong with the data.
	Info Severity = iota
	// Warning: something is odd but no data was lost.
	Warning
	// DataLoss: events were lost (truncated file, corrupt block, dropped
	// events); what remains is correct.
	DataLoss
	// Error: the data is inconsistent; analyses built on it may be wrong.
	Error

	numSeverities
)

func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case DataLoss:
		return "data loss"
	case Error:
		return "error"
	}
	return fmt.Sprintf("severity %d", uint8(s))
}

// Diagnostic codes. A code names one kind of problem; it is stable so that
// scripts and tests can count it.
const (
	// Decoding (RankReader).
	CodeTruncatedBlock    = "truncated_block"    // the file ends inside a block
	CodeCRCMismatch       = "crc_mismatch"       // a block's checksum is wrong; the block is skipped
	CodeBadFrame          = "bad_frame"          // a block frame with impossible sizes, type or codec
	CodeUnrecognisedBytes = "unrecognised_bytes" // bytes that are not a block, skipped to the next sync marker
	CodeUndecodableBlock  = "undecodable_block"  // a block whose payload cannot be decoded
	CodeMissingHeader     = "missing_header"     // no header block (fatal for the file)
	CodeDuplicateHeader   = "duplicate_header"   // a second header block, ignored
	CodeDuplicateString   = "duplicate_string"   // a string id defined twice; the first wins
	CodeStringTableFull   = "string_table_full"  // string table over its size bound; strings ignored
	CodeMissingEnd        = "missing_end"        // no end record: the rank stopped before its final flush
	CodeDuplicateEnd      = "duplicate_end"      // a second end record, ignored
	CodeDataAfterEnd      = "data_after_end"     // blocks after the end record
	CodeSeqGap            = "seq_gap"            // a thread's blocks skip events
	CodeSeqOverlap        = "seq_overlap"        // a thread's blocks repeat or reorder sequence numbers
	CodeDroppedEvents     = "dropped_events"     // the recorder counted events it dropped
	CodeEventsMissing     = "events_missing"     // the end record counts more events than the blocks hold
	CodeEventCountHigh    = "event_count_high"   // the blocks hold more events than the end record counts
	CodeTrailingBytes     = "trailing_bytes"     // an events block has bytes after its last event
	CodeAbnormalEnd       = "abnormal_end"       // the end record's reason is not finalize
	CodeUnfinishedCall    = "unfinished_call"    // a thread's last MPI call never returned (pending block)
	CodeOverBudget        = "over_budget"        // a block would make the reader hold more decompressed bytes than the file justifies

	// Directory (OpenDir).
	CodeMissingRank     = "missing_rank"     // a rank of 0..size-1 has no usable file
	CodeUnreadableRank  = "unreadable_rank"  // a rank file skipped: empty, not an mpitrace file, unsupported version, no readable header, not a regular file
	CodeFileNameRank    = "file_name_rank"   // a file's name and header disagree on its rank
	CodeBadManifest     = "bad_manifest"     // manifest.json cannot be parsed
	CodeManifestMissing = "manifest_missing" // no manifest.json

	// Validation (Validate).
	CodeUndefinedComm      = "undefined_comm"       // a communicator index used before a CommNew defines it
	CodeCommRedefined      = "comm_redefined"       // a CommNew for an index that is in use
	CodeUnknownRequest     = "unknown_request"      // a request completed, started or freed that was never created
	CodeRequestReused      = "request_reused"       // a request id created twice while live
	CodeUnknownFn          = "unknown_fn"           // a function name id not in the string table
	CodeUndefinedSite      = "undefined_site"       // a call's site id that no Site event defines
	CodeBadSite            = "bad_site"             // a Site event with id 0, address 0, or redefining an id with another address
	CodeNegativeDuration   = "negative_duration"    // a duration above math.MaxInt64
	CodeNonMonotonicStart  = "non_monotonic_start"  // a thread's event starts before the previous one
	CodeBadRank            = "bad_rank"             // a rank value outside -5..size-1
	CodeUnknownFile        = "unknown_file"         // a loop's file id not in the string table
	CodeLoopEndUnopened    = "loop_end_unopened"    // a LoopEnd with no open loop in its thread
	CodeIterOutsideLoop    = "iter_outside_loop"    // an IterBegin with no open loop in its thread
	CodeIterEndUnopened    = "iter_end_unopened"    // an IterEnd with no open iteration in the innermost loop
	CodeIterUnclosed       = "iter_unclosed"        // an iteration begun, or its loop ended, while an iteration is open
	CodeLoopCount          = "loop_count"           // iteration numbers out of order or above the loop's count
	CodeLoopUnclosed       = "loop_unclosed"        // loops still open when the thread's events end
	CodeUnknownString      = "unknown_string"       // a name, value, space or label id (version 4) not in the string table
	CodeBadKernelType      = "bad_kernel_type"      // a KernelBegin whose type is not 1..4
	CodeRegionEndUnopened  = "region_end_unopened"  // a RegionEnd, KernelEnd or CopyEnd with nothing of its kind open in its thread
	CodeRegionEndCrossed   = "region_end_crossed"   // an end that closes a region, kernel or copy while one begun inside it is open
	CodeRegionUnmatched    = "region_unmatched"     // the program popped a region it had not pushed (RegionEnd flag EndUnmatched)
	CodeRegionUnwound      = "region_unwound"       // the recorder closed a region, kernel or copy itself (flag EndUnwound)
	CodeRegionUnclosed     = "region_unclosed"      // regions, kernels, copies or sections still open when the thread's events end
	CodeSectionEndUnopened = "section_end_unopened" // a SectionEnd for a section id not started in its thread
)

// Diagnostic is one problem found while reading or validating a trace.
type Diagnostic struct {
	Severity Severity
	Code     string // one of the Code constants
	Rank     int    // world rank, -1 when not known
	File     string // file name, "" when not about a file
	Block    int    // index of the block in the file (0 is the first), -1 when not about a block
	Offset   int64  // byte offset in the file, -1 when not known
	Message  string // what is wrong, without the location
}

// String formats d on one line, e.g.
//
//	data loss: traces/rank-00003.mpit: rank 3: block 17 at offset 81234: decoding Send.tag: unexpected end of payload [undecodable_block]
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.Severity.String())
	b.WriteString(": ")
	b.WriteString(d.Location())
	b.WriteString(d.Message)
	fmt.Fprintf(&b, " [%s]", d.Code)
	return b.String()
}

// Location formats the file, rank, block and offset of d, each followed by
// ": ", leaving out the unknown ones.
func (d Diagnostic) Location() string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(d.File)
		b.WriteString(": ")
	}
	if d.Rank >= 0 {
		fmt.Fprintf(&b, "rank %d: ", d.Rank)
	}
	switch {
	case d.Block >= 0 && d.Offset >= 0:
		fmt.Fprintf(&b, "block %d at offset %d: ", d.Block, d.Offset)
	case d.Block >= 0:
		fmt.Fprintf(&b, "block %d: ", d.Block)
	case d.Offset >= 0:
		fmt.Fprintf(&b, "offset %d: ", d.Offset)
	}
	return b.String()
}

// maxStoredPerCode bounds how many diagnostics of one code a Diagnostics
// keeps; beyond it they are only counted, so that a hostile file cannot make
// the table grow without bound.
const maxStoredPerCode = 1000

// MaxStoredPerCode is how many diagnostics of one code a Diagnostics
// stores: Add only counts those beyond.
const MaxStoredPerCode = maxStoredPerCode

// Diagnostics is a table of diagnostics counted by code and severity. The
// zero value is empty and ready to use. It is not safe for concurrent use.
type Diagnostics struct {
	list   []Diagnostic
	bySev  [numSeverities]int
	byCode map[string]int
	// elided counts diagnostics counted but not stored.
	elided int
}

// Add records d.
func (t *Diagnostics) Add(d Diagnostic) {
	if t.byCode == nil {
		t.byCode = make(map[string]int)
	}
	t.byCode[d.Code]++
	if d.Severity < numSeverities {
		t.bySev[d.Severity]++
	}
	if t.byCode[d.Code] > maxStoredPerCode {
		t.elided++
		return
	}
	t.list = append(t.list, d)
}

// AddCounted counts n diagnostics of severity sev and code as Add counts
// those beyond MaxStoredPerCode of a code, without storing them: for a
// caller that adds the first MaxStoredPerCode of the code first and
// keeps only how many the others were. Used before the table stores
// MaxStoredPerCode of the code, it counts as elided what Add would store.
func (t *Diagnostics) AddCounted(sev Severity, code string, n int) {
	if n <= 0 {
		return
	}
	if t.byCode == nil {
		t.byCode = make(map[string]int)
	}
	t.byCode[code] += n
	if sev < numSeverities {
		t.bySev[sev] += n
	}
	t.elided += n
}

// Merge adds every diagnostic of o (its counts included).
func (t *Diagnostics) Merge(o *Diagnostics) {
	if o == nil {
		return
	}
	if t.byCode == nil {
		t.byCode = make(map[string]int)
	}
	for c, n := range o.byCode {
		t.byCode[c] += n
	}
	for s, n := range o.bySev {
		t.bySev[s] += n
	}
	t.list = append(t.list, o.list...)
	t.elided += o.elided
}

// All returns the stored diagnostics in the order they were found. Beyond
// 1000 of one code, diagnostics are counted but not stored (see Elided).
func (t *Diagnostics) All() []Diagnostic { return t.list }

// Elided returns how many diagnostics were counted but not stored.
func (t *Diagnostics) Elided() int { return t.elided }

// Len returns the number of diagnostics counted.
func (t *Diagnostics) Len() int {
	n := 0
	for _, c := range t.bySev {
		n += c
	}
	return n
}

// Count returns the number of diagnostics of severity s.
func (t *Diagnostics) Count(s Severity) int {
	if s >= numSeverities {
		return 0
	}
	return t.bySev[s]
}

// CountCode returns the number of diagnostics with the given code.
func (t *Diagnostics) CountCode(code string) int { return t.byCode[code] }

// Codes returns the codes seen, sorted.
func (t *Diagnostics) Codes() []string {
	var cs []string
	for c := range t.byCode {
		cs = append(cs, c)
	}
	slices.Sort(cs)
	return cs
}

// Summary formats the counts on one line, most severe first, e.g.
// "1 error, 2 data loss (crc_mismatch 1, seq_gap 1, undefined_comm 1)", or
// "no problems".
func (t *Diagnostics) Summary() string {
	var parts []string
	for s := numSeverities - 1; ; s-- {
		if n := t.bySev[s]; n > 0 {
			name := s.String()
			if n > 1 && (s == Warning || s == Error) {
				name += "s"
			}
			parts = append(parts, fmt.Sprintf("%d %s", n, name))
		}
		if s == 0 {
			break
		}
	}
	if len(parts) == 0 {
		return "no problems"
	}
	var codes []string
	for _, c := range t.Codes() {
		codes = append(codes, fmt.Sprintf("%s %d", c, t.byCode[c]))
	}
	return strings.Join(parts, ", ") + " (" + strings.Join(codes, ", ") + ")"
}
