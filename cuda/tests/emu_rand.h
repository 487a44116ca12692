/* cuda/tests/emu_rand.h — random inputs for the emulated kernel tests (*_emu.cc):
 * splitmix64 from a seed of the test's own, so each test's inputs are the same on
 * every run and machine. */
#ifndef CAPGNN_CUDA_TESTS_EMU_RAND_H
#define CAPGNN_CUDA_TESTS_EMU_RAND_H

#include <cstdint>
#include <vector>

struct emu_rng {
  uint64_t state;
  /* uniform in [lo, hi), 53 bits */
  double unif(double lo, double hi) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * (double)(z >> 11) * (1.0 / 9007199254740992.0);
  }
  std::vector<float> vec(int64_t n, double lo, double hi) {
    std::vector<float> v((size_t)n);
    for (auto &x : v) x = (float)unif(lo, hi);
    return v;
  }
};

#endif
