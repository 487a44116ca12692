/* cuda/tests/emu_compare.h — how the emulated kernel tests (*_emu.cc) compare a
 * kernel's output with the CPU backend's: bit for bit (same) or within a tolerance per
 * element (within), printing the first difference or the worst element. Include after
 * <cmocka.h>. */
#ifndef CAPGNN_CUDA_TESTS_EMU_COMPARE_H
#define CAPGNN_CUDA_TESTS_EMU_COMPARE_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <vector>

/* The spacing of floats at |x|. */
inline float ulp(float x) {
  const float a = fabsf(x);
  return nextafterf(a, INFINITY) - a;
}

/* Same bits; prints the first difference. */
inline void same(const char *what, const std::vector<float> &kernel, const std::vector<float> &cpu) {
  assert_int_equal(kernel.size(), cpu.size());
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < kernel.size(); i++)
    if (memcmp(&kernel[i], &cpu[i], sizeof(float)) != 0 && bad++ == 0) first = i;
  if (bad)
    printf("  %s: %zu of %zu differ, first at %zu: kernel %.9g, cpu %.9g\n", what, bad, kernel.size(), first,
           (double)kernel[first], (double)cpu[first]);
  else
    printf("  %s: %zu values, bit-identical\n", what, kernel.size());
  assert_int_equal(bad, 0);
}

/* |kernel - cpu| <= tol[i] everywhere; prints the worst element. */
inline void within(const char *what, const std::vector<float> &kernel, const std::vector<float> &cpu,
            const std::vector<double> &tol) {
  double worst = 0.0;
  size_t wi = 0, differ = 0;
  for (size_t i = 0; i < kernel.size(); i++) {
    const double err = fabs((double)kernel[i] - (double)cpu[i]);
    const double r = isnan(err) ? INFINITY : err / tol[i];
    differ += memcmp(&kernel[i], &cpu[i], sizeof(float)) != 0;
    if (r > worst) {
      worst = r;
      wi = i;
    }
  }
  printf("  %s: %zu values, %zu not bit-identical, worst %.3g of the tolerance (element %zu: kernel %.9g, "
         "cpu %.9g)\n",
         what, kernel.size(), differ, worst, wi, (double)kernel[wi], (double)cpu[wi]);
  assert_true(worst <= 1.0);
}

#endif
