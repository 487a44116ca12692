/* runtime/checkpoint.c — training checkpoints (runtime.h, "checkpoints").
 *
 * Layout (little-endian):
 *   "CAPGNN-CKPT\0" (12 bytes), uint32 format version,
 *   uint64 header length H, H bytes of JSON (the run's description and where it
 *   stands; NaN written as null, the 64-bit seed as a string),
 *   float32 params[P], adam_m[P], adam_v[P], float64 loss[epoch],
 *   uint32 CRC-32 (zlib) of every byte before it.
 * The reader checks the magic, the version, the header's fields and their ranges,
 * the sizes against the file's length, then the CRC, before anything is used. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <zlib.h>

#include "core/outfile.h"
#include "core/status.h"
#include "runtime/runtime.h"

#define CKPT_MAGIC "CAPGNN-CKPT"
#define CKPT_MAGIC_LEN 12
#define CKPT_VERSION 1u
#define CKPT_MAX_HEADER (1u << 20)

void rt_checkpoint_free(struct rt_checkpoint *c) {
  if (!c) return;
  cg_free(c->params);
  cg_free(c->adam_m);
  cg_free(c->adam_v);
  cg_free(c->loss);
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

static void num_or_null(cJSON *o, const char *key, double v) {
  if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
  else cJSON_AddNullToObject(o, key);
}

static char *header_json(const struct rt_checkpoint *c) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  char seed[32];
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed);
  cJSON_AddStringToObject(o, "format", "capgnn checkpoint");
  cJSON_AddStringToObject(o, "graph", c->graph);
  cJSON_AddNumberToObject(o, "graph_checksum", (double)c->graph_checksum);
  cJSON_AddNumberToObject(o, "nodes", (double)c->nodes);
  cJSON_AddNumberToObject(o, "features", (double)c->features);
  cJSON_AddNumberToObject(o, "classes", (double)c->classes);
  cJSON_AddStringToObject(o, "model", rt_model_kind_str(c->model));
  cJSON_AddNumberToObject(o, "layers", c->layers);
  cJSON_AddNumberToObject(o, "hidden", (double)c->hidden);
  cJSON_AddBoolToObject(o, "layernorm", c->layernorm != 0);
  cJSON_AddNumberToObject(o, "dropout", c->dropout);
  cJSON_AddNumberToObject(o, "input_dropout", c->input_dropout);
  cJSON_AddStringToObject(o, "optimizer", rt_optimizer_str(c->optimizer));
  cJSON_AddNumberToObject(o, "lr", c->lr);
  cJSON_AddNumberToObject(o, "weight_decay", c->weight_decay);
  cJSON_AddNumberToObject(o, "beta1", c->beta1);
  cJSON_AddNumberToObject(o, "beta2", c->beta2);
  cJSON_AddNumberToObject(o, "adam_eps", c->adam_eps);
  cJSON_AddStringToObject(o, "wd_scope", rt_wd_scope_str(c->wd_scope));
  cJSON_AddStringToObject(o, "seed", seed);
  cJSON_AddNumberToObject(o, "epoch", c->epoch);
  cJSON_AddNumberToObject(o, "steps", (double)c->steps);
  cJSON_AddNumberToObject(o, "params", (double)c->num_params);
  num_or_null(o, "best_val_acc", c->best_val_acc);
  num_or_null(o, "best_val_loss", c->best_val_loss);
  num_or_null(o, "test_acc_at_best_val", c->test_acc_at_best_val);
  cJSON_AddNumberToObject(o, "best_epoch", c->best_epoch);
  num_or_null(o, "final_train_acc", c->final_train_acc);
  num_or_null(o, "final_val_acc", c->final_val_acc);
  num_or_null(o, "final_test_acc", c->final_test_acc);
  num_or_null(o, "last_val_acc", c->last_val_acc);
  char *txt = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return txt;
}

int rt_checkpoint_write(const char *path, const struct rt_checkpoint *c) {
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

static int json_number(const cJSON *h, const char *key, double lo, double hi, double *out,
                       const char *path, int nan_ok) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, key);
  if (nan_ok && cJSON_IsNull(v)) {
    *out = NAN;
    return CG_OK;
  }
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
    return cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field '%s' is missing or outside [%g, %g]",
                      path, key, lo, hi);
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
#define NUM(key, lo, hi, dst, type)                                   \
  do {                                                                \
    TRY_GOTO(json_number(h, key, lo, hi, &d, path, 0), done);         \
    dst = (type)d;                                                    \
  } while (0)
#define NUM_OR_NAN(key, dst)                                          \
  do {                                                                \
    TRY_GOTO(json_number(h, key, -INFINITY, INFINITY, &d, path, 1), done); \
    dst = d;                                                          \
  } while (0)
  NUM("graph_checksum", 0, 4294967295.0, c->graph_checksum, uint32_t);
  NUM("nodes", 0, 9e15, c->nodes, int64_t);
  NUM("features", 0, 9e15, c->features, int64_t);
  NUM("classes", 0, 9e15, c->classes, int64_t);
  TRY_GOTO(json_choice(h, "model", "gcn", "sage", &k, path), done);
  c->model = k ? RT_MODEL_SAGE : RT_MODEL_GCN;
  NUM("layers", 1, 64, c->layers, int);
  NUM("hidden", 1, 1 << 20, c->hidden, int64_t);
  v = cJSON_GetObjectItemCaseSensitive(h, "layernorm");
  if (!cJSON_IsBool(v)) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field 'layernorm' is missing", path);
    goto done;
  }
  c->layernorm = cJSON_IsTrue(v);
  NUM("dropout", 0, 1, c->dropout, float);
  NUM("input_dropout", -1, 1, c->input_dropout, float);
  TRY_GOTO(json_choice(h, "optimizer", "adam", "adamw", &k, path), done);
  c->optimizer = k ? RT_OPT_ADAMW : RT_OPT_ADAM;
  NUM("lr", 0, INFINITY, c->lr, float);
  NUM("weight_decay", 0, INFINITY, c->weight_decay, float);
  NUM("beta1", 0, 1, c->beta1, float);
  NUM("beta2", 0, 1, c->beta2, float);
  NUM("adam_eps", 0, INFINITY, c->adam_eps, float);
  TRY_GOTO(json_choice(h, "wd_scope", "all", "first", &k, path), done);
  c->wd_scope = k ? RT_WD_FIRST : RT_WD_ALL;
  v = cJSON_GetObjectItemCaseSensitive(h, "seed");
  char *end = NULL;
  if (!cJSON_IsString(v) || (c->seed = strtoull(v->valuestring, &end, 10), *end != '\0')) {
    st = cg_err_set(CG_ERR_FORMAT, "checkpoint %s: header field 'seed' should be a decimal string", path);
    goto done;
  }
  NUM("epoch", 1, RT_MAX_EPOCHS, c->epoch, int);
  NUM("steps", 0, 9e15, c->steps, int64_t);
  NUM("params", 1, 2147483648.0, c->num_params, int64_t);
  NUM_OR_NAN("best_val_acc", c->best_val_acc);
  NUM_OR_NAN("best_val_loss", c->best_val_loss);
  NUM_OR_NAN("test_acc_at_best_val", c->test_acc_at_best_val);
  NUM("best_epoch", 0, RT_MAX_EPOCHS, c->best_epoch, int);
  NUM_OR_NAN("final_train_acc", c->final_train_acc);
  NUM_OR_NAN("final_val_acc", c->final_val_acc);
  NUM_OR_NAN("final_test_acc", c->final_test_acc);
  NUM_OR_NAN("last_val_acc", c->last_val_acc);
  if (isnan(c->best_val_loss)) c->best_val_loss = INFINITY; /* "no best yet" */
#undef NUM
#undef NUM_OR_NAN
done:
  cJSON_Delete(h);
  return st;
}

int rt_checkpoint_read(const char *path, struct rt_checkpoint *c) {
  memset(c, 0, sizeof *c);
  int st = CG_OK;
  unsigned char *buf = NULL;
  FILE *fp = fopen(path, "rb");
  if (!fp) return cg_err_set(CG_ERR_IO, "checkpoint %s: cannot open: %s", path, strerror(errno));
  /* whole file: a few MB (parameters and Adam state), read once */
  long size = -1;
  if (fseek(fp, 0, SEEK_END) == 0) size = ftell(fp);
  if (size < 0 || fseek(fp, 0, SEEK_SET) != 0) {
    fclose(fp);
    return cg_err_set(CG_ERR_IO, "checkpoint %s: not a regular, seekable file", path);
  }
  const size_t n = (size_t)size;
  const size_t fixed = CKPT_MAGIC_LEN + 4 + 8;
  if (n < fixed + 4) {
    fclose(fp);
    return cg_err_set(CG_ERR_FORMAT, "checkpoint %s: %zu bytes, too short to be a checkpoint", path, n);
  }
  buf = cg_malloc(n, "checkpoint file");
  if (!buf) {
    fclose(fp);
    return CG_ERR_NOMEM;
  }
  const size_t got = fread(buf, 1, n, fp);
  fclose(fp);
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
  return CG_OK;
fail:
  cg_free(buf);
  rt_checkpoint_free(c);
  return st;
}
