package main_test

// End-to-end tests of what the commands make of call sites: the fixture
// programs with MPI calls on known lines (fixtures/programs/callsites.*),
// recorded with both MPIs on 2 ranks; stats --by callsite and the critical
// path's summary name the marked line of every call; a stripped copy and a
// rebuilt binary give their one-line notes.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
)

// siteLabel is a resolved call site as the commands print it:
// "callsites.c:18 exchange".
var siteLabel = regexp.MustCompile(`^(\S+):(\d+) (\S+)`)

func TestCallSiteCommands(t *testing.T) {
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			for _, prog := range []struct{ name, src string }{{"c", "callsites.c"}, {"fortran", "callsites.f90"}} {
				t.Run(prog.name, func(t *testing.T) {
					src, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "programs", prog.src))
					if err != nil {
						t.Fatal(err)
					}
					bin := filepath.Join(workDir, "bin", m.name, "sitecli-"+prog.name)
					buildSites(t, m, src, bin, "-O0")
					dir := filepath.Join(workDir, "sitecli-"+m.name+"-"+prog.name)
					if res := record(t, dir, nil, m.launch(2, bin)...); res.code != 0 {
						t.Fatalf("record: exit %d\n%s%s", res.code, res.stdout, res.stderr)
					}
					lines := siteLines(t, src)
					checkStatsBySite(t, dir, prog.src, lines)
					checkCritpathSites(t, dir, prog.src, lines)
					checkDumpAndDOTSites(t, dir, prog.src, lines)
					checkSiteProblems(t, m, dir, src, bin)
				})
			}
		})
	}
}

// buildSites compiles a callsites fixture with -g and opt.
func buildSites(t *testing.T, m mpiImpl, src, bin, opt string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(bin), 0o755)
	cc, args := m.cc, []string{"-g", opt, "-o", bin, src}
	if strings.HasSuffix(src, ".f90") {
		cc = m.fortCC
		args = append([]string{"-cpp", "-fallow-argument-mismatch", "-w"}, args...)
	}
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("compiling %s with %s: %v\n%s", src, cc, err, b)
	}
}

// markedLine returns the marked line a label names, and whether it names
// one of file's.
func markedLine(label, file string, lines map[string]siteLine) (siteLine, bool) {
	m := siteLabel.FindStringSubmatch(label)
	if m == nil || m[1] != file {
		return siteLine{}, false
	}
	n, _ := strconv.Atoi(m[2])
	for _, l := range lines {
		if l.line == n {
			return l, true
		}
	}
	return siteLine{}, false
}

// checkStatsBySite: stats --by callsite has one row per marked line (but
// MPI_Init's and MPI_Finalize's, left out as from the time in MPI), with
// that line's function and calls, in JSON and in text.
func checkStatsBySite(t *testing.T, dir, file string, lines map[string]siteLine) {
	t.Helper()
	res := run(t, "", mpitraceBin, "stats", dir, "--by", "callsite", "--json")
	if res.code != 0 {
		t.Fatalf("stats --by callsite --json: exit %d\n%s", res.code, res.stderr)
	}
	var out struct {
		Sites []struct {
			Site     string `json:"site"`
			Location string `json:"location"`
			Name     string `json:"name"`
			Calls    int    `json:"calls"`
			MaxRank  int    `json:"max_rank"`
			Ranks    int    `json:"ranks"`
		} `json:"callsites"`
		Problems []string `json:"callsite_problems"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("stats --by callsite --json: %v\n%s", err, res.stdout)
	}
	if len(out.Problems) != 0 || res.stderr != "" {
		t.Errorf("problems %q, stderr %q", out.Problems, res.stderr)
	}
	seen := map[string]bool{}
	for _, s := range out.Sites {
		l, ok := markedLine(s.Site, file, lines)
		switch {
		case !ok:
			t.Errorf("row %q %s: not a marked line of %s", s.Site, s.Name, file)
		case seen[l.name]:
			t.Errorf("line %d (%s) has two rows", l.line, l.name)
		case s.Name != l.fn || s.Calls != 2*l.calls || s.Ranks != 2 || s.MaxRank < 0 || s.MaxRank > 1:
			t.Errorf("row %q: %s, %d calls on %d ranks (max on rank %d); want %s, %d calls on 2", s.Site, s.Name, s.Calls, s.Ranks, s.MaxRank, l.fn, 2*l.calls)
		case !strings.HasSuffix(strings.Fields(s.Location)[0], "/"+file+":"+strconv.Itoa(l.line)):
			t.Errorf("row %q: location %q is not the source's full path", s.Site, s.Location)
		}
		seen[l.name] = true
	}
	for _, l := range lines {
		if !seen[l.name] && l.fn != "MPI_Init" && l.fn != "MPI_Finalize" {
			t.Errorf("marked line %d (%s, %s) has no row", l.line, l.name, l.fn)
		}
	}
	text := run(t, "", mpitraceBin, "stats", dir, "--by", "callsite")
	if text.code != 0 || !strings.Contains(text.stdout, "MPI calls by call site, all ranks:") {
		t.Fatalf("stats --by callsite: exit %d\n%s%s", text.code, text.stdout, text.stderr)
	}
	for _, s := range out.Sites {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(s.Site) + ` +` + s.Name + ` +` + strconv.Itoa(s.Calls) + ` `).MatchString(text.stdout) {
			t.Errorf("text lacks the row %s %s %d:\n%s", s.Site, s.Name, s.Calls, text.stdout)
		}
	}
}

// checkCritpathSites: every vertex of the critical path but MPI_Init's and
// MPI_Finalize's is at a marked line with its function (a Waitall's
// requests are MPI_Wait vertices), and the steps are grouped by call-site
// pair: no two groups with the same ends and kind.
func checkCritpathSites(t *testing.T, dir, file string, lines map[string]siteLine) {
	t.Helper()
	res := run(t, "", mpitraceBin, "critpath", dir, "--json", "--top", "100")
	if res.code != 0 {
		t.Fatalf("critpath --json: exit %d\n%s", res.code, res.stderr)
	}
	var out struct {
		Summary struct {
			Vertices int `json:"vertices"`
			Sites    *struct {
				BySite []struct {
					Site     string  `json:"site"`
					Function string  `json:"function"`
					Count    int     `json:"count"`
					Share    float64 `json:"share"`
				} `json:"by_callsite"`
				Steps []struct {
					Kind, From, To string
					Count          int
				} `json:"heaviest_steps"`
			} `json:"callsites"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("critpath --json: %v", err)
	}
	s := out.Summary.Sites
	if s == nil {
		t.Fatalf("critpath --json: no summary.callsites\n%s", res.stdout)
	}
	count := 0
	for _, x := range s.BySite {
		count += x.Count
		if x.Site == "" && (x.Function == "MPI_Init" || x.Function == "MPI_Finalize") {
			continue
		}
		l, ok := markedLine(x.Site, file, lines)
		want := l.fn
		if want == "MPI_Waitall" {
			want = "MPI_Wait"
		}
		if !ok || x.Function != want {
			t.Errorf("path site %q %s: not a marked line with that function", x.Site, x.Function)
		}
	}
	if count != out.Summary.Vertices {
		t.Errorf("by call site counts %d vertices, the path has %d", count, out.Summary.Vertices)
	}
	groups := map[string]bool{}
	repeated := false
	for _, st := range s.Steps {
		k := st.Kind + "|" + st.From + "|" + st.To
		if groups[k] {
			t.Errorf("step group %s listed twice", k)
		}
		groups[k] = true
		repeated = repeated || st.Count > 1
	}
	if !repeated {
		t.Errorf("no step group repeats, though the exchange runs 6 times: %+v", s.Steps)
	}
	text := run(t, "", mpitraceBin, "critpath", dir, "-o", filepath.Join(dir, "cp.out"))
	for _, want := range []string{"\nby call site (computation before the call, communication into it):\n", "\nheaviest steps by call site:\n"} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("critpath summary lacks %q:\n%s", want, text.stdout)
		}
	}
	if strings.Contains(text.stdout, "\nheaviest:\n") {
		t.Errorf("critpath summary lists the heaviest single steps too:\n%s", text.stdout)
	}
}

// checkSiteProblems: read through --binary, a stripped copy of the binary
// and a rebuilt one each give one note naming the problem, and the calls
// show as offsets in the binary.
func checkSiteProblems(t *testing.T, m mpiImpl, dir, src, bin string) {
	t.Helper()
	stripped := bin + "-stripped"
	if b, err := exec.Command("strip", "-o", stripped, bin).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v\n%s", err, b)
	}
	rebuilt := bin + "-rebuilt"
	buildSites(t, m, src, rebuilt, "-O1")
	for _, c := range []struct {
		local, note string
	}{
		{stripped, stripped + " has no debug information: rebuild with -g to see file:line"},
		{rebuilt, rebuilt + " has changed since the run (build id "},
	} {
		res := run(t, "", mpitraceBin, "stats", dir, "--by", "callsite", "--binary", bin+"="+c.local)
		if res.code != 0 {
			t.Fatalf("stats --binary %s: exit %d\n%s", c.local, res.code, res.stderr)
		}
		if n := strings.Count(res.stderr, "\n"); n != 1 || !strings.HasPrefix(res.stderr, "mpitrace: note: "+c.note) {
			t.Errorf("--binary %s: stderr %q, want one note %q", c.local, res.stderr, c.note)
		}
		if !strings.Contains(res.stdout, filepath.Base(bin)+"+0x") {
			t.Errorf("--binary %s: no call at an offset in %s:\n%s", c.local, filepath.Base(bin), res.stdout)
		}
		cp := run(t, "", mpitraceBin, "critpath", dir, "-o", filepath.Join(dir, "cp.out"), "--binary", bin+"="+c.local)
		if cp.code != 0 || strings.Count(cp.stderr, "mpitrace: note: "+c.note) != 1 {
			t.Errorf("critpath --binary %s: exit %d, stderr %q", c.local, cp.code, cp.stderr)
		}
	}
	if res := run(t, "", mpitraceBin, "stats", dir, "--by", "callsite", "--binary", bin+"="+bin+"-none"); res.code != 2 {
		t.Errorf("--binary with a missing file: exit %d, want 2 (usage)\n%s", res.code, res.stderr)
	}
}

// checkDumpAndDOTSites: dump's comment table names a marked line for every
// site of each rank and the dump still parses back; DOT tooltips name the
// marked lines.
func checkDumpAndDOTSites(t *testing.T, dir, file string, lines map[string]siteLine) {
	t.Helper()
	res := run(t, "", mpitraceBin, "dump", dir)
	if res.code != 0 {
		t.Fatalf("dump: exit %d\n%s", res.code, res.stderr)
	}
	comment := regexp.MustCompile(`(?m)^# site (\d+) 0x[0-9a-f]+ (.*)$`)
	rows := comment.FindAllStringSubmatch(res.stdout, -1)
	if want := 2 * len(lines); len(rows) != want {
		t.Errorf("dump: %d site comments, want %d (2 ranks):\n%s", len(rows), want, res.stdout)
	}
	for _, r := range rows {
		if _, ok := markedLine(r[2], file, lines); !ok {
			t.Errorf("dump: site %s at %q, not a marked line", r[1], r[2])
		}
	}
	ranks, err := tracefmt.ParseText(strings.NewReader(res.stdout))
	if err != nil || len(ranks) != 2 {
		t.Errorf("dump does not parse back: %d ranks, %v", len(ranks), err)
	}
	if quiet := run(t, "", mpitraceBin, "dump", dir, "--no-locations"); strings.Contains(quiet.stdout, "# site") {
		t.Errorf("dump --no-locations has site comments")
	}
	dot := run(t, "", mpitraceBin, "dot", dir)
	if dot.code != 0 {
		t.Fatalf("dot: exit %d\n%s", dot.code, dot.stderr)
	}
	tips := regexp.MustCompile(`called (?:on rank \d+ )?at ([^"]*)"`).FindAllStringSubmatch(dot.stdout, -1)
	if len(tips) == 0 {
		t.Errorf("dot: no tooltip names a call site")
	}
	for _, tip := range tips {
		if _, ok := markedLine(tip[1], file, lines); !ok {
			t.Errorf("dot: tooltip call site %q is not a marked line", tip[1])
		}
	}
}
