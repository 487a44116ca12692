/* core/tests/test_philox.c — Philox4x32-10 against the Random123 known answers,
 * determinism of the dropout stream, and a crude uniformity check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "core/philox.h"

static void test_known_answers(void **state) {
  (void)state;
  /* Random123 kat_vectors: counter[4] key[2] -> output[4] */
  static const uint32_t kat[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
       0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
       0x94fdcceb, 0x5001e420, 0x24126ea1},
  };
  for (int i = 0; i < 3; i++) {
    const uint32_t *k = kat[i];
    struct cg_philox_out o = cg_philox4x32_10(k[0], k[1], k[2], k[3], k[4], k[5]);
    for (int j = 0; j < 4; j++) {
      if (o.v[j] != k[6 + j])
        printf("  vector %d word %d: got %08x, want %08x\n", i, j, o.v[j], k[6 + j]);
      assert_int_equal(o.v[j], k[6 + j]);
    }
  }
}

static void test_unit_mapping(void **state) {
  (void)state;
  assert_true(cg_u32_to_unit(0) == 0.0f);
  assert_true(cg_u32_to_unit(0xffffffffu) < 1.0f);
  assert_true(cg_u32_to_unit(0xffffffffu) == 1.0f - 1.0f / 16777216.0f);
  assert_true(cg_u32_to_unit(0x80000000u) == 0.5f);
  assert_true(cg_dropout_keep(0.5f, 0.5f));  /* kept when u >= p */
  assert_false(cg_dropout_keep(0.49f, 0.5f));
  assert_true(cg_dropout_keep(0.0f, 0.0f));
}

static void test_determinism(void **state) {
  (void)state;
  const uint64_t seed = 0xfeedface12345678ull;
  /* same site, same number; the lane is column % 4 of one Philox block */
  for (uint32_t col = 0; col < 64; col++) {
    float a = cg_dropout_uniform(seed, 5, 2, 777, col);
    float b = cg_dropout_uniform(seed, 5, 2, 777, col);
    assert_true(a == b);
    struct cg_philox_out o =
        cg_philox4x32_10(col >> 2, 777, 2, 5, (uint32_t)seed, (uint32_t)(seed >> 32));
    assert_true(a == cg_u32_to_unit(o.v[col & 3]));
  }
  /* every key component changes the number */
  const float base = cg_dropout_uniform(seed, 5, 2, 777, 9);
  assert_true(base != cg_dropout_uniform(seed + 1, 5, 2, 777, 9));
  assert_true(base != cg_dropout_uniform(seed ^ (1ull << 63), 5, 2, 777, 9));
  assert_true(base != cg_dropout_uniform(seed, 6, 2, 777, 9));
  assert_true(base != cg_dropout_uniform(seed, 5, 3, 777, 9));
  assert_true(base != cg_dropout_uniform(seed, 5, 2, 778, 9));
  assert_true(base != cg_dropout_uniform(seed, 5, 2, 777, 10));
  assert_true(base != cg_dropout_uniform(seed, 5, 2, 777, 13));
}

static void test_uniformity(void **state) {
  (void)state;
  /* 2^18 draws over (gid, col), 64 bins: chi-square with 63 degrees of freedom has
   * mean 63 and sd ~11; 130 is beyond the 99.999th percentile. Mean 0.5 +- 0.003
   * (5 sd). Inputs are fixed, so the outcome is too. */
  enum { NB = 64 };
  int64_t bins[NB] = {0};
  const int64_t n = 1 << 18;
  double sum = 0;
  int64_t i = 0;
  for (uint32_t g = 0; g < 4096; g++)
    for (uint32_t c = 0; c < 64; c++, i++) {
      const float u = cg_dropout_uniform(42, 1, 0, g, c);
      assert_true(u >= 0.0f && u < 1.0f);
      bins[(int)(u * NB)]++;
      sum += u;
    }
  assert_int_equal(i, n);
  double chi2 = 0;
  const double expect = (double)n / NB;
  for (int b = 0; b < NB; b++) chi2 += (bins[b] - expect) * (bins[b] - expect) / expect;
  printf("  uniformity: mean %.5f, chi2 %.1f (63 dof)\n", sum / n, chi2);
  assert_true(chi2 < 130.0);
  assert_true(sum / n > 0.497 && sum / n < 0.503);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_answers),
      cmocka_unit_test(test_unit_mapping),
      cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_uniformity),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
