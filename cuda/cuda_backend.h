/* cuda/cuda_backend.h — the CUDA implementation of `struct cg_backend` (core/ops.h).
 *
 * One backend = one device + one cudaStream_t. Every op of the table enqueues on
 * that stream (cuBLAS and cuSPARSE handles are bound to it); ops that return host
 * values (xent, bce, eval_counts) and upload/download synchronise the stream.
 *
 * Threading: a backend is used from one host thread at a time. Setup calls
 * (create, alloc, spmat_create, upload, mem_info, arena_reserve) make the backend's
 * device current on the calling thread; the per-step ops do not (they assume the
 * thread that created the backend, or any thread that called cudaSetDevice on
 * cg_cuda_device(be)). The exception: the side uploads of core/ops.h (host_alloc,
 * upchan_*) select the device themselves and may come from another host thread while
 * this one enqueues ops; a channel is a stream of its own with two events (begin:
 * the channel waits for the backend's stream; join: the backend's stream waits for
 * the channel), and its pinned memory is cudaHostAlloc'd portable.
 *
 * Errors: setup calls return a status (CG_ERR_CUDA, CG_ERR_NOMEM, ...) with a
 * message; a CUDA/cuBLAS/cuSPARSE failure inside a step op is fatal: the call,
 * file:line and the CUDA error string are logged, then the process aborts.
 *
 * Memory: be->alloc is cudaMalloc, unless cg_cuda_arena_reserve() was called, in
 * which case allocations are carved (256-byte aligned) from that one block and
 * be->free of a carved pointer does nothing until the backend is destroyed.
 * Nothing is allocated on the device by the step ops: reduction scratch, the cuBLAS
 * workspace and the cuSPARSE SpMM workspace are allocated in create / spmat_create.
 *
 * SpMM variants (selected per call; see cuda/spmm.cu for the kernels):
 *   auto      default: f == 1 -> cusparse; on a matrix with the tiled layout
 *             f <= 16 -> subwarp, else tiled; without it f <= 12 -> subwarp, else
 *             warp (the rule and the H100 measurements behind it are in
 *             cuda/cuda_backend.c)
 *   cusparse  cusparseSpMM (CSR, row-major dense operands, CUSPARSE_SPMM_ALG_DEFAULT)
 *   warp      one warp per row, lanes across columns (float4/float2 loads when the
 *             width, strides and pointers allow), columns in passes of at most
 *             CAPGNN_SPMM_MAX_PASS (default 128) columns
 *   subwarp   several rows per warp, the lanes of a row split its nonzeros; for
 *             narrow widths (all columns kept in registers, width <= 16 only;
 *             wider calls fall back to warp)
 *   rowsplit  one 256-thread block per row, the 8 warps split the row's nonzeros and
 *             their partial sums are added in a fixed order (deterministic)
 *   tiled     for clustered graphs (cuda/spmm_tiles_internal.h): the nonzeros of dense
 *             256 x 256 tiles are summed from source rows staged in shared memory,
 *             the rest ("far" part) by warp/subwarp first. Needs the layout, built at
 *             spmat_create when the dense tiles hold >= 30 % of the nonzeros, for
 *             every matrix under CAPGNN_SPMM=tiled, for matrices of >= 2^20
 *             nonzeros under auto (cg_cuda_spmm_set_tiles changes this); a matrix
 *             without it runs what auto picks. Results differ from warp by rounding
 *             (other order; factored values when the matrix's factors reproduce
 *             them).
 * With warp and subwarp, rows whose degree exceeds the matrix's heavy-row threshold
 * (max(1024, 8 x average degree)) are computed by rowsplit-style blocks placed at
 * the front of the same launch, so hubs run alongside the other rows. The hand
 * kernels are deterministic (fixed summation order). Environment, read by
 * cg_backend_cuda_create: CAPGNN_SPMM=auto|cusparse|warp|subwarp|rowsplit|tiled sets
 * the initial variant (cg_cuda_spmm_set_variant() changes it later);
 * CAPGNN_SPMM_MAX_PASS=32|64|...|1024 the column pass of warp/rowsplit (tuning);
 * CAPGNN_SPMM_SLICE=N (default 128, 0: off) columns per launch of the row kernels
 * (wider products run as several launches, one column slice after the other);
 * CAPGNN_SPMM_TILE_VEC=1|2|4 (default 4) the widest vector per lane of the tiled
 * kernel (tuning);
 * CAPGNN_SPMM_TILE_REUSE=R (default 4) the nonzeros per staged source row that make
 * a tile dense, CAPGNN_SPMM_TILE_HEAVY=far|tiles where heavy rows go (tuning).
 */
#ifndef CAPGNN_CUDA_BACKEND_H
#define CAPGNN_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "core/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices; 0 when there is no driver, no device or any error
 * (never fails hard, never logs above DEBUG). */
int cg_cuda_device_count(void);

/* One line describing a device for logs: "NVIDIA H100 80GB HBM3, sm_90, 132 SMs,
 * 79.1 GiB, GPU-<uuid>, PCI 0000:19:00.0". Returns CG_OK, or CG_ERR_NOT_FOUND /
 * CG_ERR_CUDA with a message (buf then holds ""). */
int cg_cuda_device_describe(int device_ordinal, char *buf, size_t len);
/* The device UUID as "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (nvidia-smi's form),
 * the key under which device profiles are stored. Same return convention. */
int cg_cuda_device_uuid(int device_ordinal, char *buf, size_t len);

/* cuBLAS's version, "13.0.2": cuBLAS and cuSPARSE are loaded when the first backend
 * is created, not at start-up (cuda/cuda_libs_internal.h says why); this loads them
 * if none has been. CG_OK, or CG_ERR_CUDA saying which library did not load and
 * where it was looked for (buf then holds ""). */
int cg_cuda_blas_version(char *buf, size_t len);

/* Create the backend (be->name "cuda") on `device_ordinal`. tf32 = 1 lets cuBLAS
 * use TF32 tensor cores in GEMM (faster, ~1e-3 relative error); 0 = exact fp32.
 * Reads CAPGNN_SPMM. Release with cg_backend_destroy(). */
int cg_backend_cuda_create(int device_ordinal, int tf32, struct cg_backend **out);

/* 1 when `be` was made by cg_backend_cuda_create (so the accessors below may be
 * called), 0 for anything else: NULL, the CPU backend, wrappers such as the
 * profiling backend (which copy name and kind). Never aborts. */
int cg_cuda_is_backend(const struct cg_backend *be);

/* Accessors (be must be a CUDA backend). The stream is owned by the backend. */
cudaStream_t cg_cuda_stream(const struct cg_backend *be);
int cg_cuda_device(const struct cg_backend *be);
/* cg_cuda_device_describe() of the backend's device, computed once at create. */
const char *cg_cuda_describe(const struct cg_backend *be);

/* ---- device memory arena ----
 * Reserve one block of `bytes`; subsequent be->alloc calls are carved from it
 * (256-byte aligned). When the block is exhausted, alloc falls back to cudaMalloc
 * and logs a warning naming what did not fit (the plan was too small). Can be
 * called once per backend; CG_ERR_ARG on a second call, CG_ERR_NOMEM (message with
 * the size and the free memory) when the block cannot be allocated. */
int cg_cuda_arena_reserve(struct cg_backend *be, size_t bytes);
/* Bytes carved so far (including alignment padding) and the block size (0, 0 when
 * no arena was reserved). */
void cg_cuda_arena_usage(const struct cg_backend *be, size_t *used, size_t *capacity);

/* ---- SpMM variant selection ---- */
enum cg_cuda_spmm_variant {
  CG_CUDA_SPMM_AUTO = 0,
  CG_CUDA_SPMM_CUSPARSE = 1,
  CG_CUDA_SPMM_WARP = 2,
  CG_CUDA_SPMM_SUBWARP = 3,
  CG_CUDA_SPMM_ROWSPLIT = 4,
  CG_CUDA_SPMM_TILED = 5,
  CG_CUDA_SPMM_NVARIANTS = 6
};
const char *cg_cuda_spmm_variant_name(enum cg_cuda_spmm_variant v);
/* "auto", "cusparse", ... -> variant; CG_ERR_ARG with the list of names otherwise. */
int cg_cuda_spmm_variant_parse(const char *name, enum cg_cuda_spmm_variant *out);
void cg_cuda_spmm_set_variant(struct cg_backend *be, enum cg_cuda_spmm_variant v);
enum cg_cuda_spmm_variant cg_cuda_spmm_get_variant(const struct cg_backend *be);
/* The variant a be->spmm call of width f on `a` runs with the current setting (never
 * AUTO: auto resolved, unavailable variants replaced by their fallback). */
enum cg_cuda_spmm_variant cg_cuda_spmm_resolve(const struct cg_backend *be, const struct cg_spmat *a,
                                               int64_t f);
/* Rows of `a` that the warp/subwarp launches compute block-per-row, and the
 * degree threshold above which a row counts as heavy. */
void cg_cuda_spmat_heavy_rows(const struct cg_spmat *a, int64_t *n_heavy, int64_t *threshold);
/* How spmat_create builds the tiled layout: a tile is dense with >= min_reuse x 256
 * nonzeros (default 4, CAPGNN_SPMM_TILE_REUSE); rows above the heavy-row threshold
 * keep all their nonzeros in the far part (computed block-per-row) unless
 * heavy_in_tiles (default 0, CAPGNN_SPMM_TILE_HEAVY=tiles), which moves their dense
 * part into the tiles at the price of less even warps. */
struct cg_cuda_tile_opts {
  double min_reuse;
  int heavy_in_tiles;
};
/* Which matrices created afterwards get the tiled layout (each only when it pays,
 * see "tiled" above), built with opts (NULL: keep the current ones). The backend
 * starts with ON under CAPGNN_SPMM=tiled, AUTO under auto, else OFF. */
enum {
  CG_CUDA_TILES_OFF = 0,
  CG_CUDA_TILES_ON = 1,   /* every matrix */
  CG_CUDA_TILES_AUTO = 2, /* matrices with >= 2^20 nonzeros */
};
void cg_cuda_spmm_set_tiles(struct cg_backend *be, int mode, const struct cg_cuda_tile_opts *opts);
void cg_cuda_spmm_get_tile_opts(const struct cg_backend *be, struct cg_cuda_tile_opts *out);
/* Tiles of `a` and the nonzeros they hold (0, 0: no tiled layout). */
void cg_cuda_spmat_tiles(const struct cg_spmat *a, int64_t *ntiles, int64_t *tile_nnz);

#ifdef __cplusplus
}
#endif
#endif
