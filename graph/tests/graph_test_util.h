/* graph/tests/graph_test_util.h — helpers shared by the graph unit tests: temporary
 * folders, whole-file I/O, .cgr byte surgery (with CRC fix-ups) and graph equality. */
#ifndef CAPGNN_GRAPH_TESTS_UTIL_H
#define CAPGNN_GRAPH_TESTS_UTIL_H

#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "graph/graph.h"

/* A fresh folder under $TMPDIR (or /tmp); the caller removes it with gt_rmdir. */
static inline char *gt_mkdtemp(void) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  char *p = malloc(strlen(base) + 32);
  if (!p) return NULL;
  sprintf(p, "%s/capgnn_graph_XXXXXX", base);
  if (!mkdtemp(p)) {
    free(p);
    return NULL;
  }
  return p;
}

/* Removes the files the tests create (flat folder) and the folder itself. */
static inline void gt_rmdir(char *dir) {
  if (!dir) return;
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
  free(dir);
}

static inline int gt_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* A temporary of `path` left behind (core/outfile.h names them PATH.tmp.XXXXXX). */
static inline int gt_tmp_exists(const char *path) {
  char pattern[4300];
  snprintf(pattern, sizeof pattern, "%s.tmp*", path);
  glob_t gl;
  const int found = glob(pattern, 0, NULL, &gl) == 0 && gl.gl_pathc > 0;
  globfree(&gl);
  return found;
}

static inline unsigned char *gt_read(const char *path, size_t *size) {
  *size = 0;
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  fseek(fp, 0, SEEK_END);
  long len = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
  if (b && fread(b, 1, (size_t)len, fp) != (size_t)len) {
    free(b);
    b = NULL;
  }
  fclose(fp);
  *size = len > 0 ? (size_t)len : 0;
  return b;
}

static inline int gt_write(const char *path, const void *b, size_t size) {
  FILE *fp = fopen(path, "wb");
  if (!fp) return -1;
  int ok = fwrite(b, 1, size, fp) == size;
  return (fclose(fp) == 0 && ok) ? 0 : -1;
}

static inline uint32_t gt_u32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
static inline uint64_t gt_u64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}
static inline void gt_put_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void gt_put_u64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

/* Section table entry fields of section s. */
static inline unsigned char *gt_sec_entry(unsigned char *b, int s) { return b + 64 + 24 * s; }
static inline uint64_t gt_sec_off(unsigned char *b, int s) { return gt_u64(gt_sec_entry(b, s)); }
static inline uint64_t gt_sec_size(unsigned char *b, int s) { return gt_u64(gt_sec_entry(b, s) + 8); }
static inline unsigned char *gt_sec(unsigned char *b, int s) { return b + gt_sec_off(b, s); }

/* Recompute the CRC of section s and store it in the table (then fix the header). */
static inline void gt_fix_sec_crc(unsigned char *b, int s) {
  uint64_t size = gt_sec_size(b, s);
  uint32_t c = size ? (uint32_t)crc32(0L, gt_sec(b, s), (uInt)size) : 0;
  gt_put_u32(gt_sec_entry(b, s) + 16, c);
}
static inline void gt_fix_header_crc(unsigned char *b) {
  gt_put_u32(b + 252, (uint32_t)crc32(0L, b, 252));
}
static inline void gt_fix_all(unsigned char *b, int s) {
  gt_fix_sec_crc(b, s);
  gt_fix_header_crc(b);
}

/* Arrays of two graphs equal, byte for byte (returns 1), else prints the first difference. */
static inline int gt_same_bytes(const char *what, const void *a, const void *b, size_t n) {
  if (n == 0) return 1;
  if (!a || !b) {
    printf("  %s: one array is NULL\n", what);
    return 0;
  }
  if (memcmp(a, b, n) == 0) return 1;
  const unsigned char *x = a, *y = b;
  size_t i = 0;
  while (x[i] == y[i]) i++;
  printf("  %s: first difference at byte %zu (%u vs %u)\n", what, i, x[i], y[i]);
  return 0;
}

static inline int gt_graph_equal(const struct graph *a, const struct graph *b) {
  int ok = 1;
  if (strcmp(a->name, b->name) || a->n != b->n || a->m != b->m || a->feat_dim != b->feat_dim ||
      a->num_classes != b->num_classes || a->feat_nnz != b->feat_nnz ||
      a->sparse_feat != b->sparse_feat || a->multilabel != b->multilabel) {
    printf("  header fields differ: %s/%s n %lld/%lld m %lld/%lld\n", a->name, b->name,
           (long long)a->n, (long long)b->n, (long long)a->m, (long long)b->m);
    return 0;
  }
  size_t n = (size_t)a->n;
  ok &= gt_same_bytes("rowptr", a->rowptr, b->rowptr, 8 * (n + 1));
  ok &= gt_same_bytes("colidx", a->colidx, b->colidx, 4 * (size_t)a->m);
  if (a->sparse_feat) {
    ok &= gt_same_bytes("feat_rowptr", a->feat_rowptr, b->feat_rowptr, 8 * (n + 1));
    ok &= gt_same_bytes("feat_colidx", a->feat_colidx, b->feat_colidx, 4 * (size_t)a->feat_nnz);
  }
  ok &= gt_same_bytes("feat_values", a->feat_values, b->feat_values, 4 * (size_t)a->feat_nnz);
  if (a->multilabel)
    ok &= gt_same_bytes("mlabels", a->mlabels, b->mlabels, n * (size_t)a->num_classes);
  else
    ok &= gt_same_bytes("labels", a->labels, b->labels, 4 * n);
  ok &= gt_same_bytes("split", a->split, b->split, n);
  if (a->checksum != b->checksum) {
    printf("  checksum 0x%08x vs 0x%08x\n", a->checksum, b->checksum);
    ok = 0;
  }
  return ok;
}

/* Bytes graph_cgr_read_rowptr + graph_cgr_read_rows(rows, GRAPH_ROWS_ADJ) must read from
 * the file whose bytes are `file`. Bytes the reader must read: the header, (v2) the block table, ROWPTR whole, and per
 * section the blocks holding a wanted byte (v2) or the whole section if any byte is
 * wanted (v1). Independent of the reader: from the whole graph and the file's header. */
struct gt_need {
  const unsigned char *file;
  unsigned version;
  uint64_t block;
  uint64_t total;
};
static inline void gt_need_section(struct gt_need *nd, const struct graph *g, int s, const uint64_t *lo,
                         const uint64_t *hi, int64_t cnt) {
  (void)g;
  unsigned char *b = (unsigned char *)nd->file;
  uint64_t size = gt_sec_size(b, s);
  if (size == 0) return;
  if (nd->version == 1) {
    for (int64_t i = 0; i < cnt; i++)
      if (hi[i] > lo[i]) {
        nd->total += size;
        return;
      }
    return;
  }
  uint64_t nb = (size + nd->block - 1) / nd->block;
  char *mark = calloc((size_t)nb, 1);
  if (!mark) abort();
  for (int64_t i = 0; i < cnt; i++)
    for (uint64_t p = lo[i]; p < hi[i]; p++) mark[p / nd->block] = 1;
  for (uint64_t k = 0; k < nb; k++)
    if (mark[k]) nd->total += (k + 1 < nb) ? nd->block : size - k * nd->block;
  free(mark);
}

static inline uint64_t gt_cgr_bytes_needed(const unsigned char *file, const struct graph *g, const int32_t *rows,
                               int64_t nrows) {
  struct gt_need nd = {file, gt_u32(file + 8), 0, 256};
  unsigned char *b = (unsigned char *)file;
  if (nd.version == 2) {
    nd.block = (uint64_t)1 << gt_u32(file + 248);
    uint64_t ent = 0;
    for (int s = 0; s < 7; s++) ent += (gt_sec_size(b, s) + nd.block - 1) / nd.block;
    nd.total += 4 * (ent + 1);
  }
  uint64_t *lo = malloc((size_t)(2 * nrows + 1) * sizeof *lo), *hi = malloc((size_t)(2 * nrows + 1) * sizeof *hi);
  if (!lo || !hi) abort();
  lo[0] = 0;
  hi[0] = 8 * (uint64_t)(g->n + 1);
  gt_need_section(&nd, g, 0, lo, hi, 1);
  for (int64_t i = 0; i < nrows; i++) {
    lo[i] = 4 * (uint64_t)g->rowptr[rows[i]];
    hi[i] = 4 * (uint64_t)g->rowptr[rows[i] + 1];
  }
  gt_need_section(&nd, g, 1, lo, hi, nrows);
  if (g->sparse_feat) {
    for (int64_t i = 0; i < nrows; i++) {
      lo[i] = 8 * (uint64_t)rows[i];
      hi[i] = lo[i] + 16;
    }
    gt_need_section(&nd, g, 2, lo, hi, nrows);
    for (int64_t i = 0; i < nrows; i++) {
      lo[i] = 4 * (uint64_t)g->feat_rowptr[rows[i]];
      hi[i] = 4 * (uint64_t)g->feat_rowptr[rows[i] + 1];
    }
    gt_need_section(&nd, g, 3, lo, hi, nrows);
    gt_need_section(&nd, g, 4, lo, hi, nrows);
  } else {
    for (int64_t i = 0; i < nrows; i++) {
      lo[i] = 4 * (uint64_t)g->feat_dim * (uint64_t)rows[i];
      hi[i] = lo[i] + 4 * (uint64_t)g->feat_dim;
    }
    gt_need_section(&nd, g, 4, lo, hi, nrows);
  }
  uint64_t w = g->multilabel ? (uint64_t)g->num_classes : 4;
  for (int64_t i = 0; i < nrows; i++) {
    lo[i] = w * (uint64_t)rows[i];
    hi[i] = lo[i] + w;
  }
  gt_need_section(&nd, g, 5, lo, hi, nrows);
  for (int64_t i = 0; i < nrows; i++) {
    lo[i] = (uint64_t)rows[i];
    hi[i] = lo[i] + 1;
  }
  gt_need_section(&nd, g, 6, lo, hi, nrows);
  free(lo);
  free(hi);
  return nd.total;
}


#endif
