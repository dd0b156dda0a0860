package cli

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mpitrace/mpitrace/analysis/stats"
	"github.com/mpitrace/mpitrace/recorder"
	"github.com/mpitrace/mpitrace/tracefmt"
)

// recording is what a run left in its trace directory, read quickly: the
// rank files' headers, block frames and end records, not their events.
type recording struct {
	logs    int   // rank logs
	size    int   // world size (0: unknown)
	bytes   int64 // total size of the directory's files
	missing []int // ranks of the world without a usable log
	noEnd   []int // ranks whose log has no end record
	dropped uint64
	// other counts the other data-loss and error diagnostics by code.
	other map[string]int
	err   error // the logs could not be read as one trace
}

// scanRecording reads dir after a run.
func scanRecording(dir string) recording {
	var rec recording
	rec.logs, _ = summarizeRanks(dir)
	rec.bytes = dirSize(dir)
	if rec.logs == 0 {
		return rec
	}
	tr, err := tracefmt.OpenDir(dir)
	if err != nil {
		rec.err = err
		return rec
	}
	rec.size = tr.Size
	present := map[int]bool{}
	var mu sync.Mutex
	rec.err = tr.ForEachRank(0, func(r *tracefmt.RankReader) error {
		mu.Lock()
		defer mu.Unlock()
		present[r.Rank()] = true
		if e := r.End(); e == nil {
			rec.noEnd = append(rec.noEnd, r.Rank())
		} else {
			rec.dropped += e.Dropped
		}
		return nil
	})
	for rank := 0; rank < tr.Size; rank++ {
		if !present[rank] {
			rec.missing = append(rec.missing, rank)
		}
	}
	slices.Sort(rec.noEnd)
	d := tr.Diagnostics()
	severity := map[string]tracefmt.Severity{}
	for _, x := range d.All() {
		severity[x.Code] = x.Severity
	}
	for _, code := range d.Codes() {
		switch code {
		case tracefmt.CodeMissingRank, tracefmt.CodeMissingEnd, tracefmt.CodeDroppedEvents, tracefmt.CodeUnreadableRank:
			continue // said above
		}
		if severity[code] >= tracefmt.DataLoss {
			if rec.other == nil {
				rec.other = map[string]int{}
			}
			rec.other[code] = d.CountCode(code)
		}
	}
	return rec
}

// lost describes what the recording lost, "" when nothing.
func (rec *recording) lost() string {
	var parts []string
	if len(rec.missing) > 0 {
		parts = append(parts, "no log from "+ranksPhrase(rec.missing))
	}
	if len(rec.noEnd) > 0 {
		stopped := " stopped before its final write"
		if len(rec.noEnd) > 1 {
			stopped = " stopped before their final write"
		}
		parts = append(parts, ranksPhrase(rec.noEnd)+stopped)
	}
	if rec.dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d events dropped by the recorder", rec.dropped))
	}
	if len(rec.other) > 0 {
		var codes []string
		for c, n := range rec.other {
			codes = append(codes, fmt.Sprintf("%s %d", c, n))
		}
		slices.Sort(codes)
		parts = append(parts, "damaged blocks ("+strings.Join(codes, ", ")+")")
	}
	return strings.Join(parts, ", ")
}

// ranksPhrase says "rank 3" or "ranks 0, 2-5".
func ranksPhrase(ranks []int) string {
	if len(ranks) == 1 {
		return "rank " + stats.Ranks(ranks, ", ")
	}
	return "ranks " + stats.Ranks(ranks, ", ")
}

// closingLine is record's last line, printed whatever happened: where the
// logs are, how many, their size, and what was lost. shown is the
// directory as the user named it.
func closingLine(dir, shown string, launch recorder.Launch, stateDir string) string {
	rec := scanRecording(dir)
	if rec.logs == 0 && recorderSaid(stateDir, "foreign") {
		return fmt.Sprintf("no rank logs in %s: nothing was recorded (the recorder stepped aside: see above)", shown)
	}
	if rec.logs == 0 {
		mpi := string(launch.Flavor)
		if mpi == "" {
			mpi = "the MPI of " + launch.MPICC
		}
		return fmt.Sprintf("no rank logs in %s: nothing was recorded (did the program call MPI_Init? is it linked against %s?)", shown, mpi)
	}
	count := fmt.Sprintf("%d rank logs", rec.logs)
	if rec.size > rec.logs {
		count = fmt.Sprintf("%d of %d rank logs", rec.logs, rec.size)
	}
	head := fmt.Sprintf("%s in %s (%s)", count, shown, humanBytes(rec.bytes))
	switch lost := rec.lost(); {
	case rec.err != nil:
		return fmt.Sprintf("%s, which cannot be read: %v", head, rec.err)
	case lost != "":
		return fmt.Sprintf("%s; data lost: %s; details: mpitrace stats %s", head, lost, shown)
	}
	return fmt.Sprintf("%s, no data lost; next: mpitrace stats %s", head, shown)
}
