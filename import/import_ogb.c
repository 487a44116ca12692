/* import/import_ogb.c — an OGB node-property-prediction folder as downloaded
 * (ogbn-arxiv, ogbn-products, ...): gzip CSV files in raw/ and the standard split
 * in split/<name>/. Everything streams through import_text (gzread in 4 MB chunks);
 * the only large allocations are the edge list, the CSR and the n x f features. */
#define _GNU_SOURCE
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/status.h"
#include "import/import_internal.h"
#include "core/progress.h"

/* raw/NAME.csv.gz, else raw/NAME.csv; CG_ERR_NOT_FOUND naming both when neither exists. */
static int find_csv(char *buf, size_t len, const char *dir, const char *name, int required) {
  char file[256];
  snprintf(file, sizeof file, "%s.csv.gz", name);
  TRY(import_path_join(buf, len, dir, file));
  if (import_path_is_file(buf)) return CG_OK;
  snprintf(file, sizeof file, "%s.csv", name);
  TRY(import_path_join(buf, len, dir, file));
  if (import_path_is_file(buf)) return CG_OK;
  if (!required) return CG_ERR_NOT_FOUND;
  return cg_err_set(CG_ERR_NOT_FOUND,
                    "%s: missing %s.csv.gz (expected an OGB node-property-prediction folder as downloaded "
                    "by the ogb package: raw/edge.csv.gz, raw/node-feat.csv.gz, raw/node-label.csv.gz and "
                    "split/<name>/{train,valid,test}.csv.gz)",
                    dir, name);
}

static int text_progress_begin(struct cg_progress *pr, struct import_text *t) {
  char what[1100];
  const char *base = strrchr(t->name, '/');
  snprintf(what, sizeof what, "reading %s", base ? base + 1 : t->name);
  cg_progress_begin(pr, what, t->file_bytes, "B");
  return CG_OK;
}

static int bad_line(const struct import_text *t, const char *what) {
  return cg_err_set(CG_ERR_FORMAT, "%s: line %lld: %s", t->name, (long long)t->line, what);
}

/* The single integer of a one-line file (num-node-list.csv.gz). */
static int read_count(const char *path, int64_t *out) {
  struct import_text t;
  TRY(import_text_open(&t, path));
  char *line;
  int st = CG_OK, r = import_text_next(&t, &line);
  if (r < 0) {
    st = r;
  } else if (r == 0) {
    st = cg_err_set(CG_ERR_FORMAT, "%s: empty file, expected the number of vertices", path);
  } else {
    const char *p = import_skip_blank(line);
    if (import_parse_i64(&p, out) != 0 || *import_skip_blank(p) != '\0' || *out < 1)
      st = bad_line(&t, "expected one positive integer (the number of vertices)");
    else if ((r = import_text_next(&t, &line)) > 0 && *import_skip_blank(line))
      st = cg_err_set(CG_ERR_FORMAT, "%s: more than one graph listed; only single-graph (node property "
                      "prediction) datasets can be converted",
                      path);
    else if (r < 0)
      st = r;
  }
  import_text_close(&t);
  return st;
}

static int read_edges(const char *path, int64_t n, struct import_edges *e) {
  struct import_text t;
  TRY(import_text_open(&t, path));
  struct cg_progress pr;
  text_progress_begin(&pr, &t);
  char *line;
  int st = CG_OK, r;
  while ((r = import_text_next(&t, &line)) > 0) {
    const char *p = import_skip_blank(line);
    if (!*p) continue;
    int64_t u = 0, v = 0;
    int ok = import_parse_i64(&p, &u) == 0;
    if (ok) {
      p = import_skip_blank(p);
      ok = *p == ',';
    }
    if (ok) {
      p = import_skip_blank(p + 1);
      ok = import_parse_i64(&p, &v) == 0 && *import_skip_blank(p) == '\0';
    }
    if (!ok) {
      st = bad_line(&t, "expected two vertex ids \"u,v\"");
      break;
    }
    if (u < 0 || u >= n || v < 0 || v >= n) {
      st = cg_err_set(CG_ERR_FORMAT, "%s: line %lld: vertex id out of range: %lld, expected a value in [0, %lld)",
                      t.name, (long long)t.line, (long long)((u < 0 || u >= n) ? u : v), (long long)n);
      break;
    }
    if ((st = import_edges_push(e, (int32_t)u, (int32_t)v)) != CG_OK) break;
    if ((t.line & 0xfffff) == 0) cg_progress_update(&pr, import_text_offset(&t));
  }
  if (r < 0) st = r;
  if (st == CG_OK) cg_progress_end(&pr);
  else cg_progress_cancel(&pr);
  import_text_close(&t);
  return st;
}

static int read_features(const char *path, struct graph *g, struct import_stats *stats) {
  const int64_t n = g->n;
  struct import_text t;
  TRY(import_text_open(&t, path));
  struct cg_progress pr;
  text_progress_begin(&pr, &t);
  char *line;
  int st = CG_OK, r;
  int64_t f = -1, row = 0;
  float *x = NULL;
  while ((r = import_text_next(&t, &line)) > 0) {
    const char *p = import_skip_blank(line);
    if (!*p) continue;
    if (f < 0) {
      /* The first row fixes the dimension. */
      f = 1;
      for (const char *q = p; *q; q++) f += *q == ',';
      x = cg_malloc((size_t)(n * f) * sizeof *x, "dense features");
      if (!x) {
        st = CG_ERR_NOMEM;
        break;
      }
    }
    if (row >= n) {
      st = cg_err_set(CG_ERR_FORMAT, "%s: more than %lld rows; expected one row of features per vertex",
                      t.name, (long long)n);
      break;
    }
    float *out = x + row * f;
    for (int64_t j = 0; j < f; j++) {
      p = import_skip_blank(p);
      if (import_parse_f32(&p, &out[j]) != 0) {
        st = cg_err_set(CG_ERR_FORMAT, "%s: line %lld, value %lld: expected a number", t.name, (long long)t.line,
                        (long long)j + 1);
        break;
      }
      if (!isfinite(out[j])) {
        st = cg_err_set(CG_ERR_FORMAT, "%s: line %lld, value %lld is not finite (%g); features must be finite",
                        t.name, (long long)t.line, (long long)j + 1, (double)out[j]);
        break;
      }
      p = import_skip_blank(p);
      if (j + 1 < f) {
        if (*p != ',') {
          st = cg_err_set(CG_ERR_FORMAT, "%s: line %lld has %lld values, expected %lld (as on the first line)",
                          t.name, (long long)t.line, (long long)j + 1, (long long)f);
          break;
        }
        p++;
      }
    }
    if (st != CG_OK) break;
    if (*p != '\0') {
      st = cg_err_set(CG_ERR_FORMAT, "%s: line %lld has more than %lld values (as on the first line)", t.name,
                      (long long)t.line, (long long)f);
      break;
    }
    row++;
    if ((row & 0xffff) == 0) cg_progress_update(&pr, import_text_offset(&t));
  }
  if (r < 0) st = r;
  if (st == CG_OK && row != n)
    st = cg_err_set(CG_ERR_FORMAT, "%s: %lld rows of features, expected %lld (one per vertex)", t.name,
                    (long long)row, (long long)n);
  if (st == CG_OK) {
    cg_progress_end(&pr);
    g->feat_values = x;
    g->feat_dim = f;
    snprintf(stats->feat_dtype, sizeof stats->feat_dtype, "csv text");
    stats->feat_converted = 1;
  } else {
    cg_progress_cancel(&pr);
    cg_free(x);
  }
  import_text_close(&t);
  return st;
}

/* A label token: an integer, an integral float ("3.0"), or nan/empty (= none: -1). */
static int parse_label(const char **pp, int64_t *out) {
  const char *p = import_skip_blank(*pp);
  if (*p == ',' || *p == '\0' || strncasecmp(p, "nan", 3) == 0) {
    if (*p == 'n' || *p == 'N') p += 3;
    *out = -1;
    *pp = p;
    return 0;
  }
  const char *q = p;
  int64_t v;
  if (import_parse_i64(&q, &v) == 0 && *q != '.' && *q != 'e' && *q != 'E') {
    *out = v;
    *pp = q;
    return 0;
  }
  char *end = NULL;
  double d = strtod(p, &end);
  if (end == p || !isfinite(d) || d != floor(d) || fabs(d) > 2e9) return -1;
  *out = (int64_t)d;
  *pp = end;
  return 0;
}

static int read_labels(const char *path, struct graph *g, int64_t want_classes, int64_t *n_lines) {
  const int64_t n = g->n; /* 0: count the lines (no num-node-list file) */
  struct import_text t;
  TRY(import_text_open(&t, path));
  char *line;
  int st = CG_OK, r;
  int64_t cols = -1, row = 0, cap = n > 0 ? n : 1 << 16;
  int32_t *lab = NULL;
  uint8_t *ml = NULL;
  while ((r = import_text_next(&t, &line)) > 0) {
    const char *p = import_skip_blank(line);
    if (!*p) continue;
    if (cols < 0) {
      cols = 1;
      for (const char *q = p; *q; q++) cols += *q == ',';
      if (cols > 1 && want_classes > 0 && want_classes != cols) {
        st = cg_err_set(CG_ERR_ARG, "%s: %lld label columns (multi-label), but %lld classes were asked for",
                        t.name, (long long)cols, (long long)want_classes);
        break;
      }
    }
    if (n > 0 && row >= n) {
      st = cg_err_set(CG_ERR_FORMAT, "%s: more than %lld rows; expected one label row per vertex", t.name,
                      (long long)n);
      break;
    }
    if (row == cap || (!lab && !ml)) {
      if (row == cap) cap *= 2;
      if (cols == 1) {
        int32_t *nl = realloc(lab, (size_t)cap * sizeof *nl);
        if (!nl) {
          st = cg_err_set(CG_ERR_NOMEM, "out of memory for labels");
          break;
        }
        lab = nl;
      } else {
        uint8_t *nm = realloc(ml, (size_t)(cap * cols));
        if (!nm) {
          st = cg_err_set(CG_ERR_NOMEM, "out of memory for labels");
          break;
        }
        ml = nm;
      }
    }
    for (int64_t j = 0; j < cols; j++) {
      int64_t v;
      if (parse_label(&p, &v) != 0) {
        st = bad_line(&t, "expected an integer class label");
        break;
      }
      p = import_skip_blank(p);
      if (j + 1 < cols) {
        if (*p != ',') {
          st = cg_err_set(CG_ERR_FORMAT, "%s: line %lld has %lld label columns, expected %lld", t.name,
                          (long long)t.line, (long long)j + 1, (long long)cols);
          break;
        }
        p++;
      }
      if (cols == 1) {
        if (v < -1 || v > INT32_MAX || (want_classes > 0 && v >= want_classes)) {
          char range[64];
          if (want_classes > 0) snprintf(range, sizeof range, "in [0, %lld)", (long long)want_classes);
          else snprintf(range, sizeof range, ">= 0");
          st = cg_err_set(CG_ERR_FORMAT, "%s: line %lld: label out of range: %lld, expected a class %s or -1/nan "
                          "(unlabelled)",
                          t.name, (long long)t.line, (long long)v, range);
          break;
        }
        lab[row] = (int32_t)v;
      } else {
        if (v < -1 || v > 1) {
          st = cg_err_set(CG_ERR_FORMAT, "%s: line %lld, column %lld: label out of range: %lld, expected 0 or 1 "
                          "in a multi-label file",
                          t.name, (long long)t.line, (long long)j + 1, (long long)v);
          break;
        }
        ml[row * cols + j] = v == 1;
      }
    }
    if (st != CG_OK) break;
    if (*p != '\0') {
      st = cg_err_set(CG_ERR_FORMAT, "%s: line %lld has more than %lld label columns", t.name, (long long)t.line,
                      (long long)cols);
      break;
    }
    row++;
  }
  if (r < 0) st = r;
  if (st == CG_OK && cols < 0) st = cg_err_set(CG_ERR_FORMAT, "%s: no labels in the file", t.name);
  if (st == CG_OK && n > 0 && row != n)
    st = cg_err_set(CG_ERR_FORMAT, "%s: %lld label rows, expected %lld (one per vertex)", t.name, (long long)row,
                    (long long)n);
  import_text_close(&t);
  if (st != CG_OK) {
    free(lab);
    free(ml);
    return st;
  }
  *n_lines = row;
  /* Into cg_malloc'd arrays, which graph_free releases. */
  if (cols == 1) {
    g->labels = cg_malloc((size_t)row * sizeof *g->labels, "labels");
    if (g->labels) memcpy(g->labels, lab, (size_t)row * sizeof *g->labels);
    g->multilabel = 0;
  } else {
    g->mlabels = cg_malloc((size_t)(row * cols), "multi-label matrix");
    if (g->mlabels) memcpy(g->mlabels, ml, (size_t)(row * cols));
    g->multilabel = 1;
    g->num_classes = cols;
  }
  free(lab);
  free(ml);
  if (!g->labels && !g->mlabels) return CG_ERR_NOMEM;
  return CG_OK;
}

static int pick_split_dir(const char *dir, const char *want, char *out, size_t len) {
  char split_root[4096];
  TRY(import_path_join(split_root, sizeof split_root, dir, "split"));
  DIR *d = opendir(split_root);
  if (!d)
    return cg_err_set(CG_ERR_NOT_FOUND,
                      "%s: missing split folder (expected split/<name>/{train,valid,test}.csv.gz as OGB "
                      "downloads it)",
                      split_root);
  char found[8][256];
  int nfound = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.') continue;
    char p[4400];
    if (import_path_join(p, sizeof p, split_root, de->d_name) != CG_OK || !import_path_is_dir(p)) continue;
    if (nfound < 8) snprintf(found[nfound], sizeof found[0], "%s", de->d_name);
    nfound++;
  }
  closedir(d);
  if (want && *want) {
    TRY(import_path_join(out, len, split_root, want));
    if (!import_path_is_dir(out)) {
      char list[1024] = "";
      for (int i = 0; i < nfound && i < 8; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, found[i], sizeof list - strlen(list) - 1);
      }
      return cg_err_set(CG_ERR_NOT_FOUND, "%s: missing split folder (--ogb-split %s; the dataset has %s)", out, want,
                        nfound ? list : "none");
    }
    return CG_OK;
  }
  if (nfound == 0)
    return cg_err_set(CG_ERR_NOT_FOUND, "%s: no split folder inside (expected e.g. split/time or "
                      "split/sales_ranking)",
                      split_root);
  if (nfound > 1) {
    char list[1024] = "";
    for (int i = 0; i < nfound && i < 8; i++) {
      strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
      strncat(list, found[i], sizeof list - strlen(list) - 1);
    }
    return cg_err_set(CG_ERR_ARG, "%s: several splits (%s); choose one with --ogb-split NAME", split_root, list);
  }
  return import_path_join(out, len, split_root, found[0]);
}

static int read_split_file(const char *path, struct graph *g, uint8_t value, const char *const *names) {
  struct import_text t;
  TRY(import_text_open(&t, path));
  char *line;
  int st = CG_OK, r;
  while ((r = import_text_next(&t, &line)) > 0) {
    const char *p = import_skip_blank(line);
    if (!*p) continue;
    int64_t u;
    if (import_parse_i64(&p, &u) != 0 || *import_skip_blank(p) != '\0') {
      st = bad_line(&t, "expected one vertex id");
      break;
    }
    if (u < 0 || u >= g->n) {
      st = cg_err_set(CG_ERR_FORMAT, "%s: line %lld: vertex id out of range: %lld, expected a value in [0, %lld)",
                      t.name, (long long)t.line, (long long)u, (long long)g->n);
      break;
    }
    if (g->split[u] != GRAPH_SPLIT_NONE) {
      st = cg_err_set(CG_ERR_FORMAT, "%s: line %lld: vertex %lld is already in the %s split; a vertex belongs to "
                      "at most one split",
                      t.name, (long long)t.line, (long long)u, names[g->split[u]]);
      break;
    }
    g->split[u] = value;
  }
  if (r < 0) st = r;
  import_text_close(&t);
  return st;
}

int import_ogb(const struct import_opts *o, struct graph *g, struct import_stats *stats) {
  const char *dir = o->input;
  TRY(import_input_expect(dir, 1, "--from ogb expects an OGB dataset folder such as ogbn-arxiv/, holding "
                          "raw/ and split/"));
  char raw[4096], edge[4200], feat[4200], label[4200], nodes[4200], split_dir[4096];
  TRY(import_path_join(raw, sizeof raw, dir, "raw"));
  if (!import_path_is_dir(raw)) { /* the folder above the dataset's? name the one inside */
    DIR *d = opendir(dir);
    char sub[4400] = "";
    for (struct dirent *de; d && !sub[0] && (de = readdir(d)) != NULL;) {
      char p[4400], r[4500];
      if (de->d_name[0] == '.' || import_path_join(p, sizeof p, dir, de->d_name) != CG_OK ||
          import_path_join(r, sizeof r, p, "raw") != CG_OK)
        continue;
      if (import_path_is_dir(r)) snprintf(sub, sizeof sub, "%s", p);
    }
    if (d) closedir(d);
    if (sub[0])
      return cg_err_set(CG_ERR_NOT_FOUND, "%s: no raw/ folder here, but %s has one: give --input %s (the "
                        "dataset's own folder)", dir, sub, sub);
  }
  TRY(find_csv(edge, sizeof edge, raw, "edge", 1));
  TRY(find_csv(feat, sizeof feat, raw, "node-feat", 1));
  TRY(find_csv(label, sizeof label, raw, "node-label", 1));
  TRY(pick_split_dir(dir, o->ogb_split, split_dir, sizeof split_dir));
  static const char *const split_names[] = {"no", "train", "valid", "test"};
  char split_files[4][4200];
  for (int s = 1; s <= 3; s++) {
    if (find_csv(split_files[s], sizeof split_files[s], split_dir, split_names[s], 0) != CG_OK)
      return cg_err_set(CG_ERR_NOT_FOUND, "%s: missing split file %s.csv.gz (expected train, valid and test)",
                        split_dir, split_names[s]);
  }

  /* The vertex count: num-node-list when present (OGB ships it), else the label rows. */
  int64_t n = 0, rows = 0;
  int have_count = find_csv(nodes, sizeof nodes, raw, "num-node-list", 0) == CG_OK;
  if (have_count) {
    TRY(read_count(nodes, &n));
    g->n = n;
  }
  TRY(read_labels(label, g, o->num_classes, &rows));
  if (!have_count) n = g->n = rows;
  if (!g->multilabel) TRY(import_label_classes(g, o->num_classes, label));

  struct import_edges e;
  memset(&e, 0, sizeof e);
  int st = read_edges(edge, n, &e);
  if (st != CG_OK) {
    import_edges_free(&e);
    return st;
  }
  /* import_edges_to_csr sets n, m, rowptr, colidx. */
  TRY(import_edges_to_csr(&e, n, edge, g, stats));
  TRY(read_features(feat, g, stats));

  g->split = cg_calloc((size_t)n, 1, "split");
  if (!g->split) return CG_ERR_NOMEM;
  for (int s = 1; s <= 3; s++) TRY(read_split_file(split_files[s], g, (uint8_t)s, split_names));
  for (int s = 1; s <= 3; s++)
    if (!g->multilabel)
      for (int64_t u = 0; u < n; u++)
        if (g->labels[u] < 0 && g->split[u] == s)
          return cg_err_set(CG_ERR_FORMAT,
                            "%s: vertex %lld is in the %s split but has no label (-1/nan in %s); a vertex in a "
                            "split must be labelled",
                            split_files[s], (long long)u, split_names[s], label);
  return CG_OK;
}
