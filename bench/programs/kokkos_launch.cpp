// kokkos_launch: the cost of a Kokkos kernel launch, for bench/kokkos.
//
// Usage: kokkos_launch MODE N
//   launch  N launches of a tiny labelled parallel_for (one iteration
//           adding 1 to a View element), Serial backend
//   floor   N iterations reading the clock twice and storing both times:
//           the least a tool that times kernels adds per launch
// Prints "MODE ns_per_launch". Whether a Kokkos tool is loaded (and
// which) is up to the environment (KOKKOS_PROFILE_LIBRARY).
#include <Kokkos_Core.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

static inline unsigned long long now() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static volatile unsigned long long stamps[2];

__attribute__((noinline)) static void launches(Kokkos::View<long *> v, long n) {
    for (long k = 0; k < n; k++)
        Kokkos::parallel_for("tiny", Kokkos::RangePolicy<>(0, 1), KOKKOS_LAMBDA(const int i) { v(i) += 1; });
}

__attribute__((noinline)) static void floor_loop(long n) {
    for (long k = 0; k < n; k++) {
        stamps[0] = now();
        stamps[1] = now();
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: kokkos_launch launch|floor N\n");
        return 2;
    }
    const char *mode = argv[1];
    long n = std::atol(argv[2]);
    int kargc = 1;
    Kokkos::initialize(kargc, argv);
    double ns;
    {
        Kokkos::View<long *> v("v", 1);
        launches(v, 1000); // warm up
        floor_loop(1000);
        unsigned long long t0 = now();
        if (!std::strcmp(mode, "floor"))
            floor_loop(n);
        else
            launches(v, n);
        ns = double(now() - t0) / double(n);
    }
    Kokkos::finalize();
    std::printf("%s %.3f\n", mode, ns);
    return 0;
}
