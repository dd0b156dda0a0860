//go:build unix

package tracefmt

import (
	"os"
	"syscall"
)

// fileID is what identifies an open file: its device and inode, and its
// size (16 bytes a rank file, where an os.FileInfo holds hundreds).
type fileID struct {
	dev, ino uint64
	size     int64
}

// same reports whether a and b are one file of one size.
func (a fileID) same(b fileID) bool { return a == b }

// idOf returns st's identity.
func idOf(st os.FileInfo) fileID {
	id := fileID{size: st.Size()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(sys.Dev), sys.Ino
	}
	return id
}

// openFileLimit is how many files the process may have open (its soft
// limit, which Go raises to the hard one), 1024 when not known.
func openFileLimit() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 1024
	}
	return int(min(l.Cur, 1<<30))
}
