//go:build !race

package reconstruct_test

// raceEnabled: see race_test.go.
const raceEnabled = false
