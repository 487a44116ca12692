/* runtime/tests/test_gat_gradcheck.c — the whole GAT model (runtime/model_gat.c)
 * against an independent reference.
 *
 * 1. Forward: the model's loss equals a double-precision host reference written from
 *    the paper's formulas (per head W h, el = a_src·Wh_u, er = a_dst·Wh_v, LeakyReLU
 *    0.2, softmax over v's in-neighbours and v itself, heads concatenated then ELU in
 *    hidden layers, averaged in the output layer, bias), with the feature dropout mask
 *    of core/philox.h and the attention dropout mask of core/attn.h (keyed by global
 *    source and destination ids) applied by the reference itself.
 * 2. Backward: central finite differences of the model's loss w.r.t. every parameter
 *    tensor (weights, both attention vectors, biases; up to 40 sampled entries each)
 *    equal the analytic flat gradient — for 2 and 3 layers, one and several output
 *    heads, with and without both dropouts, single- and multi-label. A difference
 *    whose step moves an attention logit across LeakyReLU's kink is skipped (the
 *    reference's logit signs at p - eps, p and p + eps are compared); at most a few
 *    are, and the count is printed.
 * 3. Dropout: the same mask again gives the same loss bit for bit; no dropout, or
 *    another epoch, another loss. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/attn.h"
#include "core/philox.h"
#include "core/status.h"
#include "runtime/runtime.h"
#include "test_graph_util.h"

#define N_NODES 24
#define N_CLASS 3
#define N_FEAT 5

struct gat_case {
  int layers, heads, out_heads, hidden, multilabel;
  float dropout, attn_dropout;
};

static int find_tensor(const struct rt_model *m, const char *name, struct rt_tensor_info *out) {
  for (int i = 0; i < rt_model_num_tensors(m); i++) {
    assert_int_equal(rt_model_tensor(m, i, out), CG_OK);
    if (strcmp(out->name, name) == 0) return 1;
  }
  return 0;
}

/* The reference loss; *signs (when not NULL) gets one byte per attention logit (the
 * sign of its LeakyReLU input), in a fixed order, so that two calls can be compared. */
static double ref_margin_; /* the smallest |LeakyReLU input| of the last ref_loss call */

static double ref_loss(const struct graph *g, const struct rt_model *m, const struct rt_config *cfg,
                       const float *params, int train, uint32_t epoch, uint8_t *signs) {
  const int64_t n = g->n;
  ref_margin_ = INFINITY;
  int64_t fin = g->feat_dim, nsign = 0;
  double *h = calloc((size_t)(n * fin), sizeof(double));
  for (int64_t i = 0; i < n * fin; i++) h[i] = g->feat_values[i];
  for (int l = 0; l < cfg->layers; l++) {
    const int last = l == cfg->layers - 1;
    const int64_t H = last ? cfg->out_heads : cfg->heads, F = last ? g->num_classes : cfg->hidden;
    const int64_t W = H * F, fout = last ? F : W;
    struct rt_tensor_info tw, tal, tar, tb;
    char name[32];
    snprintf(name, sizeof name, "conv%d.weight", l);
    assert_true(find_tensor(m, name, &tw));
    assert_int_equal(tw.rows, fin);
    assert_int_equal(tw.cols, W);
    snprintf(name, sizeof name, "conv%d.att_src", l);
    assert_true(find_tensor(m, name, &tal));
    snprintf(name, sizeof name, "conv%d.att_dst", l);
    assert_true(find_tensor(m, name, &tar));
    assert_int_equal(tal.count, W);
    assert_int_equal(tar.count, W);
    snprintf(name, sizeof name, "conv%d.bias", l);
    assert_true(find_tensor(m, name, &tb));
    assert_int_equal(tb.count, fout);
    const float pl = rt_config_layer_dropout(cfg, l), pa = rt_config_attn_dropout(cfg);
    if (train && pl > 0.0f)
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < fin; j++) {
          const float u = cg_dropout_uniform(cfg->seed, epoch, (uint32_t)l, (uint32_t)i, (uint32_t)j);
          h[i * fin + j] = cg_dropout_keep(u, pl) ? h[i * fin + j] / (1.0 - pl) : 0.0;
        }
    double *wh = calloc((size_t)(n * W), sizeof(double)), *el = calloc((size_t)(n * H), sizeof(double)),
           *er = calloc((size_t)(n * H), sizeof(double)), *z = calloc((size_t)(n * fout), sizeof(double));
    for (int64_t i = 0; i < n; i++)
      for (int64_t c = 0; c < W; c++) {
        double s = 0.0;
        for (int64_t j = 0; j < fin; j++) s += h[i * fin + j] * params[tw.offset + j * W + c];
        wh[i * W + c] = s;
      }
    for (int64_t i = 0; i < n; i++)
      for (int64_t hh = 0; hh < H; hh++)
        for (int64_t f = 0; f < F; f++) {
          el[i * H + hh] += wh[i * W + hh * F + f] * params[tal.offset + hh * F + f];
          er[i * H + hh] += wh[i * W + hh * F + f] * params[tar.offset + hh * F + f];
        }
    for (int64_t v = 0; v < n; v++) {
      /* in-neighbours of v, and v itself */
      const int64_t deg = g->rowptr[v + 1] - g->rowptr[v] + 1;
      int64_t *nb = malloc((size_t)deg * sizeof(int64_t));
      for (int64_t k = 0; k < deg - 1; k++) nb[k] = g->colidx[g->rowptr[v] + k];
      nb[deg - 1] = v;
      double *y = calloc((size_t)W, sizeof(double)), *e = malloc((size_t)deg * sizeof(double));
      for (int64_t hh = 0; hh < H; hh++) {
        double mx = -INFINITY, sum = 0.0;
        for (int64_t k = 0; k < deg; k++) {
          const double pre = el[nb[k] * H + hh] + er[v * H + hh];
          if (signs) signs[nsign] = pre > 0.0;
          ref_margin_ = fmin(ref_margin_, fabs(pre));
          nsign++;
          e[k] = pre > 0.0 ? pre : 0.2 * pre;
          mx = fmax(mx, e[k]);
        }
        for (int64_t k = 0; k < deg; k++) sum += exp(e[k] - mx);
        for (int64_t k = 0; k < deg; k++) {
          double a = exp(e[k] - mx) / sum;
          if (train && pa > 0.0f) {
            const float u = cg_attn_dropout_uniform(cfg->seed, epoch, (uint32_t)l, (uint32_t)nb[k],
                                                    (uint32_t)v, hh);
            a = cg_dropout_keep(u, pa) ? a / (1.0 - pa) : 0.0;
          }
          for (int64_t f = 0; f < F; f++) y[hh * F + f] += a * wh[nb[k] * W + hh * F + f];
        }
      }
      for (int64_t o = 0; o < fout; o++) {
        double s = params[tb.offset + o];
        if (last) {
          for (int64_t hh = 0; hh < H; hh++) s += y[hh * F + o] / (double)H;
        } else {
          s += y[o];
        }
        z[v * fout + o] = last ? s : (s > 0.0 ? s : expm1(s));
      }
      free(nb);
      free(y);
      free(e);
    }
    free(h);
    free(wh);
    free(el);
    free(er);
    h = z;
    fin = fout;
  }
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

static void run_case(const struct gat_case *tc) {
  struct graph g;
  assert_int_equal(tg_make(&g, N_NODES, N_FEAT, N_CLASS, tc->multilabel, 4242), 0);
  struct rt_config cfg;
  rt_config_defaults(&cfg);
  cfg.model = RT_MODEL_GAT;
  cfg.layers = tc->layers;
  cfg.hidden = tc->hidden;
  cfg.heads = tc->heads;
  cfg.out_heads = tc->out_heads;
  cfg.dropout = tc->dropout;
  cfg.attn_dropout = tc->attn_dropout;
  cfg.weight_decay = 0.0f;
  cfg.seed = 31;
  struct rt_local loc;
  assert_int_equal(rt_local_from_graph(&g, cfg.model, &loc), CG_OK);
  struct cg_backend *be = NULL;
  assert_int_equal(cg_backend_cpu_create(1, &be), CG_OK);
  struct rt_model *m = NULL;
  if (rt_model_create(be, &loc, &cfg, NULL, &m) != CG_OK) fail_msg("rt_model_create: %s", cg_err_msg());
  const int64_t np = rt_model_num_params(m);
  float *p = malloc((size_t)np * sizeof(float)), *grad = malloc((size_t)np * sizeof(float));
  assert_int_equal(rt_model_params_get(m, p), CG_OK);
  /* Generic biases (not 0), every term matters. LeakyReLU has a kink at 0: of 100
   * perturbations of the initial values keep the one whose attention logits stay
   * farthest from it, so that few finite-difference steps cross it. */
  const int train = tc->dropout > 0.0f || tc->attn_dropout > 0.0f;
  const uint32_t epoch = 5;
  float *p0 = malloc((size_t)np * sizeof(float));
  memcpy(p0, p, (size_t)np * sizeof(float));
  uint64_t s = 0, best_seed = 0;
  double best = -1.0;
  for (uint64_t t = 0; t < 100; t++) {
    s = 1000 + t;
    for (int64_t i = 0; i < np; i++) p[i] = p0[i] + (float)(0.3 * (2.0 * tg_unit(&s) - 1.0));
    (void)ref_loss(&g, m, &cfg, p, train, epoch, NULL);
    if (ref_margin_ > best) {
      best = ref_margin_;
      best_seed = 1000 + t;
    }
  }
  s = best_seed;
  for (int64_t i = 0; i < np; i++) p[i] = p0[i] + (float)(0.3 * (2.0 * tg_unit(&s) - 1.0));
  free(p0);
  assert_int_equal(rt_model_params_set(m, p), CG_OK);

  double loss = 0.0, again = 0.0;
  assert_int_equal(rt_model_loss_grad(m, epoch, train, &loss, NULL), CG_OK);
  assert_int_equal(rt_model_grads_get(m, grad), CG_OK);
  const double ref = ref_loss(&g, m, &cfg, p, train, epoch, NULL);
  printf("  gat layers=%d heads=%d out-heads=%d hidden=%d ml=%d dropout=%.1f attn=%.1f: loss %.7f "
         "ref %.7f |diff| %.2e (logits >= %.1e from the kink)\n", tc->layers, tc->heads, tc->out_heads,
         tc->hidden, tc->multilabel, (double)tc->dropout, (double)tc->attn_dropout, loss, ref,
         fabs(loss - ref), best);
  assert_true(fabs(loss - ref) <= 1e-6 + 1e-5 * fabs(ref));
  assert_int_equal(rt_model_loss(m, epoch, train, &again), CG_OK);
  assert_true(again == loss);
  if (train) {
    double nodrop = 0.0, other = 0.0;
    assert_int_equal(rt_model_loss(m, epoch, 0, &nodrop), CG_OK);
    assert_int_equal(rt_model_loss(m, epoch + 1, 1, &other), CG_OK);
    assert_true(fabs(nodrop - loss) > 1e-4);
    assert_true(fabs(other - loss) > 1e-4);
  }

  /* the reference's logit signs, to skip steps across LeakyReLU's kink */
  int64_t nsign = 0;
  for (int64_t v = 0; v < g.n; v++) nsign += g.rowptr[v + 1] - g.rowptr[v] + 1;
  nsign *= (cfg.heads > cfg.out_heads ? cfg.heads : cfg.out_heads) * cfg.layers;
  uint8_t *sg0 = calloc((size_t)nsign, 1), *sgp = calloc((size_t)nsign, 1), *sgm = calloc((size_t)nsign, 1);
  (void)ref_loss(&g, m, &cfg, p, train, epoch, sg0);

  const double eps = 1e-3, rtol = 2e-2, atol = 2e-4;
  double worst = 0.0;
  char worst_name[48] = "";
  int nbad = 0, nchecked = 0, nskipped = 0;
  for (int ti = 0; ti < rt_model_num_tensors(m); ti++) {
    struct rt_tensor_info t;
    assert_int_equal(rt_model_tensor(m, ti, &t), CG_OK);
    const int64_t nsample = t.count < 40 ? t.count : 40;
    double ana_norm = 0.0, diff_norm = 0.0;
    for (int64_t k = 0; k < nsample; k++) {
      const int64_t idx = t.offset + (t.count <= 40 ? k : (int64_t)(tg_next(&s) % (uint64_t)t.count));
      const float orig = p[idx];
      double lp = 0.0, lm = 0.0;
      p[idx] = orig + (float)eps;
      const double dp = (double)p[idx] - orig;
      (void)ref_loss(&g, m, &cfg, p, train, epoch, sgp);
      assert_int_equal(rt_model_params_set(m, p), CG_OK);
      assert_int_equal(rt_model_loss(m, epoch, train, &lp), CG_OK);
      p[idx] = orig - (float)eps;
      const double dm = orig - (double)p[idx];
      (void)ref_loss(&g, m, &cfg, p, train, epoch, sgm);
      assert_int_equal(rt_model_params_set(m, p), CG_OK);
      assert_int_equal(rt_model_loss(m, epoch, train, &lm), CG_OK);
      p[idx] = orig;
      if (memcmp(sg0, sgp, (size_t)nsign) || memcmp(sg0, sgm, (size_t)nsign)) {
        nskipped++;
        continue;
      }
      const double num = (lp - lm) / (dp + dm), ana = grad[idx], err = fabs(num - ana);
      const double rel = err / (atol + rtol * fabs(ana));
      ana_norm += ana * ana;
      diff_norm += err * err;
      nchecked++;
      if (rel > worst) {
        worst = rel;
        snprintf(worst_name, sizeof worst_name, "%s[%lld]", t.name, (long long)(idx - t.offset));
      }
      if (rel > 1.0) {
        nbad++;
        printf("    MISMATCH %s[%lld]: analytic %.6e numeric %.6e\n", t.name, (long long)(idx - t.offset),
               ana, num);
      }
    }
    /* the whole sampled tensor agrees in norm too (a gradient off by a small factor
     * everywhere), beyond the differences' float noise (~1e-4 an entry) */
    const double tensor_rel = sqrt(diff_norm) / (2e-3 * sqrt(ana_norm) + 1e-4 * sqrt((double)nsample));
    if (tensor_rel > 1.0) {
      nbad++;
      printf("    MISMATCH %s: ||num - ana|| = %.3e, ||ana|| = %.3e\n", t.name, sqrt(diff_norm),
             sqrt(ana_norm));
    }
  }
  assert_int_equal(rt_model_params_set(m, p), CG_OK);
  printf("    %d entries checked, %d skipped (a step across a LeakyReLU kink), worst |num-ana| / "
         "(atol + rtol|ana|) = %.3f at %s\n", nchecked, nskipped, worst, worst_name);
  assert_int_equal(nbad, 0);
  assert_true(nskipped * 4 <= nchecked);

  free(sg0);
  free(sgp);
  free(sgm);
  free(p);
  free(grad);
  rt_model_destroy(&m);
  cg_backend_destroy(&be);
  rt_local_free(&loc);
  graph_free(&g);
}

#define CASE(fname, L, H, K, HID, ML, P, PA)                  \
  static void fname(void **state) {                           \
    (void)state;                                              \
    struct gat_case c = {L, H, K, HID, ML, P, PA};            \
    run_case(&c);                                             \
  }
CASE(gat2, 2, 3, 1, 4, 0, 0.0f, 0.0f)
CASE(gat2_outheads, 2, 2, 3, 3, 0, 0.0f, 0.0f)
CASE(gat3_dropout, 3, 2, 2, 3, 0, 0.3f, 0.4f)
CASE(gat2_attn_dropout_only, 2, 3, 1, 4, 0, 0.0f, 0.5f)
CASE(gat1, 1, 1, 2, 4, 0, 0.2f, 0.2f)
CASE(gat2_multilabel, 2, 2, 1, 3, 1, 0.3f, 0.3f)

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gat2),         cmocka_unit_test(gat2_outheads),
      cmocka_unit_test(gat3_dropout), cmocka_unit_test(gat2_attn_dropout_only),
      cmocka_unit_test(gat1),         cmocka_unit_test(gat2_multilabel),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
