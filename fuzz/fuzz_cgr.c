/* fuzz/fuzz_cgr.c — the .cgr readers on untrusted bytes: graph_load_cgr (whole file)
 * and the ranged reader (graph_cgr_open, read_rowptr, read_rows with and without
 * adjacency and with each feature layout, read_rows_feat, read_structure), versions 1
 * and 2.
 *
 * Input: one mode byte, then the file. Mode bit 0 set: the harness recomputes every
 * CRC the file holds (sections, v2 blocks and table, header) where the header lets it
 * find them, so that mutations reach the checks behind the CRCs. Bits 1-2: the
 * read_rows flags (ROWNORM, FEAT_SPARSE). Bits 3-7: which rows the ranged reader reads
 * (every k-th row from an offset). A file that graph_load_cgr accepts must read the same
 * through the ranged reader (a differential check: a disagreement aborts). */
#include "fuzz_util.h"

#include "graph/graph.h"

#define HDR 256
#define NSEC 7

static void fix_crcs(uint8_t *b, size_t size) {
  if (size < HDR) return;
  uint32_t version = fuzz_le32(b + 8), shift = fuzz_le32(b + 248);
  uint64_t end = HDR, nb = 0, first[NSEC], nblk[NSEC];
  for (int s = 0; s < NSEC; s++) {
    uint8_t *e = b + 64 + 24 * s;
    uint64_t off = fuzz_le64(e), len = fuzz_le64(e + 8);
    first[s] = nb;
    nblk[s] = 0;
    if (off > size || len > size - off) continue;
    fuzz_put_le32(e + 16, len ? fuzz_crc32(b + off, (size_t)len) : 0);
    if (len && off + len > end) end = off + len;
    if (version == 2 && shift >= 6 && shift <= 30) {
      nblk[s] = (len + ((uint64_t)1 << shift) - 1) >> shift;
      nb += nblk[s];
    }
  }
  if (version == 2 && shift >= 6 && shift <= 30) {
    uint64_t toff = (end + 63) & ~(uint64_t)63, B = (uint64_t)1 << shift;
    if (toff <= size && 4 * (nb + 1) <= size - toff) {
      uint8_t *t = b + toff;
      for (int s = 0; s < NSEC; s++) {
        uint64_t off = fuzz_le64(b + 64 + 24 * s), len = fuzz_le64(b + 72 + 24 * s);
        for (uint64_t k = 0; k < nblk[s]; k++) {
          uint64_t lo = k * B, l = len - lo < B ? len - lo : B;
          fuzz_put_le32(t + 4 * (first[s] + k), fuzz_crc32(b + off + lo, (size_t)l));
        }
      }
      fuzz_put_le32(t + 4 * nb, fuzz_crc32(t, (size_t)(4 * nb)));
    }
  }
  fuzz_put_le32(b + 252, fuzz_crc32(b, 252));
}

#define AGREE(cond)                                                                           \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      fprintf(stderr, "fuzz_cgr: the ranged reader disagrees with graph_load_cgr: %s\n", #cond); \
      abort();                                                                                \
    }                                                                                         \
  } while (0)

/* The rows read by range against the whole-file read of the same file (which
 * accepted it): adjacency, labels, split and, unnormalised, the features. */
static void compare_rows(const struct graph *g, const int32_t *rows, int64_t nrows, const struct graph_rows *r,
                         unsigned feat) {
  const int64_t f = g->feat_dim;
  for (int64_t i = 0; i < nrows; i++) {
    const int64_t v = rows[i], deg = g->rowptr[v + 1] - g->rowptr[v];
    AGREE(r->rowptr[i + 1] - r->rowptr[i] == deg);
    AGREE(memcmp(r->colidx + r->rowptr[i], g->colidx + g->rowptr[v], (size_t)deg * 4) == 0);
    AGREE(r->split[i] == g->split[v]);
    if (g->multilabel)
      AGREE(memcmp(r->mlabels + i * g->num_classes, g->mlabels + v * g->num_classes, (size_t)g->num_classes) == 0);
    else
      AGREE(r->labels[i] == g->labels[v]);
    if (feat & GRAPH_ROWS_FEAT_ROWNORM) continue;
    if (feat & GRAPH_ROWS_FEAT_SPARSE) {
      const struct cg_csr *c = &r->feat_csr;
      if (g->sparse_feat) {
        const int64_t lo = g->feat_rowptr[v], len = g->feat_rowptr[v + 1] - lo;
        AGREE(c->rowptr[i + 1] - c->rowptr[i] == len);
        AGREE(memcmp(c->colidx + c->rowptr[i], g->feat_colidx + lo, (size_t)len * 4) == 0);
        AGREE(memcmp(c->vals + c->rowptr[i], g->feat_values + lo, (size_t)len * 4) == 0);
      }
    } else if (!g->sparse_feat) {
      AGREE(memcmp(r->feat + i * f, g->feat_values + v * f, (size_t)f * 4) == 0);
    }
  }
}

static void ranged(const char *path, unsigned mode, const struct graph *whole) {
  struct graph_cgr *f = NULL;
  if (FUZZ(graph_cgr_open(path, &f)) != 0) {
    AGREE(!whole);
    return;
  }
  struct graph hdr;
  graph_cgr_info(f, &hdr);
  (void)graph_cgr_version(f);
  (void)graph_cgr_block_shift(f);
  int64_t *rowptr = malloc((size_t)(hdr.n + 1) * sizeof *rowptr);
  int32_t *rows = malloc((size_t)hdr.n * sizeof *rows);
  const int rp_ok = rowptr && rows && FUZZ(graph_cgr_read_rowptr(f, rowptr)) == 0;
  AGREE(rp_ok || !whole);
  if (rp_ok) {
    const int64_t step = 1 + ((mode >> 3) & 3), from = (mode >> 5) % step;
    int64_t nrows = 0;
    for (int64_t v = from; v < hdr.n; v += step) rows[nrows++] = (int32_t)v;
    /* Dense rows of a sparse file take nrows x feat_dim floats whatever the file holds
     * (feat_dim < 2^31 is all FORMAT.md bounds): the caller's choice (runtime/local.c
     * picks sparse rows for sparse files unless told --sparse-features off), not a
     * reading of the file, so large ones are read sparse here. */
    const int dense_ok = !hdr.sparse_feat || (uint64_t)nrows * (uint64_t)hdr.feat_dim <= ((uint64_t)1 << 22);
    const unsigned feat = (mode & 2 ? GRAPH_ROWS_FEAT_ROWNORM : 0) |
                          (mode & 4 || !dense_ok ? GRAPH_ROWS_FEAT_SPARSE : 0);
    struct graph_rows r;
    const int rows_ok = FUZZ(graph_cgr_read_rows(f, rowptr, rows, nrows, GRAPH_ROWS_ADJ | feat, &r)) == 0;
    AGREE(rows_ok || !whole);
    if (rows_ok && whole) compare_rows(whole, rows, nrows, &r, feat);
    if (rows_ok) graph_rows_free(&r);
    if (FUZZ(graph_cgr_read_rows(f, rowptr, rows, nrows, GRAPH_ROWS_NO_FEAT, &r)) == 0) {
      (void)FUZZ(graph_cgr_read_rows_feat(f, rows, nrows, feat, &r));
      graph_rows_free(&r);
    }
    struct graph g;
    const int st_ok = FUZZ(graph_cgr_read_structure(f, &g)) == 0;
    AGREE(st_ok || !whole);
    if (st_ok) graph_free(&g);
  }
  free(rows);
  free(rowptr);
  (void)graph_cgr_bytes_read(f);
  graph_cgr_close(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_quiet();
  if (size < 1) return 0;
  const unsigned mode = data[0];
  uint8_t *b = malloc(size - 1 ? size - 1 : 1);
  memcpy(b, data + 1, size - 1);
  if (mode & 1) fix_crcs(b, size - 1);
  const char *path = fuzz_file(b, size - 1);
  free(b);
  /* a file the whole-file reader accepts, the ranged reader must accept and read the
   * same from (the converse need not hold: v2 leaves unread blocks unchecked) */
  struct graph g;
  const int ok = FUZZ(graph_load_cgr(path, &g)) == 0;
  ranged(path, mode, ok ? &g : NULL);
  if (ok) graph_free(&g);
  return 0;
}
