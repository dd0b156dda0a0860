/* Macros, conditionals and comments around loops.
 * expect: loops=4 notes=4 */
#include <stdio.h>

#define N 5
#define FOREACH(i, n) for (i = 0; i < (n); i++)
#define SUM_TO(n, s) do { int k_; for (k_ = 0; k_ < (n); k_++) (s) += k_; } while (0)
#define LOG(...)
#define GET(s, field) ((s)field)
#define BEGIN {
#define END }

static const char *keywords[] = {"for", "while", "do", "for ("}; /* strings, not loops */

int main(void) {
	int i, s = 0, t = 0;
	printf("%s %s %s\n", keywords[0], keywords[1], keywords[3]);
	FOREACH(i, N) s += i; /* a loop written as a macro: only --preprocess sees it */
	SUM_TO(N, t);
#ifdef NOT_DEFINED
	for (i = 0; i < 100; i++) s += 1000;
#else
	for (i = 0; i < N; i++) t += 2;
#endif
	/* a loop whose head differs by configuration: left alone */
#ifdef NOT_DEFINED
	for (i = 0; i < 100; i++) {
#else
	for (i = 0; i < N; i++) {
#endif
		s += 1;
	}
	while (/* for ( */ s < 40) s++; // while (1)
	for (i = 0; i < N; i++) /* a body the parser cannot read: left alone */
	BEGIN
		t++;
	END
	for (i = 0; i < 2; i++) {
#if N > 3
		t += 10;
#endif
	}
	/* macros the parser cannot read inside the body's statements do not
	 * move the markers: instrumented */
	struct { int x; } pt = {7};
	for (i = 0; i < 3; i++) {
		LOG("no semicolon after this %d", i)
		t += GET(pt, .x);
	}
	printf("s %d t %d\n", s, t);
	return 0;
}
