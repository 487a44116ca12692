/* mpi/tests/test_quant.c — the coded halo rows of --halo-bits (mpi/quant_internal.h).
 *
 * For 4, 8 and 16 bits and widths 1..67 (odd widths: 4-bit rows end in half a byte):
 * every decoded value within one step (max - min) / (2^bits - 1) of its value, the
 * row's minimum kept exactly where its code is 0, the row size 8 + ceil(cols * bits / 8)
 * bytes and nothing written past it; the rounding unbiased (the mean over 4096
 * streams within 6 standard errors of the value), identical for the same stream and
 * different for another; a constant row decodes exactly, a row with a NaN or an
 * infinity decodes to NaN everywhere. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mpi/quant_internal.h"

static const int bits_all[] = {4, 8, 16};

static float value(uint64_t i) { /* deterministic values of mixed sign and scale */
  return (float)(sin(0.7 * (double)i + 0.3) * (1.0 + (double)(i % 7)) * 1e-3);
}

static void test_row_bytes(void **state) {
  (void)state;
  assert_int_equal(comm_quant_row_bytes(1, 4), 9);
  assert_int_equal(comm_quant_row_bytes(7, 4), 12);
  assert_int_equal(comm_quant_row_bytes(64, 4), 40);
  assert_int_equal(comm_quant_row_bytes(64, 8), 72);
  assert_int_equal(comm_quant_row_bytes(64, 16), 136);
  assert_true(comm_quant_bits_ok(4) && comm_quant_bits_ok(8) && comm_quant_bits_ok(16));
  assert_false(comm_quant_bits_ok(32) || comm_quant_bits_ok(2) || comm_quant_bits_ok(0));
}

static void test_error_bound(void **state) {
  (void)state;
  enum { ROWS = 9, MAXC = 67 };
  float x[ROWS * MAXC], y[ROWS * MAXC];
  unsigned char buf[ROWS * (8 + 2 * MAXC) + 16];
  for (size_t b = 0; b < sizeof bits_all / sizeof bits_all[0]; b++)
    for (int64_t cols = 1; cols <= MAXC; cols += 3) {
      const int bits = bits_all[b];
      const size_t rb = comm_quant_row_bytes(cols, bits);
      for (int64_t i = 0; i < ROWS * cols; i++) x[i] = value((uint64_t)(i + 31 * cols + bits));
      memset(buf, 0xA5, sizeof buf);
      comm_quant_rows(x, ROWS, cols, bits, 7, 100, buf);
      for (size_t k = ROWS * rb; k < sizeof buf; k++) assert_int_equal(buf[k], 0xA5); /* nothing past the rows */
      comm_dequant_rows(buf, ROWS, cols, bits, y);
      for (int64_t r = 0; r < ROWS; r++) {
        float lo = INFINITY, hi = -INFINITY;
        for (int64_t j = 0; j < cols; j++) {
          lo = fminf(lo, x[r * cols + j]);
          hi = fmaxf(hi, x[r * cols + j]);
        }
        const double step = ((double)hi - lo) / (double)((1u << bits) - 1u);
        for (int64_t j = 0; j < cols; j++) {
          const double err = fabs((double)y[r * cols + j] - x[r * cols + j]);
          if (!(err <= step * (1.0 + 1e-5) + 1e-9 * fabs(x[r * cols + j])))
            fail_msg("bits %d cols %lld row %lld col %lld: %.9g decoded as %.9g (step %.3g)", bits, (long long)cols,
                     (long long)r, (long long)j, (double)x[r * cols + j], (double)y[r * cols + j], step);
          assert_true(y[r * cols + j] >= lo - (float)step * 1e-5f); /* never below the row's minimum */
        }
      }
    }
}

static void test_unbiased_and_deterministic(void **state) {
  (void)state;
  enum { COLS = 13, STREAMS = 4096 };
  float x[COLS], y[COLS];
  unsigned char a[8 + 2 * COLS], b2[8 + 2 * COLS];
  for (int j = 0; j < COLS; j++) x[j] = value((uint64_t)j * 5u + 1u);
  for (size_t b = 0; b < sizeof bits_all / sizeof bits_all[0]; b++) {
    const int bits = bits_all[b];
    double sum[COLS] = {0};
    float lo = INFINITY, hi = -INFINITY;
    for (int j = 0; j < COLS; j++) {
      lo = fminf(lo, x[j]);
      hi = fmaxf(hi, x[j]);
    }
    const double step = ((double)hi - lo) / (double)((1u << bits) - 1u);
    int differs = 0;
    for (uint64_t s = 0; s < STREAMS; s++) {
      comm_quant_rows(x, 1, COLS, bits, s, 3, a);
      comm_quant_rows(x, 1, COLS, bits, s, 3, b2);
      assert_memory_equal(a, b2, comm_quant_row_bytes(COLS, bits)); /* the same stream: the same codes */
      if (s > 0) {
        comm_quant_rows(x, 1, COLS, bits, s - 1, 3, b2);
        differs |= memcmp(a, b2, comm_quant_row_bytes(COLS, bits)) != 0;
      }
      comm_dequant_rows(a, 1, COLS, bits, y);
      for (int j = 0; j < COLS; j++) sum[j] += y[j];
    }
    assert_true(differs); /* another stream rounds otherwise */
    /* each decoded value is x rounded down or up by at most one step: its standard
     * deviation is at most step / 2 */
    const double se = step / 2.0 / sqrt((double)STREAMS);
    for (int j = 0; j < COLS; j++) {
      const double bias = sum[j] / STREAMS - x[j];
      if (!(fabs(bias) <= 6.0 * se + 1e-7 * fabs(x[j])))
        fail_msg("bits %d col %d: mean decoded value off by %.3g (step %.3g, bound %.3g)", bits, j, bias, step, 6 * se);
    }
  }
}

static void test_constant_and_nonfinite(void **state) {
  (void)state;
  enum { COLS = 5 };
  const float c[COLS] = {-2.5f, -2.5f, -2.5f, -2.5f, -2.5f};
  float bad[2][COLS] = {{1, 2, NAN, 4, 5}, {1, INFINITY, 3, 4, 5}};
  float y[COLS];
  unsigned char buf[8 + 2 * COLS];
  for (size_t b = 0; b < sizeof bits_all / sizeof bits_all[0]; b++) {
    comm_quant_rows(c, 1, COLS, bits_all[b], 1, 0, buf);
    comm_dequant_rows(buf, 1, COLS, bits_all[b], y);
    for (int j = 0; j < COLS; j++) assert_true(y[j] == -2.5f);
    for (int k = 0; k < 2; k++) {
      comm_quant_rows(bad[k], 1, COLS, bits_all[b], 1, 0, buf);
      comm_dequant_rows(buf, 1, COLS, bits_all[b], y);
      for (int j = 0; j < COLS; j++) assert_true(isnan(y[j]));
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_row_bytes),
      cmocka_unit_test(test_error_bound),
      cmocka_unit_test(test_unbiased_and_deterministic),
      cmocka_unit_test(test_constant_and_nonfinite),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
