/* runtime/train.c — the training loop, evaluation schedule and JSON Lines metrics
 * (record layout and timer definitions: runtime/runtime.h, rt_train). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/exchange.h"
#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"
#include "core/progress.h"
#include "runtime/runtime.h"

void rt_result_free(struct rt_result *r) {
  if (!r) return;
  cg_free(r->loss);
  memset(r, 0, sizeof *r);
}

static void json_num(cJSON *o, const char *key, double v) {
  /* NaN/inf are not JSON: write null (cJSON would too, but explicitly is clearer). */
  if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
  else cJSON_AddNullToObject(o, key);
}

static int json_write_line(FILE *f, const char *path, cJSON *o) {
  char *s = cJSON_PrintUnformatted(o);
  if (!s) return cg_err_set(CG_ERR_NOMEM, "out of memory formatting a metrics record");
  int ok = fputs(s, f) >= 0 && fputc('\n', f) != EOF && fflush(f) == 0;
  cJSON_free(s);
  if (!ok) return cg_err_set(CG_ERR_IO, "cannot write metrics file %s (disk full?)", path);
  return CG_OK;
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

/* Float options as the user wrote them (0.01, not 0.009999999776). */
static double fdec(float x) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.7g", (double)x);
  return strtod(buf, NULL);
}

static void add_config(cJSON *o, const struct rt_config *cfg) {
  cJSON_AddStringToObject(o, "model", rt_model_kind_str(cfg->model));
  cJSON_AddNumberToObject(o, "layers", cfg->layers);
  cJSON_AddNumberToObject(o, "hidden", (double)cfg->hidden);
  cJSON_AddNumberToObject(o, "dropout", fdec(cfg->dropout));
  cJSON_AddNumberToObject(o, "input_dropout", fdec(rt_config_layer_dropout(cfg, 0)));
  cJSON_AddBoolToObject(o, "layernorm", cfg->layernorm != 0);
  cJSON_AddStringToObject(o, "optimizer", rt_optimizer_str(cfg->optimizer));
  cJSON_AddNumberToObject(o, "lr", fdec(cfg->lr));
  cJSON_AddNumberToObject(o, "weight_decay", fdec(cfg->weight_decay));
  cJSON_AddStringToObject(o, "wd_scope", rt_wd_scope_str(cfg->wd_scope));
  cJSON_AddStringToObject(o, "feat_norm", cfg->feat_norm_row ? "row" : "none");
  cJSON_AddNumberToObject(o, "eval_every", cfg->eval_every);
  if (cfg->seed <= (1ull << 53)) {
    cJSON_AddNumberToObject(o, "seed", (double)cfg->seed);
  } else {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)cfg->seed);
    cJSON_AddStringToObject(o, "seed", buf);
  }
}

/* A stop requested by a signal handler (rt_train_request_stop), honoured between
 * epochs; `active` while a training loop runs. */
static volatile sig_atomic_t train_active, train_stop;

int rt_train_request_stop(void) {
  if (!train_active) return 0;
  train_stop = 1;
  return 1;
}

/* The best evaluation so far: the highest validation accuracy, ties to the lower
 * validation loss, then to the earlier epoch. */
struct train_best {
  double val_acc, val_loss, test_acc;
  int epoch; /* 0: none yet */
};

static void best_consider(struct train_best *b, const struct rt_eval *ev, int e) {
  if (isnan(ev->val_acc)) return;
  if (b->epoch == 0 || ev->val_acc > b->val_acc || (ev->val_acc == b->val_acc && ev->val_loss < b->val_loss))
    *b = (struct train_best){ev->val_acc, ev->val_loss, ev->test_acc, e};
}

/* Where the run stands between epochs besides the model and rt_result: the best over
 * the evaluations of the --eval-every schedule (the one after the last epoch, off
 * the schedule, is reported but not kept: a longer run would not have made it, so a
 * run extended from a checkpoint must not remember it), and the last validation
 * accuracy (for the live line). */
struct train_track {
  struct train_best best;
  double last_val;
};

/* Continue from cfg->resume_path (rt_checkpoint_fits: the same model on the same
 * graph, or an error naming the difference; other settings that differ are warned
 * about). Fills the model state, the losses so far and the bookkeeping; *done gets
 * the checkpoint's epoch. */
static int ckpt_resume(struct rt_model *m, const struct rt_local *loc, const struct rt_config *cfg,
                       struct rt_result *r, struct train_track *tr, int *done) {
  struct rt_checkpoint c;
  const char *path = cfg->resume_path;
  TRY(rt_checkpoint_read(path, &c));
  int st = rt_checkpoint_fits(&c, path, cfg, 1);
  if (st == CG_OK && (c.graph_checksum != loc->graph_checksum || c.nodes != loc->n_global ||
                      c.features != loc->feat_dim || c.classes != loc->num_classes))
    st = cg_err_set(CG_ERR_ARG, "--resume %s: the checkpoint was written for graph %s (%lld vertices, "
                    "checksum %08x), this run trains %s (%lld vertices, checksum %08x)", path, c.graph,
                    (long long)c.nodes, c.graph_checksum, loc->name, (long long)loc->n_global,
                    loc->graph_checksum);
  if (st == CG_OK && c.num_params != rt_model_num_params(m))
    st = cg_err_set(CG_ERR_ARG, "--resume %s: the checkpoint has %lld parameters, this model %lld", path,
                    (long long)c.num_params, (long long)rt_model_num_params(m));
  if (st == CG_OK) st = rt_model_state_set(m, c.params, c.adam_m, c.adam_v, c.steps);
  if (st == CG_OK) {
    memcpy(r->loss, c.loss, (size_t)c.epoch * sizeof(double));
    tr->best = (struct train_best){c.best_val_acc, c.best_val_loss, c.test_acc_at_best_val, c.best_epoch};
    r->best_val_acc = c.best_val_acc;
    r->test_acc_at_best_val = c.test_acc_at_best_val;
    r->best_epoch = c.best_epoch;
    r->final_train_acc = c.final_train_acc;
    r->final_val_acc = c.final_val_acc;
    r->final_test_acc = c.final_test_acc;
    tr->last_val = c.last_val_acc;
    *done = c.epoch;
    LOG_INFO("train", "resuming from %s after epoch %d (%lld optimizer steps)", path, c.epoch,
             (long long)c.steps);
  }
  rt_checkpoint_free(&c);
  return st;
}

/* Write the state after `epoch` epochs to cfg->checkpoint_path. Every rank holds the
 * same parameters: rank 0 writes, and all ranks learn whether it worked (so that a
 * failed write stops every rank, or none). */
static int ckpt_save(struct rt_model *m, const char *be_name, const struct rt_local *loc,
                     struct cg_exchange *ex, const struct rt_config *cfg,
                     const struct rt_result *r, const struct train_track *tr, int epoch) {
  int st = CG_OK;
  if (loc->rank == 0) {
    struct rt_checkpoint c = {
        .graph_checksum = loc->graph_checksum, .nodes = loc->n_global, .features = loc->feat_dim,
        .classes = loc->num_classes, .feat_norm_row = cfg->feat_norm_row, .model = cfg->model,
        .layers = cfg->layers, .layernorm = cfg->layernorm, .hidden = cfg->hidden,
        .dropout = cfg->dropout, .input_dropout = cfg->input_dropout, .optimizer = cfg->optimizer,
        .lr = cfg->lr, .weight_decay = cfg->weight_decay, .beta1 = cfg->beta1, .beta2 = cfg->beta2,
        .adam_eps = cfg->adam_eps, .wd_scope = cfg->wd_scope, .seed = cfg->seed,
        .eval_every = cfg->eval_every, .threads = cfg->threads, .ranks = loc->nranks,
        .epoch = epoch, .num_params = rt_model_num_params(m),
        .loss = r->loss, /* borrowed */
        .best_val_acc = tr->best.val_acc, .best_val_loss = tr->best.val_loss,
        .test_acc_at_best_val = tr->best.test_acc, .best_epoch = tr->best.epoch,
        .final_train_acc = r->final_train_acc, .final_val_acc = r->final_val_acc,
        .final_test_acc = r->final_test_acc, .last_val_acc = tr->last_val};
    snprintf(c.graph, sizeof c.graph, "%s", loc->name);
    snprintf(c.device, sizeof c.device, "%s", be_name);
    const size_t bytes = (size_t)c.num_params * sizeof(float);
    c.params = cg_malloc(bytes, "checkpoint parameters");
    c.adam_m = cg_malloc(bytes, "checkpoint Adam moments");
    c.adam_v = cg_malloc(bytes, "checkpoint Adam moments");
    if (!c.params || !c.adam_m || !c.adam_v) st = CG_ERR_NOMEM;
    if (st == CG_OK) st = rt_model_state_get(m, c.params, c.adam_m, c.adam_v, &c.steps);
    if (st == CG_OK) st = rt_checkpoint_write(cfg->checkpoint_path, &c);
    cg_free(c.params);
    cg_free(c.adam_m);
    cg_free(c.adam_v);
  }
  if (ex) {
    double failed = st != CG_OK;
    TRY(ex->allreduce_host(ex, &failed, 1, CG_REDUCE_SUM));
    if (failed > 0 && st == CG_OK)
      st = cg_err_set(CG_ERR_IO, "rank 0 could not write checkpoint %s", cfg->checkpoint_path);
  }
  return st;
}

int rt_train(struct cg_backend *be, const struct rt_local *loc, struct cg_exchange *ex,
             const struct rt_config *cfg, struct rt_result *res) {
  int st = CG_OK;
  struct rt_model *m = NULL;
  FILE *mf = NULL;
  cJSON *o = NULL;
  double *epoch_s = NULL, *tmp = NULL;
  struct cg_progress pr; /* the live training line, used when `live` */
  int live = 0;
  struct rt_result r;
  memset(&r, 0, sizeof r);
  if (res) memset(res, 0, sizeof *res);
  TRY(rt_config_check(cfg));
  const double t_start = cg_time_now();

  TRY(rt_checkpoint_check_paths(cfg));
  if (cfg->checkpoint_path && loc->rank == 0) /* fail now, not after the last epoch */
    TRY(rt_checkpoint_probe_target(cfg->checkpoint_path, 0)); /* (the command warns) */
  if (cfg->resume_path && !cfg->checkpoint_path)
    LOG_WARN_COMMON("train", "--resume %s without --checkpoint: this run saves no checkpoint of its own",
                    cfg->resume_path);
  if (cfg->metrics_path && loc->rank == 0) {
    mf = fopen(cfg->metrics_path, cfg->resume_path ? "a" : "w"); /* a resumed run continues the file */
    if (!mf) return cg_err_set(CG_ERR_IO, "cannot create metrics file %s (check the folder exists and is writable)",
                               cfg->metrics_path);
  }
  const int E = cfg->epochs;
  r.epochs = E;
  r.loss = cg_calloc((size_t)E, sizeof(double), "per-epoch losses");
  epoch_s = cg_calloc((size_t)E, sizeof(double), "per-epoch times");
  tmp = cg_calloc((size_t)E, sizeof(double), "median scratch");
  if (!r.loss || !epoch_s || !tmp) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  TRY_GOTO(rt_model_create(be, loc, cfg, ex, &m), done);
  r.num_params = rt_model_num_params(m);
  LOG_INFO("train", "graph %s: %lld vertices, %lld edges, %lld features, %lld classes%s; rank %d of %d owns %lld (+%lld halo)",
           loc->name, (long long)loc->n_global, (long long)loc->m_global, (long long)loc->feat_dim,
           (long long)loc->num_classes, loc->multilabel ? " (multi-label)" : "", loc->rank,
           loc->nranks, (long long)loc->n_inner, (long long)loc->n_halo);
  LOG_INFO("train", "model %s, %d layers, hidden %lld, dropout %g (input %g)%s, %s lr %g wd %g (%s), %lld parameters, device %s",
           rt_model_kind_str(cfg->model), cfg->layers, (long long)cfg->hidden, (double)cfg->dropout,
           (double)rt_config_layer_dropout(cfg, 0),
           cfg->layernorm ? ", layernorm" : "", rt_optimizer_str(cfg->optimizer), (double)cfg->lr,
           (double)cfg->weight_decay, rt_wd_scope_str(cfg->wd_scope), (long long)r.num_params, rt_backend_describe(be));

  r.best_val_acc = NAN;
  r.test_acc_at_best_val = NAN;
  r.final_train_acc = r.final_val_acc = r.final_test_acc = NAN;
  struct train_track tr = {{NAN, INFINITY, NAN, 0}, NAN};
  int e_done = 0; /* epochs before this run (resumed) */
  if (cfg->resume_path) TRY_GOTO(ckpt_resume(m, loc, cfg, &r, &tr, &e_done), done);
  const char *acc_name = loc->multilabel ? "f1" : "acc";
  /* On a terminal one live line (epoch, loss, accuracy, time per epoch, ETA) replaces
   * the per-evaluation log lines; elsewhere (files, CI) the log lines stay. */
  live = !cfg->quiet && cg_progress_effective_mode() == CG_PROGRESS_TTY;
  if (live) cg_progress_begin(&pr, "training", E - e_done, "epochs"); /* this run's */
  train_stop = 0;
  train_active = 1;
  for (int e = e_done + 1; e <= E; e++) {
    struct rt_step_stats ss;
    be->sync(be);
    double t0 = cg_time_now();
    TRY_GOTO(rt_model_step(m, (uint32_t)e, &ss), done);
    be->sync(be);
    double dt = cg_time_now() - t0;
    epoch_s[e - 1] = dt;
    r.loss[e - 1] = ss.loss;
    if (!isfinite(ss.loss)) {
      st = cg_err_set(CG_ERR_ARG, "training diverged: the loss is not finite at epoch %d (try a smaller --lr)", e);
      goto done;
    }

    /* Cross-rank sums and extremes, gathered outside the timed step (every rank
     * takes this path: the loss above is global, so all stop or none). */
    const double compute_s = dt - ss.comm_s;
    /* sums[2]: ranks asked to stop (a signal may reach them in different epochs; the
     * sum makes every rank stop after the same one) */
    double sums[3] = {(double)ss.halo_bytes, (double)ss.allreduce_bytes, (double)train_stop};
    double ext[2] = {compute_s, -compute_s}; /* max, -min */
    if (ex) TRY_GOTO(ex->allreduce_host(ex, sums, 3, CG_REDUCE_SUM), done);
    const int stop = sums[2] > 0 && e < E;
    if (ex) TRY_GOTO(ex->allreduce_host(ex, ext, 2, CG_REDUCE_MAX), done);

    const int on_schedule = (e % cfg->eval_every) == 0;
    const int do_eval = on_schedule || e == E;
    struct rt_eval ev = {NAN, NAN, NAN, NAN, NAN};
    double eval_s = NAN;
    if (do_eval) {
      double te = cg_time_now();
      TRY_GOTO(rt_model_evaluate(m, &ev, NULL), done);
      be->sync(be);
      eval_s = cg_time_now() - te;
      if (on_schedule) best_consider(&tr.best, &ev, e);
      struct train_best shown = tr.best; /* the off-schedule last evaluation counts here only */
      if (!on_schedule) best_consider(&shown, &ev, e);
      if (shown.epoch > 0) {
        r.best_val_acc = shown.val_acc;
        r.test_acc_at_best_val = shown.test_acc;
        r.best_epoch = shown.epoch;
      }
      r.final_train_acc = ev.train_acc;
      r.final_val_acc = ev.val_acc;
      r.final_test_acc = ev.test_acc;
      tr.last_val = ev.val_acc;
      if (!cfg->quiet && !live)
        LOG_INFO("train", "epoch %4d  loss %.4f  train %s %.4f  val %s %.4f  test %s %.4f  %.2f ms",
                 e, ss.loss, acc_name, ev.train_acc, acc_name, ev.val_acc, acc_name, ev.test_acc,
                 dt * 1e3);
    }
    if (live) {
      char detail[128];
      snprintf(detail, sizeof detail, "loss %.4f  val %s %.4f  %.1f ms/epoch", ss.loss, acc_name,
               tr.last_val, dt * 1e3);
      cg_progress_update_detail(&pr, e - e_done, detail);
    }

    if (mf) {
      o = cJSON_CreateObject();
      if (!o) {
        st = cg_err_set(CG_ERR_NOMEM, "out of memory creating a metrics record");
        goto done;
      }
      cJSON_AddNumberToObject(o, "epoch", e);
      json_num(o, "loss", ss.loss);
      json_num(o, "train_acc", ev.train_acc);
      json_num(o, "val_acc", ev.val_acc);
      json_num(o, "test_acc", ev.test_acc);
      json_num(o, "val_loss", ev.val_loss);
      json_num(o, "epoch_s", dt);
      json_num(o, "compute_s", compute_s);
      json_num(o, "comm_s", ss.comm_s);
      cJSON_AddNumberToObject(o, "halo_bytes", sums[0]);
      cJSON_AddNumberToObject(o, "allreduce_bytes", sums[1]);
      json_num(o, "compute_max_s", ext[0]);
      json_num(o, "compute_min_s", -ext[1]);
      if (ss.cache_lookups > 0)
        cJSON_AddNumberToObject(o, "cache_hit_rate", (double)ss.cache_hits / (double)ss.cache_lookups);
      else
        cJSON_AddNullToObject(o, "cache_hit_rate");
      json_num(o, "eval_s", eval_s);
      TRY_GOTO(json_write_line(mf, cfg->metrics_path, o), done);
      cJSON_Delete(o);
      o = NULL;
    }
    if (cfg->checkpoint_path && (e == E || stop)) {
      TRY_GOTO(ckpt_save(m, be->name, loc, ex, cfg, &r, &tr, e), done);
    } else if (cfg->checkpoint_path && cfg->checkpoint_every > 0 && e % cfg->checkpoint_every == 0) {
      /* an intermediate checkpoint that fails (disk full) must not end a long run:
       * every rank got the same answer, all warn and go on; the previous one stays */
      if (ckpt_save(m, be->name, loc, ex, cfg, &r, &tr, e) != CG_OK) {
        LOG_WARN_COMMON("train", "epoch %d: %s; training goes on", e, cg_err_msg());
        cg_err_clear();
      }
    }
    if (stop) {
      if (cfg->checkpoint_path)
        st = cg_err_set(CG_ERR_INTERRUPTED, "interrupted after epoch %d of %d; checkpoint %s holds it: "
                        "continue with --resume %s", e, E, cfg->checkpoint_path, cfg->checkpoint_path);
      else
        st = cg_err_set(CG_ERR_INTERRUPTED, "interrupted after epoch %d of %d; no checkpoint (pass "
                        "--checkpoint FILE to keep the state when stopped)", e, E);
      goto done;
    }
  }
  if (live) cg_progress_end(&pr);
  r.median_epoch_s = median(epoch_s + e_done, E - e_done, tmp); /* epochs run here */
  if (r.best_epoch > 0)
    LOG_INFO("train", "done: best val %s %.4f at epoch %d, test %s there %.4f; median epoch %.2f ms",
             acc_name, r.best_val_acc, r.best_epoch, acc_name, r.test_acc_at_best_val,
             r.median_epoch_s * 1e3);
  else /* no validation vertices (or no evaluation ran): nothing to select by */
    LOG_INFO("train", "done: no validation vertices, so no best epoch; final train %s %.4f, test "
             "%s %.4f; median epoch %.2f ms", acc_name, r.final_train_acc, acc_name,
             r.final_test_acc, r.median_epoch_s * 1e3);

  if (mf) {
    o = cJSON_CreateObject();
    if (!o) {
      st = cg_err_set(CG_ERR_NOMEM, "out of memory creating the metrics summary");
      goto done;
    }
    cJSON_AddBoolToObject(o, "summary", 1);
    cJSON_AddStringToObject(o, "graph", loc->name);
    cJSON_AddNumberToObject(o, "nodes", (double)loc->n_global);
    cJSON_AddNumberToObject(o, "edges", (double)loc->m_global);
    cJSON_AddNumberToObject(o, "features", (double)loc->feat_dim);
    cJSON_AddNumberToObject(o, "classes", (double)loc->num_classes);
    cJSON_AddBoolToObject(o, "multilabel", loc->multilabel != 0);
    cJSON_AddStringToObject(o, "device", be->name);
    cJSON_AddStringToObject(o, "device_desc", rt_backend_describe(be));
    cJSON_AddNumberToObject(o, "threads", cfg->threads);
    cJSON_AddNumberToObject(o, "ranks", loc->nranks);
    add_config(o, cfg);
    cJSON_AddNumberToObject(o, "params", (double)r.num_params);
    cJSON_AddNumberToObject(o, "epochs", E);
    cJSON_AddNumberToObject(o, "resumed_from_epoch", e_done);
    json_num(o, "best_val_acc", r.best_val_acc);
    json_num(o, "test_acc_at_best_val", r.test_acc_at_best_val);
    cJSON_AddNumberToObject(o, "best_epoch", r.best_epoch);
    json_num(o, "final_loss", r.loss[E - 1]);
    json_num(o, "final_train_acc", r.final_train_acc);
    json_num(o, "final_val_acc", r.final_val_acc);
    json_num(o, "final_test_acc", r.final_test_acc);
    json_num(o, "median_epoch_s", r.median_epoch_s);
    json_num(o, "total_s", cg_time_now() - t_start);
    cJSON_AddNumberToObject(o, "peak_rss_bytes", (double)cg_peak_rss_bytes());
    TRY_GOTO(json_write_line(mf, cfg->metrics_path, o), done);
  }

done:
  train_active = 0;
  if (live && st < 0) cg_progress_cancel(&pr);
  cJSON_Delete(o);
  if (mf && fclose(mf) != 0 && st == CG_OK)
    st = cg_err_set(CG_ERR_IO, "cannot close metrics file %s", cfg->metrics_path);
  rt_model_destroy(&m);
  cg_free(epoch_s);
  cg_free(tmp);
  if (st == CG_OK && res) *res = r;
  else rt_result_free(&r);
  return st;
}

int rt_run(const struct rt_config *cfg, struct rt_result *res) {
  int st = CG_OK;
  struct graph g;
  struct rt_local loc;
  struct cg_backend *be = NULL;
  memset(&g, 0, sizeof g);
  memset(&loc, 0, sizeof loc);
  TRY(rt_config_check(cfg));
  TRY_GOTO(graph_open(cfg->graph, &g), done);
  if (cfg->feat_norm_row) graph_feat_rownorm(&g);
  TRY_GOTO(rt_local_from_graph(&g, cfg->model, &loc), done);
  graph_free(&g); /* the local problem holds what training needs */
  TRY_GOTO(rt_backend_open(cfg->device, cfg->threads, cfg->tf32, &be), done);
  TRY_GOTO(rt_train(be, &loc, NULL, cfg, res), done);
done:
  cg_backend_destroy(&be);
  rt_local_free(&loc);
  graph_free(&g);
  return st;
}
