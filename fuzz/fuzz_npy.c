/* fuzz/fuzz_npy.c — the .npy reader the importers use (import/npy.c) on untrusted
 * bytes: the header (magic, version, the dict literal), then the data read in chunks
 * into each target type (or as a string), as the importers read features, labels,
 * splits and vertex ids. Mode byte first (bits 0-1: the target), then the file. */
#include "fuzz_util.h"

#include "import/npy_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_quiet();
  if (size < 1) return 0;
  const unsigned mode = data[0];
  const char *path = fuzz_file(data + 1, size - 1);
  struct import_npy a;
  memset(&a, 0, sizeof a);
  if (FUZZ(import_npy_open(&a, path)) != 0) {
    import_npy_close(&a);
    return 0;
  }
  char buf[256];
  (void)import_npy_shape_str(&a, buf, sizeof buf);
  int64_t shape[IMPORT_NPY_MAX_DIMS];
  for (int d = 0; d < IMPORT_NPY_MAX_DIMS; d++) shape[d] = -1; /* any */
  (void)import_npy_expect_shape(&a, a.ndim, shape, "fuzz");
  (void)import_npy_expect_integer(&a, "fuzz");
  (void)import_npy_expect_numeric(&a, "fuzz");
  if (a.kind == IMPORT_NPY_BYTES || a.kind == IMPORT_NPY_UNICODE) {
    (void)FUZZ(import_npy_read_string(&a, buf, sizeof buf));
  } else {
    /* chunks of at most 64 elements, into a buffer of that size: what the file
     * claims beyond what it holds must end in "truncated", not a huge read */
    static const enum import_npy_target tgt[4] = {IMPORT_NPY_TO_F32, IMPORT_NPY_TO_I64, IMPORT_NPY_TO_I32,
                                                  IMPORT_NPY_TO_U8};
    int64_t out[64];
    for (int64_t left = a.count; left > 0;) {
      int64_t k = left < 64 ? left : 64;
      if (FUZZ(import_npy_read(&a, tgt[mode & 3], out, k)) != 0) break;
      left -= k;
    }
  }
  import_npy_close(&a);
  return 0;
}
