/* core/tests/test_util.h — helpers shared by the core unit tests: a seeded RNG
 * (splitmix64, so inputs are the same on every run) and tolerance checks that
 * print the worst error before failing. */
#ifndef CAPGNN_CORE_TESTS_UTIL_H
#define CAPGNN_CORE_TESTS_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

struct tu_rng { uint64_t s; };

static inline uint64_t tu_next(struct tu_rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* Uniform in [lo, hi). */
static inline double tu_unif(struct tu_rng *r, double lo, double hi) {
  return lo + (hi - lo) * (double)(tu_next(r) >> 11) * (1.0 / 9007199254740992.0);
}
static inline int64_t tu_int(struct tu_rng *r, int64_t n) { return (int64_t)(tu_next(r) % (uint64_t)n); }

/* |got - ref| <= atol + rtol |ref| for all i; prints the worst offender.
 * Returns 1 when all are within tolerance. NaN in got fails. */
static inline int tu_close(const char *what, const float *got, const double *ref, int64_t n,
                           double atol, double rtol) {
  double worst = -1.0, worst_ratio = 0.0;
  int64_t wi = -1, nbad = 0;
  for (int64_t i = 0; i < n; i++) {
    const double err = fabs((double)got[i] - ref[i]);
    const double tol = atol + rtol * fabs(ref[i]);
    const double ratio = isnan(err) ? INFINITY : err / tol;
    if (ratio > worst_ratio || wi < 0) {
      worst_ratio = ratio;
      worst = err;
      wi = i;
    }
    if (!(err <= tol)) nbad++;
  }
  if (n > 0)
    printf("  %s: worst |err| %.3g at %lld (got %.9g, ref %.9g), %.3g of tolerance, %lld bad\n",
           what, worst, (long long)wi, (double)got[wi], ref[wi], worst_ratio, (long long)nbad);
  return nbad == 0;
}

#endif
