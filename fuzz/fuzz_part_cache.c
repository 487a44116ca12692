/* fuzz/fuzz_part_cache.c — a partition cache file (partition/cache.c) on untrusted
 * bytes, through part_cache_lookup as a run calls it.
 * Input: one mode byte, then the file. Mode bits 0-4: the graph's vertex count - 1;
 * bits 5-6: parts - 1 (at most n); bit 7: the harness writes the expected key fields
 * into the header and recomputes the CRC-32, so that mutations reach the owner
 * checks. */
#include "fuzz_util.h"

#include <sys/stat.h>

#include "graph/graph.h"
#include "partition/partition.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_quiet();
  static char dir[64];
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/capgnn-fuzz-part.XXXXXX");
    if (!mkdtemp(dir)) abort();
  }
  if (size < 1) return 0;
  const unsigned mode = data[0];
  struct graph g;
  memset(&g, 0, sizeof g);
  snprintf(g.name, sizeof g.name, "fuzz");
  g.n = 1 + (mode & 31);
  g.checksum = 0x12345678u;
  struct part_options o;
  memset(&o, 0, sizeof o);
  o.method = PART_RANDOM;
  o.nparts = 1 + ((mode >> 5) & 3);
  if (o.nparts > g.n) o.nparts = (int)g.n;
  o.seed = 7;
  char path[4096];
  if (part_cache_path(&g, &o, dir, path, sizeof path) != 0) abort();
  const size_t n = size - 1;
  uint8_t *b = malloc(n ? n : 1);
  memcpy(b, data + 1, n);
  if ((mode & 128) && n >= 64 + 4) {
    memcpy(b, "CGPART01", 8);
    fuzz_put_le32(b + 8, 1);
    fuzz_put_le32(b + 12, 64);
    for (int i = 0; i < 8; i++) b[16 + i] = (uint8_t)((uint64_t)g.n >> (8 * i));
    fuzz_put_le32(b + 24, (uint32_t)o.nparts);
    fuzz_put_le32(b + 28, (uint32_t)o.method);
    for (int i = 0; i < 8; i++) b[32 + i] = (uint8_t)(o.seed >> (8 * i));
    fuzz_put_le32(b + 40, g.checksum);
    memset(b + 44, 0, 20);
    fuzz_put_le32(b + n - 4, fuzz_crc32(b, n - 4));
  }
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) abort();
  free(b);
  int32_t owner[32];
  int hit = 0;
  (void)FUZZ(part_cache_lookup(&g, &o, dir, owner, &hit));
  unlink(path);
  return 0;
}
