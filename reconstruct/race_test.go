//go:build race

package reconstruct_test

// raceEnabled: the tests run with the race detector (make test's second
// run), which makes the long ones slow; they are covered by the first.
const raceEnabled = true
