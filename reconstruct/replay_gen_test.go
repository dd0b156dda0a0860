package reconstruct_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/reconstruct"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// A generator of MPI-like traces for TestReplayMPILike: rounds of halo
// exchanges (Irecv/Isend/Send, completed by Waitall, Waitany, Testsome or
// Waits, in order or not), wildcard gathers, persistent requests,
// Mprobe/Improbe/Probe with Mrecv/Imrecv, blocking and nonblocking
// collectives, communicators split and freed, cancelled receives and
// sends, MPI_Sendrecv rings, freed Isends; with a few events lost or with
// a wrong tag or source (a third of the traces), a rank without a log and
// ranks that end early. Time gaps and durations are random, without
// overlapping calls.

type grank struct {
	t       int64
	lines   []string
	nextReq int
	free    []int
}

type gcomm struct {
	gid     int
	members []int
	local   map[int]int
}

type tgen struct {
	rng   *rand.Rand
	n     int
	rs    []*grank
	comms []*gcomm
	gid   int
	tag   int
	tags  int // tags in turn: 5, or 50 (channels used once)
	bad   float64
}

func (g *tgen) req(r int) int {
	gr := g.rs[r]
	if len(gr.free) > 0 && g.rng.IntN(2) == 0 {
		i := g.rng.IntN(len(gr.free))
		q := gr.free[i]
		gr.free = append(gr.free[:i], gr.free[i+1:]...)
		return q
	}
	gr.nextReq++
	return gr.nextReq
}
func (g *tgen) freeReq(r, q int) { g.rs[r].free = append(g.rs[r].free, q) }

func (g *tgen) ev(r int, kind, fn, fields string) {
	gr := g.rs[r]
	gaps := []int64{0, 0, 10, 50, 100, 100, 300, 1000}
	gr.t += gaps[g.rng.IntN(len(gaps))]
	durs := []int64{0, 10, 10, 100, 100, 250}
	d := durs[g.rng.IntN(len(durs))]
	line := fmt.Sprintf("t=%d %s fn=%s dur=%d %s", gr.t, kind, fn, d, fields)
	gr.t += d
	if g.bad > 0 && g.rng.Float64() < g.bad {
		switch g.rng.IntN(3) {
		case 0:
			return // lost without trace
		case 1:
			line = strings.Replace(line, " tag=", " tag=3", 1)
			line = strings.Replace(line, "tag=3-", "tag=", 1)
		case 2:
			line = strings.Replace(line, " src=", " src=1", 1)
			line = strings.Replace(line, "src=1-", "src=-", 1)
		}
	}
	gr.lines = append(gr.lines, line)
}

func (g *tgen) pickComm() *gcomm {
	if len(g.comms) > 1 && g.rng.IntN(2) == 0 {
		return g.comms[1+g.rng.IntN(len(g.comms)-1)]
	}
	return g.comms[0]
}

type pendReq struct {
	q    int
	comp string
}

// complete emits completions of reqs on rank r in some Wait/Test style.
func (g *tgen) complete(r int, reqs []pendReq) {
	if len(reqs) == 0 {
		return
	}
	switch g.rng.IntN(5) {
	case 0: // waitall in order
		var cs []string
		for _, p := range reqs {
			cs = append(cs, p.comp)
		}
		g.ev(r, "Complete", "MPI_Waitall", "flag=1 completions=["+strings.Join(cs, ",")+"]")
	case 1: // waitany, random order
		perm := g.rng.Perm(len(reqs))
		for _, i := range perm {
			g.ev(r, "Complete", "MPI_Waitany", "flag=1 completions=["+reqs[i].comp+"]")
		}
	case 2: // testsome chunks with a failing test
		perm := g.rng.Perm(len(reqs))
		if g.rng.IntN(2) == 0 {
			g.ev(r, "Complete", "MPI_Testsome", "flag=0 completions=[]")
		}
		for len(perm) > 0 {
			k := 1 + g.rng.IntN(len(perm))
			var cs []string
			for _, i := range perm[:k] {
				cs = append(cs, reqs[i].comp)
			}
			g.ev(r, "Complete", "MPI_Testsome", "flag=1 completions=["+strings.Join(cs, ",")+"]")
			perm = perm[k:]
		}
	case 3: // wait each in order
		for _, p := range reqs {
			if g.rng.IntN(3) == 0 {
				g.ev(r, "Complete", "MPI_Test", "flag=0 completions=[]")
			}
			g.ev(r, "Complete", "MPI_Wait", "flag=1 completions=["+p.comp+"]")
		}
	case 4: // waitall in reverse
		var cs []string
		for i := len(reqs) - 1; i >= 0; i-- {
			cs = append(cs, reqs[i].comp)
		}
		g.ev(r, "Complete", "MPI_Waitall", "flag=1 completions=["+strings.Join(cs, ",")+"]")
	}
	for _, p := range reqs {
		if !strings.Contains(p.comp, "flags=2") {
			g.freeReq(r, p.q)
		}
	}
}

func sendComp(q int, flags int) string {
	return fmt.Sprintf("{req=%d src=0 stag=0 sbytes=0 flags=%d}", q, flags)
}
func recvComp(q, src, tag, bytes, flags int) string {
	return fmt.Sprintf("{req=%d src=%d stag=%d sbytes=%d flags=%d}", q, src, tag, bytes, flags)
}

func (g *tgen) round() {
	rng := g.rng
	n := g.n
	c := g.pickComm()
	m := c.members
	g.tag = (g.tag + 1) % g.tags
	tag := g.tag
	if rng.IntN(3) == 0 {
		tag = rng.IntN(3)
	}
	bytes := 8 * (1 + rng.IntN(4))
	switch rng.IntN(14) {
	case 0, 1: // halo on c
		pend := map[int][]pendReq{}
		for i, r := range m {
			l, rt := m[(i+len(m)-1)%len(m)], m[(i+1)%len(m)]
			for _, p := range []int{l, rt} {
				q := g.req(r)
				g.ev(r, "Irecv", "MPI_Irecv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=%d", p, tag, c.local[r], bytes, q))
				pend[r] = append(pend[r], pendReq{q, recvComp(q, p, tag, bytes, 0)})
			}
		}
		for i, r := range m {
			l, rt := m[(i+len(m)-1)%len(m)], m[(i+1)%len(m)]
			for _, p := range []int{rt, l} {
				if rng.IntN(5) == 0 {
					g.ev(r, "Send", "MPI_Send", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=0", p, tag, c.local[r], bytes))
					continue
				}
				q := g.req(r)
				g.ev(r, "Send", "MPI_Isend", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=%d", p, tag, c.local[r], bytes, q))
				pend[r] = append(pend[r], pendReq{q, sendComp(q, 0)})
			}
		}
		for _, r := range m {
			g.complete(r, pend[r])
		}
	case 2: // wildcard gather
		root := m[rng.IntN(len(m))]
		var others []int
		for _, r := range m {
			if r != root {
				others = append(others, r)
				if rng.IntN(2) == 0 {
					g.ev(r, "Send", "MPI_Send", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=0", root, tag, c.local[r], bytes+r))
				} else {
					q := g.req(r)
					g.ev(r, "Send", "MPI_Isend", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=%d", root, tag, c.local[r], bytes+r, q))
					g.complete(r, []pendReq{{q, sendComp(q, 0)}})
				}
			}
		}
		perm := rng.Perm(len(others))
		wtag := tag
		if rng.IntN(2) == 0 {
			wtag = -1
		}
		if rng.IntN(2) == 0 {
			for _, i := range perm {
				s := others[i]
				g.ev(root, "Recv", "MPI_Recv", fmt.Sprintf("peer=-1 tag=%d comm=%d bytes=64 src=%d stag=%d sbytes=%d", wtag, c.local[root], s, tag, bytes+s))
			}
		} else {
			var pr []pendReq
			for _, i := range perm {
				s := others[i]
				q := g.req(root)
				g.ev(root, "Irecv", "MPI_Irecv", fmt.Sprintf("peer=-1 tag=%d comm=%d bytes=64 req=%d", wtag, c.local[root], q))
				pr = append(pr, pendReq{q, recvComp(q, s, tag, bytes+s, 0)})
			}
			g.complete(root, pr)
		}
	case 3: // persistent
		if len(m) < 2 {
			return
		}
		a, b := m[rng.IntN(len(m))], m[rng.IntN(len(m))]
		if a == b {
			return
		}
		qs, qr := g.req(a), g.req(b)
		g.ev(a, "Send", "MPI_Send_init", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=%d", b, tag, c.local[a], bytes, qs))
		g.ev(b, "Irecv", "MPI_Recv_init", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=%d", a, tag, c.local[b], bytes, qr))
		for k := rng.IntN(4); k > 0; k-- {
			g.ev(b, "Start", "MPI_Start", fmt.Sprintf("reqs=[%d]", qr))
			g.ev(a, "Start", "MPI_Start", fmt.Sprintf("reqs=[%d]", qs))
			g.ev(a, "Complete", "MPI_Wait", "flag=1 completions=["+sendComp(qs, 2)+"]")
			g.ev(b, "Complete", "MPI_Wait", "flag=1 completions=["+recvComp(qr, a, tag, bytes, 2)+"]")
		}
		g.ev(a, "ReqFree", "MPI_Request_free", fmt.Sprintf("req=%d", qs))
		g.ev(b, "ReqFree", "MPI_Request_free", fmt.Sprintf("req=%d", qr))
		g.freeReq(a, qs)
		g.freeReq(b, qr)
	case 4: // mprobe / probe
		if len(m) < 2 {
			return
		}
		a, b := m[rng.IntN(len(m))], m[rng.IntN(len(m))]
		if a == b {
			return
		}
		g.ev(a, "Send", "MPI_Send", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=0", b, tag, c.local[a], bytes))
		g.ev(a, "Send", "MPI_Send", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=0", b, tag, c.local[a], bytes+1))
		switch rng.IntN(3) {
		case 0:
			g.ev(b, "Probe", "MPI_Mprobe", fmt.Sprintf("peer=%d tag=%d comm=%d flag=1 src=%d stag=%d sbytes=%d", a, tag, c.local[b], a, tag, bytes))
			g.ev(b, "Recv", "MPI_Recv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=64 src=%d stag=%d sbytes=%d", a, tag, c.local[b], a, tag, bytes+1))
			g.ev(b, "Recv", "MPI_Mrecv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=64 src=%d stag=%d sbytes=%d", a, tag, c.local[b], a, tag, bytes))
		case 1:
			g.ev(b, "Probe", "MPI_Iprobe", fmt.Sprintf("peer=-1 tag=-1 comm=%d flag=0", c.local[b]))
			g.ev(b, "Probe", "MPI_Improbe", fmt.Sprintf("peer=-1 tag=-1 comm=%d flag=1 src=%d stag=%d sbytes=%d", c.local[b], a, tag, bytes))
			q := g.req(b)
			g.ev(b, "Irecv", "MPI_Imrecv", fmt.Sprintf("peer=-5 tag=-1 comm=%d bytes=64 req=%d", c.local[b], q))
			g.ev(b, "Recv", "MPI_Recv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=64 src=%d stag=%d sbytes=%d", a, tag, c.local[b], a, tag, bytes+1))
			g.complete(b, []pendReq{{q, recvComp(q, a, tag, bytes, 0)}})
		case 2:
			g.ev(b, "Probe", "MPI_Probe", fmt.Sprintf("peer=-1 tag=%d comm=%d flag=1 src=%d stag=%d sbytes=%d", tag, c.local[b], a, tag, bytes))
			g.ev(b, "Recv", "MPI_Recv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=64 src=%d stag=%d sbytes=%d", a, tag, c.local[b], a, tag, bytes))
			g.ev(b, "Recv", "MPI_Recv", fmt.Sprintf("peer=-1 tag=-1 comm=%d bytes=64 src=%d stag=%d sbytes=%d", c.local[b], a, tag, bytes+1))
		}
	case 5, 6: // collectives
		fns := []string{"MPI_Barrier", "MPI_Allreduce", "MPI_Bcast", "MPI_Alltoall"}
		fn := fns[rng.IntN(len(fns))]
		root := -3
		if fn == "MPI_Bcast" {
			root = m[0]
		}
		for _, r := range m {
			g.ev(r, "Coll", fn, fmt.Sprintf("comm=%d root=%d bytes=%d rbytes=%d req=0", c.local[r], root, bytes, bytes))
		}
	case 7: // nonblocking collective, messages in between
		fns := []string{"MPI_Ibarrier", "MPI_Iallreduce"}
		fn := fns[rng.IntN(len(fns))]
		pend := map[int][]pendReq{}
		for _, r := range m {
			q := g.req(r)
			g.ev(r, "Coll", fn, fmt.Sprintf("comm=%d root=-3 bytes=%d rbytes=%d req=%d", c.local[r], bytes, bytes, q))
			pend[r] = append(pend[r], pendReq{q, sendComp(q, 0)})
		}
		if len(m) >= 2 {
			a, b := m[0], m[len(m)-1]
			g.ev(a, "Send", "MPI_Send", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=0", b, tag, c.local[a], bytes))
			q := g.req(b)
			g.ev(b, "Irecv", "MPI_Irecv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=%d", a, tag, c.local[b], bytes, q))
			pend[b] = append(pend[b], pendReq{q, recvComp(q, a, tag, bytes, 0)})
		}
		for _, r := range m {
			g.complete(r, pend[r])
		}
	case 8: // comm split
		if len(g.comms) > 4 {
			// free one
			k := 1 + rng.IntN(len(g.comms)-1)
			fc := g.comms[k]
			for _, r := range fc.members {
				g.ev(r, "CommFree", "MPI_Comm_free", fmt.Sprintf("comm=%d", fc.local[r]))
			}
			g.comms = append(g.comms[:k], g.comms[k+1:]...)
			return
		}
		colors := 1 + rng.IntN(2)
		groups := make([][]int, colors)
		for r := 0; r < n; r++ {
			k := rng.IntN(colors)
			groups[k] = append(groups[k], r)
		}
		base := 10 + g.gid*3
		for _, grp := range groups {
			if len(grp) == 0 {
				continue
			}
			g.gid++
			nc := &gcomm{gid: 100 + g.gid, members: grp, local: map[int]int{}}
			for _, r := range grp {
				nc.local[r] = base + r%2
			}
			var ls []string
			for _, r := range grp {
				ls = append(ls, fmt.Sprint(r))
			}
			for _, r := range grp {
				g.ev(r, "CommNew", "MPI_Comm_split", fmt.Sprintf("parent=1 comm=%d gid=%d remote=0 ranks=[%s]", nc.local[r], nc.gid, strings.Join(ls, ",")))
			}
			g.comms = append(g.comms, nc)
		}
	case 9: // cancel recv
		r := m[rng.IntN(len(m))]
		q := g.req(r)
		g.ev(r, "Irecv", "MPI_Irecv", fmt.Sprintf("peer=%d tag=4 comm=%d bytes=8 req=%d", m[0], c.local[r], q))
		g.ev(r, "ReqFree", "MPI_Cancel", fmt.Sprintf("req=%d", q))
		g.complete(r, []pendReq{{q, recvComp(q, 0, 0, 0, 1)}})
	case 10: // cancel send
		if len(m) < 2 {
			return
		}
		a, b := m[rng.IntN(len(m))], m[rng.IntN(len(m))]
		if a == b {
			return
		}
		q := g.req(a)
		g.ev(a, "Send", "MPI_Isend", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=%d", b, tag, c.local[a], bytes, q))
		ok := rng.IntN(2) == 0
		if rng.IntN(2) == 0 {
			g.ev(a, "ReqFree", "MPI_Cancel", fmt.Sprintf("req=%d", q))
		}
		flags := 1
		if !ok {
			flags = 0
		}
		if rng.IntN(2) == 0 {
			g.ev(a, "Send", "MPI_Send", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=0", b, tag, c.local[a], bytes+3))
		}
		g.complete(a, []pendReq{{q, sendComp(q, flags)}})
		if !ok {
			g.ev(b, "Recv", "MPI_Recv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=64 src=%d stag=%d sbytes=%d", a, tag, c.local[b], a, tag, bytes))
		}
		g.ev(b, "Recv", "MPI_Recv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=64 src=%d stag=%d sbytes=%d", a, tag, c.local[b], a, tag, bytes+3))
	case 11: // sendrecv ring
		for i, r := range m {
			l, rt := m[(i+len(m)-1)%len(m)], m[(i+1)%len(m)]
			g.ev(r, "Sendrecv", "MPI_Sendrecv", fmt.Sprintf("peer=%d tag=%d bytes=%d rpeer=%d rtag=%d rbytes=%d comm=%d src=%d stag=%d sbytes=%d", rt, tag, bytes, l, tag, bytes, c.local[r], l, tag, bytes))
		}
	case 12: // isend + request_free, or lone wtime
		if len(m) < 2 {
			return
		}
		a, b := m[0], m[1]
		q := g.req(a)
		g.ev(a, "Send", "MPI_Isend", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=%d", b, tag, c.local[a], bytes, q))
		g.ev(a, "ReqFree", "MPI_Request_free", fmt.Sprintf("req=%d", q))
		g.freeReq(a, q)
		g.ev(b, "Recv", "MPI_Recv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d src=%d stag=%d sbytes=%d", a, tag, c.local[b], bytes, a, tag, bytes))
	case 13: // irecv posted early, completed much later (after other rounds) -- just proc_null and wtime
		r := m[rng.IntN(len(m))]
		g.ev(r, "Call", "MPI_Wtime", "")
		g.ev(r, "Send", "MPI_Send", fmt.Sprintf("peer=-2 tag=0 comm=%d bytes=4 req=0", c.local[r]))
	}
}

// genRanks bounds the ranks of genText's programs.
var genRanks = 6

func genText(rng *rand.Rand) string {
	g := newTgen(rng, 0.03)
	rounds := 1 + rng.IntN(25)
	for i := 0; i < rounds; i++ {
		if rng.IntN(3) == 0 {
			g.extra()
		} else {
			g.round()
		}
	}
	if rng.IntN(4) == 0 {
		for r := 0; r < g.n; r++ {
			g.ev(r, "Coll", "MPI_Barrier", "comm=1 root=-3")
		}
	}
	return g.text(10)
}

// newTgen is a generator of 1 to genRanks ranks, each past its MPI_Init,
// a third of them losing or mangling calls at the rate bad.
func newTgen(rng *rand.Rand, bad float64) *tgen {
	n := 1 + rng.IntN(genRanks)
	g := &tgen{rng: rng, n: n, tags: 5 + 45*rng.IntN(2)}
	if rng.IntN(3) == 0 {
		g.bad = bad
	}
	world := &gcomm{gid: 1, local: map[int]int{}}
	for r := 0; r < n; r++ {
		g.rs = append(g.rs, &grank{t: int64(rng.IntN(3)) * 100})
		world.members = append(world.members, r)
		world.local[r] = 1
	}
	g.comms = []*gcomm{world}
	for r := 0; r < n; r++ {
		g.ev(r, "Call", "MPI_Init", "")
	}
	return g
}

// text is the trace in the text form, every rank ended by MPI_Finalize
// but one in early (its log cut anywhere, with or without an end
// record), and sometimes a rank without a log.
func (g *tgen) text(early int) string {
	rng := g.rng
	var sb strings.Builder
	missing := -1
	if g.n > 1 && rng.IntN(8) == 0 {
		missing = rng.IntN(g.n)
	}
	for r := 0; r < g.n; r++ {
		if r == missing {
			continue
		}
		gr := g.rs[r]
		fmt.Fprintf(&sb, "rank %d\nmeta size=\"%d\"\n", r, g.n)
		lines := gr.lines
		cut := rng.IntN(early) == 0
		if cut && len(lines) > 1 {
			lines = lines[:1+rng.IntN(len(lines)-1)]
		}
		for _, l := range lines {
			sb.WriteString(l + "\n")
		}
		if !cut {
			gr.t += 100
			fmt.Fprintf(&sb, "t=%d Call fn=MPI_Finalize dur=100\nend reason=finalize\n", gr.t)
		} else if rng.IntN(2) == 0 {
			sb.WriteString("end reason=exit\n")
		}
	}
	return sb.String()
}

// genInFlight is genText's programs with nonblocking collectives left in
// flight across rounds on several communicators (a member now and then
// calling the blocking form): each rank completes some of its requests in
// later rounds (Waitall, Waitany, Testsome of several, or Test loops),
// some never; a third of the ranks end early.
func genInFlight(rng *rand.Rand) string {
	g := newTgen(rng, 0)
	type pending struct{ q int }
	pend := make([][]pending, g.n)
	fns := []string{"MPI_Ibarrier", "MPI_Iallreduce", "MPI_Ibcast", "MPI_Ialltoall"}
	rounds := 1 + rng.IntN(40)
	for i := 0; i < rounds; i++ {
		switch rng.IntN(7) {
		case 0:
			g.round()
		case 1:
			g.extra()
		case 2, 3:
			c := g.pickComm()
			fn := fns[rng.IntN(len(fns))]
			root := -3
			if fn == "MPI_Ibcast" {
				root = 0
			}
			for _, r := range c.members {
				if rng.IntN(8) == 0 {
					g.ev(r, "Coll", strings.Replace(fn, "MPI_I", "MPI_", 1), fmt.Sprintf("comm=%d root=%d bytes=8 rbytes=8 req=0", c.local[r], root))
					continue
				}
				q := g.req(r)
				g.ev(r, "Coll", fn, fmt.Sprintf("comm=%d root=%d bytes=8 rbytes=8 req=%d", c.local[r], root, q))
				pend[r] = append(pend[r], pending{q})
			}
		default:
			for r := 0; r < g.n; r++ {
				if len(pend[r]) == 0 || rng.IntN(2) == 0 {
					continue
				}
				rng.Shuffle(len(pend[r]), func(a, b int) { pend[r][a], pend[r][b] = pend[r][b], pend[r][a] })
				k := 1 + rng.IntN(len(pend[r]))
				var sel []pendReq
				for _, p := range pend[r][:k] {
					sel = append(sel, pendReq{p.q, sendComp(p.q, 0)})
				}
				pend[r] = pend[r][k:]
				if rng.IntN(3) > 0 {
					g.complete(r, sel)
					continue
				}
				for _, p := range sel {
					for t := rng.IntN(4); t > 0; t-- {
						g.ev(r, "Complete", "MPI_Test", "flag=0 completions=[]")
					}
					g.ev(r, "Complete", "MPI_Test", "flag=1 completions=["+p.comp+"]")
					g.freeReq(r, p.q)
				}
			}
		}
	}
	for r := 0; r < g.n; r++ {
		if len(pend[r]) == 0 || rng.IntN(4) == 0 {
			continue
		}
		var sel []pendReq
		for _, p := range pend[r] {
			sel = append(sel, pendReq{p.q, sendComp(p.q, 0)})
		}
		g.complete(r, sel)
	}
	return g.text(3)
}

// extra is a round of the rarer kinds: self-sends, a freed receive that
// still takes its message, a collective some members call blocking and
// others not, rooted collectives (blocking and not), a synchronous send
// before its receive (late receiver), a cancelled send completed with a
// receive, a Waitall of a nonblocking collective, sends and receives, a
// wildcard receive posted before its send.
func (g *tgen) extra() {
	rng := g.rng
	c := g.pickComm()
	m := c.members
	tag := rng.IntN(3)
	bytes := 8 * (1 + rng.IntN(4))
	a, b := m[rng.IntN(len(m))], m[rng.IntN(len(m))]
	switch rng.IntN(8) {
	case 0: // self send
		q := g.req(a)
		g.ev(a, "Send", "MPI_Isend", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=%d", a, tag, c.local[a], bytes, q))
		if rng.IntN(2) == 0 {
			g.ev(a, "Recv", "MPI_Recv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=64 src=%d stag=%d sbytes=%d", a, tag, c.local[a], a, tag, bytes))
			g.complete(a, []pendReq{{q, sendComp(q, 0)}})
		} else {
			q2 := g.req(a)
			g.ev(a, "Irecv", "MPI_Irecv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=64 req=%d", a, tag, c.local[a], q2))
			g.complete(a, []pendReq{{q, sendComp(q, 0)}, {q2, recvComp(q2, a, tag, bytes, 0)}})
		}
	case 1: // freed receive takes a message
		if a == b {
			return
		}
		q := g.req(b)
		g.ev(b, "Irecv", "MPI_Irecv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=64 req=%d", a, tag, c.local[b], q))
		g.ev(b, "ReqFree", "MPI_Request_free", fmt.Sprintf("req=%d", q))
		g.freeReq(b, q)
		if rng.IntN(2) == 0 {
			g.ev(a, "Send", "MPI_Send", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=0", b, tag, c.local[a], bytes))
		} else {
			q := g.req(a)
			g.ev(a, "Send", "MPI_Isend", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=%d", b, tag, c.local[a], bytes, q))
			g.complete(a, []pendReq{{q, sendComp(q, 0)}})
		}
	case 2: // mixed blocking / nonblocking barrier
		pend := map[int][]pendReq{}
		for _, r := range m {
			if rng.IntN(2) == 0 {
				g.ev(r, "Coll", "MPI_Barrier", fmt.Sprintf("comm=%d root=-3 req=0", c.local[r]))
				continue
			}
			q := g.req(r)
			g.ev(r, "Coll", "MPI_Ibarrier", fmt.Sprintf("comm=%d root=-3 req=%d", c.local[r], q))
			pend[r] = append(pend[r], pendReq{q, sendComp(q, 0)})
		}
		for _, r := range m {
			g.complete(r, pend[r])
		}
	case 3: // rooted collectives
		fns := []string{"MPI_Reduce", "MPI_Gather", "MPI_Scatter", "MPI_Bcast", "MPI_Ireduce", "MPI_Ibcast"}
		fn := fns[rng.IntN(len(fns))]
		root := m[rng.IntN(len(m))]
		pend := map[int][]pendReq{}
		for _, r := range m {
			q := 0
			if fn[4] == 'I' {
				q = g.req(r)
				pend[r] = append(pend[r], pendReq{q, sendComp(q, 0)})
			}
			g.ev(r, "Coll", fn, fmt.Sprintf("comm=%d root=%d bytes=%d rbytes=%d req=%d", c.local[r], indexOf(m, root), bytes, bytes, q))
		}
		for _, r := range m {
			g.complete(r, pend[r])
		}
	case 4: // late receiver: blocking send then blocking recv
		if a == b {
			return
		}
		g.ev(a, "Send", "MPI_Ssend", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=0", b, tag, c.local[a], bytes))
		g.ev(b, "Recv", "MPI_Recv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=64 src=%d stag=%d sbytes=%d", a, tag, c.local[b], a, tag, bytes))
	case 5: // cancelled send that matters, completion in waitall with an irecv
		if a == b {
			return
		}
		q := g.req(a)
		g.ev(a, "Send", "MPI_Isend", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=%d", b, tag, c.local[a], bytes, q))
		g.ev(a, "ReqFree", "MPI_Cancel", fmt.Sprintf("req=%d", q))
		q2 := g.req(a)
		g.ev(a, "Irecv", "MPI_Irecv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=64 req=%d", b, tag, c.local[a], q2))
		g.ev(b, "Send", "MPI_Send", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=0", a, tag, c.local[b], bytes))
		g.complete(a, []pendReq{{q, sendComp(q, 1)}, {q2, recvComp(q2, b, tag, bytes, 0)}})
	case 6: // waitall with isend + ibarrier + irecv
		pend := map[int][]pendReq{}
		for _, r := range m {
			q := g.req(r)
			g.ev(r, "Coll", "MPI_Iallreduce", fmt.Sprintf("comm=%d root=-3 bytes=%d rbytes=%d req=%d", c.local[r], bytes, bytes, q))
			pend[r] = append(pend[r], pendReq{q, sendComp(q, 0)})
		}
		for i, r := range m {
			rt := m[(i+1)%len(m)]
			l := m[(i+len(m)-1)%len(m)]
			q := g.req(r)
			g.ev(r, "Send", "MPI_Isend", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=%d", rt, tag, c.local[r], bytes, q))
			pend[r] = append(pend[r], pendReq{q, sendComp(q, 0)})
			q2 := g.req(r)
			g.ev(r, "Irecv", "MPI_Irecv", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=%d", l, tag, c.local[r], bytes, q2))
			pend[r] = append(pend[r], pendReq{q2, recvComp(q2, l, tag, bytes, 0)})
		}
		for _, r := range m {
			g.complete(r, pend[r])
		}
	case 7: // blocking recv posted before the send, send from other rank later
		if a == b {
			return
		}
		g.ev(b, "Recv", "MPI_Recv", fmt.Sprintf("peer=-1 tag=-1 comm=%d bytes=64 src=%d stag=%d sbytes=%d", c.local[b], a, tag, bytes))
		g.ev(a, "Send", "MPI_Send", fmt.Sprintf("peer=%d tag=%d comm=%d bytes=%d req=0", b, tag, c.local[a], bytes))
	}
}

func indexOf(m []int, r int) int {
	for i, x := range m {
		if x == r {
			return i
		}
	}
	return -1
}

// mutate gives three ranks in four a clock offset (a ClockSync at
// MPI_Init) and drops one MPI_Init or MPI_Finalize in six.
func mutate(rng *rand.Rand, text string) string {
	lines := strings.Split(text, "\n")
	var out []string
	for _, l := range lines {
		if strings.Contains(l, "fn=MPI_Init ") && rng.IntN(6) == 0 {
			continue
		}
		if strings.Contains(l, "fn=MPI_Finalize ") && rng.IntN(6) == 0 {
			continue
		}
		out = append(out, l)
		if strings.HasPrefix(l, "meta size") && rng.IntN(4) != 0 {
			offs := []int64{0, 50, -50, 300, -300, 1000, -1000, 7, -13}
			out = append(out, fmt.Sprintf("t=0 ClockSync phase=0 offset=%d err=0", offs[rng.IntN(len(offs))]))
		}
	}
	return strings.Join(out, "\n")
}

// TestReplayMPILike compares Replay with the graph on 1,500 generated
// MPI-like traces (compareReplay: path, length, diagnostics; failing for
// the same reason when both fail), a third of them with empty channels
// swept and the unsettled messages compacted all the time.
func TestReplayMPILike(t *testing.T) {
	n := 1500
	if testing.Short() {
		n = 300
	}
	defer func(old, u int) { *reconstruct.SweepMin, *reconstruct.UnsettledMin = old, u }(*reconstruct.SweepMin, *reconstruct.UnsettledMin)
	rng := rand.New(rand.NewPCG(31, 32))
	compared, declined := 0, 0
	for i := 0; i < n; i++ {
		*reconstruct.SweepMin = []int{4096, 4096, 0}[i%3]
		*reconstruct.UnsettledMin = []int{1024, 1024, 1}[i%3]
		text := mutate(rng, genText(rng))
		ranks, err := tracefmt.ParseText(strings.NewReader(text))
		if err != nil {
			t.Fatalf("case %d: %v\n%s", i, err, text)
		}
		diff, err := compareReplay(dataSources(ranks))
		switch {
		case err != nil:
			continue // Build fails: nothing to compare
		case diff == "declined":
			declined++
		case diff != "":
			t.Fatalf("case %d: %s\n%s", i, diff, text)
		default:
			compared++
		}
	}
	t.Logf("%d compared, %d declined", compared, declined)
	if compared < n/2 {
		t.Errorf("only %d of %d compared", compared, n)
	}
}

// FuzzReplay drives the random and the MPI-like generators from the
// fuzzer's seed: the replay, under both weightings, never panics and
// agrees with the graph (or declines).
//
//	go test ./reconstruct -run '^$' -fuzz FuzzReplay -fuzztime 60s
func FuzzReplay(f *testing.F) {
	f.Add(uint64(1), uint64(2), false)
	f.Add(uint64(3), uint64(4), true)
	f.Fuzz(func(t *testing.T, a, b uint64, mpiLike bool) {
		rng := rand.New(rand.NewPCG(a, b))
		ranks := randomRanks(rng)
		if mpiLike {
			var err error
			if ranks, err = tracefmt.ParseText(strings.NewReader(mutate(rng, genText(rng)))); err != nil {
				t.Fatal(err)
			}
		}
		if diff, err := compareReplay(dataSources(ranks)); err == nil && diff != "" && diff != "declined" {
			t.Fatalf("model: %s", diff)
		}
		if diff, err := compareMeasured(ranks); err == nil && diff != "" && diff != "declined" {
			t.Fatalf("measured: %s", diff)
		}
	})
}
