/* jaca/tests/seqlock_check.h — encoded payloads for the seqlock stress tests (threads
 * and ranks): every word of a row is a function of (row, generation, column), so a copy
 * that mixes two writes is recognised word by word. */
#ifndef CAPGNN_JACA_TESTS_SEQLOCK_CHECK_H
#define CAPGNN_JACA_TESTS_SEQLOCK_CHECK_H

#include <stdint.h>

#include "jaca/seqlock_internal.h"

/* An integer below 2^24: exact as a float. */
static inline float sq_value(int64_t row, uint32_t gen, int64_t j) {
  return (float)((((uint64_t)gen * 2654435761u) ^ ((uint64_t)row * 40503u) ^ ((uint64_t)j * 977u)) & 0xffffffu);
}
static inline uint32_t sq_gid(int64_t row) { return (uint32_t)(row * 1000 + 7); }
static inline uint32_t sq_epoch(int64_t row, uint32_t gen) { return gen * 3u + (uint32_t)row; }

/* Fill dst with row `row`'s payload of generation gen. */
static inline void sq_fill(float *dst, int64_t row, uint32_t gen, int64_t cols, struct jaca_row_meta *m) {
  for (int64_t j = 0; j < cols; j++) dst[j] = sq_value(row, gen, j);
  m->gen = gen;
  m->epoch = sq_epoch(row, gen);
  m->gid = sq_gid(row);
}

/* Whether (m, v) is exactly one write of row `row`: 1 when consistent. */
static inline int sq_consistent(const float *v, int64_t row, int64_t cols, const struct jaca_row_meta *m) {
  if (m->gen == 0) { /* never written: all zero */
    if (m->epoch != 0 || m->gid != 0) return 0;
    for (int64_t j = 0; j < cols; j++)
      if (v[j] != 0.0f) return 0;
    return 1;
  }
  if (m->gid != sq_gid(row) || m->epoch != sq_epoch(row, m->gen)) return 0;
  for (int64_t j = 0; j < cols; j++)
    if (v[j] != sq_value(row, m->gen, j)) return 0;
  return 1;
}

#endif
