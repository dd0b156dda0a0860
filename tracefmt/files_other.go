//go:build !unix

package tracefmt

// openFileLimit is how many files the process may have open: not known
// here, 1024.
func openFileLimit() int { return 1024 }
