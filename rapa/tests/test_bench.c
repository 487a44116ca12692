/* rapa/tests/test_bench.c — every microbenchmark at a tiny size, on the CPU backend
 * (its check passes, the timing is sane) and on a faulty backend or transport that
 * returns a wrong result (its check must fail, with a message naming the benchmark):
 * GEMM, SpMM, H2D / D2H / D2D copies, a link ping-pong, the all-reduce. Also the MPS
 * share's refusal when no MPS daemon runs, which needs no GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/csr.h"
#include "core/ops.h"
#include "core/ops_emulate.h"
#include "core/ops_profile.h"
#include "core/status.h"
#include "rapa/rapa.h"
#include "rapa/rapa_internal.h"

/* ---- a backend that forwards to the CPU backend and spoils one op's result ---- */

enum fault { F_NONE, F_GEMM, F_SPMM, F_UPLOAD, F_DOWNLOAD, F_COPY };
static enum fault fault;
static struct cg_backend *cpu;

static void bad_gemm(struct cg_backend *be, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  cpu->gemm(cpu, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (fault == F_GEMM) c[(m - 1) * ldc + (n - 1)] += 0.01f; /* one entry off, a corner */
}
static void bad_spmm(struct cg_backend *be, const struct cg_spmat *a, const float *x, int64_t ldx, float *y,
                     int64_t ldy, int64_t f) {
  cpu->spmm(cpu, a, x, ldx, y, ldy, f);
  if (fault == F_SPMM) y[0] += 0.5f;
}
static int bad_upload(struct cg_backend *be, void *dst, const void *src, size_t bytes) {
  int st = cpu->upload(cpu, dst, src, bytes);
  if (fault == F_UPLOAD) ((unsigned char *)dst)[bytes - 1] ^= 1;
  return st;
}
static int bad_download(struct cg_backend *be, void *dst, const void *src, size_t bytes) {
  int st = cpu->download(cpu, dst, src, bytes);
  if (fault == F_DOWNLOAD) ((unsigned char *)dst)[bytes / 2] ^= 0x80;
  return st;
}
static void bad_copy(struct cg_backend *be, void *dst, const void *src, size_t bytes) {
  cpu->copy(cpu, dst, src, bytes);
  if (fault == F_COPY) ((unsigned char *)dst)[0] ^= 0x10;
}

static struct cg_backend faulty;

static int setup(void **state) {
  if (cg_backend_cpu_create(1, &cpu) != CG_OK) return -1;
  faulty = *cpu; /* same impl, same ops, but these five */
  faulty.name = "faulty";
  faulty.destroy = NULL;
  faulty.gemm = bad_gemm;
  faulty.spmm = bad_spmm;
  faulty.upload = bad_upload;
  faulty.download = bad_download;
  faulty.copy = bad_copy;
  return 0;
}
static int teardown(void **state) {
  cg_backend_destroy(&cpu);
  return 0;
}

static struct rapa_bench_opts tiny_opts(void) {
  struct rapa_bench_opts o;
  rapa_bench_opts_default(&o, 1);
  o.budget_s = 0.001;
  return o;
}

static void check_timing(const struct rapa_timing *t, const struct rapa_bench_opts *o) {
  assert_true(t->reps >= o->min_reps && t->reps <= o->max_reps);
  assert_true(t->median_s > 0.0 && t->min_s > 0.0 && t->min_s <= t->median_s);
}

static void test_gemm(void **state) {
  struct rapa_bench_opts o = tiny_opts();
  struct rapa_timing t;
  fault = F_NONE;
  assert_int_equal(rapa_bench_gemm(cpu, 7, 5, 3, 2e-4, &o, &t), CG_OK);
  check_timing(&t, &o);
  assert_int_equal(rapa_bench_gemm(&faulty, 7, 5, 3, 2e-4, &o, &t), CG_OK); /* no fault armed */
  fault = F_GEMM;
  assert_int_equal(rapa_bench_gemm(&faulty, 7, 5, 3, 2e-4, &o, &t), CG_ERR_INTERNAL);
  assert_non_null(strstr(cg_err_msg(), "GEMM check failed"));
  assert_non_null(strstr(cg_err_msg(), "C[6][4]"));
  cg_err_clear();
  assert_int_equal(rapa_bench_gemm(cpu, 0, 5, 3, 2e-4, &o, &t), CG_ERR_ARG);
  cg_err_clear();
}

/* 6 x 6, a ring plus self-loops, values 1 / (row + 2) */
static void tiny_csr(struct cg_csr *a) {
  assert_int_equal(cg_csr_alloc(a, 6, 6, 18, 1), CG_OK);
  int64_t e = 0;
  for (int r = 0; r < 6; r++) {
    a->rowptr[r] = e;
    int cols[3] = {(r + 5) % 6, r, (r + 1) % 6};
    for (int i = 0; i < 3; i++)
      for (int j = i + 1; j < 3; j++)
        if (cols[j] < cols[i]) {
          int x = cols[i];
          cols[i] = cols[j];
          cols[j] = x;
        }
    for (int i = 0; i < 3; i++) {
      a->colidx[e] = cols[i];
      a->vals[e++] = 1.0f / (float)(r + 2);
    }
  }
  a->rowptr[6] = e;
}

static void test_spmm(void **state) {
  struct rapa_bench_opts o = tiny_opts();
  struct rapa_timing t;
  struct cg_csr a;
  memset(&a, 0, sizeof a);
  tiny_csr(&a);
  fault = F_NONE;
  assert_int_equal(rapa_bench_spmm(cpu, &a, 5, &o, &t), CG_OK);
  check_timing(&t, &o);
  fault = F_SPMM;
  assert_int_equal(rapa_bench_spmm(&faulty, &a, 5, &o, &t), CG_ERR_INTERNAL);
  assert_non_null(strstr(cg_err_msg(), "SpMM check failed"));
  assert_non_null(strstr(cg_err_msg(), "Y[0][0]"));
  cg_err_clear();
  cg_csr_free(&a);
}

static void test_copies(void **state) {
  struct rapa_bench_opts o = tiny_opts();
  struct rapa_timing t;
  const size_t sizes[] = {1, 4096};
  for (size_t s = 0; s < 2; s++) {
    fault = F_NONE;
    for (int k = 0; k < 3; k++) {
      assert_int_equal(rapa_bench_copy(cpu, (enum rapa_copy_kind)k, 0, sizes[s], &o, &t), CG_OK);
      check_timing(&t, &o);
    }
    /* each direction's copy spoiled: its own check fails */
    const enum fault f[3] = {F_UPLOAD, F_DOWNLOAD, F_COPY};
    for (int k = 0; k < 3; k++) {
      fault = f[k];
      assert_int_equal(rapa_bench_copy(&faulty, (enum rapa_copy_kind)k, 0, sizes[s], &o, &t), CG_ERR_INTERNAL);
      char want[32];
      snprintf(want, sizeof want, "%s copy check failed", rapa_copy_kind_name((enum rapa_copy_kind)k));
      assert_non_null(strstr(cg_err_msg(), want));
      cg_err_clear();
    }
  }
  fault = F_NONE;
  /* pinned memory needs CUDA */
  assert_int_equal(rapa_bench_copy(cpu, RAPA_COPY_H2D, 1, 64, &o, &t), CG_ERR_UNSUPPORTED);
  cg_err_clear();
}

/* ---- a transport for the link checks: the initiator's echo is its own payload ---- */

static int corrupt_link;
static int fake_pingpong(void *ctx, int peer, const void *sbuf, void *rbuf, size_t bytes, int reps,
                         double *seconds) {
  memcpy(rbuf, sbuf, bytes);
  if (corrupt_link) ((unsigned char *)rbuf)[bytes - 1] ^= 0xff;
  for (int r = 0; r < reps; r++) seconds[r] = 1e-6 * (r + 1);
  return CG_OK;
}
/* as if 2 ranks took part and this is rank 0: the sum is 3 / 1 times its values */
static int fake_allreduce(void *ctx, float *buf, int64_t n, double *seconds) {
  cpu->scale(cpu, n, corrupt_link ? 2.0f : 3.0f, buf);
  *seconds = 2e-6;
  return CG_OK;
}

static void test_links(void **state) {
  struct rapa_link_ops ops = {NULL, fake_pingpong, fake_allreduce};
  struct rapa_bench_opts o = tiny_opts();
  struct rapa_timing t;
  fault = F_NONE;
  corrupt_link = 0;
  assert_int_equal(rapa_link_pair(&ops, NULL, 0, 1, 4096, &o, &t), CG_OK);
  assert_true(t.reps > 0 && t.median_s > 0);
  assert_int_equal(rapa_link_pair(&ops, cpu, 0, 1, 8, &o, &t), CG_OK); /* backend buffers */
  assert_int_equal(rapa_link_allreduce(&ops, cpu, 0, 2, 1000, &o, &t), CG_OK);
  assert_true(t.median_s == 2e-6);
  corrupt_link = 1;
  assert_int_equal(rapa_link_pair(&ops, NULL, 0, 1, 4096, &o, &t), CG_ERR_INTERNAL);
  assert_non_null(strstr(cg_err_msg(), "link check failed"));
  cg_err_clear();
  assert_int_equal(rapa_link_allreduce(&ops, cpu, 0, 2, 1000, &o, &t), CG_ERR_INTERNAL);
  assert_non_null(strstr(cg_err_msg(), "all-reduce check failed"));
  cg_err_clear();
  corrupt_link = 0;
}

static void test_mps(void **state) {
  char dir[] = "/tmp/capgnn-mps.XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("CUDA_MPS_PIPE_DIRECTORY", dir, 1);
  unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  assert_int_equal(rapa_mps_share_set(50), CG_ERR_UNSUPPORTED);
  assert_non_null(strstr(cg_err_msg(), "MPS control daemon"));
  assert_non_null(strstr(cg_err_msg(), "nvidia-cuda-mps-control -d"));
  assert_null(getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
  cg_err_clear();
  assert_int_equal(rapa_mps_share_set(0), CG_ERR_ARG);
  assert_int_equal(rapa_mps_share_set(101), CG_ERR_ARG);
  cg_err_clear();
  /* a daemon's pipe present: the share is set */
  char ctl[64];
  snprintf(ctl, sizeof ctl, "%s/control", dir);
  FILE *f = fopen(ctl, "w");
  assert_non_null(f);
  fclose(f);
  assert_int_equal(rapa_mps_share_set(25), CG_OK);
  assert_string_equal(getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
  unlink(ctl);
  rmdir(dir);
  unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  unsetenv("CUDA_MPS_PIPE_DIRECTORY");
}

/* A GPU rank's backend under its wrappers (an emulated speed, the per-op profiler) is timed
 * by the clock after a sync: CUDA events would need the CUDA backend itself, and asking for
 * them failed the start-up measurement of --partition rapa. Stood in for here by a wrapped
 * CPU backend that says it is a CUDA device (what rapa_measure looks at). */
static void test_wrapped_device(void **state) {
  struct rapa_bench_opts o = tiny_opts();
  struct rapa_timing t;
  struct cg_backend *inner = NULL, *emu = NULL, *prof = NULL;
  assert_int_equal(cg_backend_cpu_create(1, &inner), CG_OK);
  assert_int_equal(cg_backend_emulate_wrap(inner, 0.5, &emu), CG_OK);
  emu->kind = CG_DEVICE_CUDA;
  fault = F_NONE;
  assert_int_equal(rapa_bench_gemm(emu, 7, 5, 3, 2e-4, &o, &t), CG_OK);
  check_timing(&t, &o);
  struct cg_emulate_counters ec;
  cg_emulate_get(emu, &ec);
  assert_true(ec.ops > 0); /* the ops ran through the wrapper */
  assert_int_equal(cg_backend_profile_wrap(emu, &prof), CG_OK);
  prof->kind = CG_DEVICE_CUDA;
  assert_int_equal(rapa_bench_gemm(prof, 7, 5, 3, 2e-4, &o, &t), CG_OK);
  check_timing(&t, &o);
  cg_backend_destroy(&prof); /* (the profiling wrapper does not own what it wraps) */
  cg_backend_destroy(&emu);  /* (the emulating one does: inner goes with it) */
}

static void test_median(void **state) {
  double v[] = {5, 1, 3};
  assert_true(rapa_median(v, 3) == 3);
  double w[] = {4, 1, 3, 2};
  assert_true(rapa_median(w, 4) == 2.5);
}

static void test_parse_errors(void **state) {
  struct rapa_profile *p = NULL;
  assert_int_equal(rapa_profile_parse("{\"schema\": ", "test", &p), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "not valid JSON"));
  assert_int_equal(rapa_profile_parse("{\"schema\": \"capgnn-profile\", \"version\": 0}", "test", &p), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "version"));
  assert_int_equal(rapa_profile_parse("{\"schema\": \"capgnn-profile\", \"version\": 1}", "test", &p), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "created"));
  assert_null(p);
  /* cut short inside a line: the message stays one line (it showed the 20 characters
   * after the error, newline included) */
  assert_int_equal(rapa_profile_parse("{\"schema\": \"capgnn-profile\",\n \"vers\n", "test", &p), CG_ERR_FORMAT);
  printf("  %s\n", cg_err_msg());
  assert_null(strchr(cg_err_msg(), '\n'));
  assert_non_null(strstr(cg_err_msg(), "not valid JSON (near 'vers'): was it cut short"));
  assert_int_equal(rapa_profile_parse("{\"schema\": ", "test", &p), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "not valid JSON (at the end of the file)"));
  cg_err_clear();
}

/* Ranks alike (the same id) whose GEMM or SpMM rates are more than 1.5x apart: one line
 * per such group, naming the slowest and the fastest; ranks of other ids, and rates
 * within 1.5x, say nothing. */
static void test_rates_apart(void **state) {
  (void)state;
  char out[1024];
  char *ids[] = {"host a, cpu-t1", "host a, cpu-t1", "host a, cpu-t2", "host a, cpu-t1"};
  const double gemm[] = {1e11, 0.5e11, 1e9, 0.9e11}, spmm[] = {1e9, 1.1e9, 1e7, 1e9};
  assert_int_equal(rapa_rates_apart(4, ids, gemm, spmm, out, sizeof out), 1);
  printf("  %s\n", out);
  assert_string_equal(out, "ranks alike (host a, cpu-t1) measured rates 2.0x apart (GEMM FLOP/s: rank 1 5e+10, "
                           "rank 0 1e+11)");
  const double close[] = {1e11, 0.7e11, 1e9, 0.9e11}; /* 1.43x: noise this check lets pass */
  assert_int_equal(rapa_rates_apart(4, ids, close, spmm, out, sizeof out), 0);
  assert_string_equal(out, "");
  const double sp[] = {1e9, 1e9, 1e7, 3e9}; /* SpMM apart, the cpu-t2 rank 100x slower than all */
  assert_int_equal(rapa_rates_apart(4, ids, close, sp, out, sizeof out), 1);
  assert_non_null(strstr(out, "3.0x apart (SpMM nonzero-columns/s: rank 0 1e+09, rank 3 3e+09)"));
  char *two[] = {"x", "y", "x", "y"}; /* two groups, two lines */
  const double g2[] = {1e11, 1e11, 2e11, 3e11}, s2[] = {1e9, 1e9, 1e9, 1e9};
  assert_int_equal(rapa_rates_apart(4, two, g2, s2, out, sizeof out), 2);
  assert_non_null(strstr(out, "ranks alike (x) measured rates 2.0x apart"));
  assert_non_null(strstr(out, "\nranks alike (y) measured rates 3.0x apart"));
  char *one[] = {"x"}; /* one rank: nothing to compare */
  assert_int_equal(rapa_rates_apart(1, one, g2, s2, out, sizeof out), 0);
  char tiny[16]; /* a short buffer: cut, terminated */
  assert_int_equal(rapa_rates_apart(4, two, g2, s2, tiny, sizeof tiny), 2);
  assert_int_equal(strlen(tiny), sizeof tiny - 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm),  cmocka_unit_test(test_spmm), cmocka_unit_test(test_copies),
      cmocka_unit_test(test_links), cmocka_unit_test(test_mps),  cmocka_unit_test(test_median),
      cmocka_unit_test(test_wrapped_device),
      cmocka_unit_test(test_parse_errors), cmocka_unit_test(test_rates_apart),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
