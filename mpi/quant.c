/* mpi/quant.c — quantised halo rows (quant_internal.h).
 *
 * Design notes (the why):
 * - Per-row range (lo, step), not one range per message: halo rows of a hidden layer
 *   differ in scale by orders of magnitude (a vertex of degree 1 against one of degree
 *   500 after normalised aggregation), and gradients even more; a shared range would
 *   round the small rows to nothing.
 * - Stochastic rounding keeps each decoded value unbiased, so the error of an
 *   aggregation over many halo neighbours averages out instead of adding up the same
 *   way every epoch (nearest rounding would give every epoch the same bias).
 * - The rounding offsets come from a counter-based hash (splitmix64 of stream, row and
 *   column), so results are reproducible run to run and independent of threads. */
#include <math.h>
#include <string.h>

#include "mpi/quant_internal.h"

int comm_quant_bits_ok(int bits) { return bits == 4 || bits == 8 || bits == 16; }

size_t comm_quant_row_bytes(int64_t cols, int bits) {
  return 2 * sizeof(float) + (size_t)((cols * bits + 7) / 8);
}

static uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* u in [0, 1) for (row key, column): 24 random bits */
static float offset(uint64_t rowkey, int64_t j) {
  return (float)(mix64(rowkey + (uint64_t)j * 0xd1b54a32d192ed03ull) >> 40) * (1.0f / 16777216.0f);
}

static void put_code(unsigned char *codes, int bits, int64_t j, uint32_t q) {
  if (bits == 8) {
    codes[j] = (unsigned char)q;
  } else if (bits == 16) {
    codes[2 * j] = (unsigned char)(q & 0xffu);
    codes[2 * j + 1] = (unsigned char)(q >> 8);
  } else if (j & 1) {
    codes[j >> 1] = (unsigned char)(codes[j >> 1] | (q << 4));
  } else {
    codes[j >> 1] = (unsigned char)q;
  }
}

static uint32_t get_code(const unsigned char *codes, int bits, int64_t j) {
  if (bits == 8) return codes[j];
  if (bits == 16) return (uint32_t)codes[2 * j] | ((uint32_t)codes[2 * j + 1] << 8);
  return (j & 1) ? (uint32_t)(codes[j >> 1] >> 4) : (uint32_t)(codes[j >> 1] & 0xfu);
}

void comm_quant_rows(const float *x, int64_t nrows, int64_t cols, int bits, uint64_t stream,
                     int64_t first_row, unsigned char *out) {
  const size_t rb = comm_quant_row_bytes(cols, bits);
  const uint32_t levels = (1u << bits) - 1u;
  const uint64_t skey = mix64(stream);
  for (int64_t i = 0; i < nrows; i++) {
    const float *r = x + i * cols;
    unsigned char *o = out + (size_t)i * rb;
    float lo = INFINITY, hi = -INFINITY;
    int finite = 1;
    for (int64_t j = 0; j < cols; j++) {
      const float v = r[j];
      if (!isfinite(v)) finite = 0;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    /* hi / levels - lo / levels: no overflow for values near FLT_MAX */
    const float step = finite ? hi / (float)levels - lo / (float)levels : NAN;
    memcpy(o, &lo, sizeof lo);
    memcpy(o + sizeof lo, &step, sizeof step);
    unsigned char *codes = o + 2 * sizeof(float);
    memset(codes, 0, rb - 2 * sizeof(float));
    if (!(step > 0.0f)) continue; /* constant row (all codes 0), or not finite */
    /* in double: a subnormal step has no finite float inverse */
    const double inv = 1.0 / (double)step;
    const uint64_t rowkey = mix64(skey ^ (uint64_t)(first_row + i));
    for (int64_t j = 0; j < cols; j++) {
      const double t = floor(((double)r[j] - (double)lo) * inv + (double)offset(rowkey, j));
      const uint32_t q = !(t > 0.0) ? 0u : t >= (double)levels ? levels : (uint32_t)t;
      put_code(codes, bits, j, q);
    }
  }
}

void comm_dequant_rows(const unsigned char *in, int64_t nrows, int64_t cols, int bits, float *x) {
  const size_t rb = comm_quant_row_bytes(cols, bits);
  for (int64_t i = 0; i < nrows; i++) {
    const unsigned char *o = in + (size_t)i * rb;
    float lo, step;
    memcpy(&lo, o, sizeof lo);
    memcpy(&step, o + sizeof lo, sizeof step);
    float *r = x + i * cols;
    if (isnan(step)) {
      for (int64_t j = 0; j < cols; j++) r[j] = NAN;
      continue;
    }
    const unsigned char *codes = o + 2 * sizeof(float);
    for (int64_t j = 0; j < cols; j++) r[j] = lo + (float)get_code(codes, bits, j) * step;
  }
}
