/* cuda/spmm_tiles_internal.h — private: the tiled layout of a sparse matrix for the CUDA
 * "tiled" SpMM (cuda/spmm_tiled.cu), built on the host (cuda/spmm_tiles.c, plain C:
 * testable without a GPU).
 *
 * Why. On the H100 the warp-per-row kernel gathers every neighbour row from L2 (or
 * HBM): a 256-wide product over synth:reddit moves ~117 GB of rows and is bound by
 * the L2's bandwidth. A clustered graph puts most nonzeros in few (row block,
 * column block) tiles: for synth:reddit, 256 x 256 tiles holding >= 4 x 256
 * nonzeros carry 77 % of them and use each source row ~11.6 times. The tiled
 * kernel stages such a tile's source rows (one column slice of X) in shared memory
 * once and reads them from there, so those nonzeros cost shared-memory bandwidth
 * instead of L2 bandwidth.
 *
 * Layout. Rows are cut into blocks of CGK_TILE_ROWS, columns into blocks of
 * CGK_TILE_COLS; a tile (row block, column block) is dense when it holds at least
 * min_reuse * CGK_TILE_COLS nonzeros of rows that are not heavy (degree <=
 * skip_degree). The nonzeros of dense tiles are stored per tile; all others (and
 * every nonzero of a heavy row) form the "far" CSR, computed by the warp-per-row
 * kernel first; the tiled kernel then adds the tiles' sums to Y.
 * Inside a row block the CGK_TILE_ROWS rows are dealt to slots: warp w of the
 * kernel's block owns slots w*CGK_TILE_ROWS_PER_WARP .. +CGK_TILE_ROWS_PER_WARP-1
 * and keeps one accumulator per slot. Rows are dealt longest-first to the warp with
 * the fewest tile nonzeros so far (slots that get no row hold CGK_TILE_NO_ROW), so
 * the warps of a block finish a tile at about the same time.
 * Per tile, tile_rowptr gives each slot's segment (offsets from tile_edge[tile])
 * in slot order; t_off holds column - tile_col * CGK_TILE_COLS. Every segment is
 * padded to a multiple of CGK_TILE_GROUP entries with CGK_TILE_PAD_OFF (a row of
 * zeros the kernel keeps after the staged rows; value 0 when valued), so the
 * kernel reads CGK_TILE_GROUP offsets and rows at a time with no remainder loop
 * (synth:reddit: 14 % more entries, each a zero added).
 * Factored: when the matrix has row_scale / col_scale that reproduce every tile
 * value to 1e-5 relative (core/csr.h), or has no values at all (all ones, factors
 * of 1), t_val is NULL: the kernel scales X by col_scale when it stages it and the
 * tile sum by row_scale. The far part always keeps its values. */
#ifndef CAPGNN_CUDA_SPMM_TILES_INTERNAL_H
#define CAPGNN_CUDA_SPMM_TILES_INTERNAL_H

#include <stdint.h>

#include "core/csr.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CGK_TILE_ROWS 256 /* rows per row block */
#define CGK_TILE_COLS 256 /* source rows (columns of A) per tile */
#define CGK_TILE_WARPS 32 /* warps of the tiled kernel's block */
#define CGK_TILE_ROWS_PER_WARP (CGK_TILE_ROWS / CGK_TILE_WARPS)
#define CGK_TILE_NO_ROW 0xFFFFu
#define CGK_TILE_GROUP 4                /* segment lengths are multiples of this */
#define CGK_TILE_PAD_OFF CGK_TILE_COLS /* t_off of a padding entry: the zero row */

struct cgk_tile_params {
  double min_reuse;    /* a dense tile holds >= min_reuse * CGK_TILE_COLS nonzeros */
  int64_t skip_degree; /* rows with more nonzeros stay whole in the far part */
  double min_share;    /* no tiles unless they hold >= this share of the nonzeros */
};

struct cgk_tiles_host {
  int64_t nrows, ncols, nrb, ntiles;
  int64_t tile_nnz;     /* nonzeros of A in the tiles */
  int64_t tile_len;     /* entries stored: tile_nnz plus the padding */
  int64_t *rb_tile;     /* nrb + 1: first tile of each row block */
  int32_t *tile_col;    /* ntiles: column block of each tile */
  int64_t *tile_edge;   /* ntiles + 1: first entry of each tile in t_off / t_val */
  int32_t *tile_rowptr; /* ntiles x (CGK_TILE_ROWS + 1): slot segments, from tile_edge */
  uint16_t *perm;       /* nrb x CGK_TILE_ROWS: local row of each slot, or CGK_TILE_NO_ROW */
  uint16_t *t_off;      /* tile_len */
  float *t_val;         /* tile_len; NULL when factored */
  float *row_scale;     /* factored: nrows, ncols (copies; ones for a matrix */
  float *col_scale;     /*   without values) */
  struct cg_csr far;    /* nrows x ncols, the other nonzeros, values as in the matrix */
};

/* Build the layout of `a` (a checked CSR). When fewer than p->min_share of the
 * nonzeros fall in dense tiles, t is left with ntiles == 0 and nothing allocated
 * (the caller uses the plain kernels). Returns CG_OK or CG_ERR_NOMEM / CG_ERR_ARG
 * (bad parameters, or a shape the layout cannot index: ncols >= 2^31). */
int cgk_tiles_build(const struct cg_csr *a, const struct cgk_tile_params *p,
                    struct cgk_tiles_host *t);
void cgk_tiles_free(struct cgk_tiles_host *t); /* accepts a zeroed struct; leaves it zeroed */

/* Invariant checker: every array consistent with the shape (offsets monotone and
 * in range, each row in exactly one slot of its block, tile columns ascending).
 * CG_ERR_INTERNAL with a message naming the first violation. */
int cgk_tiles_check(const struct cgk_tiles_host *t);

/* The product the CUDA kernels compute, on the host, in their order: Y = far * X
 * (row by row), then for each row block and tile in order, each slot's segment
 * summed into a per-row accumulator (x scaled by col_scale when factored), added to
 * Y (times row_scale when factored). Y[nrows x f] with stride ldy; X[ncols x f]. */
void cgk_tiles_spmm_host(const struct cgk_tiles_host *t, const float *x, int64_t ldx, float *y,
                         int64_t ldy, int64_t f);

#ifdef __cplusplus
}
#endif
#endif
