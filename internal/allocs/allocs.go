// Package allocs measures what code allocates, for the tests that bound
// what hostile input may cost.
package allocs

import "runtime"

// Bytes returns the bytes fn allocates (the growth of the runtime's
// TotalAlloc, which also counts other goroutines' allocations meanwhile).
func Bytes(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
