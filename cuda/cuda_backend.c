/* cuda/cuda_backend.c — the CUDA op table: device setup, memory (cudaMalloc or the
 * arena), cuBLAS GEMM, cuSPARSE / hand-kernel SpMM dispatch, and the glue that
 * turns each op of core/ops.h into launches on the backend's one stream.
 *
 * Why the glue is C and the kernels .cu: the op table, error handling and library
 * calls need no device code, so they build with the project's C warnings; nvcc only
 * compiles the kernels (cuda/cuda_kernels_internal.h lists the launchers). */
#include "cuda/cuda_backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/adam.h"
#include "core/fatal.h"
#include "core/log.h"
#include "core/status.h"
#include "cuda/cuda_kernels_internal.h"
#include "cuda/cuda_libs_internal.h"
#include "cuda/spmm_tiles_internal.h"

#define CUDA_IMPL_MAGIC 0x43554441u /* "CUDA" */
#define CUDA_SPMAT_MAGIC 0x5350414du
/* cuBLAS workspace: NVIDIA recommends 32 MiB on Hopper; set explicitly so that GEMM
 * never allocates inside a step. */
#define CUDA_CUBLAS_WS_BYTES ((size_t)32 << 20)
/* Column-sum scratch (bias / layernorm gradients): 2M doubles = 16 MiB; enough for
 * 1024 row chunks up to 1024 columns, fewer chunks beyond (still deterministic). */
#define CUDA_COLSUM_DOUBLES ((size_t)2 << 20)
/* The cuSPARSE workspace of a matrix is sized at spmat_create for widths up to this;
 * a wider call whose workspace would not fit runs the hand kernels instead. */
#define CUDA_SPMM_MAX_BUFFERED_WIDTH 1024
/* Heavy-row rule (rows routed to the rowsplit kernel): degree > max(1024, 8 x the
 * average degree). A warp-per-row launch costs about max(total / warps in flight,
 * slowest row); 8x the average keeps a hub from dominating for graphs with at least
 * a few thousand rows, 1024 keeps uniform-degree graphs entirely on the warp kernel.
 * To be calibrated with benchmarks/kernel_lab on the target GPU. */
#define CUDA_HEAVY_MIN_DEGREE 1024
#define CUDA_HEAVY_AVG_FACTOR 8
#define CUDA_ARENA_ALIGN ((size_t)256)
/* Columns per pass of the warp-per-row kernel (CAPGNN_SPMM_MAX_PASS overrides). */
#define CUDA_SPMM_DEFAULT_MAX_PASS 128
/* Columns per launch of the row kernels (CAPGNN_SPMM_SLICE overrides, 0: the whole
 * width in one launch). On the H100, synth:reddit's operator at width 256: warp
 * 16.7 ms in one launch, 14.9 ms as two 128-column launches (each launch's slice
 * of X, 119 MB, is twice the L2 but the rows a wave of blocks gathers repeat more),
 * 22.3 / 42.3 ms as 64 / 32-column launches (narrower loads, more of them). */
#define CUDA_SPMM_DEFAULT_SLICE 128
/* Tiled SpMM layout (cuda/spmm_tiles_internal.h): a tile is dense with >= 4 x 256 nonzeros
 * (each staged source row used ~4 times; CAPGNN_SPMM_TILE_REUSE overrides), and a
 * matrix gets tiles only when they hold >= 30 % of its nonzeros. On the H100, for
 * synth:reddit's operator (69 % of the nonzeros in tiles), thresholds 2 / 4 / 8 ran
 * 11.63 / 11.58 / 12.19 ms at width 256 and 4.58 / 4.56 / 4.99 ms at width 41.
 * Under auto, only matrices with >= CUDA_TILE_AUTO_MIN_NNZ nonzeros get the layout:
 * below that a product takes a fraction of a millisecond, and the host build
 * (~25 ns per nonzero per core: 1.1-1.7 s for synth:reddit on 2 cores) and the
 * extra device memory (up to ~8 bytes per nonzero) buy little (the kernel was
 * timed on synth:reddit only). CAPGNN_SPMM=tiled builds it for every matrix. */
#define CUDA_TILE_MIN_REUSE 4.0
#define CUDA_TILE_MIN_SHARE 0.3
#define CUDA_TILE_AUTO_MIN_NNZ ((int64_t)1 << 20)

struct cuda_impl {
  uint32_t magic;
  int device;
  int tf32;
  cudaStream_t stream;
  cublasHandle_t cublas;
  cusparseHandle_t cusparse;
  void *d_cublas_ws;
  double *d_partials;             /* CGK_LOSS_MAX_BLOCKS loss partial sums, then: */
  double *d_loss;                 /* 1, followed by */
  unsigned long long *d_bad;      /* 1 (index/label out of range flag), followed by */
  unsigned long long *d_counts;   /* 3 */
  double *d_colsum;               /* CUDA_COLSUM_DOUBLES */
  void *h_result;                 /* pinned, 64 bytes: copies of loss+flag or counts */
  char *d_arena;                  /* cg_cuda_arena_reserve */
  size_t arena_cap, arena_used;
  enum cg_cuda_spmm_variant spmm_variant;
  int64_t spmm_max_pass; /* columns per pass of the warp/rowsplit kernels */
  int64_t spmm_slice;    /* > 0: warp/subwarp/rowsplit run slice by slice of this many columns */
  int tile_max_vec;      /* widest vector per lane of the tiled kernel (1, 2, 4) */
  int spmm_tiles;        /* CUDA_TILES_*: when spmat_create builds the tiled layout */
  size_t smem_optin;     /* shared memory per block a kernel may opt in to */
  struct cg_cuda_tile_opts tile_opts;
  int warned_cusparse_fallback;
  char describe[320];
};

/* A CSR on the device for the hand kernels, with its heavy-row list. */
struct cuda_csr {
  int64_t nrows, ncols, nnz;
  int64_t *d_rowptr;
  int32_t *d_colidx;
  float *d_vals;
  int32_t *d_heavy;    /* rows with degree > heavy_threshold */
  int64_t n_heavy, heavy_threshold, max_degree;
};

struct cg_spmat {
  uint32_t magic;
  int64_t nrows, ncols, nnz;
  struct cuda_csr m;   /* the whole matrix */
  int32_t *d_rowptr32; /* cuSPARSE (32-bit offsets), NULL when nnz >= 2^31 */
  cusparseSpMatDescr_t descr; /* NULL when cuSPARSE is not usable for this matrix */
  void *d_spmm_buf;
  size_t spmm_buf_bytes;
  /* tiled layout (ntiles == 0: none): far part + tiles, see cuda/spmm_tiles_internal.h */
  int64_t ntiles, tile_nnz;
  struct cuda_csr far;
  int64_t *d_rb_tile, *d_tile_edge;
  int32_t *d_tile_col, *d_tile_rowptr;
  uint16_t *d_perm, *d_t_off;
  float *d_t_val, *d_row_scale, *d_col_scale;
};

static const char *const spmm_names[CG_CUDA_SPMM_NVARIANTS] = {"auto", "cusparse", "warp", "subwarp",
                                                              "rowsplit", "tiled"};

/* ------------------------------------------------------------------------- */
/* errors                                                                     */

/* The line keeps the "cuda" subsystem; ending the process (MPI_Abort under
 * comm_init, else abort()) is core/fatal.h's handler. */
void cg_cuda_fatal(const char *file, int line, const char *call, const char *msg) {
  cg_fatal("cuda", file, line, call, "%s", msg);
}

#define CUBLAS_FATAL_ON(call)                                                              \
  do {                                                                                     \
    cublasStatus_t st_ = (call);                                                           \
    if (st_ != CUBLAS_STATUS_SUCCESS)                                                      \
      cg_cuda_fatal(__FILE__, __LINE__, #call, cuda_lib.cublasGetStatusString(st_));       \
  } while (0)
#define CUSPARSE_FATAL_ON(call)                                                            \
  do {                                                                                     \
    cusparseStatus_t st_ = (call);                                                         \
    if (st_ != CUSPARSE_STATUS_SUCCESS)                                                    \
      cg_cuda_fatal(__FILE__, __LINE__, #call, cuda_lib.cusparseGetErrorString(st_));      \
  } while (0)

/* Setup-time checks: record a message, clear CUDA's last-error slot (a handled
 * error must not be reported again by the next launch check) and return. */
#define CUDA_TRY(call, what)                                                               \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      (void)cudaGetLastError();                                                            \
      return cg_err_set(CG_ERR_CUDA, "%s: %s failed: %s", what, #call, cudaGetErrorString(e_)); \
    }                                                                                      \
  } while (0)

/* The same, as a value for TRY_GOTO. */
static int cuda_status(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return CG_OK;
  (void)cudaGetLastError();
  return cg_err_set(CG_ERR_CUDA, "%s: %s", what, cudaGetErrorString(e));
}

static struct cuda_impl *IMPL(const struct cg_backend *be) {
  struct cuda_impl *im = be ? (struct cuda_impl *)be->impl : NULL;
  if (!im || im->magic != CUDA_IMPL_MAGIC)
    cg_cuda_fatal(__FILE__, __LINE__, "cuda backend accessor",
                  "not a CUDA backend (a wrapped backend? pass the inner one)");
  return im;
}

static const struct cg_spmat *SPMAT(const struct cg_spmat *a) {
  if (!a || a->magic != CUDA_SPMAT_MAGIC)
    cg_cuda_fatal(__FILE__, __LINE__, "cuda spmm", "matrix was not created by a CUDA backend");
  return a;
}

/* ------------------------------------------------------------------------- */
/* device queries                                                             */

int cg_cuda_device_count(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    LOG_DEBUG("cuda", "cudaGetDeviceCount: %s", cudaGetErrorString(e));
    return 0;
  }
  return n > 0 ? n : 0;
}

static int format_uuid(const cudaUUID_t *u, char *buf, size_t len) {
  const unsigned char *b = (const unsigned char *)u->bytes;
  int k = snprintf(buf, len, "GPU-");
  for (int i = 0; i < 16 && k > 0 && (size_t)k < len; i++) {
    k += snprintf(buf + k, len - (size_t)k, "%02x", b[i]);
    if ((i == 3 || i == 5 || i == 7 || i == 9) && (size_t)k < len)
      k += snprintf(buf + k, len - (size_t)k, "-");
  }
  return CG_OK;
}

static int get_props(int device_ordinal, struct cudaDeviceProp *prop) {
  int n = cg_cuda_device_count();
  if (device_ordinal < 0 || device_ordinal >= n)
    return cg_err_set(CG_ERR_NOT_FOUND,
                      "CUDA device %d does not exist (%d device(s) visible; check "
                      "CUDA_VISIBLE_DEVICES and the driver, or use --device cpu)",
                      device_ordinal, n);
  CUDA_TRY(cudaGetDeviceProperties(prop, device_ordinal), "querying the CUDA device");
  return CG_OK;
}

int cg_cuda_device_uuid(int device_ordinal, char *buf, size_t len) {
  if (len) buf[0] = '\0';
  struct cudaDeviceProp prop;
  TRY(get_props(device_ordinal, &prop));
  return format_uuid(&prop.uuid, buf, len);
}

int cg_cuda_device_describe(int device_ordinal, char *buf, size_t len) {
  if (len) buf[0] = '\0';
  struct cudaDeviceProp prop;
  TRY(get_props(device_ordinal, &prop));
  char uuid[64];
  format_uuid(&prop.uuid, uuid, sizeof uuid);
  snprintf(buf, len, "%s, sm_%d%d, %d SMs, %.1f GiB, %s, PCI %04x:%02x:%02x.0", prop.name,
           prop.major, prop.minor, prop.multiProcessorCount,
           (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), uuid, prop.pciDomainID,
           prop.pciBusID, prop.pciDeviceID);
  return CG_OK;
}

/* ------------------------------------------------------------------------- */
/* memory                                                                     */

static int device_malloc(struct cuda_impl *im, void **p, size_t bytes, const char *what) {
  cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    *p = NULL;
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) (void)cudaGetLastError();
    return cg_err_set(CG_ERR_NOMEM,
                      "cudaMalloc of %zu bytes (%.1f MiB) for %s failed on CUDA device %d: %s "
                      "(free %.1f of %.1f MiB); use more partitions/GPUs or a smaller model",
                      bytes, (double)bytes / 1048576.0, what ? what : "?", im->device,
                      cudaGetErrorString(e), (double)fr / 1048576.0, (double)tot / 1048576.0);
  }
  return CG_OK;
}

static int in_arena(const struct cuda_impl *im, const void *p) {
  const char *c = (const char *)p;
  return im->d_arena && c >= im->d_arena && c < im->d_arena + im->arena_cap;
}

static int cu_alloc(struct cg_backend *be, void **p, size_t bytes, const char *what) {
  struct cuda_impl *im = IMPL(be);
  *p = NULL;
  CUDA_TRY(cudaSetDevice(im->device), "selecting the CUDA device");
  if (im->d_arena) {
    size_t off = (im->arena_used + CUDA_ARENA_ALIGN - 1) & ~(CUDA_ARENA_ALIGN - 1);
    if (off <= im->arena_cap && bytes <= im->arena_cap - off) {
      *p = im->d_arena + off;
      im->arena_used = off + (bytes ? bytes : 1);
      return CG_OK;
    }
    LOG_WARN("cuda",
             "device arena exhausted: %s needs %zu bytes, %zu of %zu used; falling back to "
             "cudaMalloc (reserve more with cg_cuda_arena_reserve)",
             what ? what : "?", bytes, im->arena_used, im->arena_cap);
  }
  TRY(device_malloc(im, p, bytes, what));
  return CG_OK;
}

static void cu_free(struct cg_backend *be, void *p) {
  struct cuda_impl *im = IMPL(be);
  if (!p || in_arena(im, p)) return; /* arena blocks are released with the backend */
  cudaError_t e = cudaFree(p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    LOG_WARN("cuda", "cudaFree failed: %s", cudaGetErrorString(e));
  }
}

int cg_cuda_arena_reserve(struct cg_backend *be, size_t bytes) {
  struct cuda_impl *im = IMPL(be);
  if (im->d_arena)
    return cg_err_set(CG_ERR_ARG, "cg_cuda_arena_reserve: the arena of CUDA device %d is already "
                                  "reserved (%zu bytes); reserve once, with the planned total",
                      im->device, im->arena_cap);
  if (bytes == 0) return cg_err_set(CG_ERR_ARG, "cg_cuda_arena_reserve: size 0");
  CUDA_TRY(cudaSetDevice(im->device), "selecting the CUDA device");
  void *p = NULL;
  TRY(device_malloc(im, &p, bytes, "the device memory arena"));
  im->d_arena = p;
  im->arena_cap = bytes;
  im->arena_used = 0;
  LOG_DEBUG("cuda", "device %d: arena of %.1f MiB reserved", im->device, (double)bytes / 1048576.0);
  return CG_OK;
}

void cg_cuda_arena_usage(const struct cg_backend *be, size_t *used, size_t *capacity) {
  const struct cuda_impl *im = IMPL(be);
  if (used) *used = im->d_arena ? im->arena_used : 0;
  if (capacity) *capacity = im->d_arena ? im->arena_cap : 0;
}

static int cu_upload(struct cg_backend *be, void *dst, const void *src, size_t bytes) {
  struct cuda_impl *im = IMPL(be);
  if (!bytes) return CG_OK;
  CUDA_TRY(cudaSetDevice(im->device), "selecting the CUDA device");
  /* Pageable host memory is accepted: the runtime stages it. */
  CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, im->stream), "upload");
  CUDA_TRY(cudaStreamSynchronize(im->stream), "upload");
  return CG_OK;
}

static int cu_download(struct cg_backend *be, void *dst, const void *src, size_t bytes) {
  struct cuda_impl *im = IMPL(be);
  if (!bytes) return CG_OK;
  CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, im->stream), "download");
  CUDA_TRY(cudaStreamSynchronize(im->stream), "download");
  return CG_OK;
}

static void cu_copy(struct cg_backend *be, void *dst, const void *src, size_t bytes) {
  struct cuda_impl *im = IMPL(be);
  if (!bytes || dst == src) return;
  CG_CUDA_FATAL_ON(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, im->stream));
}

static void cu_sync(struct cg_backend *be) {
  CG_CUDA_FATAL_ON(cudaStreamSynchronize(IMPL(be)->stream));
}

static int cu_mem_info(struct cg_backend *be, size_t *free_bytes, size_t *total_bytes) {
  struct cuda_impl *im = IMPL(be);
  CUDA_TRY(cudaSetDevice(im->device), "selecting the CUDA device");
  size_t fr = 0, tot = 0;
  CUDA_TRY(cudaMemGetInfo(&fr, &tot), "querying CUDA device memory");
  if (free_bytes) *free_bytes = fr;
  if (total_bytes) *total_bytes = tot;
  return CG_OK;
}

/* ------------------------------------------------------------------------- */
/* dense                                                                      */

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the row-major
 * buffers read as column-major are the transposes, so B goes first, the operation
 * flags stay as given, and m/n swap. */
static void cu_gemm(struct cg_backend *be, int ta, int tb, int64_t m, int64_t n, int64_t k,
                    float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                    float beta, float *c, int64_t ldc) {
  struct cuda_impl *im = IMPL(be);
  if (m <= 0 || n <= 0) return;
  if (k <= 0) { /* C = beta C; cuBLAS's k = 0 handling is not relied upon */
    cgk_scale_strided(im->stream, c, m, n, ldc, beta);
    return;
  }
  CUBLAS_FATAL_ON(cuda_lib.cublasSgemm_64(im->cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda,
                                 &beta, c, ldc));
}

static void cu_fill(struct cg_backend *be, float *x, int64_t n, float value) {
  struct cuda_impl *im = IMPL(be);
  if (n <= 0) return;
  if (value == 0.0f && !signbit(value))
    CG_CUDA_FATAL_ON(cudaMemsetAsync(x, 0, (size_t)n * sizeof(float), im->stream));
  else
    cgk_fill(im->stream, x, n, value);
}

static void cu_axpy(struct cg_backend *be, int64_t n, float alpha, const float *x, float *y) {
  cgk_axpy(IMPL(be)->stream, n, alpha, x, y);
}

static void cu_scale(struct cg_backend *be, int64_t n, float alpha, float *x) {
  cgk_scale(IMPL(be)->stream, n, alpha, x);
}

/* ------------------------------------------------------------------------- */
/* sparse                                                                     */

static void csr_release(struct cg_backend *be, struct cuda_csr *d) {
  be->free(be, d->d_rowptr);
  be->free(be, d->d_colidx);
  be->free(be, d->d_vals);
  be->free(be, d->d_heavy);
  memset(d, 0, sizeof *d);
}

/* Frees the tiled layout's device arrays; the matrix then has no tiles. */
static void tiles_release(struct cg_backend *be, struct cg_spmat *a) {
  csr_release(be, &a->far);
  void **arrays[] = {(void **)&a->d_rb_tile,     (void **)&a->d_tile_edge, (void **)&a->d_tile_col,
                     (void **)&a->d_tile_rowptr, (void **)&a->d_perm,      (void **)&a->d_t_off,
                     (void **)&a->d_t_val,       (void **)&a->d_row_scale, (void **)&a->d_col_scale};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
    be->free(be, *arrays[i]);
    *arrays[i] = NULL;
  }
  a->ntiles = 0;
  a->tile_nnz = 0;
}

static void spmat_release(struct cg_backend *be, struct cg_spmat *a) {
  if (!a) return;
  if (a->descr) {
    cusparseStatus_t st = cuda_lib.cusparseDestroySpMat(a->descr);
    if (st != CUSPARSE_STATUS_SUCCESS)
      LOG_WARN("cuda", "cusparseDestroySpMat: %s", cuda_lib.cusparseGetErrorString(st));
  }
  csr_release(be, &a->m);
  be->free(be, a->d_rowptr32);
  be->free(be, a->d_spmm_buf);
  tiles_release(be, a);
  a->magic = 0;
  cg_free(a);
}

static void cu_spmat_destroy(struct cg_backend *be, struct cg_spmat *a) {
  if (!a) return;
  /* Kernels still queued may read the arrays: drain the stream before freeing. */
  cu_sync(be);
  spmat_release(be, a);
}

/* cuSPARSE view of the matrix and its SpMM workspace for widths up to
 * CUDA_SPMM_MAX_BUFFERED_WIDTH. A failure here disables cuSPARSE for this matrix
 * (the hand kernels compute the same product) with a warning; it is not an error. */
static int spmat_setup_cusparse(struct cg_backend *be, struct cuda_impl *im, struct cg_spmat *a,
                                const struct cg_csr *host) {
  if (a->nnz == 0 || a->nnz >= INT32_MAX || a->nrows >= INT32_MAX) return CG_OK;
  int32_t *h32 = cg_malloc((size_t)(a->nrows + 1) * sizeof(int32_t), "32-bit CSR row pointers");
  if (!h32) return CG_ERR_NOMEM;
  for (int64_t r = 0; r <= a->nrows; r++) h32[r] = (int32_t)host->rowptr[r];
  int st = be->alloc(be, (void **)&a->d_rowptr32, (size_t)(a->nrows + 1) * sizeof(int32_t),
                     "cuSPARSE 32-bit row pointers");
  if (st == CG_OK) st = be->upload(be, a->d_rowptr32, h32, (size_t)(a->nrows + 1) * sizeof(int32_t));
  cg_free(h32);
  TRY(st);

  cusparseStatus_t cs = cuda_lib.cusparseCreateCsr(&a->descr, a->nrows, a->ncols, a->nnz, a->d_rowptr32,
                                          a->m.d_colidx, a->m.d_vals, CUSPARSE_INDEX_32I,
                                          CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
  if (cs != CUSPARSE_STATUS_SUCCESS) {
    a->descr = NULL;
    LOG_WARN("cuda", "cusparseCreateCsr: %s; SpMM uses the hand kernels for this matrix",
             cuda_lib.cusparseGetErrorString(cs));
    return CG_OK;
  }
  /* The workspace size depends on the width; take the maximum over a ladder of
   * widths. The dense descriptors only need a non-NULL pointer for the query. */
  size_t need = 0;
  const float one = 1.0f, zero = 0.0f;
  for (int64_t w = 1; w <= CUDA_SPMM_MAX_BUFFERED_WIDTH; w *= 2) {
    cusparseConstDnMatDescr_t bx = NULL;
    cusparseDnMatDescr_t cy = NULL;
    size_t sz = 0;
    cs = cuda_lib.cusparseCreateConstDnMat(&bx, a->ncols, w, w, a->m.d_vals, CUDA_R_32F, CUSPARSE_ORDER_ROW);
    if (cs == CUSPARSE_STATUS_SUCCESS)
      cs = cuda_lib.cusparseCreateDnMat(&cy, a->nrows, w, w, a->m.d_vals, CUDA_R_32F, CUSPARSE_ORDER_ROW);
    if (cs == CUSPARSE_STATUS_SUCCESS)
      cs = cuda_lib.cusparseSpMM_bufferSize(im->cusparse, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                   CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a->descr, bx, &zero, cy,
                                   CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &sz);
    if (bx) cuda_lib.cusparseDestroyDnMat(bx);
    if (cy) cuda_lib.cusparseDestroyDnMat(cy);
    if (cs != CUSPARSE_STATUS_SUCCESS) {
      LOG_WARN("cuda", "cusparseSpMM_bufferSize (width %lld): %s; SpMM uses the hand kernels",
               (long long)w, cuda_lib.cusparseGetErrorString(cs));
      cuda_lib.cusparseDestroySpMat(a->descr);
      a->descr = NULL;
      return CG_OK;
    }
    if (sz > need) need = sz;
  }
  if (need > 0) {
    TRY(be->alloc(be, &a->d_spmm_buf, need, "cuSPARSE SpMM workspace"));
    a->spmm_buf_bytes = need;
  }
  return CG_OK;
}

/* Upload a host CSR (values, or explicit ones when it has none) and its heavy-row
 * list into d. On failure d may be partly filled: csr_release frees it. */
static int csr_upload(struct cg_backend *be, struct cuda_impl *im, const struct cg_csr *host,
                      struct cuda_csr *d) {
  memset(d, 0, sizeof *d);
  d->nrows = host->nrows;
  d->ncols = host->ncols;
  d->nnz = host->nnz;
  const size_t nnz = (size_t)host->nnz;
  TRY(be->alloc(be, (void **)&d->d_rowptr, (size_t)(d->nrows + 1) * sizeof(int64_t),
                "CSR row pointers"));
  TRY(be->alloc(be, (void **)&d->d_colidx, nnz * sizeof(int32_t), "CSR column indices"));
  TRY(be->alloc(be, (void **)&d->d_vals, nnz * sizeof(float), "CSR values"));
  TRY(be->upload(be, d->d_rowptr, host->rowptr, (size_t)(d->nrows + 1) * sizeof(int64_t)));
  TRY(be->upload(be, d->d_colidx, host->colidx, nnz * sizeof(int32_t)));
  if (host->vals)
    TRY(be->upload(be, d->d_vals, host->vals, nnz * sizeof(float)));
  else /* explicit ones: cuSPARSE needs values and the kernels stay branch-free */
    cgk_fill(im->stream, d->d_vals, (int64_t)nnz, 1.0f);

  /* heavy rows */
  int64_t avg = d->nrows ? (d->nnz + d->nrows - 1) / d->nrows : 0;
  d->heavy_threshold = CUDA_HEAVY_AVG_FACTOR * avg;
  if (d->heavy_threshold < CUDA_HEAVY_MIN_DEGREE) d->heavy_threshold = CUDA_HEAVY_MIN_DEGREE;
  for (int64_t r = 0; r < d->nrows; r++) {
    int64_t deg = host->rowptr[r + 1] - host->rowptr[r];
    if (deg > d->max_degree) d->max_degree = deg;
    if (deg > d->heavy_threshold) d->n_heavy++;
  }
  if (d->n_heavy == 0) return CG_OK;
  int32_t *h_heavy = cg_malloc((size_t)d->n_heavy * sizeof(int32_t), "heavy-row list");
  if (!h_heavy) return CG_ERR_NOMEM;
  int64_t j = 0;
  for (int64_t r = 0; r < d->nrows; r++)
    if (host->rowptr[r + 1] - host->rowptr[r] > d->heavy_threshold) h_heavy[j++] = (int32_t)r;
  int st = be->alloc(be, (void **)&d->d_heavy, (size_t)d->n_heavy * sizeof(int32_t), "heavy-row list");
  if (st == CG_OK) st = be->upload(be, d->d_heavy, h_heavy, (size_t)d->n_heavy * sizeof(int32_t));
  cg_free(h_heavy);
  return st;
}

/* Allocate `bytes` on the device and copy `host` there (nothing for 0 bytes). */
static int upload_new(struct cg_backend *be, void **dst, const void *host, size_t bytes,
                      const char *what) {
  *dst = NULL;
  if (bytes == 0) return CG_OK;
  TRY(be->alloc(be, dst, bytes, what));
  return be->upload(be, *dst, host, bytes);
}

/* The tiled layout (cuda/spmm_tiles_internal.h) on the device; none when the tiles would
 * hold too small a share of the nonzeros. */
static int spmat_setup_tiles(struct cg_backend *be, struct cuda_impl *im, struct cg_spmat *a,
                             const struct cg_csr *host) {
  struct cgk_tile_params p = {.min_reuse = im->tile_opts.min_reuse,
                              .skip_degree = im->tile_opts.heavy_in_tiles ? INT64_MAX : a->m.heavy_threshold,
                              .min_share = CUDA_TILE_MIN_SHARE};
  struct cgk_tiles_host t;
  TRY(cgk_tiles_build(host, &p, &t));
  if (t.ntiles == 0) {
    LOG_DEBUG("cuda", "spmat %lld x %lld: no tiled layout (dense tiles would hold < %.0f %% of "
              "the nonzeros)", (long long)a->nrows, (long long)a->ncols, 100.0 * p.min_share);
    return CG_OK;
  }
  int st = csr_upload(be, im, &t.far, &a->far);
  const size_t nt = (size_t)t.ntiles, nz = (size_t)t.tile_len; /* entries, padding included */
  if (st == CG_OK)
    st = upload_new(be, (void **)&a->d_rb_tile, t.rb_tile, (size_t)(t.nrb + 1) * sizeof(int64_t),
                    "SpMM row-block tiles");
  if (st == CG_OK)
    st = upload_new(be, (void **)&a->d_tile_edge, t.tile_edge, (nt + 1) * sizeof(int64_t),
                    "SpMM tile offsets");
  if (st == CG_OK)
    st = upload_new(be, (void **)&a->d_tile_col, t.tile_col, nt * sizeof(int32_t), "SpMM tile columns");
  if (st == CG_OK)
    st = upload_new(be, (void **)&a->d_tile_rowptr, t.tile_rowptr,
                    nt * (CGK_TILE_ROWS + 1) * sizeof(int32_t), "SpMM tile segments");
  if (st == CG_OK)
    st = upload_new(be, (void **)&a->d_perm, t.perm, (size_t)t.nrb * CGK_TILE_ROWS * sizeof(uint16_t),
                    "SpMM tile slots");
  if (st == CG_OK)
    st = upload_new(be, (void **)&a->d_t_off, t.t_off, nz * sizeof(uint16_t), "SpMM tile columns per nonzero");
  if (st == CG_OK && t.t_val)
    st = upload_new(be, (void **)&a->d_t_val, t.t_val, nz * sizeof(float), "SpMM tile values");
  if (st == CG_OK && t.row_scale)
    st = upload_new(be, (void **)&a->d_row_scale, t.row_scale, (size_t)t.nrows * sizeof(float),
                    "SpMM tile row scales");
  if (st == CG_OK && t.col_scale)
    st = upload_new(be, (void **)&a->d_col_scale, t.col_scale, (size_t)t.ncols * sizeof(float),
                    "SpMM tile column scales");
  if (st == CG_OK) {
    a->ntiles = t.ntiles;
    a->tile_nnz = t.tile_nnz;
    LOG_DEBUG("cuda", "spmat %lld x %lld: tiled layout, %lld tiles hold %.1f %% of %lld nonzeros "
              "(%s), far part %lld nonzeros with %lld heavy rows",
              (long long)a->nrows, (long long)a->ncols, (long long)t.ntiles,
              100.0 * (double)t.tile_nnz / (double)a->nnz, (long long)a->nnz,
              t.t_val ? "values" : "factored", (long long)t.far.nnz, (long long)a->far.n_heavy);
  }
  cgk_tiles_free(&t);
  return st;
}

static int cu_spmat_create(struct cg_backend *be, const struct cg_csr *host, struct cg_spmat **out) {
  struct cuda_impl *im = IMPL(be);
  *out = NULL;
  TRY(cg_csr_check(host, "spmat_create"));
  if (host->nrows >= INT32_MAX)
    return cg_err_set(CG_ERR_UNSUPPORTED,
                      "spmat_create: %lld rows; the CUDA backend supports < 2^31 rows per "
                      "partition (use more partitions)",
                      (long long)host->nrows);
  CUDA_TRY(cudaSetDevice(im->device), "selecting the CUDA device");
  struct cg_spmat *a = cg_calloc(1, sizeof *a, "CUDA sparse matrix");
  if (!a) return CG_ERR_NOMEM;
  a->magic = CUDA_SPMAT_MAGIC;
  a->nrows = host->nrows;
  a->ncols = host->ncols;
  a->nnz = host->nnz;
  int st = CG_OK;
  TRY_GOTO(csr_upload(be, im, host, &a->m), fail);
  TRY_GOTO(spmat_setup_cusparse(be, im, a, host), fail);
  if (im->spmm_tiles == CG_CUDA_TILES_ON)
    TRY_GOTO(spmat_setup_tiles(be, im, a, host), fail);
  else if (im->spmm_tiles == CG_CUDA_TILES_AUTO && host->nnz >= CUDA_TILE_AUTO_MIN_NNZ &&
           spmat_setup_tiles(be, im, a, host) != CG_OK) {
    /* an optimisation auto chose: without memory for it the plain kernels still work */
    LOG_WARN("cuda", "spmat %lld x %lld: no tiled layout (%s); SpMM uses the row kernels",
             (long long)a->nrows, (long long)a->ncols, cg_err_msg());
    cg_err_clear();
    (void)cudaGetLastError();
    tiles_release(be, a);
  }
  TRY_GOTO(cuda_status(cudaStreamSynchronize(im->stream), "spmat_create"), fail); /* surfaces the fill */
  LOG_DEBUG("cuda",
            "spmat %lld x %lld, nnz %lld: max degree %lld, %lld heavy rows (> %lld), cuSPARSE %s "
            "(workspace %zu bytes)",
            (long long)a->nrows, (long long)a->ncols, (long long)a->nnz, (long long)a->m.max_degree,
            (long long)a->m.n_heavy, (long long)a->m.heavy_threshold, a->descr ? "on" : "off",
            a->spmm_buf_bytes);
  *out = a;
  return CG_OK;
fail:
  (void)cudaStreamSynchronize(im->stream);
  (void)cudaGetLastError();
  spmat_release(be, a);
  return st;
}

void cg_cuda_spmat_heavy_rows(const struct cg_spmat *a, int64_t *n_heavy, int64_t *threshold) {
  SPMAT(a);
  if (n_heavy) *n_heavy = a->m.n_heavy;
  if (threshold) *threshold = a->m.heavy_threshold;
}

const char *cg_cuda_spmm_variant_name(enum cg_cuda_spmm_variant v) {
  return (v >= 0 && v < CG_CUDA_SPMM_NVARIANTS) ? spmm_names[v] : "?";
}

int cg_cuda_spmm_variant_parse(const char *name, enum cg_cuda_spmm_variant *out) {
  for (int v = 0; v < CG_CUDA_SPMM_NVARIANTS; v++) {
    if (name && strcmp(name, spmm_names[v]) == 0) {
      *out = (enum cg_cuda_spmm_variant)v;
      return CG_OK;
    }
  }
  return cg_err_set(CG_ERR_ARG,
                    "unknown SpMM variant '%s' (CAPGNN_SPMM): expected auto, cusparse, warp, "
                    "subwarp, rowsplit or tiled",
                    name ? name : "(null)");
}

void cg_cuda_spmm_set_variant(struct cg_backend *be, enum cg_cuda_spmm_variant v) {
  struct cuda_impl *im = IMPL(be);
  if (v < 0 || v >= CG_CUDA_SPMM_NVARIANTS)
    cg_cuda_fatal(__FILE__, __LINE__, "cg_cuda_spmm_set_variant", "variant out of range");
  im->spmm_variant = v;
}

enum cg_cuda_spmm_variant cg_cuda_spmm_get_variant(const struct cg_backend *be) {
  return IMPL(be)->spmm_variant;
}

void cg_cuda_spmm_get_tile_opts(const struct cg_backend *be, struct cg_cuda_tile_opts *out) {
  *out = IMPL(be)->tile_opts;
}

void cg_cuda_spmm_set_tiles(struct cg_backend *be, int mode, const struct cg_cuda_tile_opts *opts) {
  struct cuda_impl *im = IMPL(be);
  if (mode != CG_CUDA_TILES_OFF && mode != CG_CUDA_TILES_ON && mode != CG_CUDA_TILES_AUTO)
    cg_cuda_fatal(__FILE__, __LINE__, "cg_cuda_spmm_set_tiles", "mode is not a CG_CUDA_TILES_* value");
  im->spmm_tiles = mode;
  if (opts) {
    if (!(opts->min_reuse >= 0.25 && opts->min_reuse <= 1024.0))
      cg_cuda_fatal(__FILE__, __LINE__, "cg_cuda_spmm_set_tiles", "min_reuse outside 0.25..1024");
    im->tile_opts = *opts;
  }
}

void cg_cuda_spmat_tiles(const struct cg_spmat *a, int64_t *ntiles, int64_t *tile_nnz) {
  SPMAT(a);
  if (ntiles) *ntiles = a->ntiles;
  if (tile_nnz) *tile_nnz = a->tile_nnz;
}

/* The auto rule, calibrated with benchmarks/kernel_lab on an H100 80GB HBM3
 * (Reddit-shaped: 232,965 rows, ~496 nonzeros per row, 16 hubs of ~49k; median ms,
 * clustered / random neighbour order; benchmarks/kernel_lab.cu says how to rerun):
 *   f      cusparse        warp           subwarp
 *   1      0.32 / 0.96     2.75 / 2.89    0.60 / 1.08
 *   7      4.25 / 5.56     2.76 / 2.93    1.43 / 2.50
 *   8      4.39 / 5.55     3.69 / 3.99    1.96 / 2.11
 *   12     4.40 / 5.58     3.69 / 4.01    2.13 / 3.48
 *   16     4.44 / 5.62     3.70 / 4.05    4.21 / 4.90
 *   41     5.20 / 8.22     4.29 / 5.19
 *   128    6.67 / 15.77    4.06 / 7.40
 *   256    13.21 / 31.41   8.35 / 14.90
 *   602    34.36 / 90.54   31.87 / 41.36
 * hence: f == 1 -> cuSPARSE (when it has a workspace for this matrix), f <= 12 ->
 * subwarp (13..15 not measured: the crossover lies between 12 and 16), otherwise
 * warp. Heavy rows go to block-per-row blocks inside the same launch.
 * A matrix with the tiled layout runs subwarp up to 16 columns and tiled above: on
 * synth:reddit's GCN operator (114.6M nonzeros, 69 % in dense tiles; H100,
 * 2026-11-23, kernel_lab --graph), median ms:
 *   f      subwarp   warp     tiled    cusparse
 *   8      2.01      4.98     3.85     5.02
 *   12     2.42      5.08     3.96     5.19
 *   13     2.62      3.71     2.88     5.23
 *   16     4.44      5.11     4.44     5.30
 *   32     -         5.27     4.55     5.54
 *   41     -         6.55     4.55
 *   64     -         5.57     4.78     6.00
 *   128    -         7.47     5.89     7.33
 *   256    -         14.95    11.59
 *   602    -         52.93    40.71    39.34
 * (warp and the far part of tiled in 128-column launches above 128 columns; warp
 * took 16.67 ms at 256 in one launch). At 602 cuSPARSE is 3 % faster than tiled;
 * GCN never multiplies at that width (it aggregates at the narrower side), so the
 * rule keeps tiled there.
 * A forced variant that does not apply falls back: cusparse without a descriptor
 * -> warp, subwarp above 16 columns -> warp, tiled on a matrix without tiles ->
 * what auto picks. */
#define CUDA_SPMM_AUTO_SUBWARP_MAX_F 12
static enum cg_cuda_spmm_variant resolve(const struct cuda_impl *im, const struct cg_spmat *a,
                                         int64_t f) {
  enum cg_cuda_spmm_variant v = im->spmm_variant;
  if (v == CG_CUDA_SPMM_TILED && a->ntiles == 0) v = CG_CUDA_SPMM_AUTO;
  if (v == CG_CUDA_SPMM_AUTO) {
    if (f == 1 && a->descr)
      v = CG_CUDA_SPMM_CUSPARSE;
    else if (f <= (a->ntiles > 0 ? CGK_SUBWARP_MAX_F : CUDA_SPMM_AUTO_SUBWARP_MAX_F))
      v = CG_CUDA_SPMM_SUBWARP;
    else
      v = a->ntiles > 0 ? CG_CUDA_SPMM_TILED : CG_CUDA_SPMM_WARP;
  }
  if (v == CG_CUDA_SPMM_CUSPARSE && !a->descr) v = CG_CUDA_SPMM_WARP;
  if (v == CG_CUDA_SPMM_SUBWARP && f > CGK_SUBWARP_MAX_F) v = CG_CUDA_SPMM_WARP;
  return v;
}

enum cg_cuda_spmm_variant cg_cuda_spmm_resolve(const struct cg_backend *be, const struct cg_spmat *a,
                                               int64_t f) {
  return resolve(IMPL(be), SPMAT(a), f);
}

/* Returns 0 (and leaves Y untouched) when the workspace for this call does not fit. */
static int spmm_cusparse(struct cuda_impl *im, const struct cg_spmat *a, const float *x,
                         int64_t ldx, float *y, int64_t ldy, int64_t f) {
  const float one = 1.0f, zero = 0.0f;
  cusparseConstDnMatDescr_t bx = NULL;
  cusparseDnMatDescr_t cy = NULL;
  CUSPARSE_FATAL_ON(cuda_lib.cusparseCreateConstDnMat(&bx, a->ncols, f, ldx, x, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  CUSPARSE_FATAL_ON(cuda_lib.cusparseCreateDnMat(&cy, a->nrows, f, ldy, y, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  size_t need = 0;
  CUSPARSE_FATAL_ON(cuda_lib.cusparseSpMM_bufferSize(im->cusparse, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                            CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a->descr, bx,
                                            &zero, cy, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &need));
  int ok = need <= a->spmm_buf_bytes;
  if (ok)
    CUSPARSE_FATAL_ON(cuda_lib.cusparseSpMM(im->cusparse, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                   CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a->descr, bx, &zero, cy,
                                   CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, a->d_spmm_buf));
  CUSPARSE_FATAL_ON(cuda_lib.cusparseDestroyDnMat(bx));
  CUSPARSE_FATAL_ON(cuda_lib.cusparseDestroyDnMat(cy));
  return ok;
}

static void cu_spmm(struct cg_backend *be, const struct cg_spmat *a_, const float *x, int64_t ldx,
                    float *y, int64_t ldy, int64_t f) {
  struct cuda_impl *im = IMPL(be);
  const struct cg_spmat *a = SPMAT(a_);
  if (a->nrows <= 0 || f <= 0) return;
  if (a->nnz == 0) {
    cgk_scale_strided(im->stream, y, a->nrows, f, ldy, 0.0f);
    return;
  }
  const struct cuda_csr *m = &a->m;
  enum cg_cuda_spmm_variant v = resolve(im, a, f);
  if (v == CG_CUDA_SPMM_TILED) { /* the far part writes Y, then the tiles add theirs */
    m = &a->far;
    v = f <= CUDA_SPMM_AUTO_SUBWARP_MAX_F ? CG_CUDA_SPMM_SUBWARP : CG_CUDA_SPMM_WARP;
    if (m->nnz == 0) {
      cgk_scale_strided(im->stream, y, a->nrows, f, ldy, 0.0f);
      v = CG_CUDA_SPMM_TILED;
    }
  }
  struct cgk_csr k = {m->nrows,   m->ncols,   m->nnz,       m->d_rowptr,        m->d_colidx,
                      m->d_vals,  m->d_heavy, m->n_heavy,   m->heavy_threshold, im->spmm_max_pass};
  if (v == CG_CUDA_SPMM_CUSPARSE) {
    if (spmm_cusparse(im, a, x, ldx, y, ldy, f)) return;
    if (!im->warned_cusparse_fallback) {
      LOG_WARN("cuda", "cuSPARSE SpMM workspace for width %lld exceeds the one planned at "
                       "spmat_create; using the hand kernels",
               (long long)f);
      im->warned_cusparse_fallback = 1;
    }
    v = f <= CGK_SUBWARP_MAX_F ? CG_CUDA_SPMM_SUBWARP : CG_CUDA_SPMM_WARP;
  }
  /* warp and subwarp run the heavy rows in the same launch (block per row); with a
   * slice width, one launch per column slice, in order, so that the rows they gather
   * (the slice of X) can stay in L2 */
  const int64_t sw = im->spmm_slice > 0 && im->spmm_slice < f ? im->spmm_slice : f;
  for (int64_t c0 = 0; c0 < f && v != CG_CUDA_SPMM_TILED; c0 += sw) {
    const int64_t fs = f - c0 < sw ? f - c0 : sw;
    switch (v) {
      case CG_CUDA_SPMM_ROWSPLIT:
        cgk_spmm_rowsplit(im->stream, &k, NULL, a->nrows, x + c0, ldx, y + c0, ldy, fs);
        break;
      case CG_CUDA_SPMM_SUBWARP:
        cgk_spmm_subwarp(im->stream, &k, x + c0, ldx, y + c0, ldy, fs, 1);
        break;
      default:
        cgk_spmm_warp(im->stream, &k, x + c0, ldx, y + c0, ldy, fs, 1);
        break;
    }
  }
  if (m == &a->far) {
    const struct cgk_tiles t = {a->nrows,      a->ncols,       (a->nrows + CGK_TILE_ROWS - 1) / CGK_TILE_ROWS,
                                a->ntiles,     a->d_rb_tile,   a->d_tile_col,
                                a->d_tile_edge, a->d_tile_rowptr, a->d_perm,
                                a->d_t_off,    a->d_t_val,     a->d_row_scale,
                                a->d_col_scale};
    cgk_spmm_tiled_add(im->stream, &t, x, ldx, y, ldy, f, im->smem_optin, im->tile_max_vec);
  }
}

/* ------------------------------------------------------------------------- */
/* elementwise and layer ops                                                  */

static void cu_bias_add(struct cg_backend *be, float *y, const float *bias, int64_t rows,
                        int64_t cols) {
  cgk_bias_add(IMPL(be)->stream, y, bias, rows, cols);
}

static void cu_bias_grad(struct cg_backend *be, const float *dy, int64_t rows, int64_t cols,
                         float *db) {
  struct cuda_impl *im = IMPL(be);
  cgk_colsum(im->stream, 0, dy, NULL, NULL, NULL, rows, cols, db, NULL, im->d_colsum,
             CUDA_COLSUM_DOUBLES);
}

static void cu_relu_fwd(struct cg_backend *be, const float *x, float *y, int64_t n) {
  cgk_relu_fwd(IMPL(be)->stream, x, y, n);
}

static void cu_relu_bwd(struct cg_backend *be, const float *y, float *dy, int64_t n) {
  cgk_relu_bwd(IMPL(be)->stream, y, dy, n);
}

static void cu_dropout_relu_bwd(struct cg_backend *be, const float *hd, float *dy, int64_t n,
                                float scale) {
  cgk_dropout_relu_bwd(IMPL(be)->stream, hd, dy, n, scale);
}

static void cu_dropout(struct cg_backend *be, const float *in, float *out, int64_t rows,
                       int64_t cols, const int32_t *gid, float p, struct cg_dropout_key key) {
  cgk_dropout(IMPL(be)->stream, in, out, rows, cols, gid, p, key.seed, key.epoch, key.layer);
}

/* graph attention (cuda/attn.cu) */
static void cu_edge_scores(struct cg_backend *be, const struct cg_edges *e, const float *el,
                           int64_t lde, const float *er, int64_t ldr, int64_t heads, float slope,
                           float *s) {
  cgk_edge_scores(IMPL(be)->stream, e, el, lde, er, ldr, heads, slope, s);
}
static void cu_edge_scores_bwd(struct cg_backend *be, const struct cg_edges *e, const float *s,
                               const float *ds, int64_t heads, float slope, float *del, int64_t lde,
                               float *der, int64_t ldr) {
  cgk_edge_scores_bwd(IMPL(be)->stream, e, s, ds, heads, slope, del, lde, der, ldr);
}
static void cu_edge_softmax(struct cg_backend *be, const struct cg_edges *e, const float *s,
                            int64_t heads, float *alpha) {
  cgk_edge_softmax(IMPL(be)->stream, e, s, heads, alpha);
}
static void cu_edge_softmax_bwd(struct cg_backend *be, const struct cg_edges *e, const float *alpha,
                                const float *dalpha, int64_t heads, float *ds) {
  cgk_edge_softmax_bwd(IMPL(be)->stream, e, alpha, dalpha, heads, ds);
}
static void cu_edge_dropout(struct cg_backend *be, const struct cg_edges *e, const float *in,
                            float *out, int64_t heads, const int32_t *gid, float p,
                            struct cg_dropout_key key) {
  cgk_edge_dropout(IMPL(be)->stream, e, in, out, heads, gid, p, key.seed, key.epoch, key.layer);
}
static void cu_spmm_edge(struct cg_backend *be, const struct cg_edges *e, const float *alpha,
                         int64_t heads, int64_t f, const float *x, int64_t ldx, float *y, int64_t ldy) {
  cgk_spmm_edge(IMPL(be)->stream, e, alpha, heads, f, x, ldx, y, ldy);
}
static void cu_spmm_edge_bwd_x(struct cg_backend *be, const struct cg_edges *e, const float *alpha,
                               int64_t heads, int64_t f, const float *dy, int64_t lddy, float *dx,
                               int64_t lddx) {
  cgk_spmm_edge_bwd_x(IMPL(be)->stream, e, alpha, heads, f, dy, lddy, dx, lddx);
}
/* Sparse input features: X·W and Xᵀ·dY are the per-edge SpMM and its backward with
 * respect to x at one head (alpha = X's stored values); its dropout has its own kernel. */
static void cu_csr_mm(struct cg_backend *be, const struct cg_edges *x, const float *vals, int64_t f,
                      const float *w, int64_t ldw, float *y, int64_t ldy) {
  if (f < 1 || ldw < f || ldy < f)
    cg_fatal("cuda", __FILE__, __LINE__, "csr_mm", "width %lld, strides %lld %lld", (long long)f,
             (long long)ldw, (long long)ldy);
  cgk_spmm_edge(IMPL(be)->stream, x, vals, 1, f, w, ldw, y, ldy);
}
static void cu_csr_mm_t(struct cg_backend *be, const struct cg_edges *x, const float *vals, int64_t f,
                        const float *dy, int64_t lddy, float *g, int64_t ldg) {
  if (f < 1 || lddy < f || ldg < f)
    cg_fatal("cuda", __FILE__, __LINE__, "csr_mm_t", "width %lld, strides %lld %lld", (long long)f,
             (long long)lddy, (long long)ldg);
  cgk_spmm_edge_bwd_x(IMPL(be)->stream, x, vals, 1, f, dy, lddy, g, ldg);
}
static void cu_csr_dropout(struct cg_backend *be, const struct cg_edges *x, const float *in, float *out,
                           const int32_t *gid, float p, struct cg_dropout_key key) {
  cgk_csr_dropout(IMPL(be)->stream, x, in, out, gid, p, key.seed, key.epoch, key.layer);
}
static void cu_spmm_edge_bwd_alpha(struct cg_backend *be, const struct cg_edges *e, int64_t heads,
                                   int64_t f, const float *x, int64_t ldx, const float *dy,
                                   int64_t lddy, float *dalpha) {
  cgk_spmm_edge_bwd_alpha(IMPL(be)->stream, e, heads, f, x, ldx, dy, lddy, dalpha);
}
static void cu_elu_fwd(struct cg_backend *be, const float *x, float *y, int64_t n) {
  cgk_elu_fwd(IMPL(be)->stream, x, y, n);
}
static void cu_elu_bwd(struct cg_backend *be, const float *y, float *dy, int64_t n) {
  cgk_elu_bwd(IMPL(be)->stream, y, dy, n);
}

static void cu_layernorm_fwd(struct cg_backend *be, const float *x, int64_t rows, int64_t cols,
                             const float *gamma, const float *beta, float eps, float *y, float *mean,
                             float *rstd) {
  cgk_layernorm_fwd(IMPL(be)->stream, x, rows, cols, gamma, beta, eps, y, mean, rstd);
}

static void cu_layernorm_bwd(struct cg_backend *be, const float *dy, const float *x,
                             const float *mean, const float *rstd, const float *gamma, int64_t rows,
                             int64_t cols, float *dx, float *dgamma, float *dbeta) {
  struct cuda_impl *im = IMPL(be);
  cgk_colsum(im->stream, 1, dy, x, mean, rstd, rows, cols, dgamma, dbeta, im->d_colsum,
             CUDA_COLSUM_DOUBLES);
  cgk_layernorm_bwd_dx(im->stream, dy, x, mean, rstd, gamma, rows, cols, dx);
}

/* ------------------------------------------------------------------------- */
/* losses and metrics: device reduction -> pinned scratch -> stream sync       */

static void zero_dlogits(struct cuda_impl *im, float *dlogits, int64_t rows, int64_t cols) {
  if (rows > 0 && cols > 0)
    CG_CUDA_FATAL_ON(
        cudaMemsetAsync(dlogits, 0, (size_t)rows * (size_t)cols * sizeof(float), im->stream));
}

/* Copies the loss and the out-of-range flag (adjacent in the scratch) in one go. */
static double fetch_loss(struct cuda_impl *im, const char *op, int64_t rows, int64_t cols) {
  CG_CUDA_FATAL_ON(cudaMemcpyAsync(im->h_result, im->d_loss,
                                   sizeof(double) + sizeof(unsigned long long),
                                   cudaMemcpyDeviceToHost, im->stream));
  CG_CUDA_FATAL_ON(cudaStreamSynchronize(im->stream));
  double v;
  unsigned long long bad;
  memcpy(&v, im->h_result, sizeof v);
  memcpy(&bad, (const char *)im->h_result + sizeof v, sizeof bad);
  if (bad) {
    char msg[160];
    snprintf(msg, sizeof msg, "a row index%s is out of range (rows=%lld, classes=%lld)",
             strcmp(op, "xent") == 0 ? " or a label" : "", (long long)rows, (long long)cols);
    cg_cuda_fatal(__FILE__, __LINE__, op, msg);
  }
  return v;
}

static void cu_xent(struct cg_backend *be, const float *logits, int64_t rows, int64_t cols,
                    const int32_t *labels, const int32_t *idx, int64_t n_idx, float scale,
                    float *dlogits, double *loss_sum) {
  struct cuda_impl *im = IMPL(be);
  zero_dlogits(im, dlogits, rows, cols);
  cgk_xent(im->stream, logits, rows, cols, labels, idx, n_idx, scale, dlogits, im->d_partials,
           im->d_loss, im->d_bad);
  *loss_sum = fetch_loss(im, "xent", rows, cols);
}

static void cu_bce(struct cg_backend *be, const float *logits, int64_t rows, int64_t cols,
                   const uint8_t *labels, const int32_t *idx, int64_t n_idx, float scale,
                   float *dlogits, double *loss_sum) {
  struct cuda_impl *im = IMPL(be);
  zero_dlogits(im, dlogits, rows, cols);
  cgk_bce(im->stream, logits, rows, cols, labels, idx, n_idx, scale, dlogits, im->d_partials,
          im->d_loss, im->d_bad);
  *loss_sum = fetch_loss(im, "bce", rows, cols);
}

static void cu_eval_counts(struct cg_backend *be, const float *logits, int64_t rows, int64_t cols,
                           const int32_t *labels, const uint8_t *mlabels, const int32_t *idx,
                           int64_t n_idx, int64_t out[3]) {
  struct cuda_impl *im = IMPL(be);
  (void)rows;
  cgk_eval_counts(im->stream, logits, cols, labels, mlabels, idx, n_idx, im->d_counts);
  CG_CUDA_FATAL_ON(cudaMemcpyAsync(im->h_result, im->d_counts, 3 * sizeof(unsigned long long),
                                   cudaMemcpyDeviceToHost, im->stream));
  CG_CUDA_FATAL_ON(cudaStreamSynchronize(im->stream));
  unsigned long long c[3];
  memcpy(c, im->h_result, sizeof c);
  for (int i = 0; i < 3; i++) out[i] = (int64_t)c[i];
}

/* ------------------------------------------------------------------------- */
/* optimizer and halo rows                                                    */

static void cu_adam(struct cg_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
                    const struct cg_adam_params *p, int64_t t) {
  if (t < 1) cg_cuda_fatal(__FILE__, __LINE__, "adam", "step t must be >= 1");
  const struct cg_adam_coefs c = cg_adam_coefs_make(p, t); /* as the CPU backend */
  cgk_adam(IMPL(be)->stream, w, g, m, v, n, &c);
}

static void cu_sgd(struct cg_backend *be, float *w, const float *g, float *buf, int64_t n,
                   const struct cg_sgd_params *p) {
  cgk_sgd(IMPL(be)->stream, w, g, buf, n, p);
}

static void cu_gather_rows(struct cg_backend *be, const float *src, int64_t cols,
                           const int32_t *idx, int64_t n, float *dst) {
  cgk_gather_rows(IMPL(be)->stream, src, cols, idx, n, dst);
}

static void cu_scatter_add_rows(struct cg_backend *be, const float *src, int64_t cols,
                                const int32_t *idx, int64_t n, float *dst) {
  cgk_scatter_add_rows(IMPL(be)->stream, src, cols, idx, n, dst);
}

/* ------------------------------------------------------------------------- */
/* side uploads (core/ops.h): pinned host memory and upload channels            */
/*
 * A channel is a stream of its own (non-blocking, like the backend's) and two events:
 * `after` orders the channel behind the backend's stream at begin (write-after-read:
 * the device memory the uploads overwrite may still be read by queued kernels), `done`
 * orders the backend's stream behind the channel at join. The uploads come from
 * another host thread than the ops (jaca's prefetch thread): every call makes the
 * backend's device current on its thread first (the current device is per thread). */

struct cg_upchan {
  int device;
  cudaStream_t s;
  cudaEvent_t after, done;
};

static int cu_host_alloc(struct cg_backend *be, void **p, size_t bytes, const char *what) {
  *p = NULL;
  CUDA_TRY(cudaSetDevice(IMPL(be)->device), "selecting the CUDA device");
  /* portable: pinned for every context, whatever device is current later */
  cudaError_t e = cudaHostAlloc(p, bytes ? bytes : 1, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    *p = NULL;
    return cg_err_set(CG_ERR_NOMEM,
                      "cudaHostAlloc of %zu bytes (%.1f MiB) of pinned host memory for %s failed: %s "
                      "(pinned memory is bounded by RAM and `ulimit -l`)",
                      bytes, (double)bytes / 1048576.0, what ? what : "?", cudaGetErrorString(e));
  }
  return CG_OK;
}

static void cu_host_free(struct cg_backend *be, void *p) {
  (void)be;
  if (p && cudaFreeHost(p) != cudaSuccess) {
    (void)cudaGetLastError();
    LOG_WARN("cuda", "cudaFreeHost of pinned host memory failed");
  }
}

static void upchan_release(struct cg_upchan *ch) {
  if (ch->s && cudaStreamSynchronize(ch->s) != cudaSuccess) (void)cudaGetLastError();
  if (ch->after) cudaEventDestroy(ch->after);
  if (ch->done) cudaEventDestroy(ch->done);
  if (ch->s) cudaStreamDestroy(ch->s);
  (void)cudaGetLastError();
  cg_free(ch);
}

static int cu_upchan_create(struct cg_backend *be, struct cg_upchan **out) {
  *out = NULL;
  struct cg_upchan *ch = cg_calloc(1, sizeof *ch, "cuda: upload channel");
  if (!ch) return CG_ERR_NOMEM;
  ch->device = IMPL(be)->device;
  cudaError_t e = cudaSetDevice(ch->device);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&ch->s, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ch->after, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&ch->done, cudaEventDisableTiming);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    upchan_release(ch);
    return cg_err_set(CG_ERR_CUDA, "cuda: creating an upload channel on device %d: %s", IMPL(be)->device,
                      cudaGetErrorString(e));
  }
  *out = ch;
  return CG_OK;
}

static void cu_upchan_destroy(struct cg_backend *be, struct cg_upchan *ch) {
  (void)be;
  if (!ch) return;
  if (cudaSetDevice(ch->device) != cudaSuccess) (void)cudaGetLastError();
  upchan_release(ch); /* synchronises the channel's stream first */
}

static int cu_upchan_begin(struct cg_backend *be, struct cg_upchan *ch) {
  CUDA_TRY(cudaSetDevice(ch->device), "selecting the CUDA device");
  CUDA_TRY(cudaStreamSynchronize(ch->s), "waiting for the previous side uploads");
  CUDA_TRY(cudaEventRecord(ch->after, IMPL(be)->stream), "ordering side uploads after the stream");
  CUDA_TRY(cudaStreamWaitEvent(ch->s, ch->after, 0), "ordering side uploads after the stream");
  return CG_OK;
}

static int cu_upchan_upload(struct cg_backend *be, struct cg_upchan *ch, void *dst, const void *src, size_t bytes) {
  (void)be;
  if (!bytes) return CG_OK;
  CUDA_TRY(cudaSetDevice(ch->device), "selecting the CUDA device");
  CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ch->s), "side upload");
  return CG_OK;
}

static int cu_upchan_join(struct cg_backend *be, struct cg_upchan *ch) {
  CUDA_TRY(cudaSetDevice(ch->device), "selecting the CUDA device");
  CUDA_TRY(cudaEventRecord(ch->done, ch->s), "ordering the stream after side uploads");
  CUDA_TRY(cudaStreamWaitEvent(IMPL(be)->stream, ch->done, 0), "ordering the stream after side uploads");
  return CG_OK;
}

/* ------------------------------------------------------------------------- */
/* create / destroy                                                           */

static void impl_release(struct cuda_impl *im) {
  if (!im) return;
  if (im->stream && cudaStreamSynchronize(im->stream) != cudaSuccess) (void)cudaGetLastError();
  if (im->cublas) cuda_lib.cublasDestroy(im->cublas);
  if (im->cusparse) cuda_lib.cusparseDestroy(im->cusparse);
  if (im->d_cublas_ws) cudaFree(im->d_cublas_ws);
  if (im->d_partials) cudaFree(im->d_partials);
  if (im->d_colsum) cudaFree(im->d_colsum);
  if (im->d_arena) cudaFree(im->d_arena);
  if (im->h_result) cudaFreeHost(im->h_result);
  if (im->stream) cudaStreamDestroy(im->stream);
  (void)cudaGetLastError();
  im->magic = 0;
  cg_free(im);
}

static void cu_destroy(struct cg_backend *be) {
  if (!be) return;
  struct cuda_impl *im = IMPL(be);
  if (cudaSetDevice(im->device) != cudaSuccess) (void)cudaGetLastError();
  impl_release(im);
  cg_free(be);
}

/* The SpMM tuning settings: defaults, then the CAPGNN_SPMM_* variables (see
 * cuda_backend.h). CG_ERR_ARG with a message naming the variable on a bad value. */
static int spmm_settings_from_env(struct cuda_impl *im) {
  im->spmm_max_pass = CUDA_SPMM_DEFAULT_MAX_PASS;
  im->spmm_slice = CUDA_SPMM_DEFAULT_SLICE;
  im->tile_max_vec = 4;
  im->tile_opts.min_reuse = CUDA_TILE_MIN_REUSE;
  im->tile_opts.heavy_in_tiles = 0;
  const char *env = getenv("CAPGNN_SPMM_MAX_PASS");
  char *end = NULL;
  if (env && *env) {
    long long v = strtoll(env, &end, 10);
    if (*end || v < 32 || v > 1024 || (v & (v - 1)))
      return cg_err_set(CG_ERR_ARG, "CAPGNN_SPMM_MAX_PASS=%s: expected a power of two in 32..1024",
                        env);
    im->spmm_max_pass = v;
  }
  env = getenv("CAPGNN_SPMM_SLICE");
  if (env && *env) {
    long long v = strtoll(env, &end, 10);
    if (*end || (v != 0 && (v < 4 || v > 4096 || v % 4)))
      return cg_err_set(CG_ERR_ARG, "CAPGNN_SPMM_SLICE=%s: expected 0 (whole width) or a multiple "
                        "of 4 in 4..4096 (columns per launch of the row kernels)", env);
    im->spmm_slice = v;
  }
  env = getenv("CAPGNN_SPMM_TILE_VEC");
  if (env && *env) {
    if (strcmp(env, "1") != 0 && strcmp(env, "2") != 0 && strcmp(env, "4") != 0)
      return cg_err_set(CG_ERR_ARG, "CAPGNN_SPMM_TILE_VEC=%s: expected 1, 2 or 4 (floats per lane "
                        "of the tiled SpMM)", env);
    im->tile_max_vec = atoi(env);
  }
  env = getenv("CAPGNN_SPMM_TILE_REUSE");
  if (env && *env) {
    double v = strtod(env, &end);
    if (*end || !(v >= 0.25 && v <= 1024.0))
      return cg_err_set(CG_ERR_ARG, "CAPGNN_SPMM_TILE_REUSE=%s: expected a number in 0.25..1024 "
                        "(nonzeros per staged source row that make a tile dense)", env);
    im->tile_opts.min_reuse = v;
  }
  env = getenv("CAPGNN_SPMM_TILE_HEAVY");
  if (env && *env) {
    if (strcmp(env, "far") != 0 && strcmp(env, "tiles") != 0)
      return cg_err_set(CG_ERR_ARG, "CAPGNN_SPMM_TILE_HEAVY=%s: expected far or tiles (where the "
                        "heavy rows' nonzeros go in the tiled SpMM)", env);
    im->tile_opts.heavy_in_tiles = strcmp(env, "tiles") == 0;
  }
  return CG_OK;
}

#define CUBLAS_TRY(call)                                                                   \
  do {                                                                                     \
    cublasStatus_t cst_ = (call);                                                          \
    if (cst_ != CUBLAS_STATUS_SUCCESS) {                                                   \
      st = cg_err_set(CG_ERR_CUDA, "CUDA backend setup: %s failed: %s", #call,             \
                      cuda_lib.cublasGetStatusString(cst_));                               \
      goto fail;                                                                           \
    }                                                                                      \
  } while (0)
#define CUSPARSE_TRY(call)                                                                 \
  do {                                                                                     \
    cusparseStatus_t sst_ = (call);                                                        \
    if (sst_ != CUSPARSE_STATUS_SUCCESS) {                                                 \
      st = cg_err_set(CG_ERR_CUDA, "CUDA backend setup: %s failed: %s", #call,             \
                      cuda_lib.cusparseGetErrorString(sst_));                              \
      goto fail;                                                                           \
    }                                                                                      \
  } while (0)
#define CUDA_TRY_GOTO(call)                                                                \
  do {                                                                                     \
    cudaError_t ce_ = (call);                                                              \
    if (ce_ != cudaSuccess) {                                                              \
      (void)cudaGetLastError();                                                            \
      st = cg_err_set(CG_ERR_CUDA, "CUDA backend setup on device %d: %s failed: %s",       \
                      device_ordinal, #call, cudaGetErrorString(ce_));                     \
      goto fail;                                                                           \
    }                                                                                      \
  } while (0)

int cg_backend_cuda_create(int device_ordinal, int tf32, struct cg_backend **out) {
  *out = NULL;
  int st = CG_OK;
  enum cg_cuda_spmm_variant variant = CG_CUDA_SPMM_AUTO;
  const char *env = getenv("CAPGNN_SPMM");
  if (env && *env) TRY(cg_cuda_spmm_variant_parse(env, &variant));
  char describe[320];
  TRY(cg_cuda_device_describe(device_ordinal, describe, sizeof describe));
  TRY(cuda_libs_load());

  struct cg_backend *be = cg_calloc(1, sizeof *be, "CUDA backend");
  struct cuda_impl *im = cg_calloc(1, sizeof *im, "CUDA backend state");
  if (!be || !im) {
    cg_free(be);
    cg_free(im);
    return CG_ERR_NOMEM;
  }
  im->magic = CUDA_IMPL_MAGIC;
  im->device = device_ordinal;
  im->tf32 = tf32 ? 1 : 0;
  im->spmm_variant = variant;
  im->spmm_tiles = variant == CG_CUDA_SPMM_TILED  ? CG_CUDA_TILES_ON
                   : variant == CG_CUDA_SPMM_AUTO ? CG_CUDA_TILES_AUTO
                                                  : CG_CUDA_TILES_OFF;
  int env_st = spmm_settings_from_env(im);
  if (env_st != CG_OK) {
    impl_release(im);
    cg_free(be);
    return env_st;
  }
  snprintf(im->describe, sizeof im->describe, "%s", describe);

  CUDA_TRY_GOTO(cudaSetDevice(device_ordinal));
  {
    int smem = 0;
    CUDA_TRY_GOTO(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_ordinal));
    im->smem_optin = (size_t)smem;
  }
  CUDA_TRY_GOTO(cudaStreamCreateWithFlags(&im->stream, cudaStreamNonBlocking));
  TRY_GOTO(device_malloc(im, &im->d_cublas_ws, CUDA_CUBLAS_WS_BYTES, "the cuBLAS workspace"), fail);
  {
    void *p = NULL;
    size_t bytes = (CGK_LOSS_MAX_BLOCKS + 1) * sizeof(double) + 4 * sizeof(unsigned long long);
    TRY_GOTO(device_malloc(im, &p, bytes, "loss and metric reduction scratch"), fail);
    im->d_partials = p;
    im->d_loss = im->d_partials + CGK_LOSS_MAX_BLOCKS;
    im->d_bad = (unsigned long long *)(im->d_loss + 1);
    im->d_counts = im->d_bad + 1;
  }
  TRY_GOTO(device_malloc(im, (void **)&im->d_colsum, CUDA_COLSUM_DOUBLES * sizeof(double),
                         "column-sum scratch"), fail);
  CUDA_TRY_GOTO(cudaMallocHost(&im->h_result, 64));

  CUBLAS_TRY(cuda_lib.cublasCreate(&im->cublas));
  CUBLAS_TRY(cuda_lib.cublasSetStream(im->cublas, im->stream));
  /* after SetStream: setting the stream resets the workspace to cuBLAS's own pool */
  CUBLAS_TRY(cuda_lib.cublasSetWorkspace(im->cublas, im->d_cublas_ws, CUDA_CUBLAS_WS_BYTES));
  CUBLAS_TRY(cuda_lib.cublasSetMathMode(im->cublas, im->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  CUSPARSE_TRY(cuda_lib.cusparseCreate(&im->cusparse));
  CUSPARSE_TRY(cuda_lib.cusparseSetStream(im->cusparse, im->stream));

  be->name = "cuda";
  be->kind = CG_DEVICE_CUDA;
  be->impl = im;
  be->destroy = cu_destroy;
  be->alloc = cu_alloc;
  be->free = cu_free;
  be->upload = cu_upload;
  be->download = cu_download;
  be->copy = cu_copy;
  be->sync = cu_sync;
  be->mem_info = cu_mem_info;
  be->host_alloc = cu_host_alloc;
  be->host_free = cu_host_free;
  be->upchan_create = cu_upchan_create;
  be->upchan_destroy = cu_upchan_destroy;
  be->upchan_begin = cu_upchan_begin;
  be->upchan_upload = cu_upchan_upload;
  be->upchan_join = cu_upchan_join;
  be->gemm = cu_gemm;
  be->fill = cu_fill;
  be->axpy = cu_axpy;
  be->scale = cu_scale;
  be->spmat_create = cu_spmat_create;
  be->spmat_destroy = cu_spmat_destroy;
  be->spmm = cu_spmm;
  be->bias_add = cu_bias_add;
  be->bias_grad = cu_bias_grad;
  be->relu_fwd = cu_relu_fwd;
  be->relu_bwd = cu_relu_bwd;
  be->dropout = cu_dropout;
  be->dropout_relu_bwd = cu_dropout_relu_bwd;
  be->layernorm_fwd = cu_layernorm_fwd;
  be->layernorm_bwd = cu_layernorm_bwd;
  be->xent = cu_xent;
  be->bce = cu_bce;
  be->eval_counts = cu_eval_counts;
  be->adam = cu_adam;
  be->sgd = cu_sgd;
  be->gather_rows = cu_gather_rows;
  be->scatter_add_rows = cu_scatter_add_rows;
  be->edge_scores = cu_edge_scores;
  be->edge_scores_bwd = cu_edge_scores_bwd;
  be->edge_softmax = cu_edge_softmax;
  be->edge_softmax_bwd = cu_edge_softmax_bwd;
  be->edge_dropout = cu_edge_dropout;
  be->spmm_edge = cu_spmm_edge;
  be->spmm_edge_bwd_x = cu_spmm_edge_bwd_x;
  be->spmm_edge_bwd_alpha = cu_spmm_edge_bwd_alpha;
  be->elu_fwd = cu_elu_fwd;
  be->elu_bwd = cu_elu_bwd;
  be->csr_mm = cu_csr_mm;
  be->csr_mm_t = cu_csr_mm_t;
  be->csr_dropout = cu_csr_dropout;
  LOG_INFO("cuda", "device %d: %s; GEMM %s, SpMM %s", device_ordinal, im->describe,
           im->tf32 ? "TF32" : "FP32", spmm_names[variant]);
  *out = be;
  return CG_OK;
fail:
  impl_release(im);
  cg_free(be);
  return st;
}

int cg_cuda_is_backend(const struct cg_backend *be) {
  /* The destroy pointer identifies the table without reading impl, whose type is
   * unknown for other backends. */
  return be && be->destroy == cu_destroy && be->impl &&
         ((const struct cuda_impl *)be->impl)->magic == CUDA_IMPL_MAGIC;
}

cudaStream_t cg_cuda_stream(const struct cg_backend *be) { return IMPL(be)->stream; }
int cg_cuda_device(const struct cg_backend *be) { return IMPL(be)->device; }
const char *cg_cuda_describe(const struct cg_backend *be) { return IMPL(be)->describe; }
