/* core/philox.h — counter-based RNG (Philox4x32-10, Salmon et al., SC'11).
 *
 * Header-only so that the CPU backend and the CUDA kernels compute bit-identical
 * streams. A dropout decision depends only on (seed, epoch, layer, global vertex
 * id, column) — never on the rank, the partition or the local row — which is what
 * makes P ranks equal 1 rank (ARCHITECTURE.md, exactness contract).
 *
 * Counter layout for dropout: c0 = column / 4 (the lane is column % 4),
 * c1 = global vertex id, c2 = layer, c3 = epoch; key = seed (64 bits). */
#ifndef CAPGNN_CORE_PHILOX_H
#define CAPGNN_CORE_PHILOX_H

#include <stdint.h>

#include "core/hostdev.h"

struct cg_philox_out { uint32_t v[4]; };

CG_HD uint32_t cg_philox_mulhilo_(uint32_t a, uint32_t b, uint32_t *hi) {
  uint64_t p = (uint64_t)a * (uint64_t)b;
  *hi = (uint32_t)(p >> 32);
  return (uint32_t)p;
}

/* Philox4x32 with 10 rounds. Known answer (Random123): counter {0,0,0,0}, key {0,0}
 * -> {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}. */
CG_HD struct cg_philox_out cg_philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                            uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; r++) {
    uint32_t hi0, hi1;
    uint32_t lo0 = cg_philox_mulhilo_(0xD2511F53u, c0, &hi0);
    uint32_t lo1 = cg_philox_mulhilo_(0xCD9E8D57u, c2, &hi1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  struct cg_philox_out o;
  o.v[0] = c0; o.v[1] = c1; o.v[2] = c2; o.v[3] = c3;
  return o;
}

/* 32 random bits -> float uniform in [0, 1) with 24 bits of precision. */
CG_HD float cg_u32_to_unit(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }

/* Uniform in [0,1) for one dropout site. */
CG_HD float cg_dropout_uniform(uint64_t seed, uint32_t epoch, uint32_t layer, uint32_t gid,
                               uint32_t col) {
  struct cg_philox_out o = cg_philox4x32_10(col >> 2, gid, layer, epoch, (uint32_t)seed,
                                            (uint32_t)(seed >> 32));
  return cg_u32_to_unit(o.v[col & 3u]);
}

/* The dropout rule shared by every backend: an element is kept when u >= p, and
 * kept elements are scaled by 1/(1-p). p == 0 keeps everything (no RNG drawn). */
CG_HD int cg_dropout_keep(float u, float p) { return u >= p; }

#endif
