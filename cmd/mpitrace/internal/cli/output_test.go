package cli

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// write writes data through writeOutput.
func writeData(path string, data string) error {
	return writeOutput(path, func(w io.Writer) error {
		_, err := io.WriteString(w, data)
		return err
	})
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withUmask runs the test under the given umask (process-wide: the tests
// of this package do not run in parallel).
func withUmask(t *testing.T, mask int) {
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

// A new file gets 0666 less the umask, as the shell's > gives it.
func TestOutputNewFileUmask(t *testing.T) {
	for _, mask := range []int{0o022, 0o027, 0o077} {
		withUmask(t, mask)
		p := filepath.Join(t.TempDir(), "out")
		if err := writeData(p, "x\n"); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := fs.FileMode(0o666 &^ mask); st.Mode() != want {
			t.Errorf("umask %03o: new file mode %v, want %v", mask, st.Mode(), want)
		}
	}
}

// Replacing a regular file keeps its mode, whatever the umask, and
// leaves no temporary file behind.
func TestOutputReplaceKeepsMode(t *testing.T) {
	withUmask(t, 0o022)
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	for _, mode := range []fs.FileMode{0o600, 0o640, 0o664, 0o755} {
		if err := os.WriteFile(p, []byte("old contents, longer than the new\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := writeData(p, "new\n"); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(p)
		if st.Mode() != mode || readString(t, p) != "new\n" {
			t.Errorf("replacing a %v file: mode %v, contents %q", mode, st.Mode(), readString(t, p))
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// A symbolic link is followed: its target is replaced, the link stays;
// a dangling link gets its target created.
func TestOutputSymlink(t *testing.T) {
	withUmask(t, 0o022)
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	target := filepath.Join(sub, "target")
	if err := os.WriteFile(target, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("sub/target", link); err != nil {
		t.Fatal(err)
	}
	// A link to a link, too.
	link2 := filepath.Join(dir, "link2")
	os.Symlink("link", link2)
	for _, l := range []string{link, link2} {
		if err := writeData(l, "via "+filepath.Base(l)+"\n"); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Lstat(l); err != nil || st.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a symbolic link: %v", l, st.Mode())
		}
		if got := readString(t, target); got != "via "+filepath.Base(l)+"\n" {
			t.Errorf("target holds %q", got)
		}
		if st, _ := os.Stat(target); st.Mode() != 0o600 {
			t.Errorf("target mode %v, want 0600 kept", st.Mode())
		}
	}

	dangling := filepath.Join(dir, "dangling")
	os.Symlink("sub/new", dangling)
	if err := writeData(dangling, "created\n"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(dangling); err != nil || st.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the dangling link was replaced: %v", st.Mode())
	}
	if got := readString(t, filepath.Join(sub, "new")); got != "created\n" {
		t.Errorf("the dangling link's target holds %q", got)
	}
}

// A FIFO is written into, not replaced: a reader at its other end gets
// the data.
func TestOutputFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// The read end, opened without waiting for a writer (so that opening
	// the write end does not wait either). Until a writer comes, a read
	// finds the end of the file: the reader reads until it has all the
	// data or its time is up.
	r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data := strings.Repeat("through the pipe\n", 10000) // more than a pipe buffer
	deadline := time.Now().Add(10 * time.Second)
	r.SetReadDeadline(deadline)
	got := make(chan string, 1)
	go func() {
		var b []byte
		buf := make([]byte, 1<<16)
		for len(b) < len(data) && time.Now().Before(deadline) {
			n, err := r.Read(buf)
			b = append(b, buf[:n]...)
			if n == 0 || err != nil {
				time.Sleep(5 * time.Millisecond)
			}
		}
		got <- string(b)
	}()
	if err := writeData(p, data); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != data {
		t.Errorf("the reader got %d bytes, want %d", len(s), len(data))
	}
	if st, err := os.Lstat(p); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v", st.Mode())
	}
}

// isCharDevice reports whether path is (still) a character device.
func isCharDevice(path string) bool {
	st, err := os.Lstat(path)
	return err == nil && st.Mode()&fs.ModeCharDevice != 0
}

// A character device is written into, not replaced: first a copy of
// /dev/null made with mknod (root only), then /dev/null itself, through
// critpath -o. /dev/null is tried only after the copy survived, so that a
// broken writeOutput cannot replace the machine's /dev/null.
func TestOutputCharDevice(t *testing.T) {
	dir := writeTrace(t)
	null := filepath.Join(t.TempDir(), "null")
	var st syscall.Stat_t
	if err := syscall.Stat("/dev/null", &st); err != nil {
		t.Skipf("no /dev/null: %v", err)
	}
	copyMade := syscall.Mknod(null, syscall.S_IFCHR|0o666, int(st.Rdev)) == nil
	if copyMade {
		if err := writeData(null, "discarded\n"); err != nil {
			t.Fatal(err)
		}
		if !isCharDevice(null) {
			t.Fatalf("writing to a character device replaced it with a regular file; not trying /dev/null")
		}
		if code, _, errs := runCLI(t, "dot", dir, "-o", null); code != 0 || !isCharDevice(null) {
			t.Fatalf("dot -o %s: exit %d, %s; still a character device: %v", null, code, errs, isCharDevice(null))
		}
	} else if os.Geteuid() == 0 {
		t.Fatalf("root cannot mknod a copy of /dev/null; not trying /dev/null")
	}
	f, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("/dev/null is not writable: %v", err)
	}
	f.Close()
	for _, args := range [][]string{
		{"critpath", dir, "-o", "/dev/null"},
		{"dot", dir, "-o", "/dev/null"},
	} {
		code, _, errs := runCLI(t, args...)
		if code != 0 {
			t.Errorf("%v: exit %d, %s", args, code, errs)
		}
		if !isCharDevice("/dev/null") {
			t.Fatalf("%v replaced /dev/null", args)
		}
	}
}

// A directory is refused with a line that names it; a failed write leaves
// the old file and no temporary file.
func TestOutputErrors(t *testing.T) {
	dir := t.TempDir()
	err := writeData(dir, "x")
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "directory") {
		t.Errorf("writing to a directory: %v", err)
	}
	p := filepath.Join(dir, "out")
	os.WriteFile(p, []byte("old\n"), 0o644)
	err = writeOutput(p, func(w io.Writer) error {
		io.WriteString(w, "half")
		return io.ErrUnexpectedEOF
	})
	if err == nil || readString(t, p) != "old\n" {
		t.Errorf("a failed write: %v, file %q", err, readString(t, p))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left in the directory: %v", ents)
	}
	err = writeData(filepath.Join(dir, "no", "such", "dir", "out"), "x")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "no", "such", "dir", "out")) {
		t.Errorf("writing into a missing directory: %v", err)
	}
}

// Every command that writes a file writes through writeOutput: a symbolic
// link given to -o stays a link.
func TestCommandsFollowLinks(t *testing.T) {
	withUmask(t, 0o022)
	dir := writeTrace(t)
	tmp := t.TempDir()
	tmpl := filepath.Join(tmp, "t.w")
	os.WriteFile(tmpl, []byte("{{fn f MPI_Barrier}}{{callfn}}{{endfn}}\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"critpath", dir}, "MPI_Init -1\n"},
		{[]string{"dot", dir}, "digraph "},
		{[]string{"wrap", "-c", fakeCompiler(t), tmpl}, "\n#include <mpi.h>\n"},
	} {
		target := filepath.Join(tmp, c.args[0]+".target")
		link := filepath.Join(tmp, c.args[0]+".link")
		os.WriteFile(target, nil, 0o600)
		os.Symlink(target, link)
		code, _, errs := runCLI(t, append(c.args, "-o", link)...)
		if code != 0 {
			t.Fatalf("%v -o link: exit %d, %s", c.args, code, errs)
		}
		if st, err := os.Lstat(link); err != nil || st.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%v -o link replaced the link", c.args)
		}
		if got := readString(t, target); !strings.HasPrefix(got, c.want) {
			t.Errorf("%v -o link: target holds %.40q", c.args, got)
		}
		if st, _ := os.Stat(target); st.Mode() != 0o600 {
			t.Errorf("%v -o link: target mode %v, want 0600 kept", c.args, st.Mode())
		}
	}
}

// /dev/stdout and /proc/self/fd/N name what a descriptor is open on: a
// pipe there is written into.
func TestOutputDescriptorLink(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	path := fmt.Sprintf("/proc/self/fd/%d", w.Fd())
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no %s: %v", path, err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	err = writeData(path, "through the descriptor\n")
	w.Close()
	if err != nil {
		t.Fatalf("writing to %s: %v", path, err)
	}
	if s := <-got; s != "through the descriptor\n" {
		t.Errorf("the pipe got %q", s)
	}
}
