/* import/tests/test_npy.c — the .npy/.npz reader: header forms numpy writes, every
 * supported dtype converted exactly, and each malformed header, dtype, shape and
 * truncation rejected with a message naming the file and the problem. Fixtures are
 * written here (libzip for the archives); no Python needed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/status.h"
#include "import/npy_internal.h"
#include "graph_test_util.h"
#include "import_test_util.h"

static char *tmpdir;
static char path[4200];

static int setup(void **state) {
  (void)state;
  tmpdir = gt_mkdtemp();
  return tmpdir ? 0 : -1;
}
static int teardown(void **state) {
  (void)state;
  gt_rmdir(tmpdir);
  return 0;
}

static const char *p_(const char *name) {
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  return path;
}

static void write_raw(const char *name, int version, const char *dict, const void *data, size_t n) {
  size_t size;
  unsigned char *b = it_npy_bytes(version, dict, data, n, &size);
  assert_int_equal(gt_write(p_(name), b, size), 0);
  free(b);
}

/* Open must fail with `status` and a message holding the file name and `what`. */
static void open_fails(const char *name, int status, const char *what) {
  struct import_npy a;
  int st = import_npy_open(&a, p_(name));
  printf("  %-14s -> %s\n", name, cg_err_msg());
  assert_int_equal(st, status);
  assert_non_null(strstr(cg_err_msg(), name));
  assert_non_null(strstr(cg_err_msg(), what));
  import_npy_close(&a);
}

static void test_header_forms(void **state) {
  (void)state;
  const float v[6] = {1.5f, -2.0f, 0.0f, 3.25f, -0.0f, 1e-30f};
  static const char *const dicts[] = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}",
      "{'shape': (2L, 3L), 'fortran_order': False, 'descr': '<f4'}",
      "{ 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 2 , 3 , ) , }",
  };
  for (int version = 1; version <= 2; version++)
    for (size_t i = 0; i < sizeof dicts / sizeof dicts[0]; i++) {
      write_raw("h.npy", version, dicts[i], v, sizeof v);
      struct import_npy a;
      int st = import_npy_open(&a, p_("h.npy"));
      if (st) cg_err_report("header");
      assert_int_equal(st, CG_OK);
      assert_int_equal(a.ndim, 2);
      assert_int_equal(a.shape[0], 2);
      assert_int_equal(a.shape[1], 3);
      assert_int_equal(a.count, 6);
      float out[6];
      assert_int_equal(import_npy_read(&a, IMPORT_NPY_TO_F32, out, 6), CG_OK);
      assert_memory_equal(out, v, sizeof v);
      import_npy_close(&a);
    }
  /* 0-d and 1-D; Fortran order is fine for 1-D (same bytes). */
  int64_t one = 42;
  write_raw("s.npy", 1, "{'descr': '<i8', 'fortran_order': True, 'shape': (), }", &one, 8);
  struct import_npy a;
  assert_int_equal(import_npy_open(&a, p_("s.npy")), CG_OK);
  assert_int_equal(a.ndim, 0);
  assert_int_equal(a.count, 1);
  int64_t got;
  assert_int_equal(import_npy_read(&a, IMPORT_NPY_TO_I64, &got, 1), CG_OK);
  assert_int_equal(got, 42);
  char sh[32];
  assert_string_equal(import_npy_shape_str(&a, sh, sizeof sh), "()");
  import_npy_close(&a);
}

static void test_dtypes(void **state) {
  (void)state;
  /* Every supported dtype to every target it may go to, checked value by value. */
  const int8_t i1[4] = {-128, -1, 0, 127};
  const int16_t i2[4] = {-32768, -1, 7, 32767};
  const int32_t i4[4] = {INT32_MIN, -1, 9, INT32_MAX};
  const int64_t i8[4] = {-5, -1, 0, 123456789012LL};
  const uint8_t u1[4] = {0, 1, 200, 255}, b1[4] = {0, 1, 1, 0};
  const uint16_t u2[4] = {0, 1, 60000, 65535};
  const uint32_t u4[4] = {0, 1, 7, 4000000000u};
  const uint64_t u8[4] = {0, 1, 7, 9};
  const double f8[4] = {0.1, -1e30, 3.0, 1.0 / 3.0};
  struct {
    const char *descr;
    const void *data;
    size_t size;
    double expect[4];
  } cases[] = {
      {"|i1", i1, 1, {-128, -1, 0, 127}},
      {"<i2", i2, 2, {-32768, -1, 7, 32767}},
      {"<i4", i4, 4, {INT32_MIN, -1, 9, INT32_MAX}},
      {"<i8", i8, 8, {-5, -1, 0, 123456789012.0}},
      {"|u1", u1, 1, {0, 1, 200, 255}},
      {"|b1", b1, 1, {0, 1, 1, 0}},
      {"<u2", u2, 2, {0, 1, 60000, 65535}},
      {"<u4", u4, 4, {0, 1, 7, 4000000000.0}},
      {"<u8", u8, 8, {0, 1, 7, 9}},
      {"<f8", f8, 8, {0.1, -1e30, 3.0, 1.0 / 3.0}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char dict[128];
    snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (4,), }", cases[c].descr);
    write_raw("t.npy", 1, dict, cases[c].data, 4 * cases[c].size);
    struct import_npy a;
    float f[4];
    assert_int_equal(import_npy_open(&a, p_("t.npy")), CG_OK);
    assert_int_equal(import_npy_read(&a, IMPORT_NPY_TO_F32, f, 4), CG_OK);
    import_npy_close(&a);
    for (int i = 0; i < 4; i++) assert_true(f[i] == (float)cases[c].expect[i]);
    if (strcmp(cases[c].descr, "<f8") == 0) {
      /* A float array is not an integer array. */
      int64_t x[4];
      assert_int_equal(import_npy_open(&a, p_("t.npy")), CG_OK);
      assert_int_equal(import_npy_read(&a, IMPORT_NPY_TO_I64, x, 4), CG_ERR_FORMAT);
      assert_non_null(strstr(cg_err_msg(), "wrong dtype '<f8'"));
      assert_int_equal(import_npy_expect_integer(&a, "labels"), CG_ERR_FORMAT);
      assert_non_null(strstr(cg_err_msg(), "; float ids: Y.astype(numpy.int64), -1 for unlabelled"));
      import_npy_close(&a);
      continue;
    }
    int64_t x[4];
    assert_int_equal(import_npy_open(&a, p_("t.npy")), CG_OK);
    assert_int_equal(import_npy_read(&a, IMPORT_NPY_TO_I64, x, 4), CG_OK);
    import_npy_close(&a);
    for (int i = 0; i < 4; i++) assert_true((double)x[i] == cases[c].expect[i]);
    /* Narrowing: in range converts, out of range names the element. */
    int32_t y[4];
    assert_int_equal(import_npy_open(&a, p_("t.npy")), CG_OK);
    int st = import_npy_read(&a, IMPORT_NPY_TO_I32, y, 4);
    int fits = 1;
    for (int i = 0; i < 4; i++) fits &= cases[c].expect[i] >= INT32_MIN && cases[c].expect[i] <= INT32_MAX;
    assert_int_equal(st, fits ? CG_OK : CG_ERR_FORMAT);
    if (!fits) assert_non_null(strstr(cg_err_msg(), "out of range"));
    else
      for (int i = 0; i < 4; i++) assert_true((double)y[i] == cases[c].expect[i]);
    import_npy_close(&a);
  }
}

static void test_values_checked(void **state) {
  (void)state;
  /* float64 beyond float32's range, NaN, and a float32 infinity. */
  const double big[3] = {1.0, 1e300, 2.0};
  write_raw("big.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 1), }", big, sizeof big);
  struct import_npy a;
  float f[3];
  assert_int_equal(import_npy_open(&a, p_("big.npy")), CG_OK);
  assert_int_equal(import_npy_read(&a, IMPORT_NPY_TO_F32, f, 3), CG_ERR_FORMAT);
  printf("  -> %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "element (1, 0)"));
  assert_non_null(strstr(cg_err_msg(), "overflows float32"));
  import_npy_close(&a);
  const float nan3[3] = {1.0f, 2.0f, NAN};
  write_raw("nan.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", nan3, sizeof nan3);
  assert_int_equal(import_npy_open(&a, p_("nan.npy")), CG_OK);
  assert_int_equal(import_npy_read(&a, IMPORT_NPY_TO_F32, f, 3), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "element 2 is nan, expected a finite value"));
  import_npy_close(&a);
  /* uint64 beyond int64. */
  const uint64_t huge[2] = {1, UINT64_MAX};
  write_raw("huge.npy", 1, "{'descr': '<u8', 'fortran_order': False, 'shape': (2,), }", huge, sizeof huge);
  int64_t x[2];
  assert_int_equal(import_npy_open(&a, p_("huge.npy")), CG_OK);
  assert_int_equal(import_npy_read(&a, IMPORT_NPY_TO_I64, x, 2), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "18446744073709551615, out of range"));
  import_npy_close(&a);
  /* Reading in pieces gives the same as one read. */
  int32_t big_i[5000], got[5000];
  for (int i = 0; i < 5000; i++) big_i[i] = i * 7 - 3;
  write_raw("ints.npy", 2, "{'descr': '<i4', 'fortran_order': False, 'shape': (5000,), }", big_i, sizeof big_i);
  assert_int_equal(import_npy_open(&a, p_("ints.npy")), CG_OK);
  assert_int_equal(import_npy_read(&a, IMPORT_NPY_TO_I32, got, 1), CG_OK);
  assert_int_equal(import_npy_read(&a, IMPORT_NPY_TO_I32, got + 1, 2999), CG_OK);
  assert_int_equal(import_npy_read(&a, IMPORT_NPY_TO_I32, got + 3000, 2000), CG_OK);
  assert_memory_equal(got, big_i, sizeof got);
  import_npy_close(&a);
}

static void test_bad_headers(void **state) {
  (void)state;
  const float v[4] = {1, 2, 3, 4};
  assert_int_equal(gt_write(p_("magic.npy"), "GIF89a not an npy file", 22), 0);
  open_fails("magic.npy", CG_ERR_FORMAT, "bad magic");
  /* a .npz given for a .npy (numpy.savez, scipy.sparse.save_npz): named, with the fix */
  assert_int_equal(gt_write(p_("zip.npy"), "PK\x03\x04 not an npy file", 20), 0);
  open_fails("zip.npy", CG_ERR_FORMAT, "not a .npy array but a .npz (zip) archive");
  open_fails("zip.npy", CG_ERR_FORMAT, "numpy.save(path, X.toarray())");
  /* class names as labels: the line that numbers them */
  const uint32_t names[2 * 3] = {'c', 'a', 't', 'd', 'o', 'g'};
  write_raw("names.npy", 1, "{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", names, sizeof names);
  struct import_npy a;
  assert_int_equal(import_npy_open(&a, p_("names.npy")), CG_OK);
  assert_int_equal(import_npy_expect_integer(&a, "labels"), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "wrong dtype '<U3' for labels"));
  assert_non_null(strstr(cg_err_msg(), "; names: numpy.unique(Y, return_inverse=True)[1] numbers them 0..K-1"));
  import_npy_close(&a);
  assert_int_equal(gt_write(p_("short.npy"), "\x93NUMPY", 6), 0);
  open_fails("short.npy", CG_ERR_FORMAT, "too short");
  write_raw("fortran.npy", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", v, 16);
  open_fails("fortran.npy", CG_ERR_UNSUPPORTED, "Fortran (column-major) order");
  write_raw("be.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", v, 16);
  open_fails("be.npy", CG_ERR_FORMAT, "big-endian");
  write_raw("f2.npy", 1, "{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }", v, 8);
  open_fails("f2.npy", CG_ERR_FORMAT, "unsupported dtype '<f2'");
  write_raw("obj.npy", 1, "{'descr': '|O', 'fortran_order': False, 'shape': (4,), }", v, 16);
  open_fails("obj.npy", CG_ERR_FORMAT, "unsupported dtype '|O'");
  write_raw("rec.npy", 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", v, 16);
  open_fails("rec.npy", CG_ERR_FORMAT, "structured dtype");
  write_raw("nokey.npy", 1, "{'descr': '<f4', 'shape': (4,), }", v, 16);
  open_fails("nokey.npy", CG_ERR_FORMAT, "'fortran_order' is missing");
  write_raw("extra.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", v, 16);
  open_fails("extra.npy", CG_ERR_FORMAT, "unexpected or repeated key 'x'");
  write_raw("garbage.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': [4], }", v, 16);
  open_fails("garbage.npy", CG_ERR_FORMAT, "malformed .npy header");
  write_raw("neg.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", v, 16);
  open_fails("neg.npy", CG_ERR_FORMAT, "non-negative dimension");
  write_raw("trunc.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", v, 16);
  open_fails("trunc.npy", CG_ERR_FORMAT, "truncated: shape (5,) of '<f4' needs 20 data bytes, the file holds only 16");
  size_t size;
  unsigned char *b = it_npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", v, 16, &size);
  b[6] = 4;
  assert_int_equal(gt_write(p_("v4.npy"), b, size), 0);
  free(b);
  open_fails("v4.npy", CG_ERR_FORMAT, "unsupported .npy format version 4.0");
  open_fails("missing.npy", CG_ERR_NOT_FOUND, "cannot open");
}

static void test_shape_checks(void **state) {
  (void)state;
  const int32_t v[6] = {0, 1, 2, 3, 4, 5};
  write_raw("m.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", v, sizeof v);
  struct import_npy a;
  assert_int_equal(import_npy_open(&a, p_("m.npy")), CG_OK);
  assert_int_equal(import_npy_expect_shape(&a, 2, (int64_t[]){2, -1}, NULL), CG_OK);
  assert_int_equal(import_npy_expect_shape(&a, 2, (int64_t[]){3, -1}, "(one row per vertex)"), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "wrong shape (2, 3), expected (3, *) (one row per vertex)"));
  assert_int_equal(import_npy_expect_shape(&a, 1, (int64_t[]){6}, NULL), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "expected (6,)"));
  assert_int_equal(import_npy_expect_integer(&a, "labels"), CG_OK);
  assert_int_equal(import_npy_expect_numeric(&a, "features"), CG_OK);
  import_npy_close(&a);
}

static void test_npz(void **state) {
  (void)state;
  int32_t idx[1000];
  for (int i = 0; i < 1000; i++) idx[i] = (i * 37) % 1001;
  const int64_t shape[2] = {1001, 1001};
  const char fmt[3] = {'c', 's', 'r'};
  const uint32_t ufmt[3] = {'c', 'o', 'o'};
  const struct it_member m[] = {
      {"indices", "<i4", "(1000,)", idx, sizeof idx, 1},
      {"shape", "<i8", "(2,)", shape, sizeof shape, 0},
      {"format", "|S3", "()", fmt, 3, 0},
      {"uformat", "<U3", "()", ufmt, 12, 1},
  };
  assert_int_equal(it_write_npz(p_("a.npz"), m, 4), 0);
  struct import_npz z;
  assert_int_equal(import_npz_open(&z, p_("a.npz")), CG_OK);
  assert_true(import_npz_has(&z, "indices"));
  assert_false(import_npz_has(&z, "indptr"));
  struct import_npy a;
  int32_t got[1000];
  assert_int_equal(import_npy_open_npz(&a, &z, "indices"), CG_OK); /* deflated */
  assert_non_null(strstr(a.name, "a.npz (array 'indices')"));
  assert_int_equal(import_npy_read(&a, IMPORT_NPY_TO_I32, got, 1000), CG_OK);
  assert_memory_equal(got, idx, sizeof idx);
  import_npy_close(&a);
  int64_t s[2];
  assert_int_equal(import_npy_open_npz(&a, &z, "shape"), CG_OK); /* stored */
  assert_int_equal(import_npy_read(&a, IMPORT_NPY_TO_I64, s, 2), CG_OK);
  assert_int_equal(s[0], 1001);
  import_npy_close(&a);
  char str[16];
  assert_int_equal(import_npy_open_npz(&a, &z, "format"), CG_OK);
  assert_int_equal(import_npy_read_string(&a, str, sizeof str), CG_OK);
  assert_string_equal(str, "csr");
  import_npy_close(&a);
  assert_int_equal(import_npy_open_npz(&a, &z, "uformat"), CG_OK);
  assert_int_equal(import_npy_read_string(&a, str, sizeof str), CG_OK);
  assert_string_equal(str, "coo");
  import_npy_close(&a);
  assert_int_equal(import_npy_open_npz(&a, &z, "nope"), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "has no array 'nope'"));
  import_npz_close(&z);

  /* Truncated archive: cut in half. */
  size_t size;
  unsigned char *b = gt_read(p_("a.npz"), &size);
  assert_int_equal(gt_write(p_("cut.npz"), b, size / 2), 0);
  assert_int_equal(import_npz_open(&z, p_("cut.npz")), CG_ERR_FORMAT);
  printf("  -> %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "cut.npz"));
  assert_non_null(strstr(cg_err_msg(), "truncated"));
  /* Corrupt deflate data: flip bytes inside the first member's compressed data
   * (its local header is at offset 0: 30 bytes + the name "indices.npy"). */
  for (size_t i = 30 + 11 + 40; i < 30 + 11 + 60; i++) b[i] ^= 0x5a;
  assert_int_equal(gt_write(p_("bad.npz"), b, size), 0);
  free(b);
  int st = import_npz_open(&z, p_("bad.npz"));
  if (st == CG_OK) {
    st = import_npy_open_npz(&a, &z, "indices");
    if (st == CG_OK) st = import_npy_read(&a, IMPORT_NPY_TO_I32, got, 1000);
    import_npy_close(&a);
    import_npz_close(&z);
  }
  printf("  -> %s\n", cg_err_msg());
  assert_int_equal(st, CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "bad.npz"));
  /* Not a zip at all. */
  assert_int_equal(gt_write(p_("text.npz"), "hello", 5), 0);
  assert_int_equal(import_npz_open(&z, p_("text.npz")), CG_ERR_FORMAT);
  assert_non_null(strstr(cg_err_msg(), "not an .npz"));
  assert_int_equal(import_npz_open(&z, p_("missing.npz")), CG_ERR_NOT_FOUND);
}

/* Sets the uncompressed size of member `name` in its local header and in the central
 * directory (the fields a reader trusts before it decompresses anything). */
static void npz_declare_size(unsigned char *b, size_t size, const char *name, uint32_t declared) {
  const size_t nl = strlen(name);
  int patched = 0;
  for (size_t i = 0; i + 46 + nl <= size; i++) {
    if (memcmp(b + i, "PK\3\4", 4) == 0 && gt_u32(b + i + 26) % 65536 == nl && memcmp(b + i + 30, name, nl) == 0)
      gt_put_u32(b + i + 22, declared), patched++;
    if (memcmp(b + i, "PK\1\2", 4) == 0 && gt_u32(b + i + 28) % 65536 == nl && memcmp(b + i + 46, name, nl) == 0)
      gt_put_u32(b + i + 24, declared), patched++;
  }
  assert_int_equal(patched, 2);
}

/* An archive whose directory declares a member far larger than its compressed bytes
 * can expand to (seen reading the reader for fuzz/fuzz_npz: 699 bytes made import_scipy_npz allocate
 * 2 GiB of row pointers before reading one): refused when the member is opened, naming
 * the sizes, instead of sizing allocations by the claim. */
static void test_npz_declared_size(void **state) {
  (void)state;
  const int32_t few[4] = {0, 0, 0, 0};
  const struct it_member m[] = {
      {"big", "<i4", "(268435456,)", few, sizeof few, 1}, /* 1 GiB claimed, 16 bytes held */
      {"small", "<i4", "(4,)", few, sizeof few, 0},
  };
  assert_int_equal(it_write_npz(p_("decl.npz"), m, 2), 0);
  size_t size;
  unsigned char *b = gt_read(p_("decl.npz"), &size);
  assert_non_null(b);
  npz_declare_size(b, size, "big.npy", 128 + 4 * 268435456u);
  assert_int_equal(gt_write(p_("decl.npz"), b, size), 0);
  free(b);
  struct import_npz z;
  struct import_npy a;
  assert_int_equal(import_npz_open(&z, p_("decl.npz")), CG_OK);
  assert_int_equal(import_npy_open_npz(&a, &z, "big"), CG_ERR_FORMAT);
  printf("  -> %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "decl.npz (array 'big')"));
  assert_non_null(strstr(cg_err_msg(), "compressed"));
  import_npy_close(&a);
  assert_int_equal(import_npy_open_npz(&a, &z, "small"), CG_OK); /* the honest member still reads */
  int32_t got[4];
  assert_int_equal(import_npy_read(&a, IMPORT_NPY_TO_I32, got, 4), CG_OK);
  import_npy_close(&a);
  import_npz_close(&z);
}

/* A member compressed with another method than numpy's (stored, deflated): bzip2 can
 * expand a few bytes to gigabytes, so the size it declares cannot be bounded by the
 * file; refused when opened (a 916-byte archive declaring 3.8 GB per member used to
 * make import_scipy_npz reserve 3.8 GB of edges: fuzz/corpus/npz/crash-npz-bzip2-*). */
static void test_npz_other_method(void **state) {
  (void)state;
  if (!zip_compression_method_supported(ZIP_CM_BZIP2, 1)) {
    printf("  (libzip here writes no bzip2: skipped)\n");
    return;
  }
  const int32_t few[4] = {0, 0, 0, 0};
  const struct it_member m[] = {{"big", "<i4", "(268435456,)", few, sizeof few, 0}};
  assert_int_equal(it_write_npz(p_("bz.npz"), m, 1), 0);
  /* the same member bzip2-compressed */
  int err = 0;
  zip_t *z0 = zip_open(p_("bz.npz"), 0, &err);
  assert_non_null(z0);
  assert_int_equal(zip_set_file_compression(z0, 0, ZIP_CM_BZIP2, 0), 0);
  assert_int_equal(zip_close(z0), 0);
  size_t size;
  unsigned char *b = gt_read(p_("bz.npz"), &size);
  assert_non_null(b);
  npz_declare_size(b, size, "big.npy", 128 + 4 * 268435456u);
  assert_int_equal(gt_write(p_("bz.npz"), b, size), 0);
  free(b);
  struct import_npz z;
  struct import_npy a;
  assert_int_equal(import_npz_open(&z, p_("bz.npz")), CG_OK);
  assert_int_equal(import_npy_open_npz(&a, &z, "big"), CG_ERR_FORMAT);
  printf("  -> %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "bz.npz (array 'big'): the member is compressed with zip method 12"));
  import_npy_close(&a);
  import_npz_close(&z);
}

/* A member whose size field says "in the zip64 record" (0xffffffff) with no such
 * record: the entry holds no size. libzip refuses the archive with ZIP_ER_NOENT, whose
 * text ("No such file") sent the user looking for a missing file; the message says the
 * archive is corrupt instead. (zip_stat_index always has the size and method of an
 * entry read from a file, so import_npy_open_npz never sees them missing.) */
static void test_npz_no_size(void **state) {
  (void)state;
  const int32_t few[4] = {0, 0, 0, 0};
  const struct it_member m[] = {{"a", "<i4", "(4,)", few, sizeof few, 0}};
  assert_int_equal(it_write_npz(p_("nosize.npz"), m, 1), 0);
  size_t size;
  unsigned char *b = gt_read(p_("nosize.npz"), &size);
  assert_non_null(b);
  npz_declare_size(b, size, "a.npy", 0xffffffffu);
  assert_int_equal(gt_write(p_("nosize.npz"), b, size), 0);
  free(b);
  struct import_npz z;
  assert_int_equal(import_npz_open(&z, p_("nosize.npz")), CG_ERR_FORMAT);
  printf("  -> %s\n", cg_err_msg());
  assert_non_null(strstr(cg_err_msg(), "nosize.npz: cannot read it as an .npz (zip) archive: "));
  assert_non_null(strstr(cg_err_msg(), "zip64"));
  assert_null(strstr(cg_err_msg(), "No such file"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_header_forms), cmocka_unit_test(test_dtypes),
      cmocka_unit_test(test_values_checked), cmocka_unit_test(test_bad_headers),
      cmocka_unit_test(test_shape_checks), cmocka_unit_test(test_npz),
      cmocka_unit_test(test_npz_declared_size),
      cmocka_unit_test(test_npz_other_method), cmocka_unit_test(test_npz_no_size),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
