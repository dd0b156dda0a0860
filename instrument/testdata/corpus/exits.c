/* Early exits, brace-less bodies, do-while, comments and strings.
 * Every loop counts its iterations; main prints the counts.
 * expect: loops=17 notes=0 */
#define _GNU_SOURCE /* must still take effect after the instrumenter's #include */
#include <stdio.h>
#include <string.h>

static int n_brk, n_cont, n_ret, n_retf, n_goto, n_nest_in, n_nest_out, n_do, n_dob, n_empty, n_while, n_if;

static int twice(int x) { return 2 * x; }

static int ret_early(int lim) {
	for (int i = 0; i < 100; i++) {
		n_ret++;
		if (i == lim)
			return i;
	}
	return -1;
}

static int ret_call(int lim) {
	int i = 0;
	while (1) {
		n_retf++;
		if (i++ == lim) return twice(i); /* return f(...) from inside */
	}
}

static int goto_out(void) {
	int found = -1;
	for (int i = 0; i < 10; i++)
		for (int j = 0; j < 10; j++) {
			n_goto++;
			if (i * j == 12) {
				found = i * 10 + j;
				goto out;
			}
		}
out:
	return found;
}

int main(void) {
	int i = 0, s = 0;
	const char *text = "for (i = 0; i < n; i++) { while (1) ; }"; // for (;;) in a comment
	for (i = 0; i < 10; i++) {
		n_brk++;
		if (i == 4) break;
	}
	for (i = 0; i < 10; i++) {
		if (i % 3) continue;
		n_cont++;
	}
	printf("ret %d %d\n", ret_early(7), ret_call(5));
	printf("goto %d\n", goto_out());
	for (i = 0; i < 4; i++)
		for (int j = 0; j < i; j++)
			n_nest_in++, n_nest_out += (j == 0);
	i = 0;
	do n_do++; while (++i < 5);
	i = 0;
	do {
		n_dob++;
		if (i == 2) { i++; continue; }
		if (i == 6) break;
		i++;
	} while (i < 10);
	for (i = 0; i < 7; i++);
	n_empty = i;
	while (i-- > 0) s += i;
	n_while = s;
	if (s > 0)
		for (i = 0; i < 3; i++) n_if++;
	else
		for (i = 0; i < 5; i++) n_if--;
	/* a switch inside a loop: its break leaves the switch only */
	for (i = 0; i < 6; i++) {
		switch (i % 3) {
		case 0: s++; break;
		case 1: for (int k = 0; k < 2; k++) s += k; break;
		default: continue;
		}
		s += 100;
	}
	const char *p = strchrnul(text, '{'); /* needs _GNU_SOURCE */
	again:
	while (s > 1000) { s -= 1000; if (s > 5000) goto again; }
	printf("counts brk=%d cont=%d ret=%d retf=%d goto=%d nest=%d/%d do=%d dob=%d empty=%d while=%d if=%d s=%d p=%d\n",
	       n_brk, n_cont, n_ret, n_retf, n_goto, n_nest_in, n_nest_out, n_do, n_dob, n_empty, n_while, n_if, s, (int)(p - text));
	return 0;
}
