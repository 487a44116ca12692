/* runtime/train.c — the training loop, evaluation schedule and JSON Lines metrics
 * (record layout and timer definitions: runtime/runtime.h, rt_train). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "core/timer.h"
#include "graph/progress.h"
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

/* Where the run stands between epochs besides the model and rt_result. */
struct train_track {
  double best_val_loss, last_val;
};

/* Continue from cfg->resume_path: the run must be the same model on the same graph
 * (else an error naming the difference); other settings that differ are allowed
 * with a warning, since the result is then not the uninterrupted run. Fills the
 * model state, the losses so far and the best-epoch bookkeeping; *done gets the
 * checkpoint's epoch. */
static int ckpt_resume(struct rt_model *m, const struct rt_local *loc, const struct rt_config *cfg,
                       struct rt_result *r, struct train_track *tr, int *done) {
  struct rt_checkpoint c;
  const char *path = cfg->resume_path;
  TRY(rt_checkpoint_read(path, &c));
  int st = CG_OK;
  if (c.graph_checksum != loc->graph_checksum || c.nodes != loc->n_global ||
      c.features != loc->feat_dim || c.classes != loc->num_classes) {
    st = cg_err_set(CG_ERR_ARG, "--resume %s: the checkpoint was written for graph %s (%lld vertices, "
                    "checksum %08x), this run trains %s (%lld vertices, checksum %08x)", path, c.graph,
                    (long long)c.nodes, c.graph_checksum, loc->name, (long long)loc->n_global,
                    loc->graph_checksum);
    goto out;
  }
  if (c.model != cfg->model || c.layers != cfg->layers || c.hidden != cfg->hidden ||
      c.layernorm != cfg->layernorm || c.num_params != rt_model_num_params(m)) {
    st = cg_err_set(CG_ERR_ARG, "--resume %s: the checkpoint holds a %s model with %d layers, hidden "
                    "%lld%s (%lld parameters); this run asks for %s, %d layers, hidden %lld%s", path,
                    rt_model_kind_str(c.model), c.layers, (long long)c.hidden,
                    c.layernorm ? ", layernorm" : "", (long long)c.num_params,
                    rt_model_kind_str(cfg->model), cfg->layers, (long long)cfg->hidden,
                    cfg->layernorm ? ", layernorm" : "");
    goto out;
  }
  if (c.epoch >= cfg->epochs) {
    st = cg_err_set(CG_ERR_ARG, "--resume %s: the checkpoint is at epoch %d and --epochs is %d: nothing "
                    "left to train (raise --epochs to continue)", path, c.epoch, cfg->epochs);
    goto out;
  }
#define CKPT_SAME(field, name, fmt, a, b)                                                         \
  if (c.field != cfg->field)                                                                      \
  LOG_WARN_COMMON("train", "--resume %s: %s is " fmt " in this run, " fmt " in the checkpoint's: "  \
                  "the continuation differs from an uninterrupted run", path, name, a, b)
  CKPT_SAME(dropout, "dropout", "%g", (double)cfg->dropout, (double)c.dropout);
  CKPT_SAME(input_dropout, "input dropout", "%g", (double)cfg->input_dropout, (double)c.input_dropout);
  CKPT_SAME(optimizer, "the optimizer", "%s", rt_optimizer_str(cfg->optimizer), rt_optimizer_str(c.optimizer));
  CKPT_SAME(lr, "lr", "%g", (double)cfg->lr, (double)c.lr);
  CKPT_SAME(weight_decay, "weight decay", "%g", (double)cfg->weight_decay, (double)c.weight_decay);
  CKPT_SAME(wd_scope, "wd-scope", "%s", rt_wd_scope_str(cfg->wd_scope), rt_wd_scope_str(c.wd_scope));
  CKPT_SAME(beta1, "Adam beta1", "%g", (double)cfg->beta1, (double)c.beta1);
  CKPT_SAME(beta2, "Adam beta2", "%g", (double)cfg->beta2, (double)c.beta2);
  CKPT_SAME(adam_eps, "Adam eps", "%g", (double)cfg->adam_eps, (double)c.adam_eps);
  CKPT_SAME(seed, "the seed", "%llu", (unsigned long long)cfg->seed, (unsigned long long)c.seed);
#undef CKPT_SAME
  TRY_GOTO(rt_model_state_set(m, c.params, c.adam_m, c.adam_v, c.steps), out);
  memcpy(r->loss, c.loss, (size_t)c.epoch * sizeof(double));
  r->best_val_acc = c.best_val_acc;
  r->test_acc_at_best_val = c.test_acc_at_best_val;
  r->best_epoch = c.best_epoch;
  r->final_train_acc = c.final_train_acc;
  r->final_val_acc = c.final_val_acc;
  r->final_test_acc = c.final_test_acc;
  tr->best_val_loss = c.best_val_loss;
  tr->last_val = c.last_val_acc;
  *done = c.epoch;
  LOG_INFO("train", "resuming from %s after epoch %d (%lld optimizer steps)", path, c.epoch,
           (long long)c.steps);
out:
  rt_checkpoint_free(&c);
  return st;
}

/* Write the state after `epoch` epochs to cfg->checkpoint_path. Every rank holds the
 * same parameters: rank 0 writes, and all ranks learn whether it worked (so that a
 * failed write stops every rank, not rank 0 alone). */
static int ckpt_save(struct rt_model *m, const struct rt_local *loc, const struct rt_exchange *ex,
                     const struct rt_config *cfg, const struct rt_result *r,
                     const struct train_track *tr, int epoch) {
  int st = CG_OK;
  if (loc->rank == 0) {
    struct rt_checkpoint c = {
        .graph_checksum = loc->graph_checksum, .nodes = loc->n_global, .features = loc->feat_dim,
        .classes = loc->num_classes, .model = cfg->model, .layers = cfg->layers,
        .layernorm = cfg->layernorm, .hidden = cfg->hidden, .dropout = cfg->dropout,
        .input_dropout = cfg->input_dropout, .optimizer = cfg->optimizer, .lr = cfg->lr,
        .weight_decay = cfg->weight_decay, .beta1 = cfg->beta1, .beta2 = cfg->beta2,
        .adam_eps = cfg->adam_eps, .wd_scope = cfg->wd_scope, .seed = cfg->seed, .epoch = epoch,
        .num_params = rt_model_num_params(m), .loss = r->loss, /* borrowed */
        .best_val_acc = r->best_val_acc, .best_val_loss = tr->best_val_loss,
        .test_acc_at_best_val = r->test_acc_at_best_val, .best_epoch = r->best_epoch,
        .final_train_acc = r->final_train_acc, .final_val_acc = r->final_val_acc,
        .final_test_acc = r->final_test_acc, .last_val_acc = tr->last_val};
    snprintf(c.graph, sizeof c.graph, "%s", loc->name);
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
  if (ex && ex->allreduce_host) {
    double failed = st != CG_OK;
    TRY(ex->allreduce_host(ex->ctx, &failed, 1));
    if (failed > 0 && st == CG_OK)
      st = cg_err_set(CG_ERR_IO, "rank 0 could not write checkpoint %s", cfg->checkpoint_path);
  }
  return st;
}

int rt_train(struct cg_backend *be, const struct rt_local *loc, const struct rt_exchange *ex,
             const struct rt_config *cfg, struct rt_result *res) {
  int st = CG_OK;
  struct rt_model *m = NULL;
  FILE *mf = NULL;
  cJSON *o = NULL;
  double *epoch_s = NULL, *tmp = NULL;
  struct graph_progress pr; /* the live training line, used when `live` */
  int live = 0;
  struct rt_result r;
  memset(&r, 0, sizeof r);
  if (res) memset(res, 0, sizeof *res);
  TRY(rt_config_check(cfg));
  const double t_start = cg_time_now();

  if (cfg->checkpoint_path && loc->rank == 0) { /* fail now, not after the last epoch */
    struct cg_outfile probe;
    TRY(cg_outfile_open(&probe, cfg->checkpoint_path, "checkpoint"));
    cg_outfile_abort(&probe);
  }
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
  struct train_track tr = {INFINITY, NAN};
  int e_done = 0; /* epochs before this run (resumed) */
  if (cfg->resume_path) TRY_GOTO(ckpt_resume(m, loc, cfg, &r, &tr, &e_done), done);
  const char *acc_name = loc->multilabel ? "f1" : "acc";
  /* On a terminal one live line (epoch, loss, accuracy, time per epoch, ETA) replaces
   * the per-evaluation log lines; elsewhere (files, CI) the log lines stay. */
  live = !cfg->quiet && graph_progress_effective_mode() == GRAPH_PROGRESS_TTY;
  if (live) graph_progress_begin(&pr, "training", E, "epochs");
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
    double sums[2] = {(double)ss.halo_bytes, (double)ss.allreduce_bytes};
    double ext[2] = {compute_s, -compute_s}; /* max, -min */
    if (ex && ex->allreduce_host) TRY_GOTO(ex->allreduce_host(ex->ctx, sums, 2), done);
    if (ex && ex->allreduce_host_max) TRY_GOTO(ex->allreduce_host_max(ex->ctx, ext, 2), done);

    int do_eval = (e % cfg->eval_every) == 0 || e == E;
    struct rt_eval ev = {NAN, NAN, NAN, NAN, NAN};
    double eval_s = NAN;
    if (do_eval) {
      double te = cg_time_now();
      TRY_GOTO(rt_model_evaluate(m, &ev, NULL), done);
      be->sync(be);
      eval_s = cg_time_now() - te;
      int better = isnan(r.best_val_acc) ||
                   ev.val_acc > r.best_val_acc ||
                   (ev.val_acc == r.best_val_acc && ev.val_loss < tr.best_val_loss);
      if (better && !isnan(ev.val_acc)) {
        r.best_val_acc = ev.val_acc;
        tr.best_val_loss = ev.val_loss;
        r.test_acc_at_best_val = ev.test_acc;
        r.best_epoch = e;
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
      graph_progress_update_detail(&pr, e, detail);
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
    if (cfg->checkpoint_path && (e == E || (cfg->checkpoint_every > 0 && e % cfg->checkpoint_every == 0)))
      TRY_GOTO(ckpt_save(m, loc, ex, cfg, &r, &tr, e), done);
  }
  if (live) graph_progress_end(&pr);
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
  if (live && st < 0) graph_progress_cancel(&pr);
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
