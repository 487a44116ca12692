/* graph/graph.h — the in-memory graph dataset, the .cgr reader/writer,
 * synthetic generators, feature and adjacency normalisation, and graph_open with
 * the datasets known by name. (Importers of other formats: import/import.h.)
 *
 * A `struct graph` is caller-owned (graph_free releases its arrays). The graph is
 * undirected, stored as a symmetric CSR with sorted rows and no self-loops,
 * exactly as ../shared/datasets/FORMAT.md defines; node ids are global ids. */
#ifndef CAPGNN_GRAPH_H
#define CAPGNN_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/csr.h"

#ifdef __cplusplus
extern "C" {
#endif

enum graph_split { GRAPH_SPLIT_NONE = 0, GRAPH_SPLIT_TRAIN = 1, GRAPH_SPLIT_VAL = 2, GRAPH_SPLIT_TEST = 3 };

struct graph {
  char name[16];
  int64_t n, m;              /* nodes, directed CSR entries (2 x undirected edges) */
  int64_t *rowptr;           /* n + 1 */
  int32_t *colidx;           /* m */
  int64_t feat_dim;
  int sparse_feat;           /* 1: features in CSR (feat_rowptr/feat_colidx/feat_values) */
  int64_t feat_nnz;          /* n*feat_dim when dense */
  int64_t *feat_rowptr;      /* n + 1, sparse only */
  int32_t *feat_colidx;      /* feat_nnz, sparse only */
  float *feat_values;        /* dense n x feat_dim row-major, or the CSR values */
  int64_t num_classes;
  int multilabel;
  int32_t *labels;           /* single-label: n entries, -1 = unlabelled */
  uint8_t *mlabels;          /* multi-label: n x num_classes, 0/1 */
  uint8_t *split;            /* n entries, enum graph_split */
  uint32_t checksum;         /* CRC-32 over the seven section CRCs and n, m, f, c (identifies the graph) */
  int32_t *norm_deg;         /* optional, n: the degrees the normalisation counts instead of the
                                structure's own (a subgraph normalised as its supergraph:
                                graph_set_norm_degrees); not part of the file or the checksum */
};

/* Read and fully check a .cgr file: every check of FORMAT.md ("What a reader must
 * check" 1-6) plus sorted rows, symmetry, no self-loops, label and split ranges,
 * no unlabelled vertex in a split. On failure returns CG_ERR_IO/CG_ERR_FORMAT and a
 * message naming the file, the failed check and the expected value. */
int graph_load_cgr(const char *path, struct graph *g);
/* Write a .cgr file (64-byte aligned sections, CRCs). Writes to "<path>.tmp" and
 * renames, so a failure never leaves a half-written file at `path`. */
int graph_save_cgr(const char *path, const struct graph *g);
/* The same in a chosen layout: version 1 (FORMAT.md; block_shift ignored) or version 2
 * (docs/cgr-v2.md: the same sections plus a CRC-32 per block of 2^block_shift bytes,
 * 6 <= block_shift <= 30, 0 = 16, i.e. 64 KiB), which graph_cgr_read_rows verifies
 * block by block. graph_load_cgr reads both. */
int graph_save_cgr_version(const char *path, const struct graph *g, unsigned version,
                           unsigned block_shift);
/* The strong checks on an in-memory graph (same messages as the reader, `what` names it). */
int graph_check(const struct graph *g, const char *what);
void graph_free(struct graph *g); /* accepts a zeroed struct; leaves it zeroed */
/* Sets g->checksum from the arrays (the value graph_load_cgr reports for the saved
 * file); for code that builds a graph in memory, e.g. the importers. */
void graph_checksum_update(struct graph *g);
/* The bytes graph_save_cgr writes for g apart from the alignment padding: the
 * header plus the seven sections (a progress total known before writing). */
uint64_t graph_cgr_data_bytes(const struct graph *g);

/* ---- ranged reading of a .cgr file (graph/cgr_range.c) --------------------------------
 * For ranks that each need only their own rows: open reads the header (and, version 2,
 * the block CRC table); the reads below fetch byte ranges with pread and verify every
 * byte they use. Version 2 verifies each block it reads (only the blocks that hold a
 * wanted byte are read); version 1 has only whole-section CRCs, so a ranged read of a
 * v1 section streams the whole section through a bounded buffer (memory stays small,
 * bytes read do not) and fails if the section's CRC does not match.
 * The checks a subset of rows allows are made (FORMAT.md check 6 and the strong checks
 * per row); the symmetry of the graph needs every row (graph_cgr_read_structure). */
struct graph_cgr; /* opaque: an open file, its header and byte counter */
int graph_cgr_open(const char *path, struct graph_cgr **out);
void graph_cgr_close(struct graph_cgr **f); /* accepts NULL / *f NULL */
/* The header's values in `hdr` (name, n, m, feat_dim, feat_nnz, sparse_feat, num_classes,
 * multilabel, checksum: graph_load_cgr's value, from the stored section CRCs); every
 * array pointer NULL. */
void graph_cgr_info(const struct graph_cgr *f, struct graph *hdr);
unsigned graph_cgr_version(const struct graph_cgr *f);
/* Version 2's block size as a power of two (0 for version 1). */
unsigned graph_cgr_block_shift(const struct graph_cgr *f);
/* Bytes read from the file so far (header and block table included). */
uint64_t graph_cgr_bytes_read(const struct graph_cgr *f);
/* The row pointers (n + 1 values, caller-allocated), verified and checked (rowptr[0] = 0,
 * rowptr[n] = m, never decreasing): every rank's global degrees. */
int graph_cgr_read_rowptr(struct graph_cgr *f, int64_t *rowptr);
/* The structure alone (what a partitioner needs): the info plus rowptr and colidx, checked
 * like graph_load_cgr checks them (ranges, sorted, no self-loops, symmetric); features,
 * labels and split NULL. Free with graph_free. */
int graph_cgr_read_structure(struct graph_cgr *f, struct graph *g);

/* Rows of a graph read by graph_cgr_read_rows: row i is global vertex rows[i]. */
struct graph_rows {
  int64_t nrows, feat_dim, num_classes;
  int multilabel;
  int64_t *rowptr;   /* nrows + 1, from 0: row i's neighbours are colidx[rowptr[i] .. rowptr[i+1]) */
  int32_t *colidx;   /* global ids */
  float *feat;       /* nrows x feat_dim, dense (sparse rows expanded); NULL with
                        GRAPH_ROWS_FEAT_SPARSE */
  struct cg_csr feat_csr; /* with GRAPH_ROWS_FEAT_SPARSE: nrows x feat_dim with values
                             (a dense file's zeros left out); else zeroed */
  int32_t *labels;   /* nrows (single-label) */
  uint8_t *mlabels;  /* nrows x num_classes (multilabel) */
  uint8_t *split;    /* nrows */
};
/* Rows `rows` (nrows strictly increasing global ids; nrows may be 0) given the file's
 * row pointers (graph_cgr_read_rowptr): features (dense), labels, split, and with
 * GRAPH_ROWS_ADJ the CSR rows (else rowptr and colidx NULL); GRAPH_ROWS_FEAT_SPARSE the
 * features in feat_csr instead of feat; GRAPH_ROWS_FEAT_ROWNORM
 * normalises each row as graph_feat_rownorm would the whole graph (the same bits).
 * CG_ERR_FORMAT on a corrupt block (naming the section and block) or a row that fails
 * a check. */
#define GRAPH_ROWS_ADJ 1u
#define GRAPH_ROWS_FEAT_ROWNORM 2u
/* Features as CSR in feat_csr, never dense (sparse input features, issue #14). */
#define GRAPH_ROWS_FEAT_SPARSE 4u
/* No features (feat NULL, feat_csr zeroed): graph_cgr_read_rows_feat reads them later,
 * so that a rank's adjacency rows can be freed before its features are held. */
#define GRAPH_ROWS_NO_FEAT 8u
int graph_cgr_read_rows(struct graph_cgr *f, const int64_t *rowptr, const int32_t *rows, int64_t nrows,
                        unsigned what, struct graph_rows *out);
/* The features of the same rows into `out`, read with GRAPH_ROWS_NO_FEAT (what: its
 * GRAPH_ROWS_FEAT_* flags), checked finite as graph_cgr_read_rows checks them. */
int graph_cgr_read_rows_feat(struct graph_cgr *f, const int32_t *rows, int64_t nrows, unsigned what,
                             struct graph_rows *out);
void graph_rows_free(struct graph_rows *r); /* accepts a zeroed struct; leaves it zeroed */
/* Whether `rows` dense feature rows of feat_dim float32 values fit the host's available
 * memory (MemAvailable in /proc/meminfo), asked before they are allocated: a sparse
 * file's feat_dim (< 2^31, FORMAT.md) is not bounded by its size, and an allocation past
 * what the host has may succeed and then be killed as it is filled. CG_OK (also when the
 * memory cannot be read), else CG_ERR_NOMEM naming `what` (the file), the bytes and the
 * memory, and for features stored sparse (`stored_sparse`) how to keep them sparse. */
int graph_dense_feat_check(const char *what, int64_t rows, int64_t feat_dim, int stored_sparse);

/* Synthetic graph from a spec "synth:PRESET[:key=value[,key=value...]]".
 * Presets: reddit (232,965 nodes, ~114.6M directed edges, 602 features, 41 classes),
 * products (2,449,029 / ~123.7M / 100 / 47), small (a few thousand nodes, for tests),
 * tiny (hundreds of nodes, for unit tests). Keys: scale=F (multiplies nodes and edges,
 * average degree kept, capped by n-1), seed=N, and overrides nodes=, degree=, feats=,
 * classes=, communities=, multilabel=0|1, identity=0|1 (features = the n x n identity
 * matrix, stored sparse: feat_dim = n, one value per row; feats= is then ignored),
 * shuffle=0|1 (1: the same graph with its vertices in a seeded random order,
 * graph_permute: a "publisher order" graph with no locality in its ids; communities
 * are then no longer contiguous).
 * The graph has communities (contiguous id ranges), power-law degrees,
 * labels tied to communities and features = class centroid + noise, a 60/20/20 split
 * (train/val/test), and passes graph_check. Same spec -> identical graph. */
int graph_synth(const char *spec, struct graph *g);
/* graph_synth, also giving the draw-budget factor its edge sample was drawn with (the
 * generator re-draws until m is near its target: the factor depends on the whole graph),
 * which graph_synth_rows needs to give rows of the same graph. */
int graph_synth_ex(const char *spec, struct graph *g, double *factor);
/* Rows `rows` (strictly increasing ids; nrows may be 0) of graph_synth(spec)'s graph,
 * generated without the rest of it, as graph_cgr_read_rows reads rows of a file (same
 * `what` flags and struct): bit for bit the rows of the whole graph when `factor` is
 * the one graph_synth_ex reported for the spec. Labels, features and split are
 * functions of the vertex; a row's neighbours are its own draws and the vertices that
 * drew it, so every vertex's draws are made (the whole generation's drawing time) but
 * only those hitting a row are kept: memory is the generator's per-vertex tables
 * (~50 bytes per vertex) plus the rows. Specs with identity=1 or shuffle=1 are refused
 * (CG_ERR_ARG): their features and vertex order are not functions of one vertex yet. */
int graph_synth_rows(const char *spec, double factor, const int32_t *rows, int64_t nrows, unsigned what,
                     struct graph_rows *out);

/* Open a graph by name: "synth:..." generates; a path that exists (or ends in .cgr)
 * is read; otherwise NAME resolves to $CAPGNN_DATA/NAME.cgr. */
int graph_open(const char *name, struct graph *g);
/* The file graph_open(name) would read, in buf (without reading it); NULL for a
 * synthetic spec or when no such file exists. For an output's "is it an input" check
 * (core/outfile.h) before the graph is loaded. */
const char *graph_path(const char *name, char *buf, size_t len);
/* The output kind of a .cgr file (core/outfile.h): a graph, recognised by its magic; an
 * existing one is a dataset, replaced only with --force. */
struct cg_outfile_kind;
const struct cg_outfile_kind *graph_outfile_kind(void);

/* ---- datasets by name (graph/datasets.c) ----------------------------------------------
 * graph_open("NAME") reads $CAPGNN_DATA/NAME.cgr, or GRAPH_DEFAULT_DATA_DIR/NAME.cgr
 * when CAPGNN_DATA is unset. Known names: reddit, ogbn-arxiv, ogbn-products, flickr,
 * yelp, amazon-products (converted from their public downloads), cora, citeseer
 * (shipped as .cgr). */
#define GRAPH_DEFAULT_DATA_DIR "./data"
const char *graph_data_dir(void); /* $CAPGNN_DATA, else GRAPH_DEFAULT_DATA_DIR */
/* How to obtain NAME as `dir`/NAME.cgr (dir NULL: graph_data_dir()): which files to
 * download and the exact `capgnn convert` command. Returns 1 for a known name, 0
 * otherwise (then buf holds the generic instructions). */
int graph_dataset_hint(const char *name, const char *dir, char *buf, size_t len);
/* One line per known dataset: name, source format, what to download. */
void graph_dataset_list(FILE *out);

/* Feature normalisation in place: each row divided by its sum (rows summing to 0
 * are left as they are). Works on dense and sparse features. */
void graph_feat_rownorm(struct graph *g);
/* Dense features of the listed rows (rows == NULL: all n rows in order) into
 * out[nrows x feat_dim] (caller-allocated). */
void graph_feat_dense(const struct graph *g, const int64_t *rows, int64_t nrows, float *out);

/* Features of the listed rows (rows == NULL: all n rows in order; else nrows global ids)
 * as a CSR matrix out [nrows x feat_dim] with values (cg_csr_alloc'ed, columns increasing
 * in a row): the stored entries of sparse features, the nonzeros of dense ones (a zero
 * left out is the same matrix). Caller-owned: cg_csr_free. */
int graph_feat_csr(const struct graph *g, const int32_t *rows, int64_t nrows, struct cg_csr *out);

enum graph_norm {
  GRAPH_NORM_GCN,  /* D^-1/2 (A + I) D^-1/2, degrees counted with the self-loop */
  GRAPH_NORM_MEAN, /* row u: 1/deg(u) on each neighbour (GraphSAGE mean), no self-loop */
};
/* Degree used by the normalisation of vertex u (global): deg(u) + (kind == GCN && self_loops),
 * deg(u) being g->norm_deg[u] when set, else u's entries in the structure. */
static inline int64_t graph_norm_degree(const struct graph *g, enum graph_norm kind, int self_loops,
                                        int64_t u) {
  const int64_t d = g->norm_deg ? (int64_t)g->norm_deg[u] : g->rowptr[u + 1] - g->rowptr[u];
  return d + (kind == GRAPH_NORM_GCN && self_loops ? 1 : 0);
}
/* Normalise g as `super`, a graph on the same vertices whose every vertex has at least
 * g's degree (the graph g was cut from: halo pruning keeps the original graph's degrees
 * this way): g->norm_deg = super's degrees. A missing row mass is then left out, not
 * redistributed. CG_ERR_ARG naming `what` when the vertex counts differ or a degree of g
 * exceeds super's; CG_ERR_NOMEM. `super` may be g itself (its current degrees kept).
 * graph_free frees the degrees. */
int graph_set_norm_degrees(struct graph *g, const struct graph *super, const char *what);
/* Weight of the entry (row u <- column v) given the normalisation degrees of u and v.
 * The one formula every partition and backend uses, so P ranks equal 1 rank. */
float graph_norm_weight(enum graph_norm kind, int64_t deg_u, int64_t deg_v);
/* The same weight as a product of a row factor (of u) and a column factor (of v):
 * graph_norm_weight(kind, du, dv) == row(du) * col(dv) up to rounding. They fill the
 * optional row_scale / col_scale of the operator (core/csr.h). */
float graph_norm_row_scale(enum graph_norm kind, int64_t deg);
float graph_norm_col_scale(enum graph_norm kind, int64_t deg);
/* The aggregation operator of the whole graph (n x n, sorted columns; the self-loop
 * entry is inserted in column order when kind == GCN and self_loops). */
int graph_aggr_build(const struct graph *g, enum graph_norm kind, int self_loops, struct cg_csr *out);

/* Number of vertices in a split. */
int64_t graph_split_count(const struct graph *g, enum graph_split s);

/* ---- locality reordering (graph/reorder.c) ----------------------------------------------
 * A vertex order is an array `order` of n ids: position i holds old vertex order[i] (the
 * permutation's inverse, pos[order[i]] = i, maps old ids to new). The functions below
 * take a structure as CSR rows (rowptr n + 1, colidx): columns outside [0, n) and the
 * diagonal are ignored, so an aggregation operator with self-loops and halo columns can
 * be passed as it is (its first n columns are the rows' own vertices). Deterministic:
 * the same structure gives the same order on any thread count.
 *   rcm      reverse Cuthill-McKee from a pseudo-peripheral vertex of each component,
 *            neighbours by increasing degree (bandwidth; meshes, road-like graphs)
 *   cluster  label propagation from seeds (a vertex and its neighbours), each move
 *            Louvain's (most neighbours less the modularity's expectation), at most 12
 *            in-place sweeps; each cluster contiguous, in the order of its first vertex,
 *            its vertices in their input order (communities: what the tiled SpMMs use)
 *   metis    METIS k-way into blocks of about GRAPH_LOCALITY_TILE vertices, the blocks
 *            chained along their heaviest links: partition/ computes it (runtime/'s
 *            rt_reorder_order), not graph/
 *   auto     measure the input order (graph_locality_measure); when its concentration is
 *            below GRAPH_REORDER_AUTO_BELOW, compute the cluster order and keep it if its
 *            tile reuse is at least GRAPH_REORDER_AUTO_GAIN times the input's (runtime/'s
 *            rt_reorder_order) */
enum graph_reorder {
  GRAPH_REORDER_NONE = 0,
  GRAPH_REORDER_RCM = 1,
  GRAPH_REORDER_CLUSTER = 2,
  GRAPH_REORDER_METIS = 3,
  GRAPH_REORDER_AUTO = 4
};
#define GRAPH_REORDER_AUTO_BELOW 2.0
#define GRAPH_REORDER_AUTO_GAIN 1.5
const char *graph_reorder_name(enum graph_reorder r); /* "none", "rcm", "cluster", "metis", "auto" */
int graph_reorder_parse(const char *s, enum graph_reorder *out); /* CG_ERR_ARG naming --reorder */
/* CG_OK when order[0..n) is a permutation of 0..n-1; CG_ERR_INTERNAL naming `what` else. */
int graph_order_check(const int32_t *order, int64_t n, const char *what);
int graph_order_rcm(int64_t n, const int64_t *rowptr, const int32_t *colidx, int32_t *order);
int graph_order_cluster(int64_t n, const int64_t *rowptr, const int32_t *colidx, int32_t *order);

/* How local an order is, for the SpMMs, over tiles of GRAPH_LOCALITY_TILE rows x columns
 * (the CPU SpMM's tile, core/cpu_spmm.c): the tiles' reuse (each nonzero weighs the
 * nonzeros per tile row of its tile: sum over tiles of nnz_t^2 / (nnz x tile); a tiled
 * SpMM reads a tile's source rows once for that many uses), its concentration (the reuse
 * over its value for nonzeros spread evenly over the tiles, as a random order spreads
 * them: >= 1, 1 = no locality), the share of nonzeros in tiles over the CPU SpMM's
 * density threshold (GRAPH_LOCALITY_REUSE x tile nonzeros; on a dense graph a random
 * order passes it too) and the mean |i - j| / n (about 1/3 for a random order). O(n + m). */
#define GRAPH_LOCALITY_TILE 1024
#define GRAPH_LOCALITY_REUSE 8
struct graph_locality {
  int64_t nnz;          /* nonzeros counted (diagonal and columns >= n left out); -1: no memory */
  int64_t tile;         /* GRAPH_LOCALITY_TILE */
  double reuse;         /* >= 0 */
  double concentration; /* >= 1 (1 with no nonzero) */
  int64_t dense_tiles;
  double dense_frac;    /* in [0, 1] */
  double mean_dist;     /* in [0, 1) */
};
/* The locality of the structure laid out in `order` (NULL: the input order). */
void graph_locality_measure(int64_t n, const int64_t *rowptr, const int32_t *colidx, const int32_t *order,
                            struct graph_locality *out);
/* out = g with its vertices in `order` (vertex i of out is vertex order[i] of g): rows
 * and columns renumbered (rows sorted again), features, labels and split moved with
 * their vertices, checksum recomputed. The same graph up to the vertex names; `capgnn
 * convert --reorder` and the generator's shuffle=1 write it. */
int graph_permute(const struct graph *g, const int32_t *order, struct graph *out);

#ifdef __cplusplus
}
#endif
#endif
