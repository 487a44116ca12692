/* runtime/tests/test_threads.c — the threads of a rank (runtime.h, "threads of a
 * rank"; issue #18, item 1): the decision from the counts alone (a table, no
 * hardware), then the widening of a one-CPU binding on this machine. */
#define _GNU_SOURCE
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/cpus.h"
#include "runtime/runtime.h"

static void test_plan(void **state) {
  (void)state;
  static const struct {
    int requested, host, bound, ranks;
    int threads, widen, over, squeezed;
  } cases[] = {
      /* the default: the host's CPUs divided by its ranks */
      {0, 2, 2, 1, 2, 0, 0, 0},   /* one process, unbound */
      {0, 2, 1, 1, 2, 1, 0, 0},   /* mpirun -np 1 bound it to a core: widened, all cores */
      {0, 2, 1, 2, 1, 0, 0, 0},   /* -np 2 on 2 cores: one each */
      {0, 2, 2, 4, 1, 0, 1, 0},   /* -np 4 on 2 cores: 1 each, oversubscribed by the ranks */
      {0, 16, 1, 2, 8, 1, 0, 0},  /* -np 2 on 16 cores, bound to a core each: 8 each, widened */
      {0, 64, 32, 4, 16, 0, 0, 0},/* bound to a socket each: room enough */
      {0, 16, 4, 2, 4, 0, 0, 0},  /* the user bound 4 CPUs per rank (PE=4): capped there */
      {0, 3, 3, 2, 1, 0, 0, 0},   /* rounds down */
      /* --threads N: as given, warned about when it cannot fit */
      {1, 2, 2, 4, 1, 0, 1, 0},
      {2, 2, 2, 2, 2, 0, 1, 0},   /* 2 ranks x 2 threads on 2 CPUs */
      {2, 2, 1, 1, 2, 0, 0, 1},   /* bound to one CPU: squeezed, not widened */
      {4, 8, 8, 2, 4, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct rt_threads t;
    rt_threads_plan(cases[i].requested, cases[i].host, cases[i].bound, cases[i].ranks, &t);
    if (t.threads != cases[i].threads || t.widen != cases[i].widen || t.oversubscribed != cases[i].over ||
        t.squeezed != cases[i].squeezed)
      fail_msg("case %zu (requested %d, host %d, bound %d, ranks %d): threads %d widen %d over %d squeezed %d, "
               "expected %d %d %d %d", i, cases[i].requested, cases[i].host, cases[i].bound, cases[i].ranks,
               t.threads, t.widen, t.oversubscribed, t.squeezed, cases[i].threads, cases[i].widen,
               cases[i].over, cases[i].squeezed);
  }
}

/* Bound to one CPU as mpirun -np 1 does: the default uses every CPU of the host, and
 * the binding is widened so that they run on all of them. */
static void test_widen(void **state) {
  (void)state;
  const int host = cg_cpus_host();
  if (host < 2) skip(); /* nothing to widen on one CPU */
  cpu_set_t one;
  CPU_ZERO(&one);
  assert_int_equal(sched_getaffinity(0, sizeof one, &one), 0);
  int first = 0;
  while (!CPU_ISSET(first, &one)) first++;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
  assert_int_equal(cg_cpus_bound(), 1);
  assert_int_equal(cg_cpus_host(), host); /* the binding does not hide the host's CPUs */
  assert_int_equal(cg_cpus_bound(), 1);   /* ... and asking does not change it */
  assert_int_equal(rt_threads_setup("train", 0, 1, 0, "cpu"), host);
  assert_int_equal(cg_cpus_bound(), host);
  /* an explicit count is left where the binding puts it */
  assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
  assert_int_equal(rt_threads_setup("train", 2, 1, 0, "cpu"), 2);
  assert_int_equal(cg_cpus_bound(), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_plan), cmocka_unit_test(test_widen)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
