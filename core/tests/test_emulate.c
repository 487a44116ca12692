/* core/tests/test_emulate.c — the emulating backend (core/ops_emulate.h): results bit
 * for bit those of the inner backend, the wait owed follows the ops' own (CPU) time
 * and speed, it is paid at synchronisation points (every sync returns only after the debt
 * is slept: a lower bound the deadline guarantees, not a timing threshold), a speed of
 * 1 owes nothing, and the speed list of CAPGNN_EMULATE_SPEED is parsed per rank. Both
 * wrapping backends (emulating and profiling) set every op the CPU backend has: a
 * member left NULL would crash the first run that calls it under the wrapper (SGD and
 * the attention ops did under CAPGNN_EMULATE_SPEED before issue #14's sparse ops). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/ops.h"
#include "core/ops_emulate.h"
#include "core/ops_profile.h"
#include "core/status.h"
#include "core/timer.h"

#define M 96
#define N 64
#define K 80

static void fill(float *x, int64_t n, uint32_t seed) {
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
  }
}

/* GEMM, an elementwise op and a loss through both backends: equal bits. */
static void test_results_identical(void **state) {
  (void)state;
  struct cg_backend *plain = NULL, *inner = NULL, *emu = NULL;
  assert_int_equal(cg_backend_cpu_create(1, &plain), CG_OK);
  assert_int_equal(cg_backend_cpu_create(1, &inner), CG_OK);
  assert_int_equal(cg_backend_emulate_wrap(inner, 0.5, &emu), CG_OK);
  assert_ptr_equal(cg_backend_emulate_inner(emu), inner);
  assert_ptr_equal(cg_backend_emulate_inner(plain), plain);
  assert_true(cg_backend_emulate_speed(emu) == 0.5 && cg_backend_emulate_speed(plain) == 1.0);
  assert_int_equal(cg_backend_emulate_cpu_clock(emu), 1); /* one CPU thread: the CPU-time rule */
  assert_int_equal(cg_backend_emulate_cpu_clock(plain), 0);
  assert_string_equal(emu->name, "cpu");
  assert_ptr_equal(cg_backend_base(emu), inner);
  assert_ptr_equal(cg_backend_base(plain), plain);
  assert_int_equal(cg_backend_cpu_threads(emu), 1); /* the CPU backend's, through the wrapper */
  assert_non_null(cg_backend_cpu_gemm_name(emu));
  static float a[M * K], b[K * N], c1[M * N], c2[M * N], d1[M * N], d2[M * N];
  fill(a, M * K, 1);
  fill(b, K * N, 2);
  plain->gemm(plain, 0, 0, M, N, K, 1.0f, a, K, b, N, 0.0f, c1, N);
  emu->gemm(emu, 0, 0, M, N, K, 1.0f, a, K, b, N, 0.0f, c2, N);
  plain->relu_fwd(plain, c1, c1, M * N);
  emu->relu_fwd(emu, c2, c2, M * N);
  int32_t lab[M], idx[M];
  for (int i = 0; i < M; i++) {
    lab[i] = i % N;
    idx[i] = i;
  }
  double l1 = 0, l2 = 0;
  plain->xent(plain, c1, M, N, lab, idx, M, 1.0f / M, d1, &l1);
  emu->xent(emu, c2, M, N, lab, idx, M, 1.0f / M, d2, &l2);
  assert_memory_equal(c1, c2, sizeof c1);
  assert_memory_equal(d1, d2, sizeof d1);
  assert_true(l1 == l2);
  cg_backend_destroy(&emu); /* destroys inner too (ASan would see a leak otherwise) */
  cg_backend_destroy(&plain);
}

/* The debt. One thread: op by op max(0, cpu / speed - wall), so between the sums'
 * difference and (1/speed - 1) x the CPU time (a thread's CPU time never exceeds the wall
 * time); two threads: (1/speed - 1) x the wall time, exactly as accumulated. A sync
 * returns only once the debt is paid (slept >= owed; nothing is slept for a debt under
 * 100 us, which a loaded machine can leave: the CPU time is then short of the wall time);
 * the wall time of ops + sync covers measured + owed. */
static void test_debt_paid_at_sync(void **state) {
  (void)state;
  const double speeds[] = {0.25, 0.5, 1.0};
  static float a[256 * 256], b[256 * 256], c[256 * 256];
  fill(a, 256 * 256, 3);
  fill(b, 256 * 256, 4);
  for (int threads = 1; threads <= 2; threads++)
    for (int s = 0; s < 3; s++) {
      struct cg_backend *inner = NULL, *emu = NULL;
      assert_int_equal(cg_backend_cpu_create(threads, &inner), CG_OK);
      assert_int_equal(cg_backend_emulate_wrap(inner, speeds[s], &emu), CG_OK);
      assert_int_equal(cg_backend_emulate_cpu_clock(emu), threads == 1);
      const double t0 = cg_time_now();
      for (int i = 0; i < 20; i++) emu->gemm(emu, 0, 0, 256, 256, 256, 1.0f, a, 256, b, 256, 0.0f, c, 256);
      struct cg_emulate_counters before, after;
      cg_emulate_get(emu, &before);
      assert_int_equal((int)before.ops, 20);
      assert_true(before.measured_s > 0.0);
      printf("  %d thread%s, speed %g: wall %.6f s, cpu %.6f s, owed %.6f s\n", threads, threads == 1 ? "" : "s",
             speeds[s], before.measured_s, before.cpu_s, before.owed_s);
      if (threads == 1) {
        assert_true(before.cpu_s > 0.0 && before.cpu_s <= before.measured_s + 1e-5);
        assert_true(before.owed_s >= before.cpu_s / speeds[s] - before.measured_s - 1e-9);
        assert_true(before.owed_s <= (1.0 / speeds[s] - 1.0) * before.cpu_s + 1e-9);
      } else {
        assert_true(before.cpu_s == 0.0);
        assert_true(fabs(before.owed_s - (1.0 / speeds[s] - 1.0) * before.measured_s) <=
                    1e-12 + 1e-9 * before.owed_s);
      }
      emu->sync(emu);
      const double wall = cg_time_now() - t0;
      cg_emulate_get(emu, &after);
      assert_true(before.slept_s == 0.0); /* nothing waited before the sync */
      if (speeds[s] == 1.0) {
        assert_true(after.owed_s == 0.0 && after.slept_s == 0.0 && after.waits == 0);
      } else if (after.owed_s >= 100e-6) {
        assert_true(after.waits == 1);
        assert_true(after.slept_s >= after.owed_s);
        assert_true(wall >= after.measured_s + after.owed_s);
      } else {
        assert_true(after.waits == 0 && after.slept_s == 0.0);
      }
      cg_backend_destroy(&emu);
    }
}

static void test_speed_parse(void **state) {
  (void)state;
  double f = 0;
  assert_int_equal(cg_emulate_speed_parse(NULL, 0, 4, &f), CG_OK);
  assert_true(f == 1.0);
  assert_int_equal(cg_emulate_speed_parse("", 3, 4, &f), CG_OK);
  assert_true(f == 1.0);
  assert_int_equal(cg_emulate_speed_parse("1,0.5,0.25,0.25", 1, 4, &f), CG_OK);
  assert_true(f == 0.5);
  assert_int_equal(cg_emulate_speed_parse("1,0.5,0.25,0.25", 3, 4, &f), CG_OK);
  assert_true(f == 0.25);
  assert_int_equal(cg_emulate_speed_parse("0.33", 1, 2, &f), CG_OK);
  assert_true(f == 0.33);
  assert_int_equal(cg_emulate_speed_parse("1,0.5", 0, 4, &f), CG_ERR_ARG); /* 2 values, 4 ranks */
  assert_non_null(strstr(cg_err_msg(), "4 ranks"));
  assert_int_equal(cg_emulate_speed_parse("1,0", 0, 2, &f), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "value number 2 in the list, '0',"));
  assert_int_equal(cg_emulate_speed_parse("0,1", 0, 2, &f), CG_ERR_ARG); /* the value named, not "value 1" */
  assert_non_null(strstr(cg_err_msg(), "value number 1 in the list, '0',"));
  assert_int_equal(cg_emulate_speed_parse("1.5", 0, 1, &f), CG_ERR_ARG);
  assert_int_equal(cg_emulate_speed_parse("1,,1", 0, 3, &f), CG_ERR_ARG);
  assert_int_equal(cg_emulate_speed_parse("fast", 0, 1, &f), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "CAPGNN_EMULATE_SPEED"));
  /* the syntax alone, for a command to check at start: any count, the same messages */
  int n = -1;
  assert_int_equal(cg_emulate_speed_check(NULL, &n), CG_OK);
  assert_int_equal(n, 0);
  assert_int_equal(cg_emulate_speed_check("1,0.5,0.25", &n), CG_OK);
  assert_int_equal(n, 3);
  assert_int_equal(cg_emulate_speed_check("1,", &n), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "value number 2 in the list, '',"));
  assert_int_equal(cg_emulate_speed_check("0.5,2", &n), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "value number 2 in the list, '2',"));
  struct cg_backend *inner = NULL, *emu = NULL;
  assert_int_equal(cg_backend_cpu_create(1, &inner), CG_OK);
  assert_int_equal(cg_backend_emulate_wrap(inner, 0.0, &emu), CG_ERR_ARG);
  assert_int_equal(cg_backend_emulate_wrap(inner, 1.5, &emu), CG_ERR_ARG);
  cg_backend_destroy(&inner);
  cg_err_clear();
}

/* Every function pointer after `impl` in the table: set in the wrapper when the inner
 * backend sets it. */
static int ops_missing(const struct cg_backend *inner, const struct cg_backend *w, const char *which) {
  typedef void (*fp)(void);
  const size_t first = offsetof(struct cg_backend, destroy), n = (sizeof *inner - first) / sizeof(fp);
  int missing = 0;
  for (size_t i = 0; i < n; i++) {
    fp a, b;
    memcpy(&a, (const char *)inner + first + i * sizeof(fp), sizeof a);
    memcpy(&b, (const char *)w + first + i * sizeof(fp), sizeof b);
    if (a && !b) {
      print_message("  %s wrapper: op table entry %zu is not set\n", which, i);
      missing++;
    }
  }
  return missing;
}

/* Side uploads (optional entries, NULL on the CPU backend): stand-ins that record the
 * backend they were called with, so that a wrapper is seen to pass the inner one on. */
static const struct cg_backend *g_side_be;
static int g_side_calls;
static int s_host_alloc(struct cg_backend *be, void **p, size_t n, const char *what) {
  (void)n;
  (void)what;
  g_side_be = be;
  g_side_calls++;
  *p = NULL;
  return CG_OK;
}
static void s_host_free(struct cg_backend *be, void *p) {
  (void)p;
  g_side_be = be;
  g_side_calls++;
}
static int s_create(struct cg_backend *be, struct cg_upchan **out) {
  g_side_be = be;
  g_side_calls++;
  *out = NULL;
  return CG_OK;
}
static void s_destroy(struct cg_backend *be, struct cg_upchan *ch) {
  (void)ch;
  g_side_be = be;
  g_side_calls++;
}
static int s_begin(struct cg_backend *be, struct cg_upchan *ch) {
  (void)ch;
  g_side_be = be;
  g_side_calls++;
  return CG_OK;
}
static int s_upload(struct cg_backend *be, struct cg_upchan *ch, void *d, const void *s, size_t n) {
  (void)ch;
  (void)d;
  (void)s;
  (void)n;
  g_side_be = be;
  g_side_calls++;
  return CG_OK;
}
static int s_join(struct cg_backend *be, struct cg_upchan *ch) {
  (void)ch;
  g_side_be = be;
  g_side_calls++;
  return CG_OK;
}
static void side_check(struct cg_backend *w, const struct cg_backend *inner) {
  struct cg_upchan *ch = NULL;
  void *p = NULL;
  g_side_calls = 0;
  assert_int_equal(w->host_alloc(w, &p, 8, "test"), CG_OK);
  assert_ptr_equal(g_side_be, inner);
  assert_int_equal(w->upchan_create(w, &ch), CG_OK);
  assert_int_equal(w->upchan_begin(w, ch), CG_OK);
  assert_int_equal(w->upchan_upload(w, ch, NULL, NULL, 0), CG_OK);
  assert_int_equal(w->upchan_join(w, ch), CG_OK);
  w->upchan_destroy(w, ch);
  w->host_free(w, p);
  assert_ptr_equal(g_side_be, inner);
  assert_int_equal(g_side_calls, 7);
}

static void test_every_op_wrapped(void **state) {
  (void)state;
  struct cg_backend *inner = NULL, *emu = NULL, *prof = NULL;
  assert_int_equal(cg_backend_cpu_create(1, &inner), CG_OK);
  assert_int_equal(cg_backend_profile_wrap(inner, &prof), CG_OK);
  assert_int_equal(ops_missing(inner, prof, "profiling"), 0);
  assert_null(prof->upchan_create); /* the CPU backend has no side uploads */
  cg_backend_destroy(&prof); /* does not destroy inner */
  /* a device backend's side uploads: set on the wrappers, passed to the inner backend */
  inner->host_alloc = s_host_alloc;
  inner->host_free = s_host_free;
  inner->upchan_create = s_create;
  inner->upchan_destroy = s_destroy;
  inner->upchan_begin = s_begin;
  inner->upchan_upload = s_upload;
  inner->upchan_join = s_join;
  assert_int_equal(cg_backend_profile_wrap(inner, &prof), CG_OK);
  assert_int_equal(ops_missing(inner, prof, "profiling"), 0);
  side_check(prof, inner);
  cg_backend_destroy(&prof);
  assert_int_equal(cg_backend_emulate_wrap(inner, 0.5, &emu), CG_OK);
  assert_int_equal(ops_missing(inner, emu, "emulating"), 0);
  side_check(emu, inner);
  cg_backend_destroy(&emu); /* destroys inner too */
}

/* CAPGNN_PROFILE_OPS wraps the emulated backend: what the runtime asks of its backend (the
 * CPU backend's threads and GEMM library, for checkpoints and the partitioner's rank
 * identities; the emulated speed and its rule) is answered through both wrappers. */
static void test_wrapped_twice(void **state) {
  (void)state;
  struct cg_backend *inner = NULL, *emu = NULL, *prof = NULL;
  assert_int_equal(cg_backend_cpu_create(1, &inner), CG_OK);
  assert_int_equal(cg_backend_emulate_wrap(inner, 0.25, &emu), CG_OK);
  assert_int_equal(cg_backend_profile_wrap(emu, &prof), CG_OK);
  assert_ptr_equal(cg_backend_base(prof), inner);
  assert_ptr_equal(cg_backend_base_const(prof), inner);
  assert_ptr_equal(cg_backend_emulate_inner(prof), inner);
  assert_true(cg_backend_emulate_speed(prof) == 0.25);
  assert_int_equal(cg_backend_emulate_cpu_clock(prof), 1);
  assert_int_equal(cg_backend_cpu_threads(prof), 1);
  assert_non_null(cg_backend_cpu_gemm_name(prof));
  assert_string_equal(cg_backend_cpu_gemm_name(prof), cg_backend_cpu_gemm_name(inner));
  /* without its emulation: the CPU backend under both wrappers, or under the emulating one;
   * a profiling wrapper alone, or no wrapper, stays (runtime/dist.c's exchange) */
  assert_ptr_equal(cg_backend_emulate_strip(prof), inner);
  assert_ptr_equal(cg_backend_emulate_strip(emu), inner);
  assert_ptr_equal(cg_backend_emulate_strip(inner), inner);
  struct cg_backend *prof_only = NULL;
  assert_int_equal(cg_backend_profile_wrap(inner, &prof_only), CG_OK);
  assert_ptr_equal(cg_backend_emulate_strip(prof_only), prof_only);
  cg_backend_destroy(&prof_only); /* does not destroy inner */
  cg_backend_destroy(&prof); /* does not destroy emu */
  cg_backend_destroy(&emu);  /* destroys inner too */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_op_wrapped),
      cmocka_unit_test(test_results_identical),
      cmocka_unit_test(test_debt_paid_at_sync),
      cmocka_unit_test(test_speed_parse),
      cmocka_unit_test(test_wrapped_twice),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
