package main_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// TestRecordMore records fixtures/programs/more.c, the calls mix.c does not
// make (synchronous, buffered and ready sends, Sendrecv_replace, persistent
// requests, probes and matched probes, Testall and Waitsome, cancellation,
// the v- and w-collectives, reductions that scatter or scan, MPI_IN_PLACE,
// nonblocking collectives, Cartesian, group-made and inter-communicators,
// large-count forms), and checks every call of every rank in order against
// what the program does. The task graph of the same trace must match every
// message and collective: critpath --strict reports nothing.
func TestRecordMore(t *testing.T) {
	for _, m := range mpis {
		for _, np := range []int{3, 4} {
			if m.name == "mpich" && np == 4 {
				continue // oversubscribed MPICH ranks poll each other slowly; 3 ranks cover the odd/even cases
			}
			t.Run(fmt.Sprintf("%s/np%d", m.name, np), func(t *testing.T) {
				m.require(t)
				out := recordLikePlain(t, m, np, m.compile(t, "more"))
				dir := filepath.Dir(out)
				_, logs := readTrace(t, out)
				if len(logs) != np {
					t.Fatalf("%d rank logs, want %d", len(logs), np)
				}
				checkMore(t, np, logs)
				cp := run(t, dir, mpitraceBin, "critpath", "--strict", out, "-o", filepath.Join(dir, "critPath.out"))
				if cp.code != 0 || cp.stderr != "" {
					t.Fatalf("critpath --strict: exit %d; every message and collective must match:\n%s", cp.code, cp.stderr)
				}
				if np != 3 {
					return
				}
				// The analysis as a job of 2 processes under both weights
				// (its nonblocking collectives, persistent requests,
				// probes and cancellations crossing groups): what one
				// process prints.
				for _, w := range []string{"model", "measured"} {
					one := run(t, dir, mpitraceBin, "critpath", "--weights", w, "-o", "-", out)
					job := run(t, dir, m.launch(2, mpitraceBin, "critpath", "--mpi", "--mpicc", m.cc, "--weights", w, "-o", "-", out)...)
					if one.code != 0 || job != one {
						t.Errorf("critpath --weights %s: exit %d with --mpi, %d without; stdout with --mpi:\n%s\nwithout:\n%s\nstderr with --mpi:\n%s", w, job.code, one.code, job.stdout, one.stdout, job.stderr)
					}
				}
			})
		}
	}
}

// checkMore checks every rank's log against fixtures/programs/more.c.
func checkMore(t *testing.T, np int, logs []*rankLog) {
	t.Helper()
	const W = spec.CommWorld
	n := int64(np)
	sum := n * (n + 1) / 2 // the ints of all ranks when rank r has r+1
	type F = map[spec.Field]int64
	gids := map[string]map[uint64]bool{} // communicator → the gids its members recorded
	gid := func(what string, g uint64) {
		if gids[what] == nil {
			gids[what] = map[uint64]bool{}
		}
		gids[what][g] = true
	}
	var evens, odds, world []int64
	for q := int64(0); q < n; q++ {
		world = append(world, q)
		if q%2 == 0 {
			evens = append(evens, q)
		} else {
			odds = append(odds, q)
		}
	}
	for _, l := range logs {
		r := int64(l.rank)
		c := &mixChecker{t: t, rank: l.rank, calls: l.calls, reqs: map[uint64]string{}, comms: map[uint64]uint64{}}
		right, left := (r+1)%n, (r+n-1)%n
		pick := func(cond bool, yes, no int64) int64 {
			if cond {
				return yes
			}
			return no
		}
		if l.end == nil || l.end.Reason != spec.EndFinalize || l.end.Dropped != 0 || l.diags.Len() != 0 {
			t.Fatalf("rank %d: end %+v, diagnostics %v; want a clean finalize", r, l.end, diagCodes(l.diags))
		}
		c.next("MPI_Init", spec.Call, nil)
		c.next("MPI_Comm_rank", spec.Call, nil)
		c.next("MPI_Comm_size", spec.Call, nil)

		// 1. Ssend ring.
		send := func(fn string, tag, bytes int64) {
			c.next(fn, spec.Send, F{spec.Peer: right, spec.Tag: tag, spec.Comm: W, spec.Bytes: bytes, spec.Req: 0})
		}
		recv := func(fn string, tag, bytes int64) {
			c.next(fn, spec.Recv, F{spec.Peer: left, spec.Tag: tag, spec.Comm: W, spec.Bytes: bytes,
				spec.Src: left, spec.STag: tag, spec.SBytes: bytes})
		}
		ring := func(sendFn, recvFn string, tag, bytes int64) {
			if r%2 == 0 {
				send(sendFn, tag, bytes)
				recv(recvFn, tag, bytes)
			} else {
				recv(recvFn, tag, bytes)
				send(sendFn, tag, bytes)
			}
		}
		ring("MPI_Ssend", "MPI_Recv", 1, 40)

		// 2. Bsend.
		c.next("MPI_Buffer_attach", spec.Call, nil)
		send("MPI_Bsend", 2, 40)
		recv("MPI_Recv", 2, 40)
		c.next("MPI_Buffer_detach", spec.Call, nil)

		// 3. Rsend to a receive posted before the Barrier.
		irecv := func(fn string, tag, bytes int64, what string) uint64 {
			return c.posted(c.next(fn, spec.Irecv, F{spec.Peer: left, spec.Tag: tag, spec.Comm: W, spec.Bytes: bytes}), what)
		}
		a := irecv("MPI_Irecv", 3, 12, "rsend's receive")
		c.next("MPI_Barrier", spec.Coll, F{spec.Comm: W, spec.Root: spec.RootNone, spec.Bytes: 0, spec.RBytes: 0, spec.Req: 0})
		send("MPI_Rsend", 3, 12)
		c.completions(c.next("MPI_Wait", spec.Complete, F{spec.Flag: 1}), []done{{a, left, 3, 12, true}})

		// 4. Sendrecv_replace: both halves and the receive's status.
		c.next("MPI_Sendrecv_replace", spec.Sendrecv, F{spec.Peer: right, spec.Tag: 4, spec.Bytes: 28, spec.RPeer: left, spec.RTag: 4,
			spec.RBytes: 28, spec.Comm: W, spec.Src: left, spec.STag: 4, spec.SBytes: 28})

		// 5. Persistent requests keep their ids across starts.
		p0 := irecv("MPI_Recv_init", 5, 24, "persistent receive")
		p1 := c.posted(c.next("MPI_Send_init", spec.Send, F{spec.Peer: right, spec.Tag: 5, spec.Comm: W, spec.Bytes: 24}), "persistent send")
		both := []done{{p0, left, 5, 24, true}, {req: p1}}
		for k := 0; k < 2; k++ {
			if st := c.next("MPI_Startall", spec.Start, nil); !slices.Equal(st.Reqs, []uint64{p0, p1}) {
				c.fail("Startall started %v, want %v", st.Reqs, []uint64{p0, p1})
			}
			c.completionsFlags(c.next("MPI_Waitall", spec.Complete, F{spec.Flag: 1}), both, spec.CompletionPersistent)
		}
		for _, p := range []uint64{p0, p1} {
			if st := c.next("MPI_Start", spec.Start, nil); !slices.Equal(st.Reqs, []uint64{p}) {
				c.fail("Start started %v, want [%d]", st.Reqs, p)
			}
		}
		c.completionsFlags(c.next("MPI_Wait", spec.Complete, F{spec.Flag: 1}), both[:1], spec.CompletionPersistent)
		c.completionsFlags(c.next("MPI_Wait", spec.Complete, F{spec.Flag: 1}), both[1:], spec.CompletionPersistent)
		c.next("MPI_Request_free", spec.ReqFree, F{spec.Req: int64(p0)})
		c.next("MPI_Request_free", spec.ReqFree, F{spec.Req: int64(p1)})

		// 6. Probes.
		send("MPI_Send", 6, 8)
		send("MPI_Send", 7, 12)
		send("MPI_Send", 8, 16)
		c.next("MPI_Probe", spec.Probe, F{spec.Peer: left, spec.Tag: 6, spec.Comm: W, spec.Flag: 1, spec.Src: left, spec.STag: 6, spec.SBytes: 8})
		recv("MPI_Recv", 6, 8)
		for c.i < len(c.calls) && c.calls[c.i].fn == "MPI_Iprobe" && c.calls[c.i].Flag() == 0 {
			c.next("MPI_Iprobe", spec.Probe, F{spec.Peer: left, spec.Tag: 7, spec.Comm: W, spec.Flag: 0})
		}
		c.next("MPI_Iprobe", spec.Probe, F{spec.Peer: left, spec.Tag: 7, spec.Comm: W, spec.Flag: 1, spec.Src: left, spec.STag: 7, spec.SBytes: 12})
		recv("MPI_Recv", 7, 12)
		c.next("MPI_Mprobe", spec.Probe, F{spec.Peer: left, spec.Tag: 8, spec.Comm: W, spec.Flag: 1, spec.Src: left, spec.STag: 8, spec.SBytes: 16})
		recv("MPI_Mrecv", 8, 16)

		// 7. Testall polls, then Waitsome until all four are done.
		t0 := irecv("MPI_Irecv", 9, 4, "testall receive")
		t1 := c.posted(c.next("MPI_Isend", spec.Send, F{spec.Peer: right, spec.Tag: 9, spec.Comm: W, spec.Bytes: 4}), "testall send")
		for c.i < len(c.calls) && c.calls[c.i].fn == "MPI_Testall" && c.calls[c.i].Flag() == 0 {
			c.completions(c.next("MPI_Testall", spec.Complete, nil), nil)
		}
		c.completions(c.next("MPI_Testall", spec.Complete, F{spec.Flag: 1}), []done{{t0, left, 9, 4, true}, {req: t1}})
		w0 := irecv("MPI_Irecv", 10, 8, "waitsome receive from the left")
		w1 := c.posted(c.next("MPI_Irecv", spec.Irecv, F{spec.Peer: right, spec.Tag: 11, spec.Comm: W, spec.Bytes: 8}), "waitsome receive from the right")
		w2 := c.posted(c.next("MPI_Isend", spec.Send, F{spec.Peer: right, spec.Tag: 10, spec.Comm: W, spec.Bytes: 8}), "waitsome send right")
		w3 := c.posted(c.next("MPI_Isend", spec.Send, F{spec.Peer: left, spec.Tag: 11, spec.Comm: W, spec.Bytes: 8}), "waitsome send left")
		seen := map[uint64]int{}
		for len(seen) < 4 {
			ws := c.next("MPI_Waitsome", spec.Complete, F{spec.Flag: 1})
			if len(ws.Completions) == 0 {
				c.fail("Waitsome completed nothing")
			}
			for i, cp := range ws.Completions {
				seen[cp.Req]++
				if i > 0 && cp.Req <= ws.Completions[i-1].Req {
					c.fail("Waitsome completions not in request-array order: %+v", ws.Completions)
				}
				switch cp.Req {
				case w0:
					if cp.Src != left || cp.Tag != 10 || cp.Bytes != 8 {
						c.fail("Waitsome status of the receive from the left: %+v", cp)
					}
				case w1:
					if cp.Src != right || cp.Tag != 11 || cp.Bytes != 8 {
						c.fail("Waitsome status of the receive from the right: %+v", cp)
					}
				case w2, w3:
				default:
					c.fail("Waitsome completed unknown request %d", cp.Req)
				}
			}
		}
		if seen[w0] != 1 || seen[w1] != 1 || seen[w2] != 1 || seen[w3] != 1 {
			c.fail("Waitsome completions %v", seen)
		}

		// 8. A cancelled receive.
		x := irecv("MPI_Irecv", 99, 4, "cancelled receive")
		c.next("MPI_Cancel", spec.ReqFree, F{spec.Req: int64(x)}) // frees nothing: the request is waited for
		c.completionsFlags(c.next("MPI_Wait", spec.Complete, F{spec.Flag: 1}), []done{{req: x}}, spec.CompletionCancelled)
		c.next("MPI_Test_cancelled", spec.Call, nil)

		// 9. Collectives: the bytes this rank sends and receives.
		coll := func(fn string, root, bytes, rbytes int64) *call {
			return c.next(fn, spec.Coll, F{spec.Comm: W, spec.Root: root, spec.Bytes: bytes, spec.RBytes: rbytes, spec.Req: 0})
		}
		none := int64(spec.RootNone)
		coll("MPI_Gatherv", 0, 4*(r+1), pick(r == 0, 4*sum, 0))
		coll("MPI_Scatterv", 1, pick(r == 1, 4*sum, 0), 4*(r+1))
		coll("MPI_Allgather", none, 8, 8*n)
		coll("MPI_Allgatherv", none, 4*(r+1), 4*sum)
		coll("MPI_Alltoallv", none, 4*sum, 4*n*(r+1))
		coll("MPI_Alltoallw", none, 16*n, 16*n)
		coll("MPI_Reduce_scatter", none, 4*sum, 4*(r+1))
		coll("MPI_Reduce_scatter_block", none, 8*n, 8)
		coll("MPI_Scan", none, 12, 12)
		coll("MPI_Exscan", none, 12, 12)
		coll("MPI_Allreduce", none, 20, 20) // MPI_IN_PLACE: the in-place block

		// 10. Nonblocking collectives, each completed by a Wait.
		icoll := func(fn string, root, bytes, rbytes int64) {
			id := c.posted(c.next(fn, spec.Coll, F{spec.Comm: W, spec.Root: root, spec.Bytes: bytes, spec.RBytes: rbytes}), fn)
			c.completions(c.next("MPI_Wait", spec.Complete, F{spec.Flag: 1}), []done{{req: id}})
		}
		icoll("MPI_Ibarrier", none, 0, 0)
		icoll("MPI_Ibcast", 0, pick(r == 0, 32, 0), pick(r == 0, 0, 32))
		icoll("MPI_Iallreduce", none, 4, 4)

		// 11. Communicators: members in world ranks, a gid shared by the
		// members, and collectives on the new local index.
		commNew := func(fn string, parent uint64, remote int64, members []int64, what string) uint64 {
			cn := c.next(fn, spec.CommNew, F{spec.Parent: int64(parent), spec.Remote: remote})
			if !slices.Equal(cn.Ranks, members) || cn.Comm() <= spec.CommSelf {
				c.fail("%s: comm %d members %v, want a new index and %v", fn, cn.Comm(), cn.Ranks, members)
			}
			gid(what, cn.GID())
			return cn.Comm()
		}
		cart := commNew("MPI_Cart_create", W, 0, world, "cart")
		c.next("MPI_Bcast", spec.Coll, F{spec.Comm: int64(cart), spec.Root: 0, spec.Bytes: pick(r == 0, 16, 0), spec.RBytes: pick(r == 0, 0, 16)})
		c.next("MPI_Comm_group", spec.Call, nil)
		c.next("MPI_Group_incl", spec.Call, nil)
		mine, other := evens, odds
		if r%2 == 1 {
			mine, other = odds, evens
		}
		if r%2 == 0 {
			ev := commNew("MPI_Comm_create_group", W, 0, evens, "evens")
			c.next("MPI_Allreduce", spec.Coll, F{spec.Comm: int64(ev), spec.Root: none, spec.Bytes: 4, spec.RBytes: 4})
			c.next("MPI_Comm_free", spec.CommFree, F{spec.Comm: int64(ev)})
		}
		c.next("MPI_Group_free", spec.Call, nil)
		c.next("MPI_Group_free", spec.Call, nil)
		half := commNew("MPI_Comm_split", W, 0, mine, "half "+strconv.FormatInt(r%2, 10))
		inter := commNew("MPI_Intercomm_create", half, int64(len(other)), append(slices.Clone(mine), other...), "inter")
		merged := commNew("MPI_Intercomm_merge", inter, 0, append(slices.Clone(evens), odds...), "merged")
		c.next("MPI_Barrier", spec.Coll, F{spec.Comm: int64(merged), spec.Root: none, spec.Bytes: 0, spec.RBytes: 0})
		for _, cm := range []uint64{merged, inter, half, cart} {
			c.next("MPI_Comm_free", spec.CommFree, F{spec.Comm: int64(cm)})
		}

		// 12. Large-count forms, where the MPI has them.
		if v, _ := l.header.Get("mpi_version"); v >= "4" {
			ring("MPI_Send_c", "MPI_Recv_c", 13, 36)
		}
		c.next("MPI_Finalize", spec.Call, nil)
		if c.i != len(c.calls) {
			c.fail("%d calls after MPI_Finalize", len(c.calls)-c.i)
		}
	}
	for what, g := range gids {
		if len(g) != 1 {
			t.Errorf("the members of %s recorded %d different gids", what, len(g))
		}
	}
	if h0, h1 := gids["half 0"], gids["half 1"]; np > 1 && fmt.Sprint(h0) == fmt.Sprint(h1) {
		t.Errorf("the two halves of MPI_Comm_split got the same gid %v", h0)
	}
}
