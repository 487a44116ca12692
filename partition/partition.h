/* partition/partition.h — who owns which vertex, what each rank trains on, and
 * how good a partition is.
 *
 * 1. Assignment: part_assign() gives every global vertex an owner rank, with METIS
 *    k-way (edge-cut minimising, optional vertex weights and target part weights,
 *    which resource-aware partitioning uses) or a seeded balanced random split.
 *    part_assign_cached() stores the result on disk and reuses it when the graph
 *    checksum and the options match.
 * 2. Local graph: part_local_build() gives one rank its inner vertices, its halo
 *    (the non-owned in-neighbours of its inner vertices, grouped by owner so that
 *    each peer's rows land as one contiguous block), the per-peer send/receive
 *    plans and the local aggregation operator with GLOBAL normalisation degrees
 *    (ARCHITECTURE.md, exactness contract). part_local_check() and
 *    part_plans_check_global() are the invariant checkers.
 * 3. Statistics: part_stats_compute() (inner/halo/edges/outer edges per part,
 *    edge cut, replication factor, the overlap histogram of R(v)), printed as a
 *    table or written as JSON.
 *
 * Edges follow graph/graph.h: the CSR row of v lists the sources of v's in-edges
 * (the graph is symmetric, so these are also its out-neighbours). Only this module
 * includes metis.h; METIS' idx_t appears nowhere in this header.
 * All functions return CG_OK or a negative enum cg_status with a message
 * (core/status.h); nothing here exits or aborts. */
#ifndef CAPGNN_PARTITION_H
#define CAPGNN_PARTITION_H

#include <stdint.h>
#include <stdio.h>

#include "core/csr.h"
#include "graph/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Assignment                                                                */
/* ------------------------------------------------------------------------- */

enum part_method {
  PART_METIS = 0,  /* METIS_PartGraphKway on the symmetrised graph (edge cut objective) */
  PART_RANDOM = 1, /* seeded balanced random split (Philox, independent of threads) */
};

struct part_options {
  enum part_method method;
  int nparts;            /* 1 <= nparts <= n */
  uint64_t seed;         /* METIS seed / random stream key; same seed -> same owners */
  const int64_t *vwgt;   /* optional (NULL): n vertex weights >= 0, total < 2^31 (METIS
                            only; the random method rejects them) */
  const float *tpwgts;   /* optional (NULL): nparts target fractions > 0 summing to 1
                            within 1e-3; METIS balances vertex weight to them, the random
                            method sizes parts by largest remainder of tpwgts[k] * n */
  int parts_are_ranks;   /* 1: the parts are a job's ranks (training under mpirun), so an
                            empty part's error advises fewer ranks (-np), not fewer parts */
};

/* Name of a method ("metis", "random") and its inverse (CG_ERR_ARG on an unknown name). */
const char *part_method_name(enum part_method m);
int part_method_parse(const char *name, enum part_method *out);

/* owner[v] in [0, nparts) for every vertex v (owner: caller-allocated, n entries).
 * Deterministic for a given graph and options. nparts == 1 gives all zeros without
 * calling METIS. Every part is non-empty on success: if METIS leaves a part empty
 * (tiny graphs, extreme target weights) the call fails with CG_ERR_METIS.
 * Errors: CG_ERR_ARG (bad options, graph too large for METIS' 32-bit idx_t: the
 * conversion is checked at one boundary), CG_ERR_METIS (METIS failed; the message
 * says which METIS status), CG_ERR_NOMEM. On failure the contents of owner are
 * unspecified. */
int part_assign(const struct graph *g, const struct part_options *o, int32_t *owner);

/* part_assign() through an on-disk cache.
 * cache_dir NULL -> $CAPGNN_CACHE, or ".capgnn-cache" when that is unset; the folder
 * (and its parents) is created when missing. The file is
 *   <cache_dir>/<graph name>-<checksum %08x>-<method>-p<nparts>-s<seed>[-w<hash>].part
 * where <hash> (%08x) is a CRC-32 of the vertex and target weights when given. It
 * holds a 64-byte header (magic "CGPART01", version 1, n, nparts, method, seed,
 * graph checksum, weights hash, flags), the owner array (int32 little-endian) and a
 * CRC-32 (zlib) of everything before it. A missing file is computed and written
 * (temp name, then rename(), so readers never see half a file). A file that is
 * corrupt, truncated or whose key fields do not match is ignored with a WARN and
 * recomputed. Failing to write the cache is a WARN, not an error (the assignment is
 * still returned). *reused (may be NULL) is 1 when the owners came from the file. */
int part_assign_cached(const struct graph *g, const struct part_options *o, const char *cache_dir,
                       int32_t *owner, int *reused);
/* The two halves of part_assign_cached(), for a caller that has not read the graph's
 * structure yet (per-rank loading, runtime/dist.c): the key is the graph's name,
 * checksum (graph.h: from the section CRCs of its .cgr header, so any change to the
 * file's contents changes it) and vertex count, and the options; g needs those
 * fields only (rowptr and colidx may be NULL; vertex weights, when given, have
 * g->n entries). part_cache_lookup fills owner and sets *hit to 1 from a valid file
 * that matches, else *hit = 0 (a WARN says why an existing file was ignored).
 * part_cache_store writes the file (a failure to write is a WARN, not an error). */
int part_cache_lookup(const struct graph *g, const struct part_options *o, const char *cache_dir,
                      int32_t *owner, int *hit);
int part_cache_store(const struct graph *g, const struct part_options *o, const char *cache_dir,
                     const int32_t *owner);
/* The file path part_assign_cached() uses (for messages and tests). */
int part_cache_path(const struct graph *g, const struct part_options *o, const char *cache_dir,
                    char *path, size_t path_size);

/* ------------------------------------------------------------------------- */
/* Local graph and exchange plans of one rank                                */
/* ------------------------------------------------------------------------- */

/* What one rank trains on. Local ids: [0, n_inner) inner, [n_inner, n_inner + n_halo)
 * halo. Caller-owned; release with part_local_free(). */
struct part_local {
  int rank, nparts;
  int64_t n_global;      /* n of the global graph */
  int64_t n_inner, n_halo;
  int32_t *gid;          /* n_inner + n_halo global ids: inner in increasing gid, then halo
                            grouped by owner rank (ascending), increasing gid in a group */
  int npeers;            /* ranks this rank sends to or receives from, ascending, != rank */
  int32_t *peer;         /* npeers */
  int64_t *recv_offset;  /* npeers: peer i's halo rows are local ids            */
  int64_t *recv_count;   /*   [n_inner + recv_offset[i], + recv_count[i]) (0 if none);
                            blocks are contiguous in peer order and cover the halo */
  int64_t *send_offset;  /* npeers: send_idx[send_offset[i], + send_count[i]) are the */
  int64_t *send_count;   /*   local inner ids sent to peer i (contiguous in peer order) */
  int32_t *send_idx;     /* in the order the peer's halo block lists them (increasing gid) */
  enum graph_norm norm;  /* the normalisation agg was built with */
  int self_loops;
  /* n_inner x (n_inner + n_halo) aggregation operator, columns in local ids: row r holds
   * the entries of the global operator's row gid[r] (graph_aggr_build: weights
   * graph_norm_weight() of the GLOBAL degrees graph_norm_degree(), plus the self-loop
   * when norm == GRAPH_NORM_GCN && self_loops), mapped to local ids and sorted by
   * local column. Values are bit-identical to the global operator's. */
  struct cg_csr agg;
};

/* Build rank `rank`'s local graph from the global graph and the owner array
 * (owner[v] in [0, nparts); CG_ERR_ARG otherwise). Works for any owner array,
 * including ranks with no inner vertex. Cost O(n + m) time and O(n) scratch. */
int part_local_build(const struct graph *g, const int32_t *owner, int nparts, int rank,
                     enum graph_norm kind, int self_loops, struct part_local *out);
/* The same from this rank's rows alone (per-rank loading, runtime/dist.h): `rows` holds
 * the CSR rows of the vertices `owner` gives `rank`, in increasing global id
 * (graph_cgr_read_rows with GRAPH_ROWS_ADJ, or generated), rowptr the global row pointers
 * (n + 1: the global degrees). The graph must be symmetric (FORMAT.md; checked where the
 * structure is read whole): the send list to q is then the inner vertices with a
 * neighbour owned by q. The result equals part_local_build's on the whole graph, field
 * for field (tested by partition/tests/test_local_rows.c). */
int part_local_build_rows(int64_t n, const int64_t *rowptr, const struct graph_rows *rows,
                          const int32_t *owner, int nparts, int rank, enum graph_norm kind,
                          int self_loops, struct part_local *out);
void part_local_free(struct part_local *pl); /* accepts a zeroed struct; leaves it zeroed */

/* Invariant checker of one rank's local graph against the global graph. Checks:
 * every inner gid is owned by the rank, increasing, and all owned vertices are inner;
 * the halo is exactly the set of non-owned in-neighbours of inner vertices, grouped by
 * owner ascending and increasing within a group; peers ascending, distinct, != rank,
 * each with something to send or receive; receive blocks contiguous, covering the
 * halo, each holding only that peer's vertices; each send list is exactly the inner
 * vertices that are in-neighbours of the peer's inner vertices, in increasing gid;
 * agg's shape, sorted columns and every entry (column and value, exactly) against the
 * global operator's row. Returns CG_ERR_INTERNAL naming the violated invariant. */
int part_local_check(const struct graph *g, const int32_t *owner, const struct part_local *pl);

/* Cross-rank check of all P ranks' local graphs (pls[p] is rank p's, built by one
 * process or gathered): rank q's send list to p equals, gid by gid, p's receive block
 * from q; the peer relation is symmetric. Catches ranks built from different owner
 * arrays. CG_ERR_INTERNAL naming the first mismatch. */
int part_plans_check_global(const struct part_local *pls, int nparts);

/* ------------------------------------------------------------------------- */
/* Statistics                                                                */
/* ------------------------------------------------------------------------- */

/* Definitions (part p; halo with `hops`):
 *   inner[p]        vertices owned by p
 *   halo[p]         vertices not owned by p within `hops` (1 or 2) in-edge hops of an
 *                   inner vertex of p (hops = 1: exactly part_local's halo)
 *   edges[p]        CSR entries in the rows of p's inner vertices (directed, no self-loops)
 *   outer_edges[p]  those of edges[p] whose column is owned by another part
 *   halo_ratio[p]   halo[p] / inner[p] (0 when inner[p] == 0)
 * Totals:
 *   edge_cut        undirected edges whose endpoints are in different parts (CSR
 *                   entries (v, u) with u < v and owner[u] != owner[v]; with a
 *                   symmetric graph this is sum(outer_edges) / 2, METIS' objective)
 *   halo_total      sum of halo[p]
 *   replication     halo_total / n (halo rows per vertex; the replication factor, inner +
 *                   halo rows over n, is 1 + this: JSON totals.replication_factor)
 *   overlap_hist[k] number of vertices that are halo in exactly k parts, k = 0 .. nparts-1
 *                   (R(v) = number of parts in which v is a halo; v is never a halo of
 *                   its own part, so k < nparts). sum_k k * overlap_hist[k] = halo_total.
 *   inner_min/max, imbalance = inner_max / (n / nparts). */
struct part_stats {
  char graph[16];         /* graph name */
  uint32_t checksum;      /* graph checksum */
  char method[16];        /* free-form label set by the caller (e.g. "metis"); "" = none */
  int nparts, hops;
  int64_t n, m;           /* vertices, directed CSR entries */
  int64_t *inner, *halo, *edges, *outer_edges; /* nparts each */
  double *halo_ratio;     /* nparts */
  int64_t edge_cut, halo_total;
  double replication;
  int64_t *overlap_hist;  /* nparts buckets */
  int64_t inner_min, inner_max;
  double imbalance;
};

int part_stats_compute(const struct graph *g, const int32_t *owner, int nparts, int hops,
                       struct part_stats *s);
void part_stats_free(struct part_stats *s); /* accepts a zeroed struct; leaves it zeroed */
/* Human table: one line per part, then the totals and the overlap histogram. */
void part_stats_print(FILE *f, const struct part_stats *s);
/* JSON object {graph, checksum, method, n, m, nparts, hops, partitions: [{part, inner,
 * halo, edges, outer_edges, halo_ratio}], totals: {edge_cut, halo_total, replication,
 * replication_factor, inner_min, inner_max, imbalance, overlap_hist: [...]}}. Written to a temp file, then
 * renamed. CG_ERR_IO naming the path on failure. */
int part_stats_write_json(const struct part_stats *s, const char *path);
/* The output kind of that file (core/outfile.h): an earlier statistics file (it starts
 * with the "graph" key, as part_stats_write_json writes it) is replaced. */
struct cg_outfile_kind;
const struct cg_outfile_kind *part_stats_outfile_kind(void);
/* The same JSON as a malloc'ed string (free with free()); NULL on allocation failure. */
char *part_stats_to_json(const struct part_stats *s);

#ifdef __cplusplus
}
#endif
#endif
