// Package textdiff shows how two texts differ, line by line: what golden
// tests print when an output changed.
package textdiff

import "strings"

// maxCells bounds the LCS table; larger texts are shown whole.
const maxCells = 4_000_000

// Lines returns a diff of want and got from their longest common
// subsequence of lines: "  " before a common line, "- " before a line only
// in want, "+ " before a line only in got.
func Lines(want, got string) string {
	a := strings.SplitAfter(want, "\n")
	b := strings.SplitAfter(got, "\n")
	n, m := len(a), len(b)
	if n*m > maxCells {
		return "(outputs too large to diff)\n--- want\n" + want + "\n+++ got\n" + got
	}
	l := make([][]int, n+1)
	for i := range l {
		l[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	var sb strings.Builder
	for i, j := 0, 0; i < n || j < m; {
		switch {
		case i < n && j < m && a[i] == b[j]:
			sb.WriteString("  " + a[i])
			i++
			j++
		case j < m && (i == n || l[i][j+1] >= l[i+1][j]):
			sb.WriteString("+ " + b[j])
			j++
		default:
			sb.WriteString("- " + a[i])
			i++
		}
	}
	return sb.String()
}
