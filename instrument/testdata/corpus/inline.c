/* Inline functions: a static inline one is instrumented; in one that is
 * not static C allows no static object (the loop site), so it is left
 * alone.
 * expect: loops=2 notes=1 */
#include <stdio.h>

static inline int sum_static(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i;
	return s;
}

inline int sum_extern(int n) {
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i;
	return s;
}
extern int sum_extern(int n);

int main(void) {
	int calls = 0;
	for (int k = 1; k <= 3; k++)
		calls += sum_static(k) + sum_extern(k);
	printf("inline %d %d %d\n", sum_static(5), sum_extern(6), calls);
	return 0;
}
