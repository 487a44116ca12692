/* core/cpu_spmm.c — CPU sparse matrices and SpMM (layouts described in cpu_spmm_internal.h).
 *
 * Why tiles. On the 2-core development VM (32 MiB L3 on paper, but a dependent-load
 * test sees ~150 ns beyond 2 MiB: the L3 is shared with other tenants) a 256-wide
 * SpMM over synth:reddit gathers 117 GB of source rows and is bound by DRAM at
 * ~21-28 GB/s. Most nonzeros of a clustered graph fall in few (row block, column
 * block) tiles: for synth:reddit with tb = 1024, 77 % of them sit in 2,122 tiles
 * that reuse each source row ~40 times. Processing such a tile 64 columns at a time
 * keeps its 1024 x 256-byte source slice and the 1024 x 256-byte output slice in
 * L2, so those gathers stop going to DRAM. The far 23 % are pushed by source
 * (build_push) so that they read X panel by panel in order instead of at random. */
#include "core/cpu_spmm_internal.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/status.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SPMM_HAVE_AVX2 1
#define SPMM_AVX2 __attribute__((target("avx2,fma")))
#else
#define SPMM_HAVE_AVX2 0
#endif

#define CPU_TILE_DEFAULT 1024 /* rows and columns per block */
#define CPU_TILE_REUSE 8      /* dense tile: >= 8 * tb nonzeros (each source row ~8 uses) */
#define CPU_TILE_MIN_BLOCKS 16 /* auto: tiles only when both sides have >= 16 blocks */
#define SPMM_COLS 64          /* output columns per register block (8 AVX2 vectors) */
#define SPMM_PANEL 16         /* columns per narrow pass of the far part (a cache line a row) */
#define SPMM_PANEL_WIDE 32    /* columns per pass of the far part (default; two lines a row) */
#define CPU_FAR_GROUP_TILES 8 /* far rows per group when the L2's size is not known */
#define CPU_FAR_GROUP_MAX 65536 /* f_dst is uint16 */
#define SPMM_FAR_AHEAD 32       /* far nonzeros prefetched ahead (push_group_avx2_nv) */

struct cg_spmat {
  int64_t nrows, ncols, nnz;
  /* CSR of all nonzeros (untiled); tiled: rowptr of the far nonzeros only, their
   * colidx/vals are freed once build_push has grouped them */
  int64_t *rowptr;
  int32_t *colidx;
  float *vals; /* NULL: every value is 1 (the kernels then skip the multiply) */
  int nparts;
  int64_t *part; /* nparts + 1 row bounds (on row-block bounds when tiled) */
  /* tiles (tb == 0: untiled) */
  int64_t tb, nrb, ntiles;
  int64_t *rb_tile;     /* nrb + 1: first tile of each row block */
  int32_t *tile_src;    /* column block of each tile */
  int64_t *tile_edge;   /* first nonzero of each tile in t_off / t_val */
  int32_t *tile_rowptr; /* ntiles x (tb + 1): row offsets within the tile */
  uint16_t *t_off;      /* column - tile_src * tb */
  float *t_val;         /* NULL when vals is NULL */
  /* far nonzeros of a tiled matrix, pushed by source: groups of gr rows, each
   * group's nonzeros sorted by column (stable), processed pw columns at a time
   * from a contiguous copy of that panel of X into a per-thread group buffer */
  int64_t gr, ngroups;
  int pw;               /* columns per pass: SPMM_PANEL_WIDE, or SPMM_PANEL (env) */
  int64_t *grp_edge;    /* ngroups + 1 */
  int32_t *f_src;       /* column */
  uint16_t *f_dst;      /* row - group * gr */
  float *f_val;         /* NULL when vals is NULL */
  /* factored (tiled only, from the matrix's row_scale / col_scale): the tiles and the
   * far part hold the pattern only; X is scaled by cs as it is copied into xpanel and
   * xpack, and each sum by rs as it is added to Y. No value is streamed per nonzero. */
  float *rs, *cs;
  /* the products' scratch is the backend's (struct cpu_spmm_ws): xpanel, ncols x
   * pw, one panel of X for the far part; xpack, ncols x SPMM_COLS, one packed
   * slice of X for the tiles; ygroup, nparts x gr x pw */
};

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

void cpu_spmat_free(struct cg_spmat *a) {
  if (!a) return;
  cg_free(a->rowptr);
  cg_free(a->colidx);
  cg_free(a->vals);
  cg_free(a->part);
  cg_free(a->rb_tile);
  cg_free(a->tile_src);
  cg_free(a->tile_edge);
  cg_free(a->tile_rowptr);
  cg_free(a->t_off);
  cg_free(a->t_val);
  cg_free(a->grp_edge);
  cg_free(a->f_src);
  cg_free(a->f_dst);
  cg_free(a->f_val);
  cg_free(a->rs);
  cg_free(a->cs);
  cg_free(a);
}

int cpu_spmm_ws_reserve(struct cpu_spmm_ws *ws, const struct cg_spmat *a) {
  if (!a->tb) return CG_OK;
  const int64_t cols = a->ncols > 0 ? a->ncols : 1, yg = (int64_t)a->nparts * a->gr * a->pw;
  if (cols > ws->cols) { /* the contents do not outlive a product: no copy */
    cg_free(ws->xpanel);
    cg_free(ws->xpack);
    /* (room for the wide panel whatever a's: ws->cols is the one size it records) */
    ws->xpanel = cg_malloc((size_t)cols * SPMM_PANEL_WIDE * sizeof(float), "SpMM panel of X");
    ws->xpack = cg_malloc((size_t)cols * SPMM_COLS * sizeof(float), "SpMM packed slice of X");
    ws->cols = ws->xpanel && ws->xpack ? cols : 0;
    if (!ws->cols) return CG_ERR_NOMEM;
  }
  if (yg > ws->ygroup_floats) {
    cg_free(ws->ygroup);
    ws->ygroup = cg_malloc((size_t)yg * sizeof(float), "SpMM far group buffers");
    ws->ygroup_floats = ws->ygroup ? yg : 0;
    if (!ws->ygroup) return CG_ERR_NOMEM;
  }
  return CG_OK;
}

int cpu_spmm_ws_fits(const struct cpu_spmm_ws *ws, const struct cg_spmat *a) {
  return !a->tb || (ws->cols >= a->ncols && ws->ygroup_floats >= (int64_t)a->nparts * a->gr * a->pw);
}

void cpu_spmm_ws_free(struct cpu_spmm_ws *ws) {
  if (!ws) return;
  cg_free(ws->xpanel);
  cg_free(ws->xpack);
  cg_free(ws->ygroup);
  memset(ws, 0, sizeof *ws);
}

int cpu_spmat_factored(const struct cg_spmat *a) { return a->rs != NULL; }

int64_t cpu_spmat_tiles(const struct cg_spmat *a, int64_t *tile_nnz) {
  if (tile_nnz) *tile_nnz = a->ntiles ? a->tile_edge[a->ntiles - 1] +
                                            a->tile_rowptr[(a->ntiles - 1) * (a->tb + 1) + a->tb]
                                      : 0;
  return a->ntiles;
}

/* ------------------------------------------------------------------------ */
/* construction                                                             */
/* ------------------------------------------------------------------------ */

enum spmm_layout { LAYOUT_AUTO, LAYOUT_CSR, LAYOUT_TILED };

static int layout_from_env(enum spmm_layout *lay, int64_t *tb, int *pw, int64_t *group) {
  const char *s = getenv("CAPGNN_CPU_SPMM");
  *lay = LAYOUT_AUTO;
  if (s && *s) {
    if (strcmp(s, "auto") == 0) *lay = LAYOUT_AUTO;
    else if (strcmp(s, "csr") == 0) *lay = LAYOUT_CSR;
    else if (strcmp(s, "tiled") == 0) *lay = LAYOUT_TILED;
    else
      return cg_err_set(CG_ERR_ARG, "CAPGNN_CPU_SPMM=%s: expected auto, csr or tiled", s);
  }
  *tb = CPU_TILE_DEFAULT;
  s = getenv("CAPGNN_CPU_SPMM_TILE");
  if (s && *s) {
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (*end || v < 16 || v > 65536)
      return cg_err_set(CG_ERR_ARG, "CAPGNN_CPU_SPMM_TILE=%s: expected an integer in 16..65536", s);
    *tb = v;
  }
  *pw = SPMM_PANEL_WIDE; /* (why: build_push) */
  s = getenv("CAPGNN_CPU_SPMM_PANEL");
  if (s && *s) {
    if (strcmp(s, "16") == 0) *pw = SPMM_PANEL;
    else if (strcmp(s, "32") == 0) *pw = SPMM_PANEL_WIDE;
    else return cg_err_set(CG_ERR_ARG, "CAPGNN_CPU_SPMM_PANEL=%s: expected 16 or 32", s);
  }
  *group = 0; /* (0: far_group_rows decides) */
  s = getenv("CAPGNN_CPU_SPMM_GROUP");
  if (s && *s) {
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (*end || v < 1 || v > CPU_FAR_GROUP_MAX)
      return cg_err_set(CG_ERR_ARG, "CAPGNN_CPU_SPMM_GROUP=%s: expected an integer in 1..%d (rows "
                        "per group of the SpMM's far part)", s, CPU_FAR_GROUP_MAX);
    *group = v;
  }
  return CG_OK;
}

int cpu_spmm_env_check(void) {
  enum spmm_layout lay;
  int64_t tb, group;
  int pw;
  return layout_from_env(&lay, &tb, &pw, &group);
}

/* Rows split into nparts ranges of about equal nnz + rows; bounds are multiples of
 * `unit` (1, or the tile size so that no row block is shared). Deterministic. */
static void spmat_partition(struct cg_spmat *a, const int64_t *rowptr_all, int64_t unit) {
  const int64_t n = a->nrows, nunits = (n + unit - 1) / unit;
  const int64_t total = a->nnz + n;
  a->part[0] = 0;
  for (int p = 1; p < a->nparts; p++) {
    const int64_t target = (int64_t)((double)total * p / a->nparts);
    int64_t lo = a->part[p - 1] / unit, hi = nunits; /* first unit u with cost(u*unit) >= target */
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2, r = min64(mid * unit, n);
      if (rowptr_all[r] + r >= target) hi = mid;
      else lo = mid + 1;
    }
    a->part[p] = min64(lo * unit, n);
  }
  a->part[a->nparts] = n;
}

/* Dense column blocks of one row block. Only the blocks the row block touches are
 * visited and reset, so a scan costs the block's nonzeros, not the number of column
 * blocks (which made set-up quadratic in n / tb). */
struct tile_scan {
  int64_t *cnt;         /* nb counters, all zero between scans */
  int64_t *touched;     /* column blocks seen by this scan */
  int64_t *list;        /* its dense column blocks, ascending */
  int32_t *slot;        /* nb: 1 + position in list[] of a dense block, else 0 */
  int64_t nlist, near;  /* dense blocks and the nonzeros they hold */
};

static int tile_scan_init(struct tile_scan *s, int64_t nb) {
  const size_t n = (size_t)(nb > 0 ? nb : 1);
  s->cnt = cg_calloc(n, sizeof *s->cnt, "SpMM tiling counters");
  s->touched = cg_malloc(n * sizeof *s->touched, "SpMM tiling scratch");
  s->list = cg_malloc(n * sizeof *s->list, "SpMM tiling scratch");
  s->slot = cg_calloc(n, sizeof *s->slot, "SpMM tiling marks");
  s->nlist = s->near = 0;
  return s->cnt && s->touched && s->list && s->slot ? CG_OK : CG_ERR_NOMEM;
}

static void tile_scan_free(struct tile_scan *s) {
  cg_free(s->cnt);
  cg_free(s->touched);
  cg_free(s->list);
  cg_free(s->slot);
}

static int cmp_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Scans row block i: fills list/slot/near (the previous scan's marks are cleared). */
static void tile_scan_block(struct tile_scan *s, const struct cg_csr *h, int64_t tb, int64_t i) {
  for (int64_t d = 0; d < s->nlist; d++) s->slot[s->list[d]] = 0;
  const int64_t r0 = i * tb, r1 = min64(r0 + tb, h->nrows);
  int64_t ntouched = 0;
  for (int64_t k = h->rowptr[r0]; k < h->rowptr[r1]; k++) {
    const int64_t j = h->colidx[k] / tb;
    if (s->cnt[j]++ == 0) s->touched[ntouched++] = j;
  }
  s->nlist = s->near = 0;
  for (int64_t d = 0; d < ntouched; d++) {
    const int64_t j = s->touched[d], c = s->cnt[j];
    s->cnt[j] = 0;
    /* (tile row offsets are int32: a tile larger than that stays in the CSR) */
    if (c < CPU_TILE_REUSE * tb || c > INT32_MAX) continue;
    s->list[s->nlist++] = j;
    s->near += c;
  }
  qsort(s->list, (size_t)s->nlist, sizeof *s->list, cmp_i64);
  for (int64_t d = 0; d < s->nlist; d++) s->slot[s->list[d]] = (int32_t)(d + 1);
}

/* Fills the tiled arrays (a->tb set, everything else allocated here). */
static int build_tiles(struct cg_spmat *a, const struct cg_csr *h, int64_t ntiles, int64_t near,
                       int with_vals) {
  const int64_t tb = a->tb, nb = (h->ncols + tb - 1) / tb, far = h->nnz - near;
  struct tile_scan scan;
  int st = tile_scan_init(&scan, nb);
  a->ntiles = ntiles;
  a->rowptr = cg_malloc((size_t)(h->nrows + 1) * sizeof(int64_t), "SpMM far row pointers");
  a->colidx = cg_malloc((size_t)(far > 0 ? far : 1) * sizeof(int32_t), "SpMM far column indices");
  a->rb_tile = cg_malloc((size_t)(a->nrb + 1) * sizeof(int64_t), "SpMM tile index");
  a->tile_src = cg_malloc((size_t)ntiles * sizeof(int32_t), "SpMM tile columns");
  a->tile_edge = cg_malloc((size_t)ntiles * sizeof(int64_t), "SpMM tile offsets");
  a->tile_rowptr = cg_malloc((size_t)ntiles * (size_t)(tb + 1) * sizeof(int32_t), "SpMM tile rows");
  a->t_off = cg_malloc((size_t)(near > 0 ? near : 1) * sizeof(uint16_t), "SpMM tile columns");
  if (with_vals) {
    a->vals = cg_malloc((size_t)(far > 0 ? far : 1) * sizeof(float), "SpMM far values");
    a->t_val = cg_malloc((size_t)(near > 0 ? near : 1) * sizeof(float), "SpMM tile values");
  }
  if (st != CG_OK || !a->rowptr || !a->colidx || !a->rb_tile || !a->tile_src ||
      !a->tile_edge || !a->tile_rowptr || !a->t_off || (with_vals && (!a->vals || !a->t_val))) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  int64_t nf = 0, ne = 0, nt = 0;
  a->rowptr[0] = 0;
  /* Two passes over each row block's nonzeros, whatever its number of tiles (a pass
   * per tile made the set-up of synth:reddit take ~4 s): count each tile's row
   * lengths while collecting the far nonzeros, then place the tiles' nonzeros using
   * the row offsets as cursors. Within a tile row they keep the CSR's order. */
  for (int64_t i = 0; i < a->nrb; i++) {
    tile_scan_block(&scan, h, tb, i);
    const int64_t r0 = i * tb, r1 = min64(r0 + tb, h->nrows), nl = scan.nlist;
    int32_t *ro0 = a->tile_rowptr + nt * (tb + 1); /* tile d's offsets: ro0 + d * (tb + 1) */
    a->rb_tile[i] = nt;
    memset(ro0, 0, (size_t)nl * (size_t)(tb + 1) * sizeof *ro0);
    for (int64_t r = r0; r < r1; r++) {
      for (int64_t k = h->rowptr[r]; k < h->rowptr[r + 1]; k++) {
        const int32_t sl = scan.slot[h->colidx[k] / tb];
        if (sl) {
          ro0[(sl - 1) * (tb + 1) + (r - r0) + 1]++;
          continue;
        }
        a->colidx[nf] = h->colidx[k];
        if (with_vals) a->vals[nf] = h->vals[k];
        nf++;
      }
      a->rowptr[r + 1] = nf;
    }
    for (int64_t d = 0; d < nl; d++) {
      int32_t *ro = ro0 + d * (tb + 1);
      for (int64_t rr = 0; rr < tb; rr++) ro[rr + 1] += ro[rr];
      a->tile_src[nt + d] = (int32_t)scan.list[d];
      a->tile_edge[nt + d] = ne;
      ne += ro[tb];
    }
    for (int64_t r = r0; r < r1; r++)
      for (int64_t k = h->rowptr[r]; k < h->rowptr[r + 1]; k++) {
        const int64_t j = h->colidx[k] / tb;
        const int32_t sl = scan.slot[j];
        if (!sl) continue;
        const int64_t pos = a->tile_edge[nt + sl - 1] + ro0[(sl - 1) * (tb + 1) + (r - r0)]++;
        a->t_off[pos] = (uint16_t)(h->colidx[k] - j * tb);
        if (with_vals) a->t_val[pos] = h->vals[k];
      }
    /* each cursor now holds the next row's offset: shift them back */
    for (int64_t d = 0; d < nl; d++) {
      int32_t *ro = ro0 + d * (tb + 1);
      memmove(ro + 1, ro, (size_t)tb * sizeof *ro);
      ro[0] = 0;
    }
    nt += nl;
  }
  a->rb_tile[a->nrb] = nt;
  if (nf != far || ne != near || nt != ntiles)
    st = cg_err_set(CG_ERR_INTERNAL, "SpMM tiling: counted %lld/%lld/%lld, filled %lld/%lld/%lld",
                    (long long)far, (long long)near, (long long)ntiles, (long long)nf,
                    (long long)ne, (long long)nt);
done:
  tile_scan_free(&scan);
  return st;
}

/* Rows per far group. The group buffer (gr x 32 floats a thread) is read and written at
 * random, once per far nonzero and pass, while the panel of X streams by; each group
 * streams the whole panel, so fewer, taller groups read less of X. Measured best: a
 * buffer of twice the L2, 1 MB on the Zen 3 VM (512 KB L2; 512 KB lost there), 2 MB on a
 * Zen 4 VM (1 MB L2: with the prefetch of push_group_avx2_nv, the far part of a 256-wide
 * product over synth:reddit took 14 % less than with 1 MB and no prefetch, three
 * alternating runs, the same bits). Counted in row blocks of the
 * default size, so a test's small tiles still make several groups; and at least four
 * groups a thread where the rows allow, or threads would wait. The rows a group spans
 * do not change any sum (a row's far nonzeros are added in column order in one group). */
static int64_t far_group_rows(const struct cg_spmat *a, int64_t forced) {
  if (forced > 0) return forced;
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  int64_t blocks = l2 > 0 ? 2 * (int64_t)l2 / (CPU_TILE_DEFAULT * SPMM_PANEL_WIDE * (int64_t)sizeof(float))
                          : CPU_FAR_GROUP_TILES;
  blocks = blocks < 1 ? 1 : blocks > 64 ? 64 : blocks;
  int64_t gr = min64(a->tb * blocks, CPU_FAR_GROUP_MAX);
  const int64_t quarter = (a->nrows + 4 * a->nparts - 1) / (4 * a->nparts);
  const int64_t share = (quarter + a->tb - 1) / a->tb * a->tb;
  if (gr > share) gr = share > a->tb ? share : a->tb;
  return min64(gr, CPU_FAR_GROUP_MAX);
}

/* Turns the far CSR of a tiled matrix into source-sorted groups (and frees it).
 * Why: the far nonzeros are the scattered ones (inter-community edges); gathered row
 * by row they read a random 1 KB row of X each from DRAM. Pushed by source, a group of
 * gr rows reads one contiguous 16-column panel of X in order and adds into a buffer
 * that stays in L2: a 256-wide product over Reddit went from 2.15-2.6 s to 1.9-2.0 s,
 * width 41 from 0.41-0.43 to 0.30-0.40 s (alternating A/B runs in one session).
 *
 * Why 32 columns a pass (pw), not 16. Each pass reads the index arrays of every far
 * nonzero again (6 bytes) and does one read-modify-write of its output row per nonzero:
 * 32 columns halve both. The group buffer doubled to 1 MB a thread (8192 rows x 128 B),
 * more than that VM's L2, and still paid: on the 2-core EPYC VM (loaded, alternating runs, the
 * same bits), a 256-wide product over synth:reddit went from 2.64-2.75 s to 2.13-2.40 s,
 * at scale 0.25 from 0.62-0.71 s to 0.47-0.55 s; keeping 512 KB by halving the groups
 * instead lost at full size (3.38 s: each group streams the whole panel of X).
 * CAPGNN_CPU_SPMM_PANEL=16 restores narrow passes (the result is the same bits). The
 * group height is far_group_rows' (CAPGNN_CPU_SPMM_GROUP=ROWS forces one). */
static int build_push(struct cg_spmat *a, int pw, int64_t group) {
  const int64_t n = a->nrows, far = a->rowptr[n], gr = far_group_rows(a, group);
  a->gr = gr;
  a->pw = pw;
  a->ngroups = (n + gr - 1) / gr;
  a->grp_edge = cg_malloc((size_t)(a->ngroups + 1) * sizeof(int64_t), "SpMM far groups");
  a->f_src = cg_malloc((size_t)(far > 0 ? far : 1) * sizeof(int32_t), "SpMM far columns");
  a->f_dst = cg_malloc((size_t)(far > 0 ? far : 1) * sizeof(uint16_t), "SpMM far rows");
  if (a->vals) a->f_val = cg_malloc((size_t)(far > 0 ? far : 1) * sizeof(float), "SpMM far values");
  int64_t *next = cg_malloc((size_t)(a->ncols + 1) * sizeof(int64_t), "SpMM far sort counters");
  if (!a->grp_edge || !a->f_src || !a->f_dst || (a->vals && !a->f_val) || !next) {
    cg_free(next);
    return CG_ERR_NOMEM;
  }
  a->grp_edge[0] = 0;
  for (int64_t g = 0; g < a->ngroups; g++) {
    const int64_t r0 = g * gr, r1 = min64(r0 + gr, n), e0 = a->rowptr[r0];
    /* counting sort of the group's nonzeros by column (stable: rows stay in order) */
    memset(next, 0, (size_t)(a->ncols + 1) * sizeof(int64_t));
    for (int64_t k = e0; k < a->rowptr[r1]; k++) next[a->colidx[k] + 1]++;
    for (int64_t c = 0; c < a->ncols; c++) next[c + 1] += next[c];
    for (int64_t r = r0; r < r1; r++)
      for (int64_t k = a->rowptr[r]; k < a->rowptr[r + 1]; k++) {
        const int64_t d = e0 + next[a->colidx[k]]++;
        a->f_src[d] = a->colidx[k];
        a->f_dst[d] = (uint16_t)(r - r0);
        if (a->vals) a->f_val[d] = a->vals[k];
      }
    a->grp_edge[g + 1] = a->rowptr[r1];
  }
  cg_free(next);
  cg_free(a->colidx);
  cg_free(a->vals);
  a->colidx = NULL;
  a->vals = NULL;
  return CG_OK;
}

/* Whether row_scale[r] * col_scale[c] reproduces every value to 1e-5 relative (they
 * differ by rounding only when the factors are what core/csr.h says they are). The
 * first entry that does not is reported in *bad. */
static int factors_match(const struct cg_csr *h, int64_t *bad) {
  int64_t first = -1;
#pragma omp parallel for schedule(dynamic, 1024) reduction(max : first)
  for (int64_t r = 0; r < h->nrows; r++)
    for (int64_t k = h->rowptr[r]; k < h->rowptr[r + 1]; k++) {
      const double f = (double)h->row_scale[r] * (double)h->col_scale[h->colidx[k]];
      if (!(fabs(f - (double)h->vals[k]) <= 1e-5 * fabs((double)h->vals[k]))) {
        if (first < 0) first = k;
        break;
      }
    }
  *bad = first;
  return first < 0;
}

/* Plain CSR copy. */
static int build_csr(struct cg_spmat *a, const struct cg_csr *h) {
  a->rowptr = cg_malloc((size_t)(h->nrows + 1) * sizeof(int64_t), "CPU sparse matrix row pointers");
  a->colidx = cg_malloc((size_t)(h->nnz > 0 ? h->nnz : 1) * sizeof(int32_t),
                        "CPU sparse matrix column indices");
  if (h->vals)
    a->vals = cg_malloc((size_t)(h->nnz > 0 ? h->nnz : 1) * sizeof(float), "CPU sparse matrix values");
  if (!a->rowptr || !a->colidx || (h->vals && !a->vals)) return CG_ERR_NOMEM;
  memcpy(a->rowptr, h->rowptr, (size_t)(h->nrows + 1) * sizeof(int64_t));
  if (h->nnz) memcpy(a->colidx, h->colidx, (size_t)h->nnz * sizeof(int32_t));
  if (h->vals && h->nnz) memcpy(a->vals, h->vals, (size_t)h->nnz * sizeof(float));
  return CG_OK;
}

int cpu_spmat_build(const struct cg_csr *host, int nthreads, struct cg_spmat **out) {
  int st = CG_OK;
  *out = NULL;
  if (host->nrows < 0 || host->ncols < 0 || host->ncols > INT32_MAX)
    return cg_err_set(CG_ERR_ARG, "spmat_create: matrix shape %lld x %lld is not supported",
                      (long long)host->nrows, (long long)host->ncols);
  TRY(cg_csr_check(host, "sparse matrix given to the CPU backend"));
  enum spmm_layout lay;
  int64_t tb = CPU_TILE_DEFAULT;
  int pw = SPMM_PANEL_WIDE;
  int64_t group = 0;
  TRY(layout_from_env(&lay, &tb, &pw, &group));
  struct cg_spmat *a = cg_calloc(1, sizeof *a, "CPU sparse matrix");
  if (!a) return CG_ERR_NOMEM;
  a->nrows = host->nrows;
  a->ncols = host->ncols;
  a->nnz = host->nnz;
  a->nparts = nthreads > 0 ? nthreads : 1;
  a->part = cg_malloc((size_t)(a->nparts + 1) * sizeof(int64_t), "CPU sparse matrix row split");
  if (!a->part) {
    st = CG_ERR_NOMEM;
    goto fail;
  }

  /* Count the dense tiles and their nonzeros. */
  int64_t ntiles = 0, near = 0;
  const int64_t nrb = (host->nrows + tb - 1) / tb, nb = (host->ncols + tb - 1) / tb;
  const int big = nrb >= CPU_TILE_MIN_BLOCKS && nb >= CPU_TILE_MIN_BLOCKS;
  if (lay == LAYOUT_TILED || (lay == LAYOUT_AUTO && big)) {
    struct tile_scan scan;
    if (tile_scan_init(&scan, nb) != CG_OK) {
      tile_scan_free(&scan);
      st = CG_ERR_NOMEM;
      goto fail;
    }
    for (int64_t i = 0; i < nrb; i++) {
      tile_scan_block(&scan, host, tb, i);
      ntiles += scan.nlist;
      near += scan.near;
    }
    tile_scan_free(&scan);
  }
  const int tiled = ntiles > 0 && (lay == LAYOUT_TILED || 4 * near >= host->nnz);
  if (tiled) {
    a->tb = tb;
    a->nrb = nrb;
    int factored = host->vals && host->row_scale && host->col_scale;
    int64_t bad = -1;
    if (factored && !factors_match(host, &bad)) {
      LOG_WARN("core", "SpMM: the matrix's row and column factors do not reproduce its value at "
               "entry %lld (%.9g); computing with the values", (long long)bad,
               (double)host->vals[bad]);
      factored = 0;
    }
    if (factored) {
      a->rs = cg_malloc((size_t)(a->nrows > 0 ? a->nrows : 1) * sizeof(float), "SpMM row scales");
      a->cs = cg_malloc((size_t)(a->ncols > 0 ? a->ncols : 1) * sizeof(float), "SpMM column scales");
      if (!a->rs || !a->cs) {
        st = CG_ERR_NOMEM;
        goto fail;
      }
      if (a->nrows) memcpy(a->rs, host->row_scale, (size_t)a->nrows * sizeof(float));
      if (a->ncols) memcpy(a->cs, host->col_scale, (size_t)a->ncols * sizeof(float));
    }
    TRY_GOTO(build_tiles(a, host, ntiles, near, host->vals && !factored), fail);
    TRY_GOTO(build_push(a, pw, group), fail);
    spmat_partition(a, host->rowptr, tb);
    LOG_DEBUG("core",
              "SpMM %lld x %lld: tiled (%lld), %lld dense tiles hold %.1f %% of %lld nonzeros%s",
              (long long)a->nrows, (long long)a->ncols, (long long)tb, (long long)ntiles,
              host->nnz ? 100.0 * (double)near / (double)host->nnz : 0.0, (long long)host->nnz,
              factored ? ", values factored" : "");
  } else {
    TRY_GOTO(build_csr(a, host), fail);
    spmat_partition(a, host->rowptr, 1);
  }
  *out = a;
  return CG_OK;
fail:
  cpu_spmat_free(a);
  return st < 0 ? st : CG_ERR_INTERNAL;
}

/* ------------------------------------------------------------------------ */
/* kernels                                                                  */
/* ------------------------------------------------------------------------ */

/* Portable kernel for one output row and one block of up to SPMM_COLS columns:
 * xb points at the block's first column of source row 0 (CSR: ci[k] absolute;
 * tile: off[k] relative to the tile's first source row). A tile's sum is added to
 * the current output (the far part and earlier tiles), times *rsc when rsc is set
 * (factored values). */
static void row_block_generic(const int32_t *ci, const uint16_t *off, const float *vv,
                              int64_t k0, int64_t k1, const float *xb, int64_t ldx, float *yo,
                              int64_t w, int accumulate, const float *rsc) {
  float acc[SPMM_COLS];
  for (int64_t j = 0; j < w; j++) acc[j] = 0.0f;
  for (int64_t k = k0; k < k1; k++) {
    const float *xr = xb + (ci ? (int64_t)ci[k] : (int64_t)off[k]) * ldx;
    if (vv) {
      const float v = vv[k];
      for (int64_t j = 0; j < w; j++) acc[j] += v * xr[j];
    } else {
      for (int64_t j = 0; j < w; j++) acc[j] += xr[j];
    }
  }
  if (accumulate && rsc)
    for (int64_t j = 0; j < w; j++) acc[j] = fmaf(*rsc, acc[j], yo[j]);
  else if (accumulate)
    for (int64_t j = 0; j < w; j++) acc[j] = yo[j] + acc[j];
  memcpy(yo, acc, (size_t)w * sizeof(float));
}

#if SPMM_HAVE_AVX2
/* One output row, NV full vectors plus (TAIL) one masked vector. Called with
 * compile-time constants so that acc[] is fully unrolled into registers. TILE: the
 * source index is off[k] (uint16, relative) and the sum (times *rsc when rsc is set)
 * is added to the current output. */
static inline __attribute__((always_inline)) SPMM_AVX2 void row_block_avx2(
    const int32_t *ci, const uint16_t *off, const float *vv, int64_t k0, int64_t k1,
    const float *xb, int64_t ldx, float *yo, const int NV, const int TAIL, const int UNIT,
    const int TILE, __m256i mask, const float *rsc) {
  /* The unroll pragmas let GCC keep acc[] in registers: without them it stored all
   * of acc[] to the stack on every nonzero (seen in the disassembly; ~1.5x slower). */
  __m256 acc[8], acct = _mm256_setzero_ps();
  #pragma GCC unroll 8
  for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
  for (int64_t k = k0; k < k1; k++) {
    const float *xr = xb + (TILE ? (int64_t)off[k] : (int64_t)ci[k]) * ldx;
    if (UNIT) {
      #pragma GCC unroll 8
      for (int j = 0; j < NV; j++) acc[j] = _mm256_add_ps(acc[j], _mm256_loadu_ps(xr + 8 * j));
      if (TAIL) acct = _mm256_add_ps(acct, _mm256_maskload_ps(xr + 8 * NV, mask));
    } else {
      const __m256 v = _mm256_broadcast_ss(vv + k);
      #pragma GCC unroll 8
      for (int j = 0; j < NV; j++) acc[j] = _mm256_fmadd_ps(v, _mm256_loadu_ps(xr + 8 * j), acc[j]);
      if (TAIL) acct = _mm256_fmadd_ps(v, _mm256_maskload_ps(xr + 8 * NV, mask), acct);
    }
  }
  if (TILE && rsc) {
    const __m256 sc = _mm256_broadcast_ss(rsc);
    #pragma GCC unroll 8
    for (int j = 0; j < NV; j++) acc[j] = _mm256_fmadd_ps(sc, acc[j], _mm256_loadu_ps(yo + 8 * j));
    if (TAIL) acct = _mm256_fmadd_ps(sc, acct, _mm256_maskload_ps(yo + 8 * NV, mask));
  } else if (TILE) {
    #pragma GCC unroll 8
    for (int j = 0; j < NV; j++) acc[j] = _mm256_add_ps(_mm256_loadu_ps(yo + 8 * j), acc[j]);
    if (TAIL) acct = _mm256_add_ps(_mm256_maskload_ps(yo + 8 * NV, mask), acct);
  }
  #pragma GCC unroll 8
  for (int j = 0; j < NV; j++) _mm256_storeu_ps(yo + 8 * j, acc[j]);
  if (TAIL) _mm256_maskstore_ps(yo + 8 * NV, mask, acct);
}

#define ROW_BLOCK_CASE(nv, tail)                                                                \
  case nv * 2 + tail:                                                                           \
    if (unit) {                                                                                 \
      if (tile) row_block_avx2(ci, off, vv, k0, k1, xb, ldx, yo, nv, tail, 1, 1, mask, rsc);    \
      else row_block_avx2(ci, off, vv, k0, k1, xb, ldx, yo, nv, tail, 1, 0, mask, rsc);         \
    } else {                                                                                    \
      if (tile) row_block_avx2(ci, off, vv, k0, k1, xb, ldx, yo, nv, tail, 0, 1, mask, rsc);    \
      else row_block_avx2(ci, off, vv, k0, k1, xb, ldx, yo, nv, tail, 0, 0, mask, rsc);         \
    }                                                                                           \
    break;

/* Dispatch on the block width w (1..64): w / 8 full vectors and a masked one. */
SPMM_AVX2 static void row_block_avx2_any(const int32_t *ci, const uint16_t *off, const float *vv,
                                         int64_t k0, int64_t k1, const float *xb, int64_t ldx,
                                         float *yo, int64_t w, int tile, const float *rsc) {
  const int unit = vv == NULL;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(w % 8)), lane);
  switch ((int)(w / 8) * 2 + (w % 8 != 0)) {
    ROW_BLOCK_CASE(0, 1)
    ROW_BLOCK_CASE(1, 0)
    ROW_BLOCK_CASE(1, 1)
    ROW_BLOCK_CASE(2, 0)
    ROW_BLOCK_CASE(2, 1)
    ROW_BLOCK_CASE(3, 0)
    ROW_BLOCK_CASE(3, 1)
    ROW_BLOCK_CASE(4, 0)
    ROW_BLOCK_CASE(4, 1)
    ROW_BLOCK_CASE(5, 0)
    ROW_BLOCK_CASE(5, 1)
    ROW_BLOCK_CASE(6, 0)
    ROW_BLOCK_CASE(6, 1)
    ROW_BLOCK_CASE(7, 0)
    ROW_BLOCK_CASE(7, 1)
    ROW_BLOCK_CASE(8, 0)
    default: break;
  }
}
#undef ROW_BLOCK_CASE
#endif

static inline void row_block(int avx2, const int32_t *ci, const uint16_t *off, const float *vv,
                             int64_t k0, int64_t k1, const float *xb, int64_t ldx, float *yo,
                             int64_t w, int tile, const float *rsc) {
#if SPMM_HAVE_AVX2
  if (avx2) {
    row_block_avx2_any(ci, off, vv, k0, k1, xb, ldx, yo, w, tile, rsc);
    return;
  }
#endif
  (void)avx2;
  row_block_generic(ci, off, vv, k0, k1, xb, ldx, yo, w, tile, rsc);
}

/* CSR rows [r0, r1): every output column written. */
static void csr_rows(const struct cg_spmat *a, int avx2, int64_t r0, int64_t r1, const float *x,
                     int64_t ldx, float *y, int64_t ldy, int64_t f) {
  for (int64_t r = r0; r < r1; r++)
    for (int64_t c0 = 0; c0 < f; c0 += SPMM_COLS)
      row_block(avx2, a->colidx, NULL, a->vals, a->rowptr[r], a->rowptr[r + 1], x + c0, ldx,
                y + r * ldy + c0, min64(SPMM_COLS, f - c0), 0, NULL);
}

/* Row block i of a tiled matrix for one slice of w columns starting at c0 (its rows
 * already hold the far part): each dense tile adds to them. xs is the packed slice. */
static void tiled_block(const struct cg_spmat *a, int avx2, int64_t i, const float *xs, float *y,
                        int64_t ldy, int64_t c0, int64_t w) {
  const int64_t tb = a->tb, r0 = i * tb, r1 = min64(r0 + tb, a->nrows);
  for (int64_t t = a->rb_tile[i]; t < a->rb_tile[i + 1]; t++) {
    const float *xb = xs + (int64_t)a->tile_src[t] * tb * SPMM_COLS;
    const int32_t *ro = a->tile_rowptr + t * (tb + 1);
    const uint16_t *off = a->t_off + a->tile_edge[t];
    const float *vv = a->t_val ? a->t_val + a->tile_edge[t] : NULL;
    for (int64_t r = r0; r < r1; r++) {
      const int32_t k0 = ro[r - r0], k1 = ro[r - r0 + 1];
      if (k0 < k1)
        row_block(avx2, NULL, off, vv, k0, k1, xb, SPMM_COLS, y + r * ldy + c0, w, 1,
                  a->rs ? a->rs + r : NULL);
    }
  }
}

/* Far part, one panel of PW columns: group g of rows added up in yg (gr x PW, zeroed
 * here) from the panel copy xp (rows PW floats apart). */
static void push_group_generic(const struct cg_spmat *a, int64_t g, const float *xp, float *yg,
                               int64_t pw) {
  const int32_t *restrict fsrc = a->f_src; /* (why locals: push_group_avx2_nv) */
  const uint16_t *restrict fdst = a->f_dst;
  const float *restrict fval = a->f_val;
  memset(yg, 0, (size_t)a->gr * (size_t)pw * sizeof(float));
  for (int64_t e = a->grp_edge[g]; e < a->grp_edge[g + 1]; e++) {
    const float *xs = xp + (int64_t)fsrc[e] * pw;
    float *yd = yg + (int64_t)fdst[e] * pw;
    const float v = fval ? fval[e] : 1.0f;
    for (int64_t j = 0; j < pw; j++) yd[j] += v * xs[j];
  }
}

#if SPMM_HAVE_AVX2
/* NV vectors a row (a compile-time constant: 2 or 4), so that the loops unroll. The
 * index arrays are read through restrict locals: through a->..., GCC reloaded all three
 * pointers from the matrix on every nonzero (the stores to yg might have changed them),
 * three more loads a nonzero in a loop bound by its loads and stores, not by the caches:
 * on the Zen 4 VM the far part of a 256-wide product over synth:reddit took 12-13 % less
 * with the locals (paired in one process, 24 pairs, far part alone; the same bits). */
static inline __attribute__((always_inline)) SPMM_AVX2 void push_group_avx2_nv(
    const struct cg_spmat *a, int64_t g, const float *xp, float *yg, const int NV) {
  const int32_t *restrict fsrc = a->f_src;
  const uint16_t *restrict fdst = a->f_dst;
  const float *restrict fval = a->f_val;
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t r = 0; r < a->gr; r++) {
    #pragma GCC unroll 4
    for (int j = 0; j < NV; j++) _mm256_storeu_ps(yg + (r * NV + j) * 8, zero);
  }
  /* The rows 32 nonzeros ahead are prefetched: the panel row streams from memory and
   * the group row is read at random (together 14 % off the far part, with the taller
   * groups of far_group_rows, on the Zen 4 VM). */
  const int64_t e1 = a->grp_edge[g + 1];
  for (int64_t e = a->grp_edge[g]; e < e1; e++) {
    const float *xs = xp + (int64_t)fsrc[e] * NV * 8;
    float *yd = yg + (int64_t)fdst[e] * NV * 8;
    if (e + SPMM_FAR_AHEAD < e1) {
      const char *xa = (const char *)(xp + (int64_t)fsrc[e + SPMM_FAR_AHEAD] * NV * 8);
      const char *ya = (const char *)(yg + (int64_t)fdst[e + SPMM_FAR_AHEAD] * NV * 8);
      _mm_prefetch(xa, _MM_HINT_T0);
      _mm_prefetch(ya, _MM_HINT_T0);
      if (NV * 32 > 64) {
        _mm_prefetch(xa + 64, _MM_HINT_T0);
        _mm_prefetch(ya + 64, _MM_HINT_T0);
      }
    }
    if (fval) {
      const __m256 v = _mm256_broadcast_ss(fval + e);
      #pragma GCC unroll 4
      for (int j = 0; j < NV; j++)
        _mm256_storeu_ps(yd + 8 * j, _mm256_fmadd_ps(v, _mm256_loadu_ps(xs + 8 * j),
                                                     _mm256_loadu_ps(yd + 8 * j)));
    } else {
      #pragma GCC unroll 4
      for (int j = 0; j < NV; j++)
        _mm256_storeu_ps(yd + 8 * j, _mm256_add_ps(_mm256_loadu_ps(xs + 8 * j),
                                                   _mm256_loadu_ps(yd + 8 * j)));
    }
  }
}

SPMM_AVX2 static void push_group_avx2(const struct cg_spmat *a, int64_t g, const float *xp,
                                      float *yg, int64_t pw) {
  if (pw == SPMM_PANEL_WIDE) push_group_avx2_nv(a, g, xp, yg, SPMM_PANEL_WIDE / 8);
  else push_group_avx2_nv(a, g, xp, yg, SPMM_PANEL / 8);
}
#endif

/* The far part of every row for columns [c0, c0 + w), w <= pw (SPMM_PANEL or
 * SPMM_PANEL_WIDE), inside a parallel region. */
static void push_panel(const struct cg_spmat *a, int avx2, const struct cpu_spmm_ws *ws, const float *x,
                       int64_t ldx, float *y, int64_t ldy, int64_t c0, int64_t w, int64_t pw) {
  float *xp = ws->xpanel;
  float *yg = ws->ygroup + (size_t)omp_get_thread_num() * (size_t)a->gr * (size_t)pw;
  /* (fixed-length inner loops for full panels: the compiler makes them vector moves) */
#pragma omp for schedule(static)
  for (int64_t r = 0; r < a->ncols; r++) {
    const float s = a->cs ? a->cs[r] : 1.0f;
    if (w == SPMM_PANEL_WIDE) {
      for (int64_t j = 0; j < SPMM_PANEL_WIDE; j++)
        xp[r * SPMM_PANEL_WIDE + j] = s * x[r * ldx + c0 + j];
    } else if (w == SPMM_PANEL && pw == SPMM_PANEL) {
      for (int64_t j = 0; j < SPMM_PANEL; j++) xp[r * SPMM_PANEL + j] = s * x[r * ldx + c0 + j];
    } else {
      for (int64_t j = 0; j < w; j++) xp[r * pw + j] = s * x[r * ldx + c0 + j];
      for (int64_t j = w; j < pw; j++) xp[r * pw + j] = 0.0f;
    }
  }
  /* (implicit barrier: the panel is complete) each group is one thread's, whichever */
#pragma omp for schedule(dynamic, 1)
  for (int64_t g = 0; g < a->ngroups; g++) {
#if SPMM_HAVE_AVX2
    if (avx2) push_group_avx2(a, g, xp, yg, pw);
    else push_group_generic(a, g, xp, yg, pw);
#else
    (void)avx2;
    push_group_generic(a, g, xp, yg, pw);
#endif
    const int64_t r0 = g * a->gr, r1 = min64(r0 + a->gr, a->nrows);
    for (int64_t r = r0; r < r1; r++) {
      float *yr = y + r * ldy + c0;
      const float *src = yg + (r - r0) * pw;
      const float s = a->rs ? a->rs[r] : 1.0f;
      if (w == SPMM_PANEL_WIDE)
        for (int64_t j = 0; j < SPMM_PANEL_WIDE; j++) yr[j] = s * src[j];
      else if (w == SPMM_PANEL)
        for (int64_t j = 0; j < SPMM_PANEL; j++) yr[j] = s * src[j];
      else
        for (int64_t j = 0; j < w; j++) yr[j] = s * src[j];
    }
  }
}

/* A tiled product, one slice of SPMM_COLS columns at a time: the far part of its
 * panels is pushed into Y, then the slice of X is packed into xpack (rows 256 B
 * apart instead of ldx floats) and the dense tiles add to Y.
 *
 * Why pack. With ldx = 256 floats, a tile's 1024 source rows are 1 KB apart, so their
 * 64-column slices fall into a quarter of the sets of the 8-way, 512 KB L2 (every
 * 16th set, 4 lines a row): the 256 KB slice competed for 128 KB and was evicted
 * while it was being reused. Packed, it spreads over all the sets. On synth:reddit
 * (2-core EPYC VM) a 256-wide product went from 2.0-2.3 s to 1.6-1.7 s, bit for bit
 * the same result; the copy is ~n x f x 8 bytes of traffic per product. (The far
 * part keeps its own contiguous 16-column panel: reading it from the packed slice,
 * 256 B apart, made the product 0.6 s slower.) */
static void tiled_run(const struct cg_spmat *a, int avx2, const struct cpu_spmm_ws *ws, const float *x,
                      int64_t ldx, float *y, int64_t ldy, int64_t f) {
  const int np = a->nparts;
#pragma omp parallel num_threads(np) if (np > 1)
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    for (int64_t c0 = 0; c0 < f; c0 += SPMM_COLS) {
      const int64_t w = min64(SPMM_COLS, f - c0);
      /* (each panel's far part is written before any tile adds to it: the implicit
       * barriers of push_panel and of the packing loop) */
      /* (a wide matrix's last 16 columns or fewer take a narrow pass: a 41-wide
       * product is 32 + 9 columns, not 2 x 32) */
      for (int64_t p0 = 0, pw; p0 < w; p0 += pw) {
        pw = a->pw == SPMM_PANEL_WIDE && w - p0 > SPMM_PANEL ? SPMM_PANEL_WIDE : SPMM_PANEL;
        push_panel(a, avx2, ws, x, ldx, y, ldy, c0 + p0, min64(pw, w - p0), pw);
      }
#pragma omp for schedule(static)
      for (int64_t r = 0; r < a->ncols; r++) {
        float *d = ws->xpack + r * SPMM_COLS;
        const float *src = x + r * ldx + c0;
        const float s = a->cs ? a->cs[r] : 1.0f;
        if (w == SPMM_COLS)
          for (int64_t j = 0; j < SPMM_COLS; j++) d[j] = s * src[j];
        else
          for (int64_t j = 0; j < w; j++) d[j] = s * src[j];
      }
      /* One precomputed row range per part; if OpenMP grants fewer threads, a thread
       * takes several parts. An empty part (more threads than row blocks: r0 == r1 ==
       * nrows) must not run the last, partial row block again beside its owner. */
      for (int p = tid; p < np; p += nth) {
        const int64_t r0 = a->part[p], r1 = a->part[p + 1];
        if (r0 >= r1) continue;
        for (int64_t i = r0 / a->tb; i * a->tb < r1; i++)
          tiled_block(a, avx2, i, ws->xpack, y, ldy, c0, w);
      }
      /* the next slice overwrites xpack */
#pragma omp barrier
    }
  }
}

void cpu_spmm_run(const struct cg_spmat *a, int avx2, const struct cpu_spmm_ws *ws, const float *x,
                  int64_t ldx, float *y, int64_t ldy, int64_t f) {
  if (f <= 0 || a->nrows == 0) return;
  if (a->tb) {
    tiled_run(a, avx2, ws, x, ldx, y, ldy, f);
    return;
  }
  /* One precomputed row range per part; if OpenMP grants fewer threads, a thread
   * takes several parts. Each row is computed the same way whoever computes it. */
  const int np = a->nparts;
#pragma omp parallel num_threads(np) if (np > 1)
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
    for (int p = tid; p < np; p += nth)
      csr_rows(a, avx2, a->part[p], a->part[p + 1], x, ldx, y, ldy, f);
  }
}
