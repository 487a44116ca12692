/* fuzz/fuzz_saint.c — the GraphSAINT importer (import/import_saint.c) end to end through
 * import_graph("saint"), on an untrusted class_map.json (mode bit 0 clear) or role.json
 * (set): its streaming JSON walker (members parsed one at a time with cJSON), the keys
 * as vertex ids, single- and multi-label class maps, the split lists. The folder's
 * other files are a valid 4-vertex dataset the harness writes once (adj_full.npz: a
 * 4-cycle, feats.npy: 4 x 2, and the JSON file not under test). Input: mode byte, then
 * the JSON text. */
#include "fuzz_util.h"

#include <sys/stat.h>
#include <zip.h>

#include "import/import.h"

static void put(const char *dir, const char *name, const void *b, size_t n) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  if (!f || fwrite(b, 1, n, f) != n || fclose(f) != 0) abort();
}

/* A .npy v1 image of `dict` and `data` in buf (returns its size). */
static size_t npy(unsigned char *buf, const char *dict, const void *data, size_t n) {
  char h[128];
  int len = snprintf(h, sizeof h, "%s", dict);
  while ((10 + len + 1) % 64) h[len++] = ' ';
  h[len++] = '\n';
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (unsigned char)len;
  buf[9] = 0;
  memcpy(buf + 10, h, (size_t)len);
  memcpy(buf + 10 + len, data, n);
  return 10 + (size_t)len + n;
}

static void write_folder(const char *dir) {
  static unsigned char b[6][256];
  const int64_t shape[2] = {4, 4};
  const int32_t indptr[5] = {0, 2, 4, 6, 8}, indices[8] = {1, 3, 0, 2, 1, 3, 0, 2};
  const float feats[8] = {1, 0, 0, 1, 1, 1, 0.5f, 2};
  size_t n[5];
  n[0] = npy(b[0], "{'descr': '|S3', 'fortran_order': False, 'shape': (), }", "csr", 3);
  n[1] = npy(b[1], "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", shape, sizeof shape);
  n[2] = npy(b[2], "{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }", indptr, sizeof indptr);
  n[3] = npy(b[3], "{'descr': '<i4', 'fortran_order': False, 'shape': (8,), }", indices, sizeof indices);
  n[4] = npy(b[4], "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 2), }", feats, sizeof feats);
  char p[256];
  snprintf(p, sizeof p, "%s/adj_full.npz", dir);
  int err = 0;
  zip_t *z = zip_open(p, ZIP_CREATE | ZIP_TRUNCATE, &err);
  static const char *const names[4] = {"format.npy", "shape.npy", "indptr.npy", "indices.npy"};
  for (int i = 0; z && i < 4; i++) zip_file_add(z, names[i], zip_source_buffer(z, b[i], n[i], 0), 0);
  if (!z || zip_close(z) != 0) abort();
  put(dir, "feats.npy", b[4], n[4]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_quiet();
  static char dir[64];
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/capgnn-fuzz-saint.XXXXXX");
    if (!mkdtemp(dir)) abort();
    write_folder(dir);
  }
  if (size < 1) return 0;
  static const char class_map[] = "{\"0\": 1, \"1\": 0, \"2\": 1, \"3\": 0}";
  static const char role[] = "{\"tr\": [0, 1], \"va\": [2], \"te\": [3]}";
  const int is_role = data[0] & 1;
  put(dir, "class_map.json", is_role ? (const void *)class_map : data + 1, is_role ? sizeof class_map - 1 : size - 1);
  put(dir, "role.json", is_role ? data + 1 : (const void *)role, is_role ? size - 1 : sizeof role - 1);
  struct import_opts o;
  memset(&o, 0, sizeof o);
  o.input = dir;
  o.name = "fuzz";
  struct graph g;
  struct import_stats st;
  if (FUZZ(import_graph("saint", &o, &g, &st)) == 0) graph_free(&g);
  return 0;
}
