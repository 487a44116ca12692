/* core/csr.h — host CSR matrices (the aggregation operators of a GNN layer).
 * Rows are destination vertices, columns source vertices (in-edges):
 * Y = A X means Y[r] = sum_k vals[k] * X[colidx[k]] over k in [rowptr[r], rowptr[r+1]). */
#ifndef CAPGNN_CORE_CSR_H
#define CAPGNN_CORE_CSR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cg_csr {
  int64_t nrows, ncols, nnz;
  int64_t *rowptr; /* nrows + 1 */
  int32_t *colidx; /* nnz, each in [0, ncols) */
  float *vals;     /* nnz; NULL means every value is 1 */
};

/* Allocate rowptr/colidx/vals (vals only when with_vals) for the given shape;
 * rowptr is zeroed. Caller-owned struct: pair with cg_csr_free. */
int cg_csr_alloc(struct cg_csr *a, int64_t nrows, int64_t ncols, int64_t nnz, int with_vals);
void cg_csr_free(struct cg_csr *a); /* accepts a zeroed struct */
/* AT = A^T (rows of AT are A's columns), columns sorted within each row. */
int cg_csr_transpose(const struct cg_csr *a, struct cg_csr *at);
/* Check rowptr monotone, rowptr[0]==0, rowptr[n]==nnz, columns in range.
 * Returns CG_ERR_INTERNAL with a message naming the first violation. */
int cg_csr_check(const struct cg_csr *a, const char *what);

#ifdef __cplusplus
}
#endif
#endif
