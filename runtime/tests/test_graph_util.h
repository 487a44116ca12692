/* runtime/tests/test_graph_util.h — a small random graph built in memory for the
 * runtime's unit tests (no file, no generator from graph/ involved). */
#ifndef CAPGNN_RUNTIME_TEST_GRAPH_UTIL_H
#define CAPGNN_RUNTIME_TEST_GRAPH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "graph/graph.h"

static inline uint64_t tg_next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static inline double tg_unit(uint64_t *s) { return (double)(tg_next(s) >> 11) * (1.0 / 9007199254740992.0); }

/* n vertices, symmetric random edges (p = 0.15), the last vertex isolated, dense
 * features in [-1, 1], c classes (or c labels per vertex when multilabel), split:
 * 40% train, 30% val, 30% test. Returns 0 on success. Free with graph_free. */
static inline int tg_make(struct graph *g, int64_t n, int64_t f, int64_t c, int multilabel, uint64_t seed) {
  memset(g, 0, sizeof *g);
  snprintf(g->name, sizeof g->name, "rand%lld", (long long)n);
  uint64_t s = seed;
  uint8_t *adj = cg_calloc((size_t)(n * n), 1, "test adjacency");
  if (!adj) return -1;
  for (int64_t i = 0; i < n - 1; i++)
    for (int64_t j = i + 1; j < n - 1; j++)
      if (tg_unit(&s) < 0.15) adj[i * n + j] = adj[j * n + i] = 1;
  int64_t m = 0;
  for (int64_t k = 0; k < n * n; k++) m += adj[k];
  g->n = n;
  g->m = m;
  g->rowptr = cg_malloc((size_t)(n + 1) * sizeof(int64_t), "test rowptr");
  g->colidx = cg_malloc((size_t)(m > 0 ? m : 1) * sizeof(int32_t), "test colidx");
  g->feat_dim = f;
  g->feat_nnz = n * f;
  g->feat_values = cg_malloc((size_t)(n * f) * sizeof(float), "test features");
  g->num_classes = c;
  g->multilabel = multilabel;
  if (multilabel) g->mlabels = cg_malloc((size_t)(n * c), "test mlabels");
  else g->labels = cg_malloc((size_t)n * sizeof(int32_t), "test labels");
  g->split = cg_malloc((size_t)n, "test split");
  if (!g->rowptr || !g->colidx || !g->feat_values || !g->split || (multilabel ? !g->mlabels : !g->labels)) {
    cg_free(adj);
    graph_free(g);
    return -1;
  }
  int64_t k = 0;
  g->rowptr[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    for (int64_t j = 0; j < n; j++)
      if (adj[i * n + j]) g->colidx[k++] = (int32_t)j;
    g->rowptr[i + 1] = k;
  }
  cg_free(adj);
  for (int64_t i = 0; i < n * f; i++) g->feat_values[i] = (float)(2.0 * tg_unit(&s) - 1.0);
  for (int64_t i = 0; i < n; i++) {
    if (multilabel)
      for (int64_t j = 0; j < c; j++) g->mlabels[i * c + j] = tg_unit(&s) < 0.4;
    else
      g->labels[i] = (int32_t)(tg_next(&s) % (uint64_t)c);
    g->split[i] = i < n * 4 / 10 ? GRAPH_SPLIT_TRAIN : i < n * 7 / 10 ? GRAPH_SPLIT_VAL : GRAPH_SPLIT_TEST;
  }
  return 0;
}

#endif
