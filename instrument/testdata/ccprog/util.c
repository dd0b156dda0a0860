#include "util.h"

long weight(int i) {
	long w = 0;
	while (i > 0) w += i--;
	return w;
}

long triangle(int n) {
	long s = 0;
	int i = 0;
	do s += i; while (i++ < n);
	return s;
}
