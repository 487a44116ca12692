/* fuzz/fuzz_npz.c — .npz archives (zip, read with libzip; import/npy.c) and the SciPy
 * sparse adjacency reader on top of them (import_scipy_npz: csr, csc, coo), as the
 * DGL Reddit and GraphSAINT importers read them, on untrusted bytes. Also every
 * member a harness knows by name, opened and read in chunks. */
#include "fuzz_util.h"

#include "import/import_internal.h"
#include "import/npy_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_quiet();
  const char *path = fuzz_file(data, size);
  int64_t n = 0;
  struct import_edges e;
  if (FUZZ(import_scipy_npz(path, &n, &e)) == 0) import_edges_free(&e);
  struct import_npz z;
  if (FUZZ(import_npz_open(&z, path)) != 0) return 0;
  char list[256];
  (void)import_npz_list(&z, list, sizeof list);
  static const char *const keys[] = {"format", "shape", "indptr", "indices", "row", "col", "feature", "label"};
  for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
    if (!import_npz_has(&z, keys[k])) continue;
    struct import_npy a;
    if (FUZZ(import_npy_open_npz(&a, &z, keys[k])) == 0) {
      int64_t out[64];
      for (int64_t left = a.count; left > 0 && a.kind != IMPORT_NPY_BYTES && a.kind != IMPORT_NPY_UNICODE;) {
        int64_t c = left < 64 ? left : 64;
        if (FUZZ(import_npy_read(&a, IMPORT_NPY_TO_I64, out, c)) != 0) break;
        left -= c;
      }
    }
    import_npy_close(&a);
  }
  import_npz_close(&z);
  return 0;
}
