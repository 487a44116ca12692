/* core/csr.c — host CSR allocation, transpose, slices and checks. */
#include "csr.h"

#include <omp.h>
#include <string.h>

#include "status.h"

int cg_csr_alloc(struct cg_csr *a, int64_t nrows, int64_t ncols, int64_t nnz, int with_vals) {
  memset(a, 0, sizeof *a);
  a->nrows = nrows;
  a->ncols = ncols;
  a->nnz = nnz;
  a->rowptr = cg_calloc((size_t)nrows + 1, sizeof(int64_t), "CSR row pointers");
  a->colidx = cg_malloc((size_t)nnz * sizeof(int32_t), "CSR column indices");
  a->vals = with_vals ? cg_malloc((size_t)nnz * sizeof(float), "CSR values") : NULL;
  if (!a->rowptr || !a->colidx || (with_vals && !a->vals)) {
    cg_csr_free(a);
    return CG_ERR_NOMEM;
  }
  return CG_OK;
}

/* Gives `out` (allocated) copies of the factors rs (out->nrows) and cs (out->ncols)
 * when both are set; frees `out` on failure. */
static int copy_scales(struct cg_csr *out, const float *rs, const float *cs) {
  if (!rs || !cs) return CG_OK;
  if (cg_csr_alloc_scales(out) != CG_OK) {
    cg_csr_free(out);
    return CG_ERR_NOMEM;
  }
  if (out->nrows) memcpy(out->row_scale, rs, (size_t)out->nrows * sizeof(float));
  if (out->ncols) memcpy(out->col_scale, cs, (size_t)out->ncols * sizeof(float));
  return CG_OK;
}

int cg_csr_copy(const struct cg_csr *a, struct cg_csr *out) {
  TRY(cg_csr_alloc(out, a->nrows, a->ncols, a->nnz, a->vals != NULL));
  memcpy(out->rowptr, a->rowptr, (size_t)(a->nrows + 1) * sizeof(int64_t));
  if (a->nnz) memcpy(out->colidx, a->colidx, (size_t)a->nnz * sizeof(int32_t));
  if (a->vals && a->nnz) memcpy(out->vals, a->vals, (size_t)a->nnz * sizeof(float));
  return copy_scales(out, a->row_scale, a->col_scale);
}

int cg_csr_alloc_scales(struct cg_csr *a) {
  cg_free(a->row_scale);
  cg_free(a->col_scale);
  a->row_scale = cg_malloc((size_t)(a->nrows > 0 ? a->nrows : 1) * sizeof(float), "CSR row scales");
  a->col_scale = cg_malloc((size_t)(a->ncols > 0 ? a->ncols : 1) * sizeof(float), "CSR column scales");
  if (!a->row_scale || !a->col_scale) {
    cg_free(a->row_scale);
    cg_free(a->col_scale);
    a->row_scale = a->col_scale = NULL;
    return CG_ERR_NOMEM;
  }
  return CG_OK;
}

void cg_csr_free(struct cg_csr *a) {
  if (!a) return;
  cg_free(a->rowptr);
  cg_free(a->colidx);
  cg_free(a->vals);
  cg_free(a->row_scale);
  cg_free(a->col_scale);
  memset(a, 0, sizeof *a);
}

/* The first row that starts at or after entry e. */
static int64_t first_row_at(const struct cg_csr *a, int64_t e) {
  int64_t lo = 0, hi = a->nrows;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (a->rowptr[mid] < e) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

int cg_csr_transpose(const struct cg_csr *a, struct cg_csr *at) {
  TRY(cg_csr_alloc(at, a->ncols, a->nrows, a->nnz, a->vals != NULL));
  /* Parallel over row ranges of A, with the result of the sequential scatter: a
   * thread's entries of column c go after those of the threads with earlier rows,
   * so visiting rows in order still yields sorted columns in every row of A^T.
   * (Single-threaded this took ~3 s on synth:reddit's 114M entries.) */
  const int nt = omp_get_max_threads() > 1 && a->nnz >= (1 << 20) ? omp_get_max_threads() : 1;
  const int64_t nc = at->nrows;
  int64_t *next = cg_calloc((size_t)nt * (size_t)(nc > 0 ? nc : 1), sizeof(int64_t),
                            "CSR transpose cursors");
  if (!next) {
    cg_csr_free(at);
    return CG_ERR_NOMEM;
  }
#pragma omp parallel num_threads(nt)
  {
    /* rows split by entries among the threads granted (at most nt) */
    const int t = omp_get_thread_num(), nth = omp_get_num_threads();
    const int64_t r0 = t == 0 ? 0 : first_row_at(a, a->nnz * t / nth);
    const int64_t r1 = t == nth - 1 ? a->nrows : first_row_at(a, a->nnz * (t + 1) / nth);
    int64_t *mine = next + (size_t)t * (size_t)nc;
    for (int64_t k = a->rowptr[r0]; k < a->rowptr[r1]; k++) mine[a->colidx[k]]++;
#pragma omp barrier
#pragma omp single
    {
      /* column c's block in A^T, then each thread's start inside it */
      int64_t pos = 0;
      for (int64_t c = 0; c < nc; c++) {
        at->rowptr[c] = pos;
        for (int u = 0; u < nth; u++) {
          const int64_t cnt = next[(size_t)u * (size_t)nc + c];
          next[(size_t)u * (size_t)nc + c] = pos;
          pos += cnt;
        }
      }
      at->rowptr[nc] = pos;
    }
    for (int64_t r = r0; r < r1; r++)
      for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) {
        const int64_t dst = mine[a->colidx[k]]++;
        at->colidx[dst] = (int32_t)r;
        if (a->vals) at->vals[dst] = a->vals[k];
      }
  }
  cg_free(next);
  return copy_scales(at, a->col_scale, a->row_scale); /* transposed: swapped */
}

int cg_csr_slice(const struct cg_csr *a, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                 struct cg_csr *out) {
  memset(out, 0, sizeof *out);
  if (r0 < 0 || r0 > r1 || r1 > a->nrows || c0 < 0 || c0 > c1 || c1 > a->ncols)
    return cg_err_set(CG_ERR_ARG, "cg_csr_slice: rows [%lld, %lld) and columns [%lld, %lld) of a "
                      "%lld x %lld matrix", (long long)r0, (long long)r1, (long long)c0,
                      (long long)c1, (long long)a->nrows, (long long)a->ncols);
  int64_t nnz = 0;
  for (int64_t k = a->rowptr[r0]; k < a->rowptr[r1]; k++)
    nnz += a->colidx[k] >= c0 && a->colidx[k] < c1;
  TRY(cg_csr_alloc(out, r1 - r0, c1 - c0, nnz, a->vals != NULL));
  int64_t e = 0;
  for (int64_t r = r0; r < r1; r++) {
    for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) {
      const int64_t c = a->colidx[k];
      if (c < c0 || c >= c1) continue;
      out->colidx[e] = (int32_t)(c - c0);
      if (a->vals) out->vals[e] = a->vals[k];
      e++;
    }
    out->rowptr[r - r0 + 1] = e;
  }
  return copy_scales(out, a->row_scale ? a->row_scale + r0 : NULL,
                     a->col_scale ? a->col_scale + c0 : NULL);
}

int cg_csr_nonempty_rows(const struct cg_csr *a, struct cg_csr *out, int32_t **rows) {
  memset(out, 0, sizeof *out);
  *rows = NULL;
  if (a->nrows > INT32_MAX)
    return cg_err_set(CG_ERR_ARG, "cg_csr_nonempty_rows: %lld rows do not fit int32 row indices",
                      (long long)a->nrows);
  int64_t n = 0;
  for (int64_t r = 0; r < a->nrows; r++) n += a->rowptr[r + 1] > a->rowptr[r];
  int32_t *idx = cg_malloc((size_t)(n > 0 ? n : 1) * sizeof *idx, "indices of non-empty CSR rows");
  if (!idx) return CG_ERR_NOMEM;
  if (cg_csr_alloc(out, n, a->ncols, a->nnz, a->vals != NULL) != CG_OK) {
    cg_free(idx);
    return CG_ERR_NOMEM;
  }
  int64_t i = 0;
  for (int64_t r = 0; r < a->nrows; r++) {
    if (a->rowptr[r + 1] == a->rowptr[r]) continue;
    idx[i++] = (int32_t)r;
    out->rowptr[i] = a->rowptr[r + 1];
  }
  if (a->nnz) memcpy(out->colidx, a->colidx, (size_t)a->nnz * sizeof(int32_t));
  if (a->vals && a->nnz) memcpy(out->vals, a->vals, (size_t)a->nnz * sizeof(float));
  if (a->row_scale && a->col_scale) {
    if (cg_csr_alloc_scales(out) != CG_OK) {
      cg_csr_free(out);
      cg_free(idx);
      return CG_ERR_NOMEM;
    }
    for (int64_t k = 0; k < n; k++) out->row_scale[k] = a->row_scale[idx[k]];
    if (a->ncols) memcpy(out->col_scale, a->col_scale, (size_t)a->ncols * sizeof(float));
  }
  *rows = idx;
  return CG_OK;
}

int cg_csr_check(const struct cg_csr *a, const char *what) {
  if (!a->rowptr || a->rowptr[0] != 0)
    return cg_err_set(CG_ERR_INTERNAL, "%s: rowptr[0] must be 0", what);
  for (int64_t r = 0; r < a->nrows; r++)
    if (a->rowptr[r + 1] < a->rowptr[r])
      return cg_err_set(CG_ERR_INTERNAL, "%s: rowptr decreases at row %lld", what, (long long)r);
  if (a->rowptr[a->nrows] != a->nnz)
    return cg_err_set(CG_ERR_INTERNAL, "%s: rowptr[%lld] = %lld, expected nnz = %lld", what,
                      (long long)a->nrows, (long long)a->rowptr[a->nrows], (long long)a->nnz);
  if (!a->row_scale != !a->col_scale || (a->row_scale && !a->vals))
    return cg_err_set(CG_ERR_INTERNAL, "%s: row and column scales come together, with values", what);
  for (int64_t k = 0; k < a->nnz; k++)
    if (a->colidx[k] < 0 || a->colidx[k] >= a->ncols)
      return cg_err_set(CG_ERR_INTERNAL, "%s: column %d at entry %lld out of range [0, %lld)", what,
                        a->colidx[k], (long long)k, (long long)a->ncols);
  return CG_OK;
}
