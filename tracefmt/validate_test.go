package tracefmt

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	const pre = "rank 0\nmeta size=\"4\"\nstring 1 \"MPI_Send\"\n"
	for _, c := range []struct {
		name  string
		text  string
		codes map[string]int // expected counts; every other code must be 0
	}{
		{"clean", `
t=10 CommNew fn=MPI_Send dur=1 parent=1 comm=3 gid=9 ranks=[0,1]
Send fn=MPI_Send comm=3 peer=1 req=5
Irecv fn=MPI_Send comm=1 peer=-1 tag=-1 req=6
Send fn=MPI_Send peer=0 req=7
Start fn=MPI_Send reqs=[7]
Complete fn=MPI_Send flag=1 completions=[{req=5},{req=6 src=2},{req=7 flags=2},{req=0}]
Start fn=MPI_Send reqs=[7]
ReqFree fn=MPI_Send req=7
CommFree fn=MPI_Send comm=3
Coll fn=MPI_Send comm=2 root=-3
t=100 thr=1 ClockSync offset=-5
`, nil},
		{"undefined comm", `
Send fn=MPI_Send comm=4
CommNew fn=MPI_Send parent=8 comm=3
CommFree fn=MPI_Send comm=3
Recv fn=MPI_Send comm=3
`, map[string]int{CodeUndefinedComm: 3}},
		{"comm redefined", `
CommNew fn=MPI_Send parent=1 comm=3
CommNew fn=MPI_Send parent=1 comm=3
CommNew fn=MPI_Send parent=1 comm=1
`, map[string]int{CodeCommRedefined: 2}},
		{"unknown request", `
Complete fn=MPI_Send completions=[{req=3}]
Start fn=MPI_Send reqs=[4]
ReqFree fn=MPI_Send req=5
Irecv fn=MPI_Send req=6
Complete fn=MPI_Send completions=[{req=6}]
Complete fn=MPI_Send completions=[{req=6}]
`, map[string]int{CodeUnknownRequest: 4}},
		{"request reused", `
Irecv fn=MPI_Send req=6
Send fn=MPI_Send req=6
`, map[string]int{CodeRequestReused: 1}},
		{"unknown fn", `
Send fn=#9
ClockSync
`, map[string]int{CodeUnknownFn: 1}},
		{"negative duration", `
Send fn=MPI_Send dur=18446744073709551615
`, map[string]int{CodeNegativeDuration: 1}},
		{"non-monotonic", `
t=100 Call fn=MPI_Send dur=10
t=50 Call fn=MPI_Send
t=60 thr=1 Call fn=MPI_Send
t=55 thr=2 Call fn=MPI_Send
`, map[string]int{CodeNonMonotonicStart: 1}},
		{"bad rank", `
Send fn=MPI_Send peer=4
Recv fn=MPI_Send peer=-6 src=3
CommNew fn=MPI_Send parent=1 comm=3 ranks=[0,9]
Complete fn=MPI_Send completions=[{req=0 src=-9}]
Coll fn=MPI_Send root=-4
`, map[string]int{CodeBadRank: 4}},
		{"loops clean", `
LoopBegin file=stencil.c line=41 col=5
IterBegin iter=1
LoopBegin file=stencil.c line=42 col=9
IterBegin iter=3
IterEnd values=[10,20]
LoopEnd count=4
IterEnd
IterBegin iter=7
Send fn=MPI_Send peer=1
IterEnd
LoopEnd count=9
LoopBegin file=stencil.c line=41 col=5
LoopBegin file=stencil.c line=42 col=9
IterBegin iter=1
LoopEnd count=2 flags=1
LoopEnd count=0 flags=3
thr=1 LoopBegin file=#1 line=1 col=1
thr=1 LoopEnd count=0
`, nil},
		{"loops unbalanced", `
LoopEnd count=1
IterBegin iter=1
IterEnd
LoopBegin file=a.c line=1 col=1
IterEnd
IterBegin iter=2
IterBegin iter=2
LoopEnd count=1
LoopBegin file=#77 line=1 col=1
LoopBegin file=a.c line=9 col=1
thr=3 LoopBegin file=a.c line=1 col=1
`, map[string]int{CodeLoopEndUnopened: 1, CodeIterOutsideLoop: 1, CodeIterEndUnopened: 2, CodeIterUnclosed: 2,
			CodeLoopCount: 2, CodeUnknownFile: 1, CodeLoopUnclosed: 2}},
		{"regions clean", `
RegionBegin name=timestep
KernelBegin type=1 name=axpy dev=16777216
KernelEnd
KernelBegin type=4 name=fence dev=0
KernelEnd
CopyBegin space=HostSpace name=h srcspace=CudaSpace srcname=d bytes=64
CopyEnd
SectionBegin sec=3 name=io
thr=1 SectionBegin sec=3 name=io
Alloc space=HostSpace name=h bytes=64
Free space=HostSpace name=h bytes=64
Mark name=step
Meta name=kokkos.version value=4.0
DualView name=dv flags=3
SectionEnd sec=3
thr=1 SectionEnd sec=3
RegionEnd flags=1
`, map[string]int{CodeRegionUnwound: 1}},
		{"regions unbalanced", `
RegionEnd
RegionEnd flags=2
KernelEnd
RegionBegin name=a
KernelBegin type=7 name=k
RegionEnd
CopyEnd
SectionEnd sec=1
Mark name=#99
CopyBegin space=#98 name=x srcspace=HostSpace srcname=#97
thr=2 SectionBegin sec=5 name=s
thr=2 SectionBegin sec=5 name=s
thr=2 SectionEnd sec=5
`, map[string]int{CodeRegionEndUnopened: 3, CodeRegionUnmatched: 1, CodeBadKernelType: 1, CodeRegionEndCrossed: 1,
			CodeSectionEndUnopened: 1, CodeUnknownString: 3, CodeRegionUnclosed: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ranks, err := ParseText(strings.NewReader(pre + c.text))
			if err != nil {
				t.Fatal(err)
			}
			d, err := Validate(ranks[0].Source())
			if err != nil {
				t.Fatal(err)
			}
			for _, code := range d.Codes() {
				if d.CountCode(code) != c.codes[code] {
					t.Errorf("%s: %d, want %d\n%s", code, d.CountCode(code), c.codes[code], diagStrings(d))
				}
			}
			for code, n := range c.codes {
				if d.CountCode(code) != n {
					t.Errorf("%s: %d, want %d\n%s", code, d.CountCode(code), n, diagStrings(d))
				}
			}
			for _, x := range d.All() {
				if !strings.HasPrefix(x.Message, "invalid: ") || x.Rank != 0 {
					t.Errorf("diagnostic %q", x)
				}
			}
		})
	}
}

func TestDiagnosticsTable(t *testing.T) {
	var d Diagnostics
	if d.Summary() != "no problems" {
		t.Error(d.Summary())
	}
	for i := 0; i < maxStoredPerCode+5; i++ {
		d.Add(Diagnostic{Severity: DataLoss, Code: CodeSeqGap, Rank: 1, Block: 2, Offset: 3})
	}
	d.Add(Diagnostic{Severity: Error, Code: CodeUndefinedComm, Rank: -1, Block: -1, Offset: -1, Message: "m"})
	if d.Len() != maxStoredPerCode+6 || len(d.All()) != maxStoredPerCode+1 || d.Elided() != 5 {
		t.Errorf("len %d stored %d elided %d", d.Len(), len(d.All()), d.Elided())
	}
	if d.Count(DataLoss) != maxStoredPerCode+5 || d.Count(Error) != 1 || d.CountCode(CodeSeqGap) != maxStoredPerCode+5 {
		t.Error("counts")
	}
	if got := d.Summary(); got != "1 error, 1005 data loss (seq_gap 1005, undefined_comm 1)" {
		t.Error(got)
	}
	var m Diagnostics
	m.Merge(&d)
	m.Merge(nil)
	if m.Len() != d.Len() || m.Elided() != 5 {
		t.Error("merge")
	}
	x := Diagnostic{Severity: DataLoss, Code: "c", Rank: 3, File: "f", Block: 17, Offset: 81234, Message: "decoding Send.tag: x"}
	if x.String() != "data loss: f: rank 3: block 17 at offset 81234: decoding Send.tag: x [c]" {
		t.Error(x.String())
	}
}
