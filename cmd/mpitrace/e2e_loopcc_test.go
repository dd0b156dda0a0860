package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// loopTags finds the loops of a fixture program by their tags
// ("/* loop:NAME */"): NAME → line and column (1-based) of the loop's
// keyword on that line (the `do` of a do-while).
func loopTags(t *testing.T, src string) map[string][2]int {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tag := regexp.MustCompile(`/\* loop:(\w+) \*/`)
	kw := regexp.MustCompile(`\b(for|while|do)\b`)
	out := map[string][2]int{}
	for i, line := range strings.Split(string(b), "\n") {
		if m := tag.FindStringSubmatch(line); m != nil {
			k := kw.FindStringIndex(line)
			if k == nil {
				t.Fatalf("%s:%d: tag %s on a line without a loop keyword", src, i+1, m[1])
			}
			out[m[1]] = [2]int{i + 1, k[0] + 1}
		}
	}
	return out
}

// TestLoopsCC: an MPI program written without markers, built with
// `mpitrace cc -- mpicc` and recorded on 3 ranks at chance 1: it prints what
// the plain build prints, `mpitrace loops --json --by rank` gives every
// loop's known executions and iterations per rank, all of them sampled, and
// `mpitrace critpath` names the loop that holds the path, down to the
// kernel loop of the rank that does the most work.
func TestLoopsCC(t *testing.T) {
	const np, steps, work = 3, 10, 3000
	for _, m := range mpis {
		t.Run(m.name, func(t *testing.T) {
			m.require(t)
			dir := t.TempDir()
			src, err := filepath.Abs(filepath.Join("..", "..", "fixtures", "programs", "loopwork.c"))
			if err != nil {
				t.Fatal(err)
			}
			tags := loopTags(t, src)
			if len(tags) != 4 {
				t.Fatalf("loop tags %v, want steps, kernel, while, do", tags)
			}
			bin := filepath.Join(dir, "loopwork")
			if r := run(t, dir, mpitraceBin, "cc", "--", m.cc, "-O1", "-o", bin, src); r.code != 0 {
				t.Fatalf("mpitrace cc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			args := []string{fmt.Sprint(steps), fmt.Sprint(work)}
			plain := run(t, dir, m.launch(np, append([]string{bin}, args...)...)...)
			out := filepath.Join(dir, "traces")
			rec := recordEnv(t, out, []string{"MPITRACE_LOOP_CHANCE=1", "MPITRACE_LOOP_COUNTERS=none"}, m.launch(np, append([]string{bin}, args...)...)...)
			if plain.code != 0 || rec.code != 0 {
				t.Fatalf("exit %d without the recorder, %d with it\n%s", plain.code, rec.code, rec.stderr)
			}
			if got, want := sortedLines(rec.stdout), sortedLines(plain.stdout); !slices.Equal(got, want) || len(want) != np {
				t.Errorf("the program printed %q under the recorder, %q without", got, want)
			}

			lr := run(t, dir, mpitraceBin, "loops", out, "--json", "--by", "rank")
			if lr.code != 0 {
				t.Fatalf("loops: exit %d\n%s", lr.code, lr.stderr)
			}
			var doc struct {
				Ranks int `json:"ranks"`
				Loops []struct {
					File    string `json:"file"`
					Line    int    `json:"line"`
					Column  int    `json:"column"`
					Depth   int    `json:"depth"`
					PerRank []struct {
						Rank       int `json:"rank"`
						Executions int `json:"executions"`
						Iterations int `json:"iterations"`
						Sampled    int `json:"sampled_iterations"`
					} `json:"per_rank"`
				} `json:"loops"`
			}
			if err := json.Unmarshal([]byte(lr.stdout), &doc); err != nil {
				t.Fatalf("loops --json: %v\n%s", err, lr.stdout)
			}
			// Per rank: executions and iterations of each loop.
			want := map[string]func(r int) (int, int){
				"steps":  func(int) (int, int) { return 1, steps },
				"kernel": func(r int) (int, int) { return steps, steps * work * (r + 1) },
				"while":  func(int) (int, int) { return 1, 7 },
				"do":     func(int) (int, int) { return 1, 5 },
			}
			depth := map[string]int{"steps": 0, "kernel": 1, "while": 0, "do": 0}
			seen := map[string]bool{}
			for _, l := range doc.Loops {
				name := ""
				for n, at := range tags {
					if at == [2]int{l.Line, l.Column} {
						name = n
					}
				}
				if name == "" || filepath.Base(l.File) != "loopwork.c" {
					t.Errorf("a loop at %s:%d:%d, which the program does not have there", l.File, l.Line, l.Column)
					continue
				}
				seen[name] = true
				if l.Depth != depth[name] {
					t.Errorf("%s loop: depth %d, want %d", name, l.Depth, depth[name])
				}
				if len(l.PerRank) != np {
					t.Errorf("%s loop: %d ranks, want %d", name, len(l.PerRank), np)
				}
				for _, pr := range l.PerRank {
					e, i := want[name](pr.Rank)
					if pr.Executions != e || pr.Iterations != i || pr.Sampled != i {
						t.Errorf("%s loop, rank %d: %d executions, %d iterations, %d sampled; want %d, %d, %d",
							name, pr.Rank, pr.Executions, pr.Iterations, pr.Sampled, e, i, i)
					}
				}
			}
			if len(seen) != len(tags) || doc.Ranks != np {
				t.Errorf("loops found %v in %d ranks, want %d loops in %d", seen, doc.Ranks, len(tags), np)
			}

			cp := run(t, dir, mpitraceBin, "critpath", out, "-o", filepath.Join(dir, "critPath.out"))
			if cp.code != 0 {
				t.Fatalf("critpath: exit %d\n%s", cp.code, cp.stderr)
			}
			loc := func(name string) string {
				return regexp.QuoteMeta(fmt.Sprintf("loopwork.c:%d:%d", tags[name][0], tags[name][1]))
			}
			headline := regexp.MustCompile(`(?m)^\d+% of the path is in \S*` + loc("steps") + `, \d+% in its nested loop \S*` + loc("kernel") + `$`)
			if !headline.MatchString(cp.stdout) {
				t.Errorf("critpath does not name the steps loop and its kernel loop as the path's:\n%s", cp.stdout)
			}
		})
	}
}
