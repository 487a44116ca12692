/* import/import_npz.c — NumPy/SciPy inputs shared by several importers: a SciPy
 * sparse adjacency (scipy.sparse.save_npz) as an edge list, and feature, label and
 * split arrays from .npy data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "import/import_internal.h"
#include "import/npy_internal.h"
#include "core/progress.h"

/* Reads `a` (count int32 values) into the v (or u) blocks of e. */
static int read_into_blocks(struct import_npy *a, struct import_edges *e, int use_u, struct cg_progress *pr,
                            int64_t base) {
  for (int64_t b = 0; b < e->nblocks; b++) {
    int64_t len = import_edges_block_len(e, b);
    TRY(import_npy_read(a, IMPORT_NPY_TO_I32, use_u ? e->u[b] : e->v[b], len));
    cg_progress_update(pr, base + b * IMPORT_EDGE_BLOCK + len);
  }
  return CG_OK;
}

int import_scipy_npz(const char *path, int64_t *n_out, struct import_edges *e) {
  memset(e, 0, sizeof *e);
  struct import_npz z;
  struct import_npy a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  int64_t *indptr = NULL;
  int st = CG_OK;
  struct cg_progress pr;
  memset(&pr, 0, sizeof pr);
  pr.mode = CG_PROGRESS_OFF;
  TRY(import_npz_open(&z, path));

  char fmt[16] = "";
  if (!import_npz_has(&z, "format") || !import_npz_has(&z, "shape")) {
    st = cg_err_set(CG_ERR_FORMAT,
                    "%s: not a SciPy sparse matrix: the arrays 'format' and 'shape' are missing (expected a "
                    "file written by scipy.sparse.save_npz)",
                    path);
    goto done;
  }
  TRY_GOTO(import_npy_open_npz(&a, &z, "format"), done);
  TRY_GOTO(import_npy_read_string(&a, fmt, sizeof fmt), done);
  import_npy_close(&a);
  int64_t shape[2];
  TRY_GOTO(import_npy_open_npz(&a, &z, "shape"), done);
  TRY_GOTO(import_npy_expect_integer(&a, "the matrix shape"), done);
  TRY_GOTO(import_npy_expect_shape(&a, 1, (int64_t[]){2}, "(the matrix shape)"), done);
  TRY_GOTO(import_npy_read(&a, IMPORT_NPY_TO_I64, shape, 2), done);
  import_npy_close(&a);
  if (shape[0] != shape[1] || shape[0] < 1) {
    st = cg_err_set(CG_ERR_FORMAT, "%s: the adjacency matrix has shape (%lld, %lld); expected a square n x n "
                    "matrix with n >= 1",
                    path, (long long)shape[0], (long long)shape[1]);
    goto done;
  }
  const int64_t n = shape[0];
  *n_out = n;

  if (strcmp(fmt, "csr") == 0 || strcmp(fmt, "csc") == 0) {
    /* CSC is the transpose; the graph is symmetrised anyway, so rows and columns
     * play the same part. */
    TRY_GOTO(import_npy_open_npz(&a, &z, "indptr"), done);
    TRY_GOTO(import_npy_expect_integer(&a, "indptr"), done);
    TRY_GOTO(import_npy_expect_shape(&a, 1, (int64_t[]){n + 1}, "(n + 1 row pointers)"), done);
    indptr = malloc((size_t)(n + 1) * sizeof *indptr);
    if (!indptr) {
      st = cg_err_set(CG_ERR_NOMEM, "out of memory for %lld row pointers", (long long)n + 1);
      goto done;
    }
    TRY_GOTO(import_npy_read(&a, IMPORT_NPY_TO_I64, indptr, n + 1), done);
    import_npy_close(&a);
    TRY_GOTO(import_npy_open_npz(&b, &z, "indices"), done);
    TRY_GOTO(import_npy_expect_integer(&b, "indices"), done);
    TRY_GOTO(import_npy_expect_shape(&b, 1, (int64_t[]){-1}, "(column indices)"), done);
    const int64_t nnz = b.count;
    if (indptr[0] != 0 || indptr[n] != nnz) {
      st = cg_err_set(CG_ERR_FORMAT, "%s: indptr[0] = %lld and indptr[n] = %lld, expected 0 and %lld (the "
                      "length of indices)",
                      path, (long long)indptr[0], (long long)indptr[n], (long long)nnz);
      goto done;
    }
    for (int64_t r = 0; r < n; r++)
      if (indptr[r + 1] < indptr[r]) {
        st = cg_err_set(CG_ERR_FORMAT, "%s: indptr decreases at row %lld (%lld > %lld)", path, (long long)r,
                        (long long)indptr[r], (long long)indptr[r + 1]);
        goto done;
      }
    TRY_GOTO(import_edges_alloc(e, nnz), done);
    for (int64_t r = 0; r < n; r++)
      for (int64_t k = indptr[r]; k < indptr[r + 1]; k++)
        e->u[k >> IMPORT_EDGE_BLOCK_SHIFT][k & (IMPORT_EDGE_BLOCK - 1)] = (int32_t)r;
    char what[1100];
    snprintf(what, sizeof what, "reading %s", path);
    cg_progress_begin(&pr, what, nnz, "edges");
    TRY_GOTO(read_into_blocks(&b, e, 0, &pr, 0), done);
    cg_progress_end(&pr);
  } else if (strcmp(fmt, "coo") == 0) {
    TRY_GOTO(import_npy_open_npz(&a, &z, "row"), done);
    TRY_GOTO(import_npy_open_npz(&b, &z, "col"), done);
    TRY_GOTO(import_npy_expect_integer(&a, "row indices"), done);
    TRY_GOTO(import_npy_expect_integer(&b, "column indices"), done);
    TRY_GOTO(import_npy_expect_shape(&a, 1, (int64_t[]){-1}, "(row indices)"), done);
    TRY_GOTO(import_npy_expect_shape(&b, 1, (int64_t[]){a.count}, "(as many column as row indices)"), done);
    const int64_t nnz = a.count;
    TRY_GOTO(import_edges_alloc(e, nnz), done);
    char what[1100];
    snprintf(what, sizeof what, "reading %s", path);
    cg_progress_begin(&pr, what, 2 * nnz, "edges");
    TRY_GOTO(read_into_blocks(&a, e, 1, &pr, 0), done);
    TRY_GOTO(read_into_blocks(&b, e, 0, &pr, nnz), done);
    cg_progress_end(&pr);
  } else {
    st = cg_err_set(CG_ERR_UNSUPPORTED,
                    "%s: sparse format '%s' is not supported (expected csr, csc or coo; convert with "
                    "scipy.sparse.save_npz(path, matrix.tocsr()))",
                    path, fmt);
    goto done;
  }
done:
  if (st != CG_OK) {
    cg_progress_cancel(&pr);
    import_edges_free(e);
  }
  free(indptr);
  import_npy_close(&a);
  import_npy_close(&b);
  import_npz_close(&z);
  return st;
}

int import_npy_features(struct import_npy *a, struct graph *g, struct import_stats *st) {
  TRY(import_npy_expect_numeric(a, "features"));
  TRY(import_npy_expect_shape(a, 2, (int64_t[]){g->n > 0 ? g->n : -1, -1},
                              g->n > 0 ? "(one row of features per vertex)" : "(vertices x features)"));
  const int64_t n = a->shape[0], f = a->shape[1];
  /* capgnn train refuses such a graph; say so here, before the user has waited for it */
  if (f == 0)
    return cg_err_set(CG_ERR_FORMAT, "%s: shape (%lld, 0): no features per vertex, and a GNN needs input "
                      "features (for a graph without features: --from edgelist --features identity, X = I)",
                      a->name, (long long)n);
  if (f >= ((int64_t)1 << 31))
    return cg_err_set(CG_ERR_FORMAT, "%s: %lld features per vertex, expected fewer than 2^31", a->name,
                      (long long)f);
  float *x = cg_malloc((size_t)(n * f > 0 ? n * f : 1) * sizeof *x, "dense features");
  if (!x) return CG_ERR_NOMEM;
  struct cg_progress pr;
  char what[1300];
  snprintf(what, sizeof what, "reading %s", a->name);
  cg_progress_begin(&pr, what, a->data_bytes, "B");
  const int64_t chunk = f ? ((int64_t)4 << 20) / f + 1 : n; /* rows per read: about 16 MB */
  for (int64_t r = 0; r < n; r += chunk) {
    int64_t rows = n - r < chunk ? n - r : chunk;
    int s = import_npy_read(a, IMPORT_NPY_TO_F32, x + r * f, rows * f);
    if (s != CG_OK) {
      cg_progress_cancel(&pr);
      cg_free(x);
      return s;
    }
    cg_progress_update(&pr, (r + rows) * f * a->itemsize);
  }
  cg_progress_end(&pr);
  g->feat_values = x;
  g->feat_dim = f;
  if (g->n <= 0) g->n = n;
  snprintf(st->feat_dtype, sizeof st->feat_dtype, "%.15s", a->descr);
  st->feat_converted = !(a->kind == IMPORT_NPY_FLOAT && a->itemsize == 4);
  return CG_OK;
}

int import_npy_labels(struct import_npy *a, struct graph *g, int64_t want_classes) {
  const int64_t n = g->n;
  TRY(import_npy_expect_integer(a, "labels"));
  /* (n, 1) is a column of class ids (PyG's and OGB's usual shape), not a one-class
   * multi-label matrix: read as (n,) */
  const int column = a->ndim == 2 && a->shape[0] == n && a->shape[1] == 1;
  if (a->ndim == 2 && !column) {
    TRY(import_npy_expect_shape(a, 2, (int64_t[]){n, -1}, "(vertices x classes, multi-label 0/1)"));
    const int64_t c = a->shape[1];
    if (c < 1) return cg_err_set(CG_ERR_FORMAT, "%s: multi-label matrix with 0 classes", a->name);
    if (want_classes > 0 && want_classes != c)
      return cg_err_set(CG_ERR_ARG, "%s: the multi-label matrix has %lld classes, but %lld were asked for",
                        a->name, (long long)c, (long long)want_classes);
    g->mlabels = cg_malloc((size_t)(n * c), "multi-label matrix");
    if (!g->mlabels) return CG_ERR_NOMEM;
    g->multilabel = 1;
    g->num_classes = c;
    TRY(import_npy_read(a, IMPORT_NPY_TO_U8, g->mlabels, n * c));
    for (int64_t k = 0; k < n * c; k++)
      if (g->mlabels[k] > 1)
        return cg_err_set(CG_ERR_FORMAT, "%s: label out of range at vertex %lld, class %lld: %u, expected 0 or 1 "
                          "in a multi-label matrix",
                          a->name, (long long)(k / c), (long long)(k % c), (unsigned)g->mlabels[k]);
    return CG_OK;
  }
  if (!column) TRY(import_npy_expect_shape(a, 1, (int64_t[]){n}, "(one label per vertex)"));
  g->labels = cg_malloc((size_t)n * sizeof *g->labels, "labels");
  if (!g->labels) return CG_ERR_NOMEM;
  g->multilabel = 0;
  TRY(import_npy_read(a, IMPORT_NPY_TO_I32, g->labels, n));
  TRY(import_label_classes(g, want_classes, a->name));
  return CG_OK;
}

int import_npy_split(struct import_npy *a, struct graph *g) {
  const int64_t n = g->n;
  if (a->kind == IMPORT_NPY_BOOL) /* True would read as 1 = train for every masked vertex */
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: a boolean array (a train/val/test mask?), not a split: the split holds 0 (none), 1 "
                      "(train), 2 (val) or 3 (test) per vertex; from three masks: np.save('S.npy', (1 * "
                      "train_mask + 2 * val_mask + 3 * test_mask).astype(np.uint8))",
                      a->name);
  TRY(import_npy_expect_integer(a, "the split"));
  TRY(import_npy_expect_shape(a, 1, (int64_t[]){n}, "(one split value per vertex)"));
  g->split = cg_malloc((size_t)n, "split");
  if (!g->split) return CG_ERR_NOMEM;
  int64_t buf[4096];
  for (int64_t u0 = 0; u0 < n; u0 += 4096) {
    int64_t k = n - u0 < 4096 ? n - u0 : 4096;
    TRY(import_npy_read(a, IMPORT_NPY_TO_I64, buf, k));
    for (int64_t i = 0; i < k; i++) {
      if (buf[i] < 0 || buf[i] > 3)
        return cg_err_set(CG_ERR_FORMAT,
                          "%s: split value %lld at vertex %lld, expected 0 (none), 1 (train), 2 (val) or "
                          "3 (test)",
                          a->name, (long long)buf[i], (long long)(u0 + i));
      g->split[u0 + i] = (uint8_t)buf[i];
    }
  }
  return CG_OK;
}
