/* runtime/model_agg.c — the aggregation operator on the backend, whole or split into
 * its inner and halo parts (struct rt_agg, runtime_internal.h; how the model multiplies
 * by it and where the exchange goes: runtime/model.c).
 *
 * Design notes (the why):
 * - Split only when the model exchanges halo rows (rt_local_exchanges): a single
 *   process keeps Â whole, so its sums and results stay what they were; the split
 *   changes the order of a row's sum (inner columns, then the halo columns added to
 *   that), which is rounding only.
 * - Both schedules, overlapped or not (--overlap), multiply by the same split pieces in
 *   the same order: the overlap moves only the exchange's begin/end (and progress)
 *   among them, so the two are bit-identical by construction.
 * - The halo part keeps only the inner rows that have a halo column (boundary rows):
 *   its product is added into them with scatter_add_rows, one add per element (the
 *   rows are distinct, so even an atomic add is exact and deterministic).
 * - Âᵀ is split by rows, not columns: rows [n_in, n_tot) of Âᵀ·dZ (the halo rows'
 *   gradients, which go back to their owners) and rows [0, n_in) are separate
 *   products, so a row's sum does not change.
 * - The inner parts are cut into row blocks so that the model can call the exchange's
 *   progress between them (core/exchange.h, Progress). Bounds are multiples of 1024
 *   rows (a multiple of the CPU backend's 1024-row and the CUDA backend's 256-row tiles,
 *   so a block's tiles are the whole operator's), and an operator of at least 2 x 16384
 *   rows keeps blocks of at least 16384 rows: the CPU backend tiles a matrix only from
 *   16 row blocks of 1024 on (core/cpu_spmm.c), and a large operator must keep its
 *   tiled layout.
 * - GCN's inner block is symmetric (Â is, with global degrees): its transpose then
 *   shares the blocks of Â instead of a second copy (checked whole, not assumed). */
#include <string.h>

#include "core/csr.h"
#include "core/log.h"
#include "core/status.h"
#include "runtime/runtime_internal.h"

#define AGG_ROW_UNIT 1024      /* block bounds are multiples of this */
#define AGG_MAX_BLOCKS 8       /* progress points in an inner product */
#define AGG_BIG_BLOCK_ROWS 16384 /* at least this many rows per block of a large operator */

/* Same shape, structure and values, bit for bit. */
int rt_csr_same(const struct cg_csr *a, const struct cg_csr *b) {
  if (a->nrows != b->nrows || a->ncols != b->ncols || a->nnz != b->nnz) return 0;
  if ((a->vals == NULL) != (b->vals == NULL)) return 0;
  if (memcmp(a->rowptr, b->rowptr, (size_t)(a->nrows + 1) * sizeof *a->rowptr)) return 0;
  if (a->nnz && memcmp(a->colidx, b->colidx, (size_t)a->nnz * sizeof *a->colidx)) return 0;
  if (a->vals && a->nnz && memcmp(a->vals, b->vals, (size_t)a->nnz * sizeof *a->vals)) return 0;
  /* (a backend may compute with the factors instead of vals: they must match too) */
  if (!a->row_scale != !b->row_scale) return 0;
  return !a->row_scale ||
         (memcmp(a->row_scale, b->row_scale, (size_t)a->nrows * sizeof *a->row_scale) == 0 &&
          memcmp(a->col_scale, b->col_scale, (size_t)a->ncols * sizeof *a->col_scale) == 0);
}

/* Whether a square operator looks symmetric to the bit on up to 4096 entries
 * spread evenly over its nonzeros: a(u, v) == a(v, u) (binary search in row v) and
 * equal factors. A cheap guard on a known property, not a proof. */
static int symmetric_sample(const struct cg_csr *a) {
  if (a->nrows != a->ncols) return 0;
  if (!a->row_scale != !a->col_scale) return 0;
  if (a->row_scale && memcmp(a->row_scale, a->col_scale, (size_t)a->nrows * sizeof(float)) != 0)
    return 0;
  const int64_t step = a->nnz / 4096 + 1;
  int64_t u = 0;
  for (int64_t k = 0; k < a->nnz; k += step) {
    while (a->rowptr[u + 1] <= k) u++;
    const int64_t v = a->colidx[k];
    int64_t lo = a->rowptr[v], hi = a->rowptr[v + 1];
    while (lo < hi) { /* first entry of row v with column >= u */
      int64_t mid = lo + (hi - lo) / 2;
      if (a->colidx[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    if (lo == a->rowptr[v + 1] || a->colidx[lo] != u) return 0;
    if (a->vals && memcmp(&a->vals[lo], &a->vals[k], sizeof(float)) != 0) return 0;
  }
  return 1;
}

int rt_agg_blocks(int64_t n_in, int64_t *blk, int max_blocks) {
  if (n_in <= 0 || max_blocks < 1) return 0;
  int64_t nblk, base;
  if (n_in >= 2 * AGG_BIG_BLOCK_ROWS) {
    /* every block >= 16384 rows: round down, the last block takes the rest */
    nblk = n_in / AGG_BIG_BLOCK_ROWS;
    if (nblk > max_blocks) nblk = max_blocks;
    base = n_in / nblk / AGG_ROW_UNIT * AGG_ROW_UNIT;
  } else {
    /* about max_blocks blocks of whole units: round up, the last block is smaller */
    nblk = (n_in + AGG_ROW_UNIT - 1) / AGG_ROW_UNIT;
    if (nblk > max_blocks) nblk = max_blocks;
    base = ((n_in + nblk - 1) / nblk + AGG_ROW_UNIT - 1) / AGG_ROW_UNIT * AGG_ROW_UNIT;
    nblk = (n_in + base - 1) / base;
  }
  for (int64_t k = 0; k < nblk; k++) blk[k] = k * base;
  blk[nblk] = n_in;
  return (int)nblk;
}

/* The whole operator: Â, and Âᵀ (shared when Â is symmetric to the bit). */
static int agg_whole(struct cg_backend *be, const struct rt_local *loc, struct rt_agg *g) {
  int st = CG_OK;
  struct cg_csr at = {0};
  TRY(be->spmat_create(be, &loc->agg, &g->a));
  /* GCN's Â on one rank is symmetric to the bit: then Âᵀ shares Â's backend copy
   * (on Reddit that saves ~0.9 GB and the second upload). Known without building
   * Âᵀ (1.7 s on Reddit) when the operator is GCN's over the whole graph (every
   * graph's adjacency is symmetric, graph_check; the weight and the factors are
   * symmetric in the two degrees, graph/tests/test_norm.c), confirmed on a sample;
   * otherwise, or if the sample disagrees, Âᵀ is built and compared whole. */
  if (loc->n_halo == 0 && loc->norm == GRAPH_NORM_GCN && symmetric_sample(&loc->agg)) {
    g->at = g->a;
    return CG_OK;
  }
  TRY_GOTO(cg_csr_transpose(&loc->agg, &at), done);
  if (rt_csr_same(&loc->agg, &at)) g->at = g->a;
  else TRY_GOTO(be->spmat_create(be, &at, &g->at), done);
done:
  cg_csr_free(&at);
  return st;
}

/* The row blocks blk[0..nblk] of a host operator, uploaded one matrix per block. */
static int upload_blocks(struct cg_backend *be, const struct cg_csr *h, const int64_t *blk, int nblk,
                         struct cg_spmat **out) {
  for (int k = 0; k < nblk; k++) {
    struct cg_csr b;
    TRY(cg_csr_slice(h, blk[k], blk[k + 1], 0, h->ncols, &b));
    int st = be->spmat_create(be, &b, &out[k]);
    cg_csr_free(&b);
    TRY(st);
  }
  return CG_OK;
}

/* The split operator (runtime_internal.h, struct rt_agg). */
static int agg_split(struct cg_backend *be, const struct rt_local *loc, int64_t hwidth,
                     struct rt_agg *g) {
  int st = CG_OK;
  const int64_t n_in = loc->n_inner, n_tot = loc->n_inner + loc->n_halo;
  struct cg_csr inner = {0}, inner_t = {0}, halo = {0}, halo_rows = {0}, halo_t = {0};
  int32_t *rows = NULL;
  g->split = 1;
  g->blk = cg_malloc((size_t)(AGG_MAX_BLOCKS + 1) * sizeof *g->blk, "aggregation row blocks");
  g->a_in = cg_calloc(AGG_MAX_BLOCKS, sizeof *g->a_in, "aggregation blocks");
  g->at_in = cg_calloc(AGG_MAX_BLOCKS, sizeof *g->at_in, "aggregation blocks (transposed)");
  if (!g->blk || !g->a_in || !g->at_in) {
    cg_free(g->a_in); /* rt_agg_free releases blocks only when both tables exist */
    cg_free(g->at_in);
    g->a_in = g->at_in = NULL;
    return CG_ERR_NOMEM;
  }
  g->nblk = rt_agg_blocks(n_in, g->blk, AGG_MAX_BLOCKS);
  if (g->nblk == 0) g->blk[0] = 0;

  /* inner part: Â[0:n_in, 0:n_in] by row blocks; its transpose by the same blocks */
  TRY_GOTO(cg_csr_slice(&loc->agg, 0, n_in, 0, n_in, &inner), done);
  TRY_GOTO(upload_blocks(be, &inner, g->blk, g->nblk, g->a_in), done);
  TRY_GOTO(cg_csr_transpose(&inner, &inner_t), done);
  g->at_shared = rt_csr_same(&inner, &inner_t);
  if (g->at_shared) memcpy(g->at_in, g->a_in, (size_t)g->nblk * sizeof *g->at_in);
  else TRY_GOTO(upload_blocks(be, &inner_t, g->blk, g->nblk, g->at_in), done);

  /* halo part: Â[0:n_in, n_in:n_tot] on its non-empty rows; Âᵀ[n_in:n_tot, 0:n_in] */
  TRY_GOTO(cg_csr_slice(&loc->agg, 0, n_in, n_in, n_tot, &halo), done);
  TRY_GOTO(cg_csr_nonempty_rows(&halo, &halo_rows, &rows), done);
  g->n_hrows = halo_rows.nrows;
  if (g->n_hrows > 0) {
    void *q = NULL;
    TRY_GOTO(be->spmat_create(be, &halo_rows, &g->a_h), done);
    TRY_GOTO(be->alloc(be, &q, (size_t)g->n_hrows * sizeof(int32_t), "boundary rows"), done);
    g->d_hrows = q;
    TRY_GOTO(be->upload(be, g->d_hrows, rows, (size_t)g->n_hrows * sizeof(int32_t)), done);
    g->hwidth = hwidth;
    TRY_GOTO(be->alloc(be, &q, (size_t)g->n_hrows * (size_t)hwidth * sizeof(float),
                       "halo part of the aggregation"), done);
    g->hbuf = q;
  }
  if (loc->n_halo > 0) {
    TRY_GOTO(cg_csr_transpose(&halo, &halo_t), done);
    TRY_GOTO(be->spmat_create(be, &halo_t, &g->at_h), done);
  }
  LOG_DEBUG("train", "aggregation split: %lld inner rows in %d blocks (%lld nonzeros%s), %lld "
            "boundary rows with %lld halo nonzeros, %lld halo rows",
            (long long)n_in, g->nblk, (long long)inner.nnz, g->at_shared ? ", symmetric" : "",
            (long long)g->n_hrows, (long long)halo.nnz, (long long)loc->n_halo);
done:
  cg_free(rows);
  cg_csr_free(&inner);
  cg_csr_free(&inner_t);
  cg_csr_free(&halo);
  cg_csr_free(&halo_rows);
  cg_csr_free(&halo_t);
  return st;
}

int rt_agg_build(struct cg_backend *be, const struct rt_local *loc, int split, int64_t hwidth,
                 struct rt_agg *g) {
  memset(g, 0, sizeof *g);
  g->n_in = loc->n_inner;
  return split ? agg_split(be, loc, hwidth, g) : agg_whole(be, loc, g);
}

/* ---- products ------------------------------------------------------------------- */

int rt_agg_fwd_inner(struct cg_backend *be, const struct rt_agg *g, const float *x, int64_t f,
                     float *y, int (*poll)(void *ctx), void *ctx) {
  if (!g->split) {
    be->spmm(be, g->a, x, f, y, f, f);
    return CG_OK;
  }
  for (int k = 0; k < g->nblk; k++) {
    be->spmm(be, g->a_in[k], x, f, y + g->blk[k] * f, f, f);
    if (poll) TRY(poll(ctx));
  }
  return CG_OK;
}

void rt_agg_fwd_halo(struct cg_backend *be, const struct rt_agg *g, const float *x, int64_t f,
                     float *y, float *hbuf) {
  if (!g->split || g->n_hrows == 0) return;
  be->spmm(be, g->a_h, x + g->n_in * f, f, hbuf, f, f);
  be->scatter_add_rows(be, hbuf, f, g->d_hrows, g->n_hrows, y);
}

void rt_agg_bwd_halo(struct cg_backend *be, const struct rt_agg *g, const float *dy, int64_t f,
                     float *dx) {
  if (!g->split || !g->at_h) return;
  be->spmm(be, g->at_h, dy, f, dx + g->n_in * f, f, f);
}

int rt_agg_bwd_inner(struct cg_backend *be, const struct rt_agg *g, const float *dy, int64_t f,
                     float *dx, int (*poll)(void *ctx), void *ctx) {
  if (!g->split) {
    be->spmm(be, g->at, dy, f, dx, f, f);
    return CG_OK;
  }
  for (int k = 0; k < g->nblk; k++) {
    be->spmm(be, g->at_in[k], dy, f, dx + g->blk[k] * f, f, f);
    if (poll) TRY(poll(ctx));
  }
  return CG_OK;
}

void rt_agg_free(struct cg_backend *be, struct rt_agg *g) {
  if (!g) return;
  if (g->at != g->a) be->spmat_destroy(be, g->at);
  be->spmat_destroy(be, g->a);
  for (int k = 0; g->a_in && g->at_in && k < AGG_MAX_BLOCKS; k++) { /* NULL: never made */
    if (g->at_in[k] != g->a_in[k]) be->spmat_destroy(be, g->at_in[k]);
    be->spmat_destroy(be, g->a_in[k]);
  }
  cg_free(g->a_in);
  cg_free(g->at_in);
  cg_free(g->blk);
  be->spmat_destroy(be, g->a_h);
  be->spmat_destroy(be, g->at_h);
  be->free(be, g->d_hrows);
  be->free(be, g->hbuf);
  memset(g, 0, sizeof *g);
}
