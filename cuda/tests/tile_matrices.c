/* cuda/tests/tile_matrices.c — see tile_matrices.h. */
#include "tile_matrices.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

double tm_unif(uint64_t *seed) {
  uint64_t z = (*seed += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

int tm_clustered(struct cg_csr *a, int64_t nrows, int64_t ncols, int64_t comm, double p_in,
                 double p_out, int64_t hub_every, double p_hub, enum tm_values vals, uint64_t *seed) {
  int64_t nnz = 0;
  int64_t *rp = calloc((size_t)nrows + 1, sizeof *rp);
  int32_t *ci = malloc((size_t)(nrows * ncols + 1) * sizeof *ci);
  int st = CG_ERR_NOMEM;
  if (!rp || !ci) goto done;
  for (int64_t r = 0; r < nrows; r++) {
    const int hub = hub_every > 0 && r % hub_every == hub_every / 2;
    for (int64_t c = 0; c < ncols; c++) {
      const double p = hub ? p_hub : (r / comm == c / comm ? p_in : p_out);
      if (tm_unif(seed) < p) ci[nnz++] = (int32_t)c;
    }
    rp[r + 1] = nnz;
  }
  st = cg_csr_alloc(a, nrows, ncols, nnz, vals != TM_ONES);
  if (st != CG_OK) goto done;
  memcpy(a->rowptr, rp, (size_t)(nrows + 1) * sizeof *rp);
  if (nnz) memcpy(a->colidx, ci, (size_t)nnz * sizeof *ci);
  if (vals == TM_RANDOM)
    for (int64_t k = 0; k < nnz; k++) a->vals[k] = (float)(0.05 + tm_unif(seed));
  if (vals == TM_FACTORED) {
    st = cg_csr_alloc_scales(a);
    if (st != CG_OK) {
      cg_csr_free(a);
      goto done;
    }
    for (int64_t r = 0; r < nrows; r++) a->row_scale[r] = (float)(0.1 + 0.9 * tm_unif(seed));
    for (int64_t c = 0; c < ncols; c++) a->col_scale[c] = (float)(0.1 + 0.9 * tm_unif(seed));
    for (int64_t r = 0; r < nrows; r++)
      for (int64_t k = rp[r]; k < rp[r + 1]; k++) a->vals[k] = a->row_scale[r] * a->col_scale[ci[k]];
  }
  st = cg_csr_check(a, "clustered test matrix");
done:
  free(rp);
  free(ci);
  return st;
}

int64_t tm_compare_spmm(const char *what, const struct cg_csr *a, const float *x, int64_t ldx,
                        const float *y, int64_t ldy, int64_t f, float pad, double *worst) {
  int64_t bad = 0;
  *worst = 0.0;
  for (int64_t r = 0; r < a->nrows; r++) {
    for (int64_t c = 0; c < ldy; c++) {
      const float got = y[r * ldy + c];
      if (c >= f) {
        if (!(got == pad) && bad++ < 5)
          printf("%s: row %lld col %lld (padding) changed to %.9g\n", what, (long long)r, (long long)c,
                 (double)got);
        continue;
      }
      double ref = 0.0, mag = 0.0;
      for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) {
        const double term = (a->vals ? a->vals[k] : 1.0) * x[(int64_t)a->colidx[k] * ldx + c];
        ref += term;
        mag += fabs(term);
      }
      const double err = fabs(got - ref), tol = 1e-6 + 2e-5 * mag;
      if (err / tol > *worst) *worst = err / tol;
      if (!(err <= tol) && bad++ < 5)
        printf("%s: row %lld col %lld: got %.9g, want %.9g (tolerance %.3g)\n", what, (long long)r,
               (long long)c, (double)got, ref, tol);
    }
  }
  return bad;
}

float *tm_alloc_floats(int64_t n) {
  /* (aligned_alloc wants a size that is a multiple of the alignment) */
  const size_t bytes = ((size_t)(n > 0 ? n : 1) * sizeof(float) + 63) / 64 * 64;
  return aligned_alloc(64, bytes);
}
