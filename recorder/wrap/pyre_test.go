package wrap

import (
	"strings"
	"testing"
)

func TestTranslatePyRegexp(t *testing.T) {
	tests := map[string]string{
		`^MPI_`:            `^MPI_`,
		`abc\Z`:            `abc\z`,
		`(?P<n>a)`:         `(?P<n>a)`,
		`(?<n>a)`:          `(?P<n>a)`,
		`a{,3}`:            `a{0,3}`,
		`a{,x}`:            `a\{,x}`,
		`\u00e9\U0001F600`: `\x{00e9}\x{0001F600}`,
		`\0\012`:           `\x{0}\x{a}`,
		`[\b\101]`:         `[\x08\x{41}]`,
		`[]a]`:             `[]a]`,
		`[^]a]\Z`:          `[^]a]\z`,
		`a(?#note)b`:       `ab`,
		`(?ai)x`:           `(?i)x`,
		`(?i:x)`:           `(?i:x)`,
		`(?u)x`:            `x`,
		`(?s-i:x)`:         `(?s-i:x)`,
		`\d+\.\w*`:         `\d+\.\w*`,
	}
	for in, want := range tests {
		got, err := translatePyRegexp(in)
		if err != nil || got != want {
			t.Errorf("translate(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := map[string]string{
		`(a)\1`:    "backreferences",
		`(?P=n)`:   "backreferences",
		`a(?=b)`:   "lookahead",
		`a(?!b)`:   "lookahead",
		`(?<=a)b`:  "lookbehind",
		`(?<!a)b`:  "lookbehind",
		`(?>a)`:    "atomic",
		`(?(1)a)`:  "conditional",
		`(?x) a b`: "verbose",
		`\N{DASH}`: "character names",
		`a\`:       "trailing backslash",
		`\u12`:     "incomplete",
	}
	for in, want := range bad {
		if _, err := translatePyRegexp(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("translate(%q) error = %v, want one mentioning %q", in, err, want)
		}
	}
}

func TestPySub(t *testing.T) {
	tests := []struct{ re, repl, in, want string }{
		{`^MPI_`, `NQJ_`, "MPI_Send", "NQJ_Send"},
		{`(\w+)_(\w+)`, `\2_\1`, "MPI_Send", "Send_MPI"},
		{`(?P<a>x)`, `<\g<a>\g<1>\g<0>>`, "axb", "a<xxx>b"},
		{`s`, `\n\t\\$1`, "s", "\n\t\\$1"},
		{`(a)|(b)`, `[\1\2]`, "ab", "[a][b]"},
		{`x`, `\.`, "x", `\.`},
		{`x`, `\101`, "x", "A"},
		{`MPI_.*`, `MPI_Foo`, "MPI_Datatype", "MPI_Foo"},
		{`\d`, ``, "a1b22", "ab"},
		{`.*`, `x`, "abc", "x"}, // Python 3.7+ gives "xx"
	}
	for _, tc := range tests {
		re, err := pyRegexp(tc.re)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := parsePyRepl(tc.repl, re)
		if err != nil {
			t.Fatalf("parsePyRepl(%q): %v", tc.repl, err)
		}
		if got := pySub(re, parts, tc.in); got != tc.want {
			t.Errorf("sub(%q, %q, %q) = %q, want %q", tc.re, tc.repl, tc.in, got, tc.want)
		}
	}
	re, _ := pyRegexp(`(a)`)
	for repl, want := range map[string]string{
		`\3`:        `invalid group reference \3`,
		`\g<x>`:     `unknown group name 'x'`,
		`\g<1`:      `missing > after \g<`,
		`\g1`:       `missing < after \g`,
		`\z`:        `bad escape \z`,
		`trailing\`: `bad escape (end of replacement)`,
	} {
		if _, err := parsePyRepl(repl, re); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parsePyRepl(%q) error = %v, want %q", repl, err, want)
		}
	}
}
