/* core/cpu_attn.c — the CPU backend's graph attention ops (core/ops.h, "graph
 * attention"), and the sparse-feature ops csr_mm / csr_mm_t / csr_dropout that run on
 * the same edge structure: loops over core/attn.h's elements, the CUDA kernels' own
 * arithmetic.
 *
 * Every output element is computed by one thread, summing in a fixed order (a row's
 * edges in CSR order, a column's edges through the transpose in increasing edge
 * number), so the results do not depend on the thread count. Sums over a column's
 * edges (the gradients of source rows) read the transpose instead of scattering:
 * no atomics, no races. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <omp.h>

#include "core/attn.h"
#include "core/cpu_attn_internal.h"
#include "core/fatal.h"

#define ATTN_PAR_MIN 4096 /* below this much work, one thread */

#define ATTN_REQUIRE(cond, ...)                                                             \
  do {                                                                                      \
    if (!(cond)) cg_fatal("core", __FILE__, __LINE__, "cpu backend: " #cond, __VA_ARGS__);  \
  } while (0)

static int nt_of(const struct cg_backend *be) { return cg_backend_cpu_threads(be); }

/* c ? a : b as a bit mask select: the compiler sees no branch to rebuild (with a plain
 * select between 1 and a factor, GCC multiplies in one arm only and branches) */
static inline float pick_bits(int c, float a, float b) {
  uint32_t ua, ub;
  memcpy(&ua, &a, sizeof ua);
  memcpy(&ub, &b, sizeof ub);
  const uint32_t m = 0u - (uint32_t)(c != 0), r = (ua & m) | (ub & ~m);
  float f;
  memcpy(&f, &r, sizeof f);
  return f;
}

static void cpu_edge_scores(struct cg_backend *be, const struct cg_edges *e, const float *el,
                            int64_t lde, const float *er, int64_t ldr, int64_t heads, float slope,
                            float *s) {
  ATTN_REQUIRE(heads >= 1 && lde >= heads && ldr >= heads, "edge_scores: heads %lld, strides %lld %lld",
               (long long)heads, (long long)lde, (long long)ldr);
  /* cg_attn_scores_rh's values a row at a time, heads innermost, LeakyReLU as x times a
   * bit-mask-selected factor (x * 1 is x, x * slope is slope * x: the same bits) so that
   * GCC keeps no branch on the sign */
#pragma omp parallel for num_threads(nt_of(be)) schedule(static) if (e->nnz * heads >= ATTN_PAR_MIN)
  for (int64_t r = 0; r < e->nrows; r++) {
    const float *b = er + r * ldr;
    for (int64_t k = e->rowptr[r]; k < e->rowptr[r + 1]; k++) {
      const float *l = el + (int64_t)e->colidx[k] * lde;
      float *sk = s + k * heads;
      for (int64_t h = 0; h < heads; h++) {
        const float x = l[h] + b[h];
        sk[h] = x * pick_bits(x > 0.0f, 1.0f, slope);
      }
    }
  }
}

static void cpu_edge_scores_bwd(struct cg_backend *be, const struct cg_edges *e, const float *s,
                                const float *ds, int64_t heads, float slope, float *del, int64_t lde,
                                float *der, int64_t ldr) {
  ATTN_REQUIRE(heads >= 1 && lde >= heads && ldr >= heads,
               "edge_scores_bwd: heads %lld, strides %lld %lld", (long long)heads, (long long)lde,
               (long long)ldr);
  const int nt = nt_of(be);
  const int par = e->nnz * heads >= ATTN_PAR_MIN;
  const int64_t nd = e->nrows * heads, ns = e->ncols * heads;
  /* the sums of cg_attn_scores_bwd_dst / _src, each in its order (the same bits), a row
   * (a column) at a time with the heads innermost; the derivative as ds times a factor
   * picked between 1 and the slope (ds * 1 is ds, slope * ds is ds * slope), which GCC
   * selects without the branch cg_attn_leaky_grad's product in one arm costs */
  (void)nd;
  (void)ns;
#pragma omp parallel num_threads(nt) if (par)
  {
#pragma omp for schedule(static) nowait
    for (int64_t r = 0; r < e->nrows; r++) {
      float *dr = der + r * ldr;
      for (int64_t h = 0; h < heads; h++) dr[h] = 0.0f;
      for (int64_t k = e->rowptr[r]; k < e->rowptr[r + 1]; k++)
        for (int64_t h = 0; h < heads; h++)
          dr[h] += ds[k * heads + h] * pick_bits(s[k * heads + h] > 0.0f, 1.0f, slope);
    }
#pragma omp for schedule(static)
    for (int64_t u = 0; u < e->ncols; u++) {
      float *dl = del + u * lde;
      for (int64_t h = 0; h < heads; h++) dl[h] = 0.0f;
      for (int64_t j = e->t_ptr[u]; j < e->t_ptr[u + 1]; j++) {
        const int64_t k = e->t_eid[j];
        for (int64_t h = 0; h < heads; h++)
          dl[h] += ds[k * heads + h] * pick_bits(s[k * heads + h] > 0.0f, 1.0f, slope);
      }
    }
  }
}

static void cpu_edge_softmax(struct cg_backend *be, const struct cg_edges *e, const float *s,
                             int64_t heads, float *alpha) {
  const int64_t n = e->nrows * heads;
#pragma omp parallel for num_threads(nt_of(be)) schedule(static) if (e->nnz * heads >= ATTN_PAR_MIN)
  for (int64_t i = 0; i < n; i++) cg_attn_softmax_rh(e, s, heads, alpha, i / heads, i % heads);
}

static void cpu_edge_softmax_bwd(struct cg_backend *be, const struct cg_edges *e, const float *alpha,
                                 const float *dalpha, int64_t heads, float *ds) {
  const int64_t n = e->nrows * heads;
#pragma omp parallel for num_threads(nt_of(be)) schedule(static) if (e->nnz * heads >= ATTN_PAR_MIN)
  for (int64_t i = 0; i < n; i++) cg_attn_softmax_bwd_rh(e, alpha, dalpha, heads, ds, i / heads, i % heads);
}

/* The dropouts of p <= 0 (keeps everything, draws nothing, as the dense dropout) and
 * p >= 1 (keeps nothing) over n values: 1 when done, 0 when p needs the draws. */
static int dropout_trivial(const float *in, float *out, int64_t n, float p) {
  if (p <= 0.0f) {
    if (out != in)
      for (int64_t i = 0; i < n; i++) out[i] = in[i];
    return 1;
  }
  if (p >= 1.0f) {
    for (int64_t i = 0; i < n; i++) out[i] = 0.0f;
    return 1;
  }
  return 0;
}

static void cpu_edge_dropout(struct cg_backend *be, const struct cg_edges *e, const float *in,
                             float *out, int64_t heads, const int32_t *gid, float p,
                             struct cg_dropout_key key) {
  const int64_t n = e->nnz * heads;
  if (dropout_trivial(in, out, n, p)) return;
  const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for num_threads(nt_of(be)) schedule(static) if (n >= ATTN_PAR_MIN)
  for (int64_t r = 0; r < e->nrows; r++) {
    const uint32_t dst = (uint32_t)gid[r];
    for (int64_t k = e->rowptr[r]; k < e->rowptr[r + 1]; k++)
      cg_attn_dropout_edge(in + k * heads, out + k * heads, heads, (uint32_t)gid[e->colidx[k]], dst, p,
                           scale, key.seed, key.epoch, key.layer);
  }
}

static void cpu_spmm_edge(struct cg_backend *be, const struct cg_edges *e, const float *alpha,
                          int64_t heads, int64_t f, const float *x, int64_t ldx, float *y, int64_t ldy) {
  const int64_t w = heads * f;
  ATTN_REQUIRE(f >= 1 && ldx >= w && ldy >= w, "spmm_edge: width %lld x %lld, strides %lld %lld",
               (long long)heads, (long long)f, (long long)ldx, (long long)ldy);
  /* cg_attn_spmm_elem's sums, a row at a time: each y[v, c] starts at 0 and adds its edges'
   * alpha x in CSR order, as there (the same bits), with the columns of a head innermost so
   * that they vectorise (element by element, each walked the row's edges again) */
#pragma omp parallel for num_threads(nt_of(be)) schedule(static) if (e->nnz * w >= ATTN_PAR_MIN)
  for (int64_t v = 0; v < e->nrows; v++) {
    float *yr = y + v * ldy;
    for (int64_t c = 0; c < w; c++) yr[c] = 0.0f;
    for (int64_t k = e->rowptr[v]; k < e->rowptr[v + 1]; k++) {
      const float *xr = x + (int64_t)e->colidx[k] * ldx;
      for (int64_t h = 0; h < heads; h++) {
        const float a = alpha[k * heads + h];
        for (int64_t c = h * f; c < (h + 1) * f; c++) yr[c] += a * xr[c];
      }
    }
  }
}

static void cpu_spmm_edge_bwd_x(struct cg_backend *be, const struct cg_edges *e, const float *alpha,
                                int64_t heads, int64_t f, const float *dy, int64_t lddy, float *dx,
                                int64_t lddx) {
  const int64_t w = heads * f;
  ATTN_REQUIRE(f >= 1 && lddy >= w && lddx >= w, "spmm_edge_bwd_x: width %lld x %lld, strides %lld %lld",
               (long long)heads, (long long)f, (long long)lddy, (long long)lddx);
  /* cg_attn_spmm_bwd_x_elem's sums a column of the operator at a time, in its order (the
   * same bits), the columns of a head innermost (as cpu_spmm_edge) */
#pragma omp parallel for num_threads(nt_of(be)) schedule(static) if (e->nnz * w >= ATTN_PAR_MIN)
  for (int64_t u = 0; u < e->ncols; u++) {
    float *dr = dx + u * lddx;
    for (int64_t c = 0; c < w; c++) dr[c] = 0.0f;
    for (int64_t j = e->t_ptr[u]; j < e->t_ptr[u + 1]; j++) {
      const float *gr = dy + (int64_t)e->t_row[j] * lddy;
      const float *al = alpha + e->t_eid[j] * heads;
      for (int64_t h = 0; h < heads; h++) {
        const float a = al[h];
        for (int64_t c = h * f; c < (h + 1) * f; c++) dr[c] += a * gr[c];
      }
    }
  }
}

static void cpu_spmm_edge_bwd_alpha(struct cg_backend *be, const struct cg_edges *e, int64_t heads,
                                    int64_t f, const float *x, int64_t ldx, const float *dy,
                                    int64_t lddy, float *dalpha) {
  const int64_t w = heads * f;
  ATTN_REQUIRE(f >= 1 && ldx >= w && lddy >= w, "spmm_edge_bwd_alpha: width %lld x %lld, strides %lld %lld",
               (long long)heads, (long long)f, (long long)ldx, (long long)lddy);
  const int64_t n = e->nrows * heads;
#pragma omp parallel for num_threads(nt_of(be)) schedule(static) if (e->nnz * w >= ATTN_PAR_MIN)
  for (int64_t i = 0; i < n; i++)
    cg_attn_spmm_bwd_alpha_rh(e, heads, f, x, ldx, dy, lddy, dalpha, i / heads, i % heads);
}

static void cpu_elu_fwd(struct cg_backend *be, const float *x, float *y, int64_t n) {
#pragma omp parallel for num_threads(nt_of(be)) schedule(static) if (n >= 16384)
  for (int64_t i = 0; i < n; i++) y[i] = cg_elu(x[i]);
}

static void cpu_elu_bwd(struct cg_backend *be, const float *y, float *dy, int64_t n) {
#pragma omp parallel for num_threads(nt_of(be)) schedule(static) if (n >= 16384)
  for (int64_t i = 0; i < n; i++) dy[i] = cg_elu_grad(y[i], dy[i]);
}

/* ---- sparse input features: X·W, Xᵀ·dY and dropout of X's stored values ---- */

/* Row by row: each stored entry adds its value times a row of W into the output row,
 * the entries in their stored order, so that every output element is the same sum in the
 * same order as cg_attn_spmm_elem (H = 1) computes it (same bits), with the inner loop
 * over contiguous columns instead of one strided gather per element. */
static void cpu_csr_mm(struct cg_backend *be, const struct cg_edges *x, const float *vals, int64_t f,
                       const float *w, int64_t ldw, float *y, int64_t ldy) {
  ATTN_REQUIRE(f >= 1 && ldw >= f && ldy >= f, "csr_mm: width %lld, strides %lld %lld", (long long)f,
               (long long)ldw, (long long)ldy);
#pragma omp parallel for num_threads(nt_of(be)) schedule(static) if (x->nnz * f >= ATTN_PAR_MIN)
  for (int64_t r = 0; r < x->nrows; r++) {
    float *yr = y + r * ldy;
    for (int64_t c = 0; c < f; c++) yr[c] = 0.0f;
    for (int64_t k = x->rowptr[r]; k < x->rowptr[r + 1]; k++) {
      const float v = vals[k];
      const float *wr = w + (int64_t)x->colidx[k] * ldw;
      for (int64_t c = 0; c < f; c++) yr[c] += v * wr[c];
    }
  }
}

/* Column u of X (its transpose's row) at a time, the same way (cg_attn_spmm_bwd_x_elem's
 * sums, in its order). */
static void cpu_csr_mm_t(struct cg_backend *be, const struct cg_edges *x, const float *vals, int64_t f,
                         const float *dy, int64_t lddy, float *g, int64_t ldg) {
  ATTN_REQUIRE(f >= 1 && lddy >= f && ldg >= f, "csr_mm_t: width %lld, strides %lld %lld", (long long)f,
               (long long)lddy, (long long)ldg);
#pragma omp parallel for num_threads(nt_of(be)) schedule(static) if (x->nnz * f >= ATTN_PAR_MIN)
  for (int64_t u = 0; u < x->ncols; u++) {
    float *gu = g + u * ldg;
    for (int64_t c = 0; c < f; c++) gu[c] = 0.0f;
    for (int64_t j = x->t_ptr[u]; j < x->t_ptr[u + 1]; j++) {
      const float v = vals[x->t_eid[j]];
      const float *dr = dy + (int64_t)x->t_row[j] * lddy;
      for (int64_t c = 0; c < f; c++) gu[c] += v * dr[c];
    }
  }
}

static void cpu_csr_dropout(struct cg_backend *be, const struct cg_edges *x, const float *in, float *out,
                            const int32_t *gid, float p, struct cg_dropout_key key) {
  const int64_t n = x->nnz;
  if (dropout_trivial(in, out, n, p)) return;
  const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for num_threads(nt_of(be)) schedule(static) if (n >= ATTN_PAR_MIN)
  for (int64_t r = 0; r < x->nrows; r++)
    cg_csr_dropout_row(x, in, out, r, (uint32_t)gid[r], p, scale, key.seed, key.epoch, key.layer);
}

void cpu_attn_install(struct cg_backend *be) {
  be->csr_mm = cpu_csr_mm;
  be->csr_mm_t = cpu_csr_mm_t;
  be->csr_dropout = cpu_csr_dropout;
  be->edge_scores = cpu_edge_scores;
  be->edge_scores_bwd = cpu_edge_scores_bwd;
  be->edge_softmax = cpu_edge_softmax;
  be->edge_softmax_bwd = cpu_edge_softmax_bwd;
  be->edge_dropout = cpu_edge_dropout;
  be->spmm_edge = cpu_spmm_edge;
  be->spmm_edge_bwd_x = cpu_spmm_edge_bwd_x;
  be->spmm_edge_bwd_alpha = cpu_spmm_edge_bwd_alpha;
  be->elu_fwd = cpu_elu_fwd;
  be->elu_bwd = cpu_elu_bwd;
}
