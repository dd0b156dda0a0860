//go:build cgo

package instrument

import (
	"sync"

	ts "github.com/tree-sitter/go-tree-sitter"
	tsc "github.com/tree-sitter/tree-sitter-c/bindings/go"
	tscpp "github.com/tree-sitter/tree-sitter-cpp/bindings/go"
)

// node is a syntax tree node copied out of tree-sitter once, so that the
// analysis runs in Go without a cgo call per question.
type node struct {
	kind       string
	field      string // the field name under its parent ("body", "label", ...)
	start, end int    // byte offsets
	named      bool
	bad        bool // an ERROR or MISSING node, or one that holds one
	idx        int  // index among its parent's children
	// strayCase: a case label below it belongs to no switch below it.
	strayCase bool
	parent    *node
	children  []*node
}

func (n *node) child(field string) *node {
	for _, c := range n.children {
		if c.field == field {
			return c
		}
	}
	return nil
}

// prevSibling returns the sibling before n, or nil.
func (n *node) prevSibling() *node {
	if n.parent == nil || n.idx == 0 {
		return nil
	}
	return n.parent.children[n.idx-1]
}

// walk calls f on n and its descendants, depth first, in source order;
// f returning false skips a node's children.
func (n *node) walk(f func(*node) bool) {
	if !f(n) {
		return
	}
	for _, c := range n.children {
		c.walk(f)
	}
}

func language(cpp bool) *ts.Language {
	if cpp {
		return ts.NewLanguage(tscpp.Language())
	}
	return ts.NewLanguage(tsc.Language())
}

// grammar holds a grammar's symbol and field names, read once, so that
// the copy asks tree-sitter only for ids.
type grammar struct {
	lang   *ts.Language
	kinds  []string
	named  []bool
	fields []string
}

var (
	grammarOnce [2]sync.Once
	grammars    [2]*grammar
)

func grammarFor(cpp bool) *grammar {
	i := 0
	if cpp {
		i = 1
	}
	grammarOnce[i].Do(func() {
		lang := language(cpp)
		g := &grammar{lang: lang}
		for id := uint32(0); id < lang.NodeKindCount(); id++ {
			g.kinds = append(g.kinds, lang.NodeKindForId(uint16(id)))
			g.named = append(g.named, lang.NodeKindIsNamed(uint16(id)))
		}
		g.fields = append(g.fields, "")
		for id := uint32(1); id <= lang.FieldCount(); id++ {
			g.fields = append(g.fields, lang.FieldNameForId(uint16(id)))
		}
		grammars[i] = g
	})
	return grammars[i]
}

// parse parses src and copies the tree out: per node its symbol, field
// and byte range (the fewest cgo calls); positions come from the bytes.
func parse(src []byte, cpp bool) *node {
	g := grammarFor(cpp)
	p := ts.NewParser()
	defer p.Close()
	if err := p.SetLanguage(g.lang); err != nil {
		panic("internal error: tree-sitter grammar: " + err.Error())
	}
	tree := p.Parse(src, nil)
	defer tree.Close()
	cur := tree.RootNode().Walk()
	defer cur.Close()
	mk := func(parent *node) *node {
		tn := cur.Node()
		id := int(tn.KindId())
		k, named := "ERROR", false
		if id < len(g.kinds) && id != 65535 {
			k, named = g.kinds[id], g.named[id]
		}
		field := ""
		if fid := int(cur.FieldId()); fid < len(g.fields) {
			field = g.fields[fid]
		}
		start, end := tn.ByteRange()
		n := &node{kind: k, field: field, start: int(start), end: int(end), named: named, bad: k == "ERROR", parent: parent}
		if parent != nil {
			n.idx = len(parent.children)
			parent.children = append(parent.children, n)
		}
		return n
	}
	top := mk(nil)
	n := top
	for {
		if cur.GotoFirstChild() {
			n = mk(n)
			continue
		}
		// A leaf of no width is a token the parser made up (MISSING).
		if n.start == n.end && n != top {
			n.bad = true
		}
		for !cur.GotoNextSibling() {
			if !cur.GotoParent() {
				summarize(top)
				return top
			}
			n = n.parent
		}
		n = mk(n.parent)
	}
}

// summarize sets bad and strayCase bottom up, iteratively (inputs may
// nest deeply).
func summarize(root *node) {
	var order []*node
	stack := []*node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		order = append(order, n)
		stack = append(stack, n.children...)
	}
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		for _, c := range n.children {
			n.bad = n.bad || c.bad
		}
		switch n.kind {
		case "case_statement":
			n.strayCase = true
		case "case", "default":
			// A case or default keyword outside a case statement: in
			// code the parser could not read, count it as stray.
			n.strayCase = len(n.children) == 0 && n.parent != nil && n.parent.kind != "case_statement"
		case "switch_statement":
			n.strayCase = false
		default:
			for _, c := range n.children {
				n.strayCase = n.strayCase || c.strayCase
			}
		}
	}
}
