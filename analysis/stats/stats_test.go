package stats

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// profile writes b's trace and profiles it as the stats command does.
func profile(t *testing.T, b *testgen.Builder) *Profile {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "traces")
	if err := b.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := OfTrace(tr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func find(fs []*Func, name string) *Func {
	for _, f := range fs {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func TestProfile(t *testing.T) {
	b := testgen.New(2)
	r0, r1 := b.Rank(0), b.Rank(1)
	// Rank 0: Init, 2 sends (one to MPI_PROC_NULL), an Irecv completed by
	// a Wait, a collective, Finalize. Each call lasts 1000 ns by default.
	r0.Call("MPI_Init")
	r0.Send(1, 7, 4096)
	r0.Send(spec.ProcNull, 7, 512)
	q := r0.IrecvStatus(1, 8, 64, 1, 8, 48)
	r0.Dur = 3000
	r0.Wait(q)
	r0.Dur = 1000
	r0.Coll("MPI_Allreduce", spec.RootNone, 8, 8)
	r0.Call("MPI_Finalize")
	// Rank 1: Init, a receive of 4096 bytes, a 5000 ns send, the collective.
	r1.Call("MPI_Init")
	r1.RecvStatus(0, 7, 4096, 0, 7, 4096)
	r1.Dur = 5000
	r1.Send(0, 8, 48)
	r1.Dur = 1000
	r1.Coll("MPI_Allreduce", spec.RootNone, 8, 8)
	r1.Call("MPI_Finalize")

	p := profile(t, b)
	send := find(p.All, "MPI_Send")
	if send == nil || send.Calls != 3 || send.TotalNs != 7000 || send.MinNs != 1000 || send.MaxNs != 5000 {
		t.Fatalf("MPI_Send aggregate: %+v", send)
	}
	if send.Sent != 4096+48 {
		t.Errorf("MPI_Send sent %d bytes; the MPI_PROC_NULL send must not count", send.Sent)
	}
	if f := find(p.All, "MPI_Wait"); f == nil || f.Received != 48 || f.TotalNs != 3000 {
		t.Errorf("MPI_Wait: %+v, want 48 bytes received (the completed Irecv's status)", f)
	}
	if f := find(p.All, "MPI_Recv"); f == nil || f.Received != 4096 {
		t.Errorf("MPI_Recv: %+v", f)
	}
	if f := find(p.All, "MPI_Allreduce"); f == nil || f.Calls != 2 || f.Sent != 16 || f.Received != 16 {
		t.Errorf("MPI_Allreduce: %+v", f)
	}
	// Rank 0: Init ends, then 5 calls of 1000+1000+1000+3000+1000 ns with
	// 500 ns gaps, then Finalize starts 500 ns later.
	r := p.Ranks[0]
	if r.Rank != 0 || r.MPINs != 7000 || r.AppNs != 7000+6*500 {
		t.Errorf("rank 0: app %d ns, MPI %d ns; want %d and 7000", r.AppNs, r.MPINs, 7000+6*500)
	}
	if p.Ranks[1].Rank != 1 {
		t.Errorf("ranks out of order")
	}
	// Sorted by total time, then name: Init (2000) < ... MPI_Send is 7000.
	for i := 1; i < len(p.All); i++ {
		a, b := p.All[i-1], p.All[i]
		if a.TotalNs < b.TotalNs || (a.TotalNs == b.TotalNs && a.Name > b.Name) {
			t.Errorf("not sorted: %s (%d) before %s (%d)", a.Name, a.TotalNs, b.Name, b.TotalNs)
		}
	}
	// Text and JSON are deterministic.
	var t1, t2, j1, j2 bytes.Buffer
	WriteText(&t1, p, TextOptions{PerRank: true})
	WriteText(&t2, profile(t, b2(t)), TextOptions{PerRank: true})
	json.NewEncoder(&j1).Encode(p)
	json.NewEncoder(&j2).Encode(p)
	if !bytes.Equal(j1.Bytes(), j2.Bytes()) {
		t.Errorf("JSON differs between two encodings")
	}
	for _, want := range []string{"MPI_Send", "4.0 KiB", "Rank 1:", "All ranks:"} {
		if !strings.Contains(t1.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, t1.String())
		}
	}
}

// b2 is a small second trace, to exercise WriteText on another profile.
func b2(t *testing.T) *testgen.Builder {
	b := testgen.New(1)
	b.Rank(0).Call("MPI_Init").Barrier().Call("MPI_Finalize")
	return b
}

func TestDuration(t *testing.T) {
	for ns, want := range map[int64]string{0: "0 ns", 999: "999 ns", 1500: "1.500 us", 2_500_000: "2.500 ms", 3_000_000_000: "3.000 s", 12_000_000_000: "12.0 s"} {
		if got := Duration(ns); got != want {
			t.Errorf("Duration(%d) = %q, want %q", ns, got, want)
		}
	}
}

// MPI_Init and MPI_Finalize are listed apart from the application's MPI
// functions, as mpiP's "MPI time" leaves them out: they hold MPI's
// start-up and shut-down and the recorder's clock synchronisation.
func TestInitFinalizeApart(t *testing.T) {
	b := testgen.New(2)
	for r := 0; r < 2; r++ {
		rk := b.Rank(r)
		rk.Dur = 900_000_000 // a long start-up
		rk.Call("MPI_Init")
		rk.Dur = 1000
		rk.Send(int64(1-r), 1, 8)
		rk.Recv(int64(1-r), 1, 8)
		rk.Dur = 50_000_000
		rk.Call("MPI_Finalize")
	}
	p := profile(t, b)
	for _, fs := range [][]*Func{p.All, p.Ranks[0].Funcs, p.Ranks[1].Funcs} {
		if find(fs, "MPI_Init") != nil || find(fs, "MPI_Finalize") != nil || len(fs) != 2 {
			t.Errorf("the application's functions list %v", names(fs))
		}
	}
	if f := find(p.InitFinalize, "MPI_Init"); f == nil || f.Calls != 2 || f.TotalNs != 1_800_000_000 {
		t.Errorf("MPI_Init apart: %+v", f)
	}
	if f := find(p.InitFinalize, "MPI_Finalize"); f == nil || f.Calls != 2 || f.TotalNs != 100_000_000 {
		t.Errorf("MPI_Finalize apart: %+v", f)
	}
	if r := p.Ranks[0]; len(r.InitFinalize) != 2 || r.Calls != 2 || r.MPINs != 2000 {
		t.Errorf("rank 0: %d calls, %d ns in MPI, Init/Finalize %v; want 2 calls, 2000 ns and both apart", r.Calls, r.MPINs, names(r.InitFinalize))
	}
	var out bytes.Buffer
	if err := WriteText(&out, p, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	_, all, _ := strings.Cut(text, "All ranks:")
	all, rest, _ := strings.Cut(all, "\nMPI_Init and MPI_Finalize")
	if strings.Contains(all, "MPI_Init") || strings.Contains(all, "MPI_Finalize ") || !strings.Contains(all, "MPI_Send") {
		t.Errorf("the All ranks table lists MPI_Init/MPI_Finalize, or there is no separate table:\n%s", text)
	}
	apart, _, _ := strings.Cut(rest, "\nPer rank:")
	if !strings.Contains(apart, "not in the time in MPI") || !strings.Contains(apart, "   MPI_Init      2     1.800 s") ||
		!strings.Contains(apart, "MPI_Finalize      2  100.000 ms") {
		t.Errorf("MPI_Init and MPI_Finalize are not listed apart:\n%s", text)
	}
	j, _ := json.Marshal(p)
	if !strings.Contains(string(j), `"init_finalize":[{"name":"MPI_Init"`) {
		t.Errorf("JSON: %s", j)
	}
}

func names(fs []*Func) []string {
	var n []string
	for _, f := range fs {
		n = append(n, f.Name)
	}
	return n
}
