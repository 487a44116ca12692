/* graph/graph_internal.h — helpers shared by the graph module's sources (private). */
#ifndef CAPGNN_GRAPH_INTERNAL_H
#define CAPGNN_GRAPH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"

/* The .cgr layout stores arrays as raw little-endian bytes; the reader and writer
 * copy them with memcpy, which is only right on a little-endian host. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "capgnn's .cgr reader/writer assumes a little-endian host"
#endif

#define GRAPH_CGR_NUM_SECTIONS 7
#define GRAPH_CGR_HEADER_BYTES 256

enum graph_section {
  GRAPH_SEC_ROWPTR = 0,
  GRAPH_SEC_COLIDX,
  GRAPH_SEC_FEAT_ROWPTR,
  GRAPH_SEC_FEAT_COLIDX,
  GRAPH_SEC_FEAT_VALUES,
  GRAPH_SEC_LABELS,
  GRAPH_SEC_SPLIT,
};

extern const char *const graph_section_names[GRAPH_CGR_NUM_SECTIONS];

/* CRC-32 (zlib) of a buffer of any size; large buffers are split across OpenMP
 * threads and recombined with crc32_combine, so the value never depends on the
 * thread count. */
uint32_t graph_crc32(const void *p, size_t n);

/* Pointers and byte sizes of the seven sections of an in-memory graph. */
void graph_sections(const struct graph *g, const void *ptr[GRAPH_CGR_NUM_SECTIONS],
                    uint64_t size[GRAPH_CGR_NUM_SECTIONS]);

/* g->checksum from the seven section CRCs and n, m, f, c (see graph.h). */
uint32_t graph_checksum_from_crcs(const uint32_t crc[GRAPH_CGR_NUM_SECTIONS], uint64_t n, uint64_t m,
                                  uint64_t f, uint64_t c);

/* ---- the .cgr header (graph/cgr.c), shared by the whole-file and the ranged reader ----
 * Version 1 is ../shared/datasets/FORMAT.md; version 2 (docs/cgr-v2.md) adds a table of
 * per-block CRC-32s after the last section, so that a reader of a byte range can verify
 * the blocks it reads without reading the whole section. */
#define GRAPH_CGR_BLOCK_SHIFT_MIN 6u  /* 64-byte blocks (tests) */
#define GRAPH_CGR_BLOCK_SHIFT_MAX 30u /* 1 GiB */
#define GRAPH_CGR_BLOCK_SHIFT_DEFAULT 16u /* 64 KiB */
struct cgr_header {
  uint32_t version, flags, block_shift; /* block_shift: v2 only (0 for v1) */
  uint64_t n, m, f, c, nnz;
  int sparse, multilabel;
  char name[16];
  uint64_t off[GRAPH_CGR_NUM_SECTIONS], size[GRAPH_CGR_NUM_SECTIONS];
  uint32_t crc[GRAPH_CGR_NUM_SECTIONS]; /* as stored */
  /* v2: section s has nblocks[s] blocks whose CRCs are table entries bfirst[s]...; the
   * table (u32 entries, then the CRC-32 of the entries) is table_bytes at table_off */
  uint64_t nblocks[GRAPH_CGR_NUM_SECTIONS], bfirst[GRAPH_CGR_NUM_SECTIONS];
  uint64_t table_off, table_bytes;
};
/* FORMAT.md checks 1-4, the header values, check 5 without the CRCs (sizes, ranges),
 * the name and the file's end (v2: the block table's end) from the 256 header bytes `h`
 * of a file of fsize bytes. CG_ERR_FORMAT naming `path`, the check and the expected value. */
int graph_cgr_header_parse(const char *path, const unsigned char *h, uint64_t fsize, struct cgr_header *out);
/* CRC-32 of each `block`-byte block of p[0, n) (the last one short) into out[], and the
 * CRC-32 of the whole buffer as the return value (the blocks combined). */
uint32_t graph_crc32_blocks(const void *p, size_t n, size_t block, uint32_t *out);
/* FORMAT.md check 6 and sorted rows of one CSR (graph: no self-loops either), and the
 * symmetry of a graph's rowptr/colidx (O(n + m)): the checks graph_check makes. */
int graph_check_csr(const char *what, const char *rp_name, const char *ci_name, const int64_t *rowptr,
                    const int32_t *colidx, int64_t nrows, int64_t ncols, int64_t nnz,
                    const char *nnz_name, int graph);
int graph_check_symmetric(const char *what, const struct graph *g);
/* graph_feat_rownorm of one row's stored values (graph/norm.c): the ranged reader
 * normalises the stored values of a row the same way, so both give the same bits. */
void graph_feat_row_normalise(float *v, int64_t len);

#endif
