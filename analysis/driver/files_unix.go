//go:build unix

package driver

import "syscall"

// openFileLimit is how many files the process may have open (its soft
// limit), 0 when not known.
func openFileLimit() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur > 1<<30 {
		return 0
	}
	return int(l.Cur)
}
