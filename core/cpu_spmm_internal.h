/* core/cpu_spmm_internal.h — the CPU backend's sparse matrices and SpMM kernels (private to
 * core/: cpu_backend.c wires them into the op table).
 *
 * Two layouts, chosen at creation (cpu_spmm.c has the measurements behind them):
 * - CSR: rows split among threads by nnz, each row accumulates up to 64 output
 *   columns in registers while walking its nonzeros.
 * - Tiled: rows and columns are cut into blocks of `tb` (default 1024). A (row
 *   block, column block) tile holding at least CPU_TILE_REUSE * tb nonzeros is
 *   "dense": its source rows are reused so often that the tile is worth processing
 *   on its own, 64 output columns at a time, while the 64-column slice of its
 *   source rows stays in L2 (uint16 column offsets; each slice of X is first
 *   packed into contiguous 256-byte rows, which the L2 can hold without set
 *   conflicts). The remaining "far" nonzeros are pushed by source: groups of
 *   8 * tb rows, each group's nonzeros sorted by column, 32 columns at a time (16
 *   for a last pass of 16 or fewer) from a contiguous copy of that panel of X into a
 *   per-thread group buffer. Each
 *   output element is the far part (in column order) plus the dense tiles in
 *   column-block order: a fixed order, so results do not depend on the thread
 *   count. When the matrix carries factors that reproduce its values (core/csr.h:
 *   row_scale, col_scale), the tiled layout stores the pattern only and scales X
 *   as it copies it and each sum as it adds it to Y.
 *
 * CAPGNN_CPU_SPMM=auto (default) | csr | tiled picks the layout (auto: tiled when the
 * matrix is large and at least a quarter of its nonzeros sit in dense tiles; tiled:
 * whenever any tile is dense). CAPGNN_CPU_SPMM_TILE=N sets tb (16..65536).
 * CAPGNN_CPU_SPMM_PANEL=16 makes every pass of the far part 16 columns wide (default 32;
 * the results are the same bits either way). */
#ifndef CAPGNN_CORE_CPU_SPMM_INTERNAL_H
#define CAPGNN_CORE_CPU_SPMM_INTERNAL_H

#include <stdint.h>

#include "core/csr.h"

struct cg_spmat;

/* Scratch of the tiled products, shared by every matrix of a backend (its ops run one
 * at a time): one packed slice of X (ncols x 64 floats), one panel of X (ncols x 32)
 * and the per-thread group buffers. Each matrix used to own its own: on
 * synth:products at full size, P = 4, a rank's 8 inner row blocks of ~0.61 M columns
 * held 8 x 195 MB, all of it written by every product. Grown by cpu_spmm_ws_reserve
 * when a matrix is built (set-up), never inside a product. */
struct cpu_spmm_ws {
  float *xpanel, *xpack, *ygroup;
  int64_t cols;          /* columns xpanel and xpack hold */
  int64_t ygroup_floats; /* floats ygroup holds */
};

/* Grows ws to what products with `a` need (a no-op for a CSR matrix). */
int cpu_spmm_ws_reserve(struct cpu_spmm_ws *ws, const struct cg_spmat *a);
void cpu_spmm_ws_free(struct cpu_spmm_ws *ws);
/* Whether ws holds what products with `a` need. */
int cpu_spmm_ws_fits(const struct cpu_spmm_ws *ws, const struct cg_spmat *a);

/* Checks `host` and builds the backend copy for `nthreads` threads. */
/* The CAPGNN_CPU_SPMM* settings as cpu_spmat_build reads them: CG_ERR_ARG when one is bad. */
int cpu_spmm_env_check(void);
int cpu_spmat_build(const struct cg_csr *host, int nthreads, struct cg_spmat **out);
void cpu_spmat_free(struct cg_spmat *a); /* accepts NULL */
/* Dense tiles of the matrix (0: CSR layout) and the nonzeros they hold. */
int64_t cpu_spmat_tiles(const struct cg_spmat *a, int64_t *tile_nnz);
/* Whether the tiled layout computes with the matrix's factors instead of its values
 * (core/csr.h: row_scale / col_scale given and reproducing every value). */
int cpu_spmat_factored(const struct cg_spmat *a);
/* Y[nrows x f] = A X, overwriting Y; avx2 selects the AVX2+FMA kernels; ws is
 * reserved for a (cpu_spmm_ws_reserve). */
void cpu_spmm_run(const struct cg_spmat *a, int avx2, const struct cpu_spmm_ws *ws, const float *x,
                  int64_t ldx, float *y, int64_t ldy, int64_t f);

#endif
