/* OpenMP: worksharing loops are wrapped whole (uncounted), before their
 * pragma; collapse(2) keeps the nest untouched; loops inside run normally.
 * expect: loops=10 notes=0 */
#include <stdio.h>

#define N 16

int main(void) {
	static double a[N][N];
	long sum = 0, inner = 0;
	int i, j;
#pragma omp parallel for reduction(+:sum) collapse(2)
	for (i = 0; i < N; i++)
		for (j = 0; j < N; j++) {
			a[i][j] = i + j;
			for (int k = 0; k < 3; k++) /* inside the nest: instrumented; k private */
				sum += k;
		}
#pragma omp parallel for \
	reduction(+:inner) private(j)
	for (i = 0; i < N; i++) {
		for (j = 0; j < N; j++)
			inner += (long)a[i][j];
	}
#ifdef _OPENMP
#pragma omp parallel for reduction(+:sum)
#endif
	for (i = 0; i < N; i++)
		sum += i;
	double dot = 0;
	#pragma omp simd reduction(+:dot)
	for (i = 0; i < N; i++)
		dot += a[i][i];
#pragma GCC unroll 4
	for (i = 0; i < N; i++)
		sum += 2;
	long par = 0;
#pragma omp parallel reduction(+:par)
	{
#pragma omp for
		for (i = 0; i < N; i++)
			par += i;
	}
	long single = 0;
#pragma omp parallel num_threads(1)
	for (int q = 0; q < 5; q++)
		single += q;
	int counted = 0;
	for (i = 0; i < 3; i++)
		counted++;
	printf("sum %ld inner %ld dot %.1f par %ld single %ld counted %d\n", sum, inner, dot, par, single, counted);
	return 0;
}
