package tracefmt

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/internal/textdiff"
)

// pendingText is a rank (format version 2) whose thread 0 was stopped in
// MPI_Recv, whose thread 1 had a long MPI_Barrier that did return, and
// whose end record is an MPI error's.
const pendingText = `rank 0
meta rank="0"
meta size="1"
meta run_id="r"
string 1 "MPI_Init"
string 2 "MPI_Barrier"
string 3 "MPI_Recv"
string 4 "MPI_Send"
t=0 thr=0 Call fn=MPI_Init dur=10
t=100 thr=1 Call fn=MPI_Barrier dur=900
pending thr=1 seq=0 fn=MPI_Barrier t=100 time=600
pending thr=0 seq=1 fn=MPI_Recv t=50 time=1050
pending thr=0 seq=1 fn=MPI_Recv t=50 time=1550
end reason=mpi_error signal=0 events=2 blocks=2 time=3000050 dropped=0 code=6 fn=MPI_Send message="MPI_ERR_RANK: invalid \"rank\""
`

// binaryOf converts a one-rank text into a rank file.
func binaryOf(t testing.TB, text string) []byte {
	t.Helper()
	ds, err := ParseText(strings.NewReader(text))
	if err != nil || len(ds) != 1 {
		t.Fatalf("parsing: %v (%d ranks)", err, len(ds))
	}
	var b bytes.Buffer
	if err := ds[0].WriteBinary(&b, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestPendingBlocks: pending blocks and the version-2 end record survive
// text -> binary -> text; the reader finds the call that never returned
// (thread 0's MPI_Recv: the thread has no event at seq 1) and not the one
// that did (thread 1's MPI_Barrier), and says so once.
func TestPendingBlocks(t *testing.T) {
	r, err := NewRankReader(bytes.NewReader(binaryOf(t, pendingText)), "p.mpit")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Pending()) != 3 {
		t.Errorf("%d pending records, want 3", len(r.Pending()))
	}
	u := r.Unfinished()
	if len(u) != 1 || u[0].Thread != 0 || u[0].Seq != 1 || u[0].Start != 50 || u[0].Time != 1550 {
		t.Fatalf("unfinished calls %+v, want thread 0's MPI_Recv (seq 1, the latest record)", u)
	}
	var got []string
	for _, d := range r.Diagnostics().All() {
		got = append(got, d.Code)
		if d.Code == CodeUnfinishedCall && (d.Severity != Warning || !strings.Contains(d.Message, "thread 0: MPI_Recv never returned: it began 3ms before the log ends")) {
			t.Errorf("diagnostic %s", d)
		}
	}
	if strings.Join(got, " ") != CodeUnfinishedCall+" "+CodeAbnormalEnd {
		t.Errorf("diagnostics %v, want unfinished_call and abnormal_end", got)
	}
	if e := r.End(); e.Code != 6 || e.Message != `MPI_ERR_RANK: invalid "rank"` || e.ReasonString() != "mpi_error" {
		t.Errorf("end record %+v", e)
	}
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	if b.String() != pendingText {
		t.Errorf("text round trip:\n%s", textdiff.Lines(pendingText, b.String()))
	}
}
