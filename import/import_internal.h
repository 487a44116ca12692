/* import/import_internal.h — pieces shared by the importers (private to import/):
 * an edge accumulator and the CSR builder, a buffered (gzip) text reader with fast
 * number parsers, and the finishing steps (feature storage, labels, split). */
#ifndef CAPGNN_IMPORT_INTERNAL_H
#define CAPGNN_IMPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "graph/graph.h"
#include "import/import.h"

/* ---- edges ----------------------------------------------------------------------
 * Edges arrive as (u, v) pairs in fixed-size blocks (no realloc copies of a
 * half-gigabyte array, little slack). The CSR builder consumes and frees them. */
#define GRAPH_EDGE_BLOCK_SHIFT 22
#define GRAPH_EDGE_BLOCK ((int64_t)1 << GRAPH_EDGE_BLOCK_SHIFT)

struct graph_edges {
  int64_t count;   /* edges stored */
  int64_t nblocks; /* blocks allocated (u[b] and v[b] each GRAPH_EDGE_BLOCK entries, or exact) */
  int64_t cap;     /* length of the u/v block tables */
  int32_t **u, **v;
};

int graph_edges_grow(struct graph_edges *e); /* one more block */
/* Allocate exactly `count` edges (for readers that fill whole arrays, e.g. npz). */
int graph_edges_alloc(struct graph_edges *e, int64_t count);
static inline int64_t graph_edges_block_len(const struct graph_edges *e, int64_t b) {
  int64_t left = e->count - b * GRAPH_EDGE_BLOCK;
  return left < GRAPH_EDGE_BLOCK ? left : GRAPH_EDGE_BLOCK;
}
static inline int graph_edges_push(struct graph_edges *e, int32_t u, int32_t v) {
  int64_t b = e->count >> GRAPH_EDGE_BLOCK_SHIFT;
  if (b >= e->nblocks && graph_edges_grow(e) != CG_OK) return CG_ERR_NOMEM;
  int64_t i = e->count & (GRAPH_EDGE_BLOCK - 1);
  e->u[b][i] = u;
  e->v[b][i] = v;
  e->count++;
  return CG_OK;
}
void graph_edges_free(struct graph_edges *e);

/* Symmetric CSR without self-loops or duplicates from the edges, in O(n + m) with
 * counting passes; sets g->n, g->m, g->rowptr, g->colidx and the edge counters of
 * *st. The edges are freed (block by block, to keep the peak low) whether or not it
 * succeeds. A vertex id outside [0, n) is an error naming `source` and the entry. */
int graph_edges_to_csr(struct graph_edges *e, int64_t n, const char *source, struct graph *g,
                       struct graph_import_stats *st);

/* ---- text ------------------------------------------------------------------------ */

struct graph_text {
  char name[1024];
  void *gz;          /* gzFile: reads gzip and plain files alike */
  char *buf;
  size_t cap, len, pos; /* unread data is buf[pos, len); buf[len] == '\0' */
  int64_t line;      /* 1-based number of the last line returned */
  int eof;
  int64_t file_bytes;
};

int graph_text_open(struct graph_text *t, const char *path);
/* The next line, NUL-terminated in place, without "\n" or "\r\n": returns 1, or 0 at
 * the end of the file, or an error (truncated or corrupt gzip stream). */
int graph_text_next(struct graph_text *t, char **line);
int64_t graph_text_offset(struct graph_text *t); /* bytes of the file consumed (progress) */
void graph_text_close(struct graph_text *t);

/* Number parsers: parse at *p, advance *p past the number; 0 on success, -1 when
 * there is no number there. Integers: optional sign and digits (overflow is -1).
 * Floats: correctly rounded to float32 (exact fast path for short decimals,
 * strtof otherwise), so the CSV text of a float32 gives back the same bits. */
int graph_parse_i64(const char **p, int64_t *out);
int graph_parse_f32(const char **p, float *out);
/* Skip spaces and tabs. */
static inline const char *graph_skip_blank(const char *s) {
  while (*s == ' ' || *s == '\t') s++;
  return s;
}

/* ---- finishing ------------------------------------------------------------------- */

/* g->feat_values holds the dense n x f matrix: count the nonzeros and, per `mode`
 * (auto: sparse when that at least halves the bytes), convert it to CSR in place. */
int graph_import_feat_store(struct graph *g, enum graph_feat_storage mode, struct graph_import_stats *st);
/* A seeded 60/20/20 split of the labelled vertices (Fisher-Yates with Philox):
 * exactly floor(0.6 L) train, floor(0.2 L) val, the rest test; unlabelled -> 0. */
int graph_import_random_split(struct graph *g, uint64_t seed);
/* Single-label: num_classes from the labels (max + 1) when opts gives 0, else checks
 * every label lies in [-1, c); `source` names the file in the message. */
int graph_import_label_classes(struct graph *g, int64_t want_classes, const char *source);
/* No unlabelled vertex in a split (FORMAT.md); names both files. */
int graph_import_check_split(const struct graph *g, const char *split_source, const char *label_source);

void graph_import_note(struct graph_import_stats *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "dir/name" into buf (error if it does not fit). */
int graph_path_join(char *buf, size_t len, const char *dir, const char *name);
int graph_path_is_file(const char *p);
int graph_path_is_dir(const char *p);

/* The importers (import_*.c); each fills g except the name and checksum. */
int graph_import_dgl_reddit(const struct graph_import_opts *o, struct graph *g, struct graph_import_stats *st);
int graph_import_ogb(const struct graph_import_opts *o, struct graph *g, struct graph_import_stats *st);
int graph_import_saint(const struct graph_import_opts *o, struct graph *g, struct graph_import_stats *st);
int graph_import_edgelist(const struct graph_import_opts *o, struct graph *g, struct graph_import_stats *st);

/* Reads a SciPy sparse matrix saved by scipy.sparse.save_npz (csr, csc or coo) as an
 * edge list; *n_out = its (square) shape. Shared by dgl-reddit and saint. */
int graph_import_scipy_npz(const char *path, int64_t *n_out, struct graph_edges *e);
struct graph_npy;
/* Reads the opened (n, f) array `a` into g->feat_values (float32, dense, n x f) and
 * sets feat_dim; the row count must equal g->n. Notes the source dtype in *st. */
int graph_import_npy_features(struct graph_npy *a, struct graph *g, struct graph_import_stats *st);
/* Labels from the opened array `a`: (n,) integer class ids (-1 = none; classes per
 * graph_import_label_classes) or (n, c) of 0/1 (multi-label). */
int graph_import_npy_labels(struct graph_npy *a, struct graph *g, int64_t want_classes);
/* Split from the opened (n,) integer array `a`: 0 none, 1 train, 2 val, 3 test. */
int graph_import_npy_split(struct graph_npy *a, struct graph *g);

#endif
