package tracefmt

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"slices"
)

// Parts of a trace, for an analysis run by several processes (mpitrace
// critpath --mpi): each process reads the headers of some files and the
// events of a group of ranks, and sends what it found to the others as
// bytes: the headers (EncodeHeaders), what its readers found
// (Trace.Found), diagnostics and call-site tables (gob). The bytes are
// an exchange between processes of one mpitrace binary, not a format.

// Error kinds of a header that could not be read, so that the error the
// other processes rebuild matches as the reader's does (errors.Is,
// errors.As).
const (
	errOther = iota
	errNotMpitrace
	errVersion
	errBroken
)

// wireHeaders are headers with their keys and values in one table: most
// are the same on every rank.
type wireHeaders struct {
	Strings []string
	Headers []wireHeader
}

type wireHeader struct {
	Version uint16
	Meta    []int32 // key, value, key, value... indices in Strings
	Err     string
	Kind    int
	File    string // a VersionError's
	ErrVer  uint16
}

// EncodeHeaders encodes headers for DecodeHeaders.
func EncodeHeaders(headers []HeaderResult) ([]byte, error) {
	var w wireHeaders
	index := map[string]int32{}
	str := func(s string) int32 {
		i, ok := index[s]
		if !ok {
			i = int32(len(w.Strings))
			index[s] = i
			w.Strings = append(w.Strings, s)
		}
		return i
	}
	w.Headers = make([]wireHeader, len(headers))
	for i, h := range headers {
		wh := &w.Headers[i]
		if h.Err == nil {
			wh.Version = h.Header.Version
			for _, kv := range h.Header.Meta {
				wh.Meta = append(wh.Meta, str(kv.Key), str(kv.Value))
			}
			continue
		}
		wh.Err = h.Err.Error()
		var ve *VersionError
		switch {
		case errors.As(h.Err, &ve):
			wh.Kind, wh.File, wh.ErrVer = errVersion, ve.File, ve.Version
		case errors.Is(h.Err, ErrNotMpitrace):
			wh.Kind = errNotMpitrace
		case errors.Is(h.Err, ErrBrokenTrace):
			wh.Kind = errBroken
		}
	}
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(&w)
	return b.Bytes(), err
}

// DecodeHeaders decodes EncodeHeaders' bytes: the headers ReadHeader
// read (their strings shared as ReadHeader shares them).
func DecodeHeaders(b []byte) ([]HeaderResult, error) {
	var w wireHeaders
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&w); err != nil {
		return nil, fmt.Errorf("internal error: decoding rank headers: %w", err)
	}
	res := make([]HeaderResult, len(w.Headers))
	for i, h := range w.Headers {
		switch {
		case h.Err == "":
			if len(h.Meta)%2 != 0 {
				return nil, errors.New("internal error: decoding rank headers: odd meta")
			}
			hd := Header{Version: h.Version, Meta: make([]KeyValue, len(h.Meta)/2)}
			for j := range hd.Meta {
				k, v := h.Meta[2*j], h.Meta[2*j+1]
				if k < 0 || int(k) >= len(w.Strings) || v < 0 || int(v) >= len(w.Strings) {
					return nil, errors.New("internal error: decoding rank headers: bad string index")
				}
				hd.Meta[j] = KeyValue{w.Strings[k], w.Strings[v]}
			}
			if err := hd.parseMeta(); err != nil {
				return nil, fmt.Errorf("internal error: decoding rank headers: %w", err)
			}
			res[i].Header = hd
		case h.Kind == errVersion:
			res[i].Err = &VersionError{File: h.File, Version: h.ErrVer}
		default:
			res[i].Err = &remoteError{msg: h.Err, kind: h.Kind}
		}
	}
	return res, nil
}

// remoteError is an error another process found.
type remoteError struct {
	msg  string
	kind int
}

func (e *remoteError) Error() string { return e.msg }

func (e *remoteError) Is(target error) bool {
	return e.kind == errNotMpitrace && target == ErrNotMpitrace || e.kind == errBroken && target == ErrBrokenTrace
}

// Part is the trace restricted to files Files[lo:hi]: what one process
// of several reads. Its ForEachRank and Found are its own; the trace's
// AddFound takes what the parts found.
func (t *Trace) Part(lo, hi int) *Trace {
	return &Trace{Dir: t.Dir, Manifest: t.Manifest, RunID: t.RunID, Size: t.Size, Files: t.Files[lo:hi:hi], OnRead: t.OnRead}
}

type wireFound struct {
	Ranks      []int
	Diags      []*Diagnostics
	Unfinished []UnfinishedCall
}

// Found encodes what the last ForEachRank (or Record) found in t's
// files: their diagnostics and unfinished calls.
func (t *Trace) Found() ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var w wireFound
	for _, f := range t.Files {
		if d := t.rankDiags[f.Rank]; d != nil {
			w.Ranks = append(w.Ranks, f.Rank)
			w.Diags = append(w.Diags, d)
		}
	}
	w.Unfinished = t.unfinished
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(&w)
	return b.Bytes(), err
}

// AddFound adds what a part found (Found's bytes) to what t found, as if
// t's own ForEachRank had read the part's files: parts added in the order
// of their files give Diagnostics and Unfinished in a single reading's
// order. The first part added replaces what t found before.
func (t *Trace) AddFound(b []byte, first bool) error {
	var w wireFound
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&w); err != nil {
		return fmt.Errorf("internal error: decoding what a process read: %w", err)
	}
	if len(w.Ranks) != len(w.Diags) {
		return errors.New("internal error: decoding what a process read: ranks and diagnostics differ")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if first || t.rankDiags == nil {
		t.rankDiags = make(map[int]*Diagnostics)
		t.unfinished = nil
	}
	for i, r := range w.Ranks {
		t.rankDiags[r] = w.Diags[i]
	}
	t.unfinished = append(t.unfinished, w.Unfinished...)
	slices.SortStableFunc(t.unfinished, func(a, b UnfinishedCall) int { return a.Rank - b.Rank })
	return nil
}

type wireDiags struct {
	List   []Diagnostic
	BySev  [numSeverities]int
	ByCode map[string]int
	Elided int
}

// GobEncode encodes every diagnostic and count.
func (t *Diagnostics) GobEncode() ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(wireDiags{t.list, t.bySev, t.byCode, t.elided})
	return b.Bytes(), err
}

// GobDecode decodes GobEncode's bytes.
func (t *Diagnostics) GobDecode(b []byte) error {
	var w wireDiags
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&w); err != nil {
		return err
	}
	t.list, t.bySev, t.byCode, t.elided = w.List, w.BySev, w.ByCode, w.Elided
	return nil
}

type wireSites struct {
	Addrs []uint64
	N     int
	Maps  []Mapping
}

// GobEncode encodes the table and the mappings.
func (s *Sites) GobEncode() ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(wireSites{s.addrs, s.n, s.maps})
	return b.Bytes(), err
}

// GobDecode decodes GobEncode's bytes.
func (s *Sites) GobDecode(b []byte) error {
	var w wireSites
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&w); err != nil {
		return err
	}
	s.addrs, s.n, s.maps = w.Addrs, w.N, w.Maps
	return nil
}
