// C++: templates, lambdas, range-for, exceptions, constexpr.
// expect: loops=11 notes=1
#include <cstdio>
#include <dlfcn.h>
#include <stdexcept>
#include <vector>

template <typename T> T total(const std::vector<T> &v) {
	T s{};
	for (const auto &x : v)
		s += x;
	return s;
}

constexpr int triangle(int n) {
	int s = 0;
	for (int i = 1; i <= n; i++) s += i;
	return s;
}

struct Grid {
	std::vector<int> cells;
	int count_if_over(int lim) const {
		int c = 0;
		for (auto x : cells) {
			if (x <= lim) continue;
			c++;
		}
		return c;
	}
};

static int thrower(int stop) {
	int n = 0;
	for (int i = 0;; i++) {
		n++;
		if (i == stop) throw std::runtime_error("stop");
	}
	return n;
}

// goto out of a nest, in C++: both guards end.
static int first_pair(int target) {
	int found = -1;
	for (int i = 0; i < 5; i++) {
		for (int j = 0; j < 5; j++)
			if (i + j == target) {
				found = i * 10 + j;
				goto done;
			}
	}
done:
	return found;
}

int main() {
	static_assert(triangle(4) == 10, "constexpr loop");
	std::vector<int> v{1, 2, 3, 4};
	auto square_sum = [&v]() {
		int s = 0;
		for (int x : v) s += x * x;
		return s;
	};
	int caught = 0;
	for (int k = 0; k < 3; k++) {
		try {
			thrower(k);
		} catch (const std::exception &) {
			caught++;
		}
	}
	Grid g{{5, 1, 7, 9}};
	int nested = 0;
	for (int i : {1, 2, 3})
		for (int j = 0; j < i; j++)
			nested++;
	auto find = [](const std::vector<int> &w, int x) {
		for (std::size_t i = 0; i < w.size(); i++)
			if (w[i] == x) return (int)i;
		return -1;
	};
	int w = 0;
	while (w < 5) ++w;
	void *self = dlsym(RTLD_DEFAULT, "main");
	std::printf("pair %d\n", first_pair(6));
	std::printf("total %d %.1f sq %d caught %d over %d nested %d find %d w %d tri %d dl %d\n", total(v),
	            total(std::vector<double>{0.5, 1.5}), square_sum(), caught, g.count_if_over(4), nested, find(v, 3), w,
	            triangle(5), self != nullptr || self == nullptr);
	return 0;
}
