/* runtime/checkpoint.c — the checkpoint file (runtime.h, "checkpoints"): writing it,
 * reading it back, and whether a path may take one. How a run fits, restores and
 * saves a checkpoint is runtime/checkpoint_run.c.
 *
 * Layout (little-endian):
 *   "CAPGNN-CKPT\0" (12 bytes), uint32 format version,
 *   uint64 header length H, H bytes of JSON (the run's description and where it
 *   stands; the best and final accuracies and losses with 17 digits, so that they
 *   read back exactly, NaN written as null, the 64-bit seed as a string),
 *   float32 params[P], adam_m[P], adam_v[P], float64 loss[epoch],
 *   uint32 CRC-32 (zlib) of every byte before it.
 * The reader checks the magic, the version, the header's fields and their ranges,
 * the sizes against the file's length, then the CRC, before anything is used. */
#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <zlib.h>

#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "runtime/runtime.h"

#define CKPT_MAGIC "CAPGNN-CKPT"
#define CKPT_MAGIC_LEN 12
#define CKPT_VERSION 1u
#define CKPT_MAX_HEADER (1u << 20)
#define CKPT_MAX_PARAMS 2147483648.0 /* 2^31 floats per array */

void rt_checkpoint_free(struct rt_checkpoint *c) {
  if (!c) return;
  cg_free(c->params);
  cg_free(c->adam_m);
  cg_free(c->adam_v);
  cg_free(c->loss);
  cg_free(c->es_hist);
  memset(c, 0, sizeof *c);
}

/* ---- writing ---------------------------------------------------------------- */

struct ckpt_out {
  FILE *fp;
  uLong crc;
  int failed;
};

/* zlib's crc32 takes a uInt length: feed it at most 1 GiB at a time */
static uLong crc_add(uLong crc, const unsigned char *b, size_t n) {
  while (n > 0) {
    size_t k = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
    crc = crc32(crc, b, (uInt)k);
    b += k;
    n -= k;
  }
  return crc;
}

static void put(struct ckpt_out *o, const void *p, size_t n) {
  if (o->failed || n == 0) return;
  if (fwrite(p, 1, n, o->fp) != n) o->failed = 1;
  o->crc = crc_add(o->crc, p, n);
}

/* A double the reader gets back bit for bit: a resumed run compares its evaluations
 * with the best so far, and one ulp decides the best epoch. cJSON prints 15 digits
 * whenever they round-trip within its epsilon (41/46 comes back one ulp off); "%.17g"
 * always round-trips through strtod, which cJSON's parser uses. Non-finite values are
 * not JSON: null. (runtime/metrics.c keeps cJSON's printing: its numbers are read by
 * people and scripts, never resumed from.) */
static void num_exact_or_null(cJSON *o, const char *key, double v) {
  char txt[32];
  if (!isfinite(v)) {
    cJSON_AddNullToObject(o, key);
    return;
  }
  snprintf(txt, sizeof txt, "%.17g", v);
  cJSON_AddRawToObject(o, key, txt);
}

static char *header_json(const struct rt_checkpoint *c) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  char seed[32];
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed);
  cJSON_AddStringToObject(o, "format", "capgnn checkpoint");
  cJSON_AddStringToObject(o, "graph", c->graph);
  if (c->graph_spec[0]) cJSON_AddStringToObject(o, "graph_spec", c->graph_spec); /* optional */
  cJSON_AddNumberToObject(o, "graph_checksum", (double)c->graph_checksum);
  cJSON_AddNumberToObject(o, "nodes", (double)c->nodes);
  cJSON_AddNumberToObject(o, "features", (double)c->features);
  cJSON_AddNumberToObject(o, "classes", (double)c->classes);
  cJSON_AddStringToObject(o, "feat_norm", c->feat_norm_row ? "row" : "none");
  if (c->norm_graph[0]) cJSON_AddStringToObject(o, "norm_degrees", c->norm_graph);
  cJSON_AddStringToObject(o, "model", rt_model_kind_str(c->model));
  cJSON_AddNumberToObject(o, "layers", c->layers);
  cJSON_AddNumberToObject(o, "hidden", (double)c->hidden);
  cJSON_AddBoolToObject(o, "layernorm", c->layernorm != 0);
  if (c->model == RT_MODEL_GAT) {
    cJSON_AddNumberToObject(o, "heads", c->heads);
    cJSON_AddNumberToObject(o, "out_heads", c->out_heads);
    cJSON_AddNumberToObject(o, "attn_dropout", c->attn_dropout < 0.0f ? -1.0 : c->attn_dropout);
  }
  cJSON_AddNumberToObject(o, "dropout", c->dropout);
  cJSON_AddNumberToObject(o, "input_dropout", c->input_dropout < 0.0f ? -1.0 : c->input_dropout);
  cJSON_AddStringToObject(o, "optimizer", rt_optimizer_str(c->optimizer));
  cJSON_AddNumberToObject(o, "lr", c->lr);
  cJSON_AddNumberToObject(o, "weight_decay", c->weight_decay);
  cJSON_AddNumberToObject(o, "beta1", c->beta1);
  cJSON_AddNumberToObject(o, "beta2", c->beta2);
  cJSON_AddNumberToObject(o, "adam_eps", c->adam_eps);
  cJSON_AddStringToObject(o, "wd_scope", rt_wd_scope_str(c->wd_scope));
  cJSON_AddStringToObject(o, "seed", seed);
  cJSON_AddNumberToObject(o, "eval_every", c->eval_every);
  cJSON_AddStringToObject(o, "device", c->device);
  cJSON_AddNumberToObject(o, "threads", c->threads);
  if (c->gemm[0]) cJSON_AddStringToObject(o, "gemm", c->gemm); /* (optional: older files lack it) */
  cJSON_AddNumberToObject(o, "ranks", c->ranks);
  cJSON_AddNumberToObject(o, "epoch", c->epoch);
  cJSON_AddNumberToObject(o, "steps", (double)c->steps);
  cJSON_AddNumberToObject(o, "params", (double)c->num_params);
  num_exact_or_null(o, "best_val_acc", c->best_val_acc);
  num_exact_or_null(o, "best_val_loss", c->best_val_loss);
  num_exact_or_null(o, "test_acc_at_best_val", c->test_acc_at_best_val);
  cJSON_AddNumberToObject(o, "best_epoch", c->best_epoch);
  num_exact_or_null(o, "final_train_acc", c->final_train_acc);
  num_exact_or_null(o, "final_val_acc", c->final_val_acc);
  num_exact_or_null(o, "final_test_acc", c->final_test_acc);
  num_exact_or_null(o, "last_val_acc", c->last_val_acc);
  /* SGD, the schedule and early stopping (read as optional: older files lack them) */
  cJSON_AddNumberToObject(o, "momentum", c->momentum);
  cJSON_AddStringToObject(o, "lr_schedule", rt_lr_schedule_str(c->lr_schedule));
  cJSON_AddNumberToObject(o, "lr_step_size", c->lr_step_size);
  cJSON_AddNumberToObject(o, "lr_gamma", c->lr_gamma);
  cJSON_AddNumberToObject(o, "lr_warmup", c->lr_warmup);
  cJSON_AddNumberToObject(o, "lr_epochs", c->lr_epochs);
  cJSON_AddNumberToObject(o, "early_stop", c->early_stop);
  cJSON_AddStringToObject(o, "early_stop_rule", rt_early_stop_rule_str(c->early_stop_rule));
  cJSON_AddBoolToObject(o, "stopped_early", c->stopped_early != 0);
  cJSON_AddNumberToObject(o, "es_evals", c->es_evals);
  cJSON_AddNumberToObject(o, "es_since", c->es_since);
  num_exact_or_null(o, "es_best_loss", c->es_best_loss);
  if (c->early_stop_rule == RT_ES_GAT) num_exact_or_null(o, "es_best_acc", c->es_best_acc);
  cJSON *hist = cJSON_AddArrayToObject(o, "es_hist");
  for (int i = 0; hist && i < c->es_hist_n; i++) {
    char txt[32];
    snprintf(txt, sizeof txt, "%.17g", c->es_hist[i]);
    cJSON *x = isfinite(c->es_hist[i]) ? cJSON_CreateRaw(txt) : cJSON_CreateNull();
    if (x) cJSON_AddItemToArray(hist, x);
  }
  char *txt = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (!txt) return NULL;
  /* a newline ends the header, so that `head -1 FILE` shows it alone */
  size_t n = strlen(txt);
  char *line = realloc(txt, n + 2);
  if (!line) {
    free(txt);
    return NULL;
  }
  line[n] = '\n';
  line[n + 1] = '\0';
  return line;
}

int rt_checkpoint_write(const char *path, const struct rt_checkpoint *c) {
  if (c->num_params < 1 || (double)c->num_params > CKPT_MAX_PARAMS || c->epoch < 1 || c->epoch > RT_MAX_EPOCHS)
    return cg_err_set(CG_ERR_ARG, "checkpoint %s: %lld parameters after %d epochs cannot be saved "
                      "(at most 2^31 parameters)", path, (long long)c->num_params, c->epoch);
  char *json = header_json(c);
  if (!json) return cg_err_set(CG_ERR_NOMEM, "checkpoint %s: out of memory for its header", path);
  struct cg_outfile of;
  int st = cg_outfile_open(&of, path, "checkpoint");
  if (st != CG_OK) {
    free(json);
    return st;
  }
  struct ckpt_out o = {of.fp, crc32(0L, Z_NULL, 0), 0};
  const uint32_t version = CKPT_VERSION;
  const uint64_t hlen = strlen(json);
  const size_t pbytes = (size_t)c->num_params * sizeof(float);
  put(&o, CKPT_MAGIC, CKPT_MAGIC_LEN);
  put(&o, &version, sizeof version);
  put(&o, &hlen, sizeof hlen);
  put(&o, json, (size_t)hlen);
  put(&o, c->params, pbytes);
  put(&o, c->adam_m, pbytes);
  put(&o, c->adam_v, pbytes);
  put(&o, c->loss, (size_t)c->epoch * sizeof(double));
  const uint32_t crc = (uint32_t)o.crc;
  if (!o.failed && fwrite(&crc, sizeof crc, 1, of.fp) != 1) o.failed = 1;
  free(json);
  if (o.failed) {
    int e = errno;
    cg_outfile_abort(&of);
    return cg_err_set(CG_ERR_IO, "checkpoint %s: write failed: %s (the previous checkpoint, if any, "
                      "is kept)", path, strerror(e ? e : EIO));
  }
  return cg_outfile_commit(&of);
}

/* ---- reading ---------------------------------------------------------------- */

/* flags: null reads as NaN; the value must be an integer */
enum { JSON_NULL_OK = 1, JSON_INTEGER = 2 };

static int json_number(const cJSON *h, const char *key, double lo, double hi, double *out,
                       const char *path, int flags) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, key);
  if ((flags & JSON_NULL_OK) && cJSON_IsNull(v)) {
    *out = NAN;
    return CG_OK;
  }
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
      ((flags & JSON_INTEGER) && v->valuedouble != floor(v->valuedouble)))
    return cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field '%s' is missing, outside [%g, %g]%s",
                      path, key, lo, hi, (flags & JSON_INTEGER) ? " or not an integer" : "");
  *out = v->valuedouble;
  return CG_OK;
}

static int json_choice(const cJSON *h, const char *key, const char *a, const char *b, int *out,
                       const char *path) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, key);
  if (cJSON_IsString(v) && strcmp(v->valuestring, a) == 0) return *out = 0, CG_OK;
  if (cJSON_IsString(v) && strcmp(v->valuestring, b) == 0) return *out = 1, CG_OK;
  return cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field '%s' should be \"%s\" or \"%s\"", path,
                    key, a, b);
}

/* The fields later versions added (SGD, the schedule, early stopping): a file without
 * them was written by Adam without a schedule or early stopping. */
static int parse_optional(const cJSON *h, const char *path, struct rt_checkpoint *c) {
  double d = 0.0;
  c->lr_gamma = 0.1f;
  c->es_best_loss = INFINITY;
  c->es_best_acc = -1.0;
#define OPT_NUM(key, lo, hi, dst, type, flags)                                   \
  if (cJSON_GetObjectItemCaseSensitive(h, key)) {                                \
    TRY(json_number(h, key, lo, hi, &d, path, flags));                           \
    dst = (type)d;                                                               \
  }
  OPT_NUM("momentum", 0, 1, c->momentum, float, 0);
  OPT_NUM("lr_step_size", 0, 2147483647.0, c->lr_step_size, int, JSON_INTEGER);
  OPT_NUM("lr_gamma", 0, 1, c->lr_gamma, float, 0);
  OPT_NUM("lr_warmup", 0, RT_MAX_EPOCHS, c->lr_warmup, int, JSON_INTEGER);
  OPT_NUM("lr_epochs", 0, RT_MAX_EPOCHS, c->lr_epochs, int, JSON_INTEGER);
  OPT_NUM("early_stop", 0, RT_MAX_EARLY_STOP, c->early_stop, int, JSON_INTEGER);
  OPT_NUM("es_evals", 0, RT_MAX_EPOCHS, c->es_evals, int, JSON_INTEGER);
  OPT_NUM("es_since", 0, RT_MAX_EPOCHS, c->es_since, int, JSON_INTEGER);
  OPT_NUM("es_best_loss", 0, 1e300, c->es_best_loss, double, JSON_NULL_OK);
  OPT_NUM("es_best_acc", -1, 1, c->es_best_acc, double, JSON_NULL_OK);
#undef OPT_NUM
  if (isnan(c->es_best_loss)) c->es_best_loss = INFINITY;
  if (isnan(c->es_best_acc)) c->es_best_acc = -1.0;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, "lr_schedule");
  if (v) {
    if (cJSON_IsString(v) && strcmp(v->valuestring, "none") == 0) c->lr_schedule = RT_LR_NONE;
    else if (cJSON_IsString(v) && strcmp(v->valuestring, "step") == 0) c->lr_schedule = RT_LR_STEP;
    else if (cJSON_IsString(v) && strcmp(v->valuestring, "cosine") == 0) c->lr_schedule = RT_LR_COSINE;
    else return cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field 'lr_schedule' should be none, step or cosine", path);
  }
  v = cJSON_GetObjectItemCaseSensitive(h, "early_stop_rule");
  if (v) {
    if (cJSON_IsString(v) && strcmp(v->valuestring, "patience") == 0) c->early_stop_rule = RT_ES_PATIENCE;
    else if (cJSON_IsString(v) && strcmp(v->valuestring, "window") == 0) c->early_stop_rule = RT_ES_WINDOW;
    else if (cJSON_IsString(v) && strcmp(v->valuestring, "gat") == 0) c->early_stop_rule = RT_ES_GAT;
    else return cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field 'early_stop_rule' should be patience, window or gat", path);
  }
  v = cJSON_GetObjectItemCaseSensitive(h, "stopped_early");
  if (v) {
    if (!cJSON_IsBool(v)) return cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field 'stopped_early' should be true or false", path);
    c->stopped_early = cJSON_IsTrue(v);
  }
  v = cJSON_GetObjectItemCaseSensitive(h, "es_hist");
  if (v) {
    const int n = cJSON_GetArraySize(v);
    if (!cJSON_IsArray(v) || n > RT_MAX_EARLY_STOP || n > c->early_stop)
      return cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field 'es_hist' should be an array of at most "
                        "early_stop (%d) numbers", path, c->early_stop);
    if (n > 0) {
      c->es_hist = cg_malloc((size_t)n * sizeof(double), "checkpoint early-stopping window");
      if (!c->es_hist) return CG_ERR_NOMEM;
    }
    const cJSON *x;
    int i = 0;
    cJSON_ArrayForEach(x, v) {
      if (cJSON_IsNull(x)) c->es_hist[i++] = NAN;
      else if (cJSON_IsNumber(x)) c->es_hist[i++] = x->valuedouble;
      else return cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field 'es_hist' holds a non-number", path);
    }
    c->es_hist_n = n;
  }
  return CG_OK;
}

static int parse_header(const char *json, size_t len, const char *path, struct rt_checkpoint *c) {
  cJSON *h = cJSON_ParseWithLength(json, len);
  if (!h) return cg_err_set(CG_ERR_FORMAT, "checkpoint %s: the header is not valid JSON", path);
  int st = CG_OK;
  double d;
  int k = 0;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, "format");
  if (!cJSON_IsString(v) || strcmp(v->valuestring, "capgnn checkpoint") != 0) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: not a capgnn checkpoint header", path);
    goto done;
  }
  v = cJSON_GetObjectItemCaseSensitive(h, "graph");
  if (!cJSON_IsString(v)) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field 'graph' is missing", path);
    goto done;
  }
  snprintf(c->graph, sizeof c->graph, "%s", v->valuestring);
  v = cJSON_GetObjectItemCaseSensitive(h, "graph_spec"); /* optional: absent in older files and for files */
  if (v && (!cJSON_IsString(v) || strncmp(v->valuestring, "synth:", 6) != 0 ||
            strlen(v->valuestring) >= sizeof c->graph_spec)) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field 'graph_spec' should be a synth: spec of at most %zu "
                    "characters", path, sizeof c->graph_spec - 1);
    goto done;
  }
  snprintf(c->graph_spec, sizeof c->graph_spec, "%s", v ? v->valuestring : "");
#define NUM(key, lo, hi, dst, type)                                        \
  do {                                                                     \
    TRY_GOTO(json_number(h, key, lo, hi, &d, path, 0), done);              \
    dst = (type)d;                                                         \
  } while (0)
#define INT(key, lo, hi, dst, type)                                        \
  do {                                                                     \
    TRY_GOTO(json_number(h, key, lo, hi, &d, path, JSON_INTEGER), done);   \
    dst = (type)d;                                                         \
  } while (0)
#define NUM_OR_NAN(key, lo, hi, dst)                                       \
  do {                                                                     \
    TRY_GOTO(json_number(h, key, lo, hi, &d, path, JSON_NULL_OK), done);   \
    dst = d;                                                               \
  } while (0)
  INT("graph_checksum", 0, 4294967295.0, c->graph_checksum, uint32_t);
  INT("nodes", 0, 9e15, c->nodes, int64_t);
  INT("features", 0, 9e15, c->features, int64_t);
  INT("classes", 0, 9e15, c->classes, int64_t);
  TRY_GOTO(json_choice(h, "feat_norm", "none", "row", &c->feat_norm_row, path), done);
  v = cJSON_GetObjectItemCaseSensitive(h, "norm_degrees"); /* optional: absent = the graph's own */
  if (v && !cJSON_IsString(v)) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field 'norm_degrees' is not a string", path);
    goto done;
  }
  snprintf(c->norm_graph, sizeof c->norm_graph, "%s", v ? v->valuestring : "");
  v = cJSON_GetObjectItemCaseSensitive(h, "model");
  if (cJSON_IsString(v) && strcmp(v->valuestring, "gat") == 0) {
    c->model = RT_MODEL_GAT;
  } else {
    TRY_GOTO(json_choice(h, "model", "gcn", "sage", &k, path), done);
    c->model = k ? RT_MODEL_SAGE : RT_MODEL_GCN;
  }
  INT("layers", 1, 64, c->layers, int);
  INT("hidden", 1, 1 << 20, c->hidden, int64_t);
  v = cJSON_GetObjectItemCaseSensitive(h, "layernorm");
  if (!cJSON_IsBool(v)) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field 'layernorm' is missing", path);
    goto done;
  }
  c->layernorm = cJSON_IsTrue(v);
  c->heads = 8; /* rt_config_defaults' (unused by other models) */
  c->out_heads = 1;
  c->attn_dropout = -1.0f;
  if (c->model == RT_MODEL_GAT) {
    INT("heads", 1, 1024, c->heads, int);
    INT("out_heads", 1, 1024, c->out_heads, int);
    NUM("attn_dropout", -1, 1, c->attn_dropout, float);
  }
  NUM("dropout", 0, 1, c->dropout, float);
  NUM("input_dropout", -1, 1, c->input_dropout, float);
  v = cJSON_GetObjectItemCaseSensitive(h, "optimizer");
  if (cJSON_IsString(v) && strcmp(v->valuestring, "sgd") == 0) {
    c->optimizer = RT_OPT_SGD;
  } else {
    TRY_GOTO(json_choice(h, "optimizer", "adam", "adamw", &k, path), done);
    c->optimizer = k ? RT_OPT_ADAMW : RT_OPT_ADAM;
  }
  /* float fields: at most the largest float (a larger value would become inf, which
   * the writer cannot write back and a run must not train with) */
  NUM("lr", 0, FLT_MAX, c->lr, float);
  NUM("weight_decay", 0, FLT_MAX, c->weight_decay, float);
  NUM("beta1", 0, 1, c->beta1, float);
  NUM("beta2", 0, 1, c->beta2, float);
  NUM("adam_eps", 0, FLT_MAX, c->adam_eps, float);
  TRY_GOTO(json_choice(h, "wd_scope", "all", "first", &k, path), done);
  c->wd_scope = k ? RT_WD_FIRST : RT_WD_ALL;
  v = cJSON_GetObjectItemCaseSensitive(h, "seed");
  char *end = NULL;
  if (!cJSON_IsString(v) || strspn(v->valuestring, "0123456789") != strlen(v->valuestring) ||
      !v->valuestring[0] || strlen(v->valuestring) > 20 ||
      (errno = 0, c->seed = strtoull(v->valuestring, &end, 10), errno != 0)) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field 'seed' should be a decimal string", path);
    goto done;
  }
  INT("eval_every", 1, 2147483647.0, c->eval_every, int);
  v = cJSON_GetObjectItemCaseSensitive(h, "device");
  if (!cJSON_IsString(v)) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field 'device' is missing", path);
    goto done;
  }
  snprintf(c->device, sizeof c->device, "%s", v->valuestring);
  INT("threads", 0, 4096, c->threads, int);
  v = cJSON_GetObjectItemCaseSensitive(h, "gemm");
  if (v && !cJSON_IsString(v)) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field 'gemm' should be a string", path);
    goto done;
  }
  snprintf(c->gemm, sizeof c->gemm, "%s", v ? v->valuestring : "");
  INT("ranks", 1, 1 << 24, c->ranks, int);
  INT("epoch", 1, RT_MAX_EPOCHS, c->epoch, int);
  INT("steps", 0, c->epoch, c->steps, int64_t); /* one optimizer step an epoch */
  INT("params", 1, CKPT_MAX_PARAMS, c->num_params, int64_t);
  NUM_OR_NAN("best_val_acc", 0, 1, c->best_val_acc);
  NUM_OR_NAN("best_val_loss", 0, 1e300, c->best_val_loss);
  NUM_OR_NAN("test_acc_at_best_val", 0, 1, c->test_acc_at_best_val);
  INT("best_epoch", 0, c->epoch, c->best_epoch, int);
  NUM_OR_NAN("final_train_acc", 0, 1, c->final_train_acc);
  NUM_OR_NAN("final_val_acc", 0, 1, c->final_val_acc);
  NUM_OR_NAN("final_test_acc", 0, 1, c->final_test_acc);
  NUM_OR_NAN("last_val_acc", 0, 1, c->last_val_acc);
  TRY_GOTO(parse_optional(h, path, c), done);
  if (isnan(c->best_val_loss)) c->best_val_loss = INFINITY; /* "no best yet" */
  if ((c->best_epoch == 0) != isnan(c->best_val_acc)) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: best_epoch %d and best_val_acc disagree", path,
                    c->best_epoch);
    goto done;
  }
#undef NUM
#undef INT
#undef NUM_OR_NAN
done:
  cJSON_Delete(h);
  return st;
}

int rt_checkpoint_seed_file(const char *path, char *out, size_t len) {
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  char dir[4096];
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + (slash == path) : 1, slash ? path : ".");
  const size_t bl = strlen(base);
  DIR *d = bl ? opendir(dir) : NULL;
  if (!d) return 0;
  unsigned long long best = 0;
  int found = 0;
  for (const struct dirent *de; (de = readdir(d)) != NULL;) {
    const char *n = de->d_name;
    if (strncmp(n, base, bl) != 0 || strncmp(n + bl, ".seed", 5) != 0) continue;
    /* N as cmd_train writes it (%llu): digits, no leading zero */
    const char *digits = n + bl + 5;
    const size_t nd = strlen(digits);
    if (nd == 0 || nd > 20 || strspn(digits, "0123456789") != nd || (digits[0] == '0' && nd > 1)) continue;
    errno = 0;
    const unsigned long long k = strtoull(digits, NULL, 10);
    if (errno == 0 && (!found || k < best)) {
      best = k;
      found = 1;
    }
  }
  closedir(d);
  if (found) snprintf(out, len, "%s.seed%llu", path, best);
  return found;
}

int rt_checkpoint_read(const char *path, struct rt_checkpoint *c) {
  memset(c, 0, sizeof *c);
  int st = CG_OK;
  unsigned char *buf = NULL;
  /* O_NONBLOCK: a FIFO given by mistake must not block the open */
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    /* a --seeds run wrote FILE.seedN, one per seed: say so */
    char seed1[4200];
    if (e == ENOENT && rt_checkpoint_seed_file(path, seed1, sizeof seed1))
      return cg_err_set(CG_ERR_IO, "checkpoint %s: cannot open: %s (a --seeds run writes one file per seed: %s, ...)",
                        path, strerror(e), seed1);
    return cg_err_set(CG_ERR_IO, "checkpoint %s: cannot open: %s", path, strerror(e));
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return cg_err_set(CG_ERR_IO, "checkpoint %s: not a regular file", path);
  }
  /* whole file: parameters and Adam state, read once */
  const size_t n = (size_t)sb.st_size;
  const size_t fixed = CKPT_MAGIC_LEN + 4 + 8;
  if (n < fixed + 4) {
    close(fd);
    return cg_err_set(CG_ERR_FORMAT, "checkpoint %s: %zu bytes, too short to be a checkpoint", path, n);
  }
  buf = cg_malloc(n, "checkpoint file");
  if (!buf) {
    close(fd);
    return CG_ERR_NOMEM;
  }
  size_t got = 0;
  while (got < n) {
    ssize_t k = read(fd, buf + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fd);
  if (got != n) {
    st = cg_err_set(CG_ERR_IO, "checkpoint %s: read %zu of %zu bytes", path, got, n);
    goto fail;
  }
  if (memcmp(buf, CKPT_MAGIC, CKPT_MAGIC_LEN) != 0) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: not a capgnn checkpoint (wrong magic)", path);
    goto fail;
  }
  uint32_t version;
  uint64_t hlen;
  memcpy(&version, buf + CKPT_MAGIC_LEN, 4);
  memcpy(&hlen, buf + CKPT_MAGIC_LEN + 4, 8);
  if (version != CKPT_VERSION) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: format version %u, this capgnn reads version %u",
                    path, version, CKPT_VERSION);
    goto fail;
  }
  if (hlen == 0 || hlen > CKPT_MAX_HEADER || hlen > n - fixed - 4) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header length %llu does not fit the file (%zu bytes)",
                    path, (unsigned long long)hlen, n);
    goto fail;
  }
  uint32_t crc_file;
  memcpy(&crc_file, buf + n - 4, 4);
  const uint32_t crc = (uint32_t)crc_add(crc32(0L, Z_NULL, 0), buf, n - 4);
  if (crc != crc_file) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: CRC-32 mismatch (%08x stored, %08x computed): the "
                    "file is damaged or truncated", path, crc_file, crc);
    goto fail;
  }
  TRY_GOTO(parse_header((const char *)buf + fixed, (size_t)hlen, path, c), fail);
  const size_t pbytes = (size_t)c->num_params * sizeof(float);
  const size_t lbytes = (size_t)c->epoch * sizeof(double);
  if (n != fixed + hlen + 3 * pbytes + lbytes + 4) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: %zu bytes, expected %zu for %lld parameters and %d "
                    "epochs", path, n, (size_t)(fixed + hlen + 3 * pbytes + lbytes + 4),
                    (long long)c->num_params, c->epoch);
    goto fail;
  }
  c->params = cg_malloc(pbytes, "checkpoint parameters");
  c->adam_m = cg_malloc(pbytes, "checkpoint Adam moments");
  c->adam_v = cg_malloc(pbytes, "checkpoint Adam moments");
  c->loss = cg_malloc(lbytes, "checkpoint losses");
  if (!c->params || !c->adam_m || !c->adam_v || !c->loss) {
    st = CG_ERR_NOMEM;
    goto fail;
  }
  const unsigned char *p = buf + fixed + hlen;
  memcpy(c->params, p, pbytes);
  memcpy(c->adam_m, p + pbytes, pbytes);
  memcpy(c->adam_v, p + 2 * pbytes, pbytes);
  memcpy(c->loss, p + 3 * pbytes, lbytes);
  cg_free(buf);
  buf = NULL;
  /* a state that holds NaN or inf (written by a run on its way to diverging) cannot
   * continue a run nor be used: refused here, with where it is, not after a resumed
   * run's first step */
  const float *arr[3] = {c->params, c->adam_m, c->adam_v};
  const char *what[3] = {"parameter", "Adam first moment", "Adam second moment"};
  for (int a = 0; a < 3; a++)
    for (int64_t i = 0; i < c->num_params; i++)
      if (!isfinite(arr[a][i])) {
        st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: %s %lld of %lld is %s: the run that wrote it was "
                        "diverging (try a smaller --lr); this state cannot be resumed or used", path, what[a],
                        (long long)i, (long long)c->num_params, isnan(arr[a][i]) ? "NaN" : "infinite");
        goto fail;
      }
  return CG_OK;
fail:
  cg_free(buf);
  rt_checkpoint_free(c);
  return st;
}

/* Whether an existing regular file starts with the checkpoint magic. */
static int file_is_checkpoint(const char *path) {
  char magic[CKPT_MAGIC_LEN];
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t got = read(fd, magic, sizeof magic);
  close(fd);
  return got == (ssize_t)sizeof magic && memcmp(magic, CKPT_MAGIC, sizeof magic) == 0;
}

const struct cg_outfile_kind *rt_checkpoint_kind(void) {
  static const char *const sig[] = {CKPT_MAGIC, NULL};
  static const struct cg_outfile_kind kind = {"capgnn checkpoint", sig, 0, NULL};
  return &kind;
}

int rt_checkpoint_probe_target(const char *path, int warn_replace, const struct cg_outfile_input *inputs,
                               int ninputs, int force) {
  struct stat sb;
  if (stat(path, &sb) == 0) {
    char *real = realpath(path, NULL);
    const int devnull = real && strcmp(real, "/dev/null") == 0;
    free(real);
    if (devnull) return CG_OK;
    if (!S_ISREG(sb.st_mode))
      return cg_err_set(CG_ERR_IO, "--checkpoint %s: not a regular file (a checkpoint must be a file "
                        "that --resume can read back)", path);
  }
  TRY(cg_outfile_check(path, "--checkpoint", rt_checkpoint_kind(), inputs, ninputs, force, 0));
  TRY(cg_outfile_probe(path, "checkpoint"));
  /* (after the check: a checkpoint the rule refuses, a read-only one, is not "replaced") */
  if (warn_replace && stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 && file_is_checkpoint(path))
    LOG_WARN_COMMON("train", "--checkpoint %s: replacing the checkpoint there (written by an earlier "
                    "run); to continue that run instead, pass --resume %s", path, path);
  return CG_OK;
}
