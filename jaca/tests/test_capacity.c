/* jaca/tests/test_capacity.c — Algorithm 1's capacity (jaca_capacity_rows, jaca/jaca.h)
 * on hand-computed values:
 *  - a 3-layer model of hidden width 256 caches layers 1 and 2; a node-tier row of 256
 *    values is 4 header words + 256 values = 1,040 bytes, rounded up to a multiple of 64:
 *    1,088 bytes (jaca_row_stride), so a vertex takes 2 x 1,088 = 2,176 bytes. With 8 GiB
 *    free and 1 GiB reserved: floor((8,589,934,592 - 1,073,741,824) / 2,176) = 3,454,132
 *    rows (2,176 x 3,454,132 = 7,516,191,232 <= 7,516,192,768 < + 2,176);
 *  - the candidates bound it: 1,000,000 halo vertices -> 1,000,000;
 *  - the rank tier's rows are plain floats: 2 layers x 64 x 4 = 512 bytes a vertex; 1 MiB
 *    free, nothing reserved -> 2,048 rows;
 *  - nothing left after the reserve (less, or exactly as much) -> 0; no candidates -> 0;
 *    a row of no bytes -> every candidate. */
#include <stdio.h>

#include "jaca/jaca.h"
#include "jaca/seqlock_internal.h"

static int fails = 0;
#define CHECK(c, ...)                                      \
  do {                                                     \
    if (!(c)) {                                            \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
      fails++;                                             \
    }                                                      \
  } while (0)

static void expect(int64_t avail, int64_t reserve, int64_t vb, int64_t cand, int64_t want) {
  const int64_t got = jaca_capacity_rows(avail, reserve, vb, cand);
  CHECK(got == want, "jaca_capacity_rows(%lld, %lld, %lld, %lld) = %lld, expected %lld", (long long)avail,
        (long long)reserve, (long long)vb, (long long)cand, (long long)got, (long long)want);
}

int main(void) {
  const int64_t GiB = 1073741824, MiB = 1048576;
  CHECK(jaca_row_stride(256) == 1088, "a row of 256 values takes %zu bytes, expected 1088", jaca_row_stride(256));
  const int64_t vb = 2 * (int64_t)jaca_row_stride(256);
  expect(8 * GiB, 1 * GiB, vb, 10000000, 3454132);
  expect(8 * GiB, 1 * GiB, vb, 1000000, 1000000);
  expect(3454132LL * 2176 - 1, 0, 2176, 10000000, 3454131); /* one byte short of the 3,454,132nd row... */
  expect(3454132LL * 2176, 0, 2176, 10000000, 3454132);     /* ...and exactly enough for it */
  expect(1 * MiB, 0, 2 * 64 * 4, 1000000, 2048);
  expect(1 * MiB, 0, 2 * 64 * 4, 100, 100);
  expect(1 * GiB, 2 * GiB, vb, 1000, 0);
  expect(1 * GiB, 1 * GiB, vb, 1000, 0);
  expect(1 * GiB, 0, vb, 0, 0);
  expect(1 * GiB, 0, 0, 77, 77);
  /* the defaults: Algorithm 1 on both tiers, 1 GiB reserved */
  struct jaca_options o;
  jaca_options_defaults(&o);
  CHECK(o.host_mb == JACA_MB_AUTO && o.device_mb == JACA_MB_AUTO && o.reserve_mb == 1024,
        "defaults: host_mb %lld, device_mb %lld, reserve_mb %lld", (long long)o.host_mb, (long long)o.device_mb,
        (long long)o.reserve_mb);
  CHECK(jaca_options_check(&o) == 0, "the defaults do not pass the checks");
  o.host_mb = -2;
  CHECK(jaca_options_check(&o) < 0, "host_mb -2 accepted");
  o.host_mb = 0;
  o.reserve_mb = -1;
  CHECK(jaca_options_check(&o) < 0, "reserve_mb -1 accepted");
  o.reserve_mb = 0;
  o.read_timeout_s = -1.0;
  CHECK(jaca_options_check(&o) < 0, "a readers' timeout of -1 s accepted");
  o.read_timeout_s = 0.5;
  CHECK(jaca_options_check(&o) == 0, "a readers' timeout of 0.5 s refused");
  if (fails) {
    fprintf(stderr, "%d checks failed\n", fails);
    return 1;
  }
  printf("ok: Algorithm 1's capacity on hand-computed values\n");
  return 0;
}
