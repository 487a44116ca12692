/* cuda/cuda_kernels_internal.h — private: C launchers of the kernels in the cuda/ .cu files.
 *
 * Every launcher enqueues on the stream it is given, never allocates, never
 * synchronises, and checks the launch (cudaGetLastError): a failure is fatal
 * (cg_cuda_fatal). Sizes are int64; grids are clamped and the kernels loop
 * (grid-stride), so any size that fits in device memory is accepted. */
#ifndef CAPGNN_CUDA_KERNELS_INTERNAL_H
#define CAPGNN_CUDA_KERNELS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cg_fatal("cuda", file, line, call, "%s", msg) (core/fatal.h): log
 * "[host:rank cuda] ERROR file:line: call failed: msg ...", then the fatal handler
 * ends the process (under MPI the whole job, so no peer is left blocked in a
 * collective). Inside a step a device failure cannot be handled. */
void cg_cuda_fatal(const char *file, int line, const char *call, const char *msg)
    __attribute__((noreturn));

#define CG_CUDA_FATAL_ON(call)                                                  \
  do {                                                                          \
    cudaError_t cg_err_ = (call);                                               \
    if (cg_err_ != cudaSuccess)                                                 \
      cg_cuda_fatal(__FILE__, __LINE__, #call, cudaGetErrorString(cg_err_));    \
  } while (0)

/* Checked after every kernel launch (catches bad configurations synchronously;
 * faults inside the kernel surface at the next synchronising call). */
#define CG_CUDA_LAUNCH_CHECK(name)                                              \
  do {                                                                          \
    cudaError_t cg_err_ = cudaGetLastError();                                   \
    if (cg_err_ != cudaSuccess)                                                 \
      cg_cuda_fatal(__FILE__, __LINE__, name, cudaGetErrorString(cg_err_));     \
  } while (0)

/* ---- elementwise (cuda/elementwise.cu) ---- */
void cgk_fill(cudaStream_t s, float *x, int64_t n, float value);
void cgk_axpy(cudaStream_t s, int64_t n, float alpha, const float *x, float *y);
void cgk_scale(cudaStream_t s, int64_t n, float alpha, float *x);
/* y[r*ld + c] = beta == 0 ? 0 : beta * y[r*ld + c] for r < rows, c < cols. */
void cgk_scale_strided(cudaStream_t s, float *y, int64_t rows, int64_t cols, int64_t ld, float beta);
void cgk_bias_add(cudaStream_t s, float *y, const float *bias, int64_t rows, int64_t cols);
void cgk_relu_fwd(cudaStream_t s, const float *x, float *y, int64_t n);
void cgk_relu_bwd(cudaStream_t s, const float *y, float *dy, int64_t n);
void cgk_dropout_relu_bwd(cudaStream_t s, const float *hd, float *dy, int64_t n, float scale);
void cgk_dropout(cudaStream_t s, const float *in, float *out, int64_t rows, int64_t cols,
                 const int32_t *gid, float p, uint64_t seed, uint32_t epoch, uint32_t layer);
/* One Adam/AdamW step: core/adam.h's cg_adam_update on every element, with the
 * coefficients from cg_adam_coefs_make (copied into the launch). */
struct cg_adam_coefs;
void cgk_adam(cudaStream_t s, float *w, const float *g, float *m, float *v, int64_t n,
              const struct cg_adam_coefs *c);
/* One SGD step: core/sgd.h's cg_sgd_update on every element (buf: momentum). */
struct cg_sgd_params;
void cgk_sgd(cudaStream_t s, float *w, const float *g, float *buf, int64_t n, const struct cg_sgd_params *p);
void cgk_gather_rows(cudaStream_t s, const float *src, int64_t cols, const int32_t *idx, int64_t n,
                     float *dst);
void cgk_scatter_add_rows(cudaStream_t s, const float *src, int64_t cols, const int32_t *idx,
                          int64_t n, float *dst);
/* Deterministic column sums over rows in double (two passes, fixed partition of
 * the rows; result rounded to float).
 * layernorm == 0: out1[c] = sum_r dy[r,c] (bias gradient; x, mean, rstd, out2 unused).
 * layernorm != 0: out1[c] = sum_r dy[r,c] * (x[r,c]-mean[r])*rstd[r] (dgamma), out2[c] =
 * sum_r dy[r,c] (dbeta). rows = 0 writes zeros (to both for layernorm, whatever the
 * pointers to the empty rows, NULL included). scratch holds scratch_doubles doubles; the
 * number of row chunks adapts to it (one chunk, written directly, when even two partial
 * rows do not fit). */
void cgk_colsum(cudaStream_t s, int layernorm, const float *dy, const float *x, const float *mean,
                const float *rstd, int64_t rows, int64_t cols, float *out1, float *out2,
                double *scratch, size_t scratch_doubles);

/* ---- row-wise layer ops, losses, metrics (cuda/rowwise.cu) ---- */
void cgk_layernorm_fwd(cudaStream_t s, const float *x, int64_t rows, int64_t cols,
                       const float *gamma, const float *beta, float eps, float *y, float *mean,
                       float *rstd);
/* dx only; dgamma/dbeta come from cgk_colsum. */
void cgk_layernorm_bwd_dx(cudaStream_t s, const float *dy, const float *x, const float *mean,
                          const float *rstd, const float *gamma, int64_t rows, int64_t cols,
                          float *dx);
/* Number of double partial sums the loss launchers may write (size of `partials`). */
#define CGK_LOSS_MAX_BLOCKS 1024
/* Writes dlogits rows of idx (the caller zeroes dlogits first) and the loss sum into
 * *d_loss (device double) via per-block partials summed in a fixed order. *d_bad
 * becomes nonzero when a row index (or, for xent, a label) is out of range. */
void cgk_xent(cudaStream_t s, const float *logits, int64_t rows, int64_t cols,
              const int32_t *labels, const int32_t *idx, int64_t n_idx, float scale, float *dlogits,
              double *partials, double *d_loss, unsigned long long *d_bad);
void cgk_bce(cudaStream_t s, const float *logits, int64_t rows, int64_t cols,
             const uint8_t *labels, const int32_t *idx, int64_t n_idx, float scale, float *dlogits,
             double *partials, double *d_loss, unsigned long long *d_bad);
/* d_counts[3] is overwritten (zeroed on the stream first). */
void cgk_eval_counts(cudaStream_t s, const float *logits, int64_t cols, const int32_t *labels,
                     const uint8_t *mlabels, const int32_t *idx, int64_t n_idx,
                     unsigned long long *d_counts);

/* ---- graph attention (cuda/attn.cu; the ops of core/ops.h, "graph attention") ---- */
struct cg_edges;
void cgk_edge_scores(cudaStream_t s, const struct cg_edges *e, const float *el, int64_t lde,
                     const float *er, int64_t ldr, int64_t heads, float slope, float *out);
void cgk_edge_scores_bwd(cudaStream_t s, const struct cg_edges *e, const float *sc, const float *ds,
                         int64_t heads, float slope, float *del, int64_t lde, float *der, int64_t ldr);
void cgk_edge_softmax(cudaStream_t s, const struct cg_edges *e, const float *sc, int64_t heads,
                      float *alpha);
void cgk_edge_softmax_bwd(cudaStream_t s, const struct cg_edges *e, const float *alpha,
                          const float *dalpha, int64_t heads, float *ds);
void cgk_edge_dropout(cudaStream_t s, const struct cg_edges *e, const float *in, float *out,
                      int64_t heads, const int32_t *gid, float p, uint64_t seed, uint32_t epoch,
                      uint32_t layer);
void cgk_csr_dropout(cudaStream_t s, const struct cg_edges *x, const float *in, float *out,
                     const int32_t *gid, float p, uint64_t seed, uint32_t epoch, uint32_t layer);
void cgk_spmm_edge(cudaStream_t s, const struct cg_edges *e, const float *alpha, int64_t heads,
                   int64_t f, const float *x, int64_t ldx, float *y, int64_t ldy);
void cgk_spmm_edge_bwd_x(cudaStream_t s, const struct cg_edges *e, const float *alpha, int64_t heads,
                         int64_t f, const float *dy, int64_t lddy, float *dx, int64_t lddx);
void cgk_spmm_edge_bwd_alpha(cudaStream_t s, const struct cg_edges *e, int64_t heads, int64_t f,
                             const float *x, int64_t ldx, const float *dy, int64_t lddy, float *dalpha);
void cgk_elu_fwd(cudaStream_t s, const float *x, float *y, int64_t n);
void cgk_elu_bwd(cudaStream_t s, const float *y, float *dy, int64_t n);

/* ---- SpMM (cuda/spmm.cu) ---- */
struct cgk_csr {
  int64_t nrows, ncols, nnz;
  const int64_t *rowptr; /* device, nrows + 1 */
  const int32_t *colidx; /* device, nnz */
  const float *vals;     /* device, nnz (never NULL: all-ones matrices get explicit ones) */
  const int32_t *heavy;  /* device list of rows with degree > heavy_threshold (n_heavy) */
  int64_t n_heavy;
  int64_t heavy_threshold;
  int64_t max_pass;      /* warp/rowsplit: at most this many columns per pass (32..1024) */
};
/* The hand kernels overwrite Y[nrows x f] (stride ldy) with A X. When split_heavy
 * is set (and the matrix has heavy rows), the heavy rows are computed by blocks at
 * the front of the same grid (one block per row, as rowsplit) and skipped by the
 * warp-per-row part. */
void cgk_spmm_warp(cudaStream_t s, const struct cgk_csr *a, const float *x, int64_t ldx, float *y,
                   int64_t ldy, int64_t f, int split_heavy);
#define CGK_SUBWARP_MAX_F 16
void cgk_spmm_subwarp(cudaStream_t s, const struct cgk_csr *a, const float *x, int64_t ldx,
                      float *y, int64_t ldy, int64_t f, int split_heavy);
/* rows == NULL: every row of A; else the n_rows rows listed (device array). */
void cgk_spmm_rowsplit(cudaStream_t s, const struct cgk_csr *a, const int32_t *rows,
                       int64_t n_rows, const float *x, int64_t ldx, float *y, int64_t ldy,
                       int64_t f);

/* Widest vector (4, 2 or 1 floats) that the width, both strides and both base
 * pointers allow. */
static inline int cgk_pick_vec(const float *x, int64_t ldx, const float *y, int64_t ldy, int64_t f) {
  uintptr_t px = (uintptr_t)x, py = (uintptr_t)y;
  if (f % 4 == 0 && ldx % 4 == 0 && ldy % 4 == 0 && px % 16 == 0 && py % 16 == 0) return 4;
  if (f % 2 == 0 && ldx % 2 == 0 && ldy % 2 == 0 && px % 8 == 0 && py % 8 == 0) return 2;
  return 1;
}

/* ---- tiled SpMM (cuda/spmm_tiled.cu; layout and host builder: cuda/spmm_tiles_internal.h) ---- */
struct cgk_tiles { /* device copies of struct cgk_tiles_host's arrays */
  int64_t nrows, ncols, nrb, ntiles;
  const int64_t *rb_tile;
  const int32_t *tile_col;
  const int64_t *tile_edge;
  const int32_t *tile_rowptr;
  const uint16_t *perm;
  const uint16_t *t_off;
  const float *t_val;     /* NULL when factored */
  const float *row_scale; /* factored only */
  const float *col_scale;
};
/* Y[nrows x f] += (tile part of A) X. Only rows that hold a slot are read and
 * written, columns >= f never. max_smem: the device's shared memory per block
 * (opt-in maximum); up to 128.5 KiB are used, less with narrower vectors. max_vec
 * (1, 2 or 4): the widest vector per lane to use. */
void cgk_spmm_tiled_add(cudaStream_t s, const struct cgk_tiles *t, const float *x, int64_t ldx,
                        float *y, int64_t ldy, int64_t f, size_t max_smem, int max_vec);

#ifdef __cplusplus
}
#endif
#endif
