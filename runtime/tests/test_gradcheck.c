/* runtime/tests/test_gradcheck.c — the whole model against independent references.
 *
 * 1. Forward: the model's loss equals a double-precision host reference written from
 *    the formulas (GCN D^-1/2 (A+I) D^-1/2, SAGE mean without self-loop, LayerNorm,
 *    ReLU, dropout masks from core/philox.h on every layer's input, mean loss).
 * 2. Backward: central finite differences of the model's loss w.r.t. every parameter
 *    tensor (up to 50 sampled entries each) equal the analytic flat gradient, for
 *    GCN and SAGE, 2 and 3 layers, with and without LayerNorm, single- and multi-label.
 * 3. Dropout: with dropout on, the gradient equals finite differences of the loss
 *    under the same fixed mask (same epoch), i.e. the backward reapplies the mask. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/philox.h"
#include "core/status.h"
#include "runtime/runtime.h"
#include "test_graph_util.h"

#define N_NODES 30
#define N_CLASS 4
#define HIDDEN 6

struct gc_case {
  enum rt_model_kind kind;
  int layers, layernorm, multilabel;
  float dropout;
  int64_t feat; /* input width: 7 > HIDDEN makes layer 0 transform-first, 4 aggregate-first */
  float input_dropout; /* < 0: as dropout (0 with dropout on: layer 0's Â·X is cached) */
};

/* ---- reference forward in double ------------------------------------------ */

static int find_tensor(const struct rt_model *m, const char *name, struct rt_tensor_info *out) {
  for (int i = 0; i < rt_model_num_tensors(m); i++) {
    assert_int_equal(rt_model_tensor(m, i, out), CG_OK);
    if (strcmp(out->name, name) == 0) return 1;
  }
  return 0;
}

/* Also returns the distance of the closest ReLU input to the kink, in units of the
 * convolution output (LayerNorm's gain divided out). */
static double ref_loss(const struct graph *g, const struct rt_model *m, const struct rt_config *cfg,
                       const float *params, int train, uint32_t epoch, double *relu_margin) {
  *relu_margin = INFINITY;
  const int64_t n = g->n;
  int64_t fin = g->feat_dim;
  double *h = calloc((size_t)(n * fin), sizeof(double));
  assert_non_null(h);
  for (int64_t i = 0; i < n * fin; i++) h[i] = g->feat_values[i];
  for (int l = 0; l < cfg->layers; l++) {
    const int last = l == cfg->layers - 1;
    const int64_t fout = last ? g->num_classes : cfg->hidden;
    char name[32];
    struct rt_tensor_info tw, tws, tb, tg, tbeta;
    snprintf(name, sizeof name, "conv%d.weight", l);
    assert_true(find_tensor(m, name, &tw));
    assert_int_equal(tw.rows, fin);
    assert_int_equal(tw.cols, fout);
    assert_int_equal(tw.kind, RT_TENSOR_WEIGHT); /* the kind decides the initialisation */
    snprintf(name, sizeof name, "conv%d.weight_self", l);
    int has_self = find_tensor(m, name, &tws);
    assert_int_equal(has_self, cfg->model == RT_MODEL_SAGE);
    if (has_self) assert_int_equal(tws.kind, RT_TENSOR_WEIGHT);
    snprintf(name, sizeof name, "conv%d.bias", l);
    assert_true(find_tensor(m, name, &tb));
    assert_int_equal(tb.kind, RT_TENSOR_BIAS);
    snprintf(name, sizeof name, "norm%d.weight", l);
    int has_ln = find_tensor(m, name, &tg);
    assert_int_equal(has_ln, cfg->layernorm && !last);
    if (has_ln) {
      assert_int_equal(tg.kind, RT_TENSOR_NORM_GAIN);
      snprintf(name, sizeof name, "norm%d.bias", l);
      assert_true(find_tensor(m, name, &tbeta));
      assert_int_equal(tbeta.kind, RT_TENSOR_NORM_BIAS);
    }
    /* dropout on the layer input, keyed by (seed, epoch, layer, global id, column) */
    const float pl = rt_config_layer_dropout(cfg, l);
    if (train && pl > 0.0f)
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < fin; j++) {
          float u = cg_dropout_uniform(cfg->seed, epoch, (uint32_t)l, (uint32_t)i, (uint32_t)j);
          h[i * fin + j] = cg_dropout_keep(u, pl) ? h[i * fin + j] / (1.0 - pl) : 0.0;
        }
    /* aggregation */
    double *a = calloc((size_t)(n * fin), sizeof(double));
    assert_non_null(a);
    for (int64_t i = 0; i < n; i++) {
      const int64_t di = g->rowptr[i + 1] - g->rowptr[i];
      if (cfg->model == RT_MODEL_GCN) {
        for (int64_t j = 0; j < fin; j++) a[i * fin + j] = h[i * fin + j] / (double)(di + 1);
        for (int64_t k = g->rowptr[i]; k < g->rowptr[i + 1]; k++) {
          const int64_t v = g->colidx[k];
          const double w = 1.0 / sqrt((double)(di + 1) * (double)(g->rowptr[v + 1] - g->rowptr[v] + 1));
          for (int64_t j = 0; j < fin; j++) a[i * fin + j] += w * h[v * fin + j];
        }
      } else if (di > 0) {
        for (int64_t k = g->rowptr[i]; k < g->rowptr[i + 1]; k++) {
          const int64_t v = g->colidx[k];
          for (int64_t j = 0; j < fin; j++) a[i * fin + j] += h[v * fin + j] / (double)di;
        }
      }
    }
    double *z = calloc((size_t)(n * fout), sizeof(double));
    assert_non_null(z);
    for (int64_t i = 0; i < n; i++)
      for (int64_t o = 0; o < fout; o++) {
        double s = params[tb.offset + o];
        for (int64_t j = 0; j < fin; j++) {
          s += a[i * fin + j] * params[tw.offset + j * fout + o];
          if (has_self) s += h[i * fin + j] * params[tws.offset + j * fout + o];
        }
        z[i * fout + o] = s;
      }
    free(a);
    free(h);
    if (!last) {
      for (int64_t i = 0; i < n; i++) {
        double *zi = z + i * fout;
        double gain = 1.0; /* how much LayerNorm amplifies a change of z (per column) */
        for (int64_t o = 0; o < fout; o++) {
          if (has_ln) {
            if (o == 0) {
              double mu = 0.0, var = 0.0;
              for (int64_t q = 0; q < fout; q++) mu += zi[q];
              mu /= (double)fout;
              for (int64_t q = 0; q < fout; q++) var += (zi[q] - mu) * (zi[q] - mu);
              var /= (double)fout;
              const double rstd = 1.0 / sqrt(var + 1e-5);
              for (int64_t q = 0; q < fout; q++)
                zi[q] = (zi[q] - mu) * rstd * params[tg.offset + q] + params[tbeta.offset + q];
              gain = rstd;
            }
            *relu_margin = fmin(*relu_margin, fabs(zi[o]) / (gain * fabs(params[tg.offset + o]) + 1e-30));
          } else {
            *relu_margin = fmin(*relu_margin, fabs(zi[o]));
          }
          zi[o] = zi[o] > 0.0 ? zi[o] : 0.0;
        }
      }
    }
    h = z;
    fin = fout;
  }
  /* loss: mean over train vertices (BCE: over train vertices x classes) */
  const int64_t c = g->num_classes;
  double sum = 0.0;
  int64_t cnt = 0;
  for (int64_t i = 0; i < n; i++) {
    if (g->split[i] != GRAPH_SPLIT_TRAIN) continue;
    const double *x = h + i * c;
    if (g->multilabel) {
      for (int64_t o = 0; o < c; o++) {
        const double y = g->mlabels[i * c + o];
        sum += fmax(x[o], 0.0) - x[o] * y + log1p(exp(-fabs(x[o])));
        cnt++;
      }
    } else {
      double mx = x[0];
      for (int64_t o = 1; o < c; o++) mx = fmax(mx, x[o]);
      double se = 0.0;
      for (int64_t o = 0; o < c; o++) se += exp(x[o] - mx);
      sum += -(x[g->labels[i]] - mx - log(se));
      cnt++;
    }
  }
  free(h);
  return sum / (double)cnt;
}

/* ---- one case ---------------------------------------------------------------- */

static void run_case(const struct gc_case *tc) {
  struct graph g;
  assert_int_equal(tg_make(&g, N_NODES, tc->feat, N_CLASS, tc->multilabel, 12345), 0);
  assert_int_equal(graph_check(&g, "gradcheck graph"), CG_OK);
  struct rt_config cfg;
  rt_config_defaults(&cfg);
  cfg.model = tc->kind;
  cfg.layers = tc->layers;
  cfg.hidden = HIDDEN;
  cfg.layernorm = tc->layernorm;
  cfg.dropout = tc->dropout;
  cfg.input_dropout = tc->input_dropout;
  cfg.weight_decay = 0.0f;
  cfg.seed = 99;
  struct rt_local loc;
  assert_int_equal(rt_local_from_graph(&g, cfg.model, &loc), CG_OK);
  struct cg_backend *be = NULL;
  assert_int_equal(cg_backend_cpu_create(1, &be), CG_OK);
  struct rt_model *m = NULL;
  if (rt_model_create(be, &loc, &cfg, NULL, &m) != CG_OK) fail_msg("rt_model_create: %s", cg_err_msg());

  const int64_t np = rt_model_num_params(m);
  float *p = malloc((size_t)np * sizeof(float));
  float *grad = malloc((size_t)np * sizeof(float));
  assert_non_null(p);
  assert_non_null(grad);
  /* Make biases and LayerNorm parameters generic (not 0 / 1) so their gradients and
   * the reference see every term. ReLU is not differentiable at 0: pick a perturbation
   * that keeps every ReLU input at least `margin` away from it, so that no finite
   * difference step (eps x a weight's influence, << margin) crosses the kink. */
  const int train = tc->dropout > 0.0f;
  const uint32_t epoch = 3;
  const double margin = 5e-3;
  float *p0 = malloc((size_t)np * sizeof(float));
  assert_non_null(p0);
  assert_int_equal(rt_model_params_get(m, p0), CG_OK);
  uint64_t s = 0;
  double kink = 0.0;
  int tries = 0;
  for (; tries < 1000 && kink < margin; tries++) {
    s = 777 + (uint64_t)tries;
    for (int64_t i = 0; i < np; i++) p[i] = p0[i] + (float)(0.2 * (2.0 * tg_unit(&s) - 1.0));
    (void)ref_loss(&g, m, &cfg, p, train, epoch, &kink);
  }
  free(p0);
  if (kink < margin) fail_msg("no parameter draw keeps the ReLU inputs %.0e away from 0", margin);
  assert_int_equal(rt_model_params_set(m, p), CG_OK);
  double loss = 0.0, loss_again = 0.0;
  assert_int_equal(rt_model_loss_grad(m, epoch, train, &loss, NULL), CG_OK);
  assert_int_equal(rt_model_grads_get(m, grad), CG_OK);

  /* 1. forward against the reference */
  double ref = ref_loss(&g, m, &cfg, p, train, epoch, &kink);
  double ferr = fabs(loss - ref);
  printf("  %s layers=%d feat=%lld ln=%d ml=%d dropout=%.1f input=%.1f: loss %.7f ref %.7f "
         "|diff| %.2e (ReLU margin %.3f after %d draws)\n",
         rt_model_kind_str(tc->kind), tc->layers, (long long)tc->feat, tc->layernorm,
         tc->multilabel, (double)tc->dropout, (double)rt_config_layer_dropout(&cfg, 0), loss, ref,
         ferr, kink, tries);
  assert_true(ferr <= 1e-6 + 1e-5 * fabs(ref));
  assert_int_equal(rt_model_loss(m, epoch, train, &loss_again), CG_OK);
  assert_true(loss_again == loss); /* the same mask again: bit-identical */
  if (train) {
    double loss_nodrop = 0.0, loss_other = 0.0;
    assert_int_equal(rt_model_loss(m, epoch, 0, &loss_nodrop), CG_OK);
    assert_int_equal(rt_model_loss(m, epoch + 1, 1, &loss_other), CG_OK);
    assert_true(fabs(loss_nodrop - loss) > 1e-4); /* dropout changes the loss */
    assert_true(fabs(loss_other - loss) > 1e-4);  /* another epoch, another mask */
  }

  /* 2./3. central differences under the same mask */
  const double eps = 1e-3, rtol = 2e-2, atol = 2e-4;
  const double tensor_rtol = 2e-3; /* measured worst ~4e-4 */
  double worst = 0.0, worst_tensor = 0.0;
  char worst_name[40] = "";
  int nbad = 0, nchecked = 0;
  for (int ti = 0; ti < rt_model_num_tensors(m); ti++) {
    struct rt_tensor_info t;
    assert_int_equal(rt_model_tensor(m, ti, &t), CG_OK);
    const int64_t nsample = t.count < 50 ? t.count : 50;
    double num_norm = 0.0, ana_norm = 0.0, diff_norm = 0.0;
    for (int64_t k = 0; k < nsample; k++) {
      const int64_t idx = t.offset + (t.count <= 50 ? k : (int64_t)(tg_next(&s) % (uint64_t)t.count));
      const float orig = p[idx];
      double lp = 0.0, lm = 0.0;
      p[idx] = orig + (float)eps;
      const double dp = (double)p[idx] - orig;
      assert_int_equal(rt_model_params_set(m, p), CG_OK);
      assert_int_equal(rt_model_loss(m, epoch, train, &lp), CG_OK);
      p[idx] = orig - (float)eps;
      const double dm = orig - (double)p[idx];
      assert_int_equal(rt_model_params_set(m, p), CG_OK);
      assert_int_equal(rt_model_loss(m, epoch, train, &lm), CG_OK);
      p[idx] = orig;
      const double num = (lp - lm) / (dp + dm);
      const double ana = grad[idx];
      const double err = fabs(num - ana);
      const double rel = err / (atol + rtol * fabs(ana));
      num_norm += num * num;
      ana_norm += ana * ana;
      diff_norm += err * err;
      nchecked++;
      if (rel > worst) {
        worst = rel;
        snprintf(worst_name, sizeof worst_name, "%s[%lld]", t.name, (long long)(idx - t.offset));
      }
      if (rel > 1.0) {
        nbad++;
        printf("    MISMATCH %s[%lld]: analytic %.6e numeric %.6e\n", t.name,
               (long long)(idx - t.offset), ana, num);
      }
    }
    /* The whole sampled tensor must also agree in norm (guards against a gradient
     * that is consistently off by a small factor inside the per-entry tolerance). */
    const double tensor_rel = sqrt(diff_norm) / (sqrt(ana_norm) + 1e-12);
    if (ana_norm > 1e-12 && tensor_rel > worst_tensor) worst_tensor = tensor_rel;
    if (ana_norm > 1e-12 && tensor_rel > tensor_rtol) {
      nbad++;
      printf("    MISMATCH %s: ||num - ana|| / ||ana|| = %.3e\n", t.name, tensor_rel);
    }
    assert_true(ana_norm > 0.0 || num_norm < 1e-10);
  }
  assert_int_equal(rt_model_params_set(m, p), CG_OK);
  printf("    %d entries checked, worst |num-ana| / (atol + rtol|ana|) = %.3f at %s; worst "
         "tensor ||num-ana||/||ana|| = %.2e\n", nchecked, worst, worst_name, worst_tensor);
  assert_int_equal(nbad, 0);

  free(p);
  free(grad);
  rt_model_destroy(&m);
  cg_backend_destroy(&be);
  rt_local_free(&loc);
  graph_free(&g);
}

#define CASE_FN_IN(fname, K, L, LN, ML, P, F, PIN)                  \
  static void fname(void **state) {                                \
    (void)state;                                                   \
    struct gc_case c = {K, L, LN, ML, P, F, PIN};                  \
    run_case(&c);                                                  \
  }
#define CASE_FN(fname, K, L, LN, ML, P, F) CASE_FN_IN(fname, K, L, LN, ML, P, F, -1.0f)

CASE_FN(gcn2, RT_MODEL_GCN, 2, 0, 0, 0.0f, 7)
CASE_FN(gcn3, RT_MODEL_GCN, 3, 0, 0, 0.0f, 7)
CASE_FN(gcn2_ln, RT_MODEL_GCN, 2, 1, 0, 0.0f, 7)
CASE_FN(gcn3_ln, RT_MODEL_GCN, 3, 1, 0, 0.0f, 7)
CASE_FN(gcn2_aggfirst, RT_MODEL_GCN, 2, 0, 0, 0.0f, 4)
CASE_FN(gcn3_ln_aggfirst, RT_MODEL_GCN, 3, 1, 0, 0.0f, 4)
CASE_FN(sage2, RT_MODEL_SAGE, 2, 0, 0, 0.0f, 7)
CASE_FN(sage3, RT_MODEL_SAGE, 3, 0, 0, 0.0f, 7)
CASE_FN(sage2_ln, RT_MODEL_SAGE, 2, 1, 0, 0.0f, 7)
CASE_FN(sage3_ln, RT_MODEL_SAGE, 3, 1, 0, 0.0f, 7)
CASE_FN(sage2_aggfirst, RT_MODEL_SAGE, 2, 0, 0, 0.0f, 4)
CASE_FN(sage3_ln_aggfirst, RT_MODEL_SAGE, 3, 1, 0, 0.0f, 4)
CASE_FN(gcn2_multilabel, RT_MODEL_GCN, 2, 0, 1, 0.0f, 7)
CASE_FN(sage3_ln_multilabel, RT_MODEL_SAGE, 3, 1, 1, 0.0f, 4)
CASE_FN(gcn3_ln_dropout, RT_MODEL_GCN, 3, 1, 0, 0.3f, 7)
CASE_FN(gcn2_dropout_aggfirst, RT_MODEL_GCN, 2, 0, 0, 0.3f, 4)
CASE_FN(sage2_dropout, RT_MODEL_SAGE, 2, 0, 0, 0.3f, 7)
CASE_FN(sage3_ln_dropout_aggfirst, RT_MODEL_SAGE, 3, 1, 0, 0.3f, 4)
/* dropout on hidden layers only: layer 0 uses the Â·X computed at creation */
CASE_FN_IN(gcn3_ln_dropout_cached, RT_MODEL_GCN, 3, 1, 0, 0.3f, 7, 0.0f)
CASE_FN_IN(sage2_dropout_cached, RT_MODEL_SAGE, 2, 0, 0, 0.3f, 7, 0.0f)
/* input dropout differs from the hidden layers' */
CASE_FN_IN(gcn2_dropout_input_other, RT_MODEL_GCN, 2, 0, 0, 0.3f, 7, 0.6f)

/* The layer order switches with the widths (the cases above rely on it to cover
 * both orders: 7 features -> 6 hidden is transform-first, 4 -> 6 aggregate-first). */
static void layer_order(void **state) {
  (void)state;
  struct graph g;
  assert_int_equal(tg_make(&g, N_NODES, 7, N_CLASS, 0, 5), 0);
  struct rt_local loc;
  assert_int_equal(rt_local_from_graph(&g, RT_MODEL_GCN, &loc), CG_OK);
  struct cg_backend *be = NULL;
  assert_int_equal(cg_backend_cpu_create(1, &be), CG_OK);
  struct rt_config cfg;
  rt_config_defaults(&cfg);
  cfg.layers = 3;
  cfg.hidden = 6;
  struct rt_model *m = NULL;
  assert_int_equal(rt_model_create(be, &loc, &cfg, NULL, &m), CG_OK);
  assert_int_equal(rt_model_layer_transform_first(m, 0), 1); /* 7 -> 6 */
  assert_int_equal(rt_model_layer_transform_first(m, 1), 0); /* 6 -> 6 */
  assert_int_equal(rt_model_layer_transform_first(m, 2), 1); /* 6 -> 4 */
  rt_model_destroy(&m);
  cfg.hidden = 12;
  assert_int_equal(rt_model_create(be, &loc, &cfg, NULL, &m), CG_OK);
  assert_int_equal(rt_model_layer_transform_first(m, 0), 0); /* 7 -> 12 */
  rt_model_destroy(&m);
  cfg.hidden = 6;
  cfg.input_dropout = 0.0f; /* layer 0 aggregates once, whatever the widths */
  assert_int_equal(rt_model_create(be, &loc, &cfg, NULL, &m), CG_OK);
  assert_int_equal(rt_model_layer_transform_first(m, 0), 0);
  assert_int_equal(rt_model_layer_transform_first(m, 2), 1);
  rt_model_destroy(&m);
  cg_backend_destroy(&be);
  rt_local_free(&loc);
  graph_free(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(layer_order),
      cmocka_unit_test(gcn2),
      cmocka_unit_test(gcn3),
      cmocka_unit_test(gcn2_ln),
      cmocka_unit_test(gcn3_ln),
      cmocka_unit_test(gcn2_aggfirst),
      cmocka_unit_test(gcn3_ln_aggfirst),
      cmocka_unit_test(sage2),
      cmocka_unit_test(sage3),
      cmocka_unit_test(sage2_ln),
      cmocka_unit_test(sage3_ln),
      cmocka_unit_test(sage2_aggfirst),
      cmocka_unit_test(sage3_ln_aggfirst),
      cmocka_unit_test(gcn2_multilabel),
      cmocka_unit_test(sage3_ln_multilabel),
      cmocka_unit_test(gcn3_ln_dropout),
      cmocka_unit_test(gcn2_dropout_aggfirst),
      cmocka_unit_test(sage2_dropout),
      cmocka_unit_test(sage3_ln_dropout_aggfirst),
      cmocka_unit_test(gcn3_ln_dropout_cached),
      cmocka_unit_test(sage2_dropout_cached),
      cmocka_unit_test(gcn2_dropout_input_other),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
