package tracefmt

import (
	"fmt"
	"io/fs"
	"os"
)

// openRegular opens path for reading when it is a regular file, symlinks
// followed, and returns it with its size. Anything else is refused without
// being opened: opening a FIFO for reading blocks until a writer comes, and
// a device may act on being opened. The file is opened without blocking and
// checked again, so that one swapped for a FIFO after the first check does
// not block either.
func openRegular(path string) (*os.File, int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, notRegular(path, st.Mode())
	}
	f, err := openNonblocking(path)
	if err != nil {
		return nil, 0, err
	}
	if st, err = f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = notRegular(path, st.Mode())
		}
		return nil, 0, err
	}
	return f, st.Size(), nil
}

func notRegular(path string, m fs.FileMode) error {
	what := "a special file"
	switch {
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%s: not a regular file (%s): not read", path, what)
}
