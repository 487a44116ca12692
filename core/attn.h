/* core/attn.h — graph attention (GAT) ops, written once for the CPU backend
 * (core/cpu_attn.c) and the CUDA kernels (cuda/attn.cu), as core/adam.h is for Adam:
 * each function below computes the elements one CPU loop iteration or one CUDA thread
 * owns, so the two backends run the same arithmetic in the same order (the GPU's
 * expf and its fused multiply-adds may still move the last bits). Also the set-up of
 * a struct cg_edges (core/ops.h) on any backend.
 *
 * Layouts (core/ops.h, "graph attention"): per-edge [nnz x H], per-vertex terms
 * [rows x H] at a row stride, features [rows x H*F] at a row stride.
 *
 * Attention dropout is keyed by the edge's global identity, (global id of its
 * source, global id of its destination), not by a position in some CSR: the same
 * on every rank and under any renumbering, and nothing per edge has to be carried by
 * the local problem. Philox counter (core/philox.h): c0 = source gid, c1 =
 * destination gid, c2 = 0x80000000 | (head / 4) << 16 | layer (layer < 2^16, heads
 * < 2^17), c3 = epoch; the lane is head % 4. Bit 31 of c2 keeps the stream apart
 * from feature dropout (c2 = layer < 2^16) and from the initialisation (c2 = 'INIT',
 * bit 31 clear). A graph with repeated (source, destination) pairs gives the copies
 * the same mask — the same on every rank, so still exact. */
#ifndef CAPGNN_CORE_ATTN_H
#define CAPGNN_CORE_ATTN_H

#include <math.h>
#include <stdint.h>

#include "core/csr.h"
#include "core/hostdev.h"
#include "core/ops.h"
#include "core/philox.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- set-up (host) ---- */

/* Upload the structure of `a` (values ignored) and its transpose by edge to `be`:
 * *out's arrays are backend memory (release with cg_edges_free, also after a
 * failure). Rows and columns must fit int32. */
int cg_edges_upload(struct cg_backend *be, const struct cg_csr *a, struct cg_edges *out);
void cg_edges_free(struct cg_backend *be, struct cg_edges *e); /* accepts a zeroed struct */

/* The transpose by edge on the host: t_ptr (ncols + 1), t_row and t_eid (nnz each),
 * cg_malloc'ed, edges of a column in increasing edge number. */
int cg_edges_transpose_host(const struct cg_csr *a, int64_t **t_ptr, int32_t **t_row,
                            int64_t **t_eid);

#ifdef __cplusplus
}
#endif

/* ---- elements (CPU loops and CUDA threads) ---- */

CG_HD float cg_attn_leaky(float x, float slope) { return x > 0.0f ? x : slope * x; }

/* Scores of row r, head h. */
CG_HD void cg_attn_scores_rh(const struct cg_edges *e, const float *el, int64_t lde, const float *er,
                             int64_t ldr, int64_t H, float slope, float *s, int64_t r, int64_t h) {
  const float b = er[r * ldr + h];
  for (int64_t k = e->rowptr[r]; k < e->rowptr[r + 1]; k++)
    s[k * H + h] = cg_attn_leaky(el[(int64_t)e->colidx[k] * lde + h] + b, slope);
}

/* ds * LeakyReLU'(pre), the derivative read from the output (s > 0 iff pre > 0). */
CG_HD float cg_attn_leaky_grad(float s, float ds, float slope) { return s > 0.0f ? ds : slope * ds; }

/* der[r,h]: the sum over row r's edges. */
CG_HD void cg_attn_scores_bwd_dst(const struct cg_edges *e, const float *s, const float *ds,
                                  int64_t H, float slope, float *der, int64_t ldr, int64_t r,
                                  int64_t h) {
  float acc = 0.0f;
  for (int64_t k = e->rowptr[r]; k < e->rowptr[r + 1]; k++)
    acc += cg_attn_leaky_grad(s[k * H + h], ds[k * H + h], slope);
  der[r * ldr + h] = acc;
}

/* del[u,h]: the sum over the edges out of column u (the transpose). */
CG_HD void cg_attn_scores_bwd_src(const struct cg_edges *e, const float *s, const float *ds,
                                  int64_t H, float slope, float *del, int64_t lde, int64_t u,
                                  int64_t h) {
  float acc = 0.0f;
  for (int64_t j = e->t_ptr[u]; j < e->t_ptr[u + 1]; j++) {
    const int64_t k = e->t_eid[j];
    acc += cg_attn_leaky_grad(s[k * H + h], ds[k * H + h], slope);
  }
  del[u * lde + h] = acc;
}

/* Softmax over row r's edges, head h: subtract the row's maximum, exponentiate, divide
 * by the sum. alpha may equal s (each element is read before it is written). */
CG_HD void cg_attn_softmax_rh(const struct cg_edges *e, const float *s, int64_t H, float *alpha,
                              int64_t r, int64_t h) {
  const int64_t k0 = e->rowptr[r], k1 = e->rowptr[r + 1];
  if (k0 == k1) return;
  float mx = s[k0 * H + h];
  for (int64_t k = k0 + 1; k < k1; k++) mx = fmaxf(mx, s[k * H + h]);
  float sum = 0.0f;
  for (int64_t k = k0; k < k1; k++) {
    const float x = expf(s[k * H + h] - mx);
    alpha[k * H + h] = x;
    sum += x;
  }
  const float inv = 1.0f / sum; /* sum >= 1: the maximum contributes exp(0) */
  for (int64_t k = k0; k < k1; k++) alpha[k * H + h] *= inv;
}

CG_HD void cg_attn_softmax_bwd_rh(const struct cg_edges *e, const float *alpha, const float *dalpha,
                                  int64_t H, float *ds, int64_t r, int64_t h) {
  const int64_t k0 = e->rowptr[r], k1 = e->rowptr[r + 1];
  float dot = 0.0f;
  for (int64_t k = k0; k < k1; k++) dot += alpha[k * H + h] * dalpha[k * H + h];
  for (int64_t k = k0; k < k1; k++) ds[k * H + h] = alpha[k * H + h] * (dalpha[k * H + h] - dot);
}

/* The counter word c2 of head group q (heads 4q..4q+3) at `layer`. */
CG_HD uint32_t cg_attn_dropout_c2(uint32_t layer, int64_t q) {
  return 0x80000000u | ((uint32_t)q << 16) | (layer & 0xFFFFu);
}

/* Uniform in [0,1) for one attention dropout site (what cg_attn_dropout_edge draws). */
CG_HD float cg_attn_dropout_uniform(uint64_t seed, uint32_t epoch, uint32_t layer, uint32_t src,
                                    uint32_t dst, int64_t head) {
  const struct cg_philox_out o =
      cg_philox4x32_10(src, dst, cg_attn_dropout_c2(layer, head >> 2), epoch, (uint32_t)seed,
                       (uint32_t)(seed >> 32));
  return cg_u32_to_unit(o.v[head & 3]);
}

/* The H values of one edge (source gid src, destination gid dst). p in (0, 1). */
CG_HD void cg_attn_dropout_edge(const float *in, float *out, int64_t H, uint32_t src, uint32_t dst,
                                float p, float scale, uint64_t seed, uint32_t epoch,
                                uint32_t layer) {
  for (int64_t h0 = 0; h0 < H; h0 += 4) {
    const struct cg_philox_out o = cg_philox4x32_10(
        src, dst, cg_attn_dropout_c2(layer, h0 >> 2), epoch, (uint32_t)seed, (uint32_t)(seed >> 32));
    for (int64_t j = 0; j < 4 && h0 + j < H; j++)
      out[h0 + j] = cg_dropout_keep(cg_u32_to_unit(o.v[j]), p) ? in[h0 + j] * scale : 0.0f;
  }
}

/* y[v, c] (c in [0, H*F), head c / F). */
CG_HD float cg_attn_spmm_elem(const struct cg_edges *e, const float *alpha, int64_t H, int64_t F,
                              const float *x, int64_t ldx, int64_t v, int64_t c) {
  const int64_t h = c / F;
  float acc = 0.0f;
  for (int64_t k = e->rowptr[v]; k < e->rowptr[v + 1]; k++)
    acc += alpha[k * H + h] * x[(int64_t)e->colidx[k] * ldx + c];
  return acc;
}

/* dx[u, c]: the sum over the edges out of u (the transpose). */
CG_HD float cg_attn_spmm_bwd_x_elem(const struct cg_edges *e, const float *alpha, int64_t H,
                                    int64_t F, const float *dy, int64_t lddy, int64_t u, int64_t c) {
  const int64_t h = c / F;
  float acc = 0.0f;
  for (int64_t j = e->t_ptr[u]; j < e->t_ptr[u + 1]; j++)
    acc += alpha[e->t_eid[j] * H + h] * dy[(int64_t)e->t_row[j] * lddy + c];
  return acc;
}

/* dalpha of row r's edges, head h. */
CG_HD void cg_attn_spmm_bwd_alpha_rh(const struct cg_edges *e, int64_t H, int64_t F, const float *x,
                                     int64_t ldx, const float *dy, int64_t lddy, float *dalpha,
                                     int64_t r, int64_t h) {
  const float *g = dy + r * lddy + h * F;
  for (int64_t k = e->rowptr[r]; k < e->rowptr[r + 1]; k++) {
    const float *xs = x + (int64_t)e->colidx[k] * ldx + h * F;
    float acc = 0.0f;
    for (int64_t f = 0; f < F; f++) acc += g[f] * xs[f];
    dalpha[k * H + h] = acc;
  }
}

/* ---- sparse input features (ops csr_mm, csr_mm_t, csr_dropout; core/ops.h) ----
 * csr_mm and csr_mm_t are the per-edge SpMM and its backward with respect to x at
 * one head (cg_attn_spmm_elem / cg_attn_spmm_bwd_x_elem with H = 1, alpha = the
 * stored values): Y = X W and G = Xᵀ dY. Their dropout is the dense matrix's: element
 * (row r, column c) of X draws cg_dropout_uniform(key, gid[r], c), the number the
 * dense dropout draws for it, so both paths drop the same entries. */

/* Row r of csr_dropout: the stored values of the row, global id g. p in (0, 1). Columns
 * are increasing within a row, so consecutive columns of one group of 4 share a draw. */
CG_HD void cg_csr_dropout_row(const struct cg_edges *x, const float *in, float *out, int64_t r,
                              uint32_t g, float p, float scale, uint64_t seed, uint32_t epoch,
                              uint32_t layer) {
  uint32_t q = 0xFFFFFFFFu;
  struct cg_philox_out o = {{0u, 0u, 0u, 0u}};
  for (int64_t k = x->rowptr[r]; k < x->rowptr[r + 1]; k++) {
    const uint32_t c = (uint32_t)x->colidx[k];
    if ((c >> 2) != q) {
      q = c >> 2;
      o = cg_philox4x32_10(q, g, layer, epoch, (uint32_t)seed, (uint32_t)(seed >> 32));
    }
    out[k] = cg_dropout_keep(cg_u32_to_unit(o.v[c & 3u]), p) ? in[k] * scale : 0.0f;
  }
}

/* ELU (alpha = 1) and its derivative from the output (exp(x) = y + 1 for x <= 0). */
CG_HD float cg_elu(float x) { return x > 0.0f ? x : expm1f(x); }
CG_HD float cg_elu_grad(float y, float dy) { return y > 0.0f ? dy : dy * (y + 1.0f); }

#endif
