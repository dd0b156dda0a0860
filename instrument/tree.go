//go:build cgo

package instrument

import (
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
	row, col   int    // 0-based position of start
	endRow     int
	named      bool
	bad        bool // an ERROR or MISSING node, or one that holds one
	parent     *node
	children   []*node
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
	if n.parent == nil {
		return nil
	}
	sib := n.parent.children
	for i, c := range sib {
		if c == n {
			if i == 0 {
				return nil
			}
			return sib[i-1]
		}
	}
	return nil
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

// parse parses src and copies the tree out.
func parse(src []byte, cpp bool) *node {
	p := ts.NewParser()
	defer p.Close()
	if err := p.SetLanguage(language(cpp)); err != nil {
		panic("internal error: tree-sitter grammar: " + err.Error())
	}
	tree := p.Parse(src, nil)
	defer tree.Close()
	root := tree.RootNode()
	cur := root.Walk()
	defer cur.Close()
	kinds := map[uint16]string{}
	mk := func(parent *node) *node {
		tn := cur.Node()
		id := tn.KindId()
		k, ok := kinds[id]
		if !ok {
			k = tn.Kind()
			kinds[id] = k
		}
		sp := tn.StartPosition()
		n := &node{
			kind: k, field: cur.FieldName(), start: int(tn.StartByte()), end: int(tn.EndByte()),
			row: int(sp.Row), col: int(sp.Column), endRow: int(tn.EndPosition().Row),
			named: tn.IsNamed(), bad: tn.HasError() || tn.IsMissing(), parent: parent,
		}
		if parent != nil {
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
		for !cur.GotoNextSibling() {
			if !cur.GotoParent() {
				return top
			}
			n = n.parent
		}
		n = mk(n.parent)
	}
}
