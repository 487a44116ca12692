/* import/npy_internal.h — streaming reader of NumPy arrays (private to import/): .npy
 * files and the members of .npz archives (zip files written by numpy.savez /
 * savez_compressed / scipy.sparse.save_npz, members stored or deflated; read with
 * libzip).
 *
 * Format: NumPy's "NPY format" (numpy/lib/format.py): magic "\x93NUMPY", version
 * 1.x (u16 header length) or 2.x/3.x (u32), then a Python dict literal with exactly
 * the keys 'descr', 'fortran_order' and 'shape', then the raw array data.
 * Supported: little-endian (or byte-order-free) dtypes b1, i1, i2, i4, i8, u1, u2,
 * u4, u8, f4, f8, and byte/unicode strings S<n>/U<n> (only through
 * import_npy_read_string); C order (Fortran order is rejected for arrays of two or
 * more dimensions). Every error message names the file (and the .npz member), the
 * problem and what was expected.
 *
 * The data are never loaded whole: import_npy_read converts the next `count`
 * elements into the caller's buffer, so a 2 GB float64 feature matrix becomes a
 * 1 GB float32 one with a few MB of scratch. A struct import_npy is caller-owned;
 * import_npy_close releases it (accepts a zeroed or closed struct). */
#ifndef CAPGNN_IMPORT_NPY_INTERNAL_H
#define CAPGNN_IMPORT_NPY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define IMPORT_NPY_MAX_DIMS 8

enum import_npy_kind {
  IMPORT_NPY_BOOL,    /* b1 */
  IMPORT_NPY_INT,     /* i1 i2 i4 i8 */
  IMPORT_NPY_UINT,    /* u1 u2 u4 u8 */
  IMPORT_NPY_FLOAT,   /* f4 f8 */
  IMPORT_NPY_BYTES,   /* S<n> */
  IMPORT_NPY_UNICODE, /* U<n> (UTF-32LE code units) */
};

/* What import_npy_read converts to. Integer targets reject float arrays ("wrong
 * dtype") and range-check narrowing; F32 accepts every numeric kind (f8 is rounded
 * to nearest, as numpy's astype(float32)) and rejects non-finite values. */
enum import_npy_target { IMPORT_NPY_TO_F32, IMPORT_NPY_TO_I64, IMPORT_NPY_TO_I32, IMPORT_NPY_TO_U8 };

struct import_npz {
  char path[1024];
  void *zip; /* zip_t * */
};

struct import_npy {
  char name[1200];  /* "PATH" or "PATH (array 'KEY')": the prefix of every message */
  char descr[64];   /* as in the header, e.g. "<f4" */
  enum import_npy_kind kind;
  int itemsize;
  int ndim;
  int64_t shape[IMPORT_NPY_MAX_DIMS];
  int64_t count;    /* elements: the product of shape (1 for a 0-d array) */
  int64_t pos;      /* elements consumed so far */
  int64_t data_bytes; /* count * itemsize */
  int64_t source_bytes; /* size of the file, or the member's size in the archive (compressed) */
  /* private */
  void *fp;         /* FILE * */
  void *zf;         /* zip_file_t * */
  unsigned char *scratch;
};

/* Open an .npz archive (a zip file). A truncated or non-zip file fails here with a
 * message that says so. */
int import_npz_open(struct import_npz *z, const char *path);
/* 1 when the archive has a member KEY.npy (or KEY). */
int import_npz_has(const struct import_npz *z, const char *key);
/* The archive's array names ("'a', 'b'"; "none"), for messages; returns buf. */
const char *import_npz_list(const struct import_npz *z, char *buf, size_t len);
void import_npz_close(struct import_npz *z);

/* Open a .npy file / the member KEY(.npy) of an open archive and parse its header. */
int import_npy_open(struct import_npy *a, const char *path);
int import_npy_open_npz(struct import_npy *a, const struct import_npz *z, const char *key);
/* Read the next `count` elements, converted to `target`, into dst. Fails with
 * "truncated" when the data end early, "wrong dtype" for a float array read as an
 * integer target or a string array, "out of range" when a value does not fit. */
int import_npy_read(struct import_npy *a, enum import_npy_target target, void *dst, int64_t count);
/* The value of a 0-d (or 1-element) S<n>/U<n> array, e.g. scipy's 'format' b'csr'
 * (ASCII only; longer values are an error). */
int import_npy_read_string(struct import_npy *a, char *out, size_t outlen);
void import_npy_close(struct import_npy *a);

/* "(3, 4)", "(5,)", "()". */
const char *import_npy_shape_str(const struct import_npy *a, char *buf, size_t len);
/* Checks used by every importer, each with a message naming the file:
 * the number of dimensions and the dims that are >= 0 in `shape` (-1 = any). */
int import_npy_expect_shape(const struct import_npy *a, int ndim, const int64_t *shape, const char *why);
/* An integer (or bool) array: the dtype of labels, splits and vertex ids. */
int import_npy_expect_integer(const struct import_npy *a, const char *what);
/* A numeric array (features). */
int import_npy_expect_numeric(const struct import_npy *a, const char *what);

#ifdef __cplusplus
}
#endif
#endif
