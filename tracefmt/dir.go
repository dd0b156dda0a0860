package tracefmt

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ManifestName is the manifest's file name in a trace directory.
const ManifestName = "manifest.json"

// RankFileName returns the file name of a rank's log: rank-NNNNN.mpit.
func RankFileName(rank int) string { return fmt.Sprintf("rank-%05d.mpit", rank) }

var rankFileRE = regexp.MustCompile(`^rank-([0-9]{5,})\.mpit$`)

// Manifest describes a recording; mpitrace record writes it next to the rank
// files (WriteManifest) and readers use it when present.
type Manifest struct {
	RunID           string    `json:"run_id"`
	Command         []string  `json:"command"`          // the launcher command line, e.g. mpirun -np 4 ./app
	Launcher        string    `json:"launcher"`         // mpirun, mpiexec, srun
	MPICompiler     string    `json:"mpi_compiler"`     // the MPI compiler wrapper used to build the recorder
	MPILibrary      string    `json:"mpi_library"`      // MPI_Get_library_version
	RecorderLibrary string    `json:"recorder_library"` // path of the recorder shared library
	StartTime       time.Time `json:"start_time"`       // RFC 3339
	EndTime         time.Time `json:"end_time"`         // RFC 3339
	ExitStatus      int       `json:"exit_status"`
	WorldSize       int       `json:"world_size"`
	FormatVersion   int       `json:"format_version"`
	MpitraceVersion string    `json:"mpitrace_version"`
}

// ReadManifest reads dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}

// WriteManifest writes m to dir/manifest.json, atomically (a temporary file
// renamed into place).
func WriteManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".manifest-*.json")
	if err != nil {
		return err
	}
	_ = tmp.Chmod(0o644)
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, ManifestName))
}

// RankFile is one usable rank file of a trace directory.
type RankFile struct {
	Rank   int
	Path   string
	Header Header
}

// Trace is a trace directory: its rank files, checked to belong to one
// recording, and its manifest.
type Trace struct {
	Dir      string
	Manifest *Manifest // nil when the directory has none
	RunID    string
	Size     int        // world size
	Files    []RankFile // the usable rank files, by rank
	// OnRead, when not nil, is told how far the readers of OpenRank and
	// ForEachRank got through the rank files, in bytes (concurrently from
	// ForEachRank's goroutines): a reader opened counts its file's bytes
	// outside events blocks, and each events block counts when its events
	// are decoded. Reading every event adds up to FileBytes: progress for a
	// command to show. A caller that reads the trace again tells it minus
	// what it read (analysis/driver, after a replay it gave up).
	OnRead func(n int)

	mu         sync.Mutex
	dirDiags   Diagnostics
	rankDiags  map[int]*Diagnostics // from the last ForEachRank, by rank
	unfinished []UnfinishedCall     // from the last ForEachRank, by rank
}

// UnfinishedCall is a call that began and never returned in a rank's log
// (RankReader.Unfinished), with its function's name.
type UnfinishedCall struct {
	Rank int    `json:"rank"`
	Name string `json:"name"`
	Pending
}

// OpenDir opens a trace directory: it finds the rank-*.mpit files, reads
// manifest.json if present, and checks every file's header. It fails when
// the files cannot belong together — two run ids (the error names a file of
// each), two world sizes, two files for one rank, a manifest of another run
// — and when no rank file is usable (the error wraps the first file's:
// ErrNotMpitrace, a *VersionError, ...). Other damage is a diagnostic: a
// rank file that is skipped because it is empty, not an mpitrace file, of
// an unsupported version or without a readable header (unreadable_rank,
// data loss), a rank of 0..size-1 without a usable file (missing_rank,
// data loss), a file named for another rank (file_name_rank, warning).
func OpenDir(dir string) (*Trace, error) {
	l, err := ListDir(dir)
	if err != nil {
		return nil, err
	}
	return l.Open(l.ReadHeaders(0, len(l.Names)))
}

// Listing is a trace directory's rank files before their headers are
// read: OpenDir is ListDir, ReadHeaders and Open, which the processes of
// an analysis run as an MPI job split, each reading the headers of its
// own files and all of them opening the trace from every file's.
type Listing struct {
	Dir string
	// Names are the rank-*.mpit files' names, sorted.
	Names    []string
	manifest *Manifest
	diags    Diagnostics
}

// ListDir lists a trace directory's rank files and reads its manifest
// (OpenDir's first step).
func ListDir(dir string) (*Listing, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	l := &Listing{Dir: dir}
	for _, e := range ents {
		if rankFileRE.MatchString(e.Name()) {
			l.Names = append(l.Names, e.Name())
		}
	}
	slices.Sort(l.Names)
	m, merr := ReadManifest(dir)
	switch {
	case merr == nil:
		l.manifest = m
	case errors.Is(merr, os.ErrNotExist):
	default:
		l.diags.Add(Diagnostic{Severity: Warning, Code: CodeBadManifest, Rank: -1, File: filepath.Join(dir, ManifestName), Block: -1, Offset: -1,
			Message: fmt.Sprintf("cannot read the manifest: %v", errors.Unwrap(merr))})
	}
	if len(l.Names) == 0 {
		return nil, fmt.Errorf("%s: no rank-*.mpit files: not a trace directory (record one with mpitrace record)", dir)
	}
	return l, nil
}

// HeaderResult is what reading one rank file's header gave.
type HeaderResult struct {
	Header Header
	Err    error
}

// ReadHeaders reads the headers of files Names[lo:hi].
func (l *Listing) ReadHeaders(lo, hi int) []HeaderResult {
	res := make([]HeaderResult, hi-lo)
	for i := range res {
		res[i].Header, res[i].Err = ReadHeader(filepath.Join(l.Dir, l.Names[lo+i]))
	}
	return res
}

// Open opens the trace from every file's header (headers[i] is
// Names[i]'s): it checks that the files belong together and reports the
// damage OpenDir reports.
func (l *Listing) Open(headers []HeaderResult) (*Trace, error) {
	dir := l.Dir
	t := &Trace{Dir: dir, Manifest: l.manifest}
	t.dirDiags.Merge(&l.diags)
	byRank := make(map[int]*RankFile)
	var first *RankFile
	var firstErr error // why the first skipped file was skipped
	for i, name := range l.Names {
		path := filepath.Join(dir, name)
		h, err := headers[i].Header, headers[i].Err
		if err != nil {
			// Empty, foreign, damaged or too new: the file is skipped
			// and its rank counts as missing, whatever the reason.
			if firstErr == nil {
				firstErr = err
			}
			t.dirDiags.Add(Diagnostic{Severity: DataLoss, Code: CodeUnreadableRank, Rank: -1, File: path, Block: -1, Offset: -1,
				Message: fmt.Sprintf("rank file skipped: %s", skipReason(err, path))})
			continue
		}
		rf := &RankFile{Rank: h.Rank, Path: path, Header: h}
		if first == nil {
			first = rf
		} else {
			if h.RunID != first.Header.RunID {
				return nil, fmt.Errorf("%s: files of two recordings: %s has run id %q, %s has run id %q; keep one run per directory",
					dir, first.Path, first.Header.RunID, path, h.RunID)
			}
			if h.Size != first.Header.Size {
				return nil, fmt.Errorf("%s: %s says the world has %d ranks, %s says %d", dir, first.Path, first.Header.Size, path, h.Size)
			}
		}
		if other, ok := byRank[h.Rank]; ok {
			return nil, fmt.Errorf("%s: two files for rank %d: %s and %s", dir, h.Rank, other.Path, path)
		}
		byRank[h.Rank] = rf
		if sub := rankFileRE.FindStringSubmatch(name); sub != nil {
			if n, err := strconv.Atoi(sub[1]); err == nil && n != h.Rank {
				t.dirDiags.Add(Diagnostic{Severity: Warning, Code: CodeFileNameRank, Rank: h.Rank, File: path, Block: -1, Offset: -1,
					Message: fmt.Sprintf("the file is named for rank %d but its header says rank %d; the header is used", n, h.Rank)})
			}
		}
	}
	if first == nil {
		if len(l.Names) == 1 {
			return nil, firstErr
		}
		return nil, &noUsableFileError{dir: dir, n: len(l.Names), first: firstErr}
	}
	t.RunID = first.Header.RunID
	t.Size = first.Header.Size
	if m := t.Manifest; m != nil {
		if m.RunID != "" && m.RunID != t.RunID {
			return nil, fmt.Errorf("%s: %s is from run %q but %s is from run %q; keep one run per directory",
				dir, ManifestName, m.RunID, first.Path, t.RunID)
		}
		if m.WorldSize != 0 && m.WorldSize != t.Size {
			return nil, fmt.Errorf("%s: %s says the world has %d ranks, %s says %d", dir, ManifestName, m.WorldSize, first.Path, t.Size)
		}
	}
	for _, rf := range byRank {
		t.Files = append(t.Files, *rf)
	}
	slices.SortFunc(t.Files, func(a, b RankFile) int { return a.Rank - b.Rank })
	t.missingRanks(first)
	return t, nil
}

// skipReason is err without the file name it starts with.
func skipReason(err error, path string) string {
	return strings.TrimPrefix(err.Error(), path+": ")
}

// noUsableFileError is OpenDir's error when no rank file is usable: it
// names the first file's problem and wraps its error.
type noUsableFileError struct {
	dir   string
	n     int
	first error
}

func (e *noUsableFileError) Error() string {
	return fmt.Sprintf("%s: none of the %d rank files is usable (the first: %v)", e.dir, e.n, e.first)
}

func (e *noUsableFileError) Unwrap() error { return e.first }

// missingRanks reports the ranks of 0..size-1 without a usable file: one
// diagnostic each when they are few, else one for all of them that names
// claim, the file whose header gave the size. The size is a claim of a few
// bytes: nothing here takes time or memory per rank of it.
func (t *Trace) missingRanks(claim *RankFile) {
	var gaps []rankSpan
	n, next := 0, 0
	gap := func(end int) { // ranks next..end-1 have no file
		if end > next {
			gaps = append(gaps, rankSpan{next, end - 1})
			n += end - next
		}
		next = end + 1
	}
	for _, f := range t.Files {
		gap(f.Rank)
	}
	gap(t.Size)
	const maxListed = 32
	if n > maxListed {
		t.dirDiags.Add(Diagnostic{Severity: DataLoss, Code: CodeMissingRank, Rank: claim.Rank, File: claim.Path, Block: -1, Offset: -1,
			Message: fmt.Sprintf("the header says the world has %d ranks, but %d of them have no usable file in %s (%s)", t.Size, n, t.Dir, spanList(gaps))})
		return
	}
	for _, g := range gaps {
		for r := g.lo; r <= g.hi; r++ {
			t.dirDiags.Add(Diagnostic{Severity: DataLoss, Code: CodeMissingRank, Rank: r, File: filepath.Join(t.Dir, RankFileName(r)), Block: -1, Offset: -1,
				Message: fmt.Sprintf("no usable file for rank %d of %d", r, t.Size)})
		}
	}
}

// rankSpan is the ranks lo..hi.
type rankSpan struct{ lo, hi int }

// spanList formats spans as "3, 5-9", the first 20 of them.
func spanList(spans []rankSpan) string {
	const maxShown = 20
	var parts []string
	for i, s := range spans {
		if i == maxShown {
			parts = append(parts, fmt.Sprintf("and %d more ranges", len(spans)-maxShown))
			break
		}
		if s.lo == s.hi {
			parts = append(parts, strconv.Itoa(s.lo))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", s.lo, s.hi))
		}
	}
	return strings.Join(parts, ", ")
}

// Rank returns the file of a rank.
func (t *Trace) Rank(rank int) (*RankFile, bool) {
	i, ok := slices.BinarySearchFunc(t.Files, rank, func(f RankFile, r int) int { return f.Rank - r })
	if !ok {
		return nil, false
	}
	return &t.Files[i], true
}

// OpenRank opens the reader of one rank. Its diagnostics are not added to
// the trace's (ForEachRank does that).
func (t *Trace) OpenRank(rank int) (*RankReader, error) {
	f, ok := t.Rank(rank)
	if !ok {
		return nil, fmt.Errorf("%s: no usable file for rank %d (the world has %d ranks)", t.Dir, rank, t.Size)
	}
	r, err := openRank(f.Path, t.OnRead)
	return shareMeta(f, r), err
}

// OpenRankUncounted is OpenRank without telling OnRead: a second reading
// of the trace beside one whose progress OnRead shows.
func (t *Trace) OpenRankUncounted(rank int) (*RankReader, error) {
	f, ok := t.Rank(rank)
	if !ok {
		return nil, fmt.Errorf("%s: no usable file for rank %d (the world has %d ranks)", t.Dir, rank, t.Size)
	}
	r, err := openRank(f.Path, nil)
	return shareMeta(f, r), err
}

// shareMeta returns r, the reader of rank file f, its header's Meta the
// trace's own when they are equal (as they are unless the file changed
// since the trace was opened): a replay opens every rank at once, and on
// thousands of ranks a copy each of a few dozen keys adds up (0.7 KB a
// rank). A reader's Meta is read only.
func shareMeta(f *RankFile, r *RankReader) *RankReader {
	if r != nil && slices.Equal(r.header.Meta, f.Header.Meta) {
		r.header.Meta = f.Header.Meta
	}
	return r
}

// FileBytes returns the size of the usable rank files together, what
// OnRead's counts add up to when every event is read (a file that cannot be
// sized counts 0).
func (t *Trace) FileBytes() int64 {
	var n int64
	for _, f := range t.Files {
		if st, err := os.Stat(f.Path); err == nil {
			n += st.Size()
		}
	}
	return n
}

// ForEachRank opens every usable rank file and calls fn with its reader, on
// up to workers goroutines at once (GOMAXPROCS when workers <= 0); each
// reader is closed after fn returns. fn is called concurrently for different
// ranks, in no particular order, and must not keep the reader.
//
// After the first error (from opening a rank or from fn) no further rank is
// started; the error returned is the one of the lowest rank that failed.
// Each rank's diagnostics are added to the trace's (Diagnostics), replacing
// those of an earlier ForEachRank.
func (t *Trace) ForEachRank(workers int, fn func(r *RankReader) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(t.Files))
	results := make([]rankResult, len(t.Files))
	var (
		next   int
		failed bool
		mu     sync.Mutex
		wg     sync.WaitGroup
	)
	take := func() int {
		mu.Lock()
		defer mu.Unlock()
		if failed || next >= len(t.Files) {
			return -1
		}
		next++
		return next - 1
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := take(); i >= 0; i = take() {
				res := &results[i]
				r, err := openRank(t.Files[i].Path, t.OnRead)
				if err == nil {
					err = fn(r)
					res.found(r)
					if cerr := r.Close(); err == nil {
						err = cerr
					}
				}
				if err != nil {
					res.err = err
					mu.Lock()
					failed = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return t.keep(results)
}

// rankResult is what a reader of one of the trace's files found.
type rankResult struct {
	diags      *Diagnostics
	unfinished []UnfinishedCall
	err        error
}

// found takes what reader r found, once read.
func (res *rankResult) found(r *RankReader) {
	// A copy: a pointer into r would keep r's buffers alive.
	d := *r.Diagnostics()
	res.diags = &d
	for _, p := range r.Unfinished() {
		name, _ := r.Strings().Lookup(p.Fn)
		res.unfinished = append(res.unfinished, UnfinishedCall{Rank: r.Rank(), Name: name, Pending: p})
	}
}

// keep keeps results (by file) for Diagnostics and Unfinished and
// returns the first error.
func (t *Trace) keep(results []rankResult) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rankDiags = make(map[int]*Diagnostics)
	t.unfinished = nil
	var firstErr error
	for i, res := range results {
		if res.diags != nil {
			t.rankDiags[t.Files[i].Rank] = res.diags
		}
		t.unfinished = append(t.unfinished, res.unfinished...)
		if res.err != nil && firstErr == nil {
			firstErr = res.err
		}
	}
	return firstErr
}

// Record keeps, for Diagnostics and Unfinished, what the readers of the
// trace's files found (readers opened with OpenRank and read to their
// end, at most one per rank), as ForEachRank does for its own.
func (t *Trace) Record(readers []*RankReader) {
	results := make([]rankResult, len(t.Files))
	at := make(map[int]int, len(t.Files))
	for i := len(t.Files) - 1; i >= 0; i-- {
		at[t.Files[i].Rank] = i // the first file of a rank, as a search would find
	}
	for _, r := range readers {
		if i, ok := at[r.Rank()]; ok {
			results[i].found(r)
		}
	}
	t.keep(results)
}

// Unfinished returns the calls that never returned in the ranks' logs,
// found by the last ForEachRank, by rank and thread.
func (t *Trace) Unfinished() []UnfinishedCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.unfinished)
}

// Diagnostics returns the directory's diagnostics (from OpenDir) followed by
// every rank's from the last ForEachRank, in rank order.
func (t *Trace) Diagnostics() *Diagnostics {
	t.mu.Lock()
	defer t.mu.Unlock()
	var d Diagnostics
	d.Merge(&t.dirDiags)
	for _, f := range t.Files {
		d.Merge(t.rankDiags[f.Rank])
	}
	return &d
}
