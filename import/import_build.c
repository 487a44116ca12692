/* import/import_build.c — the CSR builder and the finishing steps shared by every
 * importer.
 *
 * CSR from an edge list in O(n + m) without sorting:
 *  1. count: deg[u]++, deg[v]++ for every non-loop edge (u, v); prefix sums.
 *  2. fill B (unsorted, multiset-symmetric): row u gets v tagged "forward", row v
 *     gets u tagged "mirror". The tag is bit 31 (ids are < 2^31).
 *  3. transpose B into C: walking rows r = 0, 1, ... in order and appending r to
 *     row c leaves every row of C sorted; since B is symmetric as a multiset, row c
 *     of C holds exactly the entries of row c of B. The tag flips, so in C the tag
 *     of (c, r) says whether the source listed c -> r.
 *  4. dedupe each sorted row: a group of equal columns with f forward and r mirror
 *     entries is one output entry; it adds f - 1 duplicates, or one reverse edge
 *     when f == 0 (the source only had r -> c).
 * Peak memory: B and C (4 bytes per directed entry each), the edges being freed
 * block by block as B fills. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "core/philox.h"
#include "core/outfile.h"
#include "core/status.h"
#include "import/import_internal.h"
#include "core/progress.h"

#define TAG_MIRROR 0x80000000u
#define ID_MASK 0x7fffffffu

/* ---- edges ------------------------------------------------------------------------ */

int import_edges_grow(struct import_edges *e) {
  if (e->nblocks == e->cap) {
    int64_t cap = e->cap ? 2 * e->cap : 16;
    int32_t **u = realloc(e->u, (size_t)cap * sizeof *u), **v;
    if (!u) return cg_err_set(CG_ERR_NOMEM, "out of memory for the edge block table");
    e->u = u;
    v = realloc(e->v, (size_t)cap * sizeof *v);
    if (!v) return cg_err_set(CG_ERR_NOMEM, "out of memory for the edge block table");
    e->v = v;
    e->cap = cap;
  }
  e->u[e->nblocks] = malloc((size_t)IMPORT_EDGE_BLOCK * sizeof(int32_t));
  e->v[e->nblocks] = malloc((size_t)IMPORT_EDGE_BLOCK * sizeof(int32_t));
  if (!e->u[e->nblocks] || !e->v[e->nblocks]) {
    free(e->u[e->nblocks]);
    free(e->v[e->nblocks]);
    return cg_err_set(CG_ERR_NOMEM, "out of memory for the edge list (%lld edges so far, %lld MB)",
                      (long long)e->count, (long long)(e->count * 8 >> 20));
  }
  e->nblocks++;
  return CG_OK;
}

int import_edges_alloc(struct import_edges *e, int64_t count) {
  memset(e, 0, sizeof *e);
  int64_t nb = (count + IMPORT_EDGE_BLOCK - 1) / IMPORT_EDGE_BLOCK;
  e->cap = nb ? nb : 1;
  e->u = calloc((size_t)e->cap, sizeof *e->u);
  e->v = calloc((size_t)e->cap, sizeof *e->v);
  if (!e->u || !e->v) {
    import_edges_free(e);
    return cg_err_set(CG_ERR_NOMEM, "out of memory for the edge block table");
  }
  for (int64_t b = 0; b < nb; b++) {
    int64_t len = count - b * IMPORT_EDGE_BLOCK < IMPORT_EDGE_BLOCK ? count - b * IMPORT_EDGE_BLOCK : IMPORT_EDGE_BLOCK;
    e->u[b] = malloc((size_t)len * sizeof(int32_t));
    e->v[b] = malloc((size_t)len * sizeof(int32_t));
    e->nblocks = b + 1;
    if (!e->u[b] || !e->v[b]) {
      import_edges_free(e);
      return cg_err_set(CG_ERR_NOMEM, "out of memory for an edge list of %lld edges (%lld MB)",
                        (long long)count, (long long)(count * 8 >> 20));
    }
  }
  e->count = count;
  return CG_OK;
}

void import_edges_free(struct import_edges *e) {
  if (!e) return;
  for (int64_t b = 0; b < e->nblocks; b++) {
    if (e->u) free(e->u[b]);
    if (e->v) free(e->v[b]);
  }
  free(e->u);
  free(e->v);
  memset(e, 0, sizeof *e);
}

static void edges_free_block(struct import_edges *e, int64_t b) {
  free(e->u[b]);
  free(e->v[b]);
  e->u[b] = e->v[b] = NULL;
}

int import_edges_to_csr(struct import_edges *e, int64_t n, const char *source, struct graph *g,
                        struct import_stats *st) {
  int status = CG_OK;
  int64_t *rowptr = NULL, *pos = NULL;
  uint32_t *B = NULL, *C = NULL;
  const int64_t E = e->count;
  struct cg_progress pr;
  cg_progress_begin(&pr, "building the graph (CSR)", 3 * E, "entries");
  if (n < 1 || n >= ((int64_t)1 << 31)) {
    status = cg_err_set(CG_ERR_FORMAT, "%s: %lld vertices; a graph needs 1 <= n < 2^31", source, (long long)n);
    goto done;
  }
  st->edges_read = E;

  rowptr = cg_calloc((size_t)n + 1, sizeof *rowptr, "CSR row pointers");
  pos = cg_malloc((size_t)n * sizeof *pos, "CSR fill cursors");
  if (!rowptr || !pos) {
    status = CG_ERR_NOMEM;
    goto done;
  }
  int64_t loops = 0;
  for (int64_t b = 0; b < e->nblocks; b++) {
    const int32_t *u = e->u[b], *v = e->v[b];
    int64_t len = import_edges_block_len(e, b);
    for (int64_t i = 0; i < len; i++) {
      int64_t a = u[i], c = v[i];
      if (a < 0 || a >= n || c < 0 || c >= n) {
        int64_t bad = (a < 0 || a >= n) ? a : c;
        status = cg_err_set(CG_ERR_FORMAT,
                            "%s: vertex id out of range in edge %lld (%lld, %lld): %lld, expected a value "
                            "in [0, %lld) (n = %lld vertices)",
                            source, (long long)(b * IMPORT_EDGE_BLOCK + i), (long long)a, (long long)c,
                            (long long)bad, (long long)n, (long long)n);
        goto done;
      }
      if (a == c) {
        loops++;
        continue;
      }
      rowptr[a + 1]++;
      rowptr[c + 1]++;
    }
    cg_progress_update(&pr, b * IMPORT_EDGE_BLOCK + len);
  }
  for (int64_t x = 0; x < n; x++) rowptr[x + 1] += rowptr[x];
  const int64_t total = rowptr[n];
  st->self_loops = loops;

  B = cg_malloc((size_t)(total ? total : 1) * sizeof *B, "CSR entries (unsorted)");
  if (!B) {
    status = CG_ERR_NOMEM;
    goto done;
  }
  memcpy(pos, rowptr, (size_t)n * sizeof *pos);
  for (int64_t b = 0; b < e->nblocks; b++) {
    const int32_t *u = e->u[b], *v = e->v[b];
    int64_t len = import_edges_block_len(e, b);
    for (int64_t i = 0; i < len; i++) {
      uint32_t a = (uint32_t)u[i], c = (uint32_t)v[i];
      if (a == c) continue;
      B[pos[a]++] = c;
      B[pos[c]++] = a | TAG_MIRROR;
    }
    edges_free_block(e, b);
    cg_progress_update(&pr, E + b * IMPORT_EDGE_BLOCK + len);
  }
  import_edges_free(e);

  C = cg_malloc((size_t)(total ? total : 1) * sizeof *C, "CSR entries (sorted)");
  if (!C) {
    status = CG_ERR_NOMEM;
    goto done;
  }
  memcpy(pos, rowptr, (size_t)n * sizeof *pos);
  for (int64_t r = 0; r < n; r++) {
    for (int64_t k = rowptr[r]; k < rowptr[r + 1]; k++) {
      uint32_t x = B[k];
      C[pos[x & ID_MASK]++] = (uint32_t)r | ((x & TAG_MIRROR) ^ TAG_MIRROR);
    }
    if ((r & 0xffff) == 0) cg_progress_update(&pr, 2 * E + rowptr[r] / 2);
  }
  cg_free(B);
  B = NULL;

  int64_t out = 0, begin = 0, dups = 0, added = 0, isolated = 0;
  for (int64_t x = 0; x < n; x++) {
    int64_t end = rowptr[x + 1];
    int64_t k = begin;
    while (k < end) {
      uint32_t y = C[k] & ID_MASK;
      int64_t fwd = 0;
      while (k < end && (C[k] & ID_MASK) == y) {
        if (!(C[k] & TAG_MIRROR)) fwd++;
        k++;
      }
      if (fwd) dups += fwd - 1;
      else added++;
      C[out++] = y;
    }
    if (out == rowptr[x]) isolated++; /* rowptr[x] already holds the new start */
    rowptr[x + 1] = out;
    begin = end;
  }
  cg_progress_end(&pr);
  st->duplicates = dups;
  st->reverse_added = added;
  st->isolated = isolated;
  if (out == 0) /* legal, but almost always a wrong file or wrong columns */
    import_note(st, "%s holds no edge once self-loops are dropped: every vertex is isolated, so a GNN "
                "sees only the features (check the file and its format)", source);

  int32_t *colidx;
  if (out < total) {
    colidx = cg_malloc((size_t)(out ? out : 1) * sizeof *colidx, "graph column indices");
    if (!colidx) {
      status = CG_ERR_NOMEM;
      goto done;
    }
    memcpy(colidx, C, (size_t)out * sizeof *colidx);
    cg_free(C);
  } else {
    colidx = (int32_t *)C;
  }
  C = NULL;
  g->n = n;
  g->m = out;
  g->rowptr = rowptr;
  g->colidx = colidx;
  rowptr = NULL;
  LOG_DEBUG("graph", "%s: %lld edges -> %lld CSR entries (%lld self-loops, %lld duplicates, %lld reverse added)",
            source, (long long)E, (long long)out, (long long)loops, (long long)dups, (long long)added);
done:
  cg_progress_cancel(&pr);
  import_edges_free(e);
  cg_free(rowptr);
  cg_free(pos);
  cg_free(B);
  cg_free(C);
  return status;
}

/* ---- features -------------------------------------------------------------------- */

static inline int value_nonzero(const float *p) {
  uint32_t bits;
  memcpy(&bits, p, 4);
  return bits != 0; /* bitwise, so -0.0 survives a round trip through sparse storage */
}

int import_feat_store(struct graph *g, enum import_feat_storage mode, struct import_stats *st) {
  const int64_t n = g->n, f = g->feat_dim;
  if (g->sparse_feat) { /* built sparse by the importer (--features identity): never made dense */
    if (mode == IMPORT_FEAT_DENSE)
      return cg_err_set(CG_ERR_ARG, "--feat-storage dense: identity features (%lld x %lld) are stored sparse",
                        (long long)n, (long long)f);
    st->nonzero_feats = g->feat_nnz;
    return CG_OK;
  }
  int64_t nnz = 0;
#pragma omp parallel for reduction(+ : nnz)
  for (int64_t k = 0; k < n * f; k++) nnz += value_nonzero(&g->feat_values[k]);
  st->nonzero_feats = nnz;
  g->sparse_feat = 0;
  g->feat_nnz = n * f;
  int sparse = mode == IMPORT_FEAT_SPARSE ||
               (mode == IMPORT_FEAT_AUTO && 8 * nnz + 8 * (n + 1) <= 2 * n * f);
  if (!sparse) return CG_OK;

  int64_t *rp = cg_malloc((size_t)(n + 1) * sizeof *rp, "feature row pointers");
  int32_t *ci = cg_malloc((size_t)(nnz ? nnz : 1) * sizeof *ci, "feature column indices");
  if (!rp || !ci) {
    cg_free(rp);
    cg_free(ci);
    return CG_ERR_NOMEM;
  }
  /* Compact in place: the write position never passes the read position. */
  float *x = g->feat_values;
  int64_t w = 0;
  rp[0] = 0;
  for (int64_t u = 0; u < n; u++) {
    for (int64_t j = 0; j < f; j++) {
      const float *p = &x[u * f + j];
      if (value_nonzero(p)) {
        x[w] = *p;
        ci[w] = (int32_t)j;
        w++;
      }
    }
    rp[u + 1] = w;
  }
  float *vals = cg_malloc((size_t)(nnz ? nnz : 1) * sizeof *vals, "feature values (sparse)");
  if (!vals) {
    cg_free(rp);
    cg_free(ci);
    return CG_ERR_NOMEM;
  }
  memcpy(vals, x, (size_t)nnz * sizeof *vals);
  cg_free(g->feat_values);
  g->feat_values = vals;
  g->feat_rowptr = rp;
  g->feat_colidx = ci;
  g->feat_nnz = nnz;
  g->sparse_feat = 1;
  return CG_OK;
}

/* ---- labels and split ------------------------------------------------------------ */

int import_random_split(struct graph *g, uint64_t seed) {
  const int64_t n = g->n, c = g->num_classes;
  int32_t *ids = cg_malloc((size_t)n * sizeof *ids, "random split order");
  if (!ids) return CG_ERR_NOMEM;
  int64_t L = 0;
  for (int64_t u = 0; u < n; u++) {
    int labelled = 0;
    if (g->multilabel) {
      for (int64_t k = 0; k < c && !labelled; k++) labelled = g->mlabels[u * c + k] != 0;
    } else {
      labelled = g->labels[u] >= 0;
    }
    g->split[u] = GRAPH_SPLIT_NONE;
    if (labelled) ids[L++] = (int32_t)u;
  }
  /* Fisher-Yates; the draw for position i depends only on (seed, i). */
  for (int64_t i = L - 1; i > 0; i--) {
    struct cg_philox_out o = cg_philox4x32_10((uint32_t)i, (uint32_t)((uint64_t)i >> 32), 0x5b1u, 0,
                                              (uint32_t)seed, (uint32_t)(seed >> 32));
    uint64_t r = ((uint64_t)o.v[0] << 32) | o.v[1];
    int64_t j = (int64_t)(((unsigned __int128)r * (unsigned __int128)(uint64_t)(i + 1)) >> 64);
    int32_t t = ids[i];
    ids[i] = ids[j];
    ids[j] = t;
  }
  int64_t ntrain = L * 6 / 10, nval = L * 2 / 10;
  for (int64_t i = 0; i < L; i++)
    g->split[ids[i]] = i < ntrain ? GRAPH_SPLIT_TRAIN : i < ntrain + nval ? GRAPH_SPLIT_VAL : GRAPH_SPLIT_TEST;
  cg_free(ids);
  return CG_OK;
}

int import_label_classes(struct graph *g, int64_t want, const char *source) {
  int64_t maxl = -1, bad = -1;
  for (int64_t u = 0; u < g->n; u++) {
    int32_t l = g->labels[u];
    if (l < -1 || (want > 0 && l >= want)) {
      bad = u;
      break;
    }
    if (l > maxl) maxl = l;
  }
  if (bad >= 0) {
    char range[80];
    if (want > 0) snprintf(range, sizeof range, "in [0, %lld) (--classes %lld)", (long long)want, (long long)want);
    else snprintf(range, sizeof range, ">= 0");
    return cg_err_set(CG_ERR_FORMAT, "%s: label out of range at vertex %lld: %d, expected a class %s or -1 "
                      "(unlabelled)",
                      source, (long long)bad, g->labels[bad], range);
  }
  g->num_classes = want > 0 ? want : (maxl >= 0 ? maxl + 1 : 1);
  return CG_OK;
}

int import_check_split(const struct graph *g, const char *split_source, const char *label_source) {
  if (g->multilabel) return CG_OK;
  static const char *const names[] = {"no", "train", "val", "test"};
  for (int64_t u = 0; u < g->n; u++)
    if (g->labels[u] < 0 && g->split[u] != GRAPH_SPLIT_NONE)
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: vertex %lld is in the %s split but has no label in %s (-1 or nan, or missing "
                        "from a class map); a vertex in a split must be labelled",
                        split_source, (long long)u, names[g->split[u] & 3], label_source);
  return CG_OK;
}

void import_note(struct import_stats *st, const char *fmt, ...) {
  if (st->nnotes >= IMPORT_MAX_NOTES) return;
  /* escaped as an error is (core/log.h): a file name quoted in it brings no raw control
   * byte to the terminal that prints it */
  char text[sizeof st->notes[0]];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  cg_text_escape(st->notes[st->nnotes++], sizeof st->notes[0], text);
}

/* ---- paths ------------------------------------------------------------------------ */

int import_path_join(char *buf, size_t len, const char *dir, const char *name) {
  int k = snprintf(buf, len, "%s%s%s", dir, (*dir && dir[strlen(dir) - 1] != '/') ? "/" : "", name);
  if (k < 0 || (size_t)k >= len) return cg_err_set(CG_ERR_ARG, "path too long: %s/%s", dir, name);
  return CG_OK;
}

int import_path_is_file(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

int import_path_is_dir(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int import_input_expect(const char *path, int want_dir, const char *expect) {
  if (want_dir ? import_path_is_dir(path) : import_path_is_file(path)) return CG_OK;
  const char *type = cg_path_type(path);
  if (!type)
    return cg_err_set(CG_ERR_NOT_FOUND, "%s: no such %s (%s)", path, want_dir ? "folder" : "file", expect);
  return cg_err_set(CG_ERR_IO, "%s: %s, not a %s (%s)", path, type, want_dir ? "folder" : "regular file", expect);
}
