/* runtime/seeds.c — --seeds: the statistics over the runs of several seeds and their
 * aggregate record in the metrics file (runtime.h, "several seeds"); the runs
 * themselves are ordinary runs (apps/cmd_train.c runs them one after the other).
 *
 * Design notes (the why):
 * - std is numpy's default (population, ddof 0): what the scripts people compare with
 *   (PyG's and DGL's examples, the datasets' reference figures) print.
 * - The aggregate is one more JSON Lines record after the runs' own epochs and
 *   summaries, so that a reader of one run's records keeps working. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/outfile.h"
#include "core/status.h"
#include "runtime/runtime_internal.h"

static struct rt_stat stat_of(const double *v, int n) {
  struct rt_stat s = {NAN, NAN, 0};
  double sum = 0.0;
  for (int i = 0; i < n; i++)
    if (isfinite(v[i])) sum += v[i], s.n++;
  if (s.n == 0) return s;
  s.mean = sum / s.n;
  double sq = 0.0;
  for (int i = 0; i < n; i++)
    if (isfinite(v[i])) sq += (v[i] - s.mean) * (v[i] - s.mean);
  s.std = sqrt(sq / s.n);
  return s;
}

/* The five quantities of run i, in the order of struct rt_seeds_summary. */
static void values_of(const struct rt_result *r, double v[5]) {
  v[0] = r->test_acc_at_best_val;
  v[1] = r->best_val_acc;
  v[2] = r->final_test_acc;
  v[3] = r->best_epoch > 0 ? (double)r->best_epoch : NAN;
  v[4] = (double)r->epochs_run;
}

void rt_seeds_summarize(const struct rt_result *res, int n, struct rt_seeds_summary *out) {
  memset(out, 0, sizeof *out);
  out->runs = n;
  struct rt_stat *dst[5] = {&out->test_acc_at_best_val, &out->best_val_acc, &out->final_test_acc, &out->best_epoch,
                            &out->epochs};
  double col[64];
  for (int q = 0; q < 5; q++) {
    int k = 0;
    for (int i = 0; i < n && k < 64; i++) {
      double v[5];
      values_of(&res[i], v);
      col[k++] = v[q];
    }
    *dst[q] = stat_of(col, k);
  }
}

static void num_or_null(cJSON *o, const char *key, double v) {
  if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
  else cJSON_AddNullToObject(o, key);
}

int rt_seeds_write_aggregate(const struct rt_config *cfg, const uint64_t *seeds, const struct rt_result *res,
                             int n) {
  if (!cfg->metrics_path || n < 1) return CG_OK;
  struct rt_seeds_summary sum;
  rt_seeds_summarize(res, n, &sum);
  cJSON *o = cJSON_CreateObject(), *sd = cJSON_CreateArray();
  if (!o || !sd) {
    cJSON_Delete(o);
    cJSON_Delete(sd);
    return cg_err_set(CG_ERR_NOMEM, "out of memory creating the aggregate record");
  }
  cJSON_AddBoolToObject(o, "aggregate", 1);
  for (int i = 0; i < n; i++) cJSON_AddItemToArray(sd, cJSON_CreateNumber((double)seeds[i]));
  cJSON_AddItemToObject(o, "seeds", sd);
  cJSON_AddNumberToObject(o, "runs", n);
  static const char *const names[5] = {"test_acc_at_best_val", "best_val_acc", "final_test_acc", "best_epoch",
                                       "epochs"};
  const struct rt_stat *st[5] = {&sum.test_acc_at_best_val, &sum.best_val_acc, &sum.final_test_acc,
                                 &sum.best_epoch, &sum.epochs};
  for (int q = 0; q < 5; q++) {
    cJSON *x = cJSON_CreateObject(), *vals = cJSON_CreateArray();
    if (!x || !vals) {
      cJSON_Delete(x);
      cJSON_Delete(vals);
      continue;
    }
    num_or_null(x, "mean", st[q]->mean);
    num_or_null(x, "std", st[q]->std);
    cJSON_AddNumberToObject(x, "n", st[q]->n);
    for (int i = 0; i < n; i++) {
      double v[5];
      values_of(&res[i], v);
      cJSON_AddItemToArray(vals, isfinite(v[q]) ? cJSON_CreateNumber(v[q]) : cJSON_CreateNull());
    }
    cJSON_AddItemToObject(x, "values", vals);
    cJSON_AddItemToObject(o, names[q], x);
  }
  char *txt = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (!txt) return cg_err_set(CG_ERR_NOMEM, "out of memory formatting the aggregate record");
  struct cg_outfile of; /* the runs wrote the file: it grows, through a temporary */
  int st_ = cg_outfile_open_keep(&of, cfg->metrics_path, "metrics file");
  if (st_ == CG_OK) {
    const int ok = fputs(txt, of.fp) >= 0 && fputc('\n', of.fp) != EOF;
    if (ok) st_ = cg_outfile_commit(&of);
    else {
      cg_outfile_abort(&of);
      st_ = cg_err_set(CG_ERR_IO, "cannot write metrics file %s (disk full?)", cfg->metrics_path);
    }
  }
  cJSON_free(txt);
  return st_;
}
