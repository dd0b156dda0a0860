package driver

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpitrace/mpitrace/analysis/critpath"
	"github.com/mpitrace/mpitrace/analysis/stats"
	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/testgen"
)

// analysisDigest is what the commands print of a: the note, the path
// under the model and under measured weights (critPath.out and the
// summary, with loops, regions, call sites and the "why" block), check's
// baseline with profile prof, and the diagnostics.
func analysisDigest(a *Analysis, prof *stats.Profile) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "note %q graph %v\n", a.Note, a.Graph != nil)
	if err := a.NeedPath(); err != nil {
		fmt.Fprintf(&b, "no path: %v\n", err)
	} else {
		mp, err := a.MeasuredPath()
		if err != nil {
			return "", err
		}
		for _, sp := range []*critpath.StepPath{a.Steps, mp} {
			sum, err := a.Report(sp, &b, critpath.Microsecond, 10)
			if err != nil {
				return "", err
			}
			if sp == a.Steps {
				if err := a.Explain(sum); err != nil {
					return "", err
				}
			}
			if err := sum.WriteText(&b, critpath.Microsecond); err != nil {
				return "", err
			}
		}
		base, err := a.Baseline("trace", prof)
		if err != nil {
			return "", err
		}
		if err := base.Write(&b); err != nil {
			return "", err
		}
	}
	for _, d := range a.Diags.All() {
		fmt.Fprintln(&b, d)
	}
	fmt.Fprintf(&b, "unfinished %v\n", a.Trace.Unfinished())
	return b.String(), nil
}

// serialAnalysis is the digest of one process's analysis of dir under o,
// and whether it built the graph.
func serialAnalysis(t *testing.T, dir string, o Options) (string, bool) {
	t.Helper()
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	prof, err := stats.OfTrace(tr)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Analyze(tr, o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	d, err := analysisDigest(a, prof)
	if err != nil {
		t.Fatal(err)
	}
	return d, a.Graph != nil
}

// jobAnalysis is the digest of process 0's analysis of dir by a local
// job of p processes (Profile, then Analyze under o), each exchanging
// through wrap(x) when wrap is not nil; it fails t when a process fails,
// or gets an analysis other than process 0.
// jobMeasured counts, by trace, the jobs whose process 0 got the path
// under measured weights from the job's replay in groups (not from
// MeasuredPath's replay alone).
var jobMeasured = map[string]int{}

func jobAnalysis(t *testing.T, dir string, p int, o Options, wrap func(Exchange) Exchange) string {
	t.Helper()
	var got string
	errs := runLocal(p, func(x Exchange) error {
		if wrap != nil {
			x = wrap(x)
		}
		j, prof, err := profiledJob(dir, x)
		if err != nil {
			return err
		}
		a, err := j.Analyze(o)
		if err != nil || (a != nil) != (x.Rank() == 0) {
			return fmt.Errorf("process %d: analysis %v, %v", x.Rank(), a != nil, err)
		}
		if a != nil {
			defer a.Close()
			if a.mpath != nil {
				jobMeasured[dir]++ // by the job, before MeasuredPath
			}
			got, err = analysisDigest(a, prof)
		}
		return err
	})
	for q, err := range errs {
		if err != nil {
			t.Fatalf("%s, %d processes, process %d: %v", dir, p, q, err)
		}
	}
	return got
}

// TestJobAnalyze: process 0 of a job of 1 to 4 processes gets the
// analysis and the baseline one process makes, on every stored trace (loops, regions, call
// sites and clocks gathered from the processes that read them; a trace
// the replay declines analysed with the graph) and on generated ones; the
// others get nil.
func TestJobAnalyze(t *testing.T) {
	saved := ThisMachine
	defer func() { ThisMachine = saved }()
	ThisMachine = func() (string, int) { return "", 0 }
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "traces", "v*", "*"))
	halo := filepath.Join(t.TempDir(), "halo")
	if err := testgen.Halo(7, 10, 3).WriteDir(halo); err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, halo)
	// A nonblocking collective: the groups agree on when it was done.
	icoll := filepath.Join(t.TempDir(), "icoll")
	b := testgen.New(4)
	for i := range 4 {
		r := b.Rank(i).Call("MPI_Init").Compute(int64(100 * (i + 1)))
		req := r.Icoll("MPI_Iallreduce", -1, 8, 8)
		r.Compute(50).Send(int64((i+1)%4), 0, 8).Recv(int64((i+3)%4), 0, 8).Wait(req).Call("MPI_Finalize")
	}
	if err := b.WriteDir(icoll); err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, icoll)
	// A checksum that fails in the middle of rank 2's log, its events:
	// events lost, which the replay declines.
	damaged := filepath.Join(t.TempDir(), "damaged")
	if err := testgen.Halo(4, 12, 1).WriteDir(damaged); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(damaged, "rank-00002.mpit"), os.O_RDWR, 0)
	if err == nil {
		var st os.FileInfo
		if st, err = f.Stat(); err == nil {
			_, err = f.WriteAt(bytes.Repeat([]byte{0xff}, 20), st.Size()/2)
		}
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, damaged)
	if len(dirs) < 10 {
		t.Fatalf("%d traces: the stored traces are missing", len(dirs))
	}
	o := Options{Stream: true, Measured: true, Baseline: true}
	graphs := 0
	for _, dir := range dirs {
		want, graph := serialAnalysis(t, dir, o)
		if graph {
			graphs++
		}
		for p := 1; p <= 4; p++ {
			if got := jobAnalysis(t, dir, p, o, nil); got != want {
				t.Errorf("%s, %d processes:\n%s\nwant\n%s", dir, p, got, want)
			}
		}
	}
	if graphs == 0 {
		t.Errorf("no trace the replay declines: the graph's way is not tested")
	}
	// The path under measured weights was the job's (1 to 4 processes).
	if jobMeasured[halo] != 4 || jobMeasured[icoll] != 4 {
		t.Errorf("measured paths of the jobs' replays: %d of 4 on the halo trace, %d of 4 with a nonblocking collective", jobMeasured[halo], jobMeasured[icoll])
	}
	// Under the model's weights, the job replays under measured weights
	// when the "why" block needs it (Why), only then.
	clear(jobMeasured)
	why := Options{Stream: true, Why: true, Baseline: true}
	needed := 0
	for _, dir := range dirs {
		want, _ := serialAnalysis(t, dir, why)
		if got := jobAnalysis(t, dir, 2, why, nil); got != want {
			t.Errorf("%s, 2 processes, the model's weights:\n%s\nwant\n%s", dir, got, want)
		}
		if strings.Contains(want, "why the model path") {
			needed++
		} else if jobMeasured[dir] != 0 {
			t.Errorf("%s: the job replayed under measured weights for no \"why\" block", dir)
		}
	}
	t.Logf("%d of %d traces need the \"why\" block; the job replayed %d under measured weights for it", needed, len(dirs), len(jobMeasured))
	if n := len(jobMeasured); needed == 0 || n != needed {
		t.Errorf("%d traces need the \"why\" block, the job replayed %d under measured weights for it", needed, n)
	}
}

// damaging is a member of a local job whose gathers, from call bad of
// process from on, carry a damaged part (cut in half).
type damaging struct {
	member
	from, bad int
	calls     *int
}

func (d damaging) Gather(b []byte, root int) ([][]byte, error) {
	if d.me == d.from {
		if *d.calls >= d.bad {
			b = b[:len(b)/2]
		}
		*d.calls++
	}
	return d.member.Gather(b, root)
}

// TestJobFailsTogether: what one process alone finds wrong (a rank file
// gone after the job opened the trace, a part that process 0 cannot
// read) never leaves a process waiting for ever in a job that profiles
// and analyses a trace (check's exchanges): process 0 fails, or gets the
// analysis of one process (the replay's part it could not read makes it
// analyse the trace alone, with the graph).
func TestJobFailsTogether(t *testing.T) {
	src := filepath.Join("..", "..", "fixtures", "traces", "v5", "mix")
	o := Options{Stream: true, Baseline: true}
	want, _ := serialAnalysis(t, src, o)
	run := func(what string, dir string, member func(x Exchange) Exchange, before func(j *Job)) {
		t.Helper()
		var got string
		done := make(chan []error, 1)
		go func() {
			done <- runLocal(2, func(x Exchange) error {
				j, err := OpenJob(dir, member(x), nil)
				if err != nil {
					return err
				}
				if before != nil {
					before(j)
				}
				prof, err := j.Profile()
				a, aerr := j.Analyze(o)
				if a != nil {
					defer a.Close()
					if err == nil && aerr == nil {
						got, err = analysisDigest(a, prof)
					}
				}
				return cmp.Or(err, aerr)
			})
		}()
		select {
		case errs := <-done:
			// (The first line says whether the graph was built.)
			_, g, _ := strings.Cut(got, "\n")
			_, w, _ := strings.Cut(want, "\n")
			if errs[0] == nil && g != w {
				t.Errorf("%s: process 0 found nothing wrong, and its analysis is not one process's:\n%s", what, got)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: the job hangs", what)
		}
	}
	// Rank 3's file, process 1's, gone once the job opened the trace.
	dir := filepath.Join(t.TempDir(), "mix")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	run("a rank file gone", dir, func(x Exchange) Exchange { return x }, func(j *Job) {
		if j.Process() == 1 {
			once.Do(func() { os.Remove(j.Trace.Files[j.Hi-1].Path) })
		}
	})
	// Process 1's part of each gather, from the k-th on, cut short.
	for bad := range 3 {
		calls := 0
		run(fmt.Sprintf("a damaged part from gather %d on", bad), src, func(x Exchange) Exchange {
			return damaging{member: x.(member), from: 1, bad: bad, calls: &calls}
		}, nil)
	}
}

// limited is a member of a local job whose gather number at (counted per
// member) fails on every member alike, as an exchange too large for MPI
// does (mpicomm.LimitError).
type limited struct {
	member
	at    int
	calls *int
}

type limitErr struct{}

func (limitErr) Error() string { return "an exchange of more than one MPI call" }
func (limitErr) Agreed() bool  { return true }

func (l limited) Gather(b []byte, root int) ([][]byte, error) {
	*l.calls++
	if *l.calls-1 == l.at {
		return nil, limitErr{}
	}
	return l.member.Gather(b, root)
}

// TestJobAnalyzeTooLarge: when the spans are more than one exchange moves
// (every process told so alike), process 0 analyses the trace alone and
// gets the single process's analysis; the others get nil.
func TestJobAnalyzeTooLarge(t *testing.T) {
	dir := filepath.Join("..", "..", "fixtures", "traces", "v5", "loopsmpi")
	o := Options{Stream: true, Measured: true, Baseline: true}
	want, _ := serialAnalysis(t, dir, o)
	calls := make([]int, 3)
	// Profile's gather, Job.Replay's, then the spans' (OpenJob's is an
	// allgather).
	got := jobAnalysis(t, dir, 3, o, func(x Exchange) Exchange {
		return limited{member: x.(member), at: 2, calls: &calls[x.Rank()]}
	})
	if got != want {
		t.Errorf("process 0's analysis:\n%s\nwant\n%s", got, want)
	}
}

// failingAllgather is a member of a local job whose allgather number at
// (from 0) exchanges and then fails, as an MPI error this process alone
// sees, the job then aborted (as MPI_Abort would: the others' exchanges
// fail); calls counts its allgathers.
type failingAllgather struct {
	member
	at    int
	calls *int
}

func (m failingAllgather) Allgather(b []byte) ([][]byte, error) {
	out, err := m.member.Allgather(b)
	if *m.calls++; *m.calls-1 == m.at {
		m.j.abort()
		return nil, errors.New("MPI_Allgather: MPI_ERR_OTHER")
	}
	return out, err
}

// TestJobMeasuredMPIError: an MPI error one process alone sees in any
// exchange of the replay under measured weights (critpath --mpi
// --weights measured) is that process's error, one that stops the job
// (Fatal): it used to be taken for a replay every process declined, the
// process going on while the others waited for it.
func TestJobMeasuredMPIError(t *testing.T) {
	dir := filepath.Join("..", "..", "fixtures", "traces", "v5", "mix")
	// Process 1's allgathers, with measured weights (every one made
	// before its error, at) and without.
	allgathers := func(o Options, at int) (n int, j *Job, err error) {
		runLocal(2, func(x Exchange) error {
			if x.Rank() == 1 {
				x = failingAllgather{member: x.(member), at: at, calls: &n}
			}
			jx, _, jerr := profiledJob(dir, x)
			if jerr == nil {
				var a *Analysis
				if a, jerr = jx.Analyze(o); a != nil {
					a.Close()
				}
			}
			if x.Rank() == 1 {
				j, err = jx, jerr
			}
			return nil
		})
		return n, j, err
	}
	o := Options{Stream: true, Measured: true}
	total, _, err := allgathers(o, -1)
	before, _, err2 := allgathers(Options{Stream: true}, -1)
	if err != nil || err2 != nil || total <= before {
		t.Fatalf("process 1 makes %d allgathers with measured weights (%v), %d without (%v)", total, err, before, err2)
	}
	for at := before; at < total; at++ {
		_, j, err := allgathers(o, at)
		if err == nil || j == nil || !j.Fatal(err) {
			t.Errorf("allgather %d of %d failing on process 1 alone: Analyze's error %v, fatal %v", at+1, total, err, j != nil && j.Fatal(err))
		}
	}
}
