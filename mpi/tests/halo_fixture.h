/* mpi/tests/halo_fixture.h — a random graph generated identically on every rank,
 * a random owner per vertex, and each rank's local numbering and halo plan built
 * from them (independently of partition/, which mpi/ must not depend on).
 *
 * Local numbering follows ARCHITECTURE.md: inner vertices in ascending global id,
 * then halo vertices grouped by owner rank (ascending), ascending global id within
 * an owner. Edge s -> d means d aggregates s, so the owner of d needs s. */
#ifndef CAPGNN_MPI_TESTS_HALO_FIXTURE_H
#define CAPGNN_MPI_TESTS_HALO_FIXTURE_H

#include <stdint.h>

#include "mpi/comm.h"

struct fx_graph {
  int nranks;
  int64_t n, m;
  int64_t *src, *dst;
  int32_t *owner;
};

struct fx_opts {
  uint64_t seed;
  int64_t n;           /* vertices */
  int64_t avg_deg;     /* edges = n * avg_deg (0: no edges) */
  int last_rank_empty; /* the last rank owns no vertex (so it has no peers) */
  int all_peers;       /* list every other rank as a peer, even with nothing to exchange */
};

struct fx_local {
  int rank;
  int64_t n_inner, n_halo;
  int64_t *gid;      /* local id -> global id, n_inner + n_halo */
  int64_t *local_of; /* global id -> local id or -1, n */
  /* plan arrays */
  int npeers;
  int32_t *peer;
  int64_t *send_offset, *send_count, *recv_offset, *recv_count;
  int32_t *send_idx;
  struct comm_halo_plan plan;
};

int fx_graph_make(struct fx_graph *g, int nranks, const struct fx_opts *o);
void fx_graph_free(struct fx_graph *g);
/* in_halo[v] = 1 when vertex v is a halo vertex of rank r (caller array of n bytes). */
void fx_halo_marks(const struct fx_graph *g, int r, unsigned char *in_halo);
int fx_local_make(const struct fx_graph *g, int rank, int all_peers, struct fx_local *l);
void fx_local_free(struct fx_local *l);

#endif
