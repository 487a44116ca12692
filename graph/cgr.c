/* graph/cgr.c — the .cgr reader and writer, the strong invariant checker and the
 * graph checksum. The format is ../shared/datasets/FORMAT.md; the check numbers in
 * the messages ("check 5") refer to its "What a reader must check" list so that a
 * user can look the rule up. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/endian.h"
#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "graph/graph.h"
#include "graph_internal.h"

#define CGR_MAGIC "CAPGNN01"
#define CGR_VERSION 1u
#define CGR_VERSION_BLOCKS 2u /* docs/cgr-v2.md: per-block CRC-32s */
#define CGR_BLOCK_SHIFT_OFFSET 248 /* v1: reserved (0) */
#define CGR_FLAG_MULTILABEL 1u
#define CGR_FLAG_SPARSE 2u
#define CGR_FLAGS_KNOWN (CGR_FLAG_MULTILABEL | CGR_FLAG_SPARSE)
#define CGR_SECTION_TABLE 64
#define CGR_NAME_OFFSET 232
#define CGR_CRC_OFFSET 252

const char *const graph_section_names[GRAPH_CGR_NUM_SECTIONS] = {
    "ROWPTR", "COLIDX", "FEAT_ROWPTR", "FEAT_COLIDX", "FEAT_VALUES", "LABELS", "SPLIT"};

/* ---- CRC and checksum ------------------------------------------------------ */

uint32_t graph_crc32(const void *p, size_t n) {
  const unsigned char *b = p;
  /* zlib's crc32 takes a uInt length; chunks also give OpenMP its work items. */
  const size_t chunk = (size_t)8 << 20;
  size_t nchunks = (n + chunk - 1) / chunk;
  if (nchunks <= 1) return (uint32_t)crc32(0L, b, (uInt)n);
  uint32_t *part = malloc(nchunks * sizeof *part);
  if (!part) { /* no memory for the partials: do it serially */
    uLong c = crc32(0L, Z_NULL, 0);
    for (size_t i = 0; i < nchunks; i++) {
      size_t len = (i + 1 < nchunks) ? chunk : n - i * chunk;
      c = crc32(c, b + i * chunk, (uInt)len);
    }
    return (uint32_t)c;
  }
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t i = 0; i < nchunks; i++) {
    size_t len = (i + 1 < nchunks) ? chunk : n - i * chunk;
    part[i] = (uint32_t)crc32(0L, b + i * chunk, (uInt)len);
  }
  uLong c = part[0];
  for (size_t i = 1; i < nchunks; i++) {
    size_t len = (i + 1 < nchunks) ? chunk : n - i * chunk;
    c = crc32_combine(c, part[i], (z_off_t)len);
  }
  free(part);
  return (uint32_t)c;
}

void graph_sections(const struct graph *g, const void *ptr[GRAPH_CGR_NUM_SECTIONS],
                    uint64_t size[GRAPH_CGR_NUM_SECTIONS]) {
  uint64_t n = (uint64_t)g->n;
  ptr[GRAPH_SEC_ROWPTR] = g->rowptr;
  size[GRAPH_SEC_ROWPTR] = 8 * (n + 1);
  ptr[GRAPH_SEC_COLIDX] = g->colidx;
  size[GRAPH_SEC_COLIDX] = 4 * (uint64_t)g->m;
  ptr[GRAPH_SEC_FEAT_ROWPTR] = g->sparse_feat ? (const void *)g->feat_rowptr : NULL;
  size[GRAPH_SEC_FEAT_ROWPTR] = g->sparse_feat ? 8 * (n + 1) : 0;
  ptr[GRAPH_SEC_FEAT_COLIDX] = g->sparse_feat ? (const void *)g->feat_colidx : NULL;
  size[GRAPH_SEC_FEAT_COLIDX] = g->sparse_feat ? 4 * (uint64_t)g->feat_nnz : 0;
  ptr[GRAPH_SEC_FEAT_VALUES] = g->feat_values;
  size[GRAPH_SEC_FEAT_VALUES] = 4 * (uint64_t)g->feat_nnz;
  ptr[GRAPH_SEC_LABELS] = g->multilabel ? (const void *)g->mlabels : (const void *)g->labels;
  size[GRAPH_SEC_LABELS] = g->multilabel ? n * (uint64_t)g->num_classes : 4 * n;
  ptr[GRAPH_SEC_SPLIT] = g->split;
  size[GRAPH_SEC_SPLIT] = n;
}


uint32_t graph_checksum_from_crcs(const uint32_t crc[GRAPH_CGR_NUM_SECTIONS], uint64_t n, uint64_t m,
                                  uint64_t f, uint64_t c) {
  unsigned char buf[4 * GRAPH_CGR_NUM_SECTIONS + 32];
  for (int s = 0; s < GRAPH_CGR_NUM_SECTIONS; s++) cg_put_le32(buf + 4 * s, crc[s]);
  unsigned char *q = buf + 4 * GRAPH_CGR_NUM_SECTIONS;
  cg_put_le64(q, n);
  cg_put_le64(q + 8, m);
  cg_put_le64(q + 16, f);
  cg_put_le64(q + 24, c);
  return (uint32_t)crc32(0L, buf, (uInt)sizeof buf);
}

static void section_crcs(const struct graph *g, uint32_t crc[GRAPH_CGR_NUM_SECTIONS]) {
  const void *ptr[GRAPH_CGR_NUM_SECTIONS];
  uint64_t size[GRAPH_CGR_NUM_SECTIONS];
  graph_sections(g, ptr, size);
  for (int s = 0; s < GRAPH_CGR_NUM_SECTIONS; s++)
    crc[s] = size[s] ? graph_crc32(ptr[s], (size_t)size[s]) : 0;
}

void graph_checksum_update(struct graph *g) {
  uint32_t crc[GRAPH_CGR_NUM_SECTIONS];
  section_crcs(g, crc);
  g->checksum = graph_checksum_from_crcs(crc, (uint64_t)g->n, (uint64_t)g->m,
                                         (uint64_t)g->feat_dim, (uint64_t)g->num_classes);
}

uint64_t graph_cgr_data_bytes(const struct graph *g) {
  const void *ptr[GRAPH_CGR_NUM_SECTIONS];
  uint64_t size[GRAPH_CGR_NUM_SECTIONS], total = GRAPH_CGR_HEADER_BYTES;
  graph_sections(g, ptr, size);
  for (int s = 0; s < GRAPH_CGR_NUM_SECTIONS; s++) total += size[s];
  return total;
}

/* ---- the invariant checker -------------------------------------------------- */

/* Structural checks of a CSR (FORMAT.md check 6 plus sorted rows); `graph` adds the
 * no-self-loop rule. Row-local rules are evaluated in parallel to find the first
 * bad row, then that row is re-examined serially to word the message, so the
 * message does not depend on the thread count. */
int graph_check_csr(const char *what, const char *rp_name, const char *ci_name,
                     const int64_t *rowptr, const int32_t *colidx, int64_t nrows, int64_t ncols,
                     int64_t nnz, const char *nnz_name, int graph) {
  if (rowptr[0] != 0)
    return cg_err_set(CG_ERR_FORMAT, "%s: %s[0] = %lld, expected 0 (check 6)", what, rp_name,
                      (long long)rowptr[0]);
  if (rowptr[nrows] != nnz)
    return cg_err_set(CG_ERR_FORMAT, "%s: %s[n] = %lld, expected %s = %lld (check 6, n = %lld)",
                      what, rp_name, (long long)rowptr[nrows], nnz_name, (long long)nnz,
                      (long long)nrows);
  int64_t bad = INT64_MAX;
#pragma omp parallel for reduction(min : bad)
  for (int64_t r = 0; r < nrows; r++)
    if (rowptr[r + 1] < rowptr[r] && r < bad) bad = r;
  if (bad != INT64_MAX)
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: %s decreases at row %lld: %s[%lld] = %lld > %s[%lld] = %lld "
                      "(check 6, row pointers must never decrease)",
                      what, rp_name, (long long)bad, rp_name, (long long)bad,
                      (long long)rowptr[bad], rp_name, (long long)bad + 1,
                      (long long)rowptr[bad + 1]);
  /* From here on every row range lies inside [0, nnz). */
#pragma omp parallel for reduction(min : bad) schedule(dynamic, 1024)
  for (int64_t r = 0; r < nrows; r++) {
    int64_t prev = -1;
    for (int64_t k = rowptr[r]; k < rowptr[r + 1]; k++) {
      int64_t c = colidx[k];
      if (c < 0 || c >= ncols || c <= prev || (graph && c == r)) {
        if (r < bad) bad = r;
        break;
      }
      prev = c;
    }
  }
  if (bad == INT64_MAX) return CG_OK;
  int64_t r = bad, prev = -1;
  for (int64_t k = rowptr[r]; k < rowptr[r + 1]; k++) {
    int64_t c = colidx[k];
    if (c < 0 || c >= ncols)
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: %s column index out of range: row %lld, entry %lld holds %lld, "
                        "expected a value in [0, %lld) (check 6)",
                        what, ci_name, (long long)r, (long long)k, (long long)c, (long long)ncols);
    if (c <= prev)
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: %s row %lld is not strictly increasing: column %lld follows %lld at "
                        "entry %lld (rows must be sorted, without duplicates)",
                        what, ci_name, (long long)r, (long long)c, (long long)prev, (long long)k);
    if (graph && c == r)
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: self-loop at vertex %lld (entry %lld); the graph must have no "
                        "self-loops (a GCN adds I itself)",
                        what, (long long)r, (long long)k);
    prev = c;
  }
  return cg_err_set(CG_ERR_INTERNAL, "%s: check_csr lost track of row %lld", what, (long long)r);
}

/* Symmetry in O(n + m) given sorted rows: walking the rows u = 0, 1, ... in order,
 * the entries (u, v) must consume row v's entries front to back, because the mirror
 * (v, u) of every earlier row has already been consumed. pos[v] is that front. */
int graph_check_symmetric(const char *what, const struct graph *g) {
  int64_t n = g->n;
  int64_t *pos = cg_malloc((size_t)n * sizeof *pos, "graph symmetry check cursors");
  if (!pos) return CG_ERR_NOMEM;
  memcpy(pos, g->rowptr, (size_t)n * sizeof *pos);
  int st = CG_OK;
  for (int64_t u = 0; u < n && st == CG_OK; u++) {
    for (int64_t k = g->rowptr[u]; k < g->rowptr[u + 1]; k++) {
      int64_t v = g->colidx[k];
      int64_t p = pos[v];
      if (p < g->rowptr[v + 1] && g->colidx[p] == u) {
        pos[v]++;
        continue;
      }
      if (p < g->rowptr[v + 1] && g->colidx[p] < u) {
        /* Row v holds w < u that row w (already walked) did not mirror. */
        int64_t w = g->colidx[p];
        st = cg_err_set(CG_ERR_FORMAT,
                        "%s: graph is not symmetric: edge (%lld, %lld) is stored but its mirror "
                        "(%lld, %lld) is not (every edge must be stored in both directions)",
                        what, (long long)v, (long long)w, (long long)w, (long long)v);
      } else {
        st = cg_err_set(CG_ERR_FORMAT,
                        "%s: graph is not symmetric: edge (%lld, %lld) is stored but its mirror "
                        "(%lld, %lld) is not (every edge must be stored in both directions)",
                        what, (long long)u, (long long)v, (long long)v, (long long)u);
      }
      break;
    }
  }
  if (st == CG_OK) {
    /* Every entry of row v that nobody consumed lacks its mirror. */
    for (int64_t v = 0; v < n; v++)
      if (pos[v] != g->rowptr[v + 1]) {
        int64_t w = g->colidx[pos[v]];
        st = cg_err_set(CG_ERR_FORMAT,
                        "%s: graph is not symmetric: edge (%lld, %lld) is stored but its mirror "
                        "(%lld, %lld) is not (every edge must be stored in both directions)",
                        what, (long long)v, (long long)w, (long long)w, (long long)v);
        break;
      }
  }
  cg_free(pos);
  return st;
}

static int check_header_values(const char *what, uint64_t n, uint64_t m, uint64_t f, uint64_t c,
                               uint64_t nnz, int sparse) {
  if (n < 1 || n >= ((uint64_t)1 << 31))
    return cg_err_set(CG_ERR_FORMAT, "%s: num_nodes = %llu, expected 1 <= n < 2^31", what,
                      (unsigned long long)n);
  /* Bounds that keep every size computation below 2^64; real files are far smaller. */
  if (m >= ((uint64_t)1 << 61))
    return cg_err_set(CG_ERR_FORMAT, "%s: num_edges = %llu, expected < 2^61", what,
                      (unsigned long long)m);
  if (f >= ((uint64_t)1 << 31))
    return cg_err_set(CG_ERR_FORMAT, "%s: feat_dim = %llu, expected < 2^31", what,
                      (unsigned long long)f);
  if (c < 1 || c >= ((uint64_t)1 << 31))
    return cg_err_set(CG_ERR_FORMAT, "%s: num_classes = %llu, expected 1 <= c < 2^31", what,
                      (unsigned long long)c);
  if (!sparse && nnz != n * f)
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: feat_nnz = %llu, expected n*f = %llu for dense features", what,
                      (unsigned long long)nnz, (unsigned long long)(n * f));
  if (sparse && nnz > n * f)
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: feat_nnz = %llu, expected at most n*f = %llu for sparse features", what,
                      (unsigned long long)nnz, (unsigned long long)(n * f));
  return CG_OK;
}

int graph_check(const struct graph *g, const char *what) {
  if (!what) what = g->name[0] ? g->name : "graph";
  if (g->n < 0 || g->m < 0 || g->feat_dim < 0 || g->num_classes < 0 || g->feat_nnz < 0)
    return cg_err_set(CG_ERR_FORMAT, "%s: negative size (n=%lld, m=%lld, f=%lld, c=%lld, nnz=%lld)",
                      what, (long long)g->n, (long long)g->m, (long long)g->feat_dim,
                      (long long)g->num_classes, (long long)g->feat_nnz);
  TRY(check_header_values(what, (uint64_t)g->n, (uint64_t)g->m, (uint64_t)g->feat_dim,
                          (uint64_t)g->num_classes, (uint64_t)g->feat_nnz, g->sparse_feat));
  if (!g->rowptr || (g->m && !g->colidx) || !g->split || (g->feat_nnz && !g->feat_values) ||
      (g->sparse_feat && (!g->feat_rowptr || (g->feat_nnz && !g->feat_colidx))) ||
      (g->multilabel ? !g->mlabels : !g->labels))
    return cg_err_set(CG_ERR_FORMAT, "%s: an array of the graph is missing (NULL)", what);
  const int64_t n = g->n, c = g->num_classes;

  TRY(graph_check_csr(what, "ROWPTR", "COLIDX", g->rowptr, g->colidx, n, n, g->m, "m", 1));
  TRY(graph_check_symmetric(what, g));
  if (g->sparse_feat)
    TRY(graph_check_csr(what, "FEAT_ROWPTR", "FEAT_COLIDX", g->feat_rowptr, g->feat_colidx, n,
                  g->feat_dim, g->feat_nnz, "feat_nnz", 0));

  int64_t bad = INT64_MAX;
#pragma omp parallel for reduction(min : bad)
  for (int64_t k = 0; k < g->feat_nnz; k++)
    if (!isfinite(g->feat_values[k]) && k < bad) bad = k;
  if (bad != INT64_MAX)
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: FEAT_VALUES entry %lld is not finite (%g); feature values must be finite",
                      what, (long long)bad, (double)g->feat_values[bad]);

  if (g->multilabel) {
#pragma omp parallel for reduction(min : bad)
    for (int64_t k = 0; k < n * c; k++)
      if (g->mlabels[k] > 1 && k < bad) bad = k;
    if (bad != INT64_MAX)
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: multilabel LABELS[%lld] (vertex %lld, class %lld) = %u, label out of "
                        "range: expected 0 or 1",
                        what, (long long)bad, (long long)(bad / c), (long long)(bad % c),
                        (unsigned)g->mlabels[bad]);
  } else {
#pragma omp parallel for reduction(min : bad)
    for (int64_t u = 0; u < n; u++)
      if ((g->labels[u] < -1 || g->labels[u] >= c) && u < bad) bad = u;
    if (bad != INT64_MAX)
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: label out of range at vertex %lld: %d, expected a value in [-1, %lld)",
                        what, (long long)bad, g->labels[bad], (long long)c);
  }
#pragma omp parallel for reduction(min : bad)
  for (int64_t u = 0; u < n; u++)
    if (g->split[u] > 3 && u < bad) bad = u;
  if (bad != INT64_MAX)
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: split value %u at vertex %lld, expected 0 (none), 1 (train), 2 (val) or "
                      "3 (test)",
                      what, (unsigned)g->split[bad], (long long)bad);
  if (!g->multilabel) {
#pragma omp parallel for reduction(min : bad)
    for (int64_t u = 0; u < n; u++)
      if (g->labels[u] == -1 && g->split[u] != GRAPH_SPLIT_NONE && u < bad) bad = u;
    if (bad != INT64_MAX)
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: unlabelled vertex in a split: vertex %lld has label -1 but split %u, "
                        "expected split 0",
                        what, (long long)bad, (unsigned)g->split[bad]);
  }
  return CG_OK;
}

void graph_free(struct graph *g) {
  if (!g) return;
  cg_free(g->rowptr);
  cg_free(g->colidx);
  cg_free(g->feat_rowptr);
  cg_free(g->feat_colidx);
  cg_free(g->feat_values);
  cg_free(g->labels);
  cg_free(g->mlabels);
  cg_free(g->split);
  cg_free(g->norm_deg);
  memset(g, 0, sizeof *g);
}

/* ---- reader ------------------------------------------------------------------ */

struct file_map {
  unsigned char *data;
  size_t size;
  int mapped; /* 1: munmap, 0: free */
};

static int file_map_open(const char *path, struct file_map *fm) {
  memset(fm, 0, sizeof *fm);
  /* O_NONBLOCK: a named pipe given as a graph must not block the open until a writer
   * comes (it is refused below; for a regular file the flag changes nothing) */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return cg_err_set(CG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return cg_err_set(CG_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    const char *type = cg_path_type(path);
    return cg_err_set(CG_ERR_IO, "%s: %s, not a .cgr file (%s)", path, type ? type : "not a regular file",
                      S_ISDIR(sb.st_mode) ? "give the .cgr file inside it, or set CAPGNN_DATA to the folder "
                                            "and give the dataset's name"
                                          : "a graph is read with random access: save the stream to a "
                                            "regular file first");
  }
  fm->size = (size_t)sb.st_size;
  if (fm->size == 0) {
    close(fd);
    return CG_OK;
  }
  /* mmap keeps the file in the page cache instead of a second private copy; fall
   * back to read() where mapping is not possible (some network file systems). */
  void *p = mmap(NULL, fm->size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p != MAP_FAILED) {
    fm->data = p;
    fm->mapped = 1;
    close(fd);
    return CG_OK;
  }
  fm->data = cg_malloc(fm->size, "the .cgr file contents");
  if (!fm->data) {
    close(fd);
    return CG_ERR_NOMEM;
  }
  size_t got = 0;
  while (got < fm->size) {
    ssize_t r = read(fd, fm->data + got, fm->size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      int e = r < 0 ? errno : 0;
      close(fd);
      cg_free(fm->data);
      fm->data = NULL;
      return cg_err_set(CG_ERR_IO, "%s: read failed after %zu of %zu bytes: %s", path, got,
                        fm->size, e ? strerror(e) : "unexpected end of file");
    }
    got += (size_t)r;
  }
  close(fd);
  return CG_OK;
}

static void file_map_close(struct file_map *fm) {
  if (fm->data) {
    if (fm->mapped)
      munmap(fm->data, fm->size);
    else
      cg_free(fm->data);
  }
  memset(fm, 0, sizeof *fm);
}

static void *copy_section(const unsigned char *src, uint64_t size, const char *what) {
  void *p = cg_malloc((size_t)size, what);
  if (p && size) memcpy(p, src, (size_t)size);
  return p;
}

int graph_cgr_header_parse(const char *path, const unsigned char *b, uint64_t fsize, struct cgr_header *o) {
  memset(o, 0, sizeof *o);
  /* Check 1. */
  if (fsize < GRAPH_CGR_HEADER_BYTES)
    return cg_err_set(CG_ERR_FORMAT, "%s: file too short: %llu bytes, expected at least %d (check 1)",
                      path, (unsigned long long)fsize, GRAPH_CGR_HEADER_BYTES);
  if (memcmp(b, CGR_MAGIC, 8) != 0) {
    char found[33];
    for (int i = 0; i < 8; i++) snprintf(found + 2 * i, 3, "%02x", b[i]);
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: bad magic: expected \"CAPGNN01\", found bytes %s (check 1: not a .cgr file)",
                      path, found);
  }
  /* Check 2 (version 2: docs/cgr-v2.md). */
  uint32_t version = cg_get_le32(b + 8), hbytes = cg_get_le32(b + 12), nsec = cg_get_le32(b + 60);
  if (version != CGR_VERSION && version != CGR_VERSION_BLOCKS)
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: unsupported version: expected %u or %u, found %u (check 2: a different "
                      "version is a different format)",
                      path, CGR_VERSION, CGR_VERSION_BLOCKS, version);
  if (hbytes != GRAPH_CGR_HEADER_BYTES)
    return cg_err_set(CG_ERR_FORMAT, "%s: header_bytes: expected %d, found %u (check 2)", path,
                      GRAPH_CGR_HEADER_BYTES, hbytes);
  if (nsec != GRAPH_CGR_NUM_SECTIONS)
    return cg_err_set(CG_ERR_FORMAT, "%s: num_sections: expected %d, found %u (check 2)", path,
                      GRAPH_CGR_NUM_SECTIONS, nsec);
  /* Check 3. */
  uint32_t hcrc_stored = cg_get_le32(b + CGR_CRC_OFFSET);
  uint32_t hcrc = (uint32_t)crc32(0L, b, CGR_CRC_OFFSET);
  if (hcrc != hcrc_stored)
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: header CRC-32 mismatch: stored 0x%08x, computed 0x%08x (check 3: the "
                      "header is corrupt)",
                      path, hcrc_stored, hcrc);
  /* Check 4. */
  uint32_t flags = cg_get_le32(b + 56);
  if (flags & ~CGR_FLAGS_KNOWN)
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: unknown flag bits: flags = 0x%08x, expected only bits 0 (MULTILABEL) and 1 "
                      "(SPARSE_FEATURES) (check 4)",
                      path, flags);
  if (version == CGR_VERSION_BLOCKS) {
    o->block_shift = cg_get_le32(b + CGR_BLOCK_SHIFT_OFFSET);
    if (o->block_shift < GRAPH_CGR_BLOCK_SHIFT_MIN || o->block_shift > GRAPH_CGR_BLOCK_SHIFT_MAX)
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: block_shift = %u, expected %u .. %u (version 2: blocks of 2^block_shift "
                        "bytes, docs/cgr-v2.md)",
                        path, o->block_shift, GRAPH_CGR_BLOCK_SHIFT_MIN, GRAPH_CGR_BLOCK_SHIFT_MAX);
  }
  o->version = version;
  o->flags = flags;
  o->n = cg_get_le64(b + 16);
  o->m = cg_get_le64(b + 24);
  o->f = cg_get_le64(b + 32);
  o->c = cg_get_le64(b + 40);
  o->nnz = cg_get_le64(b + 48);
  o->multilabel = (flags & CGR_FLAG_MULTILABEL) != 0;
  o->sparse = (flags & CGR_FLAG_SPARSE) != 0;
  const uint64_t n = o->n, m = o->m, f = o->f, c = o->c, nnz = o->nnz;
  TRY(check_header_values(path, n, m, f, c, nnz, o->sparse));

  /* Check 5 without the CRCs (the readers check those on what they read). */
  const uint64_t expect[GRAPH_CGR_NUM_SECTIONS] = {
      8 * (n + 1), 4 * m,   o->sparse ? 8 * (n + 1) : 0, o->sparse ? 4 * nnz : 0,
      4 * nnz,     o->multilabel ? n * c : 4 * n,        n};
  uint64_t end = GRAPH_CGR_HEADER_BYTES, nb = 0;
  for (int s = 0; s < GRAPH_CGR_NUM_SECTIONS; s++) {
    const unsigned char *e = b + CGR_SECTION_TABLE + 24 * s;
    uint64_t off = cg_get_le64(e), size = cg_get_le64(e + 8);
    if (size != expect[s])
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: section %d (%s) size: expected %llu bytes, found %llu (check 5; n=%llu, "
                        "m=%llu, f=%llu, c=%llu, feat_nnz=%llu, flags=0x%x)",
                        path, s, graph_section_names[s], (unsigned long long)expect[s],
                        (unsigned long long)size, (unsigned long long)n, (unsigned long long)m,
                        (unsigned long long)f, (unsigned long long)c, (unsigned long long)nnz, flags);
    if (off > fsize || size > fsize - off)
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: section %d (%s) extends beyond end of file: offset %llu + size %llu > "
                        "file size %llu (check 5: truncated or corrupt file)",
                        path, s, graph_section_names[s], (unsigned long long)off,
                        (unsigned long long)size, (unsigned long long)fsize);
    o->off[s] = off;
    o->size[s] = size;
    o->crc[s] = cg_get_le32(e + 16);
    if (size && off + size > end) end = off + size;
    if (version == CGR_VERSION_BLOCKS) {
      o->bfirst[s] = nb;
      o->nblocks[s] = (size + ((uint64_t)1 << o->block_shift) - 1) >> o->block_shift;
      nb += o->nblocks[s];
    }
  }
  if (version == CGR_VERSION_BLOCKS) {
    /* the block CRC table: at the next multiple of 64 after the last section */
    o->table_off = (end + 63) & ~(uint64_t)63;
    o->table_bytes = 4 * (nb + 1);
    if (o->table_off > fsize || o->table_bytes > fsize - o->table_off)
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: the block CRC table (%llu bytes at offset %llu) extends beyond the end "
                        "of the file (%llu bytes; version 2, docs/cgr-v2.md: truncated file)",
                        path, (unsigned long long)o->table_bytes, (unsigned long long)o->table_off,
                        (unsigned long long)fsize);
    end = o->table_off + o->table_bytes;
  }
  /* FORMAT.md: the file ends exactly where the last non-empty section ends (version 2:
   * where the block table ends), and the name is NUL-padded (at most 15 characters).
   * Anything else is not a file we wrote or a file the format describes: reject it
   * rather than guess. */
  if (fsize != end)
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: %llu trailing bytes after the last section (file size %llu, last section "
                      "ends at %llu; FORMAT.md: the file ends where the last non-empty section ends)",
                      path, (unsigned long long)(fsize - end), (unsigned long long)fsize,
                      (unsigned long long)end);
  if (b[CGR_NAME_OFFSET + 15] != 0)
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: name field is not NUL-terminated (FORMAT.md: at most 15 ASCII characters, "
                      "NUL-padded to 16 bytes)", path);
  memcpy(o->name, b + CGR_NAME_OFFSET, 15);
  o->name[15] = '\0';
  return CG_OK;
}

uint32_t graph_crc32_blocks(const void *p, size_t n, size_t block, uint32_t *out) {
  const unsigned char *b = p;
  const size_t nb = (n + block - 1) / block;
  if (nb == 0) return 0;
#pragma omp parallel for schedule(dynamic, 16)
  for (size_t i = 0; i < nb; i++) {
    size_t len = (i + 1 < nb) ? block : n - i * block;
    out[i] = graph_crc32(b + i * block, len);
  }
  uLong c = out[0];
  for (size_t i = 1; i < nb; i++) {
    size_t len = (i + 1 < nb) ? block : n - i * block;
    c = crc32_combine(c, out[i], (z_off_t)len);
  }
  return (uint32_t)c;
}

int graph_load_cgr(const char *path, struct graph *g) {
  memset(g, 0, sizeof *g);
  struct file_map fm;
  TRY(file_map_open(path, &fm));
  const unsigned char *b = fm.data;
  int st = CG_OK;
  uint32_t *bcrc = NULL;
  struct cgr_header h;
  TRY_GOTO(graph_cgr_header_parse(path, b, fm.size, &h), fail);
  const uint64_t n = h.n, m = h.m, f = h.f, c = h.c, nnz = h.nnz;
  const int sparse = h.sparse, multilabel = h.multilabel;
  uint32_t crc[GRAPH_CGR_NUM_SECTIONS];
  if (h.version == CGR_VERSION_BLOCKS) {
    /* the table's own CRC, then each block's against it (one pass: the section CRC is
     * the blocks' combined) */
    const unsigned char *t = b + h.table_off;
    const uint64_t nent = h.table_bytes / 4 - 1;
    uint32_t tstored = cg_get_le32(t + 4 * nent), tcrc = graph_crc32(t, (size_t)(4 * nent));
    if (tstored != tcrc) {
      st = cg_err_set(CG_ERR_FORMAT,
                      "%s: block CRC table CRC-32 mismatch: stored 0x%08x, computed 0x%08x (version "
                      "2: the table is corrupt)",
                      path, tstored, tcrc);
      goto fail;
    }
    bcrc = cg_malloc((size_t)(nent ? nent : 1) * sizeof *bcrc, "block CRCs");
    if (!bcrc) {
      st = CG_ERR_NOMEM;
      goto fail;
    }
    for (int s = 0; s < GRAPH_CGR_NUM_SECTIONS; s++) {
      crc[s] = h.size[s] ? graph_crc32_blocks(b + h.off[s], (size_t)h.size[s],
                                               (size_t)1 << h.block_shift, bcrc + h.bfirst[s])
                         : 0;
      for (uint64_t k = 0; k < h.nblocks[s]; k++) {
        uint32_t stored = cg_get_le32(t + 4 * (h.bfirst[s] + k));
        if (stored != bcrc[h.bfirst[s] + k]) {
          st = cg_err_set(CG_ERR_FORMAT,
                          "%s: section %d (%s) block %llu CRC-32 mismatch: stored 0x%08x, computed "
                          "0x%08x (the block is corrupt)",
                          path, s, graph_section_names[s], (unsigned long long)k, stored,
                          bcrc[h.bfirst[s] + k]);
          goto fail;
        }
      }
      if (crc[s] != h.crc[s]) break; /* reported below */
    }
  } else {
    for (int s = 0; s < GRAPH_CGR_NUM_SECTIONS; s++)
      crc[s] = h.size[s] ? graph_crc32(b + h.off[s], (size_t)h.size[s]) : 0;
  }
  for (int s = 0; s < GRAPH_CGR_NUM_SECTIONS; s++)
    if (crc[s] != h.crc[s]) {
      st = cg_err_set(CG_ERR_FORMAT,
                      "%s: section %d (%s) CRC-32 mismatch: stored 0x%08x, computed 0x%08x (check 5: "
                      "the section is corrupt)",
                      path, s, graph_section_names[s], h.crc[s], crc[s]);
      goto fail;
    }

  memcpy(g->name, h.name, sizeof g->name);
  g->n = (int64_t)n;
  g->m = (int64_t)m;
  g->feat_dim = (int64_t)f;
  g->num_classes = (int64_t)c;
  g->feat_nnz = (int64_t)nnz;
  g->sparse_feat = sparse;
  g->multilabel = multilabel;
  g->rowptr = copy_section(b + h.off[0], h.size[0], "graph row pointers");
  g->colidx = copy_section(b + h.off[1], h.size[1], "graph column indices");
  if (sparse) {
    g->feat_rowptr = copy_section(b + h.off[2], h.size[2], "feature row pointers");
    g->feat_colidx = copy_section(b + h.off[3], h.size[3], "feature column indices");
  }
  g->feat_values = copy_section(b + h.off[4], h.size[4], "feature values");
  if (multilabel)
    g->mlabels = copy_section(b + h.off[5], h.size[5], "multi-label matrix");
  else
    g->labels = copy_section(b + h.off[5], h.size[5], "labels");
  g->split = copy_section(b + h.off[6], h.size[6], "split");
  if (!g->rowptr || !g->colidx || !g->feat_values || !g->split ||
      (sparse && (!g->feat_rowptr || !g->feat_colidx)) || (multilabel ? !g->mlabels : !g->labels)) {
    st = CG_ERR_NOMEM;
    goto fail;
  }
  cg_free(bcrc);
  file_map_close(&fm);
  /* Check 6 and the strong checks. */
  TRY_GOTO(graph_check(g, path), fail_graph);
  g->checksum = graph_checksum_from_crcs(crc, n, m, f, c);
  LOG_DEBUG("graph", "%s: loaded n=%lld m=%lld f=%lld c=%lld (%s features%s, version %u), checksum 0x%08x",
            path, (long long)g->n, (long long)g->m, (long long)g->feat_dim, (long long)g->num_classes,
            sparse ? "sparse" : "dense", multilabel ? ", multilabel" : "", h.version, g->checksum);
  return CG_OK;

fail:
  cg_free(bcrc);
  file_map_close(&fm);
fail_graph:
  graph_free(g);
  return st;
}

/* ---- writer ------------------------------------------------------------------ */

static int write_all(FILE *fp, const void *p, size_t n) { return fwrite(p, 1, n, fp) == n ? 0 : -1; }

int graph_save_cgr(const char *path, const struct graph *g) {
  return graph_save_cgr_version(path, g, CGR_VERSION, 0);
}

int graph_save_cgr_version(const char *path, const struct graph *g, unsigned version,
                           unsigned block_shift) {
  if (version != CGR_VERSION && version != CGR_VERSION_BLOCKS)
    return cg_err_set(CG_ERR_ARG, "%s: .cgr version %u cannot be written: expected 1 or 2", path,
                      version);
  if (version == CGR_VERSION_BLOCKS && block_shift == 0) block_shift = GRAPH_CGR_BLOCK_SHIFT_DEFAULT;
  if (version == CGR_VERSION_BLOCKS &&
      (block_shift < GRAPH_CGR_BLOCK_SHIFT_MIN || block_shift > GRAPH_CGR_BLOCK_SHIFT_MAX))
    return cg_err_set(CG_ERR_ARG, "%s: block size 2^%u bytes, expected 2^%u .. 2^%u", path,
                      block_shift, GRAPH_CGR_BLOCK_SHIFT_MIN, GRAPH_CGR_BLOCK_SHIFT_MAX);
  if (version == CGR_VERSION) block_shift = 0;
  /* Never write a file that the reader would reject. */
  TRY(graph_check(g, g->name[0] ? g->name : "graph to save"));

  const void *ptr[GRAPH_CGR_NUM_SECTIONS];
  uint64_t size[GRAPH_CGR_NUM_SECTIONS], off[GRAPH_CGR_NUM_SECTIONS];
  uint32_t crc[GRAPH_CGR_NUM_SECTIONS];
  graph_sections(g, ptr, size);
  /* version 2: the block CRC table, whose blocks combine to the section CRCs */
  uint32_t *table = NULL;
  uint64_t nent = 0, first[GRAPH_CGR_NUM_SECTIONS];
  if (version == CGR_VERSION_BLOCKS) {
    const uint64_t B = (uint64_t)1 << block_shift;
    for (int s = 0; s < GRAPH_CGR_NUM_SECTIONS; s++) {
      first[s] = nent;
      nent += (size[s] + B - 1) / B;
    }
    table = cg_malloc((size_t)(nent + 1) * sizeof *table, "block CRC table");
    if (!table) return CG_ERR_NOMEM;
    for (int s = 0; s < GRAPH_CGR_NUM_SECTIONS; s++)
      crc[s] = size[s] ? graph_crc32_blocks(ptr[s], (size_t)size[s], (size_t)B, table + first[s]) : 0;
    table[nent] = graph_crc32(table, (size_t)(4 * nent));
  } else {
    section_crcs(g, crc);
  }

  /* Layout: sections in table order, each non-empty one at the next multiple of 64,
   * zero padding between them, the file ending where the last one ends. */
  uint64_t cur = GRAPH_CGR_HEADER_BYTES;
  for (int s = 0; s < GRAPH_CGR_NUM_SECTIONS; s++) {
    if (size[s] == 0) {
      off[s] = 0;
      continue;
    }
    off[s] = (cur + 63) & ~(uint64_t)63;
    cur = off[s] + size[s];
  }

  unsigned char h[GRAPH_CGR_HEADER_BYTES];
  memset(h, 0, sizeof h);
  memcpy(h, CGR_MAGIC, 8);
  cg_put_le32(h + 8, version);
  cg_put_le32(h + 12, GRAPH_CGR_HEADER_BYTES);
  cg_put_le64(h + 16, (uint64_t)g->n);
  cg_put_le64(h + 24, (uint64_t)g->m);
  cg_put_le64(h + 32, (uint64_t)g->feat_dim);
  cg_put_le64(h + 40, (uint64_t)g->num_classes);
  cg_put_le64(h + 48, (uint64_t)g->feat_nnz);
  cg_put_le32(h + 56, (g->multilabel ? CGR_FLAG_MULTILABEL : 0) | (g->sparse_feat ? CGR_FLAG_SPARSE : 0));
  cg_put_le32(h + 60, GRAPH_CGR_NUM_SECTIONS);
  for (int s = 0; s < GRAPH_CGR_NUM_SECTIONS; s++) {
    unsigned char *e = h + CGR_SECTION_TABLE + 24 * s;
    cg_put_le64(e, off[s]);
    cg_put_le64(e + 8, size[s]);
    cg_put_le32(e + 16, crc[s]);
  }
  memcpy(h + CGR_NAME_OFFSET, g->name, strnlen(g->name, 15));
  cg_put_le32(h + CGR_BLOCK_SHIFT_OFFSET, block_shift);
  cg_put_le32(h + CGR_CRC_OFFSET, (uint32_t)crc32(0L, h, CGR_CRC_OFFSET));

  struct cg_outfile out;
  int ost = cg_outfile_open(&out, path, "graph");
  if (ost != CG_OK) {
    cg_free(table);
    return ost;
  }
  FILE *fp = out.fp;
  static const unsigned char zeros[64];
  uint64_t pos = 0;
  if (write_all(fp, h, sizeof h)) goto io_fail;
  pos = sizeof h;
  for (int s = 0; s < GRAPH_CGR_NUM_SECTIONS; s++) {
    if (size[s] == 0) continue;
    if (write_all(fp, zeros, (size_t)(off[s] - pos))) goto io_fail;
    if (write_all(fp, ptr[s], (size_t)size[s])) goto io_fail;
    pos = off[s] + size[s];
  }
  if (table) { /* little-endian host (graph_internal.h): the u32 entries as they are */
    if (write_all(fp, zeros, (size_t)(((pos + 63) & ~(uint64_t)63) - pos))) goto io_fail;
    if (write_all(fp, table, (size_t)(4 * (nent + 1)))) goto io_fail;
  }
  if (fflush(fp) != 0) goto io_fail;
  cg_free(table);
  return cg_outfile_commit(&out);

io_fail:;
  cg_free(table);
  const int st = cg_err_set(CG_ERR_IO, "%s: write failed: %s (is the disk full?)",
                            out.tmp ? out.tmp : out.path, strerror(errno));
  cg_outfile_abort(&out);
  return st;
}
