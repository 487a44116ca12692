/* import/import.h — the import module (library capgnn_import): datasets in the
 * formats users already have -> struct graph (import_graph) and -> .cgr
 * (import_convert), with a report of everything the import changed
 * (import_stats_print). This is the module's only public header; the CSR builder,
 * the text reader and the .npy/.npz reader are private to import/ (*_internal.h).
 * Used by `capgnn convert`; nothing else links it. Depends on core and graph (the
 * result is a struct graph, checked by graph_check and written by graph_save_cgr);
 * the datasets capgnn knows by name (graph_dataset_hint) belong to graph/graph.h.
 * Ownership: the caller owns the struct graph it passes (graph_free) and the
 * options' strings; nothing here keeps a pointer after returning. No global state
 * apart from the error message of core/status.h and progress lines (core/progress.h).
 *
 * Sources (`from`):
 *   "dgl-reddit"  input = folder with DGL's RedditDataset files reddit_data.npz
 *                 (arrays feature (n, f), label (n,), node_types (n,) with 1/2/3 =
 *                 train/val/test, 0 = none) and reddit_graph.npz (a SciPy sparse
 *                 matrix from scipy.sparse.save_npz: format csr/csc/coo, shape,
 *                 indices+indptr or row+col; data is ignored).
 *   "ogb"         input = an OGB node-property-prediction folder as downloaded
 *                 (e.g. ogbn-arxiv/): raw/edge.csv.gz, raw/node-feat.csv.gz,
 *                 raw/node-label.csv.gz (one column: class, -1/NaN = none; several
 *                 columns: multi-label 0/1), raw/num-node-list.csv.gz (optional),
 *                 split/<name>/{train,valid,test}.csv.gz. Uncompressed .csv are
 *                 accepted too.
 *   "saint"       input = a GraphSAINT data folder: adj_full.npz, feats.npy,
 *                 class_map.json (node -> class, or node -> 0/1 list = multi-label),
 *                 role.json ({"tr": [...], "va": [...], "te": [...]}).
 *   "edgelist"    input = a text file (optionally gzip-compressed) with one edge
 *                 "u v" per line (blank lines and lines starting with # or % are
 *                 skipped, further columns such as weights are ignored), plus
 *                 opts.features (.npy, (n, f)), opts.labels (.npy, (n,) class ids
 *                 with -1 = none, or (n, c) of 0/1 = multi-label) and optionally
 *                 opts.split (.npy, (n,) of 0/1/2/3); without it a seeded random
 *                 60/20/20 split of the labelled vertices is drawn.
 *
 * Every source is made to satisfy ../shared/datasets/FORMAT.md: edges symmetrised,
 * duplicates merged, self-loops removed (counted in struct import_stats);
 * features stored as in the source (float64 rounded to float32), dense or sparse
 * (auto: sparse when that at least halves their size); node order is the
 * source's. Errors name the file and the problem (CG_ERR_FORMAT for bad content,
 * CG_ERR_NOT_FOUND for a missing file, CG_ERR_ARG for bad options).
 *
 * Memory: the edge list is kept once as int32 pairs and the CSR is built with
 * counting passes (O(n + m), no sort), so the peak is about 16 bytes per input edge
 * or the final graph plus its features, whichever is larger (ogbn-products: ~2 GB).
 * Long steps report progress through core/progress.h. */
#ifndef CAPGNN_IMPORT_H
#define CAPGNN_IMPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "graph/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

enum import_feat_storage { IMPORT_FEAT_AUTO = 0, IMPORT_FEAT_DENSE, IMPORT_FEAT_SPARSE };

struct import_opts {
  const char *input;     /* folder (dgl-reddit, ogb, saint) or edge file (edgelist) */
  const char *features;  /* edgelist: features .npy */
  const char *labels;    /* edgelist: labels .npy */
  const char *split;     /* edgelist: split .npy (optional) */
  const char *ogb_split; /* ogb: the folder under split/ (NULL: the only one there) */
  const char *name;      /* dataset name stored in the file (<= 15 chars); NULL: from `output`
                            in import_convert, else from the input */
  int64_t num_classes;   /* single-label: 0 = max label + 1; else labels must lie in [-1, c) */
  uint64_t seed;         /* the random split of "edgelist" without opts.split */
  enum import_feat_storage feat_storage;
  unsigned cgr_version;  /* import_convert's layout: 0 or 1 = version 1 (FORMAT.md), 2 =
                            version 2 with per-block CRCs (docs/cgr-v2.md) */
  unsigned block_shift;  /* version 2: blocks of 2^block_shift bytes (0: 64 KiB) */
  const char *write_note;/* import_convert: a warning logged once the import has read its
                            inputs, just before it writes `output` (capgnn convert --force:
                            the file the write replaces); NULL: none */
};

#define IMPORT_MAX_NOTES 8

/* What the import changed and found; every count is printed by import_stats_print. */
struct import_stats {
  int64_t edges_read;    /* directed entries in the source (an undirected list counts each once) */
  int64_t self_loops;    /* entries (u, u) removed */
  int64_t duplicates;    /* repeated entries (u, v) merged */
  int64_t reverse_added; /* entries (v, u) added because only (u, v) was in the source */
  int64_t isolated;      /* vertices without a neighbour after cleaning */
  int64_t unlabelled;    /* label -1 (single-label) or no class (multi-label) */
  int64_t split_count[4];/* none, train, val, test */
  int random_split;      /* 1: the split was drawn (60/20/20, seed) */
  uint64_t seed;
  int feat_converted;    /* 1: the source features were not float32 (converted) */
  char feat_dtype[16];   /* source feature dtype, e.g. "<f8" or "csv text" */
  int64_t nonzero_feats; /* nonzero feature values (bitwise: -0.0 counts as nonzero) */
  double seconds;
  /* The result, as written (so that a report needs no second copy of the graph). */
  char name[16];
  int64_t n, m, feat_dim, feat_nnz, num_classes;
  int sparse_feat, multilabel;
  uint32_t checksum;
  int nnotes;
  char notes[IMPORT_MAX_NOTES][256]; /* other changes, e.g. "ignored the 3rd column..." */
};

/* Import `from` (see above) into *out (caller-owned, graph_free). On failure *out is
 * zeroed and nothing is written anywhere. `stats` may be NULL. */
int import_graph(const char *from, const struct import_opts *o, struct graph *out,
                 struct import_stats *stats);
/* import_graph + graph_save_cgr(output) (temporary name, then rename: a failure
 * never leaves a partial `output`). The name defaults to the output's file name
 * without ".cgr". */
int import_convert(const char *from, const struct import_opts *o, const char *output,
                   struct import_stats *stats);
/* Human-readable summary of the changes, one item per line, each prefixed by `indent`. */
void import_stats_print(FILE *out, const struct import_stats *s, const char *indent);

/* The source names ("dgl-reddit", "ogb", "saint", "edgelist"), NULL-terminated. */
extern const char *const import_sources[];

#ifdef __cplusplus
}
#endif
#endif
