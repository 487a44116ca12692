/* partition/cache.c — partition sets on disk, reused when graph and options match.
 *
 * METIS on a large graph takes minutes, and every rank of a run needs the same
 * owner array; computing it once and reading it back also guarantees that all ranks
 * (and later runs) agree on it. The key is in the file name (so different options
 * coexist) and again in the header (so a renamed or colliding file is rejected). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#include "core/endian.h"
#include "core/log.h"
#include "core/outfile.h"
#include "core/status.h"
#include "partition/part_internal.h"
#include "partition/partition.h"

#define CACHE_MAGIC "CGPART01"
#define CACHE_VERSION 1u
#define CACHE_HEADER 64
#define CACHE_FLAG_VWGT 1u
#define CACHE_FLAG_TPWGTS 2u

static uint32_t crc32_bytes(uint32_t crc, const void *p, size_t len) {
  return (uint32_t)crc32_z(crc, (const Bytef *)p, (z_size_t)len);
}

/* CRC-32 of the optional weights (0 when none), so different weights get
 * different files. Weights are hashed in a fixed little-endian encoding. */
static uint32_t weights_hash(const struct graph *g, const struct part_options *o) {
  if (!o->vwgt && !o->tpwgts) return 0;
  uint32_t h = crc32_bytes(0, "w", 1);
  if (o->vwgt) {
    unsigned char b[8];
    h = crc32_bytes(h, "v", 1);
    for (int64_t v = 0; v < g->n; v++) {
      uint64_t x = (uint64_t)o->vwgt[v];
      for (int i = 0; i < 8; i++) b[i] = (unsigned char)(x >> (8 * i));
      h = crc32_bytes(h, b, 8);
    }
  }
  if (o->tpwgts) {
    unsigned char b[4];
    h = crc32_bytes(h, "t", 1);
    for (int p = 0; p < o->nparts; p++) {
      uint32_t x;
      memcpy(&x, &o->tpwgts[p], 4);
      for (int i = 0; i < 4; i++) b[i] = (unsigned char)(x >> (8 * i));
      h = crc32_bytes(h, b, 4);
    }
  }
  return h;
}

static const char *cache_dir_resolve(const char *cache_dir) {
  if (cache_dir && cache_dir[0]) return cache_dir;
  const char *env = getenv("CAPGNN_CACHE");
  if (env && env[0]) return env;
  return ".capgnn-cache";
}

int part_cache_path(const struct graph *g, const struct part_options *o, const char *cache_dir,
                    char *path, size_t path_size) {
  char name[sizeof g->name + 1];
  size_t k = 0;
  /* Only portable file-name characters from the graph name. */
  for (size_t i = 0; i < sizeof g->name && g->name[i]; i++) {
    char c = g->name[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
             c == '-' || c == '.';
    name[k++] = ok ? c : '_';
  }
  name[k] = '\0';
  if (k == 0 || name[0] == '.') snprintf(name, sizeof name, "graph");
  char wsuffix[16] = "";
  if (o->vwgt || o->tpwgts) snprintf(wsuffix, sizeof wsuffix, "-w%08x", weights_hash(g, o));
  int len = snprintf(path, path_size, "%s/%s-%08x-%s-p%d-s%llu%s.part", cache_dir_resolve(cache_dir),
                     name, g->checksum, part_method_name(o->method), o->nparts,
                     (unsigned long long)o->seed, wsuffix);
  if (len < 0 || (size_t)len >= path_size)
    return cg_err_set(CG_ERR_ARG, "partition cache path is too long (cache folder '%s')",
                      cache_dir_resolve(cache_dir));
  return CG_OK;
}


/* Header layout (little-endian): magic[8] | u32 version | u32 header bytes (64) |
 * u64 n | u32 nparts | u32 method | u64 seed | u32 graph checksum | u32 weights hash |
 * u32 flags | 12 zero bytes. */
static void header_encode(unsigned char *h, const struct graph *g, const struct part_options *o) {
  memset(h, 0, CACHE_HEADER);
  memcpy(h, CACHE_MAGIC, 8);
  cg_put_le32(h + 8, CACHE_VERSION);
  cg_put_le32(h + 12, CACHE_HEADER);
  cg_put_le64(h + 16, (uint64_t)g->n);
  cg_put_le32(h + 24, (uint32_t)o->nparts);
  cg_put_le32(h + 28, (uint32_t)o->method);
  cg_put_le64(h + 32, o->seed);
  cg_put_le32(h + 40, g->checksum);
  cg_put_le32(h + 44, weights_hash(g, o));
  cg_put_le32(h + 48, (o->vwgt ? CACHE_FLAG_VWGT : 0) | (o->tpwgts ? CACHE_FLAG_TPWGTS : 0));
}

/* mkdir -p: create every missing component. */
static int mkdir_parents(const char *dir) {
  char *buf = strdup(dir);
  if (!buf) return cg_err_set(CG_ERR_NOMEM, "out of memory for a folder name");
  int st = CG_OK;
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
        st = cg_err_set(CG_ERR_IO, "cannot create folder '%s': %s", buf, strerror(errno));
        break;
      }
      *p = c;
      if (c == '\0') break;
    }
  }
  free(buf);
  if (st == CG_OK) {
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
      st = cg_err_set(CG_ERR_IO, "'%s' exists but is not a folder", dir);
  }
  return st;
}

/* Load and validate; returns 1 when owner was filled, 0 when the file is absent or
 * unusable (a WARN says why), negative on allocation failure. */
static int cache_read(const char *path, const struct graph *g, const struct part_options *o,
                      int32_t *owner) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno != ENOENT)
      LOG_WARN("part", "cannot open partition cache '%s' (%s); recomputing", path, strerror(errno));
    return 0;
  }
  const char *why = NULL;
  int rc = 0;
  size_t want = CACHE_HEADER + (size_t)g->n * 4 + 4;
  unsigned char *buf = cg_malloc(want + 1, "partition cache file");
  if (!buf) {
    fclose(f);
    return CG_ERR_NOMEM;
  }
  size_t got = fread(buf, 1, want + 1, f); /* one byte more detects trailing garbage */
  fclose(f);
  unsigned char expect[CACHE_HEADER];
  header_encode(expect, g, o);
  if (got < CACHE_HEADER || memcmp(buf, CACHE_MAGIC, 8) != 0) why = "not a partition file (bad magic or too short)";
  else if (cg_get_le32(buf + 8) != CACHE_VERSION) why = "unsupported version";
  else if (got != want) why = "wrong size (truncated or trailing bytes)";
  else if (cg_get_le32(buf + want - 4) != crc32_bytes(0, buf, want - 4)) why = "CRC-32 mismatch (corrupt)";
  else if (memcmp(buf, expect, CACHE_HEADER) != 0)
    why = "key fields (n, parts, method, seed, graph checksum, weights) do not match";
  if (!why) {
    int64_t *count = cg_calloc((size_t)o->nparts, sizeof *count, "partition cache check");
    if (!count) {
      cg_free(buf);
      return CG_ERR_NOMEM;
    }
    for (int64_t v = 0; v < g->n && !why; v++) {
      int32_t p = (int32_t)cg_get_le32(buf + CACHE_HEADER + 4 * v);
      if (p < 0 || p >= o->nparts) why = "an owner is out of range";
      else {
        owner[v] = p;
        count[p]++;
      }
    }
    for (int p = 0; p < o->nparts && !why; p++)
      if (count[p] == 0) why = "a part is empty";
    cg_free(count);
  }
  if (why) LOG_WARN("part", "ignoring partition cache '%s': %s; recomputing", path, why);
  else rc = 1;
  cg_free(buf);
  return rc;
}

static int cache_write(const char *dir, const char *path, const struct graph *g,
                       const struct part_options *o, const int32_t *owner) {
  TRY(mkdir_parents(dir));
  size_t total = CACHE_HEADER + (size_t)g->n * 4 + 4;
  unsigned char *buf = cg_malloc(total, "partition cache file");
  if (!buf) return CG_ERR_NOMEM;
  header_encode(buf, g, o);
  for (int64_t v = 0; v < g->n; v++) cg_put_le32(buf + CACHE_HEADER + 4 * v, (uint32_t)owner[v]);
  cg_put_le32(buf + total - 4, crc32_bytes(0, buf, total - 4));
  /* (ranks that compute the same partition at once each write their own temporary,
   * and the last rename wins whole: core/outfile.h) */
  struct cg_outfile out;
  int st = cg_outfile_open(&out, path, "partition cache");
  if (st == CG_OK) {
    if (fwrite(buf, 1, total, out.fp) == total) {
      st = cg_outfile_commit(&out);
    } else {
      st = cg_err_set(CG_ERR_IO, "writing '%s' failed: %s", out.tmp ? out.tmp : out.path,
                      strerror(errno));
      cg_outfile_abort(&out);
    }
  }
  cg_free(buf);
  return st;
}

/* The key fields alone (name, checksum, n, options): no structure needed. */
static int lookup_check(const struct graph *g, const struct part_options *o) {
  if (!g || !o) return cg_err_set(CG_ERR_ARG, "part_cache_lookup: graph and options must not be NULL");
  if (o->method != PART_METIS && o->method != PART_RANDOM)
    return cg_err_set(CG_ERR_ARG, "part_cache_lookup: unknown method %d", (int)o->method);
  if (g->n < 1 || o->nparts < 1 || (int64_t)o->nparts > g->n)
    return cg_err_set(CG_ERR_ARG, "cannot split graph '%s' (%lld vertices) into %d parts: the number of parts "
                      "must be between 1 and the number of vertices", g->name, (long long)g->n, o->nparts);
  return CG_OK;
}

int part_cache_lookup(const struct graph *g, const struct part_options *o, const char *cache_dir,
                      int32_t *owner, int *hit) {
  *hit = 0;
  TRY(lookup_check(g, o));
  if (!owner) return cg_err_set(CG_ERR_ARG, "part_cache_lookup: owner array is NULL");
  const char *dir = cache_dir_resolve(cache_dir);
  size_t plen = strlen(dir) + sizeof g->name + 128;
  char *path = malloc(plen);
  if (!path) return cg_err_set(CG_ERR_NOMEM, "out of memory for a file name");
  int st = part_cache_path(g, o, cache_dir, path, plen);
  if (st == CG_OK) {
    st = cache_read(path, g, o, owner);
    if (st == 1) LOG_DEBUG("part", "reusing partition '%s'", path);
    if (st >= 0) {
      *hit = st;
      st = CG_OK;
    }
  }
  free(path);
  TRY(st);
  return CG_OK;
}

int part_cache_store(const struct graph *g, const struct part_options *o, const char *cache_dir,
                     const int32_t *owner) {
  TRY(lookup_check(g, o));
  const char *dir = cache_dir_resolve(cache_dir);
  size_t plen = strlen(dir) + sizeof g->name + 128;
  char *path = malloc(plen);
  if (!path) return cg_err_set(CG_ERR_NOMEM, "out of memory for a file name");
  int st = part_cache_path(g, o, cache_dir, path, plen);
  if (st == CG_OK && cache_write(dir, path, g, o, owner) < 0) {
    /* The owners are valid; only reuse is lost. */
    LOG_WARN("part", "could not save the partition (%s); it will be recomputed next time (--part-cache DIR or "
             "CAPGNN_CACHE puts the cache elsewhere)", cg_err_msg());
    cg_err_clear();
  } else if (st == CG_OK) {
    LOG_DEBUG("part", "saved partition '%s'", path);
  }
  free(path);
  TRY(st);
  return CG_OK;
}

int part_assign_cached(const struct graph *g, const struct part_options *o, const char *cache_dir,
                       int32_t *owner, int *reused) {
  if (reused) *reused = 0;
  TRY(part_options_check(g, o));
  if (!owner) return cg_err_set(CG_ERR_ARG, "part_assign_cached: owner array is NULL");
  int hit = 0;
  TRY(part_cache_lookup(g, o, cache_dir, owner, &hit));
  if (hit) {
    if (reused) *reused = 1;
    return CG_OK;
  }
  TRY(part_assign(g, o, owner));
  TRY(part_cache_store(g, o, cache_dir, owner));
  return CG_OK;
}
