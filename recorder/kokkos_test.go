package recorder

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpitrace/mpitrace/tracefmt"
	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// TestKokkosCallbacks builds the core recorder, has testdata/kokkos_unit.c
// load it with dlopen and find every kokkosp_* callback with dlsym as
// Kokkos does, drive each one (those Kokkos 3.4 never calls too), and
// compares the log with the events each call must write, thread by thread
// (four of them at once, interning names side by side).
func TestKokkosCallbacks(t *testing.T) {
	needCC(t)
	lib, err := BuildCore(context.Background(), "cc", BuildOptions{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, _ := filepath.Abs(filepath.Join("testdata", "kokkos_unit.c"))
	bin := filepath.Join(dir, "kokkos_unit")
	if out, err := exec.Command("cc", "-O1", "-g", "-std=gnu11", "-pthread", "-o", bin, src, "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("compiling: %v\n%s", err, out)
	}
	for _, mode := range []string{"default", "fences"} {
		t.Run(mode, func(t *testing.T) {
			trace := filepath.Join(t.TempDir(), "trace")
			run := exec.Command(bin, lib.Path, mode)
			run.Env = []string{"MPITRACE_DIR=" + trace}
			fencing := "off"
			if mode == "fences" {
				run.Env = append(run.Env, "MPITRACE_KOKKOS_FENCES=1")
				fencing = "on"
			}
			out, err := run.CombinedOutput()
			// kokkosp_print_help says what the tool is, on stdout as Kokkos' own help.
			if err != nil || !strings.HasPrefix(string(out), "mpitrace records Kokkos") || !strings.HasSuffix(string(out), "\nids 1032\nok\n") {
				t.Fatalf("kokkos_unit: %v\n%s", err, out)
			}
			threads, end := kokkosEvents(t, filepath.Join(trace, "rank-00000.mpit"))
			if end == nil || end.Reason != spec.EndExit {
				t.Errorf("end record %+v: want one, reason exit", end)
			}
			dev := fmt.Sprint(1<<24 | 2<<17 | 3)
			cuda := "CudaSpace-with-a-name-that-fills-all-sixty-four-bytes-of-the-handle-and-more"[:64]
			main := []string{
				"M kokkos.interface_version=20210225", "M kokkos.load_sequence=0", "M kokkos.device_info_count=1",
				"M kokkos.global_fencing=" + fencing, "M kokkos.tool_args=--tool-arg x=1", "K+1:first:0", "K-0",
				"R+outer", "R+inner", "R-0", "R-0", "R-2",
				"R+solve", "K+1:pf:" + dev, "K-0", "K+2:pr:0", "K-0", "K+3:ps:0", "K-0", "K+4:fence:0", "K-0", "R-0",
				"K+1:outerk:0", "K+2:innerk:0", "K-1", "K-0",
				"A Host/x:800", "A " + cuda + "/y:1600", "C+" + cuda + "/y<-Host/x:800", "C-0",
				"F " + cuda + "/y:1600", "F Host/x:800",
				"S+1:sec-a", "S+2:sec-b", "S-1", "S-2", "!checkpoint", "M mesh=64x64", "D dv:2", "D dv:1",
			}
			main = append(main, "K+1::0", "K-0", "!")
			for i := 0; i < 128; i++ {
				main = append(main, "R+deep")
			}
			for i := 0; i < 128; i++ {
				main = append(main, "R-0")
			}
			for i := 0; i < 1000; i++ {
				main = append(main, "K+1:many:0", "K-0")
			}
			main = append(main, "R+api", "R+api-n", "R-0", "R-0",
				"R+open region", "K+1:open kernel:0",
				"M mpitrace.regions_too_deep=2", // the 2 regions past the 128 kept, said at Kokkos' finalisation
				"K-1", "R-1",                    // which closes them
				"K+1:late:0", "K-1") // and the program's end closes this one
			var worker []string
			for i := 0; i < 20; i++ {
				worker = append(worker, "K+3:top:0", "K-0")
			}
			worker = append(worker, "R+worker", "K+1:wk:0", "K-0", "K+1:wk:0", "K-0", "R-0", "R+left open", "R-1")
			var stress []string
			for i := 0; i < 2000; i++ {
				stress = append(stress, fmt.Sprintf("R+n%d", i%50), "K+1:k:0", "K-0", "R-0")
			}
			if len(threads) != 6 {
				t.Fatalf("events on %d threads, want 6", len(threads))
			}
			for i, want := range [][]string{main, worker, stress, stress, stress, stress} {
				if g, w := strings.Join(threads[i], " | "), strings.Join(want, " | "); g != w {
					t.Errorf("thread %d:\n got %s\nwant %s", i, g, w)
				}
			}
		})
	}
}

// kokkosEvents reads a log's events as short strings, one list per
// recorder thread, with names from the string table.
func kokkosEvents(t *testing.T, path string) ([][]string, *tracefmt.End) {
	t.Helper()
	r, err := tracefmt.OpenRank(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var threads [][]string
	for r.Next() {
		ev := r.Event()
		str := func(f spec.Field) string {
			s, ok := r.Strings().Lookup(uint64(ev.Get(f)))
			if !ok {
				t.Fatalf("%s: %s id %d not in the string table", ev.Name(), spec.Fields[f].Name, ev.Get(f))
			}
			return s
		}
		var s string
		switch ev.Kind {
		case spec.Meta:
			s = "M " + str(spec.Name) + "=" + str(spec.Value)
		case spec.RegionBegin:
			s = "R+" + str(spec.Name)
		case spec.RegionEnd:
			s = fmt.Sprintf("R-%d", ev.Get(spec.Flags))
		case spec.KernelBegin:
			s = fmt.Sprintf("K+%d:%s:%d", ev.Get(spec.Type), str(spec.Name), ev.Get(spec.Dev))
		case spec.KernelEnd:
			s = fmt.Sprintf("K-%d", ev.Get(spec.Flags))
		case spec.CopyBegin:
			s = fmt.Sprintf("C+%s/%s<-%s/%s:%d", str(spec.Space), str(spec.Name), str(spec.SrcSpace), str(spec.SrcName), ev.Get(spec.Bytes))
		case spec.CopyEnd:
			s = fmt.Sprintf("C-%d", ev.Get(spec.Flags))
		case spec.Alloc, spec.Free:
			s = fmt.Sprintf("%s %s/%s:%d", ev.Name()[:1], str(spec.Space), str(spec.Name), ev.Get(spec.Bytes))
		case spec.SectionBegin:
			s = fmt.Sprintf("S+%d:%s", ev.Get(spec.Sec), str(spec.Name))
		case spec.SectionEnd:
			s = fmt.Sprintf("S-%d", ev.Get(spec.Sec))
		case spec.Mark:
			s = "!" + str(spec.Name)
		case spec.DualView:
			s = fmt.Sprintf("D %s:%d", str(spec.Name), ev.Get(spec.Flags))
		default:
			t.Fatalf("unexpected %s event", ev.Name())
		}
		for len(threads) <= int(ev.Thread) {
			threads = append(threads, nil)
		}
		threads[ev.Thread] = append(threads[ev.Thread], s)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	for _, d := range r.Diagnostics().All() {
		t.Errorf("diagnostic %s: %s", d.Code, d.Message)
	}
	return threads, r.End()
}
