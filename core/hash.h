/* core/hash.h — FNV-1a, 64 bits: the fingerprints ranks compare to check that they were
 * given the same thing (settings, specs, messages, checkpoints). Not for security. */
#ifndef CAPGNN_CORE_HASH_H
#define CAPGNN_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define CG_FNV1A_INIT 1469598103934665603ull

/* h extended by the n bytes at p (start with CG_FNV1A_INIT). */
static inline uint64_t cg_fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* The hash of a NUL-terminated string. */
static inline uint64_t cg_fnv1a_str(const char *s) {
  uint64_t h = CG_FNV1A_INIT;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

#endif
