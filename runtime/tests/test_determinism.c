/* runtime/tests/test_determinism.c — same seed, same run (bit-identical losses and
 * accuracies, fixed thread count); another seed, another run. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/log.h"
#include "core/status.h"
#include "runtime/runtime.h"

static void run(struct rt_config *cfg, struct rt_result *res) {
  cg_log_set_level(CG_LOG_WARN);
  if (rt_run(cfg, res) != CG_OK) fail_msg("rt_run: %s", cg_err_msg());
}

static void check_model(enum rt_model_kind kind, int layernorm, int layers) {
  struct rt_config cfg;
  rt_config_defaults(&cfg);
  cfg.graph = "synth:tiny";
  cfg.model = kind;
  cfg.layernorm = layernorm;
  cfg.layers = layers;
  cfg.hidden = 32;
  cfg.epochs = 15;
  cfg.eval_every = 5;
  cfg.device = "cpu";
  cfg.threads = 2; /* more than one thread: parallel reductions must still be fixed-order */
  cfg.quiet = 1;
  cfg.seed = 42;
  struct rt_result a, b, c;
  run(&cfg, &a);
  run(&cfg, &b);
  cfg.seed = 43;
  run(&cfg, &c);
  assert_int_equal(a.epochs, cfg.epochs);
  int differ = 0;
  for (int e = 0; e < cfg.epochs; e++) {
    assert_true(isfinite(a.loss[e]));
    if (memcmp(&a.loss[e], &b.loss[e], sizeof(double)) != 0)
      fail_msg("epoch %d: loss %.17g vs %.17g with the same seed", e + 1, a.loss[e], b.loss[e]);
    if (a.loss[e] != c.loss[e]) differ++;
  }
  assert_true(memcmp(&a.final_test_acc, &b.final_test_acc, sizeof(double)) == 0);
  assert_true(memcmp(&a.test_acc_at_best_val, &b.test_acc_at_best_val, sizeof(double)) == 0);
  assert_int_equal(a.best_epoch, b.best_epoch);
  printf("  %s ln=%d layers=%d: loss %.6f -> %.6f (seed 42), %.6f -> %.6f (seed 43); %d of %d epochs differ\n",
         rt_model_kind_str(kind), layernorm, layers, a.loss[0], a.loss[cfg.epochs - 1], c.loss[0],
         c.loss[cfg.epochs - 1], differ, cfg.epochs);
  assert_int_equal(differ, cfg.epochs); /* another seed: other weights and masks from epoch 1 */
  assert_true(a.loss[cfg.epochs - 1] < a.loss[0]); /* and it learns */
  rt_result_free(&a);
  rt_result_free(&b);
  rt_result_free(&c);
}

static void gcn(void **state) {
  (void)state;
  check_model(RT_MODEL_GCN, 0, 2);
}
static void sage_layernorm(void **state) {
  (void)state;
  check_model(RT_MODEL_SAGE, 1, 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(gcn), cmocka_unit_test(sage_layernorm)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
