/* core/endian.h — little-endian integer encoding of on-disk headers (.cgr files,
 * partition sets), independent of the host's byte order. Header-only. */
#ifndef CAPGNN_CORE_ENDIAN_H
#define CAPGNN_CORE_ENDIAN_H

#include <stdint.h>

static inline void cg_put_le32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline void cg_put_le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline uint32_t cg_get_le32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static inline uint64_t cg_get_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

#endif
