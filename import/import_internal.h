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
#define IMPORT_EDGE_BLOCK_SHIFT 22
#define IMPORT_EDGE_BLOCK ((int64_t)1 << IMPORT_EDGE_BLOCK_SHIFT)

struct import_edges {
  int64_t count;   /* edges stored */
  int64_t nblocks; /* blocks allocated (u[b] and v[b] each IMPORT_EDGE_BLOCK entries, or exact) */
  int64_t cap;     /* length of the u/v block tables */
  int32_t **u, **v;
};

int import_edges_grow(struct import_edges *e); /* one more block */
/* Allocate exactly `count` edges (for readers that fill whole arrays, e.g. npz). */
int import_edges_alloc(struct import_edges *e, int64_t count);
static inline int64_t import_edges_block_len(const struct import_edges *e, int64_t b) {
  int64_t left = e->count - b * IMPORT_EDGE_BLOCK;
  return left < IMPORT_EDGE_BLOCK ? left : IMPORT_EDGE_BLOCK;
}
static inline int import_edges_push(struct import_edges *e, int32_t u, int32_t v) {
  int64_t b = e->count >> IMPORT_EDGE_BLOCK_SHIFT;
  if (b >= e->nblocks && import_edges_grow(e) != CG_OK) return CG_ERR_NOMEM;
  int64_t i = e->count & (IMPORT_EDGE_BLOCK - 1);
  e->u[b][i] = u;
  e->v[b][i] = v;
  e->count++;
  return CG_OK;
}
void import_edges_free(struct import_edges *e);

/* Symmetric CSR without self-loops or duplicates from the edges, in O(n + m) with
 * counting passes; sets g->n, g->m, g->rowptr, g->colidx and the edge counters of
 * *st. The edges are freed (block by block, to keep the peak low) whether or not it
 * succeeds. A vertex id outside [0, n) is an error naming `source` and the entry. */
int import_edges_to_csr(struct import_edges *e, int64_t n, const char *source, struct graph *g,
                        struct import_stats *st);

/* ---- text ------------------------------------------------------------------------ */

struct import_text {
  char name[1024];
  void *gz;          /* gzFile: reads gzip and plain files alike */
  char *buf;
  size_t cap, len, pos; /* unread data is buf[pos, len); buf[len] == '\0' */
  int64_t line;      /* 1-based number of the last line returned */
  int eof;
  int64_t file_bytes;
};

int import_text_open(struct import_text *t, const char *path);
/* The next line, NUL-terminated in place, without "\n" or "\r\n": returns 1, or 0 at
 * the end of the file, or an error (truncated or corrupt gzip stream). */
int import_text_next(struct import_text *t, char **line);
int64_t import_text_offset(struct import_text *t); /* bytes of the file consumed (progress) */
void import_text_close(struct import_text *t);

/* Number parsers: parse at *p, advance *p past the number; 0 on success, -1 when
 * there is no number there. Integers: optional sign and digits (overflow is -1).
 * Floats: correctly rounded to float32 (exact fast path for short decimals,
 * strtof otherwise), so the CSV text of a float32 gives back the same bits. */
int import_parse_i64(const char **p, int64_t *out);
int import_parse_f32(const char **p, float *out);
/* Skip spaces and tabs. */
static inline const char *import_skip_blank(const char *s) {
  while (*s == ' ' || *s == '\t') s++;
  return s;
}

/* ---- finishing ------------------------------------------------------------------- */

/* g->feat_values holds the dense n x f matrix: count the nonzeros and, per `mode`
 * (auto: sparse when that at least halves the bytes), convert it to CSR in place. */
int import_feat_store(struct graph *g, enum import_feat_storage mode, struct import_stats *st);
/* A seeded 60/20/20 split of the labelled vertices (Fisher-Yates with Philox):
 * exactly floor(0.6 L) train, floor(0.2 L) val, the rest test; unlabelled -> 0. */
int import_random_split(struct graph *g, uint64_t seed);
/* Single-label: num_classes from the labels (max + 1) when opts gives 0, else checks
 * every label lies in [-1, c); `source` names the file in the message. */
int import_label_classes(struct graph *g, int64_t want_classes, const char *source);
/* No unlabelled vertex in a split (FORMAT.md); names both files. */
int import_check_split(const struct graph *g, const char *split_source, const char *label_source);

void import_note(struct import_stats *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "dir/name" into buf (error if it does not fit). */
int import_path_join(char *buf, size_t len, const char *dir, const char *name);
int import_path_is_file(const char *p);
int import_path_is_dir(const char *p);
/* --input must be a folder (want_dir) or a regular file: CG_OK, else CG_ERR_NOT_FOUND
 * ("PATH: no such folder/file (EXPECT)") or CG_ERR_IO naming what it is instead
 * ("PATH: a named pipe (FIFO), not a folder (EXPECT)"). */
int import_input_expect(const char *path, int want_dir, const char *expect);

/* The importers (import_*.c); each fills g except the name and checksum. */
int import_dgl_reddit(const struct import_opts *o, struct graph *g, struct import_stats *st);
int import_ogb(const struct import_opts *o, struct graph *g, struct import_stats *st);
int import_saint(const struct import_opts *o, struct graph *g, struct import_stats *st);
int import_edgelist(const struct import_opts *o, struct graph *g, struct import_stats *st);

/* Reads a SciPy sparse matrix saved by scipy.sparse.save_npz (csr, csc or coo) as an
 * edge list; *n_out = its (square) shape. Shared by dgl-reddit and saint. */
int import_scipy_npz(const char *path, int64_t *n_out, struct import_edges *e);
struct import_npy;
/* Reads the opened (n, f) array `a` into g->feat_values (float32, dense, n x f) and
 * sets feat_dim; the row count must equal g->n. Notes the source dtype in *st. */
int import_npy_features(struct import_npy *a, struct graph *g, struct import_stats *st);
/* Labels from the opened array `a`: (n,) integer class ids (-1 = none; classes per
 * import_label_classes) or (n, c) of 0/1 (multi-label). */
int import_npy_labels(struct import_npy *a, struct graph *g, int64_t want_classes);
/* Split from the opened (n,) integer array `a`: 0 none, 1 train, 2 val, 3 test. */
int import_npy_split(struct import_npy *a, struct graph *g);

#endif
