//go:build !unix

package driver

// openFileLimit is how many files the process may have open, 0 when not
// known.
func openFileLimit() int { return 0 }
