package tracefmt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

// ErrNotMpitrace is returned (wrapped, with the file name) for a file that
// does not start with the mpitrace magic: "FILE: not an mpitrace file?".
var ErrNotMpitrace = errors.New("not an mpitrace file?")

// ErrBrokenTrace is matched (errors.Is) by every error about damaged input;
// their text starts with "broken trace:".
var ErrBrokenTrace = errors.New("broken trace")

// VersionError is returned for a file whose format version this build does
// not read.
type VersionError struct {
	File    string
	Version uint16
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s: unsupported format version %d (this build reads %s)", e.File, e.Version, supportedVersions())
}

// supportedVersions formats spec.Versions: "1", "1–3" or "1, 3".
func supportedVersions() string {
	vs := spec.Versions
	contiguous := true
	for i := 1; i < len(vs); i++ {
		if vs[i] != vs[i-1]+1 {
			contiguous = false
		}
	}
	if len(vs) > 2 && contiguous {
		return fmt.Sprintf("%d–%d", vs[0], vs[len(vs)-1])
	}
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.Itoa(int(v))
	}
	return strings.Join(s, ", ")
}

type brokenError struct{ msg string }

func (e *brokenError) Error() string        { return "broken trace: " + e.msg }
func (e *brokenError) Is(target error) bool { return target == ErrBrokenTrace }

// brokenf returns an error about damaged input, prefixed "broken trace: ".
func brokenf(format string, args ...any) error {
	return &brokenError{fmt.Sprintf(format, args...)}
}
