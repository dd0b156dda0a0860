//go:build unix

package tracefmt

import (
	"os"
	"syscall"
)

// openNonblocking opens path for reading with O_NONBLOCK, which makes no
// difference to a regular file but keeps open(2) on a FIFO from blocking.
func openNonblocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
