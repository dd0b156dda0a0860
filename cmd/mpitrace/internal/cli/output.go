package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// writeOutputTo is writeOutput, or the command's standard output when path
// is "-" (or empty).
func writeOutputTo(s *Streams, path string, write func(io.Writer) error) error {
	if path != "" && path != "-" {
		return writeOutput(path, write)
	}
	bw := bufio.NewWriterSize(s.Out, 64<<10)
	if err := write(bw); err != nil {
		bw.Flush()
		return err
	}
	return bw.Flush()
}

// writeOutput writes what write produces to the file path: the one way
// every command writes a file it was asked for (-o).
//
//   - A path that does not exist, or names a regular file, is written
//     through a temporary file in the same directory renamed over it, so
//     that a failed run never leaves half a file. A new file gets mode 0666
//     less the umask, as the shell's > gives it; a replaced file keeps its
//     mode (and, where allowed, its owner).
//   - A symbolic link is followed: its target is written (or created), the
//     link stays.
//   - Anything else that exists (a character device such as /dev/null, a
//     FIFO, the pipe or terminal /dev/stdout stands for) is opened and
//     written in place, never replaced.
//
// An error writing the file names it ("writing PATH: ..."); an error that
// write returns for another reason is returned as it is.
func writeOutput(path string, write func(io.Writer) error) error {
	// What the kernel finds at path, through every link: /dev/stdout's
	// pipe has no name outputTarget could follow to.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		return outputIOErrorOf(path, writeInPlace(path, write))
	}
	target, st, err := outputTarget(path)
	if err != nil {
		return outputError(path, err)
	}
	switch {
	case st == nil || st.Mode().IsRegular():
		err = replaceFile(target, st, write)
	case st.IsDir():
		return fmt.Errorf("writing %s: it is a directory: name a file", path)
	default:
		err = writeInPlace(target, write)
	}
	return outputIOErrorOf(path, err)
}

// outputIOErrorOf is err, or the line naming path for an error of the
// output file itself.
func outputIOErrorOf(path string, err error) error {
	var ioErr *outputIOError
	if errors.As(err, &ioErr) {
		return outputError(path, ioErr.err)
	}
	return err
}

// outputIOError is an error of the output file itself (creating, writing,
// renaming it), as opposed to one of the content's producer.
type outputIOError struct{ err error }

func (e *outputIOError) Error() string { return e.err.Error() }

// outputError is the one line that says why path could not be written.
func outputError(path string, err error) error {
	err = unwrapPathError(err)
	var hint string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		hint = fmt.Sprintf(" (does the directory %s exist?)", filepath.Dir(path))
	case errors.Is(err, fs.ErrPermission):
		hint = " (name a file in a directory you can write to)"
	}
	return fmt.Errorf("writing %s: %v%s", path, err, hint)
}

// outputTarget follows path's symbolic links to the file they lead to, and
// returns it with its FileInfo, nil when it does not exist.
func outputTarget(path string) (string, fs.FileInfo, error) {
	p := path
	for range 40 { // the kernel's own bound on links in a path
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil, nil
		}
		if err != nil {
			return "", nil, err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			return p, st, nil
		}
		link, err := os.Readlink(p)
		if err != nil {
			return "", nil, err
		}
		if !filepath.IsAbs(link) {
			// Relative to the link's directory, as it really is: its ".."
			// is the parent of where a linked directory leads.
			dir, err := filepath.EvalSymlinks(filepath.Dir(p))
			if err != nil {
				return "", nil, err
			}
			link = filepath.Join(dir, link)
		}
		p = link
	}
	return "", nil, syscall.ELOOP
}

// replaceFile writes target through a temporary file renamed over it. old
// is target's FileInfo, nil when it does not exist.
func replaceFile(target string, old fs.FileInfo, write func(io.Writer) error) error {
	tmp, err := createTemp(target)
	if err != nil {
		return &outputIOError{err}
	}
	err = writeTo(tmp, write)
	if err == nil && old != nil {
		err = keepMode(tmp, old)
	}
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = &outputIOError{cerr}
	}
	if err == nil {
		if rerr := os.Rename(tmp.Name(), target); rerr != nil {
			err = &outputIOError{rerr}
		}
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// createTemp creates a new file next to target whose mode is 0666 less the
// umask (os.CreateTemp would make it 0600).
func createTemp(target string) (*os.File, error) {
	dir, base := filepath.Split(target)
	seed := time.Now().UnixNano() + int64(os.Getpid())
	for i := 0; ; i++ {
		name := filepath.Join(dir, "."+base+".tmp"+strconv.FormatInt((seed+int64(i)*7919)&0xffffff, 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if err == nil || !errors.Is(err, fs.ErrExist) || i == 100 {
			return f, err
		}
	}
}

// keepMode gives f the mode of old, and its owner when allowed (only root
// may give a file away; a failure to is not one of the output).
func keepMode(f *os.File, old fs.FileInfo) error {
	if err := f.Chmod(old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
		return &outputIOError{err}
	}
	if st, ok := old.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid()) {
		_ = f.Chown(int(st.Uid), int(st.Gid))
	}
	return nil
}

// writeInPlace writes into an existing file that is not a regular one (a
// device, a FIFO), without creating or truncating it.
func writeInPlace(target string, write func(io.Writer) error) error {
	f, err := os.OpenFile(target, os.O_WRONLY, 0)
	if err != nil {
		return &outputIOError{err}
	}
	err = writeTo(f, write)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = &outputIOError{cerr}
	}
	return err
}

// writeTo runs write on f, buffered; an error of f comes back as an
// *outputIOError.
func writeTo(f *os.File, write func(io.Writer) error) error {
	fw := &ioErrWriter{w: f}
	bw := bufio.NewWriterSize(fw, 64<<10)
	err := write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if fw.err != nil {
		return &outputIOError{fw.err}
	}
	return err
}

// ioErrWriter remembers the first error of the writer it wraps.
type ioErrWriter struct {
	w   io.Writer
	err error
}

func (e *ioErrWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// deprecatedFor is the annotation of a deprecated flag spelling: its value
// names the spelling to use.
const deprecatedFor = "mpitrace-deprecated-for"

// outputFlag defines -o/--output, the output flag of every command, and
// --out, its former spelling in record, critpath and calibrate: hidden,
// deprecated, still working.
func outputFlag(f *pflag.FlagSet, p *string, value, usage string) {
	f.StringVarP(p, "output", "o", value, usage)
	f.StringVar(p, "out", value, usage)
	f.Lookup("out").Hidden = true
	f.SetAnnotation("out", deprecatedFor, []string{"-o or --output"})
}

// checkOutputFlag refuses an empty -o of a command whose output has a
// default file.
func checkOutputFlag(path string) error {
	if path == "" {
		return flagErrorf("-o needs a file name (or - for stdout)")
	}
	return nil
}

// outputGiven reports whether the output flag was given.
func outputGiven(cmd *cobra.Command) bool {
	return cmd.Flags().Changed("output") || cmd.Flags().Changed("out")
}

// warnDeprecated says on stderr, once a flag, which deprecated spellings
// the command line used. (pflag's own MarkDeprecated would print to
// stdout, in cobra's way.)
func warnDeprecated(cmd *cobra.Command, s *Streams) {
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if use := f.Annotations[deprecatedFor]; len(use) > 0 {
			fmt.Fprintf(s.Err, "mpitrace: warning: --%s is deprecated: use %s\n", f.Name, use[0])
		}
	})
}
