package tracefmt

import (
	"fmt"
	"strconv"
	"unique"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Header keys the recorder writes (docs/format.md, "Header block").
const (
	KeyRank            = "rank"
	KeySize            = "size"
	KeyRunID           = "run_id"
	KeyHostname        = "hostname"
	KeyPID             = "pid"
	KeyMPILibrary      = "mpi_library"
	KeyMPIVersion      = "mpi_version"
	KeyRecorderVersion = "recorder_version"
	KeyClock           = "clock"
	KeyClockResNS      = "clock_res_ns"
	KeyInitRealtimeNS  = "init_realtime_ns"
	KeyInitMonotonicNS = "init_monotonic_ns"
	KeyThreadLevel     = "thread_level"
	KeyOptions         = "options"
	KeyCPUs            = "cpus"
	// Loop markers (version 3).
	KeyLoopCounters = "loop_counters"
	KeyLoopChance   = "loop_chance"
	KeyLoopSeed     = "loop_seed"
)

// KeyValue is one header entry.
type KeyValue struct {
	Key, Value string
}

// Header is a rank file's header block plus the file's format version.
//
// Meta holds every key/value of the header block in file order, known or
// not; the other fields are parsed views of the well-known keys. Use Set to
// change a key so that both stay in agreement. A Writer writes Meta, after
// making rank and size (and run_id, hostname, mpi_library when not empty)
// agree with the typed fields.
type Header struct {
	Version    uint16 // format version of the file (spec.Current when writing)
	Rank       int    // world rank
	Size       int    // world size
	RunID      string // id shared by all ranks of one recording
	Hostname   string
	MPILibrary string // MPI_Get_library_version
	Meta       []KeyValue
}

// NewHeader returns a header for the given rank of a run.
func NewHeader(rank, size int, runID string) Header {
	h := Header{Version: spec.Current}
	h.Set(KeyRank, strconv.Itoa(rank))
	h.Set(KeySize, strconv.Itoa(size))
	h.Set(KeyRunID, runID)
	return h
}

// Get returns the value of key.
func (h *Header) Get(key string) (string, bool) {
	for _, kv := range h.Meta {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return "", false
}

// Set sets key to value, replacing the first entry with that key or
// appending one, and updates the typed field of a well-known key. A rank or
// size that is not a decimal integer leaves the typed field unchanged.
func (h *Header) Set(key, value string) {
	found := false
	for i := range h.Meta {
		if h.Meta[i].Key == key {
			h.Meta[i].Value = value
			found = true
			break
		}
	}
	if !found {
		h.Meta = append(h.Meta, KeyValue{key, value})
	}
	switch key {
	case KeyRank:
		if n, err := strconv.Atoi(value); err == nil {
			h.Rank = n
		}
	case KeySize:
		if n, err := strconv.Atoi(value); err == nil {
			h.Size = n
		}
	case KeyRunID:
		h.RunID = value
	case KeyHostname:
		h.Hostname = value
	case KeyMPILibrary:
		h.MPILibrary = value
	}
}

// parseHeaderMeta fills the typed fields from Meta and checks rank and size.
func (h *Header) parseMeta() error {
	h.intern()
	rank, ok := h.Get(KeyRank)
	if !ok {
		return fmt.Errorf("no %q key", KeyRank)
	}
	size, ok := h.Get(KeySize)
	if !ok {
		return fmt.Errorf("no %q key", KeySize)
	}
	var err error
	if h.Rank, err = strconv.Atoi(rank); err != nil {
		return fmt.Errorf("key rank: %q is not a rank", rank)
	}
	if h.Size, err = strconv.Atoi(size); err != nil {
		return fmt.Errorf("key size: %q is not a world size", size)
	}
	if h.Size < 1 || h.Size > maxWorldSize {
		return fmt.Errorf("key size: world size %d out of range 1..%d", h.Size, maxWorldSize)
	}
	if h.Rank < 0 || h.Rank >= h.Size {
		return fmt.Errorf("key rank: rank %d not in 0..%d (size %d)", h.Rank, h.Size-1, h.Size)
	}
	h.RunID, _ = h.Get(KeyRunID)
	h.Hostname, _ = h.Get(KeyHostname)
	h.MPILibrary, _ = h.Get(KeyMPILibrary)
	return nil
}

// intern shares h's keys, and its values but a rank's own, which are the
// same on every rank: one copy of each for thousands of ranks' headers.
func (h *Header) intern() {
	for i := range h.Meta {
		kv := &h.Meta[i]
		kv.Key = unique.Make(kv.Key).Value()
		if !rankOwn[kv.Key] {
			kv.Value = unique.Make(kv.Value).Value()
		}
	}
}

// rankOwn are the header keys whose values differ between the ranks of a
// run: not worth sharing.
var rankOwn = map[string]bool{KeyRank: true, KeyPID: true, KeyInitRealtimeNS: true, KeyInitMonotonicNS: true}

// maxWorldSize bounds the world size a header may claim. It is far above
// any MPI job. A claim costs a few bytes of a file: readers and analyses
// spend memory per rank file present, never per claimed rank.
const maxWorldSize = 1 << 24

// normalized returns the Meta a Writer writes for h: Meta with rank and size
// (and run_id, hostname, mpi_library when not empty) made to agree with the
// typed fields.
func (h *Header) normalized() []KeyValue {
	c := Header{Meta: append([]KeyValue(nil), h.Meta...)}
	setInt := func(key string, v int) {
		if cur, ok := c.Get(key); ok {
			if n, err := strconv.Atoi(cur); err == nil && n == v {
				return
			}
		}
		c.Set(key, strconv.Itoa(v))
	}
	setInt(KeyRank, h.Rank)
	setInt(KeySize, h.Size)
	for _, kv := range []KeyValue{{KeyRunID, h.RunID}, {KeyHostname, h.Hostname}, {KeyMPILibrary, h.MPILibrary}} {
		if kv.Value == "" {
			continue
		}
		if cur, ok := c.Get(kv.Key); !ok || cur != kv.Value {
			c.Set(kv.Key, kv.Value)
		}
	}
	return c.Meta
}

// Strings is a rank's string table: ids (positive, each defined once) to
// strings, in definition order.
//
// A table whose ids are 1, 2, 3, ... defined in that order (what the
// recorder writes) is a slice; any other a map. Equal strings of several
// tables share their bytes (unique.Make): every rank of a run defines the
// same function names, and a trace of thousands of ranks keeps thousands of
// tables. The readers' equal slices are one slice (shareDense).
type Strings struct {
	dense []string          // ids 1..len(dense), while byID is nil
	ids   []uint64          // definition order, once byID is not nil
	byID  map[uint64]string // once an id is not the next of dense
	bytes int               // total length of the strings, for bounding
}

// Len returns the number of strings.
func (s *Strings) Len() int {
	if s.byID == nil {
		return len(s.dense)
	}
	return len(s.ids)
}

// IDs returns the ids in definition order. The slice must not be modified.
func (s *Strings) IDs() []uint64 {
	if s.byID != nil {
		return s.ids
	}
	ids := make([]uint64, len(s.dense))
	for i := range ids {
		ids[i] = uint64(i) + 1
	}
	return ids
}

// Lookup returns the string with the given id.
func (s *Strings) Lookup(id uint64) (string, bool) {
	if s.byID == nil {
		if id-1 < uint64(len(s.dense)) {
			return s.dense[id-1], true
		}
		return "", false
	}
	v, ok := s.byID[id]
	return v, ok
}

// Name returns the string with the given id, or "" if there is none.
func (s *Strings) Name(id uint64) string {
	v, _ := s.Lookup(id)
	return v
}

// ID returns the first-defined id of the string v.
func (s *Strings) ID(v string) (uint64, bool) {
	if s.byID == nil {
		for i, w := range s.dense {
			if w == v {
				return uint64(i) + 1, true
			}
		}
		return 0, false
	}
	for _, id := range s.ids {
		if s.byID[id] == v {
			return id, true
		}
	}
	return 0, false
}

// trim gives up the room the table has beyond its strings, and shares a
// dense table with the other tables of the same strings (shareDense): the
// table is read only from now on, but for Define (which copies it).
func (s *Strings) trim() {
	if s.byID == nil {
		s.dense = shareDense(s.dense)
	}
}

// Define adds a string. It fails for id 0 and for an id already defined.
func (s *Strings) Define(id uint64, v string) error {
	if id == 0 {
		return fmt.Errorf("string id 0 (ids are positive)")
	}
	if old, ok := s.Lookup(id); ok {
		return fmt.Errorf("string id %d defined twice (%q, then %q)", id, old, v)
	}
	v = unique.Make(v).Value()
	s.bytes += len(v)
	if s.byID == nil {
		if id == uint64(len(s.dense))+1 {
			s.dense = append(s.dense, v)
			return nil
		}
		s.byID = make(map[uint64]string, len(s.dense)+1)
		s.ids = make([]uint64, len(s.dense), len(s.dense)+1)
		for i, w := range s.dense {
			s.ids[i] = uint64(i) + 1
			s.byID[uint64(i)+1] = w
		}
		s.dense = nil
	}
	s.byID[id] = v
	s.ids = append(s.ids, id)
	return nil
}

// End is the end record of a rank file, written by the recorder's final flush.
type End struct {
	Reason  uint64 // spec.EndFinalize, ...
	Signal  uint64 // signal number for spec.EndSignal
	Events  uint64 // events written by all threads
	Blocks  uint64 // events blocks written
	Time    int64  // monotonic time of the flush in ns (stored as uvarint)
	Dropped uint64 // events the recorder dropped
	// Version 2: the MPI_Abort error code or, for spec.EndMPIError, the MPI
	// error class; the string id of the MPI function the error arose in (0:
	// none); and the MPI library's message for the error.
	Code    uint64
	Fn      uint64
	Message string
}

var endReasons = []string{
	spec.EndFinalize:     "finalize",
	spec.EndExit:         "exit",
	spec.EndAbort:        "abort",
	spec.EndSignal:       "signal",
	spec.EndWriteFailure: "write_failure",
	spec.EndMPIError:     "mpi_error",
}

// ReasonString names the reason ("finalize", "exit", "abort", "signal",
// "write_failure", "mpi_error"), or gives its number.
func (e *End) ReasonString() string {
	if e.Reason < uint64(len(endReasons)) && endReasons[e.Reason] != "" {
		return endReasons[e.Reason]
	}
	return strconv.FormatUint(e.Reason, 10)
}

func parseEndReason(s string) (uint64, bool) {
	for i, n := range endReasons {
		if n != "" && n == s {
			return uint64(i), true
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}
