/* jaca/tests/jaca_test.h — what the caching-exchange tests under mpiexec share: a
 * synthetic graph with its vertices dealt out to the ranks. Checks abort the whole job
 * (mpi/tests/mpi_test.h; the test defines mt_comm). */
#ifndef CAPGNN_JACA_TESTS_JACA_TEST_H
#define CAPGNN_JACA_TESTS_JACA_TEST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "mpi_test.h"
#include "partition/partition.h"

/* graph_synth(spec) into *g; returns each vertex's owner among P ranks (malloc'd: the
 * caller frees it): part_assign's PART_RANDOM with `seed`, or round robin (v % P) when
 * seed is 0. The same on every rank. */
static inline int32_t *jt_synth_owned(const char *spec, int P, uint64_t seed, struct graph *g) {
  MT_OK(graph_synth(spec, g));
  int32_t *owner = malloc(sizeof(int32_t) * (size_t)g->n);
  MT_CHECK(owner != NULL, "out of memory");
  if (seed) {
    struct part_options po;
    memset(&po, 0, sizeof po);
    po.method = PART_RANDOM;
    po.nparts = P;
    po.seed = seed;
    MT_OK(part_assign(g, &po, owner));
  } else {
    for (int64_t v = 0; v < g->n; v++) owner[v] = (int32_t)(v % P);
  }
  return owner;
}

#endif
