/* core/csr.c — host CSR allocation, transpose and checks. */
#include "csr.h"

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

void cg_csr_free(struct cg_csr *a) {
  if (!a) return;
  cg_free(a->rowptr);
  cg_free(a->colidx);
  cg_free(a->vals);
  memset(a, 0, sizeof *a);
}

int cg_csr_transpose(const struct cg_csr *a, struct cg_csr *at) {
  TRY(cg_csr_alloc(at, a->ncols, a->nrows, a->nnz, a->vals != NULL));
  for (int64_t k = 0; k < a->nnz; k++) at->rowptr[a->colidx[k] + 1]++;
  for (int64_t r = 0; r < at->nrows; r++) at->rowptr[r + 1] += at->rowptr[r];
  int64_t *next = cg_malloc((size_t)at->nrows * sizeof(int64_t), "CSR transpose cursor");
  if (!next) {
    cg_csr_free(at);
    return CG_ERR_NOMEM;
  }
  memcpy(next, at->rowptr, (size_t)at->nrows * sizeof(int64_t));
  /* Visiting rows of A in order yields sorted columns in every row of A^T. */
  for (int64_t r = 0; r < a->nrows; r++) {
    for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) {
      int64_t dst = next[a->colidx[k]]++;
      at->colidx[dst] = (int32_t)r;
      if (a->vals) at->vals[dst] = a->vals[k];
    }
  }
  cg_free(next);
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
  for (int64_t k = 0; k < a->nnz; k++)
    if (a->colidx[k] < 0 || a->colidx[k] >= a->ncols)
      return cg_err_set(CG_ERR_INTERNAL, "%s: column %d at entry %lld out of range [0, %lld)", what,
                        a->colidx[k], (long long)k, (long long)a->ncols);
  return CG_OK;
}
