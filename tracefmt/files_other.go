//go:build !unix

package tracefmt

import "os"

// openFileLimit is how many files the process may have open: not known
// here, 1024.
func openFileLimit() int { return 1024 }

// fileID is what identifies an open file (os.SameFile's view of it, and
// its size).
type fileID struct {
	fi   os.FileInfo
	size int64
}

// same reports whether a and b are one file of one size.
func (a fileID) same(b fileID) bool { return os.SameFile(a.fi, b.fi) && a.size == b.size }

// idOf returns st's identity.
func idOf(st os.FileInfo) fileID { return fileID{fi: st, size: st.Size()} }
