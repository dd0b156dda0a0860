// Command gendoc writes the event-kind tables of docs/format.md from the
// spec table (tracefmt/spec), between the markers
//
//	<!-- BEGIN GENERATED KINDS -->
//	<!-- END GENERATED KINDS -->
//
// Run it with go generate ./tracefmt. The test in this package fails when
// the committed section differs from what gendoc writes.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/mpitrace/mpitrace/tracefmt/spec"
)

const (
	beginMarker = "<!-- BEGIN GENERATED KINDS -->"
	endMarker   = "<!-- END GENERATED KINDS -->"
)

func main() {
	doc := flag.String("doc", "../docs/format.md", "the format document to update")
	flag.Parse()
	old, err := os.ReadFile(*doc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
	updated, err := Splice(old, Render())
	if err != nil {
		fmt.Fprintf(os.Stderr, "gendoc: %s: %v\n", *doc, err)
		os.Exit(1)
	}
	if bytes.Equal(old, updated) {
		return
	}
	if err := os.WriteFile(*doc, updated, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}

// Splice replaces what lies between the markers of doc with gen.
func Splice(doc []byte, gen string) ([]byte, error) {
	b := bytes.Index(doc, []byte(beginMarker))
	e := bytes.Index(doc, []byte(endMarker))
	if b < 0 || e < 0 || e < b {
		return nil, errors.New("the markers " + beginMarker + " and " + endMarker + " are missing or out of order")
	}
	var out bytes.Buffer
	out.Write(doc[:b+len(beginMarker)])
	out.WriteString("\n")
	out.WriteString(gen)
	out.Write(doc[e:])
	return out.Bytes(), nil
}

// Section returns what lies between the markers of doc.
func Section(doc []byte) (string, error) {
	b := bytes.Index(doc, []byte(beginMarker))
	e := bytes.Index(doc, []byte(endMarker))
	if b < 0 || e < 0 || e < b {
		return "", errors.New("markers missing")
	}
	return strings.TrimPrefix(string(doc[b+len(beginMarker):e]), "\n"), nil
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "*", `\*`).Replace(s)
}

// sentence capitalises the first letter of s.
func sentence(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func fieldNames(ks *spec.KindSpec) string {
	var n []string
	for i, f := range ks.Fields {
		s := "`" + spec.Fields[f].Name + "`"
		if v := fieldSince(ks, i); v > ks.Since {
			s += fmt.Sprintf(" (%d)", v)
		}
		n = append(n, s)
	}
	return strings.Join(n, " ")
}

// fieldSince is the first format version whose kind ks has its field i.
func fieldSince(ks *spec.KindSpec, i int) uint16 {
	v := ks.Since
	for _, g := range ks.Grown {
		if i >= g.N {
			v = max(v, g.Since)
		}
	}
	return v
}

// listDoc describes the encoding of a list.
func listDoc(l spec.List) string {
	switch l {
	case spec.ListRanks:
		return "`uvarint n`, then `n` svarints: each world rank minus the previous one (the first minus 0)"
	case spec.ListReqs:
		return "`uvarint n`, then `n` uvarint request ids"
	case spec.ListValues:
		return "`uvarint n`, then `n` uvarint values"
	case spec.ListCompletions:
		var parts []string
		for _, f := range spec.CompletionFields {
			parts = append(parts, fmt.Sprintf("`%s` (%s)", spec.Fields[f].Name, spec.Fields[f].Enc))
		}
		return "`uvarint n`, then `n` completion records, each " + strings.Join(parts, ", ")
	}
	return "none"
}

// Render returns the generated section (without the markers).
func Render() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("<!-- Generated from tracefmt/spec by tracefmt/internal/gendoc (go generate ./tracefmt). Do not edit by hand. -->\n\n")
	p("An event is `uvarint kind`, then the kind's fields in the order listed, each in\n")
	p("its encoding, then the kind's list if it has one. Kinds are only ever appended;\n")
	p("a kind number is never reused. Format version *v* has the kinds whose *since* is\n")
	p("at most *v*. Fields may be appended to a kind in a later version (the version\n")
	p("follows them in parentheses): in a file of an earlier version the kind ends\n")
	p("before them.\n\n")
	p("| kind | name | since | fields | list |\n|---:|---|---:|---|---|\n")
	for k := spec.Kind(1); k < spec.NumKinds; k++ {
		ks := &spec.Kinds[k]
		if ks.Name == "" {
			continue
		}
		list := "—"
		if ks.List != spec.NoList {
			list = "`" + ks.List.String() + "`"
		}
		p("| %d | [`%s`](#kind-%d-%s) | %d | %s | %s |\n", k, ks.Name, k, strings.ToLower(ks.Name), ks.Since, fieldNames(ks), list)
	}
	p("\n### Fields\n\n")
	p("A field means the same in every kind that has it. *Rank* fields hold world\n")
	p("ranks or a rank sentinel (see Values).\n\n")
	p("| field | encoding | rank | meaning |\n|---|---|:-:|---|\n")
	for f := spec.Field(1); f < spec.NumFields; f++ {
		fs := &spec.Fields[f]
		rank := ""
		if fs.Rank {
			rank = "yes"
		}
		p("| `%s` | %s | %s | %s |\n", fs.Name, fs.Enc, rank, cell(fs.Doc))
	}
	p("\n### Lists\n\n")
	for _, l := range []spec.List{spec.ListRanks, spec.ListReqs, spec.ListCompletions, spec.ListValues} {
		p("- **%s**: %s.\n", l, listDoc(l))
	}
	for k := spec.Kind(1); k < spec.NumKinds; k++ {
		ks := &spec.Kinds[k]
		if ks.Name == "" {
			continue
		}
		p("\n### Kind %d: %s\n\n", k, ks.Name)
		p("%s. Since version %d.", strings.TrimSuffix(sentence(cell(ks.Doc)), "."), ks.Since)
		if ks.IsCall {
			p(" One MPI call.")
		}
		p("\n\n| # | field | encoding | meaning |\n|---:|---|---|---|\n")
		for i, f := range ks.Fields {
			fs := &spec.Fields[f]
			since := ""
			if v := fieldSince(ks, i); v > ks.Since {
				since = fmt.Sprintf(" (since version %d)", v)
			}
			p("| %d | `%s` | %s | %s%s |\n", i+1, fs.Name, fs.Enc, cell(fs.Doc), since)
		}
		if ks.List != spec.NoList {
			p("\nList `%s`: %s.\n", ks.List.String(), listDoc(ks.List))
		} else {
			p("\nNo list.\n")
		}
	}
	p("\n")
	return b.String()
}
