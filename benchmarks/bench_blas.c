/* benchmarks/bench_blas.c — the GEMMs of a training epoch, timed on several BLAS libraries.
 *
 * Issue #14 item 4: choose the CPU GEMM library by measurement. One binary measures every
 * library: each is dlopen()ed by the path given on the command line, in a child process of
 * its own (fork per library and thread count), so two libraries never share a process, a
 * symbol or a thread pool, and each sees its thread count in the environment before it
 * loads (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, BLIS_NUM_THREADS, MKL_NUM_THREADS) as well
 * as through its own setter. What it recognises, by the symbols the library exports:
 *   OpenBLAS  cblas_sgemm + openblas_set_num_threads  (pthread or OpenMP build)
 *   BLIS      cblas_sgemm + bli_thread_set_num_threads (pthread or OpenMP build)
 *   MKL       cblas_sgemm + MKL_Set_Num_Threads         (libmkl_rt: LP64, its default threading layer
 *                                                        unless MKL_THREADING_LAYER says otherwise)
 *   oneDNN    dnnl_sgemm (row-major, 64-bit sizes; OpenMP threads)
 *   any other cblas_sgemm (threads from the environment only)
 *
 * The shapes are those runtime/model.c runs for GCN and GraphSAGE 3 x 256 with dropout on
 * every layer's input (the default) on one process over all `rows` vertices
 * (synth:reddit: 232,965 rows, 602 features, 41 classes): layer 0 and 2 transform first
 * (fout < fin), layer 1 aggregates first. Row-major, as core/cpu_backend.c calls
 * cblas_sgemm; the transposes are model.c's: forward X·W (NN), weight gradients Hᵀ·G (TN),
 * input gradients G·Wᵀ (NT); GraphSAGE's self terms accumulate (beta = 1).
 *
 * Check before timing: the first call of every shape (also its warm-up) runs on an output
 * filled with NaN when beta = 0 (BLAS must not read C then; core/cpu_backend.c relies on
 * it) and with known values when beta = 1; 128 sampled entries are compared with a
 * double-precision reference, the error scaled by sum_k |a_ik b_kj| + |beta c_ij| (the
 * bound a dot product's rounding obeys). An error above 1e-4 or a non-finite entry fails
 * the library: the child exits 2, the run exits non-zero.
 *
 *   bench_blas --lib NAME=PATH [--lib NAME=PATH ...] [--threads 2,1] [--runs R] [--rounds K]
 *              [--rows N] [--json FILE]
 * Rounds alternate the libraries: round 1 runs every library, then round 2 runs them again.
 * Per shape: median [min, max] of R timed calls (after the checked one) and GFLOP/s
 * (2mnk / median); per model: the sum over its GEMMs of count x median, the GEMM time of
 * one epoch. JSON Lines (one object per library, thread count and round) go to --json.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIBS 16
#define MAX_THREADS_LIST 8
#define N_SAMPLES 128
#define TOL 1e-4

/* CBLAS enum values (cblas.h); LP64 ints. */
enum { CB_ROW_MAJOR = 101, CB_NO_TRANS = 111, CB_TRANS = 112 };
typedef void (*cblas_sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                               int, float, float *, int);
typedef int (*dnnl_sgemm_fn)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t,
                             const float *, int64_t, float, float *, int64_t);

enum lib_kind { LIB_OPENBLAS, LIB_BLIS, LIB_MKL, LIB_DNNL, LIB_CBLAS };
static const char *kind_name[] = {"OpenBLAS", "BLIS", "MKL", "oneDNN", "CBLAS"};

struct lib {
  enum lib_kind kind;
  cblas_sgemm_fn cblas;
  dnnl_sgemm_fn dnnl;
  char version[256];
};

/* One GEMM of the epoch: C = alpha op(A) op(B) + beta C, row-major. The operands are
 * named by buffer; `gcn`, `sage` count how often an epoch of each model runs it. */
enum buf { BUF_X, BUF_H, BUF_G, BUF_G41, BUF_W, BUF_C, NBUF };
struct shape {
  const char *what;
  int ta, tb;
  char m, n, k; /* 'N' = rows; else the value in dims[] below */
  int64_t dm, dn, dk;
  float beta;
  enum buf a, b;
  int gcn, sage;
};
#define F_IN 602
#define HID 256
#define CLS 41
static const struct shape shapes[] = {
    {"fwd  l0 X W0", 0, 0, 'N', 0, 0, 0, HID, F_IN, 0.0f, BUF_X, BUF_W, 1, 1},
    {"fwd  l0 X Ws0 (+=)", 0, 0, 'N', 0, 0, 0, HID, F_IN, 1.0f, BUF_X, BUF_W, 0, 1},
    {"fwd  l1 A W1", 0, 0, 'N', 0, 0, 0, HID, HID, 0.0f, BUF_H, BUF_W, 1, 1},
    {"fwd  l1 H Ws1 (+=)", 0, 0, 'N', 0, 0, 0, HID, HID, 1.0f, BUF_H, BUF_W, 0, 1},
    {"fwd  l2 H W2", 0, 0, 'N', 0, 0, 0, CLS, HID, 0.0f, BUF_H, BUF_W, 1, 1},
    {"fwd  l2 H Ws2 (+=)", 0, 0, 'N', 0, 0, 0, CLS, HID, 1.0f, BUF_H, BUF_W, 0, 1},
    {"dW   l0 Xt dT", 1, 0, 0, 0, 'N', F_IN, HID, 0, 0.0f, BUF_X, BUF_G, 1, 2},
    {"dW   l1 At dZ", 1, 0, 0, 0, 'N', HID, HID, 0, 0.0f, BUF_H, BUF_G, 1, 2},
    {"dW   l2 Ht dT", 1, 0, 0, 0, 'N', HID, CLS, 0, 0.0f, BUF_H, BUF_G41, 1, 2},
    {"dH   l2 dT W2t", 0, 1, 'N', 0, 0, 0, HID, CLS, 0.0f, BUF_G41, BUF_W, 1, 1},
    {"dH   l2 dZ Ws2t (+=)", 0, 1, 'N', 0, 0, 0, HID, CLS, 1.0f, BUF_G41, BUF_W, 0, 1},
    {"dA   l1 dZ W1t", 0, 1, 'N', 0, 0, 0, HID, HID, 0.0f, BUF_G, BUF_W, 1, 1},
    {"dH   l1 dZ Ws1t (+=)", 0, 1, 'N', 0, 0, 0, HID, HID, 1.0f, BUF_G, BUF_W, 0, 1},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static int64_t dim_of(char c, int64_t v, int64_t rows) { return c == 'N' ? rows : v; }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* splitmix64: deterministic operands and sample positions */
static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static void fill_uniform(float *x, int64_t n, uint64_t seed) {
  uint64_t s = seed;
  for (int64_t i = 0; i < n; i++) x[i] = (float)((double)(mix(&s) >> 40) / (double)(1ull << 24) - 0.5);
}

static void cpu_info(char *model, size_t len, char *flags, size_t flen) {
  snprintf(model, len, "unknown CPU");
  flags[0] = '\0';
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char *line = NULL;
  size_t cap = 0;
  int have_model = 0, have_flags = 0;
  while (getline(&line, &cap, f) > 0 && !(have_model && have_flags)) {
    char *c = strchr(line, ':');
    if (!c) continue;
    c += 2;
    c[strcspn(c, "\n")] = '\0';
    if (!have_model && strncmp(line, "model name", 10) == 0) {
      snprintf(model, len, "%s", c);
      have_model = 1;
    } else if (!have_flags && strncmp(line, "flags", 5) == 0) {
      static const char *want[] = {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "amx_tile"};
      char padded[8192];
      snprintf(padded, sizeof padded, " %s ", c);
      for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char key[32];
        snprintf(key, sizeof key, " %s ", want[i]);
        if (strstr(padded, key)) {
          strncat(flags, want[i], flen - strlen(flags) - 2);
          strncat(flags, " ", flen - strlen(flags) - 1);
        }
      }
      if (!flags[0]) snprintf(flags, flen, "(no avx2/avx512)");
      have_flags = 1;
    }
  }
  free(line);
  fclose(f);
}

static void loadavg(char *out, size_t len) {
  snprintf(out, len, "?");
  FILE *f = fopen("/proc/loadavg", "r");
  if (!f) return;
  if (fgets(out, (int)len, f)) out[strcspn(out, "\n")] = '\0';
  fclose(f);
}

/* ---- one library, one thread count (runs in a child process) ------------------ */

static int lib_open(const char *path, int threads, struct lib *L) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "bench_blas: error: cannot load %s: %s\n", path, dlerror());
    return -1;
  }
  memset(L, 0, sizeof *L);
  L->cblas = (cblas_sgemm_fn)dlsym(h, "cblas_sgemm");
  L->dnnl = (dnnl_sgemm_fn)dlsym(h, "dnnl_sgemm");
  void *ob = dlsym(h, "openblas_set_num_threads"), *bl = dlsym(h, "bli_thread_set_num_threads");
  void *mk = dlsym(h, "MKL_Set_Num_Threads"), *omp = dlsym(h, "omp_set_num_threads");
  if (omp) ((void (*)(int))omp)(threads);
  if (L->cblas && ob) {
    L->kind = LIB_OPENBLAS;
    ((void (*)(int))ob)(threads);
    const char *(*cfg)(void) = (const char *(*)(void))dlsym(h, "openblas_get_config");
    const char *(*core)(void) = (const char *(*)(void))dlsym(h, "openblas_get_corename");
    snprintf(L->version, sizeof L->version, "%s; core %s", cfg ? cfg() : "?", core ? core() : "?");
  } else if (L->cblas && bl) {
    L->kind = LIB_BLIS;
    ((void (*)(int64_t))bl)(threads); /* dim_t: 64-bit in Debian's BLIS */
    const char *(*ver)(void) = (const char *(*)(void))dlsym(h, "bli_info_get_version_str");
    int (*arch)(void) = (int (*)(void))dlsym(h, "bli_arch_query_id");
    const char *(*arch_s)(int) = (const char *(*)(int))dlsym(h, "bli_arch_string");
    snprintf(L->version, sizeof L->version, "BLIS %s; arch %s", ver ? ver() : "?",
             arch && arch_s ? arch_s(arch()) : "?");
  } else if (L->cblas && mk) {
    L->kind = LIB_MKL;
    ((void (*)(int))mk)(threads);
    void (*ver)(char *, int) = (void (*)(char *, int))dlsym(h, "MKL_Get_Version_String");
    if (ver) ver(L->version, (int)sizeof L->version);
    const char *layer = getenv("MKL_THREADING_LAYER");
    size_t l = strlen(L->version);
    snprintf(L->version + l, sizeof L->version - l, "; threading layer %s", layer ? layer : "default");
  } else if (L->dnnl) {
    L->kind = LIB_DNNL;
    struct dv {
      int major, minor, patch;
      const char *hash;
      unsigned cpu_runtime, gpu_runtime;
    };
    const struct dv *(*ver)(void) = (const struct dv *(*)(void))dlsym(h, "dnnl_version");
    const struct dv *v = ver ? ver() : NULL;
    if (v) snprintf(L->version, sizeof L->version, "oneDNN %d.%d.%d (%s)", v->major, v->minor, v->patch,
                    v->hash ? v->hash : "");
  } else if (L->cblas) {
    L->kind = LIB_CBLAS;
    snprintf(L->version, sizeof L->version, "unknown CBLAS (threads from the environment)");
  } else {
    fprintf(stderr, "bench_blas: error: %s has neither cblas_sgemm nor dnnl_sgemm\n", path);
    return -1;
  }
  /* the handle stays open for the life of the child */
  return 0;
}

static int lib_sgemm(const struct lib *L, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a,
                     int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  if (L->kind == LIB_DNNL)
    return L->dnnl(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  L->cblas(CB_ROW_MAJOR, ta ? CB_TRANS : CB_NO_TRANS, tb ? CB_TRANS : CB_NO_TRANS, (int)m, (int)n, (int)k,
           1.0f, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
  return 0;
}

struct result {
  double med, min, max, gflops, err;
};

/* Max scaled error over sampled entries; c0 holds what C held before the call (beta = 1). */
static double check_sample(const struct shape *s, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                           const float *b, int64_t ldb, const float *c, int64_t ldc, uint64_t seed) {
  double worst = 0.0;
  uint64_t st = seed;
  for (int t = 0; t < N_SAMPLES; t++) {
    int64_t i = (int64_t)(mix(&st) % (uint64_t)m), j = (int64_t)(mix(&st) % (uint64_t)n);
    if (t == 0) i = 0, j = 0;
    if (t == 1) i = m - 1, j = n - 1; /* the corners catch an offset or a short edge block */
    double ref = 0.0, mag = 0.0;
    for (int64_t p = 0; p < k; p++) {
      double x = s->ta ? a[p * lda + i] : a[i * lda + p];
      double y = s->tb ? b[j * ldb + p] : b[p * ldb + j];
      ref += x * y;
      mag += fabs(x * y);
    }
    if (s->beta != 0.0f) { /* C was filled with fill_c_value(i, j) */
      double c0 = (double)(((i * 7 + j * 3) % 17) - 8) / 8.0;
      ref += c0;
      mag += fabs(c0);
    }
    double got = c[i * ldc + j];
    if (!isfinite(got)) return INFINITY;
    double e = fabs(got - ref) / (mag > 0 ? mag : 1.0);
    if (e > worst) worst = e;
  }
  return worst;
}

static int run_child(const char *name, const char *path, int threads, int runs, int64_t rows, int round,
                     const char *json_path) {
  char buf[16];
  snprintf(buf, sizeof buf, "%d", threads);
  setenv("OMP_NUM_THREADS", buf, 1);
  setenv("OPENBLAS_NUM_THREADS", buf, 1);
  setenv("BLIS_NUM_THREADS", buf, 1);
  setenv("MKL_NUM_THREADS", buf, 1);
  struct lib L;
  if (lib_open(path, threads, &L) < 0) return 1;

  int64_t len[NBUF] = {rows * F_IN, rows * HID, rows * HID, rows * CLS, (int64_t)F_IN * HID, 0};
  for (int si = 0; si < NSHAPES; si++) { /* C holds every shape's m x n (a weight gradient,
                                          * F_IN x HID, outgrows rows x HID when rows < F_IN) */
    const struct shape *s = &shapes[si];
    const int64_t mn = dim_of(s->m, s->dm, rows) * dim_of(s->n, s->dn, rows);
    if (mn > len[BUF_C]) len[BUF_C] = mn;
  }
  float *bufs[NBUF];
  for (int i = 0; i < NBUF; i++) {
    bufs[i] = malloc((size_t)len[i] * sizeof(float));
    if (!bufs[i]) {
      fprintf(stderr, "bench_blas: error: out of memory allocating %lld floats\n", (long long)len[i]);
      return 1;
    }
    if (i != BUF_C) fill_uniform(bufs[i], len[i], 1000 + (uint64_t)i);
  }

  struct result res[NSHAPES];
  double *t = malloc((size_t)runs * sizeof *t);
  int bad = 0;
  for (int si = 0; si < NSHAPES; si++) {
    const struct shape *s = &shapes[si];
    const int64_t m = dim_of(s->m, s->dm, rows), n = dim_of(s->n, s->dn, rows), k = dim_of(s->k, s->dk, rows);
    const float *a = bufs[s->a], *b = bufs[s->b];
    float *c = bufs[BUF_C];
    /* leading dimensions: the stored row width of each operand */
    const int64_t lda = s->ta ? m : k, ldb = s->tb ? k : n, ldc = n;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++)
        c[i * ldc + j] = s->beta != 0.0f ? (float)(((i * 7 + j * 3) % 17) - 8) / 8.0f : NAN;
    if (lib_sgemm(&L, s->ta, s->tb, m, n, k, a, lda, b, ldb, s->beta, c, ldc) != 0) {
      fprintf(stderr, "bench_blas: error: %s: sgemm returned an error on %s\n", name, s->what);
      return 1;
    }
    res[si].err = check_sample(s, m, n, k, a, lda, b, ldb, c, ldc, 77 + (uint64_t)si);
    if (!(res[si].err <= TOL)) bad = 1;
    for (int r = 0; r < runs; r++) {
      double t0 = now_s();
      lib_sgemm(&L, s->ta, s->tb, m, n, k, a, lda, b, ldb, s->beta, c, ldc);
      t[r] = now_s() - t0;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    res[si].med = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
    res[si].min = t[0];
    res[si].max = t[runs - 1];
    res[si].gflops = 2.0 * (double)m * (double)n * (double)k / res[si].med / 1e9;
  }

  char la[128];
  loadavg(la, sizeof la);
  double ep_gcn = 0, ep_sage = 0, fl_gcn = 0, fl_sage = 0;
  printf("\n[round %d] %s (%s) — %s, %d thread%s, loadavg after: %s\n", round, name, kind_name[L.kind],
         L.version, threads, threads == 1 ? "" : "s", la);
  printf("  %-22s %4s %8s %5s %5s %4s %10s %22s %8s %10s\n", "shape", "op", "m", "n", "k", "beta",
         "median s", "[min, max] s", "GFLOP/s", "max err");
  for (int si = 0; si < NSHAPES; si++) {
    const struct shape *s = &shapes[si];
    const int64_t m = dim_of(s->m, s->dm, rows), n = dim_of(s->n, s->dn, rows), k = dim_of(s->k, s->dk, rows);
    const double fl = 2.0 * (double)m * (double)n * (double)k;
    ep_gcn += s->gcn * res[si].med;
    ep_sage += s->sage * res[si].med;
    fl_gcn += s->gcn * fl;
    fl_sage += s->sage * fl;
    printf("  %-22s %c%c   %8lld %5lld %5lld %4.0f %10.4f   [%8.4f, %8.4f] %8.1f %10.2e%s\n", s->what,
           s->ta ? 'T' : 'N', s->tb ? 'T' : 'N', (long long)m, (long long)n, (long long)k, s->beta,
           res[si].med, res[si].min, res[si].max, res[si].gflops, res[si].err,
           res[si].err <= TOL ? "" : "  <-- WRONG");
  }
  printf("  epoch GEMMs (sum of count x median): GCN %.3f s (%.1f GFLOP/s), GraphSAGE %.3f s (%.1f GFLOP/s)\n",
         ep_gcn, fl_gcn / ep_gcn / 1e9, ep_sage, fl_sage / ep_sage / 1e9);
  printf("  check: %s (max scaled error of %d sampled entries per shape, tolerance %.0e)\n",
         bad ? "FAILED" : "ok", N_SAMPLES, TOL);

  if (json_path) {
    FILE *f = fopen(json_path, "a");
    if (!f) {
      fprintf(stderr, "bench_blas: error: cannot append to %s: %s\n", json_path, strerror(errno));
      return 1;
    }
    fprintf(f, "{\"benchmark\":\"bench_blas\",\"round\":%d,\"library\":\"%s\",\"path\":\"%s\",\"kind\":\"%s\","
               "\"version\":\"%s\",\"threads\":%d,\"rows\":%lld,\"runs\":%d,\"loadavg\":\"%s\",\"check_ok\":%s,"
               "\"gcn_gemm_s\":%.6f,\"sage_gemm_s\":%.6f,\"shapes\":[",
            round, name, path, kind_name[L.kind], L.version, threads, (long long)rows, runs, la,
            bad ? "false" : "true", ep_gcn, ep_sage);
    for (int si = 0; si < NSHAPES; si++) {
      const struct shape *s = &shapes[si];
      fprintf(f, "%s{\"what\":\"%s\",\"op\":\"%c%c\",\"m\":%lld,\"n\":%lld,\"k\":%lld,\"beta\":%g,"
                 "\"median_s\":%.6f,\"min_s\":%.6f,\"max_s\":%.6f,\"gflops\":%.2f,\"max_err\":%.3e,"
                 "\"gcn_count\":%d,\"sage_count\":%d}",
              si ? "," : "", s->what, s->ta ? 'T' : 'N', s->tb ? 'T' : 'N',
              (long long)dim_of(s->m, s->dm, rows), (long long)dim_of(s->n, s->dn, rows),
              (long long)dim_of(s->k, s->dk, rows), s->beta, res[si].med, res[si].min, res[si].max,
              res[si].gflops, res[si].err, s->gcn, s->sage);
    }
    fprintf(f, "]}\n");
    fclose(f);
  }
  fflush(stdout);
  free(t);
  for (int i = 0; i < NBUF; i++) free(bufs[i]);
  return bad ? 2 : 0;
}

static void usage(FILE *f) {
  fprintf(f, "usage: bench_blas --lib NAME=PATH [--lib NAME=PATH ...] [--threads 2,1] [--runs R]\n"
             "                  [--rounds K] [--rows N] [--json FILE]\n"
             "  e.g. --lib openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0\n"
             "       --lib blis=/usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4\n"
             "       --lib mkl=/usr/lib/x86_64-linux-gnu/libmkl_rt.so --lib onednn=libdnnl.so.2\n");
}

int main(int argc, char **argv) {
  const char *names[MAX_LIBS], *paths[MAX_LIBS];
  int nlib = 0, threads[MAX_THREADS_LIST] = {2, 1}, nthreads = 2, runs = 5, rounds = 1;
  int64_t rows = 232965;
  const char *json_path = NULL;
  static char libspec[MAX_LIBS][1024];
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
      usage(stdout);
      return 0;
    }
    if (!val) {
      usage(stderr);
      return 1;
    }
    i++;
    char *end = NULL;
    if (!strcmp(arg, "--lib")) {
      if (nlib == MAX_LIBS) {
        fprintf(stderr, "bench_blas: error: at most %d --lib\n", MAX_LIBS);
        return 1;
      }
      snprintf(libspec[nlib], sizeof libspec[nlib], "%s", val);
      char *eq = strchr(libspec[nlib], '=');
      if (!eq || eq == libspec[nlib] || !eq[1]) {
        fprintf(stderr, "bench_blas: error: --lib wants NAME=PATH, got '%s'\n", val);
        return 1;
      }
      *eq = '\0';
      names[nlib] = libspec[nlib];
      paths[nlib] = eq + 1;
      nlib++;
    } else if (!strcmp(arg, "--threads")) {
      nthreads = 0;
      for (const char *p = val; *p && nthreads < MAX_THREADS_LIST;) {
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 1024) {
          fprintf(stderr, "bench_blas: error: --threads wants a list like 2,1, got '%s'\n", val);
          return 1;
        }
        threads[nthreads++] = (int)v;
        if (*end && *end != ',') {
          fprintf(stderr, "bench_blas: error: --threads wants a list like 2,1, got '%s'\n", val);
          return 1;
        }
        p = *end ? end + 1 : end;
      }
    } else if (!strcmp(arg, "--runs")) {
      runs = (int)strtol(val, &end, 10);
      if (*end || runs < 1) return fprintf(stderr, "bench_blas: error: --runs wants a positive count\n"), 1;
    } else if (!strcmp(arg, "--rounds")) {
      rounds = (int)strtol(val, &end, 10);
      if (*end || rounds < 1) return fprintf(stderr, "bench_blas: error: --rounds wants a positive count\n"), 1;
    } else if (!strcmp(arg, "--rows")) {
      rows = strtoll(val, &end, 10);
      if (*end || rows < 1 || rows * F_IN > INT32_MAX)
        return fprintf(stderr, "bench_blas: error: --rows wants 1..%d\n", INT32_MAX / F_IN), 1;
    } else if (!strcmp(arg, "--json")) {
      json_path = val;
    } else {
      usage(stderr);
      return 1;
    }
  }
  if (nlib == 0) {
    usage(stderr);
    return 1;
  }

  char cpu[256], flags[256], la[128], cmd[4096] = "", date[64];
  cpu_info(cpu, sizeof cpu, flags, sizeof flags);
  loadavg(la, sizeof la);
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
  for (int i = 0; i < argc; i++) {
    strncat(cmd, argv[i], sizeof cmd - strlen(cmd) - 2);
    if (i + 1 < argc) strncat(cmd, " ", sizeof cmd - strlen(cmd) - 1);
  }
  struct utsname u;
  uname(&u);
  printf("bench_blas: the GEMMs of a GCN / GraphSAGE 3 x 256 epoch over %lld rows (%d features, %d classes)\n",
         (long long)rows, F_IN, CLS);
  printf("  machine    %s, %ld CPUs online, flags: %s; %s %s\n", cpu, sysconf(_SC_NPROCESSORS_ONLN), flags,
         u.sysname, u.release);
  printf("  date       %s, loadavg at start: %s\n", date, la);
  printf("  runs       median of %d timed calls per shape after one checked call; %d round%s\n", runs, rounds,
         rounds == 1 ? "" : "s");
  printf("  reproduce  %s\n", cmd);
  fflush(stdout);

  int failed = 0;
  for (int r = 1; r <= rounds; r++)
    for (int li = 0; li < nlib; li++)
      for (int ti = 0; ti < nthreads; ti++) {
        pid_t pid = fork();
        if (pid < 0) {
          perror("bench_blas: fork");
          return 1;
        }
        if (pid == 0) _exit(run_child(names[li], paths[li], threads[ti], runs, rows, r, json_path));
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
          fprintf(stderr, "bench_blas: %s (%s) at %d threads, round %d: %s\n", names[li], paths[li], threads[ti],
                  r,
                  WIFEXITED(status) && WEXITSTATUS(status) == 2 ? "WRONG RESULTS"
                  : WIFSIGNALED(status)                         ? strsignal(WTERMSIG(status))
                                                                : "failed");
          failed = 1;
        }
      }
  if (failed) fprintf(stderr, "bench_blas: at least one library failed (see above)\n");
  return failed;
}
