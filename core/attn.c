/* core/attn.c — setting up the graph structure the attention ops read (core/attn.h):
 * the in-edge CSR and its transpose by edge, uploaded to any backend. Set-up code: it
 * allocates and returns a status; the ops themselves are in each backend. */
#include <string.h>

#include "core/attn.h"
#include "core/status.h"

int cg_edges_transpose_host(const struct cg_csr *a, int64_t **t_ptr, int32_t **t_row,
                            int64_t **t_eid) {
  *t_ptr = NULL;
  *t_row = NULL;
  *t_eid = NULL;
  const int64_t nnz = a->nnz, nc = a->ncols;
  int64_t *ptr = cg_calloc((size_t)nc + 1, sizeof(int64_t), "edge transpose pointers");
  int32_t *row = cg_malloc((size_t)(nnz > 0 ? nnz : 1) * sizeof(int32_t), "edge transpose rows");
  int64_t *eid = cg_malloc((size_t)(nnz > 0 ? nnz : 1) * sizeof(int64_t), "edge transpose ids");
  int64_t *fill = cg_malloc((size_t)(nc > 0 ? nc : 1) * sizeof(int64_t), "edge transpose fill");
  if (!ptr || !row || !eid || !fill) {
    cg_free(ptr);
    cg_free(row);
    cg_free(eid);
    cg_free(fill);
    return CG_ERR_NOMEM;
  }
  for (int64_t k = 0; k < nnz; k++) ptr[a->colidx[k] + 1]++;
  for (int64_t u = 0; u < nc; u++) ptr[u + 1] += ptr[u];
  memcpy(fill, ptr, (size_t)nc * sizeof(int64_t));
  /* rows in increasing order, edges within a row too: each column's list is in
   * increasing edge number */
  for (int64_t r = 0; r < a->nrows; r++)
    for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) {
      const int64_t j = fill[a->colidx[k]]++;
      row[j] = (int32_t)r;
      eid[j] = k;
    }
  cg_free(fill);
  *t_ptr = ptr;
  *t_row = row;
  *t_eid = eid;
  return CG_OK;
}

static int upload_new(struct cg_backend *be, const void **dst, const void *src, size_t bytes,
                      const char *what) {
  void *p = NULL;
  TRY(be->alloc(be, &p, bytes > 0 ? bytes : 1, what));
  *dst = p;
  if (bytes > 0) TRY(be->upload(be, p, src, bytes));
  return CG_OK;
}

int cg_edges_upload(struct cg_backend *be, const struct cg_csr *a, struct cg_edges *out) {
  int st = CG_OK;
  memset(out, 0, sizeof *out);
  TRY(cg_csr_check(a, "attention edges"));
  if (a->nrows > INT32_MAX || a->ncols > INT32_MAX)
    return cg_err_set(CG_ERR_ARG, "attention edges: %lld x %lld does not fit int32 ids",
                      (long long)a->nrows, (long long)a->ncols);
  int64_t *t_ptr = NULL, *t_eid = NULL;
  int32_t *t_row = NULL;
  TRY(cg_edges_transpose_host(a, &t_ptr, &t_row, &t_eid));
  out->nrows = a->nrows;
  out->ncols = a->ncols;
  out->nnz = a->nnz;
  const size_t nnz = (size_t)a->nnz;
  TRY_GOTO(upload_new(be, (const void **)&out->rowptr, a->rowptr, ((size_t)a->nrows + 1) * sizeof(int64_t),
                      "attention row pointers"), done);
  TRY_GOTO(upload_new(be, (const void **)&out->colidx, a->colidx, nnz * sizeof(int32_t),
                      "attention column ids"), done);
  TRY_GOTO(upload_new(be, (const void **)&out->t_ptr, t_ptr, ((size_t)a->ncols + 1) * sizeof(int64_t),
                      "attention transpose pointers"), done);
  TRY_GOTO(upload_new(be, (const void **)&out->t_row, t_row, nnz * sizeof(int32_t),
                      "attention transpose rows"), done);
  TRY_GOTO(upload_new(be, (const void **)&out->t_eid, t_eid, nnz * sizeof(int64_t),
                      "attention transpose edge ids"), done);
done:
  cg_free(t_ptr);
  cg_free(t_row);
  cg_free(t_eid);
  if (st != CG_OK) cg_edges_free(be, out);
  return st;
}

void cg_edges_free(struct cg_backend *be, struct cg_edges *e) {
  if (!e) return;
  if (be) {
    be->free(be, (void *)e->rowptr);
    be->free(be, (void *)e->colidx);
    be->free(be, (void *)e->t_ptr);
    be->free(be, (void *)e->t_row);
    be->free(be, (void *)e->t_eid);
  }
  memset(e, 0, sizeof *e);
}
