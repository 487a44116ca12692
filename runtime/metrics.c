/* runtime/metrics.c — the JSON Lines metrics file of a training run: one record per
 * epoch, then the summary (the fields and the timer definitions: runtime/runtime.h,
 * rt_train).
 *
 * Design notes (the why):
 * - Every record is flushed as it is written, into a temporary beside the file
 *   (core/outfile.h: an output never destroys what was there until the run ends): a
 *   run that dies leaves the epochs it finished readable there, a run that ends (also
 *   when stopped or diverged) renames it over the file, and a resumed run's temporary
 *   starts as a copy of the file, so that it appends.
 * - A record that cannot be written (a full disk) ends the file, not the run: the
 *   temporary is cut back to its complete records and renamed at the end as usual, with
 *   a warning then and at the end; the model and its checkpoint matter more than the
 *   rest of the log (a failed intermediate checkpoint warns the same way).
 * - Float options are written as the user wrote them (0.01, not 0.009999999776), and
 *   NaN / inf as null: they are not JSON. */
#include <ctype.h>
#include <dirent.h>
#include <libgen.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/log.h"
#include "core/status.h"
#include "core/timer.h"
#include "runtime/runtime_internal.h"

/* Skips a JSON number or null as cJSON writes them (the values of a record); NULL when
 * there is none at p. */
static const char *skip_value(const char *p, const char *end) {
  if (end - p >= 4 && memcmp(p, "null", 4) == 0) return p + 4;
  const char *q = p;
  while (q < end && (isdigit((unsigned char)*q) || *q == '-' || *q == '+' || *q == '.' || *q == 'e' || *q == 'E')) q++;
  return q > p ? q : NULL;
}

/* Whether p starts with the literal s (NULL p: no). */
static const char *skip_lit(const char *p, const char *end, const char *s) {
  const size_t k = strlen(s);
  return p && (size_t)(end - p) >= k && memcmp(p, s, k) == 0 ? p + k : NULL;
}

/* capgnn's own metrics file, told from a user's JSON Lines log that also has an
 * "epoch" key (a DGL script's {"epoch": 1, "loss": 0.5}): its first line is one of
 * capgnn's records exactly as cJSON writes them, compact and in capgnn's key order,
 * unchanged since the first metrics file:
 *   {"epoch":E,"loss":X,"train_acc":X,"val_acc":X,"test_acc":X,"val_loss":X,"epoch_s":
 * (E an integer, X a number or null), or, where a run wrote no epoch record before it,
 * the summary: {"summary":true,"graph":"NAME","nodes": (the name may run past the bytes
 * read). */
static int metrics_match(const char *head, size_t n) {
  const char *end = head + n, *p;
  static const char *const keys[] = {",\"loss\":", ",\"train_acc\":", ",\"val_acc\":", ",\"test_acc\":",
                                     ",\"val_loss\":", ",\"epoch_s\":"};
  if ((p = skip_lit(head, end, "{\"epoch\":")) != NULL) {
    const char *q = p;
    while (q < end && isdigit((unsigned char)*q)) q++;
    if (q == p) return 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
      if (i > 0) q = skip_value(q, end);
      if (!(q = skip_lit(q, end, keys[i]))) return 0;
    }
    return 1;
  }
  if (!(p = skip_lit(head, end, "{\"summary\":true,\"graph\":\""))) return 0;
  for (; p < end; p++) { /* the name, a JSON string */
    if (*p == '\\') p++;
    else if (*p == '"') return skip_lit(p + 1, end, ",\"nodes\":") != NULL;
    else if (*p == '\n') return 0;
  }
  return 1;
}

const struct cg_outfile_kind *rt_metrics_kind(void) {
  static const struct cg_outfile_kind kind = {"capgnn metrics file (JSON Lines)", NULL, 0, metrics_match};
  return &kind;
}

int rt_metrics_probe(const char *path) {
  struct stat sb; /* a FIFO would block the open until a reader comes: leave it to the run */
  if (stat(path, &sb) == 0 && S_ISFIFO(sb.st_mode)) return CG_OK;
  if (cg_outfile_probe(path, "metrics file") == CG_OK) return CG_OK;
  char why[1024], said[1100];
  snprintf(why, sizeof why, "%s", cg_err_msg());
  /* the reason without outfile's "cannot write the metrics file to 'PATH': " */
  snprintf(said, sizeof said, "cannot write the metrics file to '%s': ", path);
  const char *reason = strncmp(why, said, strlen(said)) == 0 ? why + strlen(said) : why;
  return cg_err_set(CG_ERR_IO, "cannot create metrics file %s (--metrics): %s", path, reason);
}

/* The highest epoch of the epoch records ('{"epoch":E,') of an existing metrics file, 0
 * when it has none or cannot be read: what a resumed run appends after. */
static int metrics_file_epoch(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  static const char key[] = "{\"epoch\":";
  char head[32];
  int max = 0, at_line = 1, c;
  while ((c = fgetc(f)) != EOF) {
    if (c == '\n') {
      at_line = 1;
      continue;
    }
    if (!at_line) continue;
    at_line = 0;
    head[0] = (char)c; /* the start of a line: enough of it for the key and the epoch */
    size_t n = 1;
    while (n < sizeof head - 1 && (c = fgetc(f)) != EOF && c != '\n') head[n++] = (char)c;
    head[n] = '\0';
    if (c == '\n') at_line = 1;
    if (strncmp(head, key, sizeof key - 1) != 0) continue;
    const long e = strtol(head + sizeof key - 1, NULL, 10);
    if (e > max && e <= RT_MAX_EPOCHS) max = (int)e;
  }
  fclose(f);
  return max;
}

/* Whether file a was modified after file b (nanoseconds; b missing: yes). */
static int newer_than(const char *a, const char *b) {
  struct stat sa, sb;
  if (stat(a, &sa) != 0) return 0;
  if (stat(b, &sb) != 0) return 1;
  if (sa.st_mtim.tv_sec != sb.st_mtim.tv_sec) return sa.st_mtim.tv_sec > sb.st_mtim.tv_sec;
  return sa.st_mtim.tv_nsec > sb.st_mtim.tv_nsec;
}

/* Temporaries of earlier runs beside the file (PATH.tmp.XXXXXX holding capgnn records): a
 * run that was killed outright (kill -9, a rank of its job lost, the stall watchdog) left
 * its records there, not in PATH. A resumed run appends to PATH and would not say that
 * the epochs before its checkpoint are elsewhere: say it, naming them. Only for a
 * temporary newer than PATH: once a later run has written PATH, the temporary's records
 * are older than PATH's, and moving it over PATH would lose the newer ones. */
static void metrics_warn_leftovers(const char *path) {
  char *copy = strdup(path), *copy2 = strdup(path);
  if (!copy || !copy2) goto done;
  const char *folder = dirname(copy), *base = basename(copy2);
  const size_t nb = strlen(base);
  DIR *d = opendir(folder);
  if (!d) goto done;
  int named = 0, more = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    const char *n = e->d_name;
    if (strncmp(n, base, nb) != 0 || strncmp(n + nb, ".tmp.", 5) != 0 || strlen(n + nb + 5) != 6) continue;
    char full[4200], head[256];
    snprintf(full, sizeof full, "%s/%s", folder, n);
    if (!newer_than(full, path)) continue;
    FILE *f = fopen(full, "rb");
    if (!f) continue;
    const size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    if (got == 0 || !metrics_match(head, got)) continue; /* empty, or not capgnn's */
    if (named == 3) {
      more++;
      continue;
    }
    named++;
    const int last = metrics_file_epoch(full);
    char upto[64] = "";
    if (last > 0) snprintf(upto, sizeof upto, " up to epoch %d", last);
    LOG_WARN("train", "--metrics %s: %s holds the records%s of an earlier run that did not finish the file (killed "
             "outright: kill -9, a lost rank of its job, the stall watchdog; or a run that still writes it), newer "
             "than %s; this run does not read it: to keep those records, move it over %s before a --resume (which "
             "appends to it), or delete it", path, strchr(path, '/') ? full : n, upto, path, path);
  }
  closedir(d);
  if (more > 0) LOG_WARN("train", "--metrics %s: and %d more such temporaries beside it", path, more);
done:
  free(copy);
  free(copy2);
}

int rt_metrics_open(struct rt_metrics *mt, const char *path, int append) {
  memset(mt, 0, sizeof *mt);
  mt->path = path;
  if (!path) return CG_OK;
  metrics_warn_leftovers(path);
  if (append) mt->file_epoch = metrics_file_epoch(path);
  TRY(append ? cg_outfile_open_keep(&mt->of, path, "metrics file") : cg_outfile_open(&mt->of, path, "metrics file"));
  mt->f = mt->of.fp;
  const long at = ftell(mt->f); /* a resumed run's copy of the file: complete records */
  mt->complete = at > 0 ? at : 0;
  return CG_OK;
}

/* A record could not be written (the disk is full): cut the temporary back to the
 * complete records, so that the run's end still makes it the file, and write no more.
 * The training goes on: its model and checkpoint matter more than the rest of the log
 * (as a failed intermediate checkpoint, which warns). */
static void metrics_broken(struct rt_metrics *mt, int err) {
  mt->broken = 1;
  LOG_WARN("train", "cannot write metrics file %s: %s (disk full?); it keeps the records written so far%s, and "
           "this run writes no more of them nor its summary; training goes on", mt->path, strerror(err),
           mt->last_epoch > 0 ? "" : " (none of this run's)");
  if (!mt->of.tmp) { /* written in place (a pipe, a device): nothing to cut back */
    clearerr(mt->f);
    return;
  }
  fclose(mt->of.fp); /* (its unwritten buffer goes: the cut below drops any part of it) */
  mt->of.fp = NULL;
  if (truncate(mt->of.tmp, (off_t)mt->complete) == 0) mt->of.fp = fopen(mt->of.tmp, "ab");
  if (!mt->of.fp) { /* cannot even keep it: the temporary stays, named */
    LOG_WARN("train", "the metrics records written so far stay in %s", mt->of.tmp);
    free(mt->of.tmp);
    free(mt->of.path);
    memset(&mt->of, 0, sizeof mt->of);
    mt->f = NULL;
    return;
  }
  mt->f = mt->of.fp;
}

int rt_metrics_close(struct rt_metrics *mt, int st) {
  if (!mt->f) return st;
  mt->f = NULL;
  if (mt->broken && mt->last_epoch > 0)
    LOG_WARN("train", "metrics file %s is incomplete: its records end at epoch %d, without a summary (a write "
             "failed)", mt->path, mt->last_epoch);
  if (mt->records == 0) { /* nothing of this run: an earlier file stays */
    cg_outfile_abort(&mt->of);
    return st;
  }
  char msg[2048];
  snprintf(msg, sizeof msg, "%s", cg_err_msg()); /* commit may overwrite the run's error */
  const int rc = cg_outfile_commit(&mt->of);
  if (st == CG_OK) return rc;
  if (rc != CG_OK) cg_err_set(st, "%s", msg);
  return st;
}

static void json_num(cJSON *o, const char *key, double v) {
  /* NaN/inf are not JSON: write null (cJSON would too, but explicitly is clearer). */
  if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
  else cJSON_AddNullToObject(o, key);
}

/* One line, flushed; the object is consumed. A failed write is not an error of the
 * run (metrics_broken). */
static int write_line(struct rt_metrics *mt, cJSON *o, int epoch) {
  if (mt->broken) {
    cJSON_Delete(o);
    return CG_OK;
  }
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (!s) return cg_err_set(CG_ERR_NOMEM, "out of memory formatting a metrics record");
  errno = 0;
  int ok = fputs(s, mt->f) >= 0 && fputc('\n', mt->f) != EOF && fflush(mt->f) == 0;
  const int err = errno ? errno : EIO;
  const size_t len = strlen(s) + 1;
  cJSON_free(s);
  if (!ok) {
    metrics_broken(mt, err);
    return CG_OK;
  }
  mt->complete += (long)len;
  mt->records++;
  if (epoch > 0) mt->last_epoch = epoch;
  return CG_OK;
}

/* The halo cache's numbers (runtime_internal.h, struct rt_cache_row) as an object. */
static cJSON *cache_row(const struct rt_cache_row *r) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, "lookups", r->lookups);
  cJSON_AddNumberToObject(o, "rank_hits", r->rank_hits);
  cJSON_AddNumberToObject(o, "node_hits", r->node_hits);
  cJSON_AddNumberToObject(o, "misses", r->misses);
  cJSON_AddNumberToObject(o, "refreshed", r->refreshed);
  cJSON_AddNumberToObject(o, "bytes_intra_node", r->bytes_intra);
  cJSON_AddNumberToObject(o, "bytes_inter_node", r->bytes_inter);
  cJSON_AddNumberToObject(o, "bytes_shm", r->bytes_shm);
  cJSON_AddNumberToObject(o, "bytes_h2d", r->bytes_h2d);
  cJSON_AddNumberToObject(o, "bytes_d2h", r->bytes_d2h);
  cJSON_AddNumberToObject(o, "bytes_exact", r->bytes_exact);
  cJSON_AddNumberToObject(o, "bytes_exact_inter_node", r->bytes_exact_inter);
  /* forward rows and gradients: what the plain exchange would have sent through MPI
   * less what was sent (the difference of halo_bytes against a run without the cache) */
  cJSON_AddNumberToObject(o, "bytes_saved",
                          r->bytes_exact - r->bytes_intra - r->bytes_inter + r->grad_bytes_exact - r->grad_bytes);
  json_num(o, "age_mean", r->lookups > 0 ? r->age_sum / r->lookups : NAN);
  cJSON_AddNumberToObject(o, "age_max", r->age_max);
  cJSON_AddNumberToObject(o, "grad_bytes", r->grad_bytes);
  cJSON_AddNumberToObject(o, "grad_bytes_shm", r->grad_bytes_shm);
  cJSON_AddNumberToObject(o, "grad_bytes_exact", r->grad_bytes_exact);
  cJSON_AddNumberToObject(o, "grad_refreshed", r->grad_refreshed);
  cJSON_AddNumberToObject(o, "grad_used", r->grad_used);
  cJSON_AddNumberToObject(o, "grad_age_max", r->grad_age_max);
  cJSON_AddNumberToObject(o, "prefetched", r->prefetched);
  cJSON_AddNumberToObject(o, "end_copied", r->end_copied);
  cJSON_AddNumberToObject(o, "end_wait_s", r->end_wait_s);
  cJSON_AddNumberToObject(o, "adapt_sent", r->adapt_sent);
  cJSON_AddNumberToObject(o, "adapt_skipped", r->adapt_skipped);
  cJSON_AddNumberToObject(o, "grad_sent", r->grad_sent);
  cJSON_AddNumberToObject(o, "grad_skipped", r->grad_skipped);
  return o;
}

/* {"...": total, "layers": [{"layer": l, ...}, ...]} */
static cJSON *cache_object(const struct rt_cache_record *c) {
  cJSON *o = cache_row(&c->total), *arr = cJSON_CreateArray();
  if (!o || !arr) {
    cJSON_Delete(o);
    cJSON_Delete(arr);
    return NULL;
  }
  for (int l = 1; l < c->nlayers; l++) {
    cJSON *x = cache_row(&c->layer[l]);
    if (!x) continue;
    cJSON_AddNumberToObject(x, "layer", l);
    cJSON_AddItemToArray(arr, x);
  }
  cJSON_AddItemToObject(o, "layers", arr);
  return o;
}

/* The seed as a number, or as a string past 2^53 (a JSON number would round it). */
static void json_seed(cJSON *o, uint64_t seed) {
  if (seed <= (1ull << 53)) {
    cJSON_AddNumberToObject(o, "seed", (double)seed);
  } else {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)seed);
    cJSON_AddStringToObject(o, "seed", buf);
  }
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
  mt->halo_bytes += (double)rec->halo_bytes;
  mt->allreduce_bytes += (double)rec->allreduce_bytes;
  mt->inter_node_bytes += (double)rec->inter_node_bytes;
  cJSON_AddNumberToObject(o, "halo_bytes", rec->halo_bytes);
  cJSON_AddNumberToObject(o, "allreduce_bytes", rec->allreduce_bytes);
  cJSON_AddNumberToObject(o, "inter_node_bytes", rec->inter_node_bytes);
  json_num(o, "compute_max_s", rec->compute_max_s);
  json_num(o, "compute_min_s", rec->compute_min_s);
  if (rec->cache_lookups > 0)
    cJSON_AddNumberToObject(o, "cache_hit_rate", (double)rec->cache_hits / (double)rec->cache_lookups);
  else
    cJSON_AddNullToObject(o, "cache_hit_rate");
  /* beside it, the best any cache of the same slots could do (a set-up figure) */
  json_num(o, "cache_oracle_hit_rate", rec->cache_lookups > 0 && rec->cache ? rec->cache->oracle_hit_rate : NAN);
  json_num(o, "eval_s", rec->eval_s);
  json_seed(o, rec->seed); /* which run of a --seeds sweep the record is of */
  if (rec->cache) cJSON_AddItemToObject(o, "cache", cache_object(rec->cache));
  if (rec->nranks > 1 && rec->rank_compute_s && rec->rank_comm_s) {
    cJSON_AddItemToObject(o, "rank_compute_s", cJSON_CreateDoubleArray(rec->rank_compute_s, rec->nranks));
    cJSON_AddItemToObject(o, "rank_comm_s", cJSON_CreateDoubleArray(rec->rank_comm_s, rec->nranks));
  }
  return write_line(mt, o, rec->epoch);
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
  if (cfg->model == RT_MODEL_GAT) {
    cJSON_AddNumberToObject(o, "heads", cfg->heads);
    cJSON_AddNumberToObject(o, "out_heads", cfg->out_heads);
    cJSON_AddNumberToObject(o, "attn_dropout", fdec(rt_config_attn_dropout(cfg)));
  }
  cJSON_AddStringToObject(o, "optimizer", rt_optimizer_str(cfg->optimizer));
  cJSON_AddNumberToObject(o, "lr", fdec(cfg->lr));
  cJSON_AddNumberToObject(o, "weight_decay", fdec(cfg->weight_decay));
  cJSON_AddStringToObject(o, "wd_scope", rt_wd_scope_str(cfg->wd_scope));
  cJSON_AddStringToObject(o, "feat_norm", cfg->feat_norm_row ? "row" : "none");
  if (cfg->norm_graph) cJSON_AddStringToObject(o, "norm_degrees", cfg->norm_graph);
  cJSON_AddStringToObject(o, "sparse_features", rt_sparse_features_str(cfg->sparse_features));
  cJSON_AddNumberToObject(o, "eval_every", cfg->eval_every);
  cJSON_AddBoolToObject(o, "overlap", cfg->overlap != 0);
  cJSON_AddStringToObject(o, "reorder", graph_reorder_name(cfg->reorder));
  cJSON_AddNumberToObject(o, "halo_bits", cfg->halo_bits);
  cJSON_AddStringToObject(o, "layer0_halo", rt_layer0_halo_str(cfg->layer0_halo));
  if (cfg->optimizer == RT_OPT_SGD) cJSON_AddNumberToObject(o, "momentum", fdec(cfg->momentum));
  cJSON_AddStringToObject(o, "lr_schedule", rt_lr_schedule_str(cfg->lr_schedule));
  cJSON_AddNumberToObject(o, "early_stop", cfg->early_stop);
  if (cfg->early_stop > 0) cJSON_AddStringToObject(o, "early_stop_rule", rt_early_stop_rule_str(cfg->early_stop_rule));
  json_seed(o, cfg->seed);
}

int rt_metrics_summary(struct rt_metrics *mt, const struct rt_local *loc, const struct cg_backend *be,
                       const struct rt_config *cfg, const struct rt_result *r, int resumed_from,
                       double t_start, const struct rt_cache_record *cache, int last,
                       const char *outcome, const struct rt_rank_times *ranks) {
  if (!mt->f) return CG_OK;
  cJSON *o = cJSON_CreateObject();
  if (!o) return cg_err_set(CG_ERR_NOMEM, "out of memory creating the metrics summary");
  cJSON_AddBoolToObject(o, "summary", 1);
  cJSON_AddStringToObject(o, "graph", loc->name);
  cJSON_AddNumberToObject(o, "nodes", (double)loc->n_global);
  cJSON_AddNumberToObject(o, "edges", (double)loc->m_global);
  cJSON_AddNumberToObject(o, "features", (double)loc->feat_dim);
  cJSON_AddBoolToObject(o, "features_sparse", loc->feat_sparse != 0);
  cJSON_AddNumberToObject(o, "classes", (double)loc->num_classes);
  cJSON_AddBoolToObject(o, "multilabel", loc->multilabel != 0);
  cJSON_AddStringToObject(o, "device", be->name);
  cJSON_AddStringToObject(o, "device_desc", rt_backend_describe(be));
  cJSON_AddNumberToObject(o, "threads", cfg->threads); /* (rank 0's, with a per-rank list) */
  if (cfg->threads_list) cJSON_AddStringToObject(o, "threads_per_rank", cfg->threads_list);
  cJSON_AddNumberToObject(o, "ranks", loc->nranks);
  /* an emulated heterogeneity is named wherever its numbers go (core/ops_emulate.h) */
  if (getenv("CAPGNN_EMULATE_SPEED") && getenv("CAPGNN_EMULATE_SPEED")[0])
    cJSON_AddStringToObject(o, "emulate_speed", getenv("CAPGNN_EMULATE_SPEED"));
  add_config(o, cfg);
  if (loc->job) { /* a partitioned job: how it was set up ("nodes" above counts vertices) */
    cJSON *j = cJSON_AddObjectToObject(o, "job");
    if (j) {
      cJSON_AddStringToObject(j, "partition", loc->job->partition);
      cJSON_AddNumberToObject(j, "part_seed", (double)loc->job->part_seed);
      cJSON_AddStringToObject(j, "load", loc->job->load);
      cJSON_AddStringToObject(j, "allreduce", loc->job->allreduce);
      cJSON_AddNumberToObject(j, "nodes", loc->job->nodes); /* machines, or emulated nodes */
      cJSON_AddBoolToObject(j, "emulated_nodes", loc->job->emulated_nodes != 0);
    }
  }
  /* what --layer0-halo chose (the option itself is in the configuration above) */
  cJSON_AddStringToObject(o, "layer0_halo_chosen",
                          rt_layer0_exchange_choose(cfg, loc->feat_dim, loc->num_classes, loc->feat_sparse,
                                                    rt_local_exchanges(loc), NULL) ? "exchange" : "local");
  /* what --reorder applied (the option is in the configuration above), and on how many ranks */
  cJSON_AddStringToObject(o, "reorder_applied", graph_reorder_name(loc->reorder_applied));
  cJSON_AddNumberToObject(o, "reorder_ranks", loc->reorder_ranks);
  cJSON_AddNumberToObject(o, "params", (double)r->num_params);
  cJSON_AddNumberToObject(o, "epochs", last);
  cJSON_AddStringToObject(o, "outcome", outcome);
  cJSON_AddNumberToObject(o, "resumed_from_epoch", resumed_from);
  json_num(o, "best_val_acc", r->best_val_acc);
  json_num(o, "test_acc_at_best_val", r->test_acc_at_best_val);
  cJSON_AddNumberToObject(o, "best_epoch", r->best_epoch);
  json_num(o, "final_loss", r->loss[last - 1]);
  json_num(o, "final_train_acc", r->final_train_acc);
  json_num(o, "final_val_acc", r->final_val_acc);
  json_num(o, "final_test_acc", r->final_test_acc);
  json_num(o, "median_epoch_s", r->median_epoch_s);
  json_num(o, "median_comm_exposed_s", r->median_comm_exposed_s);
  json_num(o, "median_comm_hidden_s", r->median_comm_hidden_s);
  json_num(o, "total_s", cg_time_now() - t_start);
  /* the epoch records' bytes summed: what this run sent in all */
  cJSON_AddNumberToObject(o, "halo_bytes_total", mt->halo_bytes);
  cJSON_AddNumberToObject(o, "allreduce_bytes_total", mt->allreduce_bytes);
  cJSON_AddNumberToObject(o, "inter_node_bytes_total", mt->inter_node_bytes);
  cJSON_AddNumberToObject(o, "peak_rss_bytes", (double)cg_peak_rss_bytes());
  if (ranks && ranks->nranks > 1) { /* medians per rank, and what was predicted (rapa/balance.h) */
    cJSON *arr = cJSON_AddArrayToObject(o, "per_rank");
    for (int q = 0; arr && q < ranks->nranks; q++) {
      cJSON *x = cJSON_CreateObject();
      if (!x) break;
      cJSON_AddNumberToObject(x, "rank", q);
      json_num(x, "median_compute_s", ranks->compute_s[q]);
      json_num(x, "median_comm_s", ranks->comm_s[q]);
      if (ranks->pred) {
        json_num(x, "predicted_compute_s", ranks->pred->compute_s[q]);
        json_num(x, "predicted_comm_s", ranks->pred->comm_s[q]);
        json_num(x, "predicted_lambda_s", ranks->pred->compute_s[q] + ranks->pred->comm_s[q]);
        json_num(x, "predicted_memory_bytes", ranks->pred->memory_bytes[q]);
        json_num(x, "target_share", ranks->pred->target[q]);
      }
      cJSON_AddItemToArray(arr, x);
    }
    if (ranks->pred) {
      cJSON *p = cJSON_AddObjectToObject(o, "rapa");
      cJSON_AddStringToObject(p, "rates", ranks->pred->rates);
      cJSON_AddNumberToObject(p, "passes", ranks->pred->passes);
      cJSON_AddBoolToObject(p, "corrected", ranks->pred->corrected != 0);
      /* (EPS is a float option: written as its shortest decimal, 0.01 rather than
       * 0.0099999998; without pruning the cut is not counted and there is no
       * normalisation or fraction to name: null; pruned_edges 0 says nothing was removed) */
      const int pruning = ranks->pred->prune_eps > 0;
      cJSON_AddNumberToObject(p, "prune_eps", fdec((float)ranks->pred->prune_eps));
      if (pruning) {
        cJSON_AddStringToObject(p, "prune_norm", ranks->pred->prune_keep_degrees ? "original" : "pruned");
        cJSON_AddNumberToObject(p, "cut_edges", (double)ranks->pred->cut_edges);
      } else {
        cJSON_AddNullToObject(p, "prune_norm");
        cJSON_AddNullToObject(p, "cut_edges");
      }
      cJSON_AddNumberToObject(p, "pruned_edges", (double)ranks->pred->pruned_edges);
      if (pruning)
        json_num(p, "pruned_fraction", ranks->pred->cut_edges > 0 ? (double)ranks->pred->pruned_edges /
                                                                        (double)ranks->pred->cut_edges : 0.0);
      else
        cJSON_AddNullToObject(p, "pruned_fraction");
      cJSON_AddNumberToObject(p, "pruned_vertices", (double)ranks->pred->pruned_vertices);
      cJSON_AddBoolToObject(p, "exact", ranks->pred->pruned_edges == 0);
    }
  }
  if (cache) {
    cJSON *c = cache_object(cache);
    if (c) { /* the settings, every approximation among them */
      cJSON_AddStringToObject(c, "policy", cache->policy);
      cJSON_AddNumberToObject(c, "capacity", cache->capacity);
      if (cache->host_mb < 0) cJSON_AddStringToObject(c, "host_mb", "auto"); /* Algorithm 1 */
      else cJSON_AddNumberToObject(c, "host_mb", cache->host_mb);
      cJSON_AddNumberToObject(c, "staleness", cache->staleness);
      cJSON_AddNumberToObject(c, "grad_staleness", cache->grad_staleness);
      /* in force: adaptive staleness runs no prefetch thread (which rows are new depends
       * on the data) */
      cJSON_AddBoolToObject(c, "prefetch", cache->prefetch != 0 && !cache->adaptive);
      cJSON_AddBoolToObject(c, "adaptive", cache->adaptive != 0);
      if (cache->adaptive) cJSON_AddNumberToObject(c, "adapt_eps", cache->adapt_eps);
      cJSON_AddBoolToObject(c, "grad_adaptive", cache->grad_adaptive != 0);
      if (cache->grad_adaptive) cJSON_AddNumberToObject(c, "grad_adapt_eps", cache->grad_adapt_eps);
      /* adaptive at EPS 0 sends every row (gradient) every step: exact */
      cJSON_AddBoolToObject(c, "exact", (cache->staleness == 0 || (cache->adaptive && cache->adapt_eps == 0.0)) &&
                                            (cache->grad_staleness == 0 ||
                                             (cache->grad_adaptive && cache->grad_adapt_eps == 0.0)) &&
                                            cfg->halo_bits == 32);
      json_num(c, "policy_hit_rate", cache->policy_hit_rate);
      json_num(c, "oracle_hit_rate", cache->oracle_hit_rate);
    }
    cJSON_AddItemToObject(o, "cache", c);
  }
  return write_line(mt, o, 0);
}
