/* Test program for package callsite: prints the return address of calls
   made on known lines (marked "site: NAME"), then its own /proc/self/maps. */
#include <stdio.h>

volatile int sink;

__attribute__((noinline)) void rec(const char *site)
{
	printf("site %s %p\n", site, __builtin_return_address(0));
	sink++;
}

static inline __attribute__((always_inline)) void halo(void)
{
	rec("inlined"); /* site: inlined */
	sink++;
}

__attribute__((noinline)) void exchange(void)
{
	halo(); /* site: caller */
	sink++;
}

int main(void)
{
	rec("main"); /* site: main */
	exchange();
	FILE *f = fopen("/proc/self/maps", "r");
	char buf[4096];
	size_t n;
	while (f && (n = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, n, stdout);
	return 0;
}
