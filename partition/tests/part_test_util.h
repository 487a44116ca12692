/* partition/tests/part_test_util.h — small graphs built in memory for the
 * partition tests, and comparison helpers. */
#ifndef CAPGNN_PART_TEST_UTIL_H
#define CAPGNN_PART_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "graph/graph.h"

/* A graph with only the CSR (no features/labels), from undirected edges (each
 * stored in both directions unless `directed`), rows sorted. Freed by graph_free. */
static inline void test_graph_from_edges(struct graph *g, const char *name, int64_t n,
                                         const int32_t (*edges)[2], int64_t nedges, int directed) {
  memset(g, 0, sizeof *g);
  snprintf(g->name, sizeof g->name, "%s", name);
  g->n = n;
  g->m = directed ? nedges : 2 * nedges;
  g->rowptr = cg_calloc((size_t)n + 1, sizeof(int64_t), "test rowptr");
  g->colidx = cg_malloc((size_t)(g->m > 0 ? g->m : 1) * sizeof(int32_t), "test colidx");
  for (int64_t e = 0; e < nedges; e++) {
    g->rowptr[edges[e][0] + 1]++;
    if (!directed) g->rowptr[edges[e][1] + 1]++;
  }
  for (int64_t v = 0; v < n; v++) g->rowptr[v + 1] += g->rowptr[v];
  int64_t *cur = malloc((size_t)n * sizeof *cur);
  memcpy(cur, g->rowptr, (size_t)n * sizeof *cur);
  for (int64_t e = 0; e < nedges; e++) {
    g->colidx[cur[edges[e][0]]++] = edges[e][1];
    if (!directed) g->colidx[cur[edges[e][1]]++] = edges[e][0];
  }
  free(cur);
  for (int64_t v = 0; v < n; v++) /* insertion sort each row */
    for (int64_t k = g->rowptr[v] + 1; k < g->rowptr[v + 1]; k++)
      for (int64_t j = k; j > g->rowptr[v] && g->colidx[j - 1] > g->colidx[j]; j--) {
        int32_t t = g->colidx[j];
        g->colidx[j] = g->colidx[j - 1];
        g->colidx[j - 1] = t;
      }
  g->checksum = 0x5eed0000u ^ (uint32_t)n ^ (uint32_t)(g->m << 12);
  g->num_classes = 1;
}

/* The 8-vertex graph of the hand-computed tests (12 undirected edges):
 *   0: 1 2        1: 0 2 3      2: 0 1 4 6    3: 1 4 5
 *   4: 2 3 6      5: 3 6 7      6: 2 4 5 7    7: 5 6
 * degrees 2 3 4 3 3 3 4 2; GCN degrees with the self-loop 3 4 5 4 4 4 5 3. */
static inline void test_graph_hand8(struct graph *g) {
  static const int32_t e[][2] = {{0, 1}, {0, 2}, {1, 2}, {1, 3}, {2, 4}, {2, 6},
                                 {3, 4}, {3, 5}, {4, 6}, {5, 6}, {5, 7}, {6, 7}};
  test_graph_from_edges(g, "hand8", 8, e, 12, 0);
}

/* A rows x cols 4-neighbour grid. */
static inline void test_graph_grid(struct graph *g, int rows, int cols) {
  int64_t n = (int64_t)rows * cols, ne = 0;
  int32_t(*e)[2] = malloc((size_t)(2 * n) * sizeof *e);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      int32_t v = r * cols + c;
      if (c + 1 < cols) { e[ne][0] = v; e[ne][1] = v + 1; ne++; }
      if (r + 1 < rows) { e[ne][0] = v; e[ne][1] = v + cols; ne++; }
    }
  char name[16];
  snprintf(name, sizeof name, "grid%dx%d", rows, cols);
  test_graph_from_edges(g, name, n, (const int32_t(*)[2])e, ne, 0);
  free(e);
}

static inline int test_i32_equal(const int32_t *a, const int32_t *b, int64_t n, const char *what) {
  for (int64_t i = 0; i < n; i++)
    if (a[i] != b[i]) {
      fprintf(stderr, "%s: [%lld] = %d, expected %d\n", what, (long long)i, a[i], b[i]);
      return 0;
    }
  return 1;
}

static inline int test_i64_equal(const int64_t *a, const int64_t *b, int64_t n, const char *what) {
  for (int64_t i = 0; i < n; i++)
    if (a[i] != b[i]) {
      fprintf(stderr, "%s: [%lld] = %lld, expected %lld\n", what, (long long)i, (long long)a[i],
              (long long)b[i]);
      return 0;
    }
  return 1;
}

/* Edge cut recomputed directly: undirected edges {u, v} with different owners. */
static inline int64_t test_edge_cut(const struct graph *g, const int32_t *owner) {
  int64_t cut = 0;
  for (int64_t v = 0; v < g->n; v++)
    for (int64_t k = g->rowptr[v]; k < g->rowptr[v + 1]; k++)
      if (g->colidx[k] > v && owner[g->colidx[k]] != owner[v]) cut++;
  return cut;
}

#endif
