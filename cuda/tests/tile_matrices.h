/* cuda/tests/tile_matrices.h — clustered test matrices for the tiled SpMM tests. */
#ifndef CAPGNN_CUDA_TESTS_TILE_MATRICES_H
#define CAPGNN_CUDA_TESTS_TILE_MATRICES_H

#include <stdint.h>

#include "core/csr.h"

#ifdef __cplusplus
extern "C" {
#endif

enum tm_values { TM_ONES = 0, TM_RANDOM = 1, TM_FACTORED = 2 };

/* nrows x ncols, sorted columns. Communities of `comm` consecutive rows / columns:
 * each entry is present with probability p_in inside the row's community, p_out
 * outside; every hub_every-th row (from hub_every / 2; none when hub_every is 0) is
 * a hub with probability p_hub everywhere. Values: none (all ones), uniform in
 * [0.05, 1.05), or row_scale[r] * col_scale[c] with both factors stored (as GCN's
 * normalisation). Deterministic in *seed (which it advances). Returns CG_OK or
 * CG_ERR_NOMEM. */
int tm_clustered(struct cg_csr *a, int64_t nrows, int64_t ncols, int64_t comm, double p_in,
                 double p_out, int64_t hub_every, double p_hub, enum tm_values vals, uint64_t *seed);

/* Compare y[nrows x f] (stride ldy) with A x in double: |y - ref| <= 1e-6 + 2e-5 *
 * sum_k |a_k x_k| for columns < f, and columns f..ldy-1 still equal to `pad`.
 * Returns the number of failures (the first few printed, prefixed by `what`);
 * *worst gets the largest error as a fraction of its tolerance. */
int64_t tm_compare_spmm(const char *what, const struct cg_csr *a, const float *x, int64_t ldx,
                        const float *y, int64_t ldy, int64_t f, float pad, double *worst);

/* n floats, 64-byte aligned as device allocations are (free() them); NULL when out of
 * memory. */
float *tm_alloc_floats(int64_t n);

/* A uniform double in [0, 1) from *seed (splitmix64). */
double tm_unif(uint64_t *seed);

#ifdef __cplusplus
}
#endif
#endif
