/* A two-file program for the mpitrace cc tests (not part of the corpus). */
#include <stdio.h>
#include "util.h"

int main(void) {
	long s = 0;
	int n = 0;
	for (int i = 0; i < 10; i++) {
		s += weight(i);
		n++;
	}
	printf("sum %ld loops %d tri %ld\n", s, n, triangle(20));
	return 0;
}
