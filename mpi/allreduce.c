/* mpi/allreduce.c — the gradient sum in a fixed order, flat or hierarchical.
 *
 * The order (the same on every run, every rank count on the same nodes, and both
 * algorithms): for each value, the ranks of each node are added in local-rank order
 * (starting from the first rank's value, not from 0), then the nodes' sums in node
 * order. So the flat and the hierarchical algorithm give the same bits, and the
 * result never depends on message timing.
 *
 *  flat  one reduce-scatter over all ranks (rank k owns the k-th segment: every rank
 *        sends it its piece, k adds them in the order above) and one all-gather;
 *  hier  a reduce-scatter inside each node (local rank i owns the node's i-th
 *        segment and adds the node's pieces), an all-reduce of each segment among the
 *        ranks with the same local rank on every node (reduce-scatter + all-gather:
 *        each node's sum once over the network, the nodes added in node order), then
 *        an all-gather inside the node. Between nodes travel 2 (N-1)/N of the buffer
 *        per node, spread over its L ranks, instead of 2 (P-1)/P per rank.
 * Both count the bytes each rank sends, inside its node and to other nodes
 * (comm_stats). Host memory; the device paths stage (grad.c).
 *
 * Design notes (the why): MPI_Allreduce's summation order is the library's (it may
 * depend on the algorithm chosen for the size, the rank layout, the transport), so
 * it cannot promise the same bits for the flat and the hierarchical form. Adding in
 * one place per segment, in a fixed order, costs the same bandwidth as a ring. */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "mpi/comm_internal.h"

const char *comm_allreduce_name(enum comm_allreduce a) {
  switch (a) {
    case COMM_ALLREDUCE_AUTO: return "auto";
    case COMM_ALLREDUCE_MPI: return "mpi";
    case COMM_ALLREDUCE_FLAT: return "flat";
    case COMM_ALLREDUCE_HIER: return "hier";
  }
  return "?";
}

int comm_allreduce_parse(const char *s, enum comm_allreduce *out) {
  static const enum comm_allreduce all[] = {COMM_ALLREDUCE_AUTO, COMM_ALLREDUCE_MPI, COMM_ALLREDUCE_FLAT,
                                            COMM_ALLREDUCE_HIER};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (s && strcmp(s, comm_allreduce_name(all[i])) == 0) {
      *out = all[i];
      return CG_OK;
    }
  return cg_err_set(CG_ERR_ARG, "all-reduce '%s': expected auto, mpi, flat or hier", s ? s : "(null)");
}

int comm_set_allreduce(struct comm *c, enum comm_allreduce a) {
  if (a != COMM_ALLREDUCE_AUTO && a != COMM_ALLREDUCE_MPI && a != COMM_ALLREDUCE_FLAT && a != COMM_ALLREDUCE_HIER)
    return cg_err_set(CG_ERR_ARG, "comm_set_allreduce: unknown algorithm %d", (int)a);
  c->allreduce_req = a;
  return CG_OK;
}

/* Every node as many ranks as the others (hier needs it: segment i of every node
 * meets on local rank i). */
static int nodes_even(const struct comm *c) {
  int lo = c->size, hi = 0;
  for (int j = 0; j < c->nnodes; j++) {
    int n = 0;
    for (int r = 0; r < c->size; r++) n += c->node_of[r] == j;
    if (n < lo) lo = n;
    if (n > hi) hi = n;
  }
  return lo == hi;
}

int comm_allreduce_resolve(struct comm *c, enum comm_allreduce *out) {
  enum comm_allreduce a = c->allreduce_req;
  int st = CG_OK;
  if (a == COMM_ALLREDUCE_AUTO) a = c->nnodes > 1 && nodes_even(c) ? COMM_ALLREDUCE_HIER : COMM_ALLREDUCE_MPI;
  /* The advice fits the cause: --map-by places ranks on machines, it cannot even out
   * emulated nodes, which split each host's ranks into CAPGNN_EMULATE_NODES blocks. */
  if (a == COMM_ALLREDUCE_HIER && !nodes_even(c) && c->emulate_k > 1 && c->host_local_size % c->emulate_k != 0)
    st = cg_err_set(CG_ERR_UNSUPPORTED,
                    "the hierarchical all-reduce needs the same number of ranks on every node (this host's %d "
                    "ranks do not split evenly into CAPGNN_EMULATE_NODES=%d emulated nodes: give a rank count "
                    "(-np) that CAPGNN_EMULATE_NODES divides, or a CAPGNN_EMULATE_NODES that divides the ranks "
                    "per host), or use --allreduce flat",
                    c->host_local_size, c->emulate_k);
  else if (a == COMM_ALLREDUCE_HIER && !nodes_even(c))
    st = cg_err_set(CG_ERR_UNSUPPORTED,
                    "the hierarchical all-reduce needs the same number of ranks on every node (this job's "
                    "nodes differ: map with --map-by ppr:G:node), or use --allreduce flat");
  /* the cross-node communicator of hier: local rank i of every node, in node order */
  if (st == CG_OK && a == COMM_ALLREDUCE_HIER && c->cross == MPI_COMM_NULL &&
      MPI_Comm_split(c->world, c->local_rank, c->node_id, &c->cross) != MPI_SUCCESS)
    st = cg_err_set(CG_ERR_MPI, "MPI_Comm_split (ranks with the same local rank on every node) failed");
  if (st == CG_OK && a == COMM_ALLREDUCE_HIER) MPI_Comm_set_errhandler(c->cross, MPI_ERRORS_RETURN);
  TRY(comm_agree(c, st, "choosing the all-reduce"));
  *out = a;
  return CG_OK;
}

/* Segment k of n values over s owners: [k n / s, (k+1) n / s). */
static int64_t seg_lo(int64_t n, int s, int k) { return n * k / s; }

/* Contributions to one segment, one row per member of `cm` (its rank order), are added
 * per value in the order of `order` (member indices), in groups (group g: order
 * [gstart[g], gstart[g+1])): inside a group from its first member's value, then the
 * groups' sums from the first group's. */
static void combine(const float *contrib, int64_t len, const int *order, const int *gstart, int ngroups,
                    float *out) {
  for (int64_t e = 0; e < len; e++) {
    float total = 0.0f;
    for (int g = 0; g < ngroups; g++) {
      float p = contrib[(int64_t)order[gstart[g]] * len + e];
      for (int i = gstart[g] + 1; i < gstart[g + 1]; i++) p += contrib[(int64_t)order[i] * len + e];
      total = g == 0 ? p : total + p;
    }
    out[e] = total;
  }
}

/* Reduce-scatter over `cm` (size s, this rank me): this rank's segment of buf becomes
 * the ordered sum of every member's. scratch: room for n values. Bytes sent are added
 * to *intra / *inter by the node of each destination (node_of_member). */
static int reduce_scatter(MPI_Comm cm, int s, int me, float *buf, int64_t n, float *scratch, const int *order,
                          const int *gstart, int ngroups, const int *node_of_member, int my_node, int64_t *intra,
                          int64_t *inter) {
  int *sc = malloc(sizeof(int) * 4 * (size_t)s);
  if (!sc) return cg_err_set(CG_ERR_NOMEM, "all-reduce counts (%d ranks)", s);
  int *sd = sc + s, *rc = sc + 2 * s, *rd = sc + 3 * s;
  const int64_t lo = seg_lo(n, s, me), len = seg_lo(n, s, me + 1) - lo;
  for (int k = 0; k < s; k++) {
    sd[k] = (int)seg_lo(n, s, k);
    sc[k] = (int)(seg_lo(n, s, k + 1) - sd[k]);
    rc[k] = (int)len;
    rd[k] = (int)(len * k);
    if (k != me) *(node_of_member[k] == my_node ? intra : inter) += (int64_t)sc[k] * (int64_t)sizeof(float);
  }
  int st = MPI_Alltoallv(buf, sc, sd, MPI_FLOAT, scratch, rc, rd, MPI_FLOAT, cm) == MPI_SUCCESS
               ? CG_OK
               : cg_err_set(CG_ERR_MPI, "MPI_Alltoallv (the all-reduce's reduce-scatter) failed");
  if (st == CG_OK) combine(scratch, len, order, gstart, ngroups, buf + lo);
  free(sc);
  return st;
}

/* All-gather over `cm`: every member's segment of buf to every member. */
static int all_gather(MPI_Comm cm, int s, int me, float *buf, int64_t n, const int *node_of_member, int my_node,
                      int64_t *intra, int64_t *inter) {
  int *cnt = malloc(sizeof(int) * 2 * (size_t)s);
  if (!cnt) return cg_err_set(CG_ERR_NOMEM, "all-reduce counts (%d ranks)", s);
  int *dsp = cnt + s;
  const int64_t mine = (seg_lo(n, s, me + 1) - seg_lo(n, s, me)) * (int64_t)sizeof(float);
  for (int k = 0; k < s; k++) {
    dsp[k] = (int)seg_lo(n, s, k);
    cnt[k] = (int)(seg_lo(n, s, k + 1) - dsp[k]);
    if (k != me) *(node_of_member[k] == my_node ? intra : inter) += mine;
  }
  const int st = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, cnt, dsp, MPI_FLOAT, cm) == MPI_SUCCESS
                     ? CG_OK
                     : cg_err_set(CG_ERR_MPI, "MPI_Allgatherv (the all-reduce's all-gather) failed");
  free(cnt);
  return st;
}

int comm_sum_ordered(struct comm *c, enum comm_allreduce a, float *buf, int64_t n, float *scratch) {
  if (n > INT32_MAX) /* MPI counts are int; a gradient of 8 GiB is not a model this trains */
    return cg_err_set(CG_ERR_UNSUPPORTED, "ordered all-reduce of %lld values: at most %d", (long long)n, INT32_MAX);
  const int P = c->size, N = c->nnodes, L = c->local_size;
  int64_t intra = 0, inter = 0;
  int st = CG_OK;
  int *tmp = malloc(sizeof(int) * (3 * (size_t)P + (size_t)N + 2));
  if (!tmp) return cg_err_set(CG_ERR_NOMEM, "all-reduce order (%d ranks)", P);
  int *order = tmp, *gstart = tmp + P, *node_of_member = tmp + P + N + 1;
  if (a == COMM_ALLREDUCE_FLAT) {
    /* members: world ranks; groups: nodes in order, each its ranks in rank order */
    int k = 0;
    for (int j = 0; j < N; j++) {
      gstart[j] = k;
      for (int r = 0; r < P; r++)
        if (c->node_of[r] == j) order[k++] = r;
    }
    gstart[N] = k;
    st = reduce_scatter(c->world, P, c->rank, buf, n, scratch, order, gstart, N, c->node_of, c->node_id, &intra,
                        &inter);
    if (st == CG_OK) st = all_gather(c->world, P, c->rank, buf, n, c->node_of, c->node_id, &intra, &inter);
  } else { /* HIER */
    const int64_t lo = seg_lo(n, L, c->local_rank), len = seg_lo(n, L, c->local_rank + 1) - lo;
    /* 1. inside the node: one group, local rank order */
    for (int i = 0; i < L; i++) {
      order[i] = i;
      node_of_member[i] = c->node_id;
    }
    gstart[0] = 0;
    gstart[1] = L;
    st = reduce_scatter(c->node, L, c->local_rank, buf, n, scratch, order, gstart, 1, node_of_member, c->node_id,
                        &intra, &inter);
    /* 2. this segment among the nodes: one group per node, node order */
    for (int j = 0; j < N; j++) {
      order[j] = gstart[j] = j;
      node_of_member[j] = j;
    }
    gstart[N] = N;
    if (st == CG_OK)
      st = reduce_scatter(c->cross, N, c->node_id, buf + lo, len, scratch, order, gstart, N, node_of_member,
                          c->node_id, &intra, &inter);
    if (st == CG_OK) st = all_gather(c->cross, N, c->node_id, buf + lo, len, node_of_member, c->node_id, &intra,
                                     &inter);
    /* 3. inside the node */
    for (int i = 0; i < L; i++) node_of_member[i] = c->node_id;
    if (st == CG_OK) st = all_gather(c->node, L, c->local_rank, buf, n, node_of_member, c->node_id, &intra, &inter);
  }
  free(tmp);
  c->stats.allreduce_intra_bytes += intra;
  c->stats.allreduce_inter_bytes += inter;
  return st;
}
