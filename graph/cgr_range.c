/* graph/cgr_range.c — ranged reading of a .cgr file: the rows one rank needs, read with
 * pread and verified, instead of the whole file (graph.h, "ranged reading").
 *
 * Every read goes through one loop over "spans" (byte ranges of one section, ascending,
 * never overlapping, each with its destination): the span's bytes are taken from units
 * of the section that are read whole and verified before anything is copied out.
 * Version 2: a unit is a block of the file's block CRC table, read only when a span
 * touches it and checked against its CRC. Version 1: there is nothing smaller than the
 * section to verify, so the units are 1 MiB chunks streamed from the start of the section
 * to its end, the CRC accumulated, and the read fails at the end if it does not match
 * (the caller's outputs are then discarded). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/endian.h"
#include "core/log.h"
#include "core/ops.h" /* cg_host_mem_info */
#include "core/status.h"
#include "graph/graph.h"
#include "graph_internal.h"

#define CGR_V1_CHUNK ((uint64_t)1 << 20)

struct graph_cgr {
  int fd;
  char *path;
  struct cgr_header h;
  uint32_t *bcrc;    /* v2: every block's CRC (the table without its own CRC) */
  uint32_t checksum; /* graph_load_cgr's, from the stored section CRCs */
  uint64_t bytes_read;
};

static int pread_all(struct graph_cgr *f, void *dst, uint64_t len, uint64_t off) {
  unsigned char *p = dst;
  uint64_t got = 0;
  while (got < len) {
    ssize_t r = pread(f->fd, p + got, (size_t)(len - got), (off_t)(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      return cg_err_set(CG_ERR_IO, "%s: read of %llu bytes at offset %llu failed after %llu: %s", f->path,
                        (unsigned long long)len, (unsigned long long)off, (unsigned long long)got,
                        r < 0 ? strerror(errno) : "unexpected end of file");
    got += (uint64_t)r;
  }
  f->bytes_read += len;
  return CG_OK;
}

void graph_cgr_close(struct graph_cgr **pf) {
  if (!pf || !*pf) return;
  struct graph_cgr *f = *pf;
  if (f->fd >= 0) close(f->fd);
  free(f->path);
  cg_free(f->bcrc);
  cg_free(f);
  *pf = NULL;
}

int graph_cgr_open(const char *path, struct graph_cgr **out) {
  *out = NULL;
  int st = CG_OK;
  struct graph_cgr *f = cg_calloc(1, sizeof *f, "open .cgr file");
  if (!f) return CG_ERR_NOMEM;
  f->fd = -1;
  f->path = strdup(path);
  if (!f->path) {
    st = CG_ERR_NOMEM;
    goto fail;
  }
  f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f->fd < 0) {
    st = cg_err_set(CG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    goto fail;
  }
  struct stat sb;
  if (fstat(f->fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    st = cg_err_set(CG_ERR_IO, "%s: not a regular file (a graph is read with random access)", path);
    goto fail;
  }
  unsigned char hb[GRAPH_CGR_HEADER_BYTES];
  memset(hb, 0, sizeof hb);
  const uint64_t fsize = (uint64_t)sb.st_size;
  TRY_GOTO(pread_all(f, hb, fsize < sizeof hb ? fsize : sizeof hb, 0), fail);
  TRY_GOTO(graph_cgr_header_parse(path, hb, fsize, &f->h), fail);
  if (f->h.version == 2) {
    const uint64_t nent = f->h.table_bytes / 4 - 1;
    f->bcrc = cg_malloc((size_t)(nent + 1) * 4, "block CRC table");
    if (!f->bcrc) {
      st = CG_ERR_NOMEM;
      goto fail;
    }
    TRY_GOTO(pread_all(f, f->bcrc, f->h.table_bytes, f->h.table_off), fail);
    uint32_t tcrc = graph_crc32(f->bcrc, (size_t)(4 * nent));
    if (tcrc != f->bcrc[nent]) {
      st = cg_err_set(CG_ERR_FORMAT,
                      "%s: block CRC table CRC-32 mismatch: stored 0x%08x, computed 0x%08x (version "
                      "2: the table is corrupt)",
                      path, f->bcrc[nent], tcrc);
      goto fail;
    }
  }
  f->checksum = graph_checksum_from_crcs(f->h.crc, f->h.n, f->h.m, f->h.f, f->h.c);
  *out = f;
  return CG_OK;
fail:
  graph_cgr_close(&f);
  return st;
}

void graph_cgr_info(const struct graph_cgr *f, struct graph *g) {
  memset(g, 0, sizeof *g);
  memcpy(g->name, f->h.name, sizeof g->name);
  g->n = (int64_t)f->h.n;
  g->m = (int64_t)f->h.m;
  g->feat_dim = (int64_t)f->h.f;
  g->feat_nnz = (int64_t)f->h.nnz;
  g->sparse_feat = f->h.sparse;
  g->num_classes = (int64_t)f->h.c;
  g->multilabel = f->h.multilabel;
  g->checksum = f->checksum;
}

unsigned graph_cgr_version(const struct graph_cgr *f) { return f->h.version; }
unsigned graph_cgr_block_shift(const struct graph_cgr *f) { return f->h.version == 1 ? 0 : f->h.block_shift; }
uint64_t graph_cgr_bytes_read(const struct graph_cgr *f) { return f->bytes_read; }

/* ---- the span loop ------------------------------------------------------------------- */

/* Span i of a read: bytes [lo, hi) of the section into dst. */
typedef void (*span_fn)(const void *ctx, int64_t i, uint64_t *lo, uint64_t *hi, void **dst);

struct unit_reader {
  struct graph_cgr *f;
  int s;
  uint64_t unit, nunits; /* unit bytes and count */
  unsigned char *buf;
  int64_t cur;           /* unit in buf, -1 none */
  uint64_t next;         /* v1: the next unit to stream */
  uLong crc;             /* v1: CRC of units [0, next) */
};

static uint64_t unit_len(const struct unit_reader *r, uint64_t k) {
  uint64_t size = r->f->h.size[r->s], lo = k * r->unit;
  return size - lo < r->unit ? size - lo : r->unit;
}

static int unit_load(struct unit_reader *r, uint64_t k) {
  struct graph_cgr *f = r->f;
  const uint64_t base = f->h.off[r->s];
  if (f->h.version == 1) {
    while (r->next <= k) {
      uint64_t len = unit_len(r, r->next);
      TRY(pread_all(f, r->buf, len, base + r->next * r->unit));
      r->crc = crc32(r->crc, r->buf, (uInt)len);
      r->next++;
    }
  } else {
    uint64_t len = unit_len(r, k);
    TRY(pread_all(f, r->buf, len, base + k * r->unit));
    uint32_t c = graph_crc32(r->buf, (size_t)len), stored = f->bcrc[f->h.bfirst[r->s] + k];
    if (c != stored)
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: section %d (%s) block %llu CRC-32 mismatch: stored 0x%08x, computed "
                        "0x%08x (the block is corrupt)",
                        f->path, r->s, graph_section_names[r->s], (unsigned long long)k, stored, c);
  }
  r->cur = (int64_t)k;
  return CG_OK;
}

static int read_spans(struct graph_cgr *f, int s, span_fn fn, const void *ctx, int64_t nspans) {
  if (nspans == 0 || f->h.size[s] == 0) return CG_OK;
  struct unit_reader r;
  memset(&r, 0, sizeof r);
  r.f = f;
  r.s = s;
  r.unit = f->h.version == 1 ? CGR_V1_CHUNK : (uint64_t)1 << f->h.block_shift;
  r.nunits = (f->h.size[s] + r.unit - 1) / r.unit;
  r.cur = -1;
  r.crc = crc32(0L, Z_NULL, 0);
  const uint64_t buf_bytes = f->h.size[s] < r.unit ? f->h.size[s] : r.unit;
  r.buf = cg_malloc((size_t)buf_bytes, "section read buffer");
  if (!r.buf) return CG_ERR_NOMEM;
  int st = CG_OK;
  uint64_t prev_hi = 0;
  for (int64_t i = 0; i < nspans && st == CG_OK; i++) {
    uint64_t lo, hi;
    void *dst;
    fn(ctx, i, &lo, &hi, &dst);
    if (lo > hi || hi > f->h.size[s] || lo < prev_hi) {
      st = cg_err_set(CG_ERR_INTERNAL, "%s: section %s: span %lld [%llu, %llu) out of order or range",
                      f->path, graph_section_names[s], (long long)i, (unsigned long long)lo,
                      (unsigned long long)hi);
      break;
    }
    prev_hi = hi;
    unsigned char *d = dst;
    for (uint64_t pos = lo; pos < hi;) {
      uint64_t k = pos / r.unit;
      if (r.cur != (int64_t)k && (st = unit_load(&r, k)) != CG_OK) break;
      uint64_t end = (k + 1) * r.unit < hi ? (k + 1) * r.unit : hi;
      memcpy(d, r.buf + (pos - k * r.unit), (size_t)(end - pos));
      d += end - pos;
      pos = end;
    }
  }
  if (st == CG_OK && f->h.version == 1) {
    if (r.next < r.nunits) st = unit_load(&r, r.nunits - 1);
    if (st == CG_OK && (uint32_t)r.crc != f->h.crc[s])
      st = cg_err_set(CG_ERR_FORMAT,
                      "%s: section %d (%s) CRC-32 mismatch: stored 0x%08x, computed 0x%08x (check 5: "
                      "the section is corrupt)",
                      f->path, s, graph_section_names[s], f->h.crc[s], (uint32_t)r.crc);
  }
  cg_free(r.buf);
  return st;
}

/* One span: the whole [lo, hi) into dst. */
struct one_span {
  uint64_t lo, hi;
  void *dst;
};
static void one_span_fn(const void *ctx, int64_t i, uint64_t *lo, uint64_t *hi, void **dst) {
  (void)i;
  const struct one_span *o = ctx;
  *lo = o->lo;
  *hi = o->hi;
  *dst = o->dst;
}

/* Fixed-width rows: row rows[i] is bytes [w*r, w*(r+1)) into base + w*i. */
struct row_spans {
  const int32_t *rows;
  const int64_t *idx; /* instead of rows when not NULL */
  uint64_t width;
  unsigned char *base;
};
static void row_span_fn(const void *ctx, int64_t i, uint64_t *lo, uint64_t *hi, void **dst) {
  const struct row_spans *o = ctx;
  uint64_t r = o->idx ? (uint64_t)o->idx[i] : (uint64_t)o->rows[i];
  *lo = o->width * r;
  *hi = *lo + o->width;
  *dst = o->base + o->width * (uint64_t)i;
}

/* CSR rows: row rows[i] is elements [rp[r], rp[r+1]) into base + elem * out_rp[i]. */
struct csr_spans {
  const int32_t *rows;
  const int64_t *rp;     /* global row pointers, indexed by r (NULL: rp_lo/rp_hi per i) */
  const int64_t *rp_lo, *rp_hi;
  const int64_t *out_rp;
  uint64_t elem;
  unsigned char *base;
};
static void csr_span_fn(const void *ctx, int64_t i, uint64_t *lo, uint64_t *hi, void **dst) {
  const struct csr_spans *o = ctx;
  int64_t a, b;
  if (o->rp) {
    a = o->rp[o->rows[i]];
    b = o->rp[o->rows[i] + 1];
  } else {
    a = o->rp_lo[i];
    b = o->rp_hi[i];
  }
  *lo = o->elem * (uint64_t)a;
  *hi = o->elem * (uint64_t)b;
  *dst = o->base + o->elem * (uint64_t)o->out_rp[i];
}

/* ---- the reads ----------------------------------------------------------------------- */

int graph_cgr_read_rowptr(struct graph_cgr *f, int64_t *rowptr) {
  const uint64_t n = f->h.n;
  struct one_span sp = {0, 8 * (n + 1), rowptr};
  TRY(read_spans(f, GRAPH_SEC_ROWPTR, one_span_fn, &sp, 1));
  if (rowptr[0] != 0 || rowptr[n] != (int64_t)f->h.m)
    return cg_err_set(CG_ERR_FORMAT, "%s: ROWPTR[0] = %lld and ROWPTR[n] = %lld, expected 0 and m = %lld "
                      "(check 6)", f->path, (long long)rowptr[0], (long long)rowptr[n], (long long)f->h.m);
  for (uint64_t r = 0; r < n; r++)
    if (rowptr[r + 1] < rowptr[r])
      return cg_err_set(CG_ERR_FORMAT, "%s: ROWPTR decreases at row %llu (check 6, row pointers must "
                        "never decrease)", f->path, (unsigned long long)r);
  return CG_OK;
}

int graph_cgr_read_structure(struct graph_cgr *f, struct graph *g) {
  int st = CG_OK;
  graph_cgr_info(f, g);
  g->rowptr = cg_malloc((size_t)(f->h.n + 1) * sizeof(int64_t), "graph row pointers");
  g->colidx = cg_malloc((size_t)(f->h.m ? f->h.m : 1) * sizeof(int32_t), "graph column indices");
  if (!g->rowptr || !g->colidx) {
    st = CG_ERR_NOMEM;
    goto fail;
  }
  TRY_GOTO(graph_cgr_read_rowptr(f, g->rowptr), fail);
  struct one_span sp = {0, 4 * f->h.m, g->colidx};
  TRY_GOTO(read_spans(f, GRAPH_SEC_COLIDX, one_span_fn, &sp, 1), fail);
  TRY_GOTO(graph_check_csr(f->path, "ROWPTR", "COLIDX", g->rowptr, g->colidx, g->n, g->n, g->m, "m", 1),
           fail);
  TRY_GOTO(graph_check_symmetric(f->path, g), fail);
  return CG_OK;
fail:
  graph_free(g);
  return st;
}

void graph_rows_free(struct graph_rows *r) {
  if (!r) return;
  cg_free(r->rowptr);
  cg_free(r->colidx);
  cg_free(r->feat);
  cg_free(r->labels);
  cg_free(r->mlabels);
  cg_free(r->split);
  cg_csr_free(&r->feat_csr);
  memset(r, 0, sizeof *r);
}

/* Sparse feature rows, expanded into out->feat (or, to_csr, kept as out->feat_csr):
 * FEAT_ROWPTR at r and r + 1 of every row (a sorted list without repeats, so that the
 * spans never overlap), then the rows' columns and values. */
static int read_sparse_feat(struct graph_cgr *f, const int32_t *rows, int64_t nrows, int rownorm,
                            int to_csr, struct graph_rows *out) {
  int st = CG_OK;
  const int64_t fd = (int64_t)f->h.f, nnz = (int64_t)f->h.nnz;
  int64_t *idx = cg_malloc((size_t)(2 * nrows) * sizeof *idx, "feature row pointer indices");
  int64_t *at = cg_malloc((size_t)nrows * sizeof *at, "feature row pointer positions");
  int64_t *val = cg_malloc((size_t)(2 * nrows) * sizeof *val, "feature row pointers");
  int64_t *orp = cg_malloc((size_t)(nrows + 1) * sizeof *orp, "feature row offsets");
  int64_t *lo = cg_malloc((size_t)nrows * sizeof *lo, "feature row starts");
  int64_t *hi = cg_malloc((size_t)nrows * sizeof *hi, "feature row ends");
  int32_t *col = NULL;
  float *v = NULL;
  if (!idx || !at || !val || !orp || !lo || !hi) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  int64_t ni = 0;
  for (int64_t i = 0; i < nrows; i++) {
    if (ni == 0 || idx[ni - 1] != rows[i]) idx[ni++] = rows[i];
    at[i] = ni - 1;
    idx[ni++] = (int64_t)rows[i] + 1;
  }
  struct row_spans rs = {NULL, idx, 8, (unsigned char *)val};
  TRY_GOTO(read_spans(f, GRAPH_SEC_FEAT_ROWPTR, row_span_fn, &rs, ni), done);
  orp[0] = 0;
  for (int64_t i = 0; i < nrows; i++) {
    lo[i] = val[at[i]];
    hi[i] = val[at[i] + 1];
    if (lo[i] < 0 || hi[i] < lo[i] || hi[i] > nnz) {
      st = cg_err_set(CG_ERR_FORMAT, "%s: FEAT_ROWPTR of row %d is [%lld, %lld), expected 0 <= start <= "
                      "end <= feat_nnz = %lld (check 6)", f->path, rows[i], (long long)lo[i],
                      (long long)hi[i], (long long)nnz);
      goto done;
    }
    /* rows increase, so a start below the previous row's end means FEAT_ROWPTR
     * decreases in between (the rows' spans would overlap) */
    if (i > 0 && lo[i] < hi[i - 1]) {
      st = cg_err_set(CG_ERR_FORMAT, "%s: FEAT_ROWPTR decreases between rows %d and %d: FEAT_ROWPTR[%lld] = "
                      "%lld > FEAT_ROWPTR[%d] = %lld (check 6, row pointers must never decrease)", f->path,
                      rows[i - 1], rows[i], (long long)rows[i - 1] + 1, (long long)hi[i - 1], rows[i],
                      (long long)lo[i]);
      goto done;
    }
    orp[i + 1] = orp[i] + hi[i] - lo[i];
  }
  const int64_t t = orp[nrows];
  col = cg_malloc((size_t)(t ? t : 1) * sizeof *col, "feature columns of the rows");
  v = cg_malloc((size_t)(t ? t : 1) * sizeof *v, "feature values of the rows");
  if (!col || !v) {
    st = CG_ERR_NOMEM;
    goto done;
  }
  struct csr_spans cs = {rows, NULL, lo, hi, orp, 4, (unsigned char *)col};
  TRY_GOTO(read_spans(f, GRAPH_SEC_FEAT_COLIDX, csr_span_fn, &cs, nrows), done);
  cs.base = (unsigned char *)v;
  TRY_GOTO(read_spans(f, GRAPH_SEC_FEAT_VALUES, csr_span_fn, &cs, nrows), done);
  if (!to_csr) memset(out->feat, 0, (size_t)(nrows * fd) * sizeof(float));
  for (int64_t i = 0; i < nrows; i++) {
    if (rownorm) graph_feat_row_normalise(v + orp[i], orp[i + 1] - orp[i]);
    int64_t prev = -1;
    for (int64_t k = orp[i]; k < orp[i + 1]; k++) {
      if (col[k] < 0 || col[k] >= fd || col[k] <= prev) {
        st = cg_err_set(CG_ERR_FORMAT, "%s: FEAT_COLIDX of row %d: column %d after %lld, expected "
                        "strictly increasing columns in [0, %lld) (check 6)", f->path, rows[i], col[k],
                        (long long)prev, (long long)fd);
        goto done;
      }
      prev = col[k];
      if (!to_csr) out->feat[i * fd + col[k]] = v[k];
    }
  }
  if (to_csr) { /* the arrays move into the CSR */
    out->feat_csr.nrows = nrows;
    out->feat_csr.ncols = fd;
    out->feat_csr.nnz = t;
    out->feat_csr.rowptr = orp;
    out->feat_csr.colidx = col;
    out->feat_csr.vals = v;
    orp = NULL;
    col = NULL;
    v = NULL;
  }
done:
  cg_free(idx);
  cg_free(at);
  cg_free(val);
  cg_free(orp);
  cg_free(lo);
  cg_free(hi);
  cg_free(col);
  cg_free(v);
  return st;
}

/* The rows' dense features as out->feat_csr (their nonzeros), feat freed. */
static int dense_rows_to_csr(struct graph_rows *o) {
  const int64_t n = o->nrows, fd = o->feat_dim;
  int64_t nnz = 0;
  for (int64_t i = 0; i < n * fd; i++) nnz += o->feat[i] != 0.0f;
  TRY(cg_csr_alloc(&o->feat_csr, n, fd, nnz, 1));
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) {
    for (int64_t j = 0; j < fd; j++)
      if (o->feat[i * fd + j] != 0.0f) {
        o->feat_csr.colidx[k] = (int32_t)j;
        o->feat_csr.vals[k++] = o->feat[i * fd + j];
      }
    o->feat_csr.rowptr[i + 1] = k;
  }
  cg_free(o->feat);
  o->feat = NULL;
  return CG_OK;
}

/* The per-row checks graph_check makes (symmetry apart). */
static int check_rows(const struct graph_cgr *f, const int32_t *rows, const struct graph_rows *o) {
  const int64_t n = (int64_t)f->h.n, c = (int64_t)f->h.c;
  for (int64_t i = 0; i < o->nrows; i++) {
    if (o->colidx) {
      int64_t prev = -1;
      for (int64_t k = o->rowptr[i]; k < o->rowptr[i + 1]; k++) {
        int64_t u = o->colidx[k];
        if (u < 0 || u >= n || u <= prev || u == rows[i])
          return cg_err_set(CG_ERR_FORMAT, "%s: COLIDX row %d holds %lld after %lld, expected strictly "
                            "increasing ids in [0, %lld) without the row itself (check 6)", f->path,
                            rows[i], (long long)u, (long long)prev, (long long)n);
        prev = u;
      }
    }
    if (o->feat) {
      for (int64_t j = 0; j < o->feat_dim; j++)
        if (!isfinite(o->feat[i * o->feat_dim + j]))
          return cg_err_set(CG_ERR_FORMAT, "%s: feature %lld of vertex %d is not finite; feature values "
                            "must be finite", f->path, (long long)j, rows[i]);
    } else if (o->feat_csr.rowptr) { /* (none: read without features) */
      for (int64_t k = o->feat_csr.rowptr[i]; k < o->feat_csr.rowptr[i + 1]; k++)
        if (!isfinite(o->feat_csr.vals[k]))
          return cg_err_set(CG_ERR_FORMAT, "%s: feature %d of vertex %d is not finite; feature values "
                            "must be finite", f->path, o->feat_csr.colidx[k], rows[i]);
    }
    if (o->split[i] > 3)
      return cg_err_set(CG_ERR_FORMAT, "%s: split value %u at vertex %d, expected 0 (none), 1 (train), "
                        "2 (val) or 3 (test)", f->path, (unsigned)o->split[i], rows[i]);
    if (o->multilabel) {
      for (int64_t k = 0; k < c; k++)
        if (o->mlabels[i * c + k] > 1)
          return cg_err_set(CG_ERR_FORMAT, "%s: multilabel LABELS of vertex %d, class %lld = %u, label "
                            "out of range: expected 0 or 1", f->path, rows[i], (long long)k,
                            (unsigned)o->mlabels[i * c + k]);
    } else {
      if (o->labels[i] < -1 || o->labels[i] >= c)
        return cg_err_set(CG_ERR_FORMAT, "%s: label out of range at vertex %d: %d, expected a value in "
                          "[-1, %lld)", f->path, rows[i], o->labels[i], (long long)c);
      if (o->labels[i] == -1 && o->split[i] != GRAPH_SPLIT_NONE)
        return cg_err_set(CG_ERR_FORMAT, "%s: unlabelled vertex in a split: vertex %d has label -1 but "
                          "split %u, expected split 0", f->path, rows[i], (unsigned)o->split[i]);
    }
  }
  return CG_OK;
}

int graph_dense_feat_check(const char *what, int64_t rows, int64_t feat_dim, int stored_sparse) {
  size_t avail = 0;
  const double bytes = (double)rows * (double)feat_dim * sizeof(float);
  if (cg_host_mem_info(&avail, NULL) != CG_OK) { /* not Linux: the allocation says it */
    cg_err_clear();
    return CG_OK;
  }
  if (bytes <= (double)avail) return CG_OK;
  return cg_err_set(CG_ERR_NOMEM, "%s: %lld dense feature rows of feat_dim %lld take %.3g GB (float32), more than "
                    "the %.3g GB of memory this host has available%s", what, (long long)rows, (long long)feat_dim,
                    bytes / 1e9, (double)avail / 1e9,
                    stored_sparse ? "; the file stores them sparse: keep them so (capgnn train --sparse-features "
                                    "on, or auto)" : "");
}

/* The features of rows (out->nrows of them, feat_dim set): dense in out->feat, or with
 * to_csr as CSR in out->feat_csr. */
static int read_rows_features(struct graph_cgr *f, const int32_t *rows, int64_t nrows, int rownorm, int to_csr,
                              struct graph_rows *out) {
  const int64_t fd = (int64_t)f->h.f;
  const size_t nr = (size_t)(nrows ? nrows : 1);
  /* sparse rows never expanded; a dense file's rows are read dense, then converted */
  if (!(to_csr && f->h.sparse)) {
    TRY(graph_dense_feat_check(f->path, nrows, fd, f->h.sparse));
    out->feat = cg_malloc(nr * (size_t)fd * sizeof(float), "feature rows");
    if (!out->feat) return CG_ERR_NOMEM;
  }
  if (f->h.sparse) {
    if (nrows) TRY(read_sparse_feat(f, rows, nrows, rownorm, to_csr, out));
    if (to_csr && !nrows) TRY(cg_csr_alloc(&out->feat_csr, 0, fd, 0, 1));
  } else {
    struct row_spans rs = {rows, NULL, 4 * (uint64_t)fd, (unsigned char *)out->feat};
    TRY(read_spans(f, GRAPH_SEC_FEAT_VALUES, row_span_fn, &rs, nrows));
    if (rownorm)
      for (int64_t i = 0; i < nrows; i++) graph_feat_row_normalise(out->feat + i * fd, fd);
    if (to_csr) TRY(dense_rows_to_csr(out));
  }
  return CG_OK;
}

int graph_cgr_read_rows_feat(struct graph_cgr *f, const int32_t *rows, int64_t nrows, unsigned what,
                             struct graph_rows *out) {
  if (out->nrows != nrows || out->feat || out->feat_csr.rowptr)
    return cg_err_set(CG_ERR_ARG, "graph_cgr_read_rows_feat: %lld rows read without features expected, got %lld%s",
                      (long long)nrows, (long long)out->nrows, out->feat || out->feat_csr.rowptr ? " with features" : "");
  for (int64_t i = 1; i < nrows; i++)
    if (rows[i] <= rows[i - 1])
      return cg_err_set(CG_ERR_ARG, "graph_cgr_read_rows_feat: rows not strictly increasing at %lld", (long long)i);
  int st = read_rows_features(f, rows, nrows, (what & GRAPH_ROWS_FEAT_ROWNORM) != 0,
                              (what & GRAPH_ROWS_FEAT_SPARSE) != 0, out);
  if (st == CG_OK) { /* finite, as graph_cgr_read_rows checks them (the rest was checked then) */
    struct graph_rows feats = *out;
    feats.colidx = NULL;
    st = check_rows(f, rows, &feats);
  }
  if (st != CG_OK) { /* the rows stay as they were read */
    cg_free(out->feat);
    out->feat = NULL;
    cg_csr_free(&out->feat_csr);
  }
  return st;
}

int graph_cgr_read_rows(struct graph_cgr *f, const int64_t *rowptr, const int32_t *rows, int64_t nrows,
                        unsigned what, struct graph_rows *out) {
  const int want_adj = (what & GRAPH_ROWS_ADJ) != 0, rownorm = (what & GRAPH_ROWS_FEAT_ROWNORM) != 0;
  const int to_csr = (what & GRAPH_ROWS_FEAT_SPARSE) != 0;
  int st = CG_OK;
  memset(out, 0, sizeof *out);
  const int64_t n = (int64_t)f->h.n, fd = (int64_t)f->h.f, c = (int64_t)f->h.c;
  for (int64_t i = 0; i < nrows; i++)
    if (rows[i] < 0 || rows[i] >= n || (i > 0 && rows[i] <= rows[i - 1]))
      return cg_err_set(CG_ERR_ARG, "graph_cgr_read_rows: row %lld is %d, expected strictly increasing "
                        "ids in [0, %lld)", (long long)i, rows[i], (long long)n);
  out->nrows = nrows;
  out->feat_dim = fd;
  out->num_classes = c;
  out->multilabel = f->h.multilabel;
  const size_t nr = (size_t)(nrows ? nrows : 1);
  out->split = cg_malloc(nr, "split of the rows");
  if (f->h.multilabel)
    out->mlabels = cg_malloc(nr * (size_t)c, "multi-labels of the rows");
  else
    out->labels = cg_malloc(nr * sizeof(int32_t), "labels of the rows");
  if (!out->split || (f->h.multilabel ? !out->mlabels : !out->labels)) {
    st = CG_ERR_NOMEM;
    goto fail;
  }
  if (want_adj) {
    out->rowptr = cg_malloc((nr + 1) * sizeof(int64_t), "row pointers of the rows");
    if (!out->rowptr) {
      st = CG_ERR_NOMEM;
      goto fail;
    }
    out->rowptr[0] = 0;
    for (int64_t i = 0; i < nrows; i++) out->rowptr[i + 1] = out->rowptr[i] + rowptr[rows[i] + 1] - rowptr[rows[i]];
    out->colidx = cg_malloc((size_t)(out->rowptr[nrows] ? out->rowptr[nrows] : 1) * sizeof(int32_t),
                            "neighbours of the rows");
    if (!out->colidx) {
      st = CG_ERR_NOMEM;
      goto fail;
    }
    struct csr_spans cs = {rows, rowptr, NULL, NULL, out->rowptr, 4, (unsigned char *)out->colidx};
    TRY_GOTO(read_spans(f, GRAPH_SEC_COLIDX, csr_span_fn, &cs, nrows), fail);
  }
  if (!(what & GRAPH_ROWS_NO_FEAT)) TRY_GOTO(read_rows_features(f, rows, nrows, rownorm, to_csr, out), fail);
  struct row_spans ls = {rows, NULL, f->h.multilabel ? (uint64_t)c : 4,
                         f->h.multilabel ? out->mlabels : (unsigned char *)out->labels};
  TRY_GOTO(read_spans(f, GRAPH_SEC_LABELS, row_span_fn, &ls, nrows), fail);
  struct row_spans ss = {rows, NULL, 1, out->split};
  TRY_GOTO(read_spans(f, GRAPH_SEC_SPLIT, row_span_fn, &ss, nrows), fail);
  TRY_GOTO(check_rows(f, rows, out), fail);
  return CG_OK;
fail:
  graph_rows_free(out);
  return st;
}
