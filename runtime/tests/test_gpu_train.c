/* runtime/tests/test_gpu_train.c — a whole training run on the CUDA backend equals
 * the same run on the CPU backend: per-epoch loss within 1e-4 relative for 20
 * epochs in fp32, dropout on, for GCN, GraphSAGE (with LayerNorm) and GAT (4 heads of
 * 16, 2 averaged output heads, attention dropout on; Cora when present), GCN and SAGE
 * with sparse (identity) input features, and the same
 * accuracies to within one vertex; again with the tiled SpMM (CAPGNN_SPMM=tiled:
 * synth:small's operators have dense tiles, ~65 % of their nonzeros). Exit 77
 * (skipped) without a GPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core/log.h"
#include "core/status.h"
#include "cuda/cuda_backend.h"
#include "runtime/runtime.h"

static void run(struct rt_config *cfg, const char *device, struct rt_result *res) {
  cfg->device = device;
  if (rt_run(cfg, res) != CG_OK) fail_msg("rt_run(--device %s): %s", device, cg_err_msg());
}

static void compare(enum rt_model_kind kind, int layernorm, int layers, const char *graph) {
  struct rt_config cfg;
  rt_config_defaults(&cfg);
  cfg.graph = graph;
  cfg.model = kind;
  cfg.layernorm = layernorm;
  cfg.layers = layers;
  cfg.hidden = 64;
  cfg.dropout = 0.5f;
  if (kind == RT_MODEL_GAT) {
    cfg.hidden = 16;
    cfg.heads = 4;
    cfg.out_heads = 2;
  }
  cfg.epochs = 20;
  cfg.eval_every = 5;
  cfg.threads = 2;
  cfg.quiet = 1;
  cfg.seed = 7;
  struct rt_result cpu, gpu;
  run(&cfg, "cpu", &cpu);
  run(&cfg, "cuda", &gpu);
  double worst = 0.0;
  int worst_epoch = 0;
  for (int e = 0; e < cfg.epochs; e++) {
    double rel = fabs(gpu.loss[e] - cpu.loss[e]) / fmax(fabs(cpu.loss[e]), 1e-12);
    if (rel > worst) worst = rel, worst_epoch = e + 1;
  }
  printf("  %s %s ln=%d layers=%d: worst relative loss difference %.3g at epoch %d "
         "(cpu %.7f, cuda %.7f at the last epoch); test acc cpu %.4f cuda %.4f\n",
         graph, rt_model_kind_str(kind), layernorm, layers, worst, worst_epoch,
         cpu.loss[cfg.epochs - 1], gpu.loss[cfg.epochs - 1], cpu.final_test_acc,
         gpu.final_test_acc);
  assert_true(worst <= 1e-4);
  assert_true(fabs(cpu.final_test_acc - gpu.final_test_acc) <= 2e-3);
  rt_result_free(&cpu);
  rt_result_free(&gpu);
}

static void gcn(void **state) {
  (void)state;
  compare(RT_MODEL_GCN, 0, 3, "synth:small");
}
static void sage_layernorm(void **state) {
  (void)state;
  compare(RT_MODEL_SAGE, 1, 2, "synth:small");
}

static void gat(void **state) {
  (void)state;
  compare(RT_MODEL_GAT, 0, 3, "synth:small");
  char cora[4096];
  snprintf(cora, sizeof cora, "%s/cora.cgr", CAPGNN_TEST_DATASETS);
  FILE *f = fopen(cora, "rb");
  if (f) {
    fclose(f);
    compare(RT_MODEL_GAT, 0, 2, cora);
  } else {
    printf("  %s not found: the GAT run on Cora is skipped\n", cora);
  }
}

/* Sparse input features on CUDA (csr_mm, its transpose for the weight gradient,
 * csr_dropout; SAGE's self term on the inner rows): identity features, stored sparse,
 * built without a file. */
static void sparse_features(void **state) {
  (void)state;
  compare(RT_MODEL_GCN, 0, 2, "synth:small:identity=1");
  compare(RT_MODEL_SAGE, 0, 2, "synth:small:identity=1");
}

static void tiled(void **state) {
  (void)state;
  setenv("CAPGNN_SPMM", "tiled", 1);
  compare(RT_MODEL_GCN, 0, 3, "synth:small");
  compare(RT_MODEL_SAGE, 1, 2, "synth:small");
  unsetenv("CAPGNN_SPMM");
}

int main(void) {
  cg_log_set_level(CG_LOG_WARN);
  if (cg_cuda_device_count() <= 0) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {cmocka_unit_test(gcn), cmocka_unit_test(sage_layernorm),
                                     cmocka_unit_test(gat), cmocka_unit_test(sparse_features),
                                     cmocka_unit_test(tiled)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
