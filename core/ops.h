/* core/ops.h — the backend op table.
 *
 * Every numerical operation of training goes through one `struct cg_backend`
 * (ggml-style table of function pointers). The CPU backend (core/, always built)
 * and the CUDA backend (cuda/) implement the same table; tests run every op on
 * every backend and compare with the CPU backend.
 *
 * Conventions
 * - Dense matrices are row-major float32; `ld*` is the row stride in elements.
 * - Pointers passed to ops are *backend memory*: allocated with be->alloc (host
 *   memory for CPU, device memory for CUDA). Index arrays are int32 local ids.
 * - Ops are enqueued in order on the backend's one stream; they may return before
 *   the work is done. be->sync() waits for all of it. Ops that return a value to
 *   the host (losses, counts) synchronise themselves.
 * - Ops called inside the training step do not allocate and do not fail: invalid
 *   arguments are programming errors, and they and a CUDA failure there are fatal
 *   (core/fatal.h: logged with file:line, then the process ends, under MPI the
 *   whole job, so no MPI peer hangs).
 * - Setup calls (create, alloc, spmat_create, upload) return a status.
 * - Reproducibility: the CPU backend is deterministic for a fixed thread count.
 */
#ifndef CAPGNN_CORE_OPS_H
#define CAPGNN_CORE_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "csr.h"

#ifdef __cplusplus
extern "C" {
#endif

enum cg_device_kind { CG_DEVICE_CPU = 0, CG_DEVICE_CUDA = 1 };

/* A sparse matrix uploaded to a backend (opaque, backend-owned). */
struct cg_spmat;
/* An upload channel of a backend (opaque, backend-owned; see "side uploads" below). */
struct cg_upchan;

struct cg_adam_params {
  float lr, beta1, beta2, eps, weight_decay;
  int decoupled; /* 0: Adam with L2 (g += wd*w, as torch.optim.Adam); 1: AdamW (w -= lr*wd*w) */
};

/* torch.optim.SGD (core/sgd.h): L2 weight decay in the gradient, momentum without
 * dampening or Nesterov (0: plain SGD). Plain data: passed by value to the kernel. */
struct cg_sgd_params {
  float lr, momentum, weight_decay;
};

/* Dropout site key: with the global vertex id of each row and the column, this
 * fully determines the mask (core/philox.h). */
struct cg_dropout_key {
  uint64_t seed;
  uint32_t epoch, layer;
};

/* A graph's in-edges on a backend, as the attention ops (GAT) read them; every
 * pointer is backend memory (cg_edges_upload, core/attn.h, builds one from a host CSR).
 * Edge k of row r (k in [rowptr[r], rowptr[r+1])) goes from column colidx[k] to r.
 * The transpose lists, per column u, the edges whose source is u: j in
 * [t_ptr[u], t_ptr[u+1]) is edge t_eid[j], of row t_row[j], in increasing k. It
 * lets the backward passes that sum over a column's edges (gradients of source
 * rows) run as row sums: deterministic, no atomics. */
struct cg_edges {
  int64_t nrows, ncols, nnz;
  const int64_t *rowptr; /* nrows + 1 */
  const int32_t *colidx; /* nnz */
  const int64_t *t_ptr;  /* ncols + 1 */
  const int32_t *t_row;  /* nnz */
  const int64_t *t_eid;  /* nnz */
};

struct cg_backend {
  const char *name;             /* "cpu", "cuda" */
  enum cg_device_kind kind;
  void *impl;                   /* backend-private state */
  struct cg_backend *wraps;     /* a wrapper's inner backend (ops_emulate.h, ops_profile.h); NULL
                                   for a backend that runs its ops itself */

  void (*destroy)(struct cg_backend *be);

  /* ---- memory (setup) ---- */
  int (*alloc)(struct cg_backend *be, void **p, size_t bytes, const char *what);
  void (*free)(struct cg_backend *be, void *p); /* accepts NULL */
  /* host -> backend, backend -> host, backend -> backend; ordered on the stream,
   * upload/download return after the copy is complete. */
  int (*upload)(struct cg_backend *be, void *dst, const void *src, size_t bytes);
  int (*download)(struct cg_backend *be, void *dst, const void *src, size_t bytes);
  void (*copy)(struct cg_backend *be, void *dst, const void *src, size_t bytes);
  void (*sync)(struct cg_backend *be);
  /* Free and total memory of the device in bytes (CPU: MemAvailable / MemTotal). */
  int (*mem_info)(struct cg_backend *be, size_t *free_bytes, size_t *total_bytes);

  /* ---- side uploads (optional: NULL on a backend that needs none, the CPU backend) ----
   * Host-to-backend copies on a channel of their own (CUDA: a stream), which the
   * backend's stream waits for only when told to: how a background host thread moves
   * rows to the device while the stream computes (jaca/prefetch.c). All seven are set
   * or none is. A channel's calls must not overlap each other (the caller serialises
   * them); each may come from any host thread, while another thread enqueues the
   * backend's other ops (the only entries of this table that may). */
  /* Pinned (page-locked) host memory, what side uploads copy from; free accepts NULL. */
  int (*host_alloc)(struct cg_backend *be, void **p, size_t bytes, const char *what);
  void (*host_free)(struct cg_backend *be, void *p);
  int (*upchan_create)(struct cg_backend *be, struct cg_upchan **out);
  /* Waits for every upload enqueued on ch, then releases it; accepts NULL. */
  void (*upchan_destroy)(struct cg_backend *be, struct cg_upchan *ch);
  /* Starts a batch: waits on the host until every upload enqueued on ch so far has
   * completed (their sources may be rewritten once it returns), and orders the uploads
   * enqueued from now on after all the work enqueued on the backend's stream so far
   * (they cannot overwrite memory that work still reads). */
  int (*upchan_begin)(struct cg_backend *be, struct cg_upchan *ch);
  /* Enqueues the copy of `bytes` from host `src` (from host_alloc; left unchanged until
   * the next upchan_begin or upchan_destroy) to backend `dst`, and returns at once. */
  int (*upchan_upload)(struct cg_backend *be, struct cg_upchan *ch, void *dst, const void *src, size_t bytes);
  /* The backend's stream waits (the host does not) for every upload enqueued on ch so
   * far: ops enqueued on the backend after this call read what those uploads wrote. */
  int (*upchan_join)(struct cg_backend *be, struct cg_upchan *ch);

  /* ---- dense ---- */
  /* C[m x n] = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T (ta/tb = 1).
   * op(A) is m x k, op(B) is k x n, all row-major. */
  void (*gemm)(struct cg_backend *be, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
               const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
               int64_t ldc);
  void (*fill)(struct cg_backend *be, float *x, int64_t n, float value);
  void (*axpy)(struct cg_backend *be, int64_t n, float alpha, const float *x, float *y); /* y += a*x */
  void (*scale)(struct cg_backend *be, int64_t n, float alpha, float *x);

  /* ---- sparse ---- */
  /* Upload a host CSR (values may be NULL = all ones). The backend may reorder or
   * convert internally (index width, kernel choice); results must not change. */
  int (*spmat_create)(struct cg_backend *be, const struct cg_csr *host, struct cg_spmat **out);
  void (*spmat_destroy)(struct cg_backend *be, struct cg_spmat *a); /* accepts NULL */
  /* Y[a.nrows x f] = A * X[a.ncols x f] (overwrites Y). ldx/ldy row strides >= f. */
  void (*spmm)(struct cg_backend *be, const struct cg_spmat *a, const float *x, int64_t ldx,
               float *y, int64_t ldy, int64_t f);

  /* ---- elementwise and layer ops ---- */
  void (*bias_add)(struct cg_backend *be, float *y, const float *bias, int64_t rows, int64_t cols);
  /* db[cols] = sum over rows of dy (overwrites db). */
  void (*bias_grad)(struct cg_backend *be, const float *dy, int64_t rows, int64_t cols, float *db);
  /* y = !(x <= 0) ? x : 0 (y may equal x): a NaN passes, as in torch.relu, so a forward
   * pass that overflowed reaches the loss and the run stops as diverged. */
  void (*relu_fwd)(struct cg_backend *be, const float *x, float *y, int64_t n);
  /* dx = y > 0 ? dy : 0, in place on dy. y is the ReLU *output*; where it is NaN the
   * gradient is 0 (torch passes dy there; no matter: the loss is NaN and the run stops). */
  void (*relu_bwd)(struct cg_backend *be, const float *y, float *dy, int64_t n);
  /* out = dropout(in) with the mask of core/philox.h for rows with global ids gid[rows];
   * out may equal in. Applying it to a gradient with the same key is the backward. */
  void (*dropout)(struct cg_backend *be, const float *in, float *out, int64_t rows, int64_t cols,
                  const int32_t *gid, float p, struct cg_dropout_key key);
  /* The backward of hd = dropout(relu(x)) from the dropout's output: dy = hd > 0 ? dy * scale
   * : 0, in place, scale = 1 / (1 - p) as the dropout computes it (0 <= p < 1). hd > 0 exactly where the
   * ReLU output was > 0 and kept (scale >= 1, no flush to zero), so this is bit for bit the
   * dropout applied to dy with the same key followed by relu_bwd, without drawing the mask
   * again and in one pass. */
  void (*dropout_relu_bwd)(struct cg_backend *be, const float *hd, float *dy, int64_t n, float scale);
  /* y = (x - mean) * rstd * gamma + beta per row; saves mean[rows], rstd[rows]. */
  void (*layernorm_fwd)(struct cg_backend *be, const float *x, int64_t rows, int64_t cols,
                        const float *gamma, const float *beta, float eps, float *y, float *mean,
                        float *rstd);
  /* dx (overwrite), dgamma and dbeta (overwrite, summed over rows). */
  void (*layernorm_bwd)(struct cg_backend *be, const float *dy, const float *x, const float *mean,
                        const float *rstd, const float *gamma, int64_t rows, int64_t cols,
                        float *dx, float *dgamma, float *dbeta);

  /* ---- losses and metrics (return to host; synchronising) ---- */
  /* Softmax cross-entropy over the rows idx[n_idx] of logits[rows x cols].
   * dlogits is zeroed entirely, then dlogits[r] = scale * (softmax(r) - onehot(label[r]))
   * for r in idx. *loss_sum = sum over idx of -log softmax(r)[label[r]] (unscaled, double).
   * Non-finite logits: a row with a NaN or +inf anywhere, or with every logit -inf, gets
   * NaN in all its dlogits and makes *loss_sum NaN (whichever column, and whatever row
   * maximum a backend shifts by: the NaN reaches the row's exp sum); a -inf among finite
   * logits is ordinary (exp gives 0); other rows are unaffected. */
  void (*xent)(struct cg_backend *be, const float *logits, int64_t rows, int64_t cols,
               const int32_t *labels, const int32_t *idx, int64_t n_idx, float scale,
               float *dlogits, double *loss_sum);
  /* Sigmoid binary cross-entropy for multi-label targets labels[rows x cols] (0/1 bytes),
   * same conventions; *loss_sum sums over idx rows and all cols. */
  void (*bce)(struct cg_backend *be, const float *logits, int64_t rows, int64_t cols,
              const uint8_t *labels, const int32_t *idx, int64_t n_idx, float scale,
              float *dlogits, double *loss_sum);
  /* Single-label (mlabels == NULL): out[0] = rows of idx whose argmax equals labels[r]
   * (first maximum wins; NaN as a scan from column 0 keeping the first strict maximum
   * treats it: argmax 0 when column 0 is NaN, a NaN elsewhere never), out[1] = out[2] = 0. Multi-label (labels == NULL): predicted
   * positive when logit > 0; out = {true positives, false positives, false negatives}. */
  void (*eval_counts)(struct cg_backend *be, const float *logits, int64_t rows, int64_t cols,
                      const int32_t *labels, const uint8_t *mlabels, const int32_t *idx,
                      int64_t n_idx, int64_t out[3]);

  /* ---- optimizer ---- */
  /* One Adam/AdamW step on n parameters at step t >= 1 (bias correction uses t). */
  void (*adam)(struct cg_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
               const struct cg_adam_params *p, int64_t t);

  /* One SGD step on n parameters (core/sgd.h); buf is the momentum buffer (untouched
   * when p->momentum is 0). */
  void (*sgd)(struct cg_backend *be, float *w, const float *g, float *buf, int64_t n,
              const struct cg_sgd_params *p);

  /* ---- halo rows ---- */
  /* dst[i] = src[idx[i]] for i < n (rows of width cols, row strides = cols). */
  void (*gather_rows)(struct cg_backend *be, const float *src, int64_t cols, const int32_t *idx,
                      int64_t n, float *dst);
  /* dst[idx[i]] += src[i]; idx may repeat (the CPU backend adds in order of i). */
  void (*scatter_add_rows)(struct cg_backend *be, const float *src, int64_t cols,
                           const int32_t *idx, int64_t n, float *dst);

  /* ---- graph attention (GAT; per-head layouts) ----
   * H heads. Per-edge arrays are [nnz x H] (edge k, head h at k*H + h); per-vertex
   * attention terms el (sources, ncols rows) and er (destinations, nrows rows) are
   * [rows x H] at row strides lde / ldr; features are [rows x H*F] at row stride ld*,
   * head h in columns [h*F, (h+1)*F). Element formulas: core/attn.h (shared with the
   * CUDA kernels). */
  /* s[k,h] = LeakyReLU_slope(el[colidx[k],h] + er[r,h]) for edge k of row r. */
  void (*edge_scores)(struct cg_backend *be, const struct cg_edges *e, const float *el, int64_t lde,
                      const float *er, int64_t ldr, int64_t heads, float slope, float *s);
  /* With g = ds * LeakyReLU'(pre) (read from s: s > 0 iff pre > 0): del[u,h] = sum of g
   * over the edges out of u (ncols rows), der[v,h] = sum over the edges into v (nrows
   * rows); both overwritten (only their H first columns of each row). */
  void (*edge_scores_bwd)(struct cg_backend *be, const struct cg_edges *e, const float *s,
                          const float *ds, int64_t heads, float slope, float *del, int64_t lde,
                          float *der, int64_t ldr);
  /* alpha = softmax of s over each row's edges, per head, stable (the row's maximum is
   * subtracted first); rows without edges have nothing. alpha may equal s. */
  void (*edge_softmax)(struct cg_backend *be, const struct cg_edges *e, const float *s,
                       int64_t heads, float *alpha);
  /* ds = alpha * (dalpha - sum over the row of alpha * dalpha), per head; ds may equal
   * dalpha. */
  void (*edge_softmax_bwd)(struct cg_backend *be, const struct cg_edges *e, const float *alpha,
                           const float *dalpha, int64_t heads, float *ds);
  /* Attention dropout: out[k,h] = in[k,h] kept with probability 1-p and scaled by
   * 1/(1-p), the mask keyed by (key, global id of the source, global id of the
   * destination, head) — gid[] maps local rows and columns (local ids) to global
   * ids — so every rank draws the same mask for an edge (core/attn.h). out may equal
   * in; applied to a gradient with the same key it is the backward. */
  void (*edge_dropout)(struct cg_backend *be, const struct cg_edges *e, const float *in, float *out,
                       int64_t heads, const int32_t *gid, float p, struct cg_dropout_key key);
  /* y[v, h*F+f] = sum over the edges k of row v of alpha[k,h] * x[colidx[k], h*F+f]
   * (nrows rows of y overwritten; x has ncols rows). */
  void (*spmm_edge)(struct cg_backend *be, const struct cg_edges *e, const float *alpha,
                    int64_t heads, int64_t f, const float *x, int64_t ldx, float *y, int64_t ldy);
  /* Its backward: dx[u, h*F+f] = sum over the edges k out of u of alpha[k,h] *
   * dy[row(k), h*F+f] (ncols rows of dx overwritten, through the transpose) ... */
  void (*spmm_edge_bwd_x)(struct cg_backend *be, const struct cg_edges *e, const float *alpha,
                          int64_t heads, int64_t f, const float *dy, int64_t lddy, float *dx,
                          int64_t lddx);
  /* ... and dalpha[k,h] = sum_f dy[row(k), h*F+f] * x[colidx[k], h*F+f] (overwritten). */
  void (*spmm_edge_bwd_alpha)(struct cg_backend *be, const struct cg_edges *e, int64_t heads,
                              int64_t f, const float *x, int64_t ldx, const float *dy, int64_t lddy,
                              float *dalpha);
  /* ELU (alpha = 1): y = x > 0 ? x : exp(x) - 1 (y may equal x); backward in place on
   * dy from the output y: dy *= y > 0 ? 1 : y + 1. */
  void (*elu_fwd)(struct cg_backend *be, const float *x, float *y, int64_t n);
  void (*elu_bwd)(struct cg_backend *be, const float *y, float *dy, int64_t n);

  /* ---- sparse input features (issue #14 item 3) ----
   * X is a sparse matrix [x->nrows x x->ncols] given as the structure of a struct
   * cg_edges (row r holds columns colidx[rowptr[r] .. rowptr[r+1]); cg_edges_upload
   * builds it with the transpose) and its stored values vals[nnz]; X is never made
   * dense. Element formulas: core/attn.h (cg_csr_*), shared with the CUDA kernels. */
  /* Y[x.nrows x f] = X · W, W [x.ncols x f] (Y overwritten; row strides ldw, ldy >= f).
   * Each row sums its stored entries in order. */
  void (*csr_mm)(struct cg_backend *be, const struct cg_edges *x, const float *vals, int64_t f,
                 const float *w, int64_t ldw, float *y, int64_t ldy);
  /* G[x.ncols x f] = Xᵀ · dY, dY [x.nrows x f] (G overwritten: a column without stored
   * entries gets zeros), through the transpose: deterministic, no atomics. */
  void (*csr_mm_t)(struct cg_backend *be, const struct cg_edges *x, const float *vals, int64_t f,
                   const float *dy, int64_t lddy, float *g, int64_t ldg);
  /* Dropout of X's stored values: out[k] = in[k] * 1/(1-p) when the element (row r,
   * column colidx[k]) is kept, else 0, with the mask `dropout` draws for that element
   * of the dense matrix (key, gid[r], column; core/philox.h): the sparse and the dense
   * paths drop the same entries. out may equal in. */
  void (*csr_dropout)(struct cg_backend *be, const struct cg_edges *x, const float *in, float *out,
                      const int32_t *gid, float p, struct cg_dropout_key key);
};

/* The CPU backend (always available). threads <= 0 means OpenMP's default.
 * GEMM goes to oneDNN's sgemm when Debian's libdnnl2 (oneDNN 2.x, OpenMP) loads, else to
 * OpenBLAS (its thread count set to the same value);
 * CAPGNN_CPU_GEMM=openblas|onednn forces one (an unknown name, or onednn when it does not
 * load: CG_ERR_ARG / CG_ERR_UNSUPPORTED). */
int cg_backend_cpu_create(int threads, struct cg_backend **out);
/* The CPU backend's settings (CAPGNN_CPU_GEMM, CAPGNN_CPU_KERNELS, CAPGNN_CPU_SPMM and
 * CAPGNN_CPU_SPMM_TILE / _PANEL / _GROUP) checked as cg_backend_cpu_create and the sparse
 * matrices' build check them (not whether oneDNN loads): CG_ERR_ARG with the message they
 * would fail with, CG_OK when unset or valid. Lets a command refuse a bad value at start,
 * before it loads the graph. */
int cg_cpu_settings_check(void);
/* The host's available and total memory in bytes (/proc/meminfo's MemAvailable and
 * MemTotal; either pointer may be NULL): what the CPU backend's mem_info reports, for
 * host memory next to a device backend. CG_ERR_IO / CG_ERR_FORMAT without them. */
int cg_host_mem_info(size_t *free_bytes, size_t *total_bytes);
/* The backend that runs the ops: be itself, or the one inside its wrappers (an emulating
 * wrapper, a profiling one, or both: CAPGNN_EMULATE_SPEED with CAPGNN_PROFILE_OPS). */
struct cg_backend *cg_backend_base(struct cg_backend *be);
const struct cg_backend *cg_backend_base_const(const struct cg_backend *be);
/* Threads of a CPU backend (the resolved count: never 0; be may be a wrapper of one), 0
 * for any other backend. */
int cg_backend_cpu_threads(const struct cg_backend *be);
/* The library behind a CPU backend's GEMM (be may be a wrapper of one), as it
 * describes itself: OpenBLAS's openblas_get_config() (version, target, threading), or
 * oneDNN's version when the backend uses oneDNN's sgemm (cg_backend_cpu_create). */
const char *cg_backend_cpu_blas_info(const struct cg_backend *be);
/* The short name of a CPU backend's GEMM library, "onednn" or "openblas" (be may be a
 * wrapper of one); NULL for any other backend. Checkpoints record it: another
 * library rounds differently, so a resume under another one is not bit for bit. */
const char *cg_backend_cpu_gemm_name(const struct cg_backend *be);
/* Calls be->destroy and sets *be to NULL; accepts NULL. */
void cg_backend_destroy(struct cg_backend **be);

#ifdef __cplusplus
}
#endif
#endif
