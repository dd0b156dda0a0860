package recorder

import (
	"slices"
	"strings"
)

// Unlisted returns the entries of a function list (MPITRACE_INCLUDE,
// MPITRACE_EXCLUDE: names separated by commas or spaces, a trailing * for
// a prefix) that match none of the functions the library records, in the
// order given.
func (l *Library) Unlisted(list string) []string {
	var bad []string
	for _, e := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' }) {
		if prefix, ok := strings.CutSuffix(e, "*"); ok {
			i, _ := slices.BinarySearch(l.Names, prefix)
			if i < len(l.Names) && strings.HasPrefix(l.Names[i], prefix) {
				continue
			}
		} else if _, found := slices.BinarySearch(l.Names, e); found {
			continue
		}
		bad = append(bad, e)
	}
	return bad
}

// Spelled returns the function the library records whose name is name but
// for case ("MPI_send" → "MPI_Send"), or "".
func (l *Library) Spelled(name string) string {
	for _, n := range l.Names {
		if strings.EqualFold(n, name) {
			return n
		}
	}
	return ""
}
