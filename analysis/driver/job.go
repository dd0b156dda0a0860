package driver

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mpitrace/mpitrace/analysis/stats"
	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// The analysis as an MPI job (--mpi, docs/cli.md): P processes, each
// reading the events of a contiguous group of ranks, balanced by the size
// of their logs, and exchanging what crosses groups through an Exchange
// (internal/mpicomm's Comm). Every process makes the same exchanges in
// the same order whatever its part found, an error included: a process
// that fails says so in what it sends, and every process then returns
// the error of the lowest process that failed (Job errors are the same on
// every process), so that no process waits for one that stopped.

// Exchange is the processes of an analysis run as an MPI job.
type Exchange interface {
	Rank() int
	Size() int
	// Allgather gives every process what each gave.
	Allgather(mine []byte) ([][]byte, error)
	// Gather gives process root what each gave (nil elsewhere).
	Gather(mine []byte, root int) ([][]byte, error)
	// Alltoall gives each process what every process gave it (send[p]
	// for process p).
	Alltoall(send [][]byte) ([][]byte, error)
}

// Job is one process's part of an analysis run as an MPI job.
type Job struct {
	x Exchange
	// Trace is the whole trace, the same on every process (every file's
	// header); the process reads the events of Trace.Files[Lo:Hi].
	Trace  *tracefmt.Trace
	Lo, Hi int
	// bounds are every process's Lo, then the last's Hi.
	bounds []int
	// Own is Trace.Part(Lo, Hi): the process's own files, whose readers
	// count in its OnRead.
	Own *tracefmt.Trace
	// Stats is what the process did, for --mpi-stats.
	Stats ProcessStats
	// xerr is the first error of an exchange (MPI's own, not agreed), or
	// what the process alone found in what it was sent.
	xerr error
}

// Fatal reports whether err, a Job's error, leaves the processes unable
// to go on together (MPI's own, or a damaged batch of the replay's
// exchanges that one process found): whatever runs the job must stop it
// (MPI_Abort), as some process may wait in an exchange this one will not
// make.
func (j *Job) Fatal(err error) bool { return err != nil && j.xerr != nil }

// Process is the process's number in the job, 0 to P-1.
func (j *Job) Process() int { return j.x.Rank() }

// ProcessStats is what one process of a job did.
type ProcessStats struct {
	Process int `json:"process"`
	// Ranks are the first and last rank the process read (-1, -1: none).
	FirstRank int   `json:"first_rank"`
	LastRank  int   `json:"last_rank"`
	FileBytes int64 `json:"file_bytes"` // of its ranks' logs
	// ReadNs is the time spent reading and analysing its ranks, ExchangeNs
	// in exchanges (waiting for the others included).
	ReadNs     int64 `json:"read_ns"`
	ExchangeNs int64 `json:"exchange_ns"`
	// Exchanges counts the exchanges, Sent and Received their bytes.
	Exchanges int   `json:"exchanges"`
	Sent      int64 `json:"bytes_sent"`
	Received  int64 `json:"bytes_received"`
	// NodeProcesses counts the job's processes on the process's node
	// (itself included), Gomaxprocs the Go threads it ran Go code on at
	// once (runtime.GOMAXPROCS: its share of the node's processors).
	NodeProcesses int `json:"node_processes"`
	Gomaxprocs    int `json:"gomaxprocs"`
}

// agreed is an Exchange's error that every process got alike from the
// same exchange (an exchange too large for MPI): the job can go on to
// its end, each process with the error. Other errors of an Exchange are
// its own failures: the job must stop (Fatal).
type agreed interface{ Agreed() bool }

// JobError is an error of one process of a job, returned by every
// process.
type JobError struct {
	Process int
	Msg     string
}

func (e *JobError) Error() string {
	return e.Msg
}

// status prefixes a process's part: ok, or an error and its text.
const (
	partOK  = 0
	partErr = 1
)

func encodePart(b []byte, err error) []byte {
	if err != nil {
		return append([]byte{partErr}, err.Error()...)
	}
	return append([]byte{partOK}, b...)
}

// decodeParts strips the parts' status: the first failed process's
// error, if any.
func decodeParts(parts [][]byte) ([][]byte, error) {
	for p, b := range parts {
		if len(b) == 0 {
			return nil, &JobError{p, fmt.Sprintf("internal error: process %d sent nothing", p)}
		}
		if b[0] == partErr {
			return nil, &JobError{p, string(b[1:])}
		}
		parts[p] = b[1:]
	}
	return parts, nil
}

// allgather gives every process every process's part, or every process
// the first error.
func (j *Job) allgather(mine []byte, err error) ([][]byte, error) {
	start := time.Now()
	msg := encodePart(mine, err)
	parts, xerr := j.x.Allgather(msg)
	j.count(start, len(msg), parts, xerr)
	if xerr != nil {
		return nil, xerr
	}
	return decodeParts(parts)
}

// gather gives process 0 every process's part (nil elsewhere), or
// process 0 the first error.
func (j *Job) gather(mine []byte, err error) ([][]byte, error) {
	start := time.Now()
	msg := encodePart(mine, err)
	parts, xerr := j.x.Gather(msg, 0)
	j.count(start, len(msg), parts, xerr)
	if xerr != nil || parts == nil {
		return nil, xerr
	}
	return decodeParts(parts)
}

// count counts an exchange that started at start, sent sent bytes and
// received parts, or failed with xerr.
func (j *Job) count(start time.Time, sent int, parts [][]byte, xerr error) {
	var a agreed
	if xerr != nil && (!errors.As(xerr, &a) || !a.Agreed()) {
		j.xerr = cmp.Or(j.xerr, xerr)
	}
	j.Stats.ExchangeNs += time.Since(start).Nanoseconds()
	j.Stats.Exchanges++
	j.Stats.Sent += int64(sent)
	for _, p := range parts {
		j.Stats.Received += int64(len(p))
	}
}

// OpenJob opens trace directory dir as process x.Rank() of x.Size(): each
// process reads the headers of a share of the files, all of them open
// the trace from every header (tracefmt.Listing.Open, so every process
// has the same trace or the same error), and each takes a contiguous
// group of the usable files, balanced by size (Partition). check, when
// not nil, is a process's first look at dir: its error, like any other,
// stops every process.
func OpenJob(dir string, x Exchange, check func(dir string) error) (*Job, error) {
	j := &Job{x: x}
	j.Stats.Process = x.Rank()
	start := time.Now()
	var l *tracefmt.Listing
	var err error
	if check != nil {
		err = check(dir)
	}
	if err == nil {
		l, err = tracefmt.ListDir(dir)
	}
	var mine []byte
	if err == nil {
		n, p := len(l.Names), x.Size()
		mine, err = encodeHeaders(l, x.Rank()*n/p, (x.Rank()+1)*n/p)
	}
	j.Stats.ReadNs += time.Since(start).Nanoseconds()
	parts, err := j.allgather(mine, err)
	if err != nil {
		return nil, err
	}
	ws := make([]wireHeaders, len(parts))
	for p, b := range parts {
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&ws[p]); err != nil {
			return nil, fmt.Errorf("internal error: decoding process %d's headers: %w", p, err)
		}
	}
	// Every process sees what every other saw: all stop here alike.
	for p := range ws {
		if ws[p].Listing != ws[0].Listing {
			return nil, &JobError{p, fmt.Sprintf("%s: process %d sees other rank files in the directory than process 0: every process of the job must see the same trace directory (a shared file system)", dir, p)}
		}
	}
	var (
		headers []tracefmt.HeaderResult
		sizes   = map[string]int64{}
	)
	for p := range ws {
		hs, err := tracefmt.DecodeHeaders(ws[p].Headers)
		if err != nil {
			return nil, err
		}
		if len(hs) != len(ws[p].Sizes) || len(headers)+len(hs) > len(l.Names) {
			return nil, fmt.Errorf("internal error: process %d sent %d headers and %d sizes", p, len(hs), len(ws[p].Sizes))
		}
		for i, s := range ws[p].Sizes {
			sizes[l.Names[len(headers)+i]] = s
		}
		headers = append(headers, hs...)
	}
	if len(headers) != len(l.Names) {
		return nil, fmt.Errorf("internal error: %d headers for %d rank files", len(headers), len(l.Names))
	}
	t, err := l.Open(headers)
	if err != nil {
		return nil, err
	}
	fs := make([]int64, len(t.Files))
	for i, f := range t.Files {
		fs[i] = sizes[filepath.Base(f.Path)]
	}
	b := Partition(fs, x.Size())
	j.Trace, j.Lo, j.Hi, j.bounds = t, b[x.Rank()], b[x.Rank()+1], b
	j.Own = t.Part(j.Lo, j.Hi)
	j.Stats.FirstRank, j.Stats.LastRank = -1, -1
	if j.Hi > j.Lo {
		j.Stats.FirstRank, j.Stats.LastRank = t.Files[j.Lo].Rank, t.Files[j.Hi-1].Rank
	}
	for _, s := range fs[j.Lo:j.Hi] {
		j.Stats.FileBytes += s
	}
	return j, nil
}

type wireHeaders struct {
	Listing [32]byte // what the process saw of the directory
	Headers []byte
	Sizes   []int64
}

// encodeHeaders reads the headers and sizes of files Names[lo:hi] of l.
func encodeHeaders(l *tracefmt.Listing, lo, hi int) ([]byte, error) {
	h := sha256.New()
	for _, n := range l.Names {
		h.Write([]byte(n))
		h.Write([]byte{0})
	}
	var w wireHeaders
	h.Sum(w.Listing[:0])
	var err error
	if w.Headers, err = tracefmt.EncodeHeaders(l.ReadHeaders(lo, hi)); err != nil {
		return nil, err
	}
	for _, n := range l.Names[lo:hi] {
		var size int64
		if st, err := os.Stat(filepath.Join(l.Dir, n)); err == nil {
			size = st.Size()
		}
		w.Sizes = append(w.Sizes, size)
	}
	var b bytes.Buffer
	err = gob.NewEncoder(&b).Encode(&w)
	return b.Bytes(), err
}

// Partition splits files of sizes (in order) into p contiguous groups of
// about equal bytes: group i is files bounds[i]..bounds[i+1]-1. Each
// group's end is the file boundary nearest to its share of the total; a
// group may be empty when files are fewer than groups or very unequal.
func Partition(sizes []int64, p int) (bounds []int) {
	var total int64
	for _, s := range sizes {
		total += max(s, 1)
	}
	bounds = make([]int, p+1)
	i := 0
	var sum int64 // of files 0..i-1
	for g := 1; g < p; g++ {
		target := total * int64(g) / int64(p)
		for i < len(sizes) && sum+max(sizes[i], 1)/2 < target {
			sum += max(sizes[i], 1)
			i++
		}
		bounds[g] = i
	}
	bounds[p] = len(sizes)
	return bounds
}

// Profile profiles the job's trace (stats.OfTrace): each process its own
// ranks, process 0 all of them. Process 0 gets the profile and its trace
// what every process's readers found (Diagnostics, Unfinished); the
// others nil.
func (j *Job) Profile() (*stats.Profile, error) {
	start := time.Now()
	part := j.Own
	ranks, err := stats.RanksOf(part)
	var mine []byte
	if err == nil {
		mine, err = encodeFound(part, ranks)
	}
	j.Stats.ReadNs += time.Since(start).Nanoseconds()
	parts, err := j.gather(mine, err)
	var all []*stats.Rank
	if err == nil && parts != nil {
		all, err = j.profiles(parts)
	}
	// What process 0 alone found, every process learns: a command may go
	// on with more exchanges (check).
	if err = j.agree(err); err != nil || parts == nil {
		return nil, err
	}
	return stats.Merge(all), nil
}

// profiles adds what each process's readers found to the trace and
// returns the ranks' profiles (parts: encodeFound's, by process).
func (j *Job) profiles(parts [][]byte) ([]*stats.Rank, error) {
	var all []*stats.Rank
	for p, b := range parts {
		found, rb, err := splitFound(b)
		if err != nil {
			return nil, err
		}
		if err := j.Trace.AddFound(found, p == 0); err != nil {
			return nil, err
		}
		rs, err := stats.DecodeRanks(rb)
		if err != nil {
			return nil, err
		}
		all = append(all, rs...)
	}
	return all, nil
}

// encodeFound is what part's readers found, then ranks' profiles.
func encodeFound(part *tracefmt.Trace, ranks []*stats.Rank) ([]byte, error) {
	found, err := part.Found()
	if err != nil {
		return nil, err
	}
	rb, err := stats.EncodeRanks(ranks)
	if err != nil {
		return nil, err
	}
	b := binary.AppendUvarint(nil, uint64(len(found)))
	return append(append(b, found...), rb...), nil
}

func splitFound(b []byte) (found, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, nil, errors.New("internal error: a process's part is cut short")
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

// GatherStats gives process 0 every process's ProcessStats, by process (nil
// elsewhere).
func (j *Job) GatherStats() ([]ProcessStats, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(&j.Stats)
	parts, err := j.gather(b.Bytes(), err)
	if err != nil || parts == nil {
		return nil, err
	}
	all := make([]ProcessStats, len(parts))
	for p, pb := range parts {
		if err := gob.NewDecoder(bytes.NewReader(pb)).Decode(&all[p]); err != nil {
			return nil, fmt.Errorf("internal error: decoding process %d's figures: %w", p, err)
		}
	}
	return all, nil
}

// Replay replays the job's trace under w, each process its own ranks
// (reconstruct.ReplayTracePart), the processes exchanging through the
// job's Exchange. Process 0 gets the result, the single replay's: its
// diagnostics are the trace's (what every process's readers found) then
// the replay's; the others get nil. When a process fails, every process
// fails: with its own error when it found one, else the first failed
// process's (a JobError); or the job must stop (Fatal).
func (j *Job) Replay(w reconstruct.ReplayWeights, opts reconstruct.Options) (_ *reconstruct.ReplayResult, err error) {
	start := time.Now()
	x := &countedExchange{j: j}
	res, rerr := j.replayPart(w, opts, x)
	j.Stats.ReadNs += time.Since(start).Nanoseconds() - x.ns
	if j.xerr != nil {
		// Found by this process alone (a damaged batch, a panic): the
		// others may wait in an exchange it will not make. The job must
		// stop (Fatal).
		return nil, rerr
	}
	var found []byte
	if rerr == nil {
		found, err = j.Own.Found()
	}
	// Every process takes part in the gather and in the agreement after
	// it, even one whose replay failed: none waits for another, and every
	// process learns what process 0 alone found (after the replay's last
	// exchange, or in the gather).
	parts, err := j.gather(found, cmp.Or(rerr, err))
	if err == nil && parts != nil {
		for p, b := range parts {
			if err = j.Trace.AddFound(b, p == 0); err != nil {
				break
			}
		}
	}
	if err = j.agree(cmp.Or(rerr, err)); err != nil {
		if res != nil {
			res.Close()
		}
		return nil, err // the replay's error as the single replay says it
	}
	if res == nil {
		return nil, nil
	}
	d := j.Trace.Diagnostics()
	d.Merge(res.Diags)
	res.Diags = d
	return res, nil
}

// replayPart is reconstruct.ReplayTracePart of the process's group, a
// panic of it an error that stops the job (Fatal), as a damaged batch
// (reconstruct.BatchError) does.
func (j *Job) replayPart(w reconstruct.ReplayWeights, opts reconstruct.Options, x reconstruct.Transport) (res *reconstruct.ReplayResult, err error) {
	return j.safePart(func() (*reconstruct.ReplayResult, error) {
		return reconstruct.ReplayTracePart(j.Trace, j.Own, j.bounds, j.x.Rank(), w, opts, x)
	})
}

// safePart runs replay, the process's part of a replay in groups: a
// panic of it is an error that stops the job (Fatal), as a damaged batch
// (reconstruct.BatchError) is.
func (j *Job) safePart(replay func() (*reconstruct.ReplayResult, error)) (res *reconstruct.ReplayResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			if res != nil {
				res.Close()
			}
			res, err = nil, replayPanic{v}
			j.xerr = cmp.Or(j.xerr, err)
		}
	}()
	res, err = replay()
	var be *reconstruct.BatchError
	if errors.As(err, &be) {
		j.xerr = cmp.Or(j.xerr, err)
	}
	return res, err
}

// agree gives every process the first failed process's error, each its
// own when it failed: after an exchange whose errors only some processes
// saw (a gather's, to process 0), so that all take the same way on.
func (j *Job) agree(err error) error {
	_, aerr := j.allgather(nil, err)
	return cmp.Or(err, aerr)
}

// countedExchange is the replay's Transport: the job's Alltoall, counted
// in the job's figures.
type countedExchange struct {
	j  *Job
	ns int64
}

func (c *countedExchange) Alltoall(send [][]byte) ([][]byte, error) {
	start := time.Now()
	recv, err := c.j.x.Alltoall(send)
	sent := 0
	for _, b := range send {
		sent += len(b)
	}
	c.j.count(start, sent, recv, err)
	c.ns += time.Since(start).Nanoseconds()
	return recv, err
}
