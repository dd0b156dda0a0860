//go:build cgo

package instrument

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// FuzzSource checks that the instrumenter never panics, on C and C++, and
// that it only inserts text: the input is a subsequence of the output.
func FuzzSource(f *testing.F) {
	for _, s := range []string{
		"int f(){for(;;)break;}",
		"void g(){do x++; while(0);}",
		"void h(){\n#pragma omp parallel for collapse(3)\nfor(i=0;i<n;i++)for(j=0;j<n;j++);}",
		"void k(){switch(n){case 0: while(1){case 1: ;}}}",
		"#define F for(;;)\nvoid m(){ F { goto l; } l: ; }",
		"void n(){ for (auto &x : v) [](){ while(0); }(); }",
		"for(;;)",
		"}}}{{{for(((",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	if src, err := os.ReadFile("testdata/corpus/exits.c"); err == nil {
		f.Add(src, false)
	}
	f.Fuzz(func(t *testing.T, src []byte, cpp bool) {
		if len(src) > 1<<16 {
			return
		}
		for _, pre := range []bool{false, true} {
			res := Source(src, Options{Path: "fuzz.c", CPP: cpp, Chance: 0.5, Preprocessed: pre})
			if !subsequence(src, res.Out) {
				t.Fatalf("the output does not hold the input")
			}
		}
	})
}

func subsequence(a, b []byte) bool {
	for _, c := range a {
		i := bytes.IndexByte(b, c)
		if i < 0 {
			return false
		}
		b = b[i+1:]
	}
	return true
}

// TestDeepNesting: the checks are linear in the input, not in the input
// times its nesting depth.
func TestDeepNesting(t *testing.T) {
	const depth = 3000
	var b bytes.Buffer
	b.WriteString("void f(int n) {\n")
	for i := 0; i < depth; i++ {
		b.WriteString("for (;;) {\n#if X\n")
	}
	for i := 0; i < depth; i++ {
		b.WriteString("#endif\n}\n")
	}
	b.WriteString("}\n")
	start := time.Now()
	res := Source(b.Bytes(), Options{Path: "deep.c", Chance: 0.5})
	if res.Loops != depth {
		t.Errorf("instrumented %d loops of %d", res.Loops, depth)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("%d nested loops took %v", depth, d)
	}
}
