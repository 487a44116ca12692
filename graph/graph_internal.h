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

#endif
