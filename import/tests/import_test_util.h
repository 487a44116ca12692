/* import/tests/import_test_util.h — writers of .npy files and .npz archives for the
 * importer tests that need no Python (libzip writes the archives). */
#ifndef CAPGNN_IMPORT_TESTS_UTIL_H
#define CAPGNN_IMPORT_TESTS_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

/* The bytes of a .npy file: the given header dict (padded as numpy pads it, to a
 * multiple of 64 with spaces and a newline) and `data`. version 1 or 2. */
static inline unsigned char *it_npy_bytes(int version, const char *dict, const void *data, size_t nbytes,
                                          size_t *size) {
  size_t pre = version == 1 ? 10 : 12, dl = strlen(dict);
  size_t hlen = dl + 1;
  while ((pre + hlen) % 64) hlen++;
  *size = pre + hlen + nbytes;
  unsigned char *b = malloc(*size);
  memcpy(b, "\x93NUMPY", 6);
  b[6] = (unsigned char)version;
  b[7] = 0;
  if (version == 1) {
    b[8] = (unsigned char)(hlen & 0xff);
    b[9] = (unsigned char)(hlen >> 8);
  } else {
    for (int i = 0; i < 4; i++) b[8 + i] = (unsigned char)(hlen >> (8 * i));
  }
  memcpy(b + pre, dict, dl);
  memset(b + pre + dl, ' ', hlen - dl - 1);
  b[pre + hlen - 1] = '\n';
  if (nbytes) memcpy(b + pre + hlen, data, nbytes);
  return b;
}

static inline int it_write_npy(const char *path, const char *descr, const char *shape, const void *data,
                               size_t nbytes) {
  char dict[256];
  snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
  size_t size;
  unsigned char *b = it_npy_bytes(1, dict, data, nbytes, &size);
  FILE *fp = fopen(path, "wb");
  int ok = fp && fwrite(b, 1, size, fp) == size;
  if (fp) ok &= fclose(fp) == 0;
  free(b);
  return ok ? 0 : -1;
}

struct it_member {
  const char *key;
  const char *descr, *shape;
  const void *data;
  size_t nbytes;
  int deflate;
};

/* An .npz with the given members (KEY.npy), each stored or deflated. */
static inline int it_write_npz(const char *path, const struct it_member *m, int nm) {
  int err = 0;
  remove(path);
  zip_t *z = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!z) return -1;
  unsigned char *bufs[16];
  for (int i = 0; i < nm && i < 16; i++) {
    char dict[256], name[128];
    snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", m[i].descr, m[i].shape);
    size_t size;
    bufs[i] = it_npy_bytes(1, dict, m[i].data, m[i].nbytes, &size);
    zip_source_t *src = zip_source_buffer(z, bufs[i], size, 0);
    snprintf(name, sizeof name, "%s.npy", m[i].key);
    zip_int64_t idx = zip_file_add(z, name, src, ZIP_FL_OVERWRITE);
    if (idx < 0) return -1;
    zip_set_file_compression(z, (zip_uint64_t)idx, m[i].deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  int rc = zip_close(z);
  for (int i = 0; i < nm && i < 16; i++) free(bufs[i]);
  return rc == 0 ? 0 : -1;
}

#endif
