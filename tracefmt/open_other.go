//go:build !unix

package tracefmt

import "os"

// openNonblocking opens path for reading (openRegular has checked it is a
// regular file).
func openNonblocking(path string) (*os.File, error) { return os.Open(path) }
