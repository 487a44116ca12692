/* import/import_edgelist.c — a text edge list ("u v" per line, optionally gzip) with
 * features, labels and optionally a split as .npy files. The vertex count is the
 * number of feature rows, so an id outside it is caught on its line. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "import/import_internal.h"
#include "import/npy_internal.h"
#include "core/progress.h"

static int is_sep(char c) { return c == ' ' || c == '\t' || c == ','; }

/* A line with a control character (other than a tab or a stray CR): a binary file given
 * as the edge list (a .npy edge_index, whose header has them, a .npz, ...). */
static int is_binary(const char *line) {
  for (const unsigned char *c = (const unsigned char *)line; *c; c++)
    if ((*c < 0x20 && *c != '\t' && *c != '\r') || *c == 0x7f) return 1;
  return 0;
}

static int read_edge_file(const char *path, int64_t n, struct import_edges *e, struct import_stats *stats) {
  struct import_text t;
  TRY(import_text_open(&t, path));
  struct cg_progress pr;
  char what[1100];
  const char *base = strrchr(path, '/');
  snprintf(what, sizeof what, "reading %s", base ? base + 1 : path);
  cg_progress_begin(&pr, what, t.file_bytes, "B");
  char *line;
  int st = CG_OK, r;
  int64_t extra = 0, first_extra = 0;
  while ((r = import_text_next(&t, &line)) > 0) {
    const char *p = line;
    while (is_sep(*p)) p++;
    if (!*p || *p == '#' || *p == '%') continue;
    int64_t u = 0, v = 0;
    int ok = import_parse_i64(&p, &u) == 0 && is_sep(*p);
    if (ok) {
      while (is_sep(*p)) p++;
      ok = import_parse_i64(&p, &v) == 0 && (*p == '\0' || is_sep(*p));
    }
    if (!ok) {
      if (is_binary(line)) { /* its bytes would reach the terminal raw */
        st = cg_err_set(CG_ERR_FORMAT, "%s: line %lld: binary data, not a text edge list (%s)", t.name,
                        (long long)t.line,
                        strncmp(line, "\x93NUMPY", 6) == 0
                            ? "a NumPy .npy array: write the edges as text, one \"u v\" per line, e.g. "
                              "numpy.savetxt(PATH, edges, fmt='%d') for an (E, 2) array (edges.T for PyG's (2, E) "
                              "edge_index)"
                            : "--input is a text file of \"u v\" lines, plain or gzip-compressed");
        break;
      }
      /* an id written as a float (numpy.savetxt without fmt='%d': "1.000000000000000000e+00") */
      const int as_float = *p == '.' || ((*p == 'e' || *p == 'E') && p > line && isdigit((unsigned char)p[-1]));
      st = cg_err_set(CG_ERR_FORMAT, "%s: line %lld: expected two vertex ids \"u v\", found \"%.60s\"%s", t.name,
                      (long long)t.line, line,
                      as_float ? " (vertex ids are integers: numpy.savetxt writes floats unless given fmt='%d')"
                      : isalpha((unsigned char)*p) ? " (a header or comment line must start with '#' or '%')" : "");
      break;
    }
    while (is_sep(*p)) p++;
    if (*p) {
      if (!extra) first_extra = t.line;
      extra++;
    }
    if (u < 0 || u >= n || v < 0 || v >= n) {
      st = cg_err_set(CG_ERR_FORMAT,
                      "%s: line %lld: vertex id out of range: %lld, expected a value in [0, %lld) (the features "
                      "have %lld rows, one per vertex%s)",
                      t.name, (long long)t.line, (long long)((u < 0 || u >= n) ? u : v), (long long)n, (long long)n,
                      (u == n || v == n) ? "; ids are 0-based: a file numbered from 1 needs its ids less 1" : "");
      break;
    }
    if ((st = import_edges_push(e, (int32_t)u, (int32_t)v)) != CG_OK) break;
    if ((t.line & 0xfffff) == 0) cg_progress_update(&pr, import_text_offset(&t));
  }
  if (r < 0) st = r;
  if (st == CG_OK) {
    cg_progress_end(&pr);
    if (extra)
      import_note(stats, "ignored the columns after \"u v\" on %lld lines (first: line %lld); edge weights "
                  "are not used",
                  (long long)extra, (long long)first_extra);
  } else {
    cg_progress_cancel(&pr);
  }
  import_text_close(&t);
  return st;
}

/* X = I, n x n, stored sparse (one 1.0 per row). */
static int identity_features(struct graph *g, int64_t n, struct import_stats *stats) {
  g->feat_rowptr = cg_malloc((size_t)(n + 1) * sizeof *g->feat_rowptr, "identity feature row pointers");
  g->feat_colidx = cg_malloc((size_t)n * sizeof *g->feat_colidx, "identity feature columns");
  g->feat_values = cg_malloc((size_t)n * sizeof *g->feat_values, "identity feature values");
  if (!g->feat_rowptr || !g->feat_colidx || !g->feat_values) return CG_ERR_NOMEM;
  for (int64_t u = 0; u < n; u++) {
    g->feat_rowptr[u] = u;
    g->feat_colidx[u] = (int32_t)u;
    g->feat_values[u] = 1.0f;
  }
  g->feat_rowptr[n] = n;
  g->feat_dim = n;
  g->feat_nnz = n;
  g->sparse_feat = 1;
  if (g->n <= 0) g->n = n;
  snprintf(stats->feat_dtype, sizeof stats->feat_dtype, "identity");
  stats->nonzero_feats = n;
  return CG_OK;
}

int import_edgelist(const struct import_opts *o, struct graph *g, struct import_stats *stats) {
  if (!o->features || !o->labels)
    return cg_err_set(CG_ERR_ARG, "--from edgelist needs --features X.npy and --labels Y.npy (and optionally "
                      "--split S.npy)");
  TRY(import_input_expect(o->input, 0, "--from edgelist: --input is the edge list, one \"u v\" per line"));
  /* --features identity: X = I (one-hot vertex ids, the usual input of a graph without
   * features), stored sparse; the vertex count is the labels' */
  const int identity = strcmp(o->features, "identity") == 0;
  struct import_npy a;
  TRY(import_npy_open(&a, identity ? o->labels : o->features));
  int st = identity ? CG_OK : import_npy_expect_numeric(&a, "features");
  if (st == CG_OK && !identity) st = import_npy_expect_shape(&a, 2, (int64_t[]){-1, -1}, "(vertices x features)");
  const int64_t n = a.ndim >= 1 ? a.shape[0] : 0;
  import_npy_close(&a);
  TRY(st);
  if (n < 1 || n >= ((int64_t)1 << 31))
    return cg_err_set(CG_ERR_FORMAT, "%s: %lld rows; expected 1 <= n < 2^31 vertices", identity ? o->labels : o->features,
                      (long long)n);
  /* Check the small files before the long edge pass, so a typo fails fast. */
  TRY(import_npy_open(&a, o->labels));
  import_npy_close(&a);
  if (o->split) {
    TRY(import_npy_open(&a, o->split));
    import_npy_close(&a);
  }

  struct import_edges e;
  memset(&e, 0, sizeof e);
  st = read_edge_file(o->input, n, &e, stats);
  if (st != CG_OK) {
    import_edges_free(&e);
    return st;
  }
  TRY(import_edges_to_csr(&e, n, o->input, g, stats));

  if (identity) {
    TRY(identity_features(g, n, stats));
  } else {
    TRY(import_npy_open(&a, o->features));
    st = import_npy_features(&a, g, stats);
    import_npy_close(&a);
    TRY(st);
  }
  TRY(import_npy_open(&a, o->labels));
  st = import_npy_labels(&a, g, o->num_classes);
  import_npy_close(&a);
  TRY(st);
  if (o->split) {
    TRY(import_npy_open(&a, o->split));
    st = import_npy_split(&a, g);
    import_npy_close(&a);
    TRY(st);
    TRY(import_check_split(g, o->split, o->labels));
    int64_t count[4] = {0, 0, 0, 0};
    for (int64_t u = 0; u < n; u++) count[g->split[u] & 3]++;
    if (count[GRAPH_SPLIT_TRAIN] == 0)
      return cg_err_set(CG_ERR_FORMAT, "%s: no vertex is in the train split (1); the values are 0 none / 1 train / "
                        "2 val / 3 test", o->split);
    if (count[GRAPH_SPLIT_TEST] == 0 || count[GRAPH_SPLIT_VAL] == 0) {
      const char *none = count[GRAPH_SPLIT_TEST] == 0 ? "test (3)" : "val (2)";
      const int shifted = count[GRAPH_SPLIT_TEST] == 0 && count[GRAPH_SPLIT_NONE] > 0;
      import_note(stats, "%s has no %s vertex, so the runs will report no %s accuracy%s", o->split, none,
                  count[GRAPH_SPLIT_TEST] == 0 ? "test" : "validation",
                  shifted ? "; the values are 0 none / 1 train / 2 val / 3 test: a 0 train / 1 val / 2 test file "
                            "(PyG's style) must be shifted by one" : "");
    }
  } else {
    g->split = cg_malloc((size_t)n, "split");
    if (!g->split) return CG_ERR_NOMEM;
    TRY(import_random_split(g, o->seed));
    stats->random_split = 1;
    stats->seed = o->seed;
    /* as for a --split file without a train vertex: capgnn train could not use the file */
    int64_t train = 0, labelled = 0;
    for (int64_t u = 0; u < n; u++) {
      train += g->split[u] == GRAPH_SPLIT_TRAIN;
      if (g->multilabel) {
        int any = 0;
        for (int64_t k = 0; k < g->num_classes && !any; k++) any = g->mlabels[u * g->num_classes + k] != 0;
        labelled += any;
      } else {
        labelled += g->labels[u] >= 0;
      }
    }
    if (train == 0)
      return cg_err_set(CG_ERR_FORMAT, "%s: %lld of %lld vertices labelled, so the random 60/20/20 split (no "
                        "--split) has no train vertex; label more vertices (-1 = unlabelled) or give --split S.npy",
                        o->labels, (long long)labelled, (long long)n);
  }
  return CG_OK;
}
