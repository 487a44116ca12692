/* import/import_saint.c — a GraphSAINT data folder (Flickr, Yelp, Amazon, Reddit,
 * PPI): adj_full.npz (SciPy CSR), feats.npy, class_map.json, role.json.
 *
 * JSON: class_map.json of GraphSAINT's Amazon holds 1.6 M lists of 107 numbers
 * (~0.5 GB of text); one cJSON tree of it would take ~10 GB. So the file is mapped
 * and walked member by member at the top level (a scanner that only tracks strings
 * and bracket depth to find where each value ends), and each value is parsed by
 * cJSON on its own. Every byte of every value is still parsed and validated by
 * cJSON; the scanner only decides where a value ends. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/status.h"
#include "import/import_internal.h"
#include "import/npy_internal.h"
#include "core/progress.h"

/* ---- the top-level member walker ---------------------------------------------------- */

struct json_walk {
  const char *path;
  const char *base, *p, *end;
  size_t size;
  int first;
};

static int json_fail(const struct json_walk *w, const char *at, const char *what) {
  long long line = 1;
  for (const char *q = w->base; q < at && q < w->end; q++) line += *q == '\n';
  return cg_err_set(CG_ERR_FORMAT, "%s: invalid JSON at byte %lld (line %lld): %s", w->path,
                    (long long)(at - w->base), line, what);
}

static void json_ws(struct json_walk *w) {
  while (w->p < w->end && (*w->p == ' ' || *w->p == '\n' || *w->p == '\r' || *w->p == '\t')) w->p++;
}

static int json_open(struct json_walk *w, const char *path) {
  memset(w, 0, sizeof *w);
  w->path = path;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return cg_err_set(errno == ENOENT ? CG_ERR_NOT_FOUND : CG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0 || sb.st_size == 0) {
    close(fd);
    return cg_err_set(CG_ERR_FORMAT, "%s: empty or unreadable file, expected a JSON object", path);
  }
  void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return cg_err_set(CG_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
  madvise(m, (size_t)sb.st_size, MADV_SEQUENTIAL);
  w->base = w->p = m;
  w->size = (size_t)sb.st_size;
  w->end = w->base + w->size;
  w->first = 1;
  json_ws(w);
  if (w->p >= w->end || *w->p != '{') return json_fail(w, w->p, "expected '{': the file must hold one JSON object");
  w->p++;
  return CG_OK;
}

static void json_close(struct json_walk *w) {
  if (w->base) munmap((void *)w->base, w->size);
  w->base = NULL;
}

/* Next member: *key (cJSON string node, caller deletes) and *value (parsed).
 * Returns 1, 0 after the closing '}', or an error. */
static int json_next(struct json_walk *w, cJSON **key, cJSON **value) {
  *key = *value = NULL;
  json_ws(w);
  if (w->p < w->end && *w->p == '}') {
    w->p++;
    json_ws(w);
    if (w->p != w->end) return json_fail(w, w->p, "unexpected content after the closing '}'");
    return 0;
  }
  if (!w->first) {
    if (w->p >= w->end || *w->p != ',') return json_fail(w, w->p, "expected ',' or '}' between members");
    w->p++;
    json_ws(w);
  }
  w->first = 0;
  /* The key: a JSON string. */
  if (w->p >= w->end || *w->p != '"') return json_fail(w, w->p, "expected a quoted key");
  const char *ks = w->p++;
  while (w->p < w->end && *w->p != '"') w->p += (*w->p == '\\' && w->p + 1 < w->end) ? 2 : 1;
  if (w->p >= w->end) return json_fail(w, ks, "unterminated key");
  w->p++;
  *key = cJSON_ParseWithLength(ks, (size_t)(w->p - ks));
  if (!*key || !cJSON_IsString(*key)) {
    cJSON_Delete(*key);
    *key = NULL;
    return json_fail(w, ks, "malformed key");
  }
  json_ws(w);
  if (w->p >= w->end || *w->p != ':') {
    cJSON_Delete(*key);
    *key = NULL;
    return json_fail(w, w->p, "expected ':' after a key");
  }
  w->p++;
  json_ws(w);
  /* The value ends at the first ',' or '}' at depth 0 outside strings. */
  const char *vs = w->p;
  int depth = 0, in_str = 0;
  for (; w->p < w->end; w->p++) {
    char c = *w->p;
    if (in_str) {
      if (c == '\\' && w->p + 1 < w->end) w->p++;
      else if (c == '"') in_str = 0;
    } else if (c == '"') {
      in_str = 1;
    } else if (c == '[' || c == '{') {
      depth++;
    } else if (c == ']' || c == '}') {
      if (depth == 0) break;
      depth--;
    } else if (c == ',' && depth == 0) {
      break;
    }
  }
  if (w->p >= w->end) {
    cJSON_Delete(*key);
    *key = NULL;
    return json_fail(w, vs, "the object is not closed (truncated file?)");
  }
  const char *parse_end = NULL;
  *value = cJSON_ParseWithLengthOpts(vs, (size_t)(w->p - vs), &parse_end, 0);
  if (!*value) {
    cJSON_Delete(*key);
    *key = NULL;
    return json_fail(w, parse_end && parse_end >= vs ? parse_end : vs, "malformed value");
  }
  for (const char *q = parse_end; q && q < w->p; q++)
    if (*q != ' ' && *q != '\n' && *q != '\r' && *q != '\t') {
      cJSON_Delete(*key);
      cJSON_Delete(*value);
      *key = *value = NULL;
      return json_fail(w, q, "unexpected content after a value");
    }
  return 1;
}

/* ---- class_map.json ------------------------------------------------------------------- */

static int key_to_vertex(const struct json_walk *w, const cJSON *key, int64_t n, int64_t *u) {
  const char *s = key->valuestring, *p = s;
  int64_t v;
  if (import_parse_i64(&p, &v) != 0 || *p != '\0' || *s == '-' || *s == '+')
    return cg_err_set(CG_ERR_FORMAT, "%s: key \"%s\" is not a vertex id (expected \"0\" .. \"%lld\")", w->path, s,
                      (long long)n - 1);
  if (v < 0 || v >= n)
    return cg_err_set(CG_ERR_FORMAT, "%s: vertex id out of range: key \"%s\", expected a value in [0, %lld)",
                      w->path, s, (long long)n);
  *u = v;
  return CG_OK;
}

static int read_class_map(const char *path, struct graph *g, int64_t want_classes) {
  const int64_t n = g->n;
  struct json_walk w;
  TRY(json_open(&w, path));
  struct cg_progress pr;
  cg_progress_begin(&pr, "reading class_map.json", (int64_t)w.size, "B");
  uint8_t *seen = cg_calloc((size_t)n, 1, "class map bookkeeping");
  int st = seen ? CG_OK : CG_ERR_NOMEM, r;
  int kind = 0; /* 1 single-label, 2 multi-label */
  int64_t c = 0, maxl = -1, count = 0;
  cJSON *key = NULL, *val = NULL;
  while (st == CG_OK && (r = json_next(&w, &key, &val)) > 0) {
    int64_t u = 0;
    st = key_to_vertex(&w, key, n, &u);
    if (st == CG_OK && seen[u])
      st = cg_err_set(CG_ERR_FORMAT, "%s: vertex %lld appears twice", path, (long long)u);
    if (st == CG_OK) {
      seen[u] = 1;
      int this_kind = cJSON_IsArray(val) ? 2 : cJSON_IsNumber(val) ? 1 : 0;
      if (!this_kind)
        st = cg_err_set(CG_ERR_FORMAT, "%s: vertex %lld: expected a class id or a list of 0/1, found another "
                        "JSON value",
                        path, (long long)u);
      else if (kind && this_kind != kind)
        st = cg_err_set(CG_ERR_FORMAT, "%s: vertex %lld: mixes class ids and 0/1 lists; use one form for all",
                        path, (long long)u);
      kind = this_kind;
    }
    if (st == CG_OK && kind == 1) {
      if (!g->labels) {
        g->labels = cg_malloc((size_t)n * sizeof *g->labels, "labels");
        if (!g->labels) st = CG_ERR_NOMEM;
        else
          for (int64_t x = 0; x < n; x++) g->labels[x] = -1;
      }
      double d = val->valuedouble;
      if (st == CG_OK && (d != floor(d) || d < -1 || d > INT32_MAX || (want_classes > 0 && d >= (double)want_classes)))
        st = cg_err_set(CG_ERR_FORMAT, "%s: vertex %lld: label out of range: %g, expected an integer class %s or -1",
                        path, (long long)u, d, want_classes > 0 ? "below --classes" : ">= 0");
      if (st == CG_OK) {
        g->labels[u] = (int32_t)d;
        if (d > (double)maxl) maxl = (int64_t)d;
      }
    } else if (st == CG_OK && kind == 2) {
      int64_t len = cJSON_GetArraySize(val);
      if (!g->mlabels) {
        c = len;
        if (c < 1 || (want_classes > 0 && c != want_classes))
          st = cg_err_set(CG_ERR_FORMAT, "%s: vertex %lld: a list of %lld classes, expected %s", path, (long long)u,
                          (long long)c, want_classes > 0 ? "--classes entries" : "at least one");
        else if (!(g->mlabels = cg_calloc((size_t)n, (size_t)c, "multi-label matrix")))
          st = CG_ERR_NOMEM;
      } else if (len != c) {
        st = cg_err_set(CG_ERR_FORMAT, "%s: vertex %lld: a list of %lld classes, expected %lld as for the others",
                        path, (long long)u, (long long)len, (long long)c);
      }
      int64_t j = 0;
      for (cJSON *it = val->child; st == CG_OK && it; it = it->next, j++) {
        double d = cJSON_IsNumber(it) ? it->valuedouble : cJSON_IsTrue(it) ? 1 : cJSON_IsFalse(it) ? 0 : -1;
        if (d != 0 && d != 1)
          st = cg_err_set(CG_ERR_FORMAT, "%s: vertex %lld, class %lld: label out of range, expected 0 or 1", path,
                          (long long)u, (long long)j);
        else
          g->mlabels[u * c + j] = (uint8_t)d;
      }
    }
    cJSON_Delete(key);
    cJSON_Delete(val);
    key = val = NULL;
    count++;
    if ((count & 0xffff) == 0) cg_progress_update(&pr, (int64_t)(w.p - w.base));
  }
  if (st == CG_OK && r < 0) st = r;
  if (st == CG_OK && !kind) st = cg_err_set(CG_ERR_FORMAT, "%s: no vertex has a label", path);
  if (st == CG_OK) {
    cg_progress_end(&pr);
    g->multilabel = kind == 2;
    g->num_classes = kind == 2 ? c : want_classes > 0 ? want_classes : (maxl >= 0 ? maxl + 1 : 1);
  } else {
    cg_progress_cancel(&pr);
  }
  cg_free(seen);
  json_close(&w);
  return st;
}

/* ---- role.json --------------------------------------------------------------------------- */

static int read_roles(const char *path, struct graph *g) {
  static const char *const keys[] = {"", "tr", "va", "te"};
  static const char *const names[] = {"no", "train (tr)", "val (va)", "test (te)"};
  const int64_t n = g->n;
  struct json_walk w;
  TRY(json_open(&w, path));
  g->split = cg_calloc((size_t)n, 1, "split");
  int st = g->split ? CG_OK : CG_ERR_NOMEM, r = 0, have[4] = {0, 0, 0, 0};
  cJSON *key = NULL, *val = NULL;
  while (st == CG_OK && (r = json_next(&w, &key, &val)) > 0) {
    int s = 0;
    for (int k = 1; k <= 3; k++)
      if (strcmp(key->valuestring, keys[k]) == 0) s = k;
    if (s && have[s]) st = cg_err_set(CG_ERR_FORMAT, "%s: the key \"%s\" appears twice", path, keys[s]);
    if (s && st == CG_OK) {
      have[s] = 1;
      if (!cJSON_IsArray(val))
        st = cg_err_set(CG_ERR_FORMAT, "%s: \"%s\" must be a list of vertex ids", path, keys[s]);
      int64_t j = 0;
      for (cJSON *it = val->child; st == CG_OK && it; it = it->next, j++) {
        double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
        if (!cJSON_IsNumber(it) || d != floor(d) || d < 0 || d >= (double)n) {
          st = cg_err_set(CG_ERR_FORMAT, "%s: \"%s\" entry %lld: vertex id out of range (expected an integer in "
                          "[0, %lld))",
                          path, keys[s], (long long)j, (long long)n);
          break;
        }
        int64_t u = (int64_t)d;
        if (g->split[u])
          st = cg_err_set(CG_ERR_FORMAT, "%s: vertex %lld is in both the %s and the %s split", path, (long long)u,
                          names[g->split[u]], names[s]);
        else
          g->split[u] = (uint8_t)s;
      }
    }
    cJSON_Delete(key);
    cJSON_Delete(val);
    key = val = NULL;
  }
  if (st == CG_OK && r < 0) st = r;
  for (int s = 1; st == CG_OK && s <= 3; s++)
    if (!have[s])
      st = cg_err_set(CG_ERR_FORMAT, "%s: the key \"%s\" is missing (expected \"tr\", \"va\" and \"te\" lists)",
                      path, keys[s]);
  json_close(&w);
  return st;
}

/* ---- the importer ----------------------------------------------------------------------------- */

int import_saint(const struct import_opts *o, struct graph *g, struct import_stats *stats) {
  const char *dir = o->input;
  TRY(import_input_expect(dir, 1, "--from saint expects a GraphSAINT data folder with adj_full.npz, "
                          "feats.npy, class_map.json and role.json"));
  static const char *const files[] = {"adj_full.npz", "feats.npy", "class_map.json", "role.json"};
  char path[4][4096];
  for (int i = 0; i < 4; i++) {
    TRY(import_path_join(path[i], sizeof path[i], dir, files[i]));
    if (!import_path_is_file(path[i]))
      return cg_err_set(CG_ERR_NOT_FOUND, "%s: missing %s (a GraphSAINT data folder holds adj_full.npz, "
                        "feats.npy, class_map.json and role.json)",
                        dir, files[i]);
  }
  struct import_npy a;
  TRY(import_npy_open(&a, path[1]));
  int st = import_npy_expect_shape(&a, 2, (int64_t[]){-1, -1}, "(vertices x features)");
  const int64_t n = a.shape[0];
  import_npy_close(&a);
  TRY(st);

  struct import_edges e;
  int64_t n_adj = 0;
  TRY(import_scipy_npz(path[0], &n_adj, &e));
  if (n_adj != n) {
    import_edges_free(&e);
    return cg_err_set(CG_ERR_FORMAT, "%s: the adjacency matrix is %lld x %lld but %s has %lld rows; both must "
                      "describe the same vertices",
                      path[0], (long long)n_adj, (long long)n_adj, path[1], (long long)n);
  }
  TRY(import_edges_to_csr(&e, n, path[0], g, stats));
  TRY(import_npy_open(&a, path[1]));
  st = import_npy_features(&a, g, stats);
  import_npy_close(&a);
  TRY(st);
  TRY(read_class_map(path[2], g, o->num_classes));
  TRY(read_roles(path[3], g));
  TRY(import_check_split(g, path[3], path[2]));
  return CG_OK;
}
