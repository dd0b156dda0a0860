// Package testgen builds synthetic multi-rank traces for tests and
// benchmarks. It fills in what a hand-written trace gets wrong easily:
// times (each call starts Gap ns after the previous one ends and lasts Dur
// ns), request ids, communicator indices, the function-name string table,
// the headers, the end records and the manifest.
//
//	b := testgen.New(2)
//	r0, r1 := b.Rank(0), b.Rank(1)
//	req := r0.Isend(1, 7, 4096)
//	r0.Wait(req)
//	r1.Recv(0, 7, 4096)
//	r0.Barrier()
//	r1.Barrier()
//	err := b.WriteDir(dir)
//
// Events are encoded as they are added (each rank has a tracefmt.Writer
// into memory), so big traces (100 ranks, 20M events) cost only their
// compressed size. Set the Builder's fields before the first call to Rank;
// a rank's header is written when the rank is first used.
package testgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// Builder builds one synthetic recording.
type Builder struct {
	Size     int
	RunID    string
	Hostname string // "node0" by default
	// Options are the writers' options (codec, block size).
	Options tracefmt.WriterOptions
	// Meta are header entries set on every rank created afterwards, after
	// the ones the builder sets (e.g. the recorder's "options").
	Meta []tracefmt.KeyValue
	// Start is the monotonic time of each rank's first event (default 1e9 ns).
	Start int64
	// Dur and Gap are the default duration of a call and time between calls
	// in ns, for ranks created afterwards (defaults 1000 and 500).
	Dur, Gap int64

	ranks []*rankState
}

// New returns a builder for a world of size ranks.
func New(size int) *Builder {
	return &Builder{Size: size, RunID: "testgen-run", Hostname: "node0", Start: 1_000_000_000, Dur: 1000, Gap: 500,
		ranks: make([]*rankState, size)}
}

// FuncNames are the function names every rank's string table starts with,
// at ids 1..len(FuncNames), like the recorder's table. Other names get the
// next ids when first used.
var FuncNames = []string{
	"MPI_Init", "MPI_Finalize", "MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Isend", "MPI_Issend",
	"MPI_Recv", "MPI_Irecv", "MPI_Sendrecv", "MPI_Sendrecv_replace", "MPI_Probe", "MPI_Iprobe",
	"MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome",
	"MPI_Send_init", "MPI_Recv_init", "MPI_Start", "MPI_Startall", "MPI_Request_free", "MPI_Cancel",
	"MPI_Barrier", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Gather", "MPI_Scatter", "MPI_Allgather", "MPI_Alltoall",
	"MPI_Ibarrier", "MPI_Iallreduce",
	"MPI_Comm_dup", "MPI_Comm_split", "MPI_Comm_create", "MPI_Comm_free", "MPI_Comm_rank", "MPI_Comm_size", "MPI_Wtime",
}

// rankState is shared by a rank's thread views.
type rankState struct {
	b        *Builder
	rank     int
	buf      bytes.Buffer
	w        *tracefmt.Writer
	names    map[string]uint64
	nextID   uint64
	nextReq  uint64
	nextComm uint64
	recvs    map[uint64]tracefmt.Completion // status to report when an Irecv completes
	threads  map[int]*threadState
	noEnd    bool
	end      *tracefmt.End
	dropped  uint64
	err      error
	ev       tracefmt.Event
}

type threadState struct {
	clock   int64 // end of the thread's last event
	pending int64 // gap before its next event
	set     bool  // pending was set by Compute
}

// Rank is a view of one rank's thread (thread 0 unless made by Thread) that
// records calls. Calls record at the thread's clock: start = previous end +
// Gap (or the time given to Compute), end = start + Dur.
type Rank struct {
	st     *rankState
	thread int
	th     *threadState
	// Dur is the duration of the next calls in ns.
	Dur int64
	// Gap is the default time between calls in ns.
	Gap int64
	// Comm is the communicator index the calls use (spec.CommWorld).
	Comm uint64
}

// Rank returns the view of rank i's thread 0. It panics if i is not a rank
// of the world: that is a bug in the test.
func (b *Builder) Rank(i int) *Rank {
	if i < 0 || i >= b.Size {
		panic(fmt.Sprintf("testgen: rank %d out of range 0..%d", i, b.Size-1))
	}
	st := b.ranks[i]
	if st == nil {
		st = &rankState{b: b, rank: i, names: make(map[string]uint64), nextReq: 1, nextComm: 3,
			recvs: make(map[uint64]tracefmt.Completion), threads: make(map[int]*threadState)}
		h := tracefmt.NewHeader(i, b.Size, b.RunID)
		h.Set(tracefmt.KeyHostname, b.Hostname)
		h.Set(tracefmt.KeyPID, fmt.Sprint(1000+i))
		h.Set(tracefmt.KeyMPILibrary, "testgen MPI 1.0")
		h.Set(tracefmt.KeyMPIVersion, "3.1")
		h.Set(tracefmt.KeyRecorderVersion, "testgen")
		h.Set(tracefmt.KeyClock, "CLOCK_MONOTONIC")
		h.Set(tracefmt.KeyThreadLevel, "single")
		for _, kv := range b.Meta {
			h.Set(kv.Key, kv.Value)
		}
		opts := b.Options
		w, err := tracefmt.NewWriter(&st.buf, &h, &opts)
		st.w, st.err = w, err
		for _, n := range FuncNames {
			st.id(n)
		}
		b.ranks[i] = st
	}
	return st.view(0)
}

func (st *rankState) view(thread int) *Rank {
	th := st.threads[thread]
	if th == nil {
		clock := st.b.Start
		for _, o := range st.threads {
			clock = max(clock, o.clock)
		}
		th = &threadState{clock: clock}
		if len(st.threads) == 0 {
			th.clock = st.b.Start - st.b.Gap
		}
		st.threads[thread] = th
	}
	return &Rank{st: st, thread: thread, th: th, Dur: st.b.Dur, Gap: st.b.Gap, Comm: spec.CommWorld}
}

// Thread returns a view of another thread of the same rank. A new thread's
// clock starts at the latest end of the rank's other threads.
func (r *Rank) Thread(t int) *Rank { return r.st.view(t) }

// On returns a view of the same thread whose calls use communicator comm.
func (r *Rank) On(comm uint64) *Rank {
	c := *r
	c.Comm = comm
	return &c
}

// ID is the rank's world rank.
func (r *Rank) ID() int { return r.st.rank }

// Now returns the end of the thread's last event.
func (r *Rank) Now() int64 { return r.th.clock }

// Compute sets the time before the next call to ns (computation).
func (r *Rank) Compute(ns int64) *Rank {
	r.th.pending = ns
	r.th.set = true
	return r
}

// id returns the string id of name, defining it on first use.
func (st *rankState) id(name string) uint64 {
	if id, ok := st.names[name]; ok {
		return id
	}
	st.nextID++
	st.names[name] = st.nextID
	if st.err == nil {
		st.err = st.w.DefineString(st.nextID, name)
	}
	return st.nextID
}

// begin prepares the scratch event for a call of kind k and function fn.
func (r *Rank) begin(k spec.Kind, fn string) *tracefmt.Event {
	ev := &r.st.ev
	ev.Reset()
	ev.Kind = k
	ev.Thread = r.thread
	if fn != "" {
		ev.SetUint(spec.Fn, r.st.id(fn))
	}
	return ev
}

// emit times and writes the scratch event.
func (r *Rank) emit(ev *tracefmt.Event) { r.emitGap(ev, r.Gap) }

// emitGap is emit with gap as the default time before the event.
func (r *Rank) emitGap(ev *tracefmt.Event, gap int64) {
	if r.th.set {
		gap = r.th.pending
		r.th.set = false
	}
	ev.F[spec.Gap] = gap
	ev.Start = r.th.clock + gap
	if ev.Has(spec.Dur) {
		ev.F[spec.Dur] = r.Dur
	}
	ev.End = ev.Start + ev.F[spec.Dur]
	r.th.clock = ev.End
	if r.st.err == nil {
		r.st.err = r.st.w.WriteEvent(ev)
	}
}

func (r *Rank) newReq() uint64 {
	q := r.st.nextReq
	r.st.nextReq++
	return q
}

// Emit records an event of any kind: set fills in its fields (Fn, times,
// Gap and Dur are filled in from fn and the clock). For calls the other
// methods do not cover.
func (r *Rank) Emit(k spec.Kind, fn string, set func(ev *tracefmt.Event)) *Rank {
	ev := r.begin(k, fn)
	if set != nil {
		set(ev)
	}
	r.emit(ev)
	return r
}

// Call records an MPI call without arguments.
func (r *Rank) Call(fn string) *Rank { return r.Emit(spec.Call, fn, nil) }

func (r *Rank) send(fn string, peer, tag int64, bytes, req uint64) {
	ev := r.begin(spec.Send, fn)
	ev.Set(spec.Peer, peer)
	ev.Set(spec.Tag, tag)
	ev.SetUint(spec.Comm, r.Comm)
	ev.SetUint(spec.Bytes, bytes)
	ev.SetUint(spec.Req, req)
	r.emit(ev)
}

// Send records MPI_Send.
func (r *Rank) Send(peer, tag int64, bytes uint64) *Rank {
	r.send("MPI_Send", peer, tag, bytes, 0)
	return r
}

// SendFn records a blocking send of another mode ("MPI_Ssend", ...).
func (r *Rank) SendFn(fn string, peer, tag int64, bytes uint64) *Rank {
	r.send(fn, peer, tag, bytes, 0)
	return r
}

// Isend records MPI_Isend and returns its request id.
func (r *Rank) Isend(peer, tag int64, bytes uint64) uint64 {
	q := r.newReq()
	r.send("MPI_Isend", peer, tag, bytes, q)
	r.st.recvs[q] = tracefmt.Completion{Req: q, Src: spec.Undefined, Tag: spec.AnyTag}
	return q
}

// Recv records MPI_Recv whose status is (peer, tag, bytes).
func (r *Rank) Recv(peer, tag int64, bytes uint64) *Rank {
	return r.RecvStatus(peer, tag, bytes, peer, tag, bytes)
}

// RecvStatus records MPI_Recv with an explicit status, e.g. for a wildcard
// receive (peer spec.AnySource, tag spec.AnyTag).
func (r *Rank) RecvStatus(peer, tag int64, bytes uint64, src, stag int64, sbytes uint64) *Rank {
	ev := r.begin(spec.Recv, "MPI_Recv")
	ev.Set(spec.Peer, peer)
	ev.Set(spec.Tag, tag)
	ev.SetUint(spec.Comm, r.Comm)
	ev.SetUint(spec.Bytes, bytes)
	ev.Set(spec.Src, src)
	ev.Set(spec.STag, stag)
	ev.SetUint(spec.SBytes, sbytes)
	r.emit(ev)
	return r
}

// Irecv records MPI_Irecv and returns its request id. Its completion will
// report the status (peer, tag, bytes) unless IrecvStatus is used.
func (r *Rank) Irecv(peer, tag int64, bytes uint64) uint64 {
	return r.IrecvStatus(peer, tag, bytes, peer, tag, bytes)
}

// IrecvStatus records MPI_Irecv whose completion will report the status
// (src, stag, sbytes).
func (r *Rank) IrecvStatus(peer, tag int64, bytes uint64, src, stag int64, sbytes uint64) uint64 {
	q := r.newReq()
	ev := r.begin(spec.Irecv, "MPI_Irecv")
	ev.Set(spec.Peer, peer)
	ev.Set(spec.Tag, tag)
	ev.SetUint(spec.Comm, r.Comm)
	ev.SetUint(spec.Bytes, bytes)
	ev.SetUint(spec.Req, q)
	r.emit(ev)
	r.st.recvs[q] = tracefmt.Completion{Req: q, Src: src, Tag: stag, Bytes: sbytes}
	return q
}

// Complete records a Wait/Test-family call fn that completed reqs (in that
// order), with flag (1 for a Wait). Each completion carries the status of
// the request's receive (a send request: src spec.Undefined, stag
// spec.AnyTag, sbytes 0). Request id 0 stands for MPI_REQUEST_NULL.
func (r *Rank) Complete(fn string, flag uint64, reqs ...uint64) *Rank {
	ev := r.begin(spec.Complete, fn)
	ev.SetUint(spec.Flag, flag)
	for _, q := range reqs {
		c, ok := r.st.recvs[q]
		if !ok {
			c = tracefmt.Completion{Req: q, Src: spec.Undefined, Tag: spec.AnyTag}
		}
		if flag != 0 {
			delete(r.st.recvs, q)
		}
		ev.Completions = append(ev.Completions, c)
	}
	r.emit(ev)
	return r
}

// Wait records MPI_Wait on req.
func (r *Rank) Wait(req uint64) *Rank { return r.Complete("MPI_Wait", 1, req) }

// Waitall records MPI_Waitall on reqs.
func (r *Rank) Waitall(reqs ...uint64) *Rank { return r.Complete("MPI_Waitall", 1, reqs...) }

// Sendrecv records MPI_Sendrecv: a send to dst and a receive from src,
// whose status is (src, rtag, rbytes).
func (r *Rank) Sendrecv(dst, stag int64, sbytes uint64, src, rtag int64, rbytes uint64) *Rank {
	ev := r.begin(spec.Sendrecv, "MPI_Sendrecv")
	ev.Set(spec.Peer, dst)
	ev.Set(spec.Tag, stag)
	ev.SetUint(spec.Bytes, sbytes)
	ev.Set(spec.RPeer, src)
	ev.Set(spec.RTag, rtag)
	ev.SetUint(spec.RBytes, rbytes)
	ev.SetUint(spec.Comm, r.Comm)
	ev.Set(spec.Src, src)
	ev.Set(spec.STag, rtag)
	ev.SetUint(spec.SBytes, rbytes)
	r.emit(ev)
	return r
}

// Coll records a blocking collective fn on the view's communicator.
func (r *Rank) Coll(fn string, root int64, bytes, rbytes uint64) *Rank {
	r.coll(fn, root, bytes, rbytes, 0)
	return r
}

// Icoll records a nonblocking collective and returns its request id.
func (r *Rank) Icoll(fn string, root int64, bytes, rbytes uint64) uint64 {
	q := r.newReq()
	r.coll(fn, root, bytes, rbytes, q)
	return q
}

func (r *Rank) coll(fn string, root int64, bytes, rbytes, req uint64) {
	ev := r.begin(spec.Coll, fn)
	ev.SetUint(spec.Comm, r.Comm)
	ev.Set(spec.Root, root)
	ev.SetUint(spec.Bytes, bytes)
	ev.SetUint(spec.RBytes, rbytes)
	ev.SetUint(spec.Req, req)
	r.emit(ev)
}

// Barrier records MPI_Barrier.
func (r *Rank) Barrier() *Rank { return r.Coll("MPI_Barrier", spec.RootNone, 0, 0) }

// Bcast records MPI_Bcast of bytes from root.
func (r *Rank) Bcast(root int64, bytes uint64) *Rank {
	if int64(r.st.rank) == root {
		return r.Coll("MPI_Bcast", root, bytes, 0)
	}
	return r.Coll("MPI_Bcast", root, 0, bytes)
}

// Allreduce records MPI_Allreduce of bytes.
func (r *Rank) Allreduce(bytes uint64) *Rank {
	return r.Coll("MPI_Allreduce", spec.RootNone, bytes, bytes)
}

// CommNew records the creation (by fn, e.g. "MPI_Comm_split") of a
// communicator derived from parent with global id gid and the given members
// (world ranks, in communicator rank order), and returns its local index.
func (r *Rank) CommNew(fn string, parent, gid uint64, members ...int64) uint64 {
	c := r.st.nextComm
	r.st.nextComm++
	ev := r.begin(spec.CommNew, fn)
	ev.SetUint(spec.Parent, parent)
	ev.SetUint(spec.Comm, c)
	ev.SetUint(spec.GID, gid)
	ev.Ranks = append(ev.Ranks, members...)
	r.emit(ev)
	return c
}

// CommFree records MPI_Comm_free of comm.
func (r *Rank) CommFree(comm uint64) *Rank {
	return r.Emit(spec.CommFree, "MPI_Comm_free", func(ev *tracefmt.Event) { ev.SetUint(spec.Comm, comm) })
}

// ClockSync records a clock synchronisation result.
func (r *Rank) ClockSync(phase uint64, offset int64, errNS uint64) *Rank {
	return r.Emit(spec.ClockSync, "", func(ev *tracefmt.Event) {
		ev.SetUint(spec.Phase, phase)
		ev.Set(spec.Offset, offset)
		ev.SetUint(spec.Err, errNS)
	})
}

// NoEnd makes the rank's file end without an end record, as when the rank
// was killed.
func (r *Rank) NoEnd() *Rank {
	r.st.noEnd = true
	return r
}

// SetEnd makes the rank's file end with the given end record instead of a
// normal one.
func (r *Rank) SetEnd(e tracefmt.End) *Rank {
	r.st.end = &e
	return r
}

// Dropped records n dropped events in the rank's end record.
func (r *Rank) Dropped(n uint64) *Rank {
	r.st.dropped = n
	return r
}

// Bytes finishes rank i's file (flush and end record) and returns it. A
// rank never used gets a file with just a header and an end record. The rank
// cannot be added to afterwards.
func (b *Builder) Bytes(i int) ([]byte, error) {
	st := b.ranks[i]
	if st == nil {
		b.Rank(i)
		st = b.ranks[i]
	}
	if st.err != nil {
		return nil, fmt.Errorf("testgen: rank %d: %w", i, st.err)
	}
	if st.w != nil {
		// Flush first, so that the end record counts every block.
		err := st.w.Flush()
		switch {
		case err != nil:
		case st.noEnd:
			err = st.w.CloseWithEnd(nil)
		case st.end != nil:
			err = st.w.CloseWithEnd(st.end)
		default:
			var t int64
			for _, th := range st.threads {
				t = max(t, th.clock)
			}
			err = st.w.CloseWithEnd(&tracefmt.End{Reason: spec.EndFinalize, Events: st.w.Events(), Blocks: st.w.Blocks(), Time: t, Dropped: st.dropped})
		}
		st.w = nil
		if err != nil {
			st.err = err
			return nil, fmt.Errorf("testgen: rank %d: %w", i, err)
		}
	}
	return st.buf.Bytes(), nil
}

// WriteDir writes every rank's file (rank-NNNNN.mpit) and a manifest into
// dir, which is created if needed.
func (b *Builder) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := 0; i < b.Size; i++ {
		data, err := b.Bytes(i)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, tracefmt.RankFileName(i)), data, 0o644); err != nil {
			return err
		}
	}
	t := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return tracefmt.WriteManifest(dir, &tracefmt.Manifest{
		RunID: b.RunID, Command: []string{"mpirun", "-np", fmt.Sprint(b.Size), "./testgen"}, Launcher: "mpirun",
		MPICompiler: "mpicc", MPILibrary: "testgen MPI 1.0", RecorderLibrary: "testgen",
		StartTime: t, EndTime: t.Add(time.Second), WorldSize: b.Size, FormatVersion: int(spec.Current), MpitraceVersion: "testgen",
	})
}
