package render

import "testing"

// Labels come from file names and symbols in debug information: dotQuote
// must give Graphviz a string it shows as it is, where Go's %q writes
// escapes (\t, \xff) that Graphviz draws as their letters.
func TestDotQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`plain.c:12 main`, `"plain.c:12 main"`},
		{"two\nlines", `"two\nlines"`},
		{`C:\dir\"we"ird`, `"C:\\dir\\\"we\"ird"`},
		{"tab\there", `"tab here"`},
		{"bad\xffbyte", "\"bad\uFFFDbyte\""},
		{"ünïcode ✓", `"ünïcode ✓"`},
		{"", `""`},
	} {
		if got := dotQuote(c.in); got != c.want {
			t.Errorf("dotQuote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}
