/* core/cpu_backend.c — the CPU implementation of struct cg_backend (core/ops.h).
 *
 * Threading: every parallel region asks for exactly the backend's thread count
 * (num_threads clause), never the process default, and OpenBLAS is set to the
 * same count so GEMM and the OpenMP loops do not oversubscribe the cores.
 *
 * Determinism: every output element is computed by one thread in a fixed order,
 * and every reduction (bias and LayerNorm parameter gradients, loss sums) splits
 * its input into blocks whose number depends only on the problem size, then
 * combines the block partials in block order. The results are therefore the same
 * for any thread count, not only for a fixed one (tested for SpMM, the reductions,
 * dropout and Adam). GEMM is oneDNN's or OpenBLAS's (cpu_choose_gemm) and only promised for a
 * fixed count.
 *
 * SpMM is the hot op of the CPU backend and lives in cpu_spmm.c (CSR or tiled
 * layout, see cpu_spmm_internal.h). Its AVX2+FMA kernels are chosen at run time when the
 * CPU has them; otherwise portable loops that the compiler vectorises for the
 * baseline ISA. Dropout has an AVX2 variant too (eight
 * Philox streams per vector; the mask is bit-identical to core/philox.h).
 * CAPGNN_CPU_KERNELS=generic forces the portable variants (the tests cover both). */
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "core/adam.h"
#include "core/sgd.h"
#include "core/log.h"
#include "core/cpu_attn_internal.h"
#include "core/cpu_spmm_internal.h"
#include "core/ops_emulate.h"
#include "core/attn.h"
#include "core/fatal.h"
#include "core/ops.h"
#include "core/philox.h"
#include "core/status.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CPU_HAVE_AVX2_VARIANT 1
#define CPU_AVX2 __attribute__((target("avx2,fma")))
#else
#define CPU_HAVE_AVX2_VARIANT 0
#endif

/* Reductions: at most RED_MAX_BLOCKS row blocks of at least RED_MIN_ROWS rows,
 * RED_MAX_COLS columns per sweep (see colsum_blocked). */
#define RED_MAX_BLOCKS 64
#define RED_MIN_ROWS 1024
#define RED_MAX_COLS 512

/* Like a CUDA stream, a backend object is driven by one host thread at a time;
 * the reduction scratch relies on it. */
enum cpu_gemm_lib { CPU_GEMM_OPENBLAS, CPU_GEMM_ONEDNN };

struct cpu_impl {
  int threads;
  enum cpu_gemm_lib gemm; /* whose sgemm (cpu_choose_gemm) */
  int avx2;    /* 1: use the AVX2+FMA kernels */
  double *red; /* 2 x RED_MAX_BLOCKS x RED_MAX_COLS block partials */
  struct cpu_spmm_ws ws; /* the tiled products' scratch, shared by every matrix (cpu_spmm_internal.h) */
  /* core/cpu_attn.c's csr products, for the widths the AVX ones do not take */
  void (*csr_mm_portable)(struct cg_backend *, const struct cg_edges *, const float *, int64_t, const float *,
                          int64_t, float *, int64_t);
  void (*csr_mm_t_portable)(struct cg_backend *, const struct cg_edges *, const float *, int64_t, const float *,
                            int64_t, float *, int64_t);
  /* core/cpu_attn.c's edge softmax, for the head counts the AVX2 one does not take */
  void (*edge_softmax_portable)(struct cg_backend *, const struct cg_edges *, const float *, int64_t, float *);
};


/* Programming errors inside ops: the op table has no error return, and going on
 * would compute garbage, so stop with the place, the condition and the reason
 * (core/fatal.h: under MPI the whole job ends, no peer is left waiting). */
#define CPU_REQUIRE(cond, ...)                                                            \
  do {                                                                                    \
    if (!(cond)) cg_fatal("core", __FILE__, __LINE__, "cpu backend: " #cond, __VA_ARGS__); \
  } while (0)

/* Below this many elements an elementwise op runs on the calling thread: the
 * fork/join would cost more than the work. On a combined `parallel for simd` the
 * clause is written `if (parallel: ...)`: a plain `if` applies to every construct
 * that takes one (OpenMP 5.0), the simd one included, and GCC then runs the loop
 * scalar: a ReLU over 14,224 floats took 8-12 us instead of 1.5 (one rank of cora on
 * 3, 2026-11-29). */
#define CPU_PAR_MIN 16384

static inline int cpu_nt(const struct cg_backend *be) {
  return ((const struct cpu_impl *)be->impl)->threads;
}

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ------------------------------------------------------------------------ */
/* memory                                                                   */
/* ------------------------------------------------------------------------ */

static void cpu_destroy(struct cg_backend *be) {
  if (!be) return;
  if (be->impl) {
    cg_free(((struct cpu_impl *)be->impl)->red);
    cpu_spmm_ws_free(&((struct cpu_impl *)be->impl)->ws);
  }
  cg_free(be->impl);
  cg_free(be);
}

static int cpu_alloc(struct cg_backend *be, void **p, size_t bytes, const char *what) {
  *p = cg_malloc(bytes, what ? what : "CPU backend buffer");
  return *p ? CG_OK : CG_ERR_NOMEM;
}

static void cpu_free(struct cg_backend *be, void *p) { cg_free(p); }

/* Large copies are split among threads: one core does not saturate memory. */
static void cpu_memcpy(const struct cg_backend *be, void *dst, const void *src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  const int nt = cpu_nt(be);
  if (nt == 1 || bytes < ((size_t)4 << 20)) {
    memcpy(dst, src, bytes);
    return;
  }
  const size_t chunk = ((bytes / (size_t)nt) + 63) & ~(size_t)63;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int t = 0; t < nt; t++) {
    size_t off = (size_t)t * chunk;
    if (off < bytes) {
      size_t len = bytes - off < chunk ? bytes - off : chunk;
      memcpy((char *)dst + off, (const char *)src + off, len);
    }
  }
}

static int cpu_upload(struct cg_backend *be, void *dst, const void *src, size_t bytes) {
  cpu_memcpy(be, dst, src, bytes);
  return CG_OK;
}

static int cpu_download(struct cg_backend *be, void *dst, const void *src, size_t bytes) {
  cpu_memcpy(be, dst, src, bytes);
  return CG_OK;
}

static void cpu_copy(struct cg_backend *be, void *dst, const void *src, size_t bytes) {
  cpu_memcpy(be, dst, src, bytes);
}

static void cpu_sync(struct cg_backend *be) { (void)be; /* ops complete before returning */ }

static int cpu_mem_info(struct cg_backend *be, size_t *free_bytes, size_t *total_bytes) {
  (void)be;
  return cg_host_mem_info(free_bytes, total_bytes);
}

int cg_host_mem_info(size_t *free_bytes, size_t *total_bytes) {
  FILE *fp = fopen("/proc/meminfo", "r");
  if (!fp)
    return cg_err_set(CG_ERR_IO,
                      "cannot open /proc/meminfo to read the free host memory; this needs a "
                      "Linux /proc file system");
  char line[256];
  long long total_kb = -1, avail_kb = -1;
  while (fgets(line, sizeof line, fp)) {
    long long v;
    if (sscanf(line, "MemTotal: %lld kB", &v) == 1) total_kb = v;
    else if (sscanf(line, "MemAvailable: %lld kB", &v) == 1) avail_kb = v;
  }
  fclose(fp);
  if (total_kb < 0 || avail_kb < 0)
    return cg_err_set(CG_ERR_FORMAT,
                      "/proc/meminfo has no MemTotal or MemAvailable line (Linux >= 3.14 "
                      "provides both)");
  if (free_bytes) *free_bytes = (size_t)avail_kb * 1024u;
  if (total_bytes) *total_bytes = (size_t)total_kb * 1024u;
  return CG_OK;
}

/* ------------------------------------------------------------------------ */
/* dense                                                                    */
/* ------------------------------------------------------------------------ */

/* oneDNN's row-major sgemm, loaded at run time from Debian's libdnnl2 when present (no
 * build dependency; the prototype is oneDNN 2.x's dnnl_sgemm, 64-bit sizes). Why: on the
 * Zen 4 VM (2026-11-28, benchmarks/bench_blas.c, README "the BLAS libraries Debian
 * packages") it was the fastest Debian BLAS package on nearly every GEMM shape of a
 * training epoch: the GEMMs of a GCN epoch on full synth:reddit took 10-22 % less time
 * than with OpenBLAS at 2 threads (two runs) and 13 % less at 1 thread; on the Zen 3 VM
 * of 2026-11-27 (AVX2 only) 10 % less at 2 threads, 3 % more at 1. Only a build with the
 * OpenMP runtime is used: its threads then follow omp_set_num_threads. */
typedef int (*dnnl_sgemm_fn)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t,
                             const float *, int64_t, float, float *, int64_t);
struct dnnl_version_s {
  int major, minor, patch;
  const char *hash;
  unsigned cpu_runtime, gpu_runtime;
};
#define CPU_ONEDNN_SONAME "libdnnl.so.2"
#define CPU_ONEDNN_RUNTIME_OMP 2u
static pthread_once_t dnnl_once = PTHREAD_ONCE_INIT;
static dnnl_sgemm_fn dnnl_sgemm_p;
static char dnnl_what[400]; /* its version, or why it is not used */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CPU_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(leak_sanitizer)
#define CPU_SANITIZED 1
#endif
#endif

static void dnnl_load(void) {
#ifdef CPU_SANITIZED
  /* (not in a sanitizer build: uninstrumented, and with it loaded LeakSanitizer's exit
   * scan crashed in test_emulate; these builds test capgnn's code, OpenBLAS serves) */
  snprintf(dnnl_what, sizeof dnnl_what, "not loaded in a sanitizer build");
  return;
#endif
  void *h = dlopen(CPU_ONEDNN_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(dnnl_what, sizeof dnnl_what, "%s; Debian: apt-get install libdnnl2", dlerror());
    return;
  }
  const struct dnnl_version_s *(*ver)(void) = (const struct dnnl_version_s *(*)(void))dlsym(h, "dnnl_version");
  dnnl_sgemm_fn fn = (dnnl_sgemm_fn)dlsym(h, "dnnl_sgemm");
  const struct dnnl_version_s *v = ver ? ver() : NULL;
  if (!fn || !v || v->major != 2)
    snprintf(dnnl_what, sizeof dnnl_what, "%s: %s", CPU_ONEDNN_SONAME,
             !fn || !v ? "no dnnl_sgemm or dnnl_version" : "not oneDNN 2.x");
  else if (v->cpu_runtime != CPU_ONEDNN_RUNTIME_OMP)
    snprintf(dnnl_what, sizeof dnnl_what, "%s: oneDNN %d.%d.%d without the OpenMP runtime", CPU_ONEDNN_SONAME,
             v->major, v->minor, v->patch);
  else {
    snprintf(dnnl_what, sizeof dnnl_what, "oneDNN %d.%d.%d (dnnl_sgemm, OpenMP)", v->major, v->minor, v->patch);
    dnnl_sgemm_p = fn;
    return; /* (the library stays loaded for the life of the process) */
  }
  dlclose(h);
}

static int cpu_gemm_env_check(void) {
  const char *e = getenv("CAPGNN_CPU_GEMM");
  if (e && *e && strcmp(e, "auto") != 0 && strcmp(e, "openblas") != 0 && strcmp(e, "onednn") != 0)
    return cg_err_set(CG_ERR_ARG, "CAPGNN_CPU_GEMM=%s: expected auto, openblas or onednn", e);
  return CG_OK;
}

/* CAPGNN_CPU_KERNELS=generic forces the portable kernels, auto (default) picks AVX2 when
 * the CPU has it; anything else is refused rather than read as auto. */
static int cpu_kernels_env_check(void) {
  const char *e = getenv("CAPGNN_CPU_KERNELS");
  if (e && *e && strcmp(e, "auto") != 0 && strcmp(e, "generic") != 0)
    return cg_err_set(CG_ERR_ARG, "CAPGNN_CPU_KERNELS=%s: expected auto or generic", e);
  return CG_OK;
}

int cg_cpu_settings_check(void) {
  TRY(cpu_gemm_env_check());
  TRY(cpu_kernels_env_check());
  return cpu_spmm_env_check();
}

/* The GEMM library: CAPGNN_CPU_GEMM=openblas|onednn, or auto (default): oneDNN when it
 * loads, else OpenBLAS. */
static int cpu_choose_gemm(enum cpu_gemm_lib *lib) {
  const char *e = getenv("CAPGNN_CPU_GEMM");
  *lib = CPU_GEMM_OPENBLAS;
  TRY(cpu_gemm_env_check());
  if (e && !strcmp(e, "openblas")) return CG_OK;
  const int want = e && !strcmp(e, "onednn");
  pthread_once(&dnnl_once, dnnl_load);
  if (dnnl_sgemm_p) *lib = CPU_GEMM_ONEDNN;
  else if (want)
    return cg_err_set(CG_ERR_UNSUPPORTED, "CAPGNN_CPU_GEMM=onednn: oneDNN cannot be used (%s)", dnnl_what);
  return CG_OK;
}

static void cpu_gemm(struct cg_backend *be, int ta, int tb, int64_t m, int64_t n, int64_t k,
                     float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                     float beta, float *c, int64_t ldc) {
  CPU_REQUIRE(m >= 0 && n >= 0 && k >= 0, "gemm: negative size m=%lld n=%lld k=%lld",
              (long long)m, (long long)n, (long long)k);
  if (m == 0 || n == 0) return;
  CPU_REQUIRE(ldc >= n, "gemm: ldc=%lld < n=%lld", (long long)ldc, (long long)n);
  if (k == 0) { /* op(A) op(B) is empty: C = beta C (BLAS does not read C when beta == 0) */
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  CPU_REQUIRE(lda >= (ta ? m : k), "gemm: lda=%lld too small (ta=%d m=%lld k=%lld)",
              (long long)lda, ta, (long long)m, (long long)k);
  CPU_REQUIRE(ldb >= (tb ? k : n), "gemm: ldb=%lld too small (tb=%d n=%lld k=%lld)",
              (long long)ldb, tb, (long long)n, (long long)k);
  const int nt = cpu_nt(be);
  if (((const struct cpu_impl *)be->impl)->gemm == CPU_GEMM_ONEDNN) {
    /* its threads are the calling thread's OpenMP team size: set for this call only */
    const int prev = omp_get_max_threads();
    if (prev != nt) omp_set_num_threads(nt);
    const int st = dnnl_sgemm_p(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (prev != nt) omp_set_num_threads(prev);
    CPU_REQUIRE(st == 0, "gemm: dnnl_sgemm failed (status %d) for m=%lld n=%lld k=%lld", st, (long long)m,
                (long long)n, (long long)k);
    return;
  }
  /* OpenBLAS takes 32-bit sizes. */
  CPU_REQUIRE(m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX && lda <= INT32_MAX &&
                  ldb <= INT32_MAX && ldc <= INT32_MAX,
              "gemm: sizes exceed the 32-bit BLAS interface");
  /* The OpenBLAS thread count is process-wide; another backend object may have
   * changed it since this one was created. */
  if (openblas_get_num_threads() != nt) openblas_set_num_threads(nt);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

static void cpu_fill(struct cg_backend *be, float *x, int64_t n, float value) {
  const int nt = cpu_nt(be);
#pragma omp parallel for simd num_threads(nt) schedule(static) if (parallel: n >= CPU_PAR_MIN)
  for (int64_t i = 0; i < n; i++) x[i] = value;
}

static void cpu_axpy(struct cg_backend *be, int64_t n, float alpha, const float *x, float *y) {
  const int nt = cpu_nt(be);
#pragma omp parallel for simd num_threads(nt) schedule(static) if (parallel: n >= CPU_PAR_MIN)
  for (int64_t i = 0; i < n; i++) y[i] += alpha * x[i];
}

static void cpu_scale(struct cg_backend *be, int64_t n, float alpha, float *x) {
  const int nt = cpu_nt(be);
#pragma omp parallel for simd num_threads(nt) schedule(static) if (parallel: n >= CPU_PAR_MIN)
  for (int64_t i = 0; i < n; i++) x[i] *= alpha;
}

/* ------------------------------------------------------------------------ */
/* sparse                                                                   */
/* ------------------------------------------------------------------------ */

static void cpu_spmat_destroy(struct cg_backend *be, struct cg_spmat *a) {
  (void)be;
  cpu_spmat_free(a);
}

static int cpu_spmat_create(struct cg_backend *be, const struct cg_csr *host,
                            struct cg_spmat **out) {
  TRY(cpu_spmat_build(host, cpu_nt(be), out));
  const int st = cpu_spmm_ws_reserve(&((struct cpu_impl *)be->impl)->ws, *out);
  if (st != CG_OK) {
    cpu_spmat_free(*out);
    *out = NULL;
  }
  return st;
}

static void cpu_spmm(struct cg_backend *be, const struct cg_spmat *a, const float *x, int64_t ldx,
                     float *y, int64_t ldy, int64_t f) {
  if (f <= 0) return;
  CPU_REQUIRE(ldx >= f && ldy >= f, "spmm: ldx=%lld, ldy=%lld must be >= f=%lld",
              (long long)ldx, (long long)ldy, (long long)f);
  const struct cpu_impl *impl = be->impl;
  CPU_REQUIRE(cpu_spmm_ws_fits(&impl->ws, a), "spmm: a matrix built by another backend (the one that "
              "builds a matrix reserves its products' scratch)");
  cpu_spmm_run(a, impl->avx2, &impl->ws, x, ldx, y, ldy, f);
}

/* ------------------------------------------------------------------------ */
/* deterministic reductions                                                 */
/* ------------------------------------------------------------------------ */

/* Column sums over rows, deterministic for any thread count: the rows are cut
 * into at most RED_MAX_BLOCKS blocks (the count depends on the row count only),
 * each block is summed in row order in double into its own slot of the backend's
 * reduction scratch (allocated once at creation, so ops allocate nothing), then
 * each column adds its block partials in block order. RED_MAX_COLS columns per
 * sweep bound the scratch.
 *
 * mode 0: s1 = sum dy.  mode 1 (LayerNorm): s1 = sum dy * xhat, s2 = sum dy,
 * xhat = (x - mean[r]) * rstd[r]. */
static int64_t red_nblocks(int64_t rows, int64_t min_per_block, int64_t max_blocks) {
  int64_t nb = (rows + min_per_block - 1) / min_per_block;
  if (nb < 1) nb = 1;
  return nb > max_blocks ? max_blocks : nb;
}

static void colsum_blocked(const struct cg_backend *be, int mode, const float *dy, const float *x,
                           const float *mean, const float *rstd, int64_t rows, int64_t cols,
                           float *s1, float *s2) {
  const struct cpu_impl *im = be->impl;
  const int nt = im->threads;
  const int64_t nb = red_nblocks(rows, RED_MIN_ROWS, RED_MAX_BLOCKS);
  double *p1 = im->red, *p2 = im->red + RED_MAX_BLOCKS * RED_MAX_COLS; /* [block][col] */
  for (int64_t c0 = 0; c0 < cols; c0 += RED_MAX_COLS) {
    const int64_t w = min64(RED_MAX_COLS, cols - c0);
#pragma omp parallel num_threads(nt) if (rows * w >= CPU_PAR_MIN)
    {
#pragma omp for schedule(static)
      for (int64_t b = 0; b < nb; b++) {
        const int64_t r0 = rows * b / nb, r1 = rows * (b + 1) / nb;
        double *a1 = p1 + b * RED_MAX_COLS, *a2 = p2 + b * RED_MAX_COLS;
        for (int64_t j = 0; j < w; j++) a1[j] = a2[j] = 0.0;
        if (mode == 0) {
          for (int64_t r = r0; r < r1; r++) {
            const float *d = dy + r * cols + c0;
            for (int64_t j = 0; j < w; j++) a1[j] += d[j];
          }
        } else {
          for (int64_t r = r0; r < r1; r++) {
            const float *d = dy + r * cols + c0, *xr = x + r * cols + c0;
            const float m = mean[r], rs = rstd[r];
            for (int64_t j = 0; j < w; j++) {
              a1[j] += (double)(d[j] * ((xr[j] - m) * rs));
              a2[j] += d[j];
            }
          }
        }
      }
      /* implicit barrier: all partials are written */
#pragma omp for schedule(static)
      for (int64_t j = 0; j < w; j++) {
        double t1 = 0.0, t2 = 0.0;
        for (int64_t b = 0; b < nb; b++) {
          t1 += p1[b * RED_MAX_COLS + j];
          t2 += p2[b * RED_MAX_COLS + j];
        }
        s1[c0 + j] = (float)t1;
        if (mode == 1) s2[c0 + j] = (float)t2;
      }
    }
  }
}

static void cpu_bias_add(struct cg_backend *be, float *y, const float *bias, int64_t rows,
                         int64_t cols) {
  const int nt = cpu_nt(be);
#pragma omp parallel for num_threads(nt) schedule(static) if (rows * cols >= CPU_PAR_MIN)
  for (int64_t r = 0; r < rows; r++) {
    float *yr = y + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; c++) yr[c] += bias[c];
  }
}

static void cpu_bias_grad(struct cg_backend *be, const float *dy, int64_t rows, int64_t cols,
                          float *db) {
  colsum_blocked(be, 0, dy, NULL, NULL, NULL, rows, cols, db, NULL);
}

/* ------------------------------------------------------------------------ */
/* elementwise and layer ops                                                */
/* ------------------------------------------------------------------------ */

static void cpu_relu_fwd(struct cg_backend *be, const float *x, float *y, int64_t n) {
  const int nt = cpu_nt(be);
  /* !(x <= 0): a NaN passes (as in torch.relu) and reaches the loss, where the run stops
   * as diverged; `x > 0 ? x : 0` made it 0, and training went on with garbage */
#pragma omp parallel for simd num_threads(nt) schedule(static) if (parallel: n >= CPU_PAR_MIN)
  for (int64_t i = 0; i < n; i++) y[i] = !(x[i] <= 0.0f) ? x[i] : 0.0f;
}

static void cpu_relu_bwd(struct cg_backend *be, const float *y, float *dy, int64_t n) {
  const int nt = cpu_nt(be);
#pragma omp parallel for simd num_threads(nt) schedule(static) if (parallel: n >= CPU_PAR_MIN)
  for (int64_t i = 0; i < n; i++) dy[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

static void cpu_dropout_relu_bwd(struct cg_backend *be, const float *hd, float *dy, int64_t n,
                                 float scale) {
  const int nt = cpu_nt(be);
  /* select, then scale (0 * scale is +0 for a finite scale > 0): a product inside the
   * select would be a branch, as GCC does not speculate a floating-point operation */
#pragma omp parallel for simd num_threads(nt) schedule(static) if (parallel: n >= CPU_PAR_MIN)
  for (int64_t i = 0; i < n; i++) dy[i] = (hd[i] > 0.0f ? dy[i] : 0.0f) * scale;
}

/* This OpenMP thread's share [*b, *e) of n items, in blocks of whole multiples of align
 * but the last thread's (which ends at n). */
static inline void thread_block(int64_t n, int64_t align, int64_t *b, int64_t *e) {
  const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
  *b = n / align * t / T * align;
  *e = t == T - 1 ? n : n / align * (t + 1) / T * align;
}

/* The dropouts that draw nothing, over n values: p <= 0 keeps everything (a copy when
 * out != in), p >= 1 nothing (u < 1 always, and 1/(1-p) is not finite). 1 when done. */
static int cpu_dropout_trivial(struct cg_backend *be, const float *in, float *out, int64_t n, float p) {
  if (p <= 0.0f) {
    if (out != in) cpu_memcpy(be, out, in, (size_t)n * sizeof(float));
    return 1;
  }
  if (p >= 1.0f) {
    cpu_fill(be, out, n, 0.0f);
    return 1;
  }
  return 0;
}

/* One row, one Philox call per 4 columns: lane l of call q
 * is column 4q + l, the same numbers as cg_dropout_uniform column by column. */
static void dropout_row_scalar(const float *ir, float *orow, int64_t cols, uint32_t g, float p,
                               float scale, struct cg_dropout_key key) {
  const uint32_t k0 = (uint32_t)key.seed, k1 = (uint32_t)(key.seed >> 32);
  for (int64_t c0 = 0; c0 < cols; c0 += 4) {
    const struct cg_philox_out o =
        cg_philox4x32_10((uint32_t)(c0 >> 2), g, key.layer, key.epoch, k0, k1);
    const int64_t w = min64(4, cols - c0);
    for (int64_t l = 0; l < w; l++)
      orow[c0 + l] = cg_dropout_keep(cg_u32_to_unit(o.v[l]), p) ? ir[c0 + l] * scale : 0.0f;
  }
}

#if CPU_HAVE_AVX2_VARIANT
/* 32 x 32 -> 64 bit products of 8 lanes, split into low and high words. */
static inline __attribute__((always_inline)) CPU_AVX2 void mulhilo8(__m256i a, __m256i m,
                                                                   __m256i *lo, __m256i *hi) {
  const __m256i even = _mm256_mul_epu32(a, m);                        /* lanes 0,2,4,6 */
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);  /* lanes 1,3,5,7 */
  *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

/* Eight Philox4x32-10 evaluations side by side (core/philox.h, lane by lane). */
static inline __attribute__((always_inline)) CPU_AVX2 void philox8(__m256i c[4], uint32_t k0,
                                                                  uint32_t k1) {
  const __m256i m0 = _mm256_set1_epi32((int)0xD2511F53u), m1 = _mm256_set1_epi32((int)0xCD9E8D57u);
  for (int r = 0; r < 10; r++) {
    __m256i lo0, hi0, lo1, hi1;
    mulhilo8(c[0], m0, &lo0, &hi0);
    mulhilo8(c[2], m1, &lo1, &hi1);
    const __m256i n0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c[1]), _mm256_set1_epi32((int)k0));
    const __m256i n2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c[3]), _mm256_set1_epi32((int)k1));
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

/* The 4 x 8 words of philox8 in column order: c[l] lane q is column 4q + l; u[j] gets
 * columns 8j .. 8j + 7 (lanes 2j and 2j + 1, their 4 words each). */
static inline __attribute__((always_inline)) CPU_AVX2 void words_by_column(const __m256i c[4], __m256i u[4]) {
  const __m256i t0 = _mm256_unpacklo_epi32(c[0], c[1]), t1 = _mm256_unpackhi_epi32(c[0], c[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(c[2], c[3]), t3 = _mm256_unpackhi_epi32(c[2], c[3]);
  const __m256i r0 = _mm256_unpacklo_epi64(t0, t2), r1 = _mm256_unpackhi_epi64(t0, t2);
  const __m256i r2 = _mm256_unpacklo_epi64(t1, t3), r3 = _mm256_unpackhi_epi64(t1, t3);
  u[0] = _mm256_permute2x128_si256(r0, r1, 0x20);
  u[1] = _mm256_permute2x128_si256(r2, r3, 0x20);
  u[2] = _mm256_permute2x128_si256(r0, r1, 0x31);
  u[3] = _mm256_permute2x128_si256(r2, r3, 0x31);
}

/* Dropout of one row: 8 Philox calls give 32 columns; the 4 x 8 output words are
 * transposed into column order, then u >= p is decided in float exactly as
 * cg_u32_to_unit / cg_dropout_keep do, so the mask is bit-identical. A last block of
 * fewer than 32 columns draws the same 8 calls and loads and stores only its columns
 * (masked: nothing past the row is touched), as the scalar rule would have drawn them
 * 4 columns a call, ~7x slower (a 602-wide row has a 26-column tail). */
CPU_AVX2 static void dropout_row_avx2(const float *ir, float *orow, int64_t cols, uint32_t g,
                                      float p, float scale, struct cg_dropout_key key) {
  const uint32_t k0 = (uint32_t)key.seed, k1 = (uint32_t)(key.seed >> 32);
  const __m256i q_lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 pv = _mm256_set1_ps(p), sv = _mm256_set1_ps(scale);
  const __m256 unit = _mm256_set1_ps(1.0f / 16777216.0f);
  for (int64_t c0 = 0; c0 < cols; c0 += 32) {
    const int64_t left = cols - c0; /* columns of this block: 32, or the tail's */
    __m256i c[4];
    c[0] = _mm256_add_epi32(_mm256_set1_epi32((int)(uint32_t)(c0 >> 2)), q_lane);
    c[1] = _mm256_set1_epi32((int)g);
    c[2] = _mm256_set1_epi32((int)key.layer);
    c[3] = _mm256_set1_epi32((int)key.epoch);
    philox8(c, k0, k1);
    /* c[l] lane q is column 4q + l: transposed to 4 vectors of 8 consecutive columns */
    __m256i u[4];
    words_by_column(c, u);
    for (int j = 0; j < 4 && 8 * j < left; j++) {
      const __m256 uf = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(u[j], 8)), unit);
      const __m256 keep = _mm256_cmp_ps(uf, pv, _CMP_GE_OQ);
      const float *src = ir + c0 + 8 * j;
      float *dst = orow + c0 + 8 * j;
      if (left >= 8 * j + 8) {
        const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(src), sv);
        _mm256_storeu_ps(dst, _mm256_and_ps(v, keep));
      } else { /* lanes below left - 8j */
        const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(left - 8 * j)), q_lane);
        const __m256 v = _mm256_mul_ps(_mm256_maskload_ps(src, m), sv);
        _mm256_maskstore_ps(dst, m, _mm256_and_ps(v, keep));
      }
    }
  }
}
#endif

#if CPU_HAVE_AVX2_VARIANT
/* csr_dropout of one row's stored values (core/attn.h, cg_csr_dropout_row, bit for bit):
 * 8 stored entries a step, each lane drawing the Philox call of its own column's group
 * (c >> 2) and taking its word c & 3, so a bag-of-words row of 18 entries costs 3 vector
 * draws where the scalar rule made ~18 calls (its entries seldom share a group). A last
 * step of fewer than 8 entries loads and stores only its own (masked). */
CPU_AVX2 static void csr_dropout_row_avx2(const int32_t *col, const float *in, float *out, int64_t n,
                                          uint32_t g, float p, float scale, struct cg_dropout_key key) {
  const uint32_t k0 = (uint32_t)key.seed, k1 = (uint32_t)(key.seed >> 32);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), one = _mm256_set1_epi32(1),
                two = _mm256_set1_epi32(2);
  const __m256 pv = _mm256_set1_ps(p), sv = _mm256_set1_ps(scale);
  const __m256 unit = _mm256_set1_ps(1.0f / 16777216.0f);
  for (int64_t k = 0; k < n; k += 8) {
    const int64_t left = n - k;
    const __m256i m = left >= 8 ? _mm256_set1_epi32(-1) : _mm256_cmpgt_epi32(_mm256_set1_epi32((int)left), lane);
    const __m256i cc = _mm256_maskload_epi32((const int *)(col + k), m);
    __m256i c[4];
    c[0] = _mm256_srli_epi32(cc, 2);
    c[1] = _mm256_set1_epi32((int)g);
    c[2] = _mm256_set1_epi32((int)key.layer);
    c[3] = _mm256_set1_epi32((int)key.epoch);
    philox8(c, k0, k1);
    /* word c & 3 of each lane's draw: bit 0 picks within (0, 1) and (2, 3), bit 1 between */
    const __m256i b0 = _mm256_cmpeq_epi32(_mm256_and_si256(cc, one), one);
    const __m256i b1 = _mm256_cmpeq_epi32(_mm256_and_si256(cc, two), two);
    const __m256i w = _mm256_blendv_epi8(_mm256_blendv_epi8(c[0], c[1], b0), _mm256_blendv_epi8(c[2], c[3], b0), b1);
    const __m256 uf = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(w, 8)), unit);
    const __m256 keep = _mm256_cmp_ps(uf, pv, _CMP_GE_OQ);
    const __m256 v = _mm256_mul_ps(_mm256_maskload_ps(in + k, m), sv);
    _mm256_maskstore_ps(out + k, m, _mm256_and_ps(v, keep));
  }
}

/* edge_dropout (the attention dropout: core/attn.h, cg_attn_dropout_edge, bit for bit) of
 * rows [r0, r1) on AVX2: the rows' edges 8 at a time whatever rows they belong to (a lane
 * per edge: its source's and its row's global ids; cora's rows have ~5 edges, so a step
 * per row would leave most lanes idle), one 8-lane Philox call per 4 heads where the
 * scalar rule made one call per edge and 4 heads. The 4 x 8 drawn words are transposed
 * so that each edge's 4 heads sit in one 128-bit half, where the keep rule runs as
 * cg_u32_to_unit / cg_dropout_keep do (heads past H masked). */
CPU_AVX2 static void edge_dropout_rows_avx2(const struct cg_edges *e, const int32_t *gid, const float *in,
                                            float *out, int64_t H, int64_t r0, int64_t r1, float p, float scale,
                                            struct cg_dropout_key key) {
  const uint32_t k0 = (uint32_t)key.seed, k1 = (uint32_t)(key.seed >> 32);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m128i lane4 = _mm_setr_epi32(0, 1, 2, 3);
  const __m128 pv = _mm_set1_ps(p), sv = _mm_set1_ps(scale), unit = _mm_set1_ps(1.0f / 16777216.0f);
  const int64_t kend = e->rowptr[r1];
  int64_t r = r0;
  for (int64_t k = e->rowptr[r0]; k < kend; k += 8) {
    const int64_t left = kend - k, w = left < 8 ? left : 8;
    const __m256i m = left >= 8 ? _mm256_set1_epi32(-1) : _mm256_cmpgt_epi32(_mm256_set1_epi32((int)left), lane);
    const __m256i cc = _mm256_maskload_epi32((const int *)(e->colidx + k), m);
    const __m256i src = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int *)gid, cc, m, 4);
    int32_t dst[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t l = 0; l < w; l++) {
      while (e->rowptr[r + 1] <= k + l) r++;
      dst[l] = gid[r];
    }
    const __m256i dv = _mm256_loadu_si256((const __m256i *)dst);
    for (int64_t h0 = 0; h0 < H; h0 += 4) {
      __m256i c[4];
      c[0] = src;
      c[1] = dv;
      c[2] = _mm256_set1_epi32((int)cg_attn_dropout_c2(key.layer, h0 >> 2));
      c[3] = _mm256_set1_epi32((int)key.epoch);
      philox8(c, k0, k1);
      /* c[j] lane l is head h0 + j of edge k + l: transposed, u[l] holds lane l's 4 heads */
      const __m256i t0 = _mm256_unpacklo_epi32(c[0], c[1]), t1 = _mm256_unpackhi_epi32(c[0], c[1]);
      const __m256i t2 = _mm256_unpacklo_epi32(c[2], c[3]), t3 = _mm256_unpackhi_epi32(c[2], c[3]);
      const __m256i q0 = _mm256_unpacklo_epi64(t0, t2), q1 = _mm256_unpackhi_epi64(t0, t2);
      const __m256i q2 = _mm256_unpacklo_epi64(t1, t3), q3 = _mm256_unpackhi_epi64(t1, t3);
      __m128i u[8];
      u[0] = _mm256_castsi256_si128(q0);
      u[1] = _mm256_castsi256_si128(q1);
      u[2] = _mm256_castsi256_si128(q2);
      u[3] = _mm256_castsi256_si128(q3);
      u[4] = _mm256_extracti128_si256(q0, 1);
      u[5] = _mm256_extracti128_si256(q1, 1);
      u[6] = _mm256_extracti128_si256(q2, 1);
      u[7] = _mm256_extracti128_si256(q3, 1);
      const int64_t hn = H - h0 < 4 ? H - h0 : 4;
      const __m128i hm = _mm_cmpgt_epi32(_mm_set1_epi32((int)hn), lane4);
      for (int64_t l = 0; l < w; l++) {
        const int64_t at = (k + l) * H + h0;
        const __m128 uf = _mm_mul_ps(_mm_cvtepi32_ps(_mm_srli_epi32(u[l], 8)), unit);
        const __m128 keep = _mm_cmpge_ps(uf, pv);
        if (hn == 4) {
          _mm_storeu_ps(out + at, _mm_and_ps(_mm_mul_ps(_mm_loadu_ps(in + at), sv), keep));
        } else {
          const __m128 v = _mm_mul_ps(_mm_maskload_ps(in + at, hm), sv);
          _mm_maskstore_ps(out + at, hm, _mm_and_ps(v, keep));
        }
      }
    }
  }
}

/* edge_dropout on AVX2 (replaces core/cpu_attn.c's scalar one when the CPU has it):
 * each thread a contiguous block of rows. */
static void cpu_edge_dropout_avx2(struct cg_backend *be, const struct cg_edges *e, const float *in, float *out,
                                  int64_t heads, const int32_t *gid, float p, struct cg_dropout_key key) {
  const int nt = cpu_nt(be);
  const int64_t n = e->nnz * heads;
  if (cpu_dropout_trivial(be, in, out, n, p)) return;
  const float scale = 1.0f / (1.0f - p);
#pragma omp parallel num_threads(nt) if (n >= CPU_PAR_MIN)
  {
    int64_t r0, r1;
    thread_block(e->nrows, 1, &r0, &r1);
    edge_dropout_rows_avx2(e, gid, in, out, heads, r0, r1, p, scale, key);
  }
}

/* elu_bwd on AVX2: cg_elu_grad's values (dy where y > 0, dy (y + 1) elsewhere) as dy times
 * min(1, y + 1): y > 0 makes the factor 1 and dy * 1 is dy; y <= 0 makes it y + 1, the
 * product cg_elu_grad forms; a NaN y gives y + 1 (minps returns its second operand), NaN,
 * as cg_elu_grad does. core/cpu_attn.c's loop of cg_elu_grad stays scalar, with a branch
 * that cora's GAT mispredicts (~3 ns an element): GCC puts the product back into the
 * branch in every form of the select (a floating-point operation is not speculated). */
CPU_AVX2 static void elu_bwd_avx2(const float *y, float *dy, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_min_ps(one, _mm256_add_ps(_mm256_loadu_ps(y + i), one));
    _mm256_storeu_ps(dy + i, _mm256_mul_ps(_mm256_loadu_ps(dy + i), f));
  }
  for (; i < n; i++) dy[i] = cg_elu_grad(y[i], dy[i]);
}

/* fn over n elements of a and b, each thread a block of whole vectors of 8 (the last
 * thread's ends at n). */
static void blocks_of_8(struct cg_backend *be, void (*fn)(const float *, float *, int64_t), const float *a, float *b,
                        int64_t n) {
  const int nt = cpu_nt(be);
#pragma omp parallel num_threads(nt) if (n >= CPU_PAR_MIN)
  {
    int64_t lo, hi;
    thread_block(n, 8, &lo, &hi);
    fn(a + lo, b + lo, hi - lo);
  }
}

static void cpu_elu_bwd_avx2(struct cg_backend *be, const float *y, float *dy, int64_t n) {
  blocks_of_8(be, elu_bwd_avx2, y, dy, n);
}

#if CPU_HAVE_LIBMVEC
/* ELU and the attention softmax with glibc's vector exponentials (libmvec, the AVX2
 * variants): 8 floats a call. libm's scalar expm1f and expf were 15 % and 6 % of a GAT
 * epoch on cora (perf, 1 thread). The values differ from the scalar functions' in the
 * last bits (libmvec's are within a few ulp, not always correctly rounded), so these two
 * ops no longer equal core/attn.h's cg_elu / cg_attn_softmax_rh bit for bit; everything
 * else of the formulas is kept (the select, the row maximum, the per-head sum in edge
 * order, one division), and every element goes through the vector function, the last
 * partial vector too (padded), so an element's value does not depend on where a thread's
 * block or the array ends: the same on any thread count and any rank count of one host.
 * Across hosts the bits follow what each has: a CPU without AVX2, CAPGNN_CPU_KERNELS=generic,
 * a build without libmvec (-DCAPGNN_HAVE_LIBMVEC=OFF at configure time skips it) or
 * another glibc's libmvec (linked dynamically) give other last bits of these two ops. */
/* (declared with the AVX2 target, as their callers: clang refuses a 256-bit argument
 * between a caller with AVX and a callee without it) */
CPU_AVX2 __m256 _ZGVdN8v_expm1f(__m256 x);
CPU_AVX2 __m256 _ZGVdN8v_expf(__m256 x);

/* n floats (n < 8) through f, by way of a padded vector. */
CPU_AVX2 static void tail8(__m256 (*f)(__m256), const float *x, float *y, int64_t n) {
  float t[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  memcpy(t, x, (size_t)n * sizeof(float));
  _mm256_storeu_ps(t, f(_mm256_loadu_ps(t)));
  memcpy(y, t, (size_t)n * sizeof(float));
}

/* cg_elu on 8 lanes: x where x > 0, else expm1(x) (a NaN takes expm1's NaN, as there). */
CPU_AVX2 static __m256 elu8(__m256 x) {
  return _mm256_blendv_ps(_ZGVdN8v_expm1f(x), x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ));
}

CPU_AVX2 static void elu_fwd_avx2(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, elu8(_mm256_loadu_ps(x + i)));
  if (i < n) tail8(elu8, x + i, y + i, n - i);
}

static void cpu_elu_fwd_avx2(struct cg_backend *be, const float *x, float *y, int64_t n) {
  blocks_of_8(be, elu_fwd_avx2, x, y, n);
}

/* Rows [r0, r1) of the edge softmax, cg_attn_softmax_rh's steps for every head at once:
 * heads a multiple of 8, a vector of 8 heads per edge (the maximum, then exp(s - max)
 * into alpha while each head's sum adds up in edge order, then one reciprocal a head);
 * one head, 8 edges per vector for the exponentials, the maximum and the sum in edge
 * order as there. alpha may equal s. */
CPU_AVX2 static void softmax_rows_avx2(const struct cg_edges *e, const float *s, int64_t H, float *alpha,
                                       int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; r++) {
    const int64_t k0 = e->rowptr[r], k1 = e->rowptr[r + 1];
    if (k0 == k1) continue;
    if (H == 1) {
      float mx = s[k0];
      for (int64_t k = k0 + 1; k < k1; k++) mx = fmaxf(mx, s[k]);
      const __m256 m = _mm256_set1_ps(mx);
      int64_t k = k0;
      for (; k + 8 <= k1; k += 8)
        _mm256_storeu_ps(alpha + k, _ZGVdN8v_expf(_mm256_sub_ps(_mm256_loadu_ps(s + k), m)));
      if (k < k1) {
        float t[8];
        for (int64_t j = 0; j < k1 - k; j++) t[j] = s[k + j] - mx;
        tail8(_ZGVdN8v_expf, t, alpha + k, k1 - k);
      }
      float sum = 0.0f;
      for (k = k0; k < k1; k++) sum += alpha[k];
      const float inv = 1.0f / sum;
      for (k = k0; k < k1; k++) alpha[k] *= inv;
      continue;
    }
    for (int64_t h = 0; h < H; h += 8) {
      /* cg_attn_softmax_rh takes fmaxf(mx, v): mx when v is NaN, as max_ps(v, mx) does
       * (it returns its second operand when either is NaN). A NaN first score differs
       * (fmaxf drops it, max_ps keeps it), but the row is NaN either way: its exp(v - mx)
       * is NaN and so is the sum that divides every entry */
      __m256 mx = _mm256_loadu_ps(s + k0 * H + h);
      for (int64_t k = k0 + 1; k < k1; k++) mx = _mm256_max_ps(_mm256_loadu_ps(s + k * H + h), mx);
      __m256 sum = _mm256_setzero_ps();
      for (int64_t k = k0; k < k1; k++) {
        const __m256 x = _ZGVdN8v_expf(_mm256_sub_ps(_mm256_loadu_ps(s + k * H + h), mx));
        _mm256_storeu_ps(alpha + k * H + h, x);
        sum = _mm256_add_ps(sum, x);
      }
      const __m256 inv = _mm256_div_ps(_mm256_set1_ps(1.0f), sum);
      for (int64_t k = k0; k < k1; k++)
        _mm256_storeu_ps(alpha + k * H + h, _mm256_mul_ps(_mm256_loadu_ps(alpha + k * H + h), inv));
    }
  }
}

static void cpu_edge_softmax_avx2(struct cg_backend *be, const struct cg_edges *e, const float *s, int64_t heads,
                                  float *alpha) {
  struct cpu_impl *im = be->impl;
  if (heads != 1 && heads % 8 != 0) { /* core/cpu_attn.c's scalar loop */
    im->edge_softmax_portable(be, e, s, heads, alpha);
    return;
  }
  const int nt = cpu_nt(be);
#pragma omp parallel num_threads(nt) if (e->nnz * heads >= CPU_PAR_MIN)
  {
    int64_t r0, r1;
    thread_block(e->nrows, 1, &r0, &r1);
    softmax_rows_avx2(e, s, heads, alpha, r0, r1);
  }
}
#endif

/* csr_dropout on AVX2 (replaces core/cpu_attn.c's scalar one when the CPU has it). */
static void cpu_csr_dropout_avx2(struct cg_backend *be, const struct cg_edges *x, const float *in, float *out,
                                 const int32_t *gid, float p, struct cg_dropout_key key) {
  const int nt = cpu_nt(be);
  const int64_t n = x->nnz;
  if (cpu_dropout_trivial(be, in, out, n, p)) return;
  const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for num_threads(nt) schedule(static) if (n >= CPU_PAR_MIN)
  for (int64_t r = 0; r < x->nrows; r++) {
    const int64_t k = x->rowptr[r];
    csr_dropout_row_avx2(x->colidx + k, in + k, out + k, x->rowptr[r + 1] - k, (uint32_t)gid[r], p, scale, key);
  }
}
#endif

/* Dropout of two rows of at most 16 columns with one 8-lane Philox call: lanes 0-3 draw
 * row a's 4 column groups, lanes 4-7 row b's (each lane its own row's global id), where
 * dropout_row_avx2 would draw 8 groups a row and use at most 4 (a hidden width of 16).
 * The same words per column, so the same mask. b may be NULL (an odd last row). */
CPU_AVX2 static void dropout_rows2_avx2(const float *ia, float *oa, const float *ib, float *ob, int64_t cols,
                                        uint32_t ga, uint32_t gb, float p, float scale, struct cg_dropout_key key) {
  const uint32_t k0 = (uint32_t)key.seed, k1 = (uint32_t)(key.seed >> 32);
  const __m256i q_lane = _mm256_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3), lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 pv = _mm256_set1_ps(p), sv = _mm256_set1_ps(scale), unit = _mm256_set1_ps(1.0f / 16777216.0f);
  __m256i c[4];
  c[0] = q_lane;
  c[1] = _mm256_setr_epi32((int)ga, (int)ga, (int)ga, (int)ga, (int)gb, (int)gb, (int)gb, (int)gb);
  c[2] = _mm256_set1_epi32((int)key.layer);
  c[3] = _mm256_set1_epi32((int)key.epoch);
  philox8(c, k0, k1);
  /* as dropout_row_avx2: u[0] columns 0-7 of lanes 0-1 (row a), u[1] 8-15 (lanes 2-3),
   * u[2] and u[3] the same of row b (lanes 4-7) */
  __m256i u[4];
  words_by_column(c, u);
  for (int j = 0; j < 4; j++) {
    const float *src = j < 2 ? ia : ib;
    float *dst = j < 2 ? oa : ob;
    const int64_t c0 = 8 * (j & 1), left = cols - c0;
    if (!src || left <= 0) continue;
    const __m256 uf = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(u[j], 8)), unit);
    const __m256 keep = _mm256_cmp_ps(uf, pv, _CMP_GE_OQ);
    if (left >= 8) {
      _mm256_storeu_ps(dst + c0, _mm256_and_ps(_mm256_mul_ps(_mm256_loadu_ps(src + c0), sv), keep));
    } else {
      const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)left), lane);
      _mm256_maskstore_ps(dst + c0, m, _mm256_and_ps(_mm256_mul_ps(_mm256_maskload_ps(src + c0, m), sv), keep));
    }
  }
}

static void cpu_dropout(struct cg_backend *be, const float *in, float *out, int64_t rows,
                        int64_t cols, const int32_t *gid, float p, struct cg_dropout_key key) {
  const int nt = cpu_nt(be);
  const int64_t n = rows * cols;
  if (cpu_dropout_trivial(be, in, out, n, p)) return;
  const float scale = 1.0f / (1.0f - p);
#if CPU_HAVE_AVX2_VARIANT
  if (((const struct cpu_impl *)be->impl)->avx2) {
    if (cols <= 16) { /* two rows a draw */
#pragma omp parallel for num_threads(nt) schedule(static) if (n >= 4096)
      for (int64_t r = 0; r < rows; r += 2) {
        const int two = r + 1 < rows;
        dropout_rows2_avx2(in + r * cols, out + r * cols, two ? in + (r + 1) * cols : NULL,
                           two ? out + (r + 1) * cols : NULL, cols, (uint32_t)gid[r], two ? (uint32_t)gid[r + 1] : 0u,
                           p, scale, key);
      }
      return;
    }
#pragma omp parallel for num_threads(nt) schedule(static) if (n >= 4096)
    for (int64_t r = 0; r < rows; r++)
      dropout_row_avx2(in + r * cols, out + r * cols, cols, (uint32_t)gid[r], p, scale, key);
    return;
  }
#endif
#pragma omp parallel for num_threads(nt) schedule(static) if (n >= 4096)
  for (int64_t r = 0; r < rows; r++)
    dropout_row_scalar(in + r * cols, out + r * cols, cols, (uint32_t)gid[r], p, scale, key);
}

static void cpu_layernorm_fwd(struct cg_backend *be, const float *x, int64_t rows, int64_t cols,
                              const float *gamma, const float *beta, float eps, float *y,
                              float *mean, float *rstd) {
  const int nt = cpu_nt(be);
#pragma omp parallel for num_threads(nt) schedule(static) if (rows * cols >= CPU_PAR_MIN)
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    double s = 0.0;
    for (int64_t c = 0; c < cols; c++) s += xr[c];
    const double mu = cols ? s / (double)cols : 0.0;
    double ss = 0.0; /* two passes: no cancellation when |mean| >> std */
    for (int64_t c = 0; c < cols; c++) {
      const double d = xr[c] - mu;
      ss += d * d;
    }
    const double var = cols ? ss / (double)cols : 0.0; /* biased, as torch.nn.LayerNorm */
    const double rs = 1.0 / sqrt(var + (double)eps);
    /* x - mean in double: with |mean| >> std, rounding the mean to float first
     * would cost several bits of y (this is the reference the CUDA backend meets) */
    for (int64_t c = 0; c < cols; c++)
      yr[c] = (float)(((double)xr[c] - mu) * rs * gamma[c] + beta[c]);
    mean[r] = (float)mu;
    rstd[r] = (float)rs;
  }
}

static void cpu_layernorm_bwd(struct cg_backend *be, const float *dy, const float *x,
                              const float *mean, const float *rstd, const float *gamma,
                              int64_t rows, int64_t cols, float *dx, float *dgamma,
                              float *dbeta) {
  const int nt = cpu_nt(be);
  /* dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma. */
#pragma omp parallel for num_threads(nt) schedule(static) if (rows * cols >= CPU_PAR_MIN)
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols, *dr = dy + r * cols;
    float *o = dx + r * cols;
    const float m = mean[r], rs = rstd[r];
    double sg = 0.0, sgx = 0.0;
    for (int64_t c = 0; c < cols; c++) {
      const float xh = (xr[c] - m) * rs, g = dr[c] * gamma[c];
      sg += g;
      sgx += (double)g * xh;
    }
    const float a = cols ? (float)(sg / (double)cols) : 0.0f;
    const float b = cols ? (float)(sgx / (double)cols) : 0.0f;
    for (int64_t c = 0; c < cols; c++) {
      const float xh = (xr[c] - m) * rs;
      o[c] = rs * (dr[c] * gamma[c] - a - xh * b);
    }
  }
  colsum_blocked(be, 1, dy, x, mean, rstd, rows, cols, dgamma, dbeta);
}

/* ------------------------------------------------------------------------ */
/* losses and metrics                                                       */
/* ------------------------------------------------------------------------ */

/* Loss sums: at most LOSS_MAX_BLOCKS blocks of idx (count from n_idx only), each
 * summed in order in double, then the partials in block order. */
#define LOSS_MAX_BLOCKS 256
#define LOSS_MIN_ROWS 64

static void cpu_xent(struct cg_backend *be, const float *logits, int64_t rows, int64_t cols,
                     const int32_t *labels, const int32_t *idx, int64_t n_idx, float scale,
                     float *dlogits, double *loss_sum) {
  const int nt = cpu_nt(be);
  cpu_fill(be, dlogits, rows * cols, 0.0f);
  const int64_t nb = red_nblocks(n_idx, LOSS_MIN_ROWS, LOSS_MAX_BLOCKS);
  double part[LOSS_MAX_BLOCKS];
  int bad = 0;
#pragma omp parallel for num_threads(nt) schedule(static) if (n_idx * cols >= 4096) \
    reduction(| : bad)
  for (int64_t b = 0; b < nb; b++) {
    double acc = 0.0;
    for (int64_t i = n_idx * b / nb; i < n_idx * (b + 1) / nb; i++) {
      const int64_t r = idx[i];
      if (r < 0 || r >= rows || labels[r] < 0 || labels[r] >= cols) {
        bad = 1;
        continue;
      }
      const int32_t y = labels[r];
      const float *xr = logits + r * cols;
      float *d = dlogits + r * cols;
      /* the max skips a NaN but in column 0 (the kernel's fmaxf skips every NaN): no
       * matter, a NaN makes the row's sum, loss and every gradient NaN either way (ops.h) */
      float mx = xr[0];
      for (int64_t c = 1; c < cols; c++) mx = xr[c] > mx ? xr[c] : mx;
      double s = 0.0; /* log-sum-exp shifted by the max: exp never overflows */
      for (int64_t c = 0; c < cols; c++) {
        d[c] = expf(xr[c] - mx);
        s += d[c];
      }
      const float inv = (float)(1.0 / s);
      for (int64_t c = 0; c < cols; c++) d[c] = scale * (d[c] * inv);
      d[y] -= scale;
      acc += log(s) - ((double)xr[y] - (double)mx);
    }
    part[b] = acc;
  }
  CPU_REQUIRE(!bad, "xent: a row index or a label is out of range (rows=%lld, classes=%lld)",
              (long long)rows, (long long)cols);
  double s = 0.0;
  for (int64_t b = 0; b < nb; b++) s += part[b];
  *loss_sum = s;
}

static void cpu_bce(struct cg_backend *be, const float *logits, int64_t rows, int64_t cols,
                    const uint8_t *labels, const int32_t *idx, int64_t n_idx, float scale,
                    float *dlogits, double *loss_sum) {
  const int nt = cpu_nt(be);
  cpu_fill(be, dlogits, rows * cols, 0.0f);
  const int64_t nb = red_nblocks(n_idx, LOSS_MIN_ROWS, LOSS_MAX_BLOCKS);
  double part[LOSS_MAX_BLOCKS];
  int bad = 0;
#pragma omp parallel for num_threads(nt) schedule(static) if (n_idx * cols >= 4096) \
    reduction(| : bad)
  for (int64_t b = 0; b < nb; b++) {
    double acc = 0.0;
    for (int64_t i = n_idx * b / nb; i < n_idx * (b + 1) / nb; i++) {
      const int64_t r = idx[i];
      if (r < 0 || r >= rows) {
        bad = 1;
        continue;
      }
      const float *xr = logits + r * cols;
      const uint8_t *yr = labels + r * cols;
      float *d = dlogits + r * cols;
      double row = 0.0;
      for (int64_t c = 0; c < cols; c++) {
        const float z = xr[c], t = yr[c] ? 1.0f : 0.0f;
        /* max(z,0) - z t + log(1 + e^-|z|): no overflow for any z */
        const float e = expf(-fabsf(z));
        row += (double)(z > 0.0f ? z : 0.0f) - (double)z * t + log1p((double)e);
        const float sig = z >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
        d[c] = scale * (sig - t);
      }
      acc += row;
    }
    part[b] = acc;
  }
  CPU_REQUIRE(!bad, "bce: a row index is out of range (rows=%lld)", (long long)rows);
  double s = 0.0;
  for (int64_t b = 0; b < nb; b++) s += part[b];
  *loss_sum = s;
}

static void cpu_eval_counts(struct cg_backend *be, const float *logits, int64_t rows, int64_t cols,
                            const int32_t *labels, const uint8_t *mlabels, const int32_t *idx,
                            int64_t n_idx, int64_t out[3]) {
  const int nt = cpu_nt(be);
  int64_t c0 = 0, c1 = 0, c2 = 0;
  if (!mlabels) {
#pragma omp parallel for num_threads(nt) schedule(static) if (n_idx * cols >= 4096) \
    reduction(+ : c0)
    for (int64_t i = 0; i < n_idx; i++) {
      const int64_t r = idx[i];
      const float *xr = logits + r * cols;
      int64_t best = 0;
      for (int64_t c = 1; c < cols; c++)
        if (xr[c] > xr[best]) best = c; /* strict: the first maximum wins */
      c0 += best == labels[r];
    }
  } else {
#pragma omp parallel for num_threads(nt) schedule(static) if (n_idx * cols >= 4096) \
    reduction(+ : c0, c1, c2)
    for (int64_t i = 0; i < n_idx; i++) {
      const int64_t r = idx[i];
      const float *xr = logits + r * cols;
      const uint8_t *yr = mlabels + r * cols;
      for (int64_t c = 0; c < cols; c++) {
        const int pred = xr[c] > 0.0f, truth = yr[c] != 0;
        c0 += pred & truth;
        c1 += pred & (truth ^ 1);
        c2 += (pred ^ 1) & truth;
      }
    }
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
}

/* ------------------------------------------------------------------------ */
/* optimizer                                                                */
/* ------------------------------------------------------------------------ */

#if CPU_HAVE_AVX2_VARIANT
/* cg_adam_update 8 elements at a time, each product, sum, square root and quotient in its
 * order there, on AVX without FMA (target "avx2" only: with FMA enabled GCC may contract a
 * product and a sum of these vector expressions into one rounding), so the bits are the
 * scalar loop's. That loop stays scalar: sqrtf may set errno, so GCC does not vectorise
 * it (cora's 23,063 parameters: ~3.4 ns each). */
__attribute__((target("avx2"))) static void adam_avx(const struct cg_adam_coefs c, float *w, const float *g,
                                                    float *m, float *v, int64_t n) {
  const __m256 b1 = _mm256_set1_ps(c.beta1), ob1 = _mm256_set1_ps(1.0f - c.beta1);
  const __m256 b2 = _mm256_set1_ps(c.beta2), ob2 = _mm256_set1_ps(1.0f - c.beta2);
  const __m256 eps = _mm256_set1_ps(c.eps), step = _mm256_set1_ps(c.step), bc2 = _mm256_set1_ps(c.bc2_sqrt);
  const __m256 shrink = _mm256_set1_ps(c.shrink), wd = _mm256_set1_ps(c.weight_decay);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 wi = _mm256_loadu_ps(w + i), gi = _mm256_loadu_ps(g + i);
    if (c.decoupled)
      wi = _mm256_mul_ps(wi, shrink);
    else
      gi = _mm256_add_ps(gi, _mm256_mul_ps(wd, wi));
    const __m256 mi = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m + i)), _mm256_mul_ps(ob1, gi));
    const __m256 vi = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(v + i)), _mm256_mul_ps(_mm256_mul_ps(ob2, gi), gi));
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), bc2), eps);
    _mm256_storeu_ps(w + i, _mm256_sub_ps(wi, _mm256_mul_ps(step, _mm256_div_ps(mi, denom))));
  }
  for (; i < n; i++) cg_adam_update(c, w + i, g[i], m + i, v + i);
}
#endif

#if CPU_HAVE_AVX2_VARIANT
/* csr_mm / csr_mm_t (core/cpu_attn.c) for widths 16, 32 and 64: a row's NV x 8 sums held
 * in registers across its stored values instead of reloaded from the output row for each
 * (the scalar loop's store-to-load chain), each sum formed in the same order (0, then
 * + v w per stored value, one rounding each: AVX without FMA), so the same bits. Row r's
 * stored values are ptr[r] .. ptr[r+1]: column idx[k] of src times vals[k], or
 * vals[eid[k]] through the transpose. */
#define CSR_ROWS_AVX(NV)                                                                              \
  __attribute__((target("avx2"))) static void csr_rows_avx_##NV(                                      \
      const int64_t *ptr, const int32_t *idx, const int64_t *eid, const float *vals, const float *src, \
      int64_t lds, float *dst, int64_t ldd, int64_t r0, int64_t r1) {                                  \
    for (int64_t r = r0; r < r1; r++) {                                                               \
      __m256 acc[NV];                                                                                 \
      for (int q = 0; q < NV; q++) acc[q] = _mm256_setzero_ps();                                      \
      for (int64_t k = ptr[r]; k < ptr[r + 1]; k++) {                                                 \
        const __m256 v = _mm256_set1_ps(vals[eid ? eid[k] : k]);                                      \
        const float *s = src + (int64_t)idx[k] * lds;                                                 \
        for (int q = 0; q < NV; q++) acc[q] = _mm256_add_ps(acc[q], _mm256_mul_ps(v, _mm256_loadu_ps(s + 8 * q))); \
      }                                                                                               \
      for (int q = 0; q < NV; q++) _mm256_storeu_ps(dst + r * ldd + 8 * q, acc[q]);                   \
    }                                                                                                 \
  }
CSR_ROWS_AVX(2)
CSR_ROWS_AVX(4)
CSR_ROWS_AVX(8)
#undef CSR_ROWS_AVX

/* Rows [0, nrows) of a csr product of width f through the kernels above, split over the
 * threads in blocks of rows; 0 when f has none (the caller runs the portable loop). */
static int csr_rows_avx(struct cg_backend *be, int64_t nrows, int64_t nnz, const int64_t *ptr, const int32_t *idx,
                        const int64_t *eid, const float *vals, const float *src, int64_t lds, float *dst,
                        int64_t ldd, int64_t f) {
  if (!((const struct cpu_impl *)be->impl)->avx2 || (f != 16 && f != 32 && f != 64)) return 0;
  const int nt = cpu_nt(be);
#pragma omp parallel num_threads(nt) if (nnz * f >= CPU_PAR_MIN)
  {
    int64_t r0, r1;
    thread_block(nrows, 1, &r0, &r1);
    if (f == 16) csr_rows_avx_2(ptr, idx, eid, vals, src, lds, dst, ldd, r0, r1);
    else if (f == 32) csr_rows_avx_4(ptr, idx, eid, vals, src, lds, dst, ldd, r0, r1);
    else csr_rows_avx_8(ptr, idx, eid, vals, src, lds, dst, ldd, r0, r1);
  }
  return 1;
}

static void cpu_csr_mm_avx(struct cg_backend *be, const struct cg_edges *x, const float *vals, int64_t f,
                           const float *w, int64_t ldw, float *y, int64_t ldy) {
  if (f >= 1 && ldw >= f && ldy >= f &&
      csr_rows_avx(be, x->nrows, x->nnz, x->rowptr, x->colidx, NULL, vals, w, ldw, y, ldy, f))
    return;
  ((const struct cpu_impl *)be->impl)->csr_mm_portable(be, x, vals, f, w, ldw, y, ldy);
}

static void cpu_csr_mm_t_avx(struct cg_backend *be, const struct cg_edges *x, const float *vals, int64_t f,
                             const float *dy, int64_t lddy, float *g, int64_t ldg) {
  if (f >= 1 && lddy >= f && ldg >= f &&
      csr_rows_avx(be, x->ncols, x->nnz, x->t_ptr, x->t_row, x->t_eid, vals, dy, lddy, g, ldg, f))
    return;
  ((const struct cpu_impl *)be->impl)->csr_mm_t_portable(be, x, vals, f, dy, lddy, g, ldg);
}
#endif

/* The update is core/adam.h's, shared with the CUDA kernel. firstprivate: each
 * thread's own copy of the coefficients stays in registers (a shared one would be
 * reloaded after every store to w, m or v). */
static void cpu_adam(struct cg_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
                     const struct cg_adam_params *p, int64_t t) {
  const int nt = cpu_nt(be);
  CPU_REQUIRE(t >= 1, "adam: step t=%lld must be >= 1", (long long)t);
  const struct cg_adam_coefs c = cg_adam_coefs_make(p, t);
#if CPU_HAVE_AVX2_VARIANT
  if (((const struct cpu_impl *)be->impl)->avx2) {
#pragma omp parallel num_threads(nt) if (n >= CPU_PAR_MIN)
    {
      int64_t b, e;
      thread_block(n, 8, &b, &e);
      adam_avx(c, w + b, g + b, m + b, v + b, e - b);
    }
    return;
  }
#endif
#pragma omp parallel for simd num_threads(nt) schedule(static) if (parallel: n >= CPU_PAR_MIN) firstprivate(c)
  for (int64_t i = 0; i < n; i++) cg_adam_update(c, w + i, g[i], m + i, v + i);
}

/* The update is core/sgd.h's, shared with the CUDA kernel. */
static void cpu_sgd(struct cg_backend *be, float *w, const float *g, float *buf, int64_t n,
                    const struct cg_sgd_params *p) {
  const int nt = cpu_nt(be);
  const struct cg_sgd_params c = *p;
#pragma omp parallel for simd num_threads(nt) schedule(static) if (parallel: n >= CPU_PAR_MIN) firstprivate(c)
  for (int64_t i = 0; i < n; i++) cg_sgd_update(c, w + i, g[i], buf + i);
}

/* ------------------------------------------------------------------------ */
/* halo rows                                                                */
/* ------------------------------------------------------------------------ */

static void cpu_gather_rows(struct cg_backend *be, const float *src, int64_t cols,
                            const int32_t *idx, int64_t n, float *dst) {
  const int nt = cpu_nt(be);
  if (cols <= 0) return;
#pragma omp parallel for num_threads(nt) schedule(static) if (n * cols >= CPU_PAR_MIN)
  for (int64_t i = 0; i < n; i++)
    memcpy(dst + i * cols, src + (int64_t)idx[i] * cols, (size_t)cols * sizeof(float));
}

/* Repeated indices make a row-parallel loop racy, so threads split the columns
 * (in 64-byte chunks, no false sharing) and each walks i in order: the sum in
 * every element is in order of i, whatever the thread count. */
#define SCATTER_CHUNK 16
static void cpu_scatter_add_rows(struct cg_backend *be, const float *src, int64_t cols,
                                 const int32_t *idx, int64_t n, float *dst) {
  const int nt = cpu_nt(be);
  if (cols <= 0) return;
  const int64_t nchunks = (cols + SCATTER_CHUNK - 1) / SCATTER_CHUNK;
#pragma omp parallel for num_threads(nt) schedule(static) if (n * cols >= CPU_PAR_MIN)
  for (int64_t q = 0; q < nchunks; q++) {
    const int64_t c0 = q * SCATTER_CHUNK, w = min64(SCATTER_CHUNK, cols - c0);
    for (int64_t i = 0; i < n; i++) {
      float *d = dst + (int64_t)idx[i] * cols + c0;
      const float *s = src + i * cols + c0;
      for (int64_t j = 0; j < w; j++) d[j] += s[j];
    }
  }
}

/* ------------------------------------------------------------------------ */
/* construction                                                             */
/* ------------------------------------------------------------------------ */

static int cpu_detect_avx2(void) {
#if CPU_HAVE_AVX2_VARIANT
  const char *force = getenv("CAPGNN_CPU_KERNELS");
  if (force && strcmp(force, "generic") == 0) return 0;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return 0;
#endif
}

struct cg_backend *cg_backend_base(struct cg_backend *be) {
  while (be && be->wraps) be = be->wraps;
  return be;
}

const struct cg_backend *cg_backend_base_const(const struct cg_backend *be) {
  while (be && be->wraps) be = be->wraps;
  return be;
}

/* The CPU backend behind be (itself, or its wrappers'), NULL for any other. */
static const struct cpu_impl *cpu_impl_of(const struct cg_backend *be) {
  const struct cg_backend *cpu = cg_backend_base_const(be);
  return cpu && cpu->destroy == cpu_destroy ? cpu->impl : NULL;
}

int cg_backend_cpu_threads(const struct cg_backend *be) {
  const struct cpu_impl *im = cpu_impl_of(be);
  return im ? im->threads : 0;
}

const char *cg_backend_cpu_gemm_name(const struct cg_backend *be) {
  const struct cpu_impl *im = cpu_impl_of(be);
  return !im ? NULL : im->gemm == CPU_GEMM_ONEDNN ? "onednn" : "openblas";
}

const char *cg_backend_cpu_blas_info(const struct cg_backend *be) {
  const struct cpu_impl *im = cpu_impl_of(be);
  return im && im->gemm == CPU_GEMM_ONEDNN ? dnnl_what : openblas_get_config();
}

int cg_backend_cpu_create(int threads, struct cg_backend **out) {
  *out = NULL;
  struct cg_backend *be = cg_calloc(1, sizeof *be, "CPU backend");
  struct cpu_impl *im = cg_calloc(1, sizeof *im, "CPU backend state");
  double *red = cg_malloc(2 * RED_MAX_BLOCKS * RED_MAX_COLS * sizeof(double),
                          "CPU backend reduction scratch");
  if (!be || !im || !red) {
    cg_free(be);
    cg_free(im);
    cg_free(red);
    return CG_ERR_NOMEM;
  }
  im->red = red;
  im->threads = threads > 0 ? threads : omp_get_max_threads();
  if (im->threads < 1) im->threads = 1;
  im->avx2 = cpu_detect_avx2();
  openblas_set_num_threads(im->threads);
  int st = cpu_kernels_env_check();
  if (st == CG_OK) st = cpu_choose_gemm(&im->gemm);
  if (st != CG_OK) {
    cg_free(be);
    cg_free(im);
    cg_free(red);
    return st;
  }

  be->name = "cpu";
  be->kind = CG_DEVICE_CPU;
  be->impl = im;
  be->destroy = cpu_destroy;
  be->alloc = cpu_alloc;
  be->free = cpu_free;
  be->upload = cpu_upload;
  be->download = cpu_download;
  be->copy = cpu_copy;
  be->sync = cpu_sync;
  be->mem_info = cpu_mem_info;
  be->gemm = cpu_gemm;
  be->fill = cpu_fill;
  be->axpy = cpu_axpy;
  be->scale = cpu_scale;
  be->spmat_create = cpu_spmat_create;
  be->spmat_destroy = cpu_spmat_destroy;
  be->spmm = cpu_spmm;
  be->bias_add = cpu_bias_add;
  be->bias_grad = cpu_bias_grad;
  be->relu_fwd = cpu_relu_fwd;
  be->relu_bwd = cpu_relu_bwd;
  be->dropout = cpu_dropout;
  be->dropout_relu_bwd = cpu_dropout_relu_bwd;
  be->layernorm_fwd = cpu_layernorm_fwd;
  be->layernorm_bwd = cpu_layernorm_bwd;
  be->xent = cpu_xent;
  be->bce = cpu_bce;
  be->eval_counts = cpu_eval_counts;
  be->adam = cpu_adam;
  be->sgd = cpu_sgd;
  be->gather_rows = cpu_gather_rows;
  be->scatter_add_rows = cpu_scatter_add_rows;
  cpu_attn_install(be);
#if CPU_HAVE_AVX2_VARIANT
  if (im->avx2) {
    be->csr_dropout = cpu_csr_dropout_avx2;
    be->edge_dropout = cpu_edge_dropout_avx2;
    be->elu_bwd = cpu_elu_bwd_avx2;
    im->csr_mm_portable = be->csr_mm;
    im->csr_mm_t_portable = be->csr_mm_t;
    be->csr_mm = cpu_csr_mm_avx;
    be->csr_mm_t = cpu_csr_mm_t_avx;
#if CPU_HAVE_LIBMVEC
    be->elu_fwd = cpu_elu_fwd_avx2;
    im->edge_softmax_portable = be->edge_softmax;
    be->edge_softmax = cpu_edge_softmax_avx2;
#endif
  }
#endif
  LOG_DEBUG("core", "CPU backend: %d threads, %s SpMM kernel, GEMM %s", im->threads,
            im->avx2 ? "AVX2+FMA" : "generic", im->gemm == CPU_GEMM_ONEDNN ? dnnl_what : "OpenBLAS");
  *out = be;
  return CG_OK;
}

void cg_backend_destroy(struct cg_backend **be) {
  if (!be || !*be) return;
  (*be)->destroy(*be);
  *be = NULL;
}
