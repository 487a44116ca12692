/* runtime/tests/test_sparse_features.c — sparse input features on one rank (issue #14
 * item 3): the model with layer 0 multiplying X as CSR (rt_local_from_graph_feat with
 * sparse = 1) computes what the dense model computes, to rounding: per-epoch training
 * loss (dropout 0.5 on the features and the hidden layer) within 1e-5 relative, the
 * first step's gradient (every parameter, layer 0's weight gradient Xᵀ·dT included)
 * within 1e-5 max|g| + 1e-4 |g|, the weights after the Adam steps within 1e-4 + 1e-4 |w|,
 * and the same evaluation accuracies. GCN and GraphSAGE (and GAT on Cora), on Cora (bag of words, 1.3 %
 * stored; skipped when absent) and on an identity-feature synthetic graph (X = I).
 * Also: the local problem never holds the dense matrix, and rt_features_choose's rules
 * (auto, on, off), and synth's identity=1 graph. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/status.h"
#include "graph/graph.h"
#include "runtime/runtime.h"

#define LOSS_RTOL 1e-5
#define G_ATOL_OF_MAX 1e-5
#define G_RTOL 1e-4
#define W_ATOL 1e-4
#define W_RTOL 1e-4
#define EPOCHS 10

struct run {
  double loss[EPOCHS];
  float *grads0, *params;
  int64_t n;
  struct rt_eval ev;
};

static void train(const struct graph *g, const struct rt_config *cfg, int sparse, struct run *o) {
  struct rt_local loc;
  struct cg_backend *be = NULL;
  struct rt_model *m = NULL;
  assert_int_equal(rt_local_from_graph_feat(g, cfg->model, sparse, &loc), CG_OK);
  assert_int_equal(loc.feat_sparse, sparse);
  if (sparse) assert_null(loc.feat); /* never densified */
  assert_int_equal(cg_backend_cpu_create(1, &be), CG_OK);
  assert_int_equal(rt_model_create(be, &loc, cfg, NULL, &m), CG_OK);
  o->n = rt_model_num_params(m);
  o->grads0 = malloc((size_t)o->n * sizeof(float));
  o->params = malloc((size_t)o->n * sizeof(float));
  assert_non_null(o->grads0);
  assert_non_null(o->params);
  double l0 = 0.0;
  assert_int_equal(rt_model_loss_grad(m, 1, 1, &l0, NULL), CG_OK);
  assert_int_equal(rt_model_grads_get(m, o->grads0), CG_OK);
  for (int e = 1; e <= EPOCHS; e++) {
    struct rt_step_stats st;
    assert_int_equal(rt_model_step(m, (uint32_t)e, &st), CG_OK);
    o->loss[e - 1] = st.loss;
  }
  assert_int_equal(rt_model_evaluate(m, &o->ev, NULL), CG_OK);
  assert_int_equal(rt_model_params_get(m, o->params), CG_OK);
  rt_model_destroy(&m);
  cg_backend_destroy(&be);
  rt_local_free(&loc);
}

static void compare(const char *graph, enum rt_model_kind kind, int feat_norm) {
  struct graph g;
  assert_int_equal(graph_open(graph, &g), CG_OK);
  if (feat_norm) graph_feat_rownorm(&g);
  struct rt_config cfg;
  rt_config_defaults(&cfg);
  cfg.model = kind;
  cfg.layers = 2;
  cfg.hidden = 16;
  cfg.dropout = 0.5f; /* on the features too (GAT: and on the attention) */
  if (kind == RT_MODEL_GAT) {
    cfg.hidden = 4;
    cfg.heads = 3;
    cfg.out_heads = 2;
  }
  cfg.epochs = EPOCHS;
  cfg.device = "cpu";
  cfg.threads = 1;
  cfg.quiet = 1;
  struct run d, s;
  memset(&d, 0, sizeof d);
  memset(&s, 0, sizeof s);
  train(&g, &cfg, 0, &d);
  train(&g, &cfg, 1, &s);
  assert_int_equal(d.n, s.n);
  double wl = 0.0, wg = 0.0, ww = 0.0, gmax = 0.0;
  for (int e = 0; e < EPOCHS; e++) {
    const double r = fabs(s.loss[e] - d.loss[e]) / fabs(d.loss[e]);
    if (r > wl) wl = r;
  }
  for (int64_t i = 0; i < d.n; i++)
    if (fabs(d.grads0[i]) > gmax) gmax = fabs(d.grads0[i]);
  for (int64_t i = 0; i < d.n; i++) {
    const double rg = fabs(s.grads0[i] - d.grads0[i]) / (G_ATOL_OF_MAX * gmax + G_RTOL * fabs(d.grads0[i]));
    const double rw = fabs(s.params[i] - d.params[i]) / (W_ATOL + W_RTOL * fabs(d.params[i]));
    if (!(rg <= wg)) wg = rg;
    if (!(rw <= ww)) ww = rw;
  }
  print_message("  %-36s %-4s: loss %.6f -> %.6f (dense) / %.6f -> %.6f (sparse); worst loss rel err %.2e, "
                "first-step gradient %.3f and weights %.3f of the tolerance; acc %.4f/%.4f/%.4f vs %.4f/%.4f/%.4f\n",
                graph, rt_model_kind_str(kind), d.loss[0], d.loss[EPOCHS - 1], s.loss[0], s.loss[EPOCHS - 1], wl,
                wg, ww, d.ev.train_acc, d.ev.val_acc, d.ev.test_acc, s.ev.train_acc, s.ev.val_acc, s.ev.test_acc);
  assert_true(d.loss[EPOCHS - 1] < d.loss[0]); /* it learns */
  assert_true(wl <= LOSS_RTOL);
  assert_true(wg <= 1.0);
  assert_true(ww <= 1.0);
  assert_true(d.ev.train_acc == s.ev.train_acc && d.ev.val_acc == s.ev.val_acc && d.ev.test_acc == s.ev.test_acc);
  free(d.grads0);
  free(d.params);
  free(s.grads0);
  free(s.params);
  graph_free(&g);
}

static int have_cora(char *path, size_t len) {
  snprintf(path, len, "%s/cora.cgr", CAPGNN_TEST_DATASETS);
  return access(path, R_OK) == 0;
}

static void test_cora(void **state) {
  (void)state;
  char path[4096];
  if (!have_cora(path, sizeof path)) {
    print_message("  %s not found: skipped\n", path);
    skip();
  }
  compare(path, RT_MODEL_GCN, 1);
  compare(path, RT_MODEL_SAGE, 1);
  compare(path, RT_MODEL_GAT, 1);
}

static void test_identity(void **state) {
  (void)state;
  compare("synth:small:nodes=1500,identity=1", RT_MODEL_GCN, 0);
  compare("synth:small:nodes=1500,identity=1", RT_MODEL_SAGE, 0);
}

/* synth's identity=1: X = I stored sparse, feat_dim = n; everything else as without it. */
static void test_identity_graph(void **state) {
  (void)state;
  struct graph g, h;
  assert_int_equal(graph_synth("synth:tiny:identity=1", &g), CG_OK);
  assert_int_equal(graph_synth("synth:tiny", &h), CG_OK);
  assert_int_equal(g.sparse_feat, 1);
  assert_int_equal(g.feat_dim, g.n);
  assert_int_equal(g.feat_nnz, g.n);
  for (int64_t u = 0; u < g.n; u++) {
    assert_int_equal(g.feat_rowptr[u], u);
    assert_int_equal(g.feat_colidx[u], u);
    assert_true(g.feat_values[u] == 1.0f);
  }
  assert_int_equal(g.n, h.n);
  assert_int_equal(g.m, h.m);
  assert_memory_equal(g.colidx, h.colidx, (size_t)g.m * sizeof(int32_t));
  assert_memory_equal(g.labels, h.labels, (size_t)g.n * sizeof(int32_t));
  assert_int_equal(graph_check(&g, "identity"), CG_OK);
  /* graph_feat_csr of a dense graph: its nonzeros; of a sparse one: its entries */
  struct cg_csr a;
  const int32_t rows[3] = {5, 0, 17};
  assert_int_equal(graph_feat_csr(&g, rows, 3, &a), CG_OK);
  assert_int_equal(a.nnz, 3);
  for (int i = 0; i < 3; i++) assert_int_equal(a.colidx[i], rows[i]);
  cg_csr_free(&a);
  assert_int_equal(graph_feat_csr(&h, NULL, 0, &a), CG_OK);
  assert_int_equal(a.nrows, h.n);
  for (int64_t u = 0; u < h.n; u++)
    for (int64_t k = a.rowptr[u]; k < a.rowptr[u + 1]; k++)
      assert_true(a.vals[k] == h.feat_values[u * h.feat_dim + a.colidx[k]]);
  cg_csr_free(&a);
  graph_free(&g);
  graph_free(&h);
}

static void test_choose(void **state) {
  (void)state;
  struct graph g;
  memset(&g, 0, sizeof g);
  snprintf(g.name, sizeof g.name, "t");
  g.n = 1000;
  g.feat_dim = 500;
  struct rt_config c;
  rt_config_defaults(&c);
  int sp = -1;
  assert_int_equal(c.sparse_features, RT_SPARSE_AUTO);
  /* auto: stored sparse and thin -> sparse; dense-stored, too dense, or GAT -> dense */
  g.sparse_feat = 1;
  g.feat_nnz = 5000; /* 1 % */
  assert_int_equal(rt_features_choose(&g, &c, 0, &sp), CG_OK);
  assert_int_equal(sp, 1);
  g.feat_nnz = 200000; /* 40 % */
  assert_int_equal(rt_features_choose(&g, &c, 0, &sp), CG_OK);
  assert_int_equal(sp, 0);
  g.feat_nnz = 5000;
  c.model = RT_MODEL_GAT; /* GAT's first layer too */
  assert_int_equal(rt_features_choose(&g, &c, 0, &sp), CG_OK);
  assert_int_equal(sp, 1);
  c.model = RT_MODEL_GCN;
  g.sparse_feat = 0;
  g.feat_nnz = g.n * g.feat_dim;
  assert_int_equal(rt_features_choose(&g, &c, 0, &sp), CG_OK);
  assert_int_equal(sp, 0);
  /* on: sparse even when stored dense */
  c.sparse_features = RT_SPARSE_ON;
  assert_int_equal(rt_features_choose(&g, &c, 1, &sp), CG_OK);
  assert_int_equal(sp, 1);
  /* off: dense */
  c.model = RT_MODEL_SAGE;
  c.sparse_features = RT_SPARSE_OFF;
  g.sparse_feat = 1;
  g.feat_nnz = 10;
  assert_int_equal(rt_features_choose(&g, &c, 0, &sp), CG_OK);
  assert_int_equal(sp, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_choose),
      cmocka_unit_test(test_identity_graph),
      cmocka_unit_test(test_cora),
      cmocka_unit_test(test_identity),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
