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

type wireHeader struct {
	Header  Header
	Err     string
	Kind    int
	File    string // a VersionError's
	Version uint16
}

// EncodeHeaders encodes headers for DecodeHeaders.
func EncodeHeaders(headers []HeaderResult) ([]byte, error) {
	w := make([]wireHeader, len(headers))
	for i, h := range headers {
		w[i].Header = h.Header
		if h.Err == nil {
			continue
		}
		w[i].Err = h.Err.Error()
		var ve *VersionError
		switch {
		case errors.As(h.Err, &ve):
			w[i].Kind, w[i].File, w[i].Version = errVersion, ve.File, ve.Version
		case errors.Is(h.Err, ErrNotMpitrace):
			w[i].Kind = errNotMpitrace
		case errors.Is(h.Err, ErrBrokenTrace):
			w[i].Kind = errBroken
		}
	}
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(w)
	return b.Bytes(), err
}

// DecodeHeaders decodes EncodeHeaders' bytes.
func DecodeHeaders(b []byte) ([]HeaderResult, error) {
	var w []wireHeader
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&w); err != nil {
		return nil, fmt.Errorf("internal error: decoding rank headers: %w", err)
	}
	res := make([]HeaderResult, len(w))
	for i, h := range w {
		res[i].Header = h.Header
		switch {
		case h.Err == "":
		case h.Kind == errVersion:
			res[i].Err = &VersionError{File: h.File, Version: h.Version}
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
