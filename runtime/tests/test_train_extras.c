/* runtime/tests/test_train_extras.c — the learning-rate schedules (rt_lr_at, against
 * values worked out by hand from torch's StepLR and CosineAnnealingLR), the two early
 * stopping rules on given loss sequences (patience; Kipf & Welling's window, its
 * `cost_val[-1] > np.mean(cost_val[-(N+1):-1])` at 0-based epoch > N), early stopping
 * in a run (it ends the run at the epoch the rule names, the summary says so), SGD
 * learning (the loss falls; momentum changes the run), and --save-best's checkpoint
 * (the best epoch's parameters: the model rebuilt from it evaluates to the best
 * epoch's accuracies, bit for bit). CPU backend. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/log.h"
#include "core/ops.h"
#include "core/status.h"
#include "graph/graph.h"
#include "runtime/runtime.h"
#include "runtime/runtime_internal.h"

static void close_to(double got, double want, const char *what) {
  if (fabs(got - want) > 1e-6 * fabs(want) + 1e-9) fail_msg("%s: %.9g, expected %.9g", what, got, want);
}

static void test_lr_schedules(void **state) {
  (void)state;
  struct rt_config c;
  rt_config_defaults(&c);
  c.lr = 0.1f;
  c.epochs = 10;
  for (int t = 1; t <= 10; t++) close_to(rt_lr_at(&c, t), 0.1f, "none");
  /* StepLR(step_size 3, gamma 0.5), stepped after each epoch: epochs 1-3 at 0.1, 4-6 at
   * 0.05, 7-9 at 0.025, 10 at 0.0125 */
  c.lr_schedule = RT_LR_STEP;
  c.lr_step_size = 3;
  c.lr_gamma = 0.5f;
  const double step[10] = {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125};
  for (int t = 1; t <= 10; t++) close_to(rt_lr_at(&c, t), (float)step[t - 1], "step");
  /* CosineAnnealingLR(T_max 10): epoch t uses 0.1 (1 + cos(pi (t-1) / 10)) / 2: 0.1 first,
   * 0.05 at t = 6, 0.1 (1 + cos(0.9 pi)) / 2 = 0.00244717 at t = 10 */
  c.lr_schedule = RT_LR_COSINE;
  close_to(rt_lr_at(&c, 1), 0.1f, "cosine t=1");
  close_to(rt_lr_at(&c, 6), 0.05f, "cosine t=6");
  close_to(rt_lr_at(&c, 10), (float)0.0024471741852423235, "cosine t=10");
  /* --lr-epochs: the span, not --epochs (a run stopped at 5 of a 10-epoch schedule) */
  c.epochs = 5;
  c.lr_epochs = 10;
  close_to(rt_lr_at(&c, 6), 0.05f, "cosine over lr-epochs");
  /* warm-up 4: 0.025, 0.05, 0.075, 0.1, then the cosine over the 6 steps left */
  c.lr_warmup = 4;
  close_to(rt_lr_at(&c, 1), 0.025f, "warm-up 1");
  close_to(rt_lr_at(&c, 3), 0.075f, "warm-up 3");
  close_to(rt_lr_at(&c, 4), 0.1f, "warm-up 4");
  close_to(rt_lr_at(&c, 5), 0.1f, "after warm-up");
  close_to(rt_lr_at(&c, 8), 0.05f, "cosine after warm-up (u = 3 of 6)");
  assert_int_equal(rt_config_check(&c), CG_OK);
  c.lr_warmup = 10;
  assert_int_equal(rt_config_check(&c), CG_ERR_ARG); /* the warm-up must be shorter than the span */
  c.lr_warmup = 0;
  c.lr_schedule = RT_LR_STEP;
  c.lr_step_size = 0;
  assert_int_equal(rt_config_check(&c), CG_ERR_ARG); /* step needs a step size */
  printf("  step, cosine, --lr-epochs and warm-up as worked out by hand\n");
}

/* Feeds the losses; returns the 1-based evaluation the rule stopped at, 0 if none. */
static int stops_at_acc(const struct rt_config *cfg, const double *loss, const double *acc, int n) {
  struct rt_early_stop es;
  assert_int_equal(rt_early_stop_init(&es, cfg), CG_OK);
  int at = 0;
  for (int i = 0; i < n && !at; i++)
    if (rt_early_stop_update(&es, loss[i], acc ? acc[i] : 0.5)) at = i + 1;
  rt_early_stop_free(&es);
  return at;
}
static int stops_at(const struct rt_config *cfg, const double *loss, int n) {
  return stops_at_acc(cfg, loss, NULL, n);
}

static void test_early_stop_rules(void **state) {
  (void)state;
  struct rt_config c;
  rt_config_defaults(&c);
  c.early_stop = 3;
  /* patience 3: best 0.8 at evaluation 4, then three without a lower loss (0.8 again
   * does not count as lower) */
  const double p[] = {1.0, 0.9, 0.95, 0.8, 0.85, 0.8, 0.81, 0.7};
  assert_int_equal(stops_at(&c, p, 8), 7);
  const double falling[] = {1.0, 0.9, 0.8, 0.7, 0.6, 0.5};
  assert_int_equal(stops_at(&c, falling, 6), 0);
  /* window 3 (Kipf & Welling): 0-based epoch e > 3, i.e. from evaluation 5 on, stop when
   * the loss exceeds the mean of the 3 before it. Evaluation 4 (0.99 > mean(1.0, 0.9,
   * 0.8) = 0.9) is too early; evaluation 5: 0.85 vs mean(0.9, 0.8, 0.99) = 0.8967: goes
   * on; evaluation 6: 0.9 vs mean(0.8, 0.99, 0.85) = 0.88: stops. */
  c.early_stop_rule = RT_ES_WINDOW;
  const double w[] = {1.0, 0.9, 0.8, 0.99, 0.85, 0.9, 0.1};
  assert_int_equal(stops_at(&c, w, 7), 6);
  assert_int_equal(stops_at(&c, falling, 6), 0);
  /* equal to the mean is not greater: goes on */
  const double flat[] = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  assert_int_equal(stops_at(&c, flat, 7), 0);
  /* gat 3 (Velickovic et al.): a loss <= the lowest or an accuracy >= the highest resets
   * the count. Evaluation 2: loss down; 3: accuracy up (loss up); 4: equal accuracy 0.7
   * (>= counts); 5, 6: neither (loss 0.85 > 0.8 lowest, accuracy 0.6 < 0.7); 7: loss 0.8
   * equals the lowest: reset; 8, 9, 10: neither: stops at 10. Patience on the same losses
   * (no new strictly lower loss after evaluation 2) stops at 5. */
  c.early_stop_rule = RT_ES_GAT;
  const double gl[] = {1.0, 0.8, 0.9, 0.95, 0.85, 0.9, 0.8, 0.81, 0.82, 0.83, 0.1};
  const double ga[] = {0.5, 0.5, 0.7, 0.7, 0.6, 0.6, 0.1, 0.6, 0.6, 0.6, 0.9};
  assert_int_equal(stops_at_acc(&c, gl, ga, 11), 10);
  assert_int_equal(stops_at_acc(&c, falling, NULL, 6), 0);
  c.early_stop_rule = RT_ES_PATIENCE;
  assert_int_equal(stops_at_acc(&c, gl, ga, 11), 5);
  printf("  patience stops at evaluation 7, window at 6, gat at 10, as worked out by hand\n");
}

static void base(struct rt_config *cfg) {
  rt_config_defaults(cfg);
  cfg->graph = "synth:small";
  cfg->epochs = 60;
  cfg->device = "cpu";
  cfg->threads = 2;
  cfg->quiet = 1;
  cfg->seed = 5;
  cg_log_set_level(CG_LOG_WARN);
}

static void test_early_stop_run(void **state) {
  (void)state;
  struct rt_config cfg;
  base(&cfg);
  cfg.lr = 0.05f; /* overfits synth:small quickly, so the validation loss turns */
  cfg.dropout = 0.0f;
  cfg.weight_decay = 0.0f;
  cfg.epochs = 200;
  cfg.early_stop = 5;
  struct rt_result es, full;
  assert_int_equal(rt_run(&cfg, &es), CG_OK);
  assert_int_equal(es.stopped_early, 1);
  assert_true(es.epochs_run < 200);
  /* the same run as without the rule up to the stop, and that run goes on past it */
  cfg.early_stop = 0;
  cfg.epochs = es.epochs_run + 3;
  assert_int_equal(rt_run(&cfg, &full), CG_OK);
  assert_int_equal(full.epochs_run, es.epochs_run + 3);
  assert_int_equal(full.stopped_early, 0);
  for (int e = 0; e < es.epochs_run; e++) assert_true(es.loss[e] == full.loss[e]);
  assert_true(es.best_epoch >= 1 && es.best_epoch <= es.epochs_run);
  printf("  patience 5: stopped after epoch %d of 200 (best val acc %.4f at epoch %d)\n", es.epochs_run,
         es.best_val_acc, es.best_epoch);
  rt_result_free(&full);
  rt_result_free(&es);
}

static void test_sgd_run(void **state) {
  (void)state;
  struct rt_config cfg;
  base(&cfg);
  cfg.optimizer = RT_OPT_SGD;
  cfg.lr = 0.5f;
  struct rt_result plain, mom;
  assert_int_equal(rt_run(&cfg, &plain), CG_OK);
  cfg.momentum = 0.9f;
  cfg.lr = 0.05f;
  cfg.lr_schedule = RT_LR_COSINE;
  assert_int_equal(rt_run(&cfg, &mom), CG_OK);
  printf("  sgd lr 0.5: loss %.4f -> %.4f, test acc %.4f; momentum 0.9, lr 0.05 cosine: %.4f -> %.4f, test acc %.4f\n",
         plain.loss[0], plain.loss[59], plain.final_test_acc, mom.loss[0], mom.loss[59], mom.final_test_acc);
  assert_true(plain.loss[59] < 0.8 * plain.loss[0]);
  assert_true(mom.loss[59] < 0.8 * mom.loss[0]);
  assert_true(plain.loss[0] == mom.loss[0]); /* same weights and masks before the first update */
  assert_true(plain.loss[1] != mom.loss[1]);
  rt_result_free(&plain);
  rt_result_free(&mom);
}

static void test_save_best(void **state) {
  (void)state;
  char dir[] = "/tmp/capgnn_best_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char best[256];
  snprintf(best, sizeof best, "%s/best.ckpt", dir);
  struct rt_config cfg;
  base(&cfg);
  cfg.epochs = 40;
  cfg.eval_every = 2;
  cfg.lr = 0.05f; /* overfits: the best epoch comes before the last */
  cfg.dropout = 0.0f;
  cfg.weight_decay = 0.0f;
  cfg.save_best_path = best;
  struct rt_result r;
  assert_int_equal(rt_run(&cfg, &r), CG_OK);
  struct rt_checkpoint c;
  assert_int_equal(rt_checkpoint_read(best, &c), CG_OK);
  assert_int_equal(c.epoch, r.best_epoch);
  assert_true(r.best_epoch < 40);
  assert_int_equal(c.best_epoch, r.best_epoch);
  assert_int_equal((int)c.steps, r.best_epoch);
  assert_true(c.best_val_acc == r.best_val_acc && c.test_acc_at_best_val == r.test_acc_at_best_val);
  assert_true(c.final_test_acc == r.test_acc_at_best_val); /* the evaluation of that epoch */
  /* the parameters are the best epoch's: the same run with --epochs = best epoch ends
   * with the same ones (its last checkpoint) */
  char last[256];
  snprintf(last, sizeof last, "%s/last.ckpt", dir);
  cfg.save_best_path = NULL;
  cfg.checkpoint_path = last;
  cfg.epochs = r.best_epoch;
  assert_int_equal(rt_run(&cfg, NULL), CG_OK);
  struct rt_checkpoint l;
  assert_int_equal(rt_checkpoint_read(last, &l), CG_OK);
  assert_int_equal(l.num_params, c.num_params);
  assert_memory_equal(l.params, c.params, (size_t)c.num_params * sizeof(float));
  assert_memory_equal(l.adam_m, c.adam_m, (size_t)c.num_params * sizeof(float));
  printf("  --save-best: epoch %d of 40 (val acc %.4f, test acc %.4f); its parameters equal a run of %d epochs\n",
         c.epoch, c.best_val_acc, c.test_acc_at_best_val, c.epoch);
  rt_checkpoint_free(&c);
  rt_checkpoint_free(&l);
  rt_result_free(&r);
  unlink(best);
  unlink(last);
  rmdir(dir);
}

/* A problem without train vertices: rt_train refuses it before building the model (one
 * message), rt_model_create in its own words (the same message at two places, one of
 * them unreachable through rt_train, used to stand for both). */
static void test_no_train_vertices(void **state) {
  (void)state;
  struct rt_config cfg;
  base(&cfg);
  struct graph g;
  assert_int_equal(graph_synth("synth:tiny", &g), CG_OK);
  for (int64_t i = 0; i < g.n; i++)
    if (g.split[i] == GRAPH_SPLIT_TRAIN) g.split[i] = GRAPH_SPLIT_VAL;
  struct rt_local loc;
  assert_int_equal(rt_local_from_graph(&g, cfg.model, &loc), CG_OK);
  assert_int_equal(loc.n_train_global, 0);
  struct cg_backend *be = NULL;
  assert_int_equal(cg_backend_cpu_create(1, &be), CG_OK);
  assert_int_equal(rt_train(be, &loc, NULL, &cfg, NULL, NULL), CG_ERR_ARG);
  assert_non_null(strstr(cg_err_msg(), "has no train vertices (split == 1); cannot train"));
  struct rt_model *m = NULL;
  assert_int_equal(rt_model_create(be, &loc, &cfg, NULL, &m), CG_ERR_ARG);
  assert_null(m);
  if (!strstr(cg_err_msg(), "rt_model_create: the local problem of graph"))
    fail_msg("rt_model_create's refusal is not its own: %s", cg_err_msg());
  cg_err_clear();
  cg_backend_destroy(&be);
  rt_local_free(&loc);
  graph_free(&g);
}

/* A graph whose feat_dim a sparse file does not bound (2^31 - 1, one value per row):
 * layer 0's weights, gradients and Adam moments would take terabytes; refused before
 * they are allocated, naming the count and the memory (it used to allocate and fill
 * them: on a host that overcommits, the process was killed, e.g. a 13 KB file with
 * feat_dim 1e8 under `capgnn train`, exit 137). */
static void test_wide_features_refused(void **state) {
  (void)state;
  struct rt_config cfg;
  base(&cfg);
  struct graph g;
  assert_int_equal(graph_synth("synth:tiny:identity=1", &g), CG_OK);
  g.feat_dim = ((int64_t)1 << 31) - 1;
  struct rt_local loc;
  assert_int_equal(rt_local_from_graph_feat(&g, cfg.model, 1, &loc), CG_OK);
  struct cg_backend *be = NULL;
  assert_int_equal(cg_backend_cpu_create(1, &be), CG_OK);
  struct rt_model *m = NULL;
  assert_int_equal(rt_model_create(be, &loc, &cfg, NULL, &m), CG_ERR_NOMEM);
  assert_null(m);
  printf("  %s\n", cg_err_msg());
  if (!strstr(cg_err_msg(), "(layer 0: 2147483647 features x ") || !strstr(cg_err_msg(), " GB free on "))
    fail_msg("not the model's own refusal: %s", cg_err_msg());
  cg_err_clear();
  cg_backend_destroy(&be);
  rt_local_free(&loc);
  graph_free(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_lr_schedules), cmocka_unit_test(test_early_stop_rules),
                                     cmocka_unit_test(test_early_stop_run), cmocka_unit_test(test_sgd_run),
                                     cmocka_unit_test(test_save_best), cmocka_unit_test(test_no_train_vertices),
                                     cmocka_unit_test(test_wide_features_refused)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
