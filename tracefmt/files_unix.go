//go:build unix

package tracefmt

import "syscall"

// openFileLimit is how many files the process may have open (its soft
// limit, which Go raises to the hard one), 1024 when not known.
func openFileLimit() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 1024
	}
	return int(min(l.Cur, 1<<30))
}
