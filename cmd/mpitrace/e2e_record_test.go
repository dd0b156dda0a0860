package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// TestRecordMix records fixtures/programs/mix.c under each MPI and checks
// every call of every rank, in order, against what the program does: peer,
// tag, bytes, communicator, requests, completions and statuses. It also
// checks that the program's output and exit status are the same with and
// without the recorder.
func TestRecordMix(t *testing.T) {
	for _, m := range mpis {
		for _, np := range []int{4, 3} {
			t.Run(fmt.Sprintf("%s/np%d", m.name, np), func(t *testing.T) {
				m.require(t)
				out := recordLikePlain(t, m, np, m.compile(t, "mix"))
				tr, logs := readTrace(t, out)
				if tr.Size != np || len(logs) != np {
					t.Fatalf("world size %d, %d rank logs; want %d", tr.Size, len(logs), np)
				}
				if tr.Manifest == nil || tr.Manifest.ExitStatus != 0 || tr.Manifest.WorldSize != np || tr.Manifest.RunID != tr.RunID {
					t.Errorf("manifest: %+v (trace run id %s)", tr.Manifest, tr.RunID)
				}
				checkMix(t, np, logs)
			})
		}
	}
}

// recordLikePlain runs bin on np ranks without the recorder, then records
// it into DIR/traces, which it returns: both runs must succeed with the same
// output, and record must print nothing of its own but its closing line.
func recordLikePlain(t *testing.T, m mpiImpl, np int, bin string) string {
	t.Helper()
	dir := t.TempDir()
	plain := run(t, dir, m.launch(np, bin)...)
	if plain.code != 0 {
		t.Fatalf("without the recorder: exit %d\n%s", plain.code, plain.stderr)
	}
	out := filepath.Join(dir, "traces")
	rec := record(t, out, nil, m.launch(np, bin)...)
	if rec.code != 0 {
		t.Fatalf("record exited %d\nstderr:\n%s", rec.code, rec.stderr)
	}
	if !slices.Equal(sortedLines(rec.stdout), sortedLines(plain.stdout)) {
		t.Fatalf("the program's output changed under record:\nrecorded:\n%s\nplain:\n%s", rec.stdout, plain.stdout)
	}
	closingLine(t, rec.stderr, "no data lost")
	return out
}

// closingLine checks that stderr is nothing but record's closing line and
// that the line contains want.
func closingLine(t *testing.T, stderr, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "mpitrace: ") || !strings.Contains(lines[0], " rank logs in ") {
		t.Errorf("record printed more than its closing line:\n%s", stderr)
		return
	}
	if !strings.Contains(lines[0], want) {
		t.Errorf("closing line %q does not say %q", lines[0], want)
	}
}

// TestRecordExitStatus: record exits with the application's status and
// leaves its output alone.
func TestRecordExitStatus(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			bin := m.compile(t, "mix")
			dir := t.TempDir()
			plain := run(t, dir, m.launch(2, bin, "7")...)
			rec := record(t, filepath.Join(dir, "traces"), nil, m.launch(2, bin, "7")...)
			if plain.code != 7 || rec.code != plain.code {
				t.Fatalf("exit status: %d under record, %d alone; want 7", rec.code, plain.code)
			}
			if !slices.Equal(sortedLines(rec.stdout), sortedLines(plain.stdout)) {
				t.Fatalf("output changed:\n%s\nvs\n%s", rec.stdout, plain.stdout)
			}
			tr, _ := readTrace(t, filepath.Join(dir, "traces"))
			if tr.Manifest.ExitStatus != 7 {
				t.Errorf("manifest exit status %d, want 7", tr.Manifest.ExitStatus)
			}
		})
	}
}

// mixChecker walks one rank's calls.
type mixChecker struct {
	t     *testing.T
	rank  int
	calls []call
	i     int
	reqs  map[uint64]string // request id → what posted it
	comms map[uint64]uint64 // comm index → gid
}

func (c *mixChecker) fail(format string, args ...any) {
	c.t.Helper()
	var ctx strings.Builder
	for j := max(0, c.i-3); j < min(len(c.calls), c.i+3); j++ {
		mark := "  "
		if j == c.i {
			mark = "->"
		}
		fmt.Fprintf(&ctx, "\n  %s %s", mark, c.calls[j].String())
	}
	c.t.Fatalf("rank %d, call %d: %s%s", c.rank, c.i, fmt.Sprintf(format, args...), ctx.String())
}

// next checks that the next call is fn of kind k with the given fields.
func (c *mixChecker) next(fn string, k spec.Kind, want map[spec.Field]int64) *call {
	c.t.Helper()
	if c.i >= len(c.calls) {
		c.fail("the log ends; want %s", fn)
	}
	got := &c.calls[c.i]
	if got.fn != fn || got.Kind != k {
		c.fail("got %s %s, want %s %s", got.Name(), got.fn, spec.Kinds[k].Name, fn)
	}
	for f, v := range want {
		if got.F[f] != v {
			c.fail("%s: %s=%d, want %d", fn, spec.Fields[f].Name, got.F[f], v)
		}
	}
	if got.End < got.Start {
		c.fail("%s ends before it starts", fn)
	}
	if c.i > 0 && got.Start < c.calls[c.i-1].End {
		c.fail("%s starts before the previous call ends", fn)
	}
	c.i++
	return got
}

// posted checks that a call created a new request.
func (c *mixChecker) posted(cl *call, what string) uint64 {
	c.t.Helper()
	id := cl.Req()
	if id == 0 {
		c.fail("%s has no request id", what)
	}
	if prev, dup := c.reqs[id]; dup {
		c.fail("request id %d of %s was already used by %s", id, what, prev)
	}
	c.reqs[id] = what
	return id
}

type done struct {
	req        uint64
	src, stag  int64
	sbytes     uint64
	isReceived bool
}

// completions checks a completion list against the wanted one, in order.
func (c *mixChecker) completions(cl *call, want []done) {
	c.t.Helper()
	c.completionsFlags(cl, want, 0)
}

// completionsFlags is completions for requests whose completions carry the
// given flags (spec.CompletionPersistent, spec.CompletionCancelled).
func (c *mixChecker) completionsFlags(cl *call, want []done, flags uint64) {
	c.t.Helper()
	if len(cl.Completions) != len(want) {
		c.fail("%s completed %d requests, want %d", cl.fn, len(cl.Completions), len(want))
	}
	for i, w := range want {
		g := cl.Completions[i]
		if g.Req != w.req || g.Flags != flags {
			c.fail("%s completion %d: req %d flags %d, want req %d flags %d", cl.fn, i, g.Req, g.Flags, w.req, flags)
		}
		if w.isReceived && (g.Src != w.src || g.Tag != w.stag || g.Bytes != w.sbytes) {
			c.fail("%s completion %d (req %d): status src=%d tag=%d bytes=%d, want %d %d %d",
				cl.fn, i, g.Req, g.Src, g.Tag, g.Bytes, w.src, w.stag, w.sbytes)
		}
	}
}

// checkMix checks every rank's log against fixtures/programs/mix.c.
func checkMix(t *testing.T, np int, logs []*rankLog) {
	t.Helper()
	const world = spec.CommWorld
	subGID := map[int]uint64{} // colour → gid
	for _, l := range logs {
		r := l.rank
		c := &mixChecker{t: t, rank: r, calls: l.calls, reqs: map[uint64]string{}, comms: map[uint64]uint64{}}
		right, left := int64((r+1)%np), int64((r+np-1)%np)
		if l.end == nil || l.end.Reason != spec.EndFinalize || l.end.Dropped != 0 {
			t.Fatalf("rank %d: end record %+v, want a clean finalize", r, l.end)
		}
		if n := l.diags.Len(); n != 0 {
			t.Fatalf("rank %d: diagnostics %v", r, diagCodes(l.diags))
		}
		if len(l.clocks) != 2 || l.clocks[0].Phase() != spec.PhaseInit || l.clocks[1].Phase() != spec.PhaseFinalize {
			t.Fatalf("rank %d: clock syncs %+v, want one at init and one at finalize", r, l.clocks)
		}
		if r == 0 && (l.clocks[0].Offset() != 0 || l.clocks[1].Offset() != 0) {
			t.Errorf("rank 0's offset to itself is not 0: %+v", l.clocks)
		}
		if l.header.Rank != r || l.header.Size != np || l.header.MPILibrary == "" {
			t.Errorf("rank %d: header %+v", r, l.header)
		}

		c.next("MPI_Init", spec.Call, nil)
		c.next("MPI_Comm_rank", spec.Call, nil)
		c.next("MPI_Comm_size", spec.Call, nil)

		// 1. Blocking ring.
		send := func() {
			c.next("MPI_Send", spec.Send, map[spec.Field]int64{spec.Peer: right, spec.Tag: 10, spec.Comm: world, spec.Bytes: 400, spec.Req: 0})
		}
		recv := func() {
			c.next("MPI_Recv", spec.Recv, map[spec.Field]int64{spec.Peer: left, spec.Tag: 10, spec.Comm: world, spec.Bytes: 400,
				spec.Src: left, spec.STag: 10, spec.SBytes: 400})
		}
		if r%2 == 0 {
			send()
			recv()
		} else {
			recv()
			send()
		}

		// 2. Halo with Waitall: completions in request-array order.
		irecv := func(peer, tag, bytes int64, what string) uint64 {
			return c.posted(c.next("MPI_Irecv", spec.Irecv, map[spec.Field]int64{spec.Peer: peer, spec.Tag: tag, spec.Comm: world, spec.Bytes: bytes}), what)
		}
		isend := func(peer, tag, bytes int64, what string) uint64 {
			return c.posted(c.next("MPI_Isend", spec.Send, map[spec.Field]int64{spec.Peer: peer, spec.Tag: tag, spec.Comm: world, spec.Bytes: bytes}), what)
		}
		a := irecv(left, 20, 400, "halo irecv left")
		b := irecv(right, 20, 400, "halo irecv right")
		cs := isend(left, 20, 400, "halo isend left")
		d := isend(right, 20, 400, "halo isend right")
		wa := c.next("MPI_Waitall", spec.Complete, map[spec.Field]int64{spec.Flag: 1})
		c.completions(wa, []done{{a, left, 20, 400, true}, {b, right, 20, 400, true}, {req: cs}, {req: d}})

		// 3. Waitany twice: each completes one; together both.
		e := irecv(left, 30, 8, "waitany irecv")
		f := isend(right, 30, 8, "waitany isend")
		var got []uint64
		for k := 0; k < 2; k++ {
			w := c.next("MPI_Waitany", spec.Complete, map[spec.Field]int64{spec.Flag: 1})
			if len(w.Completions) != 1 {
				c.fail("Waitany completed %d requests", len(w.Completions))
			}
			cp := w.Completions[0]
			if cp.Req == e && (cp.Src != left || cp.Tag != 30 || cp.Bytes != 8) {
				c.fail("Waitany status of the receive: %+v", cp)
			}
			got = append(got, cp.Req)
		}
		slices.Sort(got)
		if !slices.Equal(got, []uint64{min(e, f), max(e, f)}) {
			c.fail("Waitany completed %v, want %d and %d", got, e, f)
		}

		// 4. Testsome until both are done: any number of polls.
		g := irecv(right, 40, 12, "testsome irecv")
		h := isend(left, 40, 12, "testsome isend")
		seen := map[uint64]int{}
		for len(seen) < 2 {
			ts := c.next("MPI_Testsome", spec.Complete, nil)
			if (ts.Flag() == 1) != (len(ts.Completions) > 0) {
				c.fail("Testsome flag %d with %d completions", ts.Flag(), len(ts.Completions))
			}
			for _, cp := range ts.Completions {
				seen[cp.Req]++
				if cp.Req == g && (cp.Src != right || cp.Tag != 40 || cp.Bytes != 12) {
					c.fail("Testsome status of the receive: %+v", cp)
				}
				if cp.Req != g && cp.Req != h {
					c.fail("Testsome completed unknown request %d", cp.Req)
				}
			}
		}
		if seen[g] != 1 || seen[h] != 1 {
			c.fail("Testsome completions %v", seen)
		}

		// 5. Wildcards.
		if r == 0 {
			var srcs []int64
			for k := 1; k < np; k++ {
				rv := c.next("MPI_Recv", spec.Recv, map[spec.Field]int64{spec.Peer: spec.AnySource, spec.Tag: 50, spec.Comm: world, spec.Bytes: 32, spec.STag: 50})
				if rv.SBytes() != uint64(4*(rv.Src()+1)) {
					c.fail("ANY_SOURCE receive from %d got %d bytes, want %d", rv.Src(), rv.SBytes(), 4*(rv.Src()+1))
				}
				srcs = append(srcs, rv.Src())
			}
			slices.Sort(srcs)
			for k := 1; k < np; k++ {
				if srcs[k-1] != int64(k) {
					c.fail("ANY_SOURCE receives came from %v, want 1..%d once each", srcs, np-1)
				}
			}
			srcs = nil
			for k := 1; k < np; k++ {
				id := c.posted(c.next("MPI_Irecv", spec.Irecv, map[spec.Field]int64{spec.Peer: spec.AnySource, spec.Tag: spec.AnyTag, spec.Comm: world, spec.Bytes: 32}), "any irecv")
				w := c.next("MPI_Wait", spec.Complete, map[spec.Field]int64{spec.Flag: 1})
				if len(w.Completions) != 1 || w.Completions[0].Req != id {
					c.fail("Wait completed %+v, want request %d", w.Completions, id)
				}
				cp := w.Completions[0]
				if cp.Tag != 60+cp.Src || cp.Bytes != 8 {
					c.fail("ANY_TAG status %+v: want tag 60+source and 8 bytes", cp)
				}
				srcs = append(srcs, cp.Src)
			}
			slices.Sort(srcs)
			for k := 1; k < np; k++ {
				if srcs[k-1] != int64(k) {
					c.fail("ANY_SOURCE/ANY_TAG receives came from %v", srcs)
				}
			}
		} else {
			c.next("MPI_Send", spec.Send, map[spec.Field]int64{spec.Peer: 0, spec.Tag: 50, spec.Comm: world, spec.Bytes: int64(4 * (r + 1))})
			c.next("MPI_Send", spec.Send, map[spec.Field]int64{spec.Peer: 0, spec.Tag: int64(60 + r), spec.Comm: world, spec.Bytes: 8})
		}

		// 6. MPI_Comm_split(world, r%2, -r): members in descending rank order.
		var members []int64
		for q := np - 1; q >= 0; q-- {
			if q%2 == r%2 {
				members = append(members, int64(q))
			}
		}
		cn := c.next("MPI_Comm_split", spec.CommNew, map[spec.Field]int64{spec.Parent: world, spec.Remote: 0})
		sub := cn.Comm()
		if sub <= spec.CommSelf || !reflect.DeepEqual(cn.Ranks, members) {
			c.fail("CommNew comm=%d members %v, want a new index and %v", sub, cn.Ranks, members)
		}
		if gid, ok := subGID[r%2]; ok && gid != cn.GID() {
			c.fail("colour %d: gid %x differs from another member's %x", r%2, cn.GID(), gid)
		}
		subGID[r%2] = cn.GID()
		c.next("MPI_Comm_rank", spec.Call, nil)
		c.next("MPI_Comm_size", spec.Call, nil)
		c.next("MPI_Allreduce", spec.Coll, map[spec.Field]int64{spec.Comm: int64(sub), spec.Root: spec.RootNone, spec.Bytes: 4, spec.RBytes: 4})
		subRoot := members[0]
		bsent, brecv := int64(0), int64(32)
		if int64(r) == subRoot {
			bsent, brecv = 32, 0
		}
		c.next("MPI_Bcast", spec.Coll, map[spec.Field]int64{spec.Comm: int64(sub), spec.Root: subRoot, spec.Bytes: bsent, spec.RBytes: brecv})
		c.next("MPI_Barrier", spec.Coll, map[spec.Field]int64{spec.Comm: int64(sub), spec.Root: spec.RootNone, spec.Bytes: 0, spec.RBytes: 0})
		if len(members) > 1 {
			switch int64(r) {
			case members[0]:
				c.next("MPI_Send", spec.Send, map[spec.Field]int64{spec.Peer: members[1], spec.Tag: 70, spec.Comm: int64(sub), spec.Bytes: 4})
			case members[1]:
				c.next("MPI_Recv", spec.Recv, map[spec.Field]int64{spec.Peer: members[0], spec.Tag: 70, spec.Comm: int64(sub), spec.Bytes: 4,
					spec.Src: members[0], spec.STag: 70, spec.SBytes: 4})
			}
		}

		// 7. World collectives: bytes this rank sends and receives.
		is := func(root int) bool { return r == root }
		pick := func(cond bool, yes, no int64) int64 {
			if cond {
				return yes
			}
			return no
		}
		n := int64(np)
		c.next("MPI_Barrier", spec.Coll, map[spec.Field]int64{spec.Comm: world, spec.Root: spec.RootNone, spec.Bytes: 0, spec.RBytes: 0})
		c.next("MPI_Bcast", spec.Coll, map[spec.Field]int64{spec.Comm: world, spec.Root: int64(1 % np), spec.Bytes: pick(is(1%np), 40, 0), spec.RBytes: pick(is(1%np), 0, 40)})
		c.next("MPI_Alltoall", spec.Coll, map[spec.Field]int64{spec.Comm: world, spec.Root: spec.RootNone, spec.Bytes: 8 * n, spec.RBytes: 8 * n})
		c.next("MPI_Scatter", spec.Coll, map[spec.Field]int64{spec.Comm: world, spec.Root: 0, spec.Bytes: pick(is(0), 12*n, 0), spec.RBytes: 12})
		c.next("MPI_Gather", spec.Coll, map[spec.Field]int64{spec.Comm: world, spec.Root: n - 1, spec.Bytes: 40, spec.RBytes: pick(is(np-1), 40*n, 0)})
		c.next("MPI_Reduce", spec.Coll, map[spec.Field]int64{spec.Comm: world, spec.Root: 0, spec.Bytes: 28, spec.RBytes: pick(is(0), 28, 0)})
		c.next("MPI_Allreduce", spec.Coll, map[spec.Field]int64{spec.Comm: world, spec.Root: spec.RootNone, spec.Bytes: 8, spec.RBytes: 8})
		c.next("MPI_Comm_free", spec.CommFree, map[spec.Field]int64{spec.Comm: int64(sub)})
		c.next("MPI_Finalize", spec.Call, nil)
		if c.i != len(c.calls) {
			c.fail("%d calls after MPI_Finalize", len(c.calls)-c.i)
		}
	}
	if np > 1 && subGID[0] == subGID[1] {
		t.Errorf("the two colours of MPI_Comm_split got the same gid %x", subGID[0])
	}
}

// TestRecordRefusesToMix: a second recording into the same directory is
// refused and the first stays intact; --force replaces it.
func TestRecordRefusesToMix(t *testing.T) {
	m := mpis[0]
	m.require(t)
	bin := m.compile(t, "faults")
	dir := t.TempDir()
	out := filepath.Join(dir, "traces")
	if r := record(t, out, nil, m.launch(2, bin, "finalize", "2")...); r.code != 0 {
		t.Fatalf("first recording: exit %d\n%s", r.code, r.stderr)
	}
	tr1, _ := readTrace(t, out)
	r := record(t, out, nil, m.launch(2, bin, "finalize", "2")...)
	if r.code != 1 || !strings.Contains(r.stderr, "already holds a recording") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("second recording into the same directory: exit %d, stderr %q", r.code, r.stderr)
	}
	tr2, _ := readTrace(t, out)
	if tr2.RunID != tr1.RunID {
		t.Fatalf("the refused recording changed the directory: run %s, was %s", tr2.RunID, tr1.RunID)
	}
	if r := record(t, out, []string{"--force"}, m.launch(2, bin, "finalize", "2")...); r.code != 0 {
		t.Fatalf("--force: exit %d\n%s", r.code, r.stderr)
	}
	tr3, _ := readTrace(t, out)
	if tr3.RunID == tr1.RunID {
		t.Fatalf("--force kept the old recording")
	}
}

// TestRecordUsage: record's own errors are one line with a usage status.
func TestRecordUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"record"}, 2, "needs the command to run"},
		{[]string{"record", "--buffer", "12", "--", "true"}, 2, "--buffer"},
		{[]string{"record", "-o", filepath.Join(dir, "x"), "--", "/no/such/program"}, 127, "cannot run /no/such/program"},
	} {
		r := run(t, dir, append([]string{mpitraceBin}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("mpitrace %v: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.msg)
		}
		if strings.Contains(r.stderr, "goroutine") || strings.Contains(r.stderr, "panic") {
			t.Errorf("mpitrace %v panicked: %s", tc.args, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x", tracefmt.ManifestName)); err == nil {
		t.Errorf("a failed launch wrote a manifest")
	}
}

// recordThreads records fixtures/programs/threads.c on 2 ranks with small
// blocks (so the threads' blocks interleave in the file) and returns the
// trace directory and its logs, which must have no diagnostics.
func recordThreads(t *testing.T, m mpiImpl, args ...string) (string, []*rankLog) {
	t.Helper()
	m.require(t)
	bin := m.compile(t, "threads")
	out := filepath.Join(t.TempDir(), "traces")
	r := record(t, out, []string{"--buffer", "4k"}, m.launch(2, append([]string{bin}, args...)...)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	_, logs := readTrace(t, out)
	for _, l := range logs {
		if n := l.diags.Len(); n != 0 {
			t.Fatalf("rank %d: diagnostics %v", l.rank, diagCodes(l.diags))
		}
	}
	return out, logs
}

// TestRecordThreads: four threads per rank call MPI_Sendrecv at once under
// MPI_THREAD_MULTIPLE; every call is recorded once, on the thread that made
// it, with its own arguments, and the rank's events come back merged by
// start time. Small blocks make the threads' blocks interleave in the file.
func TestRecordThreads(t *testing.T) {
	const threads, iters = 4, 200
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			_, logs := recordThreads(t, m, fmt.Sprint(threads), fmt.Sprint(iters))
			for _, l := range logs {
				var dups []uint64 // communicator index of thread t's duplicate
				perThread := map[int]int{}
				tagOfThread := map[int]int64{}
				lastEnd := map[int]int64{}
				var prevStart int64
				for _, c := range l.calls {
					if c.Start < prevStart {
						t.Fatalf("rank %d: events not merged by start time", l.rank)
					}
					prevStart = c.Start
					if c.Start < lastEnd[c.Thread] {
						t.Fatalf("rank %d thread %d: %s starts before the thread's previous call ends", l.rank, c.Thread, c.fn)
					}
					lastEnd[c.Thread] = c.End
					switch c.fn {
					case "MPI_Comm_dup":
						if c.Thread != 0 {
							t.Fatalf("rank %d: MPI_Comm_dup on thread %d, the program calls it on the main thread", l.rank, c.Thread)
						}
						dups = append(dups, c.Comm())
					case "MPI_Sendrecv":
						if c.Thread == 0 {
							t.Fatalf("rank %d: MPI_Sendrecv recorded on the main thread", l.rank)
						}
						tag := c.Tag()
						if tag < 0 || tag >= threads || c.Comm() != dups[tag] {
							t.Fatalf("rank %d: Sendrecv tag %d on comm %d; thread t uses tag t on duplicate t (%v)", l.rank, tag, c.Comm(), dups)
						}
						if prev, ok := tagOfThread[c.Thread]; ok && prev != tag {
							t.Fatalf("rank %d: recorder thread %d made calls of program threads %d and %d", l.rank, c.Thread, prev, tag)
						}
						tagOfThread[c.Thread] = tag
						peer := int64(l.rank ^ 1)
						if c.Peer() != peer || c.RPeer() != peer || c.Bytes() != 4 || c.Src() != peer || c.STag() != tag || c.SBytes() != 4 {
							t.Fatalf("rank %d: %s", l.rank, c.String())
						}
						perThread[c.Thread]++
					}
				}
				if len(perThread) != threads {
					t.Fatalf("rank %d: Sendrecv on %d recorder threads, want %d", l.rank, len(perThread), threads)
				}
				// Call sites: the threads share the rank's table; the
				// program's one MPI_Sendrecv line is one site, whichever
				// thread first called it.
				sendrecvSites := map[uint64]bool{}
				for _, c := range l.calls {
					if _, ok := l.sites.Addr(c.Site()); !ok {
						t.Fatalf("rank %d thread %d: %s with site %d, not in the table", l.rank, c.Thread, c.fn, c.Site())
					}
					if c.fn == "MPI_Sendrecv" {
						sendrecvSites[c.Site()] = true
					}
				}
				if len(sendrecvSites) != 1 {
					t.Errorf("rank %d: MPI_Sendrecv from %d sites, want 1", l.rank, len(sendrecvSites))
				}
				for th, n := range perThread {
					if n != iters {
						t.Errorf("rank %d thread %d: %d Sendrecv, want %d", l.rank, th, n, iters)
					}
				}
			}
		})
	}
}

// TestRecordThreadsNonblocking: eight threads per rank each post an Irecv and
// an Isend and complete them with Waitall or Testall polls, so MPI frees and
// hands out request handles on all threads at once. Every completion must
// name the requests its own thread created just before (the recorder takes
// the ids before PMPI can free the handles), and critpath --strict must match
// every message.
func TestRecordThreadsNonblocking(t *testing.T) {
	const threads, iters = 8, 150
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			out, logs := recordThreads(t, m, fmt.Sprint(threads), fmt.Sprint(iters), "nb")
			for _, l := range logs {
				type pending struct{ recv, send uint64 }
				open := map[int]*pending{} // per thread: the requests not completed yet
				done := map[int]int{}      // per thread: iterations completed
				wrong := 0
				for _, c := range l.calls {
					p := open[c.Thread]
					if p == nil {
						p = &pending{}
						open[c.Thread] = p
					}
					switch c.fn {
					case "MPI_Irecv":
						p.recv = c.Req()
					case "MPI_Isend":
						p.send = c.Req()
					case "MPI_Waitall", "MPI_Testall":
						if len(c.Completions) == 0 {
							continue
						}
						var got []uint64
						for _, x := range c.Completions {
							got = append(got, x.Req)
							if x.Req == p.recv && (x.Src != int64(l.rank^1) || x.Bytes != 4) {
								t.Errorf("rank %d thread %d: receive completion %+v, want source %d and 4 bytes", l.rank, c.Thread, x, l.rank^1)
							}
						}
						if !slices.Equal(got, []uint64{p.recv, p.send}) {
							if wrong < 5 {
								t.Errorf("rank %d thread %d: %s completed requests %v, the thread's own are [%d %d]", l.rank, c.Thread, c.fn, got, p.recv, p.send)
							}
							wrong++
						}
						done[c.Thread]++
						*p = pending{}
					}
				}
				if wrong > 0 {
					t.Errorf("rank %d: %d completions name another thread's requests", l.rank, wrong)
				}
				if len(done) != threads {
					t.Errorf("rank %d: completions on %d threads, want %d", l.rank, len(done), threads)
				}
				for th, n := range done {
					if n != iters {
						t.Errorf("rank %d thread %d: %d completed iterations, want %d", l.rank, th, n, iters)
					}
				}
			}
			if cp := run(t, filepath.Dir(out), mpitraceBin, "critpath", "--strict", "-o", "-", out); cp.code != 0 {
				t.Errorf("critpath --strict exited %d:\n%s", cp.code, cp.stderr)
			}
		})
	}
}

// TestRecordWrongMPI: a recorder built for one MPI, loaded into a program
// of the other (a wrong guess, or a preload by hand), detects it when it is
// loaded and steps aside: the program runs exactly as without the recorder,
// and one line says why nothing was recorded and how to record it.
func TestRecordWrongMPI(t *testing.T) {
	for i, m := range mpis {
		other := mpis[1-i]
		t.Run(other.name+"-recorder-in-"+m.name, func(t *testing.T) {
			m.require(t)
			other.require(t)
			bin := m.compile(t, "mix")
			dir := t.TempDir()
			plain := run(t, dir, m.launch(3, bin)...)
			out := filepath.Join(dir, "traces")
			r := record(t, out, []string{"--mpicc", other.cc}, m.launch(3, bin)...)
			if r.code != plain.code || !slices.Equal(sortedLines(r.stdout), sortedLines(plain.stdout)) {
				t.Fatalf("the program changed under the wrong recorder: exit %d (alone %d)\n%s\nstderr:\n%s", r.code, plain.code, r.stdout, r.stderr)
			}
			var said []string
			for _, l := range mpitraceLines(r.stderr) {
				if strings.Contains(l, "the recorder was built for") {
					said = append(said, l)
				}
			}
			if len(said) != 1 || !strings.Contains(said[0], "--mpicc") {
				t.Errorf("want one line naming the fix (--mpicc), got %q\nstderr:\n%s", said, r.stderr)
			}
			if !strings.Contains(r.stderr, "nothing was recorded (the recorder stepped aside: see above)") {
				t.Errorf("the closing line does not say why nothing was recorded:\n%s", r.stderr)
			}
			if files, _ := filepath.Glob(filepath.Join(out, "rank-*.mpit")); len(files) != 0 {
				t.Errorf("%d rank logs written by a recorder of the wrong MPI", len(files))
			}
		})
	}
}
