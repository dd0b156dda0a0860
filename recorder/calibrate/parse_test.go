package calibrate

import (
	"bytes"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The testdata files are real outputs of the benchmark in the CI
// configuration: Open MPI 4.1.4 on 3 ranks and MPICH 4.0.2 on 2.
func TestParseRealOutput(t *testing.T) {
	for _, tc := range []struct {
		file       string
		procs      int
		mpiPrefix  string
		points     int
		collProcss []int
	}{
		{"testdata/openmpi-3ranks.txt", 3, "Open MPI v4.1.4", 11 + 2*(1+7*11), []int{2, 3}},
		{"testdata/mpich-2ranks.txt", 2, "MPICH Version:\t4.0.2\nMPICH Release date:", 11 + 1 + 7*11, []int{2}},
	} {
		f, err := os.Open(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Parse(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if res.Version != 1 || res.Procs != tc.procs || res.CPUs != 2 || res.Host != "vm" || !strings.HasPrefix(res.MPI, tc.mpiPrefix) {
			t.Errorf("%s: header %d %d %d %q %q", tc.file, res.Version, res.Procs, res.CPUs, res.Host, res.MPI)
		}
		if res.Oversubscribed() != (tc.procs > 2) {
			t.Errorf("%s: Oversubscribed = %v", tc.file, res.Oversubscribed())
		}
		want := Config{P2PMin: 4, P2PMax: 4096, CollMin: 4, CollMax: 4096, MinReps: 3, MaxReps: 1000, Trials: 3,
			MaxProcs: tc.procs, Target: time.Millisecond, Collectives: Collectives}
		if !reflect.DeepEqual(res.Config, want) {
			t.Errorf("%s: config %+v, want %+v", tc.file, res.Config, want)
		}
		if len(res.Points) != tc.points {
			t.Errorf("%s: %d points, want %d", tc.file, len(res.Points), tc.points)
		}
		kinds := map[string]bool{}
		var procs []int
		for _, p := range res.Points {
			kinds[p.Kind] = true
			if p.Kind != KindP2P && !slices.Contains(procs, p.Procs) {
				procs = append(procs, p.Procs)
			}
			if !(p.Nanos > 0) {
				t.Errorf("%s: point %+v", tc.file, p)
			}
			if p.Kind == "MPI_Barrier" && p.Bytes != 0 {
				t.Errorf("%s: barrier with %d bytes", tc.file, p.Bytes)
			}
		}
		for _, k := range append([]string{KindP2P}, Collectives...) {
			if !kinds[k] {
				t.Errorf("%s: no %s point", tc.file, k)
			}
		}
		if !slices.Equal(procs, tc.collProcss) {
			t.Errorf("%s: collective process counts %v, want %v", tc.file, procs, tc.collProcss)
		}
	}
}

const small = `mpitrace-calibrate version=1 procs=4 cpus=8 host="n01" mpi="Lib 1.0\n\"quoted\" \\ tab\t"
config p2p_min=4 p2p_max=64 coll_min=8 coll_max=16 reps=100 min_reps=2 trials=5 max_procs=0 target_us=250 collectives="MPI_Barrier,MPI_Bcast"
p2p bytes=4 procs=2 reps=100 ns=1834.2
coll name=MPI_Bcast bytes=8 procs=4 reps=10 ns=2e3
coll name=MPI_Barrier bytes=0 procs=3 ns=0
end points=3
`

func TestParseSmall(t *testing.T) {
	res, err := Parse(strings.NewReader("mpirun: a banner line\n\n" + small + "after the end: ignored\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Result{
		Version: 1, MPI: "Lib 1.0\n\"quoted\" \\ tab\t", Host: "n01", Procs: 4, CPUs: 8,
		Config: Config{P2PMin: 4, P2PMax: 64, CollMin: 8, CollMax: 16, MinReps: 2, MaxReps: 100, Trials: 5,
			Target: 250 * time.Microsecond, Collectives: []string{"MPI_Barrier", "MPI_Bcast"}},
		Points: []Point{
			{KindP2P, 4, 2, 1834.2},
			{"MPI_Bcast", 8, 4, 2000},
			{"MPI_Barrier", 0, 3, 0},
		},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("Parse =\n%+v\nwant\n%+v", res, want)
	}
}

func TestParseErrors(t *testing.T) {
	header := "mpitrace-calibrate version=1 procs=4 cpus=2 host=\"h\" mpi=\"m\"\n"
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", `no "mpitrace-calibrate" header line`},
		{"only noise", "hello\nworld\n", `no "mpitrace-calibrate" header line`},
		{"truncated", header + "p2p bytes=4 procs=2 ns=1\n", "truncated output: no end record after line 2 (the benchmark stopped early; 1 points read)"},
		{"newer version", "mpitrace-calibrate version=2 procs=2\n", "line 1: header: unsupported output format version 2 (this build reads 1)"},
		{"header field missing", "mpitrace-calibrate version=1 procs=2 cpus=2 host=\"h\"\n", "line 1: header: missing field mpi"},
		{"one process", "mpitrace-calibrate version=1 procs=1 cpus=2 host=\"h\" mpi=\"m\"\n", "line 1: header: procs=1: out of range [2, 2147483647]"},
		{"unknown record", header + "p2p bytes=4 procs=2 ns=1\nwhatever x=1\n", `line 3: unknown record "whatever"`},
		{"not key=value", header + "p2p bytes=4 procs 2 ns=1\n", `line 2: field "procs": want key=value`},
		{"bad number", header + "p2p bytes=four procs=2 ns=1\n", "line 2: p2p: bytes=four: not an integer"},
		{"negative bytes", header + "p2p bytes=-4 procs=2 ns=1\n", "line 2: p2p: bytes=-4: out of range"},
		{"NaN", header + "p2p bytes=4 procs=2 ns=NaN\n", "line 2: p2p: ns=NaN: not a finite number"},
		{"Inf", header + "p2p bytes=4 procs=2 ns=+Inf\n", "line 2: p2p: ns=+Inf: not a finite number"},
		{"negative time", header + "p2p bytes=4 procs=2 ns=-1\n", "line 2: p2p: ns=-1: negative"},
		{"huge", header + "p2p bytes=4 procs=2 ns=1e400\n", "not a finite number"},
		{"p2p procs", header + "p2p bytes=4 procs=3 ns=1\n", "line 2: p2p: procs=3: a ping-pong has 2"},
		{"procs above world", header + "coll name=MPI_Bcast bytes=4 procs=5 ns=1\n", "line 2: coll: procs=5: out of range [2, 4]"},
		{"bad name", header + "coll name=Bcast bytes=4 procs=2 ns=1\n", `line 2: coll: name "Bcast": not an MPI function name`},
		{"unknown field", header + "p2p bytes=4 procs=2 ns=1 colour=red\n", "line 2: p2p: unknown field colour"},
		{"duplicate field", header + "p2p bytes=4 bytes=8 procs=2 ns=1\n", "line 2: field bytes appears twice"},
		{"missing field", header + "p2p bytes=4 procs=2\n", "line 2: p2p: missing field ns"},
		{"unterminated string", "mpitrace-calibrate version=1 procs=2 cpus=2 mpi=\"m\" host=\"h\n", "line 1: field host: unterminated string"},
		{"bad escape", "mpitrace-calibrate version=1 procs=2 cpus=2 host=\"\\q\" mpi=\"m\"\n", "line 1: field host: malformed quoted string"},
		{"text after quote", "mpitrace-calibrate version=1 procs=2 cpus=2 host=\"h\"x mpi=\"m\"\n", "line 1: field host: text after the closing quote"},
		{"end count", header + "p2p bytes=4 procs=2 ns=1\nend points=2\n", "line 3: end: the benchmark wrote 2 points but 1 were read"},
		{"second header", header + header, "line 2: a second header"},
		{"second config", header + "config p2p_min=4 p2p_max=4 coll_min=4 coll_max=4 reps=1 min_reps=1 trials=1 max_procs=0 target_us=1 collectives=\"\"\nconfig x=1\n", "line 3: a second config record"},
		{"config field", header + "config p2p_min=4\n", "line 2: config: missing field p2p_max"},
		{"long line", header + "p2p bytes=4 procs=2 ns=1 " + strings.Repeat("x", maxLine) + "\n", "line 2: longer than"},
		{"leading space", header + " p2p bytes=4 procs=2 ns=1\n", "line 2: record starts with a space"},
	} {
		_, err := Parse(strings.NewReader(tc.in))
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %q, want one line containing %q", tc.name, err, tc.want)
		}
	}
}

func TestWriteTextRoundTrip(t *testing.T) {
	for _, in := range []string{small, readFile(t, "testdata/openmpi-3ranks.txt"), readFile(t, "testdata/mpich-2ranks.txt")} {
		res, err := Parse(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := res.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		again, err := Parse(&b)
		if err != nil {
			t.Fatalf("%v in\n%s", err, b.String())
		}
		if !reflect.DeepEqual(res, again) {
			t.Errorf("round trip changed the result:\n%+v\n%+v", res, again)
		}
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestConfig(t *testing.T) {
	got := strings.Join(CIConfig().Args(), " ")
	want := "--p2p-min 4 --p2p-max 4096 --coll-min 4 --coll-max 4096 --min-reps 3 --reps 1000 --trials 3 --max-procs 0 --target-us 1000"
	if got != want {
		t.Errorf("CIConfig().Args() = %s\nwant %s", got, want)
	}
	c := Config{P2PMax: 1 << 20, Collectives: []string{"allreduce", "MPI_Bcast", "mpi_barrier"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	args := c.Args()
	if i := slices.Index(args, "--collectives"); i < 0 || args[i+1] != "MPI_Allreduce,MPI_Bcast,MPI_Barrier" {
		t.Errorf("Args = %v", args)
	}
	if i := slices.Index(args, "--p2p-max"); args[i+1] != "1048576" {
		t.Errorf("Args = %v", args)
	}
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{P2PMin: 64, P2PMax: 8}, "point-to-point sizes 64..8"},
		{Config{P2PMax: 2 << 30}, "point-to-point sizes"},
		{Config{CollMin: -1}, "collective sizes"},
		{Config{MinReps: 10, MaxReps: 5}, "repetitions 10..5"},
		{Config{Trials: -1}, "trials -1"},
		{Config{MaxProcs: 1}, "max processes 1"},
		{Config{Target: time.Nanosecond}, "target batch time"},
		{Config{Collectives: []string{"MPI_Scan"}}, `unknown collective "MPI_Scan"`},
	} {
		if err := tc.c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", tc.c, err, tc.want)
		}
	}
}

func TestLastLine(t *testing.T) {
	ompi := `mpitrace-calibrate: needs at least 2 processes (run it under a launcher, e.g. mpirun -np 2)
--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
  Exit code:    2
--------------------------------------------------------------------------
`
	if got := lastLine([]byte(ompi), "mpitrace-calibrate: "); got != "needs at least 2 processes (run it under a launcher, e.g. mpirun -np 2)" {
		t.Errorf("lastLine = %q", got)
	}
	if got := lastLine([]byte(ompi[strings.Index(ompi, "\n")+1:]), "mpitrace-calibrate: "); got != "Exit code:    2" {
		t.Errorf("lastLine without the benchmark's message = %q", got)
	}
	if got := lastLine([]byte("----\n\n"), ""); got != "" {
		t.Errorf("lastLine of rules = %q", got)
	}
}
