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
  /* Optional factors of vals (both or neither, only with vals): vals[k] equals
   * row_scale[r] * col_scale[colidx[k]] up to rounding, as GCN's d_r^-1/2 d_c^-1/2 and
   * the mean aggregator's 1/d_r do. A backend may compute with the factors instead
   * (the CPU tiled SpMM scales X and Y, so no value per nonzero is streamed); the
   * result then differs from the vals product by rounding only. Owned like vals. */
  float *row_scale; /* nrows */
  float *col_scale; /* ncols */
};

/* Allocate rowptr/colidx/vals (vals only when with_vals) for the given shape;
 * rowptr is zeroed. Caller-owned struct: pair with cg_csr_free. */
int cg_csr_alloc(struct cg_csr *a, int64_t nrows, int64_t ncols, int64_t nnz, int with_vals);
void cg_csr_free(struct cg_csr *a); /* accepts a zeroed struct */
/* out = a deep copy of a (values and factors included). */
int cg_csr_copy(const struct cg_csr *a, struct cg_csr *out);
/* Allocate row_scale and col_scale (uninitialised) for an allocated matrix. */
int cg_csr_alloc_scales(struct cg_csr *a);
/* AT = A^T (rows of AT are A's columns), columns sorted within each row; the
 * factors, if any, are swapped. */
int cg_csr_transpose(const struct cg_csr *a, struct cg_csr *at);
/* out = the block of rows [r0, r1) and columns [c0, c1) of a (0 <= r0 <= r1 <= nrows,
 * 0 <= c0 <= c1 <= ncols): each row keeps its entries in those columns, in their
 * order, renumbered c - c0; values and factors (row_scale[r0, r1), col_scale[c0, c1))
 * are copied. What the split of an aggregation operator into its inner and halo
 * parts is made of (runtime/, issue #14). CG_ERR_ARG for a range outside a. */
int cg_csr_slice(const struct cg_csr *a, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                 struct cg_csr *out);
/* out = the rows of a that hold at least one entry, in order (row_scale with them);
 * *rows (cg_malloc, out->nrows entries, at least one allocated) gets the row of a that
 * each row of out is. Row indices fit int32 (they index backend rows). */
int cg_csr_nonempty_rows(const struct cg_csr *a, struct cg_csr *out, int32_t **rows);
/* Check rowptr monotone, rowptr[0]==0, rowptr[n]==nnz, columns in range, factors
 * only with values and both or neither.
 * Returns CG_ERR_INTERNAL with a message naming the first violation. */
int cg_csr_check(const struct cg_csr *a, const char *what);

#ifdef __cplusplus
}
#endif
#endif
