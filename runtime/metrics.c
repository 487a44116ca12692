/* runtime/metrics.c — the JSON Lines metrics file of a training run: one record per
 * epoch, then the summary (the fields and the timer definitions: runtime/runtime.h,
 * rt_train).
 *
 * Design notes (the why):
 * - Every record is flushed as it is written: a run that dies (or is stopped) leaves
 *   the epochs it finished readable, and a resumed run appends to the same file.
 * - Float options are written as the user wrote them (0.01, not 0.009999999776), and
 *   NaN / inf as null: they are not JSON. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "core/timer.h"
#include "runtime/runtime_internal.h"

int rt_metrics_probe(const char *path) {
  struct stat sb; /* a FIFO would block the open until a reader comes: leave it to the run */
  if (stat(path, &sb) == 0 && S_ISFIFO(sb.st_mode)) return CG_OK;
  const int existed = access(path, F_OK) == 0;
  FILE *f = fopen(path, "a");
  if (!f)
    return cg_err_set(CG_ERR_IO, "cannot create metrics file %s: %s (check that the folder exists and is "
                      "writable, or pass another --metrics path)", path, strerror(errno));
  fclose(f);
  if (!existed) remove(path);
  return CG_OK;
}

int rt_metrics_open(struct rt_metrics *mt, const char *path, int append) {
  mt->f = NULL;
  mt->path = path;
  if (!path) return CG_OK;
  mt->f = fopen(path, append ? "a" : "w");
  if (!mt->f)
    return cg_err_set(CG_ERR_IO, "cannot create metrics file %s (check the folder exists and is writable)",
                      path);
  return CG_OK;
}

int rt_metrics_close(struct rt_metrics *mt, int st) {
  if (!mt->f) return st;
  const int rc = fclose(mt->f);
  mt->f = NULL;
  if (rc != 0 && st == CG_OK) return cg_err_set(CG_ERR_IO, "cannot close metrics file %s", mt->path);
  return st;
}

static void json_num(cJSON *o, const char *key, double v) {
  /* NaN/inf are not JSON: write null (cJSON would too, but explicitly is clearer). */
  if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
  else cJSON_AddNullToObject(o, key);
}

/* One line, flushed; the object is consumed. */
static int write_line(struct rt_metrics *mt, cJSON *o) {
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (!s) return cg_err_set(CG_ERR_NOMEM, "out of memory formatting a metrics record");
  int ok = fputs(s, mt->f) >= 0 && fputc('\n', mt->f) != EOF && fflush(mt->f) == 0;
  cJSON_free(s);
  if (!ok) return cg_err_set(CG_ERR_IO, "cannot write metrics file %s (disk full?)", mt->path);
  return CG_OK;
}

int rt_metrics_epoch(struct rt_metrics *mt, const struct rt_epoch_record *rec) {
  if (!mt->f) return CG_OK;
  cJSON *o = cJSON_CreateObject();
  if (!o) return cg_err_set(CG_ERR_NOMEM, "out of memory creating a metrics record");
  cJSON_AddNumberToObject(o, "epoch", rec->epoch);
  json_num(o, "loss", rec->loss);
  json_num(o, "train_acc", rec->ev.train_acc);
  json_num(o, "val_acc", rec->ev.val_acc);
  json_num(o, "test_acc", rec->ev.test_acc);
  json_num(o, "val_loss", rec->ev.val_loss);
  json_num(o, "epoch_s", rec->epoch_s);
  json_num(o, "compute_s", rec->compute_s);
  json_num(o, "comm_s", rec->comm_s);
  json_num(o, "comm_exposed_s", rec->comm_exposed_s);
  json_num(o, "comm_hidden_s", rec->comm_hidden_s);
  cJSON_AddNumberToObject(o, "halo_bytes", rec->halo_bytes);
  cJSON_AddNumberToObject(o, "allreduce_bytes", rec->allreduce_bytes);
  json_num(o, "compute_max_s", rec->compute_max_s);
  json_num(o, "compute_min_s", rec->compute_min_s);
  if (rec->cache_lookups > 0)
    cJSON_AddNumberToObject(o, "cache_hit_rate", (double)rec->cache_hits / (double)rec->cache_lookups);
  else
    cJSON_AddNullToObject(o, "cache_hit_rate");
  json_num(o, "eval_s", rec->eval_s);
  return write_line(mt, o);
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
  cJSON_AddBoolToObject(o, "overlap", cfg->overlap != 0);
  if (cfg->seed <= (1ull << 53)) {
    cJSON_AddNumberToObject(o, "seed", (double)cfg->seed);
  } else {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)cfg->seed);
    cJSON_AddStringToObject(o, "seed", buf);
  }
}

int rt_metrics_summary(struct rt_metrics *mt, const struct rt_local *loc, const struct cg_backend *be,
                       const struct rt_config *cfg, const struct rt_result *r, int resumed_from,
                       double t_start) {
  if (!mt->f) return CG_OK;
  cJSON *o = cJSON_CreateObject();
  if (!o) return cg_err_set(CG_ERR_NOMEM, "out of memory creating the metrics summary");
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
  cJSON_AddNumberToObject(o, "params", (double)r->num_params);
  cJSON_AddNumberToObject(o, "epochs", r->epochs);
  cJSON_AddNumberToObject(o, "resumed_from_epoch", resumed_from);
  json_num(o, "best_val_acc", r->best_val_acc);
  json_num(o, "test_acc_at_best_val", r->test_acc_at_best_val);
  cJSON_AddNumberToObject(o, "best_epoch", r->best_epoch);
  json_num(o, "final_loss", r->loss[r->epochs - 1]);
  json_num(o, "final_train_acc", r->final_train_acc);
  json_num(o, "final_val_acc", r->final_val_acc);
  json_num(o, "final_test_acc", r->final_test_acc);
  json_num(o, "median_epoch_s", r->median_epoch_s);
  json_num(o, "median_comm_exposed_s", r->median_comm_exposed_s);
  json_num(o, "median_comm_hidden_s", r->median_comm_hidden_s);
  json_num(o, "total_s", cg_time_now() - t_start);
  cJSON_AddNumberToObject(o, "peak_rss_bytes", (double)cg_peak_rss_bytes());
  return write_line(mt, o);
}
