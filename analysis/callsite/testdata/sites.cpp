// Test program for package callsite (C++): a namespaced function and a
// method call the C function rec (rec.c) on known lines.
#include <cstdio>

extern "C" void rec(const char *site);
extern "C" void print_maps(void);

namespace halo {
struct Grid {
	__attribute__((noinline)) void exchange(int n);
};

__attribute__((noinline)) void Grid::exchange(int n)
{
	rec("method"); // site: method
	if (n > 0)
		std::printf("%d\n", n);
}

__attribute__((noinline)) void update(double *x)
{
	rec("function"); // site: function
	*x += 1;
}
} // namespace halo

int main()
{
	double x = 0;
	halo::Grid g;
	g.exchange(0);
	halo::update(&x);
	print_maps();
	return x == 1 ? 0 : 1;
}
