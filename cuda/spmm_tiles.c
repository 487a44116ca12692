/* cuda/spmm_tiles.c — host construction of the tiled SpMM layout (cuda/spmm_tiles_internal.h).
 *
 * Two passes over the row blocks, each block independent (OpenMP over blocks):
 * 1. count the nonzeros of each column block among the block's non-heavy rows,
 *    pick the dense tiles, count each row's far nonzeros and the block's tile
 *    nonzeros; prefix sums then place every block's tiles and every row's far part;
 * 2. recount (same rule, same result), deal rows to slots, count each slot's
 *    segment per tile (padded to CGK_TILE_GROUP), then copy the nonzeros: tile
 *    nonzeros in slot order, each segment's padding after it, far nonzeros in the
 *    row's column order.
 * The result depends only on the matrix and the parameters, never on threads. */
#include "cuda/spmm_tiles_internal.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

static inline int64_t pad_group(int64_t n) {
  return (n + CGK_TILE_GROUP - 1) / CGK_TILE_GROUP * CGK_TILE_GROUP;
}

static inline int64_t rows_in_block(int64_t nrows, int64_t rb) {
  int64_t r0 = rb * CGK_TILE_ROWS, r1 = r0 + CGK_TILE_ROWS;
  return (r1 < nrows ? r1 : nrows) - r0;
}

struct row_weight {
  int64_t w; /* tile nonzeros of the row */
  int32_t row;
};

/* Per-thread scratch, sized by the number of column blocks. */
struct tile_scratch {
  int64_t *cnt;   /* ncb: nonzeros per column block */
  int32_t *tmap;  /* ncb: local tile index of a dense column block, else -1 */
  int64_t *cur;   /* ncb: fill cursor per local tile */
  int32_t *list;  /* ncb: dense column blocks, ascending */
  int64_t wdeg[CGK_TILE_ROWS];
  struct row_weight order[CGK_TILE_ROWS];
};

static int scratch_init(struct tile_scratch *s, int64_t ncb) {
  size_t n = (size_t)(ncb > 0 ? ncb : 1);
  s->cnt = cg_calloc(n, sizeof *s->cnt, "SpMM tile counts");
  s->tmap = cg_malloc(n * sizeof *s->tmap, "SpMM tile map");
  s->cur = cg_malloc(n * sizeof *s->cur, "SpMM tile cursors");
  s->list = cg_malloc(n * sizeof *s->list, "SpMM tile list");
  if (!s->cnt || !s->tmap || !s->cur || !s->list) return CG_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) s->tmap[i] = -1;
  return CG_OK;
}

static void scratch_free(struct tile_scratch *s) {
  cg_free(s->cnt);
  cg_free(s->tmap);
  cg_free(s->cur);
  cg_free(s->list);
  memset(s, 0, sizeof *s);
}

/* Dense column blocks of row block rb (ascending) into s->list; returns how many
 * and leaves s->cnt zeroed. The same inputs always give the same list. */
static int64_t scan_block(const struct cg_csr *a, const struct cgk_tile_params *p, int64_t rb,
                          struct tile_scratch *s) {
  const int64_t r0 = rb * CGK_TILE_ROWS, r1 = r0 + rows_in_block(a->nrows, rb);
  const int64_t ncb = (a->ncols + CGK_TILE_COLS - 1) / CGK_TILE_COLS;
  const double need = p->min_reuse * CGK_TILE_COLS;
  for (int64_t r = r0; r < r1; r++) {
    if (a->rowptr[r + 1] - a->rowptr[r] > p->skip_degree) continue;
    for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) s->cnt[a->colidx[k] / CGK_TILE_COLS]++;
  }
  int64_t n = 0;
  for (int64_t cb = 0; cb < ncb; cb++) {
    if (s->cnt[cb] > 0 && (double)s->cnt[cb] >= need) s->list[n++] = (int32_t)cb;
    s->cnt[cb] = 0;
  }
  return n;
}

/* Deal the block's rows with tile nonzeros to slots: longest first, each to the
 * warp with the fewest tile nonzeros so far that still has a free slot (ties: the
 * lower row, the lower warp). perm[0..CGK_TILE_ROWS) gets the local rows. */
static int cmp_order(const void *pa, const void *pb) {
  const struct row_weight *a = pa, *b = pb;
  if (a->w != b->w) return a->w > b->w ? -1 : 1;
  return a->row < b->row ? -1 : (a->row > b->row);
}

static void deal_slots(struct tile_scratch *s, int64_t nr, uint16_t *perm) {
  int64_t load[CGK_TILE_WARPS] = {0};
  int fill[CGK_TILE_WARPS] = {0};
  int n = 0;
  for (int64_t i = 0; i < nr; i++)
    if (s->wdeg[i] > 0) s->order[n++] = (struct row_weight){s->wdeg[i], (int32_t)i};
  qsort(s->order, (size_t)n, sizeof s->order[0], cmp_order);
  for (int i = 0; i < CGK_TILE_ROWS; i++) perm[i] = (uint16_t)CGK_TILE_NO_ROW;
  for (int i = 0; i < n; i++) {
    int best = -1;
    for (int w = 0; w < CGK_TILE_WARPS; w++)
      if (fill[w] < CGK_TILE_ROWS_PER_WARP && (best < 0 || load[w] < load[best])) best = w;
    perm[best * CGK_TILE_ROWS_PER_WARP + fill[best]++] = (uint16_t)s->order[i].row;
    load[best] += s->order[i].w;
  }
}

void cgk_tiles_free(struct cgk_tiles_host *t) {
  if (!t) return;
  cg_free(t->rb_tile);
  cg_free(t->tile_col);
  cg_free(t->tile_edge);
  cg_free(t->tile_rowptr);
  cg_free(t->perm);
  cg_free(t->t_off);
  cg_free(t->t_val);
  cg_free(t->row_scale);
  cg_free(t->col_scale);
  cg_csr_free(&t->far);
  memset(t, 0, sizeof *t);
}

/* Pass 2 for row block rb: slots, tile segments, tile and far nonzeros. Returns the
 * number of tile values that row_scale * col_scale does not reproduce to 1e-5. */
static int64_t fill_block(const struct cg_csr *a, const struct cgk_tile_params *p, int64_t rb,
                          const int64_t *len_before, struct tile_scratch *s,
                          struct cgk_tiles_host *t) {
  const int64_t r0 = rb * CGK_TILE_ROWS, nr = rows_in_block(a->nrows, rb);
  const int64_t nt = scan_block(a, p, rb, s), t0 = t->rb_tile[rb];
  const int check_factors = a->vals && a->row_scale && a->col_scale;
  int64_t bad = 0;
  for (int64_t i = 0; i < nt; i++) {
    s->tmap[s->list[i]] = (int32_t)i;
    t->tile_col[t0 + i] = s->list[i];
  }
  /* tile nonzeros per row (rows above skip_degree have none) */
  for (int64_t i = 0; i < nr; i++) {
    const int64_t r = r0 + i;
    s->wdeg[i] = 0;
    if (a->rowptr[r + 1] - a->rowptr[r] > p->skip_degree) continue;
    for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++)
      s->wdeg[i] += s->tmap[a->colidx[k] / CGK_TILE_COLS] >= 0;
  }
  uint16_t *perm = t->perm + rb * CGK_TILE_ROWS;
  deal_slots(s, nr, perm);
  /* segment lengths per (tile, slot), then offsets; tile_edge of the block's tiles */
  int32_t *rp0 = t->tile_rowptr + t0 * (CGK_TILE_ROWS + 1);
  memset(rp0, 0, (size_t)nt * (CGK_TILE_ROWS + 1) * sizeof *rp0);
  for (int sl = 0; sl < CGK_TILE_ROWS; sl++) {
    if (perm[sl] == CGK_TILE_NO_ROW) continue;
    const int64_t r = r0 + perm[sl];
    for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) {
      int32_t tl = s->tmap[a->colidx[k] / CGK_TILE_COLS];
      if (tl >= 0) rp0[tl * (CGK_TILE_ROWS + 1) + sl + 1]++;
    }
  }
  int64_t edge = len_before[rb];
  for (int64_t i = 0; i < nt; i++) {
    int32_t *rp = rp0 + i * (CGK_TILE_ROWS + 1);
    for (int sl = 0; sl < CGK_TILE_ROWS; sl++) rp[sl + 1] = rp[sl] + (int32_t)pad_group(rp[sl + 1]);
    t->tile_edge[t0 + i] = edge;
    s->cur[i] = edge;
    edge += rp[CGK_TILE_ROWS];
  }
  /* tile nonzeros in slot order (segments of a tile are consecutive in slot order,
   * so one cursor per tile fills them in place) */
  for (int sl = 0; sl < CGK_TILE_ROWS; sl++) {
    if (perm[sl] == CGK_TILE_NO_ROW) continue;
    const int64_t r = r0 + perm[sl];
    for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) {
      const int32_t c = a->colidx[k];
      const int32_t tl = s->tmap[c / CGK_TILE_COLS];
      if (tl < 0) continue;
      const int64_t e = s->cur[tl]++;
      t->t_off[e] = (uint16_t)(c - s->list[tl] * CGK_TILE_COLS);
      if (t->t_val) {
        t->t_val[e] = a->vals[k];
        if (check_factors) {
          double f = (double)a->row_scale[r] * (double)a->col_scale[c];
          if (!(fabs(f - (double)a->vals[k]) <= 1e-5 * fabs((double)a->vals[k]))) bad++;
        }
      }
    }
    /* pad this slot's segment of every tile to its end */
    for (int64_t i = 0; i < nt; i++) {
      const int64_t end = t->tile_edge[t0 + i] + rp0[i * (CGK_TILE_ROWS + 1) + sl + 1];
      for (int64_t e = s->cur[i]; e < end; e++) {
        t->t_off[e] = CGK_TILE_PAD_OFF;
        if (t->t_val) t->t_val[e] = 0.0f;
      }
      s->cur[i] = end;
    }
  }
  /* far nonzeros: everything of a heavy row, the rest outside dense tiles */
  for (int64_t i = 0; i < nr; i++) {
    const int64_t r = r0 + i;
    const int heavy = a->rowptr[r + 1] - a->rowptr[r] > p->skip_degree;
    int64_t e = t->far.rowptr[r];
    for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) {
      const int32_t c = a->colidx[k];
      if (!heavy && s->tmap[c / CGK_TILE_COLS] >= 0) continue;
      t->far.colidx[e] = c;
      if (a->vals) t->far.vals[e] = a->vals[k];
      e++;
    }
  }
  for (int64_t i = 0; i < nt; i++) s->tmap[s->list[i]] = -1;
  return bad;
}

int cgk_tiles_build(const struct cg_csr *a, const struct cgk_tile_params *p,
                    struct cgk_tiles_host *t) {
  memset(t, 0, sizeof *t);
  if (!(p->min_reuse > 0.0) || p->skip_degree < 0 || !(p->min_share >= 0.0))
    return cg_err_set(CG_ERR_ARG, "tiled SpMM: bad parameters (min_reuse %g, skip_degree %lld, "
                      "min_share %g)", p->min_reuse, (long long)p->skip_degree, p->min_share);
  if (a->ncols >= INT32_MAX || a->nrows >= INT32_MAX)
    return cg_err_set(CG_ERR_ARG, "tiled SpMM: matrix %lld x %lld is too large for the layout",
                      (long long)a->nrows, (long long)a->ncols);
  if (a->nrows == 0 || a->nnz == 0) return CG_OK;
  const int64_t nrb = (a->nrows + CGK_TILE_ROWS - 1) / CGK_TILE_ROWS;
  const int64_t ncb = (a->ncols + CGK_TILE_COLS - 1) / CGK_TILE_COLS;
  int nth = omp_get_max_threads();
  int st = CG_OK;
  struct tile_scratch *sc = cg_calloc((size_t)nth, sizeof *sc, "SpMM tile scratch");
  int64_t *rb_nt = cg_calloc((size_t)nrb + 1, sizeof *rb_nt, "SpMM tiles per row block");
  int64_t *rb_nnz = cg_calloc((size_t)nrb + 1, sizeof *rb_nnz, "SpMM tile nonzeros per row block");
  int64_t *rb_len = cg_calloc((size_t)nrb + 1, sizeof *rb_len, "SpMM tile entries per row block");
  int64_t *far_deg = cg_calloc((size_t)a->nrows + 1, sizeof *far_deg, "SpMM far degrees");
  if (!sc || !rb_nt || !rb_nnz || !rb_len || !far_deg) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  for (int i = 0; i < nth; i++)
    if (scratch_init(&sc[i], ncb) != CG_OK) st = CG_ERR_NOMEM;
  if (st != CG_OK) goto done;

  /* pass 1: tiles, tile nonzeros and far degrees */
#pragma omp parallel for schedule(dynamic, 4)
  for (int64_t rb = 0; rb < nrb; rb++) {
    struct tile_scratch *s = &sc[omp_get_thread_num()];
    const int64_t nt = scan_block(a, p, rb, s);
    for (int64_t i = 0; i < nt; i++) s->tmap[s->list[i]] = 1;
    const int64_t r0 = rb * CGK_TILE_ROWS, r1 = r0 + rows_in_block(a->nrows, rb);
    int64_t in_tiles = 0, stored = 0;
    for (int64_t r = r0; r < r1; r++) {
      const int64_t deg = a->rowptr[r + 1] - a->rowptr[r];
      int64_t near = 0;
      if (deg <= p->skip_degree) {
        for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) {
          const int64_t cb = a->colidx[k] / CGK_TILE_COLS;
          if (s->tmap[cb] >= 0) near++, s->cnt[cb]++;
        }
        /* the row's segment in each of its tiles, padded (s->cnt back to zero) */
        for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) {
          const int64_t cb = a->colidx[k] / CGK_TILE_COLS;
          stored += pad_group(s->cnt[cb]);
          s->cnt[cb] = 0;
        }
      }
      far_deg[r] = deg - near;
      in_tiles += near;
    }
    for (int64_t i = 0; i < nt; i++) s->tmap[s->list[i]] = -1;
    rb_nt[rb] = nt;
    rb_nnz[rb] = in_tiles;
    rb_len[rb] = stored;
  }
  int64_t ntiles = 0, tile_nnz = 0, tile_len = 0;
  for (int64_t rb = 0; rb < nrb; rb++) {
    int64_t nt = rb_nt[rb], len = rb_len[rb];
    rb_nt[rb] = ntiles;
    rb_len[rb] = tile_len;
    ntiles += nt;
    tile_nnz += rb_nnz[rb];
    tile_len += len;
  }
  if (ntiles == 0 || (double)tile_nnz < p->min_share * (double)a->nnz) goto done; /* not worth it */

  t->nrows = a->nrows;
  t->ncols = a->ncols;
  t->nrb = nrb;
  t->ntiles = ntiles;
  t->tile_nnz = tile_nnz;
  t->tile_len = tile_len;
  t->rb_tile = cg_malloc((size_t)(nrb + 1) * sizeof *t->rb_tile, "SpMM row-block tiles");
  t->tile_col = cg_malloc((size_t)ntiles * sizeof *t->tile_col, "SpMM tile columns");
  t->tile_edge = cg_malloc((size_t)(ntiles + 1) * sizeof *t->tile_edge, "SpMM tile offsets");
  t->tile_rowptr = cg_malloc((size_t)ntiles * (CGK_TILE_ROWS + 1) * sizeof *t->tile_rowptr,
                             "SpMM tile segments");
  t->perm = cg_malloc((size_t)nrb * CGK_TILE_ROWS * sizeof *t->perm, "SpMM tile slots");
  t->t_off = cg_malloc((size_t)tile_len * sizeof *t->t_off, "SpMM tile columns per nonzero");
  if (a->vals) t->t_val = cg_malloc((size_t)tile_len * sizeof *t->t_val, "SpMM tile values");
  if (!t->rb_tile || !t->tile_col || !t->tile_edge || !t->tile_rowptr || !t->perm || !t->t_off ||
      (a->vals && !t->t_val)) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  memcpy(t->rb_tile, rb_nt, (size_t)nrb * sizeof *rb_nt);
  t->rb_tile[nrb] = ntiles;
  t->tile_edge[ntiles] = tile_len;
  int64_t far_nnz = 0;
  for (int64_t r = 0; r < a->nrows; r++) far_nnz += far_deg[r];
  st = cg_csr_alloc(&t->far, a->nrows, a->ncols, far_nnz, a->vals != NULL);
  if (st != CG_OK) goto done;
  for (int64_t r = 0; r < a->nrows; r++) t->far.rowptr[r + 1] = t->far.rowptr[r] + far_deg[r];

  /* pass 2 */
  int64_t bad = 0;
#pragma omp parallel for schedule(dynamic, 4) reduction(+ : bad)
  for (int64_t rb = 0; rb < nrb; rb++)
    bad += fill_block(a, p, rb, rb_len, &sc[omp_get_thread_num()], t);

  /* factored: no values (all ones), or factors that reproduce every tile value */
  if (!a->vals || (a->row_scale && a->col_scale && bad == 0)) {
    t->row_scale = cg_malloc((size_t)a->nrows * sizeof(float), "SpMM tile row scales");
    t->col_scale = cg_malloc((size_t)a->ncols * sizeof(float), "SpMM tile column scales");
    if (!t->row_scale || !t->col_scale) {
      st = CG_ERR_NOMEM;
      goto done;
    }
    for (int64_t r = 0; r < a->nrows; r++) t->row_scale[r] = a->vals ? a->row_scale[r] : 1.0f;
    for (int64_t c = 0; c < a->ncols; c++) t->col_scale[c] = a->vals ? a->col_scale[c] : 1.0f;
    cg_free(t->t_val);
    t->t_val = NULL;
  }
done:
  for (int i = 0; sc && i < nth; i++) scratch_free(&sc[i]);
  cg_free(sc);
  cg_free(rb_nt);
  cg_free(rb_nnz);
  cg_free(rb_len);
  cg_free(far_deg);
  if (st != CG_OK) cgk_tiles_free(t);
  return st;
}

int cgk_tiles_check(const struct cgk_tiles_host *t) {
  if (t->ntiles == 0) return CG_OK;
  const int64_t nrb = (t->nrows + CGK_TILE_ROWS - 1) / CGK_TILE_ROWS;
  const int64_t ncb = (t->ncols + CGK_TILE_COLS - 1) / CGK_TILE_COLS;
  if (t->nrb != nrb)
    return cg_err_set(CG_ERR_INTERNAL, "tiles: %lld row blocks for %lld rows", (long long)t->nrb,
                      (long long)t->nrows);
  if (t->rb_tile[0] != 0 || t->rb_tile[nrb] != t->ntiles || t->tile_edge[0] != 0 ||
      t->tile_edge[t->ntiles] != t->tile_len || t->tile_len < t->tile_nnz)
    return cg_err_set(CG_ERR_INTERNAL, "tiles: bounds of rb_tile / tile_edge are wrong");
  if (t->far.nrows != t->nrows || t->far.ncols != t->ncols)
    return cg_err_set(CG_ERR_INTERNAL, "tiles: far part has the wrong shape");
  TRY(cg_csr_check(&t->far, "tiles: far part"));
  if ((t->t_val == NULL) != (t->row_scale != NULL && t->col_scale != NULL))
    return cg_err_set(CG_ERR_INTERNAL, "tiles: exactly one of values and factors must be set");
  for (int64_t rb = 0; rb < nrb; rb++) {
    if (t->rb_tile[rb + 1] < t->rb_tile[rb])
      return cg_err_set(CG_ERR_INTERNAL, "tiles: rb_tile decreases at block %lld", (long long)rb);
    const int64_t nr = rows_in_block(t->nrows, rb);
    unsigned char seen[CGK_TILE_ROWS] = {0};
    const uint16_t *perm = t->perm + rb * CGK_TILE_ROWS;
    for (int sl = 0; sl < CGK_TILE_ROWS; sl++) {
      if (perm[sl] == CGK_TILE_NO_ROW) continue;
      if (perm[sl] >= nr || seen[perm[sl]]++)
        return cg_err_set(CG_ERR_INTERNAL, "tiles: block %lld slot %d holds row %u (bad or repeated)",
                          (long long)rb, sl, (unsigned)perm[sl]);
    }
    for (int64_t tl = t->rb_tile[rb]; tl < t->rb_tile[rb + 1]; tl++) {
      if (t->tile_col[tl] < 0 || t->tile_col[tl] >= ncb ||
          (tl > t->rb_tile[rb] && t->tile_col[tl] <= t->tile_col[tl - 1]))
        return cg_err_set(CG_ERR_INTERNAL, "tiles: tile %lld column block %d out of order/range",
                          (long long)tl, t->tile_col[tl]);
      const int32_t *rp = t->tile_rowptr + tl * (CGK_TILE_ROWS + 1);
      if (rp[0] != 0 || rp[CGK_TILE_ROWS] != t->tile_edge[tl + 1] - t->tile_edge[tl])
        return cg_err_set(CG_ERR_INTERNAL, "tiles: tile %lld segments do not span its nonzeros",
                          (long long)tl);
      const int64_t base = (int64_t)t->tile_col[tl] * CGK_TILE_COLS;
      for (int sl = 0; sl < CGK_TILE_ROWS; sl++) {
        if (rp[sl + 1] < rp[sl])
          return cg_err_set(CG_ERR_INTERNAL, "tiles: tile %lld segment %d is negative", (long long)tl, sl);
        if (rp[sl + 1] > rp[sl] && perm[sl] == CGK_TILE_NO_ROW)
          return cg_err_set(CG_ERR_INTERNAL, "tiles: tile %lld has nonzeros in empty slot %d",
                            (long long)tl, sl);
        if ((rp[sl + 1] - rp[sl]) % CGK_TILE_GROUP)
          return cg_err_set(CG_ERR_INTERNAL, "tiles: tile %lld segment %d is not a multiple of %d",
                            (long long)tl, sl, CGK_TILE_GROUP);
        int padding = 0; /* padding entries end a segment, fewer than a group of them */
        for (int64_t e = t->tile_edge[tl] + rp[sl]; e < t->tile_edge[tl] + rp[sl + 1]; e++) {
          if (t->t_off[e] == CGK_TILE_PAD_OFF) {
            if (++padding >= CGK_TILE_GROUP || (t->t_val && t->t_val[e] != 0.0f))
              return cg_err_set(CG_ERR_INTERNAL, "tiles: tile %lld segment %d: bad padding",
                                (long long)tl, sl);
            continue;
          }
          if (padding || t->t_off[e] >= CGK_TILE_COLS || base + t->t_off[e] >= t->ncols)
            return cg_err_set(CG_ERR_INTERNAL, "tiles: nonzero %lld has column %lld (of %lld)%s",
                              (long long)e, (long long)(base + t->t_off[e]), (long long)t->ncols,
                              padding ? " after padding" : "");
        }
      }
    }
  }
  return CG_OK;
}

void cgk_tiles_spmm_host(const struct cgk_tiles_host *t, const float *x, int64_t ldx, float *y,
                         int64_t ldy, int64_t f) {
  const struct cg_csr *fa = &t->far;
  for (int64_t r = 0; r < fa->nrows; r++) {
    float *yr = y + r * ldy;
    for (int64_t c = 0; c < f; c++) yr[c] = 0.0f;
    for (int64_t k = fa->rowptr[r]; k < fa->rowptr[r + 1]; k++) {
      const float v = fa->vals ? fa->vals[k] : 1.0f;
      const float *xr = x + (int64_t)fa->colidx[k] * ldx;
      for (int64_t c = 0; c < f; c++) yr[c] += v * xr[c];
    }
  }
  if (t->ntiles == 0) return;
  float *acc = cg_malloc((size_t)CGK_TILE_ROWS * (size_t)f * sizeof(float), "tile reference sums");
  if (!acc) return; /* test helper: the caller's comparison then fails */
  for (int64_t rb = 0; rb < t->nrb; rb++) {
    memset(acc, 0, (size_t)CGK_TILE_ROWS * (size_t)f * sizeof(float));
    for (int64_t tl = t->rb_tile[rb]; tl < t->rb_tile[rb + 1]; tl++) {
      const int32_t *rp = t->tile_rowptr + tl * (CGK_TILE_ROWS + 1);
      const int64_t base = (int64_t)t->tile_col[tl] * CGK_TILE_COLS;
      for (int sl = 0; sl < CGK_TILE_ROWS; sl++)
        for (int64_t e = t->tile_edge[tl] + rp[sl]; e < t->tile_edge[tl] + rp[sl + 1]; e++) {
          if (t->t_off[e] == CGK_TILE_PAD_OFF) continue; /* the kernel adds a zero */
          const int64_t c = base + t->t_off[e];
          const float *xr = x + c * ldx;
          for (int64_t j = 0; j < f; j++)
            acc[sl * f + j] += t->t_val ? t->t_val[e] * xr[j] : xr[j] * t->col_scale[c];
        }
    }
    for (int sl = 0; sl < CGK_TILE_ROWS; sl++) {
      const uint16_t lr = t->perm[rb * CGK_TILE_ROWS + sl];
      if (lr == CGK_TILE_NO_ROW) continue;
      const int64_t r = rb * CGK_TILE_ROWS + lr;
      for (int64_t j = 0; j < f; j++)
        y[r * ldy + j] += t->t_val ? acc[sl * f + j] : t->row_scale[r] * acc[sl * f + j];
    }
  }
  cg_free(acc);
}
