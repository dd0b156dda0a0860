//go:build cgo

package instrument

import (
	"bytes"
	"fmt"
	"testing"
)

// generated returns a C source of about `lines` lines: functions with
// loops (nested, brace-less, do-while, early exits, OpenMP), comments and
// directives, as a real code base mixes them.
func generated(lines int) []byte {
	var b bytes.Buffer
	b.WriteString("#include <stdio.h>\n#define N 64\n\n")
	for f := 0; bytes.Count(b.Bytes(), []byte("\n")) < lines; f++ {
		fmt.Fprintf(&b, `/* function %d: for (i = 0; i < n; i++) in a comment */
static double kernel%d(double *a, const double *b, int n) {
	double s = 0;
	int i, j;
	for (i = 0; i < n; i++) {
		if (a[i] < 0)
			continue;
		for (j = 0; j < N; j++)
			s += a[i] * b[j];
	}
#pragma omp parallel for reduction(+:s)
	for (i = 0; i < n; i++)
		s += b[i];
	i = 0;
	do {
		s *= 0.5;
	} while (++i < 3);
	while (s > 1e9) {
		if (s > 1e12) break;
		s /= 2;
	}
#ifdef DEBUG
	printf("kernel%d %%g\n", s);
#endif
	return s;
}

`, f, f, f)
	}
	return b.Bytes()
}

// BenchmarkSource100k instruments a generated 100,000-line C file.
func BenchmarkSource100k(b *testing.B) {
	src := generated(100000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	loops := 0
	for b.Loop() {
		loops = Source(src, Options{Path: "gen.c", Chance: DefaultChance}).Loops
	}
	b.ReportMetric(float64(bytes.Count(src, []byte("\n")))*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(loops), "loops")
}
