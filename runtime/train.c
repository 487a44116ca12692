/* runtime/train.c — the training loop: epochs of rt_model_step, the evaluation
 * schedule, the best epoch, the live line and log lines, the stop on request, and
 * when to write metrics records and checkpoints (their contents: runtime/metrics.c
 * and runtime/checkpoint_run.c; the record layout and timer definitions:
 * runtime/runtime.h, rt_train). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/exchange.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/status.h"
#include "core/timer.h"
#include "core/watchdog.h"
#include "runtime/runtime_internal.h"

void rt_result_free(struct rt_result *r) {
  if (!r) return;
  cg_free(r->loss);
  memset(r, 0, sizeof *r);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(const double *v, int n, double *tmp) {
  if (n <= 0) return NAN;
  memcpy(tmp, v, (size_t)n * sizeof(double));
  qsort(tmp, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

/* A stop requested by a signal handler (rt_train_request_stop), honoured between
 * epochs; `active` while a training loop runs. */
static volatile sig_atomic_t train_active, train_stop;

int rt_train_request_stop(void) {
  if (!train_active) return 0;
  train_stop = 1;
  return 1;
}

static void best_consider(struct rt_best *b, const struct rt_eval *ev, int e) {
  if (isnan(ev->val_acc)) return;
  if (b->epoch == 0 || ev->val_acc > b->val_acc || (ev->val_acc == b->val_acc && ev->val_loss < b->val_loss))
    *b = (struct rt_best){ev->val_acc, ev->val_loss, ev->test_acc, e};
}

/* Without --log-every: about 20 lines a run (every 10th epoch of 200). */
static int rt_log_every_auto(int epochs) { return epochs > 20 ? (epochs + 19) / 20 : 1; }

/* What the model line does not say: SGD's momentum, the schedule, early stopping. */
static void rt_train_log_extras(const struct rt_config *cfg) {
  char sched[160] = "";
  if (cfg->lr_schedule == RT_LR_STEP)
    snprintf(sched, sizeof sched, "lr schedule step (x %g every %d epochs)", (double)cfg->lr_gamma, cfg->lr_step_size);
  else if (cfg->lr_schedule == RT_LR_COSINE)
    snprintf(sched, sizeof sched, "lr schedule cosine over %d epochs", cfg->lr_epochs > 0 ? cfg->lr_epochs : cfg->epochs);
  if (cfg->lr_warmup > 0)
    snprintf(sched + strlen(sched), sizeof sched - strlen(sched), "%swarm-up %d epochs", sched[0] ? ", " : "lr ",
             cfg->lr_warmup);
  if (cfg->model == RT_MODEL_GAT) /* what the model line's "hidden" is per head of */
    LOG_INFO("train", "gat: hidden layers %d heads x %lld (concatenated), output layer %d head%s (averaged), "
             "attention dropout %g", cfg->heads, (long long)cfg->hidden, cfg->out_heads, cfg->out_heads == 1 ? "" : "s",
             (double)rt_config_attn_dropout(cfg));
  if (cfg->optimizer == RT_OPT_SGD)
    LOG_INFO("train", "sgd momentum %g", (double)cfg->momentum);
  if (sched[0]) LOG_INFO("train", "%s", sched);
  /* a schedule longer than the run (--lr-epochs > --epochs) is allowed, for a --resume
   * that continues it, but then the run ends above the schedule's last rate: said once */
  const int span = cfg->lr_epochs > 0 ? cfg->lr_epochs : cfg->epochs;
  if (span > cfg->epochs) {
    const double last = (double)rt_lr_at(cfg, cfg->epochs);
    if (cfg->lr_warmup >= cfg->epochs) /* (as long: the warm-up ends with the run, at --lr) */
      LOG_INFO("train", "note: the warm-up (%d epochs) is %s this run (--epochs %d): the learning rate "
               "ends at %g of --lr %g, and the schedule after it does not start (a --resume with more --epochs "
               "continues it)", cfg->lr_warmup, cfg->lr_warmup > cfg->epochs ? "longer than" : "as long as",
               cfg->epochs, last, (double)cfg->lr);
    else
      LOG_INFO("train", "note: the schedule spans %d epochs (--lr-epochs) and this run %d (--epochs): the learning "
               "rate ends at %g of --lr %g (a --resume with more --epochs continues it)", span, cfg->epochs, last,
               (double)cfg->lr);
  }
  if (cfg->early_stop > 0)
    LOG_INFO("train", "early stopping: %d evaluations, rule %s", cfg->early_stop,
             rt_early_stop_rule_str(cfg->early_stop_rule));
  if (cfg->early_stop > 0 && cfg->eval_every > 1) { /* its patience counts evaluations, not epochs */
    const int evals = (cfg->epochs + cfg->eval_every - 1) / cfg->eval_every;
    if (evals <= cfg->early_stop)
      LOG_WARN_COMMON("train", "--early-stop %d counts evaluations, and --epochs %d with --eval-every %d makes %d: "
                      "early stopping cannot end this run (evaluate more often, or give it fewer evaluations)",
                      cfg->early_stop, cfg->epochs, cfg->eval_every, evals);
  }
}

/* One training run between rt_train's set-up and its end. */
struct train_run {
  struct cg_backend *be;
  const struct rt_local *loc;
  struct cg_exchange *ex; /* NULL for a single process; else watched (runtime/stall.c) */
  struct cg_exchange *watched; /* the wrapper of the caller's exchange, released at the end */
  struct cg_exchange *caller_ex; /* the caller's exchange itself: the halo cache's numbers are
                                    read from it (the watch wrapper hides what is behind it) */
  const struct rt_config *cfg;
  struct rt_model *m;
  struct rt_metrics metrics;
  struct rt_result r;
  struct rt_train_track tr;
  double *epoch_s, *tmp;  /* per-epoch step times; scratch of the median */
  double *exposed_s, *hidden_s; /* per-epoch halo exchange times (rank 0's) */
  int e_done;             /* epochs before this run (resumed) */
  double t_start;
  const char *acc_name;   /* "acc", or "f1" for multi-label graphs */
  int live;               /* on a terminal: one live line instead of per-evaluation lines */
  struct cg_progress pr;
  struct rt_cache_track *cache; /* the halo cache's numbers; NULL without one */
  struct rt_ranks *ranks;       /* every rank's times; NULL on one rank */
  struct rt_cache_record cache_epoch;
  struct rt_early_stop es;  /* --early-stop (runtime/early_stop.c) */
  struct rt_best_keep bk;   /* --save-best (runtime/best.c) */
  int ckpt_written;         /* a checkpoint was written by this run */
  int ckpt_failed;          /* the checkpoint the epoch had to write failed (every rank) */
  struct rt_local *owned;   /* rt_train_owned's: loc, whose inputs go once the model is built */
};

/* A graph of one class, or a train split whose vertices all have one class, trains to
 * a trivial model: it predicts that class for every vertex (multi-label: train targets
 * all 0 or all 1, a constant). Said once, at set-up, as a warning, not refused (a test
 * of the pipeline may mean it). The labels are the rank's inner rows, so the extremes
 * are combined over the ranks: every rank calls this (a collective). */
static int train_classes_check(struct train_run *t) {
  const struct rt_local *loc = t->loc;
  const int64_t C = loc->num_classes;
  /* single-label: the largest train label and minus the smallest (-1e18: none here);
   * multi-label: 1 when some train target is 1, when some is 0 */
  double v[2] = {loc->multilabel ? 0.0 : -1e18, loc->multilabel ? 0.0 : -1e18};
  for (int64_t i = 0; i < loc->n_inner; i++) {
    if (loc->split[i] != GRAPH_SPLIT_TRAIN) continue;
    if (loc->multilabel) {
      for (int64_t c = 0; c < C; c++) v[loc->mlabels[i * C + c] ? 0 : 1] = 1.0;
    } else if (loc->labels[i] >= 0) {
      v[0] = fmax(v[0], (double)loc->labels[i]);
      v[1] = fmax(v[1], -(double)loc->labels[i]);
    }
  }
  if (t->ex) TRY(t->ex->allreduce_host(t->ex, v, 2, CG_REDUCE_MAX));
  const long long ntrain = (long long)loc->n_train_global;
  /* --seeds trains the same graph again in this process: said for its first run only */
  static char said_for[512];
  if (strcmp(said_for, loc->name) == 0) return CG_OK;
  snprintf(said_for, sizeof said_for, "%s", loc->name);
  if (loc->multilabel) {
    if (v[0] == 0.0 || v[1] == 0.0)
      LOG_WARN_COMMON("train", "graph %s: every target of its %lld train vertices (split == 1) is %d, in each of its "
                      "%lld label%s: the model learns to say %d for every vertex and label", loc->name, ntrain,
                      v[0] == 0.0 ? 0 : 1, (long long)C, C == 1 ? "" : "s", v[0] == 0.0 ? 0 : 1);
  } else if (C == 1) {
    LOG_WARN_COMMON("train", "graph %s has a single class (num_classes 1): its %lld train vertices (split == 1) "
                    "are all class 0 and the loss is 0 whatever the weights, so training learns nothing (every "
                    "accuracy is 1)", loc->name, ntrain);
  } else if (v[0] >= 0.0 && v[0] == -v[1]) {
    LOG_WARN_COMMON("train", "graph %s: its %lld train vertices (split == 1) all have class %lld, one of its %lld "
                    "classes: the model learns to predict class %lld for every vertex (give the split more classes)",
                    loc->name, ntrain, (long long)v[0], (long long)C, (long long)v[0]);
  }
  return CG_OK;
}

/* The metrics file, the per-epoch arrays and the model, then the two lines that say
 * what is trained. */
static int train_setup(struct train_run *t) {
  const struct rt_local *loc = t->loc;
  const struct rt_config *cfg = t->cfg;
  const int E = cfg->epochs;
  TRY(rt_metrics_open(&t->metrics, loc->rank == 0 ? cfg->metrics_path : NULL,
                      cfg->resume_path != NULL || cfg->metrics_append));
  t->r.epochs = E;
  t->r.loss = cg_calloc((size_t)E, sizeof(double), "per-epoch losses");
  t->epoch_s = cg_calloc((size_t)E, sizeof(double), "per-epoch times");
  t->tmp = cg_calloc((size_t)E, sizeof(double), "median scratch");
  t->exposed_s = cg_calloc((size_t)E, sizeof(double), "per-epoch exchange times");
  t->hidden_s = cg_calloc((size_t)E, sizeof(double), "per-epoch exchange times");
  if (!t->r.loss || !t->epoch_s || !t->tmp || !t->exposed_s || !t->hidden_s) return CG_ERR_NOMEM;
  TRY(rt_model_build(t->be, loc, cfg, t->ex, &t->m));
  if (t->owned) rt_local_release_inputs(t->owned); /* the model has its copies */
  if (t->ex) TRY(rt_ranks_create(E, loc->nranks, &t->ranks));
  t->r.num_params = rt_model_num_params(t->m);
  TRY(rt_early_stop_init(&t->es, cfg));
  TRY(rt_best_keep_init(&t->bk, t->m, loc, cfg));
#ifdef CAPGNN_HAVE_DIST
  TRY(rt_cache_track_create(t->caller_ex, cfg->layers, &t->cache)); /* after the features' exchange */
#endif
  /* a synthetic graph is named by its spec too: "reddit" alone reads as the real one */
  const int synth = cfg->graph && strncmp(cfg->graph, "synth:", 6) == 0;
  LOG_INFO("train", "graph %s%s%s%s: %lld vertices, %lld edges, %lld feature%s, %lld class%s%s; rank %d of %d owns "
           "%lld (+%lld halo)",
           loc->name, synth ? " (" : "", synth ? cfg->graph : "", synth ? ", synthetic)" : "", (long long)loc->n_global,
           (long long)loc->m_global, (long long)loc->feat_dim, loc->feat_dim == 1 ? "" : "s",
           (long long)loc->num_classes, loc->num_classes == 1 ? "" : "es", loc->multilabel ? " (multi-label)" : "", loc->rank,
           loc->nranks, (long long)loc->n_inner, (long long)loc->n_halo);
  char shape[64]; /* (one layer has no hidden width) */
  if (cfg->layers == 1) snprintf(shape, sizeof shape, "1 layer (no hidden layer)");
  else snprintf(shape, sizeof shape, "%d layers, hidden %lld", cfg->layers, (long long)cfg->hidden);
  LOG_INFO("train", "model %s, %s, dropout %g (input %g)%s, %s lr %g wd %g (%s), %lld parameters, device %s",
           rt_model_kind_str(cfg->model), shape, (double)cfg->dropout,
           (double)rt_config_layer_dropout(cfg, 0),
           cfg->layernorm ? ", layernorm" : "", rt_optimizer_str(cfg->optimizer), (double)cfg->lr,
           (double)cfg->weight_decay, rt_wd_scope_str(cfg->wd_scope), (long long)t->r.num_params,
           rt_backend_describe(t->be));
  rt_train_log_extras(cfg);
  TRY(train_classes_check(t));
  t->r.best_val_acc = NAN;
  t->r.test_acc_at_best_val = NAN;
  t->r.final_train_acc = t->r.final_val_acc = t->r.final_test_acc = NAN;
  t->tr = (struct rt_train_track){{NAN, INFINITY, NAN, 0}, NAN};
  t->acc_name = loc->multilabel ? "f1" : "acc";
  return CG_OK;
}

/* The full-graph evaluation after epoch e: the best epoch (and --save-best's copy of
 * it), the early-stopping rule, the result's final values. */
static int train_evaluate(struct train_run *t, int e, int on_schedule, struct rt_eval *ev, double *eval_s) {
  double te = cg_time_now();
  TRY(rt_model_evaluate(t->m, ev, NULL));
  t->be->sync(t->be);
  *eval_s = cg_time_now() - te;
  if (on_schedule) {
    best_consider(&t->tr.best, ev, e);
    if (t->tr.best.epoch == e) { /* a new best: --save-best keeps its weights */
      t->tr.last_val = ev->val_acc;
      rt_best_keep_take(&t->bk, t->m, &t->tr, ev);
    }
    rt_early_stop_update(&t->es, ev->val_loss, ev->val_acc);
  }
  /* The off-schedule last evaluation (e == E, not a multiple of --eval-every) counts
   * for the reported best and for --save-best, so that the file holds the epoch the log
   * and the summary name; not for the tracked best a checkpoint records (a resumed run
   * tracks what an uninterrupted longer one would, which never evaluated here). */
  struct rt_best shown = t->tr.best;
  if (!on_schedule) {
    best_consider(&shown, ev, e);
    if (shown.epoch == e) {
      struct rt_train_track kept = t->tr;
      kept.best = shown;
      kept.last_val = ev->val_acc;
      rt_best_keep_take(&t->bk, t->m, &kept, ev);
    }
  }
  if (shown.epoch > 0) {
    t->r.best_val_acc = shown.val_acc;
    t->r.test_acc_at_best_val = shown.test_acc;
    t->r.best_epoch = shown.epoch;
  }
  t->r.final_train_acc = ev->train_acc;
  t->r.final_val_acc = ev->val_acc;
  t->r.final_test_acc = ev->test_acc;
  t->tr.last_val = ev->val_acc;
  return CG_OK;
}

/* Checkpoints after epoch e: the last (or the one a stop asks for) must be written;
 * an intermediate one that fails (disk full) must not end a long run: every rank got
 * the same answer, all warn and go on, and the previous one stays. */
static int train_checkpoint(struct train_run *t, int e, int stop) {
  const struct rt_config *cfg = t->cfg;
  if (!cfg->checkpoint_path) return CG_OK;
  if (e == cfg->epochs || stop || t->es.stopped) {
    TRY(rt_checkpoint_save(t->m, t->be, t->loc, t->ex, cfg, &t->r, &t->tr, &t->es, e));
    t->ckpt_written = 1;
    return CG_OK;
  }
  if (cfg->checkpoint_every > 0 && e % cfg->checkpoint_every == 0) {
    if (rt_checkpoint_save(t->m, t->be, t->loc, t->ex, cfg, &t->r, &t->tr, &t->es, e) != CG_OK) {
      LOG_WARN_COMMON("train", "epoch %d: %s; training goes on", e, cg_err_msg());
      cg_err_clear();
    } else {
      t->ckpt_written = 1;
    }
  }
  return CG_OK;
}

/* Epoch e: the timed step, the cross-rank sums and extremes, the evaluation when due,
 * the metrics record and the checkpoint. *stop: every rank stops after this epoch.
 * *diverged: the loss is not finite (every rank: it is global); the error says so. */
static int train_epoch(struct train_run *t, int e, int *stop, int *diverged) {
  struct cg_backend *be = t->be;
  const struct rt_config *cfg = t->cfg;
  const int E = cfg->epochs;
  struct rt_step_stats ss;
  cg_watch_mark("the training step", e, -1, 0);
  be->sync(be);
  double t0 = cg_time_now();
  TRY(rt_model_step(t->m, (uint32_t)e, &ss));
  be->sync(be);
  double dt = cg_time_now() - t0;
  t->epoch_s[e - 1] = dt;
  t->exposed_s[e - 1] = ss.comm_exposed_s;
  t->hidden_s[e - 1] = ss.comm_hidden_s;
  t->r.loss[e - 1] = ss.loss;
  if (!isfinite(ss.loss)) {
    *diverged = 1;
    /* epoch 1's loss comes from the initial weights, before any update: the learning
     * rate has not acted yet, the forward pass overflowed (finite inputs near FLT_MAX) */
    if (e == 1)
      return cg_err_set(CG_ERR_ARG, "the loss is not finite at epoch 1, computed with the initial weights before any "
                        "update (not a matter of --lr): the forward pass overflowed float32; are the input "
                        "features of %s very large? scale them down (e.g. --feat-norm row)", t->loc->name);
    return cg_err_set(CG_ERR_ARG, "training diverged: the loss is not finite at epoch %d (try a smaller --lr)", e);
  }

  /* Cross-rank sums and extremes, gathered outside the timed step (every rank
   * takes this path: the loss above is global, so all stop or none). */
  const double compute_s = dt - ss.comm_s;
  /* sums[2]: ranks asked to stop (a signal may reach them in different epochs; the
   * sum makes every rank stop after the same one) */
  double sums[6] = {(double)ss.halo_bytes, (double)ss.allreduce_bytes, (double)train_stop,
                    (double)ss.cache_hits, (double)ss.cache_lookups, /* [3..4]: the job's hit rate */
                    (double)ss.inter_node_bytes};
  double ext[2] = {compute_s, -compute_s}; /* max, -min */
  if (t->ex) TRY(t->ex->allreduce_host(t->ex, sums, 6, CG_REDUCE_SUM));
  *stop = sums[2] > 0 && e < E;
  if (t->ex) TRY(t->ex->allreduce_host(t->ex, ext, 2, CG_REDUCE_MAX));
#ifdef CAPGNN_HAVE_DIST
  if (t->cache) TRY(rt_cache_track_epoch(t->cache, t->caller_ex, &t->cache_epoch));
#endif

  const double *rank_compute = NULL, *rank_comm = NULL;
  TRY(rt_ranks_epoch(t->ranks, t->ex, t->loc->rank, e, compute_s, ss.comm_s, &rank_compute, &rank_comm));

  const int on_schedule = (e % cfg->eval_every) == 0;
  struct rt_eval ev = {NAN, NAN, NAN, NAN, NAN};
  double eval_s = NAN;
  if (on_schedule || e == E) { /* (the best and the early-stopping rule: train_evaluate) */
    cg_watch_mark("the evaluation", e, -1, 0);
    TRY(train_evaluate(t, e, on_schedule, &ev, &eval_s));
  }
  if (t->pr.mode != CG_PROGRESS_OFF) { /* the live line, or a line every --log-every epochs */
    char detail[160];
    char at[32] = ""; /* a resumed run counts its own epochs: name the real one */
    if (t->e_done > 0) snprintf(at, sizeof at, "epoch %d  ", e);
    /* the training step alone; the rate the progress line adds counts wall time, evaluation included */
    snprintf(detail, sizeof detail, "%sloss %.4f  val %s %.4f  step %.1f ms", at, ss.loss, t->acc_name,
             t->tr.last_val, dt * 1e3);
    cg_progress_update_detail(&t->pr, e - t->e_done, detail);
  }
  const struct rt_epoch_record rec = {
      .epoch = e, .loss = ss.loss, .ev = ev, .epoch_s = dt, .compute_s = compute_s,
      .comm_s = ss.comm_s, .comm_exposed_s = ss.comm_exposed_s, .comm_hidden_s = ss.comm_hidden_s,
      .halo_bytes = sums[0], .allreduce_bytes = sums[1], .inter_node_bytes = sums[5],
      .compute_max_s = ext[0], .compute_min_s = -ext[1], .cache_hits = (int64_t)sums[3],
      .cache_lookups = (int64_t)sums[4], .eval_s = eval_s, .seed = t->cfg->seed,
      .cache = t->cache ? &t->cache_epoch : NULL,
      .nranks = t->loc->nranks, .rank_compute_s = rank_compute, .rank_comm_s = rank_comm};
  cg_watch_mark("writing the metrics record", e, -1, 0);
  TRY(rt_metrics_epoch(&t->metrics, &rec));
  cg_watch_mark("writing the checkpoint", e, -1, 0);
  const int cst = train_checkpoint(t, e, *stop);
  t->ckpt_failed = cst != CG_OK;
  return cst;
}

/* Stopped on request after epoch e: say where the state is kept. */
static int train_interrupted(const struct rt_config *cfg, int e) {
  /* the resumed run needs this run's seed (the dropout masks follow it; a run of --seeds
   * has its own): name it unless it is the default, which a resume gets anyway */
  struct rt_config def;
  rt_config_defaults(&def);
  char seed[48] = "";
  if (cfg->seed != def.seed) snprintf(seed, sizeof seed, " --seed %llu", (unsigned long long)cfg->seed);
  /* and its --save-best file (FILE.seedN in a run of --seeds): a resume that finds no
   * better epoch keeps the best weights only there */
  const char *sb = cfg->save_best_path ? cfg->save_best_path : "";
  if (cfg->checkpoint_path)
    /* (--checkpoint too: a resumed run without it saves nothing of its own) */
    return cg_err_set(CG_ERR_INTERRUPTED, "interrupted after epoch %d of %d; checkpoint %s holds it: "
                      "continue with --resume %s --checkpoint %s%s%s%s", e, cfg->epochs, cfg->checkpoint_path,
                      cfg->checkpoint_path, cfg->checkpoint_path, seed, *sb ? " --save-best " : "", sb);
  return cg_err_set(CG_ERR_INTERRUPTED, "interrupted after epoch %d of %d; no checkpoint (pass "
                    "--checkpoint FILE to keep the state when stopped)", e, cfg->epochs);
}

/* After the last epoch the run reached (`last`: --epochs, or earlier when it was
 * stopped or diverged, as `outcome` says): the median epoch time, the closing line
 * and the summary, which a run that stops early writes too. */
static int train_finish(struct train_run *t, int last, const char *outcome) {
  struct rt_result *r = &t->r;
  const char *acc = t->acc_name;
  r->epochs_run = last;
  r->stopped_early = strcmp(outcome, "early_stopped") == 0;
  r->median_epoch_s = median(t->epoch_s + t->e_done, last - t->e_done, t->tmp); /* epochs run here */
  r->median_comm_exposed_s = median(t->exposed_s + t->e_done, last - t->e_done, t->tmp);
  r->median_comm_hidden_s = median(t->hidden_s + t->e_done, last - t->e_done, t->tmp);
  if (rt_local_exchanges(t->loc) && last > t->e_done) /* rank 0's halo exchanges, per epoch */
    LOG_INFO("train", "halo exchange per epoch (median): %.2f ms hidden behind compute, %.2f ms "
             "exposed (overlap %s)", r->median_comm_hidden_s * 1e3, r->median_comm_exposed_s * 1e3,
             t->cfg->overlap ? "on" : "off");
#ifdef CAPGNN_HAVE_DIST
  const struct rt_cache_record *cache = rt_cache_track_totals(t->cache);
#else
  const struct rt_cache_record *cache = NULL;
#endif
  struct rt_rank_times ranks;
  if (rt_ranks_medians(t->ranks, t->e_done, last, t->loc->pred, &ranks) != CG_OK) { /* only what it adds is lost */
    LOG_WARN("train", "the per-rank times were not summarised: %s", cg_err_msg());
    cg_err_clear();
    memset(&ranks, 0, sizeof ranks);
  }
  if (strcmp(outcome, "completed") != 0 && strcmp(outcome, "early_stopped") != 0) {
    /* the caller's error (interrupted, diverged) stays the run's message */
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", cg_err_msg());
    const int status = cg_err_status();
    const int st = rt_metrics_summary(&t->metrics, t->loc, t->be, t->cfg, r, t->e_done, t->t_start, cache, last,
                                       outcome, &ranks);
    if (st != CG_OK) LOG_WARN("train", "the metrics summary of the stopped run was not written: %s", cg_err_msg());
    cg_err_set(status, "%s", msg);
    return st;
  }
  /* a split without test vertices has no test accuracy (NaN): say so rather than "nan" */
  char test[64];
  const double t_acc = r->best_epoch > 0 ? r->test_acc_at_best_val : r->final_test_acc;
  if (isnan(t_acc)) snprintf(test, sizeof test, "no test vertices");
  else snprintf(test, sizeof test, "test %s%s %.4f", acc, r->best_epoch > 0 ? " there" : "", t_acc);
  if (r->best_epoch > 0)
    LOG_INFO("train", "done: best val %s %.4f at epoch %d, %s; median epoch %.2f ms", acc, r->best_val_acc,
             r->best_epoch, test, r->median_epoch_s * 1e3);
  else /* no validation vertices (or no evaluation ran): nothing to select by */
    LOG_INFO("train", "done: no validation vertices, so no best epoch; final train %s %.4f, %s; median "
             "epoch %.2f ms", acc, r->final_train_acc, test, r->median_epoch_s * 1e3);
  return rt_metrics_summary(&t->metrics, t->loc, t->be, t->cfg, r, t->e_done, t->t_start, cache, last, outcome,
                            &ranks);
}

/* What the run needs of the graph's split. The counts are global, the same on every
 * rank, and nothing collective has run yet in rt_train: on P ranks every rank fails here
 * together, so the job ends with one error line (rt_result.ended_together), not with
 * MPI_Abort and each rank's copy of the line. */
static int train_split_check(const struct rt_local *loc, const struct rt_config *cfg) {
  if (loc->n_train_global < 1)
    return cg_err_set(CG_ERR_ARG, "graph %s has no train vertices (split == 1); cannot train", loc->name);
  if (cfg->early_stop > 0 && loc->n_val_global == 0)
    return cg_err_set(CG_ERR_ARG, "--early-stop %d: graph %s has no validation vertices to watch", cfg->early_stop,
                      loc->name);
  return CG_OK;
}

static int train_impl(struct cg_backend *be, const struct rt_local *loc, struct rt_local *owned,
                      struct cg_exchange *ex, const struct rt_config *cfg, const struct rt_checkpoint *resume,
                      struct rt_result *res) {
  int st = CG_OK;
  const int E = cfg->epochs;
  int last = E;          /* the last epoch the run reaches */
  int run_diverged = 0;   /* (last < E does not say it when the last epoch diverged) */
  struct train_run t;
  memset(&t, 0, sizeof t);
  t.be = be;
  t.loc = loc;
  t.owned = owned;
  t.ex = ex;
  t.cfg = cfg;
  t.t_start = cg_time_now();
  if (res) memset(res, 0, sizeof *res);
  if ((resume != NULL) != (cfg->resume_path != NULL))
    return cg_err_set(CG_ERR_ARG, "rt_train: a checkpoint to resume from must be given exactly when "
                      "the configuration names one (resume_path %s)", cfg->resume_path ? cfg->resume_path : "unset");
  st = train_split_check(loc, cfg);
  if (st != CG_OK) {
    if (res) res->ended_together = 1;
    return st;
  }
  if (cfg->resume_path && !cfg->checkpoint_path)
    LOG_WARN_COMMON("train", "--resume %s without --checkpoint: this run saves no checkpoint of its own",
                    cfg->resume_path);
  t.caller_ex = ex;
  if (ex) { /* the stall watchdog sees where this rank waits for the others */
    TRY_GOTO(rt_watch_exchange_wrap(ex, &t.watched), done);
    t.ex = t.watched;
  }
  TRY_GOTO(train_setup(&t), done);
  if (resume) {
    TRY_GOTO(rt_checkpoint_restore(resume, cfg->resume_path, t.m, t.be, loc, cfg, &t.r, &t.tr, &t.es, &t.e_done), done);
#ifdef CAPGNN_HAVE_DIST
    rt_cache_track_resumed(t.cache, cfg->resume_path, t.e_done);
#endif
  }
  if (resume && t.metrics.file_epoch > t.e_done) /* rank 0's: the others write no metrics */
    LOG_WARN("train", "--metrics %s already holds epochs up to %d, past epoch %d of --resume %s: this run "
             "appends epochs %d-%d after them, so the file repeats epochs %d-%d (give --metrics another file "
             "to keep the two apart)", cfg->metrics_path, t.metrics.file_epoch, t.e_done, cfg->resume_path,
             t.e_done + 1, E, t.e_done + 1, t.metrics.file_epoch < E ? t.metrics.file_epoch : E);

  t.live = !cfg->quiet && cg_progress_effective_mode() == CG_PROGRESS_TTY;
  /* one place for the run's lines (core/progress.h): on a terminal one live line;
   * otherwise a line every --log-every epochs, the first and the last */
  if (cfg->quiet) t.pr.mode = CG_PROGRESS_OFF;
  else {
    cg_progress_begin(&t.pr, "training", E - t.e_done, "epochs"); /* this run's */
    cg_progress_set_every(&t.pr, cfg->log_every > 0 ? cfg->log_every : rt_log_every_auto(E - t.e_done));
  }
  train_stop = 0;
  train_active = 1;
  if (cg_watchdog_start(cfg->stall_timeout_s, "training") != CG_OK) { /* runs unwatched */
    LOG_WARN("train", "%s; training goes on without --stall-timeout", cg_err_msg());
    cg_err_clear();
  }
  t.r.trained = 1;
  for (int e = t.e_done + 1; e <= E; e++) {
    int stop = 0, diverged = 0;
    st = train_epoch(&t, e, &stop, &diverged);
    if (st < 0) {
      if (diverged) train_finish(&t, e, "diverged");
      if (diverged) last = e, run_diverged = 1;
      if (t.ckpt_failed) { /* the training itself ended well: its summary, then the error */
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", cg_err_msg());
        last = e;
        if (stop) cg_progress_log_now(&t.pr);
        train_finish(&t, e, stop ? "interrupted" : t.es.stopped && e < E ? "early_stopped" : "completed");
        cg_err_set(st, "%s", msg);
      }
      goto done;
    }
    if (stop) {
      cg_progress_log_now(&t.pr);
      st = train_interrupted(cfg, e);
      train_finish(&t, e, "interrupted");
      goto done;
    }
    if (t.es.stopped) { /* every rank: the validation loss is global */
      last = e;
      break;
    }
  }
  if (last < E) {
    cg_progress_log_now(&t.pr);
    t.pr.total = last - t.e_done; /* the run ends here: "done" counts what it did */
    cg_progress_end(&t.pr);
    LOG_INFO("train", "stopped early after epoch %d of %d: %s", last, E, rt_early_stop_describe(&t.es));
    TRY_GOTO(train_finish(&t, last, "early_stopped"), done);
  } else {
    cg_progress_end(&t.pr);
    TRY_GOTO(train_finish(&t, E, "completed"), done);
  }

done:
  cg_watchdog_stop();
  train_active = 0;
  if (t.live && st < 0) cg_progress_cancel(&t.pr);
  int best_written = 0;
  if (t.m && (st == CG_OK || st == CG_ERR_INTERRUPTED || run_diverged || t.ckpt_failed || last < E)) { /* however the run ended */
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", cg_err_msg());
    const int prev = st;
    const int bst = rt_best_keep_save(&t.bk, t.m, be, loc, t.ex, cfg, &t.r, &best_written);
    if (bst != CG_OK && prev == CG_OK) st = bst;
    else if (bst != CG_OK) {
      LOG_WARN("train", "--save-best: %s", cg_err_msg());
      cg_err_set(prev, "%s", msg);
    }
  }
  const int metrics_records = t.metrics.records;
  st = rt_metrics_close(&t.metrics, st);
  if (loc->rank == 0 && !cfg->quiet) {
    const char *labels[3] = {"metrics", "checkpoint", "best weights"};
    const char *paths[3] = {metrics_records > 0 && cfg->metrics_path ? cfg->metrics_path : NULL,
                            t.ckpt_written ? cfg->checkpoint_path : NULL, best_written ? cfg->save_best_path : NULL};
    cg_progress_files("training", labels, paths, 3);
  }
  rt_best_keep_free(&t.bk, t.m);
  rt_early_stop_free(&t.es);
  rt_model_destroy(&t.m);
#ifdef CAPGNN_HAVE_DIST
  rt_cache_track_destroy(&t.cache);
#endif
  rt_ranks_destroy(&t.ranks);
  cg_exchange_destroy(&t.watched);
  cg_free(t.epoch_s);
  cg_free(t.tmp);
  cg_free(t.exposed_s);
  cg_free(t.hidden_s);
  const int trained = t.r.trained;
  if (st == CG_OK && res) *res = t.r;
  else rt_result_free(&t.r);
  if (res) res->trained = trained;
  /* a divergence too: the loss is global, so every rank diverged after the same epoch
   * and took the same way here (the job need not be aborted) */
  if (st != CG_OK && res && (t.ckpt_failed || run_diverged)) res->ended_together = 1;
  return st;
}

int rt_train_checked(struct cg_backend *be, const struct rt_local *loc, struct cg_exchange *ex,
                     const struct rt_config *cfg, const struct rt_checkpoint *resume,
                     struct rt_result *res) {
  return train_impl(be, loc, NULL, ex, cfg, resume, res);
}

int rt_train_owned(struct cg_backend *be, struct rt_local *loc, struct cg_exchange *ex,
                   const struct rt_config *cfg, const struct rt_checkpoint *resume,
                   struct rt_result *res) {
  return train_impl(be, loc, loc, ex, cfg, resume, res);
}

int rt_train(struct cg_backend *be, const struct rt_local *loc, struct cg_exchange *ex,
             const struct rt_config *cfg, const struct rt_checkpoint *resume, struct rt_result *res) {
  if (res) memset(res, 0, sizeof *res);
  TRY(rt_config_check(cfg));
  return rt_train_checked(be, loc, ex, cfg, resume, res);
}
