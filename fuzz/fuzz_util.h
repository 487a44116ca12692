/* fuzz/fuzz_util.h — what the harnesses share (header-only, private to fuzz/).
 *
 * Every parser under test takes a path, so the input goes to one memfd, reopened
 * through /proc/self/fd: no disk traffic per input and nothing left behind.
 * crc32 (zlib) recomputes the checksums a harness fixes up after mutation, so
 * that the structural checks behind each CRC are exercised too. */
#ifndef CAPGNN_FUZZ_UTIL_H
#define CAPGNN_FUZZ_UTIL_H

#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "core/log.h"
#include "core/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a regular file: its path (valid until the next call). */
static inline const char *fuzz_file(const void *data, size_t size) {
  static int fd = -1;
  static char path[64];
  if (fd < 0) {
    fd = memfd_create("capgnn-fuzz", MFD_CLOEXEC);
    if (fd < 0) {
      perror("memfd_create");
      abort();
    }
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  }
  if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) {
    perror("fuzz_file");
    abort();
  }
  return path;
}

static inline uint32_t fuzz_crc32(const void *p, size_t n) {
  return (uint32_t)crc32_z(0L, (const Bytef *)p, (z_size_t)n);
}

static inline uint32_t fuzz_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t fuzz_le64(const uint8_t *p) { return fuzz_le32(p) | (uint64_t)fuzz_le32(p + 4) << 32; }
static inline void fuzz_put_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* A status a parser may return on bad input: ok, or a clear error about the file
 * (format, I/O, not found, unsupported). An internal error (a violated invariant: a
 * bug), an argument error (the harness passes valid arguments) or out of memory (the
 * inputs are a few KB: an allocation sized by a claim the file cannot back; the replay
 * program fails allocations past 1 GiB so that such an allocation fails) is a finding:
 * abort, so that libFuzzer keeps the input and the replay test fails. */
static inline int fuzz_status(int st, const char *call) {
  static int verbose = -1; /* CAPGNN_FUZZ_VERBOSE=1: every refusal's message (to check seeds) */
  if (verbose < 0) verbose = getenv("CAPGNN_FUZZ_VERBOSE") != NULL;
  if (verbose && st != CG_OK) fprintf(stderr, "fuzz: %s: %d: %s\n", call, st, cg_err_msg());
  if (st == CG_ERR_INTERNAL || st == CG_ERR_ARG || st == CG_ERR_NOMEM) {
    fprintf(stderr, "fuzz: %s returned %d on a file: %s\n", call, st, cg_err_msg());
    abort();
  }
  return st;
}
#define FUZZ(call) fuzz_status((call), #call)

/* Errors only (a rejected input is the common case and its WARN is noise); an
 * environment that sets CAPGNN_LOG_LEVEL keeps its level. */
static inline void fuzz_quiet(void) {
  if (!getenv("CAPGNN_LOG_LEVEL")) cg_log_set_level(CG_LOG_ERROR);
}

#endif
