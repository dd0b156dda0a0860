// Package benchutil holds what the programs under bench/ share.
package benchutil

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
)

// Median returns the median of x (the mean of the two middle values for an
// even count), 0 for none.
func Median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BuildMpitrace builds the mpitrace command of this checkout (run from the
// repository's root, as make bench does) into dir and returns its path.
func BuildMpitrace(dir string) (string, error) {
	bin := filepath.Join(dir, "mpitrace")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/mpitrace").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building mpitrace: %v\n%s", err, out)
	}
	return bin, nil
}
