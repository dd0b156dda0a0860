/* Loops that code jumps into are left alone; the rest are instrumented.
 * expect: loops=3 notes=3 */
#include <stdio.h>

/* Duff's device: the case labels inside the do-while belong to the
 * switch around it. */
static void copy(int *to, const int *from, int count) {
	int n = (count + 7) / 8;
	switch (count % 8) {
	case 0: do { *to++ = *from++;
	case 7:      *to++ = *from++;
	case 6:      *to++ = *from++;
	case 5:      *to++ = *from++;
	case 4:      *to++ = *from++;
	case 3:      *to++ = *from++;
	case 2:      *to++ = *from++;
	case 1:      *to++ = *from++;
		} while (--n > 0);
	}
}

/* A goto from outside into the loop's body. */
static int enter(int start) {
	int i = 0, s = 0;
	if (start)
		goto inside;
	for (i = 0; i < 5; i++) {
		s += 10;
	inside:
		s += 1;
	}
	return s;
}

/* A goto inside the loop to a label inside it: fine. */
static int retry(void) {
	int s = 0;
	for (int i = 0; i < 4; i++) {
		int tries = 0;
	again:
		s++;
		if (++tries < 2) goto again;
	}
	return s;
}

/* The address of a label inside the loop is taken (GNU C). */
static int computed(void) {
	static void *where = &&inner;
	int s = 0, i;
	for (i = 0; i < 3; i++) {
	inner:
		s++;
	}
	(void)where;
	return s;
}

int main(void) {
	int a[20], b[20], i;
	for (i = 0; i < 20; i++) a[i] = i * i;
	copy(b, a, 19);
	int s = 0;
	for (i = 0; i < 19; i++) s += b[i];
	printf("duff %d enter %d %d retry %d computed %d\n", s, enter(0), enter(1), retry(), computed());
	return 0;
}
