/* import/npy.c — .npy headers, element conversion, and .npz members through libzip.
 *
 * The header is a Python dict literal, e.g.
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (232965, 602), }
 * parsed by a small recursive-descent reader that accepts exactly what numpy writes
 * (single or double quotes, a trailing comma, Python 2's "3L") and names the first
 * thing it does not understand. Decompression is libzip's (stored and deflated,
 * zip64), never ours. */
#define _GNU_SOURCE
#include "import/npy_internal.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zip.h>

#include "core/status.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAX_HEADER (1 << 20) /* numpy itself refuses headers over 10 kB by default */
#define NPY_SCRATCH (1 << 20)

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "import/npy.c converts little-endian arrays with memcpy: little-endian host only"
#endif

/* ---- .npz archives ---------------------------------------------------------- */

int import_npz_open(struct import_npz *z, const char *path) {
  memset(z, 0, sizeof *z);
  snprintf(z->path, sizeof z->path, "%s", path);
  struct stat sb;
  if (stat(path, &sb) != 0)
    return cg_err_set(errno == ENOENT ? CG_ERR_NOT_FOUND : CG_ERR_IO, "%s: cannot open: %s", path,
                      strerror(errno));
  int err = 0;
  zip_t *zip = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!zip) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    /* ZIP_ER_NOENT ("No such file") of a file just found is libzip's word for an extra
     * field an entry needs and lacks: a size or offset set to 0xffffffff ("in the zip64
     * record") with no zip64 record, so the entry has no size recorded */
    const char *why = err == ZIP_ER_NOENT ? "an entry's size or offset is marked as held in a zip64 record "
                                            "that the entry does not have: the archive is corrupt (download "
                                            "or write it again)"
                                          : zip_error_strerror(&ze);
    int st = cg_err_set(CG_ERR_FORMAT,
                        "%s: cannot read it as an .npz (zip) archive: %s%s", path, why,
                        (err == ZIP_ER_NOZIP || err == ZIP_ER_INCONS)
                            ? " (the file is truncated or is not an .npz; download it again)"
                            : "");
    zip_error_fini(&ze);
    return st;
  }
  z->zip = zip;
  return CG_OK;
}

static zip_int64_t npz_locate(const struct import_npz *z, const char *key) {
  char member[512];
  snprintf(member, sizeof member, "%s.npy", key);
  zip_int64_t idx = zip_name_locate((zip_t *)z->zip, member, 0);
  if (idx < 0) idx = zip_name_locate((zip_t *)z->zip, key, 0);
  return idx;
}

int import_npz_has(const struct import_npz *z, const char *key) { return z->zip && npz_locate(z, key) >= 0; }

const char *import_npz_list(const struct import_npz *z, char *buf, size_t len) {
  if (!len) return buf;
  buf[0] = '\0';
  if (!z->zip) return buf;
  const zip_int64_t n = zip_get_num_entries((zip_t *)z->zip, 0);
  size_t k = 0;
  for (zip_int64_t i = 0; i < n && k + 1 < len; i++) {
    const char *name = zip_get_name((zip_t *)z->zip, (zip_uint64_t)i, 0);
    if (!name) continue;
    size_t l = strlen(name);
    if (l > 4 && strcmp(name + l - 4, ".npy") == 0) l -= 4; /* numpy's key is the name without .npy */
    const int w = snprintf(buf + k, len - k, "%s'%.*s'", k ? ", " : "", (int)l, name);
    if (w < 0) break;
    k += (size_t)w < len - k ? (size_t)w : len - k - 1;
  }
  if (!buf[0]) snprintf(buf, len, "none");
  return buf;
}

void import_npz_close(struct import_npz *z) {
  if (z && z->zip) zip_discard((zip_t *)z->zip); /* read-only: nothing to write back */
  if (z) z->zip = NULL;
}

/* ---- raw byte source ---------------------------------------------------------- */

/* Reads up to n bytes; returns the count (short only at the end) or -1 with the
 * error set. */
static int64_t src_read(struct import_npy *a, void *buf, size_t n) {
  if (a->zf) {
    zip_int64_t got = zip_fread((zip_file_t *)a->zf, buf, (zip_uint64_t)n);
    if (got < 0) {
      cg_err_set(CG_ERR_FORMAT, "%s: cannot decompress the array data: %s (the archive is corrupt or "
                 "truncated)", a->name, zip_file_strerror((zip_file_t *)a->zf));
      return -1;
    }
    return (int64_t)got;
  }
  FILE *fp = a->fp;
  size_t got = fread(buf, 1, n, fp);
  if (got < n && ferror(fp)) {
    cg_err_set(CG_ERR_IO, "%s: read failed: %s", a->name, strerror(errno));
    return -1;
  }
  return (int64_t)got;
}

static int src_read_exact(struct import_npy *a, void *buf, size_t n, const char *what) {
  int64_t got = src_read(a, buf, n);
  if (got < 0) return cg_err_status();
  if ((size_t)got != n)
    return cg_err_set(CG_ERR_FORMAT, "%s: truncated %s: expected %zu bytes, found %lld", a->name, what,
                      n, (long long)got);
  return CG_OK;
}

/* ---- header --------------------------------------------------------------------- */

struct hparse {
  const char *s, *end, *name;
};

static void hp_ws(struct hparse *p) {
  while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')) p->s++;
}

static int hp_fail(struct hparse *p, const char *expected) {
  char near[24];
  size_t k = 0;
  for (const char *q = p->s; q < p->end && k < sizeof near - 1; q++) near[k++] = isprint((unsigned char)*q) ? *q : '?';
  near[k] = '\0';
  return cg_err_set(CG_ERR_FORMAT,
                    "%s: malformed .npy header: expected %s at \"%s\" (the header must be a dict with "
                    "'descr', 'fortran_order' and 'shape', as numpy.save writes it)",
                    p->name, expected, near);
}

static int hp_string(struct hparse *p, char *out, size_t outlen) {
  hp_ws(p);
  if (p->s >= p->end || (*p->s != '\'' && *p->s != '"')) return hp_fail(p, "a quoted string");
  char q = *p->s++;
  size_t k = 0;
  while (p->s < p->end && *p->s != q) {
    if (*p->s == '\\' || k + 1 >= outlen) return hp_fail(p, "a short string without escapes");
    out[k++] = *p->s++;
  }
  if (p->s >= p->end) return hp_fail(p, "the closing quote");
  p->s++;
  out[k] = '\0';
  return CG_OK;
}

static int hp_char(struct hparse *p, char c, const char *expected) {
  hp_ws(p);
  if (p->s >= p->end || *p->s != c) return hp_fail(p, expected);
  p->s++;
  return CG_OK;
}

static int hp_shape(struct hparse *p, struct import_npy *a) {
  TRY(hp_char(p, '(', "'(' opening the shape tuple"));
  a->ndim = 0;
  for (;;) {
    hp_ws(p);
    if (p->s < p->end && *p->s == ')') {
      p->s++;
      return CG_OK;
    }
    if (p->s >= p->end || !isdigit((unsigned char)*p->s)) return hp_fail(p, "a non-negative dimension");
    uint64_t v = 0;
    while (p->s < p->end && isdigit((unsigned char)*p->s)) {
      if (v > (UINT64_C(1) << 50)) return hp_fail(p, "a dimension below 2^50");
      v = v * 10 + (uint64_t)(*p->s++ - '0');
    }
    if (p->s < p->end && *p->s == 'L') p->s++; /* Python 2 long */
    if (a->ndim == IMPORT_NPY_MAX_DIMS) return hp_fail(p, "at most 8 dimensions");
    a->shape[a->ndim++] = (int64_t)v;
    hp_ws(p);
    if (p->s < p->end && *p->s == ',') {
      p->s++;
      continue;
    }
    if (p->s < p->end && *p->s == ')') continue;
    return hp_fail(p, "',' or ')' in the shape tuple");
  }
}

static int parse_descr(struct import_npy *a, const char *d) {
  snprintf(a->descr, sizeof a->descr, "%s", d);
  size_t len = strlen(d);
  if (len < 2)
    return cg_err_set(CG_ERR_FORMAT, "%s: unsupported dtype '%s' in the .npy header", a->name, d);
  char order = d[0], kind = d[1];
  const char *digits = d + 2;
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    /* numpy always writes a byte-order character; "f4" without one is native. */
    order = '=';
    kind = d[0];
    digits = d + 1;
  }
  char *end = NULL;
  long size = strtol(digits, &end, 10);
  if (!*digits || !end || *end || size <= 0 || size > 4096)
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: unsupported dtype '%s' (expected a simple dtype such as '<f4', '<i8' or '|u1'; "
                      "structured and object arrays are not supported)",
                      a->name, d);
  int ok = 0;
  switch (kind) {
    case 'b': a->kind = IMPORT_NPY_BOOL; ok = size == 1; break;
    case 'i': a->kind = IMPORT_NPY_INT; ok = size == 1 || size == 2 || size == 4 || size == 8; break;
    case 'u': a->kind = IMPORT_NPY_UINT; ok = size == 1 || size == 2 || size == 4 || size == 8; break;
    case 'f': a->kind = IMPORT_NPY_FLOAT; ok = size == 4 || size == 8; break;
    case 'S': a->kind = IMPORT_NPY_BYTES; ok = 1; break;
    case 'U': a->kind = IMPORT_NPY_UNICODE; ok = 1; size *= 4; break;
    default: break;
  }
  if (!ok)
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: unsupported dtype '%s' (supported: bool, int8/16/32/64, uint8/16/32/64, "
                      "float32/64; convert the array with numpy's astype, e.g. astype('<f4'))",
                      a->name, d);
  int multibyte = a->kind == IMPORT_NPY_UNICODE || (a->kind != IMPORT_NPY_BYTES && size > 1);
  if (order == '>' && multibyte)
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: dtype '%s' is big-endian; only little-endian arrays are supported (convert "
                      "with arr.astype(arr.dtype.newbyteorder('<')))",
                      a->name, d);
  a->itemsize = (int)size;
  return CG_OK;
}

static int parse_header(struct import_npy *a, const char *h, size_t hlen) {
  struct hparse p = {h, h + hlen, a->name};
  int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
  TRY(hp_char(&p, '{', "'{'"));
  for (;;) {
    hp_ws(&p);
    if (p.s < p.end && *p.s == '}') {
      p.s++;
      break;
    }
    char key[32];
    TRY(hp_string(&p, key, sizeof key));
    TRY(hp_char(&p, ':', "':' after a key"));
    hp_ws(&p);
    if (strcmp(key, "descr") == 0 && !have_descr) {
      if (p.s < p.end && *p.s == '[')
        return cg_err_set(CG_ERR_FORMAT,
                          "%s: the array has a structured dtype (a record array); expected a plain "
                          "numeric array",
                          a->name);
      char d[64];
      TRY(hp_string(&p, d, sizeof d));
      TRY(parse_descr(a, d));
      have_descr = 1;
    } else if (strcmp(key, "fortran_order") == 0 && !have_order) {
      if ((size_t)(p.end - p.s) >= 4 && memcmp(p.s, "True", 4) == 0) {
        fortran = 1;
        p.s += 4;
      } else if ((size_t)(p.end - p.s) >= 5 && memcmp(p.s, "False", 5) == 0) {
        p.s += 5;
      } else {
        return hp_fail(&p, "True or False for 'fortran_order'");
      }
      have_order = 1;
    } else if (strcmp(key, "shape") == 0 && !have_shape) {
      TRY(hp_shape(&p, a));
      have_shape = 1;
    } else {
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: malformed .npy header: unexpected or repeated key '%s' (expected exactly "
                        "'descr', 'fortran_order' and 'shape')",
                        a->name, key);
    }
    hp_ws(&p);
    if (p.s < p.end && *p.s == ',') {
      p.s++;
      continue;
    }
    if (p.s < p.end && *p.s == '}') continue;
    return hp_fail(&p, "',' or '}' after a value");
  }
  hp_ws(&p);
  while (p.s < p.end && *p.s == '\0') p.s++; /* some writers pad with NULs */
  if (p.s != p.end) return hp_fail(&p, "only padding after the closing '}'");
  if (!have_descr || !have_order || !have_shape)
    return cg_err_set(CG_ERR_FORMAT, "%s: malformed .npy header: the key '%s' is missing", a->name,
                      !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
  int64_t count = 1, big = 0;
  for (int i = 0; i < a->ndim; i++) {
    if (a->shape[i] == 0) count = 0;
    if (a->shape[i] > 1) big++;
  }
  if (count) {
    for (int i = 0; i < a->ndim; i++) {
      if (count > INT64_MAX / 64 / (a->shape[i] ? a->shape[i] : 1))
        return cg_err_set(CG_ERR_FORMAT, "%s: the array shape is too large", a->name);
      count *= a->shape[i];
    }
  }
  /* With at most one dimension longer than 1, both orders store the same bytes. */
  if (fortran && big > 1) {
    char sh[96];
    return cg_err_set(CG_ERR_UNSUPPORTED,
                      "%s: the array %s is stored in Fortran (column-major) order; save it in C order "
                      "(numpy.save(path, numpy.ascontiguousarray(arr)))",
                      a->name, import_npy_shape_str(a, sh, sizeof sh));
  }
  a->count = count;
  a->data_bytes = count * a->itemsize;
  return CG_OK;
}

/* Reads and parses the header; `avail` is the size of the whole stream (-1: unknown). */
static int npy_start(struct import_npy *a, int64_t avail) {
  unsigned char pre[12];
  if (avail >= 0 && avail < 10)
    return cg_err_set(CG_ERR_FORMAT, "%s: not a .npy array: only %lld bytes, too short for the header",
                      a->name, (long long)avail);
  TRY(src_read_exact(a, pre, 10, ".npy header"));
  if (memcmp(pre, "PK\x03\x04", 4) == 0) /* a user's features as numpy.savez or scipy.sparse.save_npz */
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: not a .npy array but a .npz (zip) archive, as numpy.savez or scipy.sparse.save_npz "
                      "write; write the array with numpy.save (a scipy sparse matrix: numpy.save(path, X.toarray()))",
                      a->name);
  if (memcmp(pre, NPY_MAGIC, 6) != 0)
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: not a .npy array: bad magic (expected \\x93NUMPY; write it with numpy.save)",
                      a->name);
  unsigned major = pre[6];
  size_t hlen, pre_len;
  if (major == 1) {
    hlen = (size_t)pre[8] | ((size_t)pre[9] << 8);
    pre_len = 10;
  } else if (major == 2 || major == 3) {
    TRY(src_read_exact(a, pre + 10, 2, ".npy header"));
    hlen = (size_t)pre[8] | ((size_t)pre[9] << 8) | ((size_t)pre[10] << 16) | ((size_t)pre[11] << 24);
    pre_len = 12;
  } else {
    return cg_err_set(CG_ERR_FORMAT, "%s: unsupported .npy format version %u.%u (expected 1.x, 2.x or 3.x)",
                      a->name, major, pre[7]);
  }
  if (hlen > NPY_MAX_HEADER)
    return cg_err_set(CG_ERR_FORMAT, "%s: .npy header length %zu is implausible (corrupt file?)", a->name,
                      hlen);
  char *h = malloc(hlen + 1);
  if (!h) return cg_err_set(CG_ERR_NOMEM, "out of memory for a .npy header");
  int st = src_read_exact(a, h, hlen, ".npy header");
  if (st == CG_OK) {
    h[hlen] = '\0';
    st = parse_header(a, h, hlen);
  }
  free(h);
  TRY(st);
  if (avail >= 0 && avail - (int64_t)(pre_len + hlen) < a->data_bytes) {
    char sh[96];
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: truncated: shape %s of '%s' needs %lld data bytes, the file holds only %lld "
                      "(download or write it again)",
                      a->name, import_npy_shape_str(a, sh, sizeof sh), a->descr, (long long)a->data_bytes,
                      (long long)(avail - (int64_t)(pre_len + hlen)));
  }
  a->scratch = malloc(NPY_SCRATCH);
  if (!a->scratch) return cg_err_set(CG_ERR_NOMEM, "out of memory for a read buffer");
  return CG_OK;
}

int import_npy_open(struct import_npy *a, const char *path) {
  memset(a, 0, sizeof *a);
  snprintf(a->name, sizeof a->name, "%s", path);
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return cg_err_set(errno == ENOENT ? CG_ERR_NOT_FOUND : CG_ERR_IO, "%s: cannot open: %s", path,
                      strerror(errno));
  a->fp = fp;
  struct stat sb;
  int64_t avail = fstat(fileno(fp), &sb) == 0 && S_ISREG(sb.st_mode) ? (int64_t)sb.st_size : -1;
  a->source_bytes = avail;
  int st = npy_start(a, avail);
  if (st != CG_OK) {
    import_npy_close(a);
    cg_err_trail(__FILE__, __LINE__, "npy_start(a, avail)");
  }
  return st;
}

int import_npy_open_npz(struct import_npy *a, const struct import_npz *z, const char *key) {
  memset(a, 0, sizeof *a);
  snprintf(a->name, sizeof a->name, "%s (array '%s')", z->path, key);
  zip_int64_t idx = npz_locate(z, key);
  if (idx < 0)
    return cg_err_set(CG_ERR_FORMAT, "%s: the archive has no array '%s' (no member %s.npy)", z->path, key,
                      key);
  zip_stat_t zs;
  zip_stat_init(&zs);
  if (zip_stat_index((zip_t *)z->zip, (zip_uint64_t)idx, 0, &zs) != 0)
    return cg_err_set(CG_ERR_FORMAT, "%s: cannot read the directory entry: %s", a->name,
                      zip_strerror((zip_t *)z->zip));
  /* The directory's uncompressed size is a claim that every allocation after it is
   * sized by (npy_start holds the array's shape to it): bound it by what the stored
   * bytes can expand to (stored: their count, which libzip holds to the archive's
   * size; deflate: at most 1032 to 1), so that a small archive cannot declare
   * gigabytes. Other methods (bzip2, xz, zstd: libzip may read them) have no such
   * bound, and numpy and scipy never write them: refused. (libzip's stat of an entry
   * read from a file always holds the three fields: a size that is not there fails
   * import_npz_open already.) */
  const zip_uint64_t need = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD;
  if ((zs.valid & need) != need || (zs.comp_method != ZIP_CM_STORE && zs.comp_method != ZIP_CM_DEFLATE))
    return cg_err_set(CG_ERR_FORMAT,
                      "%s: the member is compressed with zip method %d, not stored or deflated as numpy.savez, "
                      "numpy.savez_compressed and scipy.sparse.save_npz write it, so the size it declares (%llu "
                      "bytes) cannot be held to the file: write the archive again with numpy or scipy",
                      a->name, (zs.valid & ZIP_STAT_COMP_METHOD) ? (int)zs.comp_method : -1,
                      (zs.valid & ZIP_STAT_SIZE) ? (unsigned long long)zs.size : 0ull);
  {
    const uint64_t c = zs.comp_size;
    const uint64_t max = zs.comp_method == ZIP_CM_STORE ? c : c < UINT64_MAX / 1032 - 1 ? 1032 * (c + 1) : UINT64_MAX;
    if (zs.size > max)
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: the archive declares %llu bytes for the member but stores %llu compressed bytes "
                        "(%s), which cannot expand to that: the archive is corrupt (download or write it again)",
                        a->name, (unsigned long long)zs.size, (unsigned long long)c,
                        zs.comp_method == ZIP_CM_STORE ? "stored" : "deflated");
  }
  zip_file_t *zf = zip_fopen_index((zip_t *)z->zip, (zip_uint64_t)idx, 0);
  if (!zf)
    return cg_err_set(CG_ERR_FORMAT, "%s: cannot open the member: %s", a->name,
                      zip_strerror((zip_t *)z->zip));
  a->zf = zf;
  int64_t avail = (zs.valid & ZIP_STAT_SIZE) ? (int64_t)zs.size : -1;
  a->source_bytes = (zs.valid & ZIP_STAT_COMP_SIZE) ? (int64_t)zs.comp_size : avail;
  int st = npy_start(a, avail);
  if (st != CG_OK) {
    import_npy_close(a);
    cg_err_trail(__FILE__, __LINE__, "npy_start(a, avail)");
  }
  return st;
}

void import_npy_close(struct import_npy *a) {
  if (!a) return;
  if (a->zf) zip_fclose((zip_file_t *)a->zf);
  if (a->fp) fclose((FILE *)a->fp);
  free(a->scratch);
  a->zf = NULL;
  a->fp = NULL;
  a->scratch = NULL;
}

const char *import_npy_shape_str(const struct import_npy *a, char *buf, size_t len) {
  size_t k = 0;
  if (len == 0) return buf;
  buf[0] = '\0';
  k += (size_t)snprintf(buf + k, len - k, "(");
  for (int i = 0; i < a->ndim && k < len; i++)
    k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? ", " : "", (long long)a->shape[i]);
  if (k < len) snprintf(buf + k, len - k, a->ndim == 1 ? ",)" : ")");
  return buf;
}

int import_npy_expect_shape(const struct import_npy *a, int ndim, const int64_t *shape, const char *why) {
  int ok = a->ndim == ndim;
  for (int i = 0; ok && i < ndim; i++)
    if (shape[i] >= 0 && a->shape[i] != shape[i]) ok = 0;
  if (ok) return CG_OK;
  char want[128], got[96];
  size_t k = (size_t)snprintf(want, sizeof want, "(");
  for (int i = 0; i < ndim && k < sizeof want; i++) {
    if (shape[i] >= 0)
      k += (size_t)snprintf(want + k, sizeof want - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    else
      k += (size_t)snprintf(want + k, sizeof want - k, "%s*", i ? ", " : "");
  }
  if (k < sizeof want) snprintf(want + k, sizeof want - k, ndim == 1 ? ",)" : ")");
  return cg_err_set(CG_ERR_FORMAT, "%s: wrong shape %s, expected %s%s%s", a->name,
                    import_npy_shape_str(a, got, sizeof got), want, why && *why ? " " : "", why ? why : "");
}

int import_npy_expect_integer(const struct import_npy *a, const char *what) {
  if (a->kind == IMPORT_NPY_INT || a->kind == IMPORT_NPY_UINT || a->kind == IMPORT_NPY_BOOL) return CG_OK;
  /* the two a user's labels most often are: floats (a torch or pandas column), names */
  const char *hint = a->kind == IMPORT_NPY_FLOAT ? "; float ids: Y.astype(numpy.int64), -1 for unlabelled"
                     : a->kind == IMPORT_NPY_BYTES || a->kind == IMPORT_NPY_UNICODE
                         ? "; names: numpy.unique(Y, return_inverse=True)[1] numbers them 0..K-1"
                         : "";
  return cg_err_set(CG_ERR_FORMAT, "%s: wrong dtype '%s' for %s: expected an integer array (int32, int64, "
                    "uint8, ...)%s",
                    a->name, a->descr, what, hint);
}

int import_npy_expect_numeric(const struct import_npy *a, const char *what) {
  if (a->kind != IMPORT_NPY_BYTES && a->kind != IMPORT_NPY_UNICODE) return CG_OK;
  return cg_err_set(CG_ERR_FORMAT, "%s: wrong dtype '%s' for %s: expected a numeric array (float32, "
                    "float64 or an integer type)",
                    a->name, a->descr, what);
}

/* ---- data ----------------------------------------------------------------------- */

/* "(r, c)" for 2-D arrays, the flat index otherwise. */
static const char *elem_str(const struct import_npy *a, int64_t i, char *buf, size_t len) {
  if (a->ndim == 2 && a->shape[1] > 0)
    snprintf(buf, len, "element (%lld, %lld)", (long long)(i / a->shape[1]), (long long)(i % a->shape[1]));
  else
    snprintf(buf, len, "element %lld", (long long)i);
  return buf;
}

static inline int64_t load_int(const unsigned char *p, int kind, int size, uint64_t *uval, int *is_huge) {
  *is_huge = 0;
  switch (size) {
    case 1: return kind == IMPORT_NPY_INT ? (int64_t)(int8_t)p[0] : (int64_t)p[0];
    case 2: {
      uint16_t v;
      memcpy(&v, p, 2);
      return kind == IMPORT_NPY_INT ? (int64_t)(int16_t)v : (int64_t)v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p, 4);
      return kind == IMPORT_NPY_INT ? (int64_t)(int32_t)v : (int64_t)v;
    }
    default: {
      uint64_t v;
      memcpy(&v, p, 8);
      if (kind == IMPORT_NPY_UINT && v > (uint64_t)INT64_MAX) {
        *is_huge = 1;
        *uval = v;
        return INT64_MAX;
      }
      return (int64_t)v;
    }
  }
}

/* Converts k elements of raw bytes (element index of the first: first) into dst. */
static int convert(struct import_npy *a, enum import_npy_target t, const unsigned char *src, void *dst,
                   int64_t k, int64_t first) {
  char where[64];
  const int size = a->itemsize, kind = (int)a->kind;
  if (t == IMPORT_NPY_TO_F32) {
    float *out = dst;
    if (kind == IMPORT_NPY_FLOAT && size == 4) {
      memcpy(out, src, (size_t)k * 4);
    } else if (kind == IMPORT_NPY_FLOAT) {
      for (int64_t i = 0; i < k; i++) {
        double d;
        memcpy(&d, src + 8 * i, 8);
        out[i] = (float)d;
      }
    } else {
      for (int64_t i = 0; i < k; i++) {
        uint64_t u;
        int huge;
        int64_t v = load_int(src + (size_t)size * (size_t)i, kind, size, &u, &huge);
        out[i] = huge ? (float)u : (float)v;
      }
    }
    for (int64_t i = 0; i < k; i++)
      if (!isfinite(out[i])) {
        double orig = out[i];
        if (kind == IMPORT_NPY_FLOAT && size == 8) memcpy(&orig, src + 8 * i, 8);
        return cg_err_set(CG_ERR_FORMAT, "%s: %s is %g, expected a finite value%s", a->name,
                          elem_str(a, first + i, where, sizeof where), orig,
                          isfinite(orig) ? " (it overflows float32)" : "");
      }
    return CG_OK;
  }
  int64_t lo = t == IMPORT_NPY_TO_I32 ? INT32_MIN : t == IMPORT_NPY_TO_U8 ? 0 : INT64_MIN;
  int64_t hi = t == IMPORT_NPY_TO_I32 ? INT32_MAX : t == IMPORT_NPY_TO_U8 ? 255 : INT64_MAX;
  /* Fast paths for the common vertex-id/label arrays. */
  if (t == IMPORT_NPY_TO_I32 && kind == IMPORT_NPY_INT && size == 4) {
    memcpy(dst, src, (size_t)k * 4);
    return CG_OK;
  }
  if (t == IMPORT_NPY_TO_I64 && kind == IMPORT_NPY_INT && size == 8) {
    memcpy(dst, src, (size_t)k * 8);
    return CG_OK;
  }
  for (int64_t i = 0; i < k; i++) {
    uint64_t u = 0;
    int huge;
    int64_t v = load_int(src + (size_t)size * (size_t)i, kind, size, &u, &huge);
    if (huge || v < lo || v > hi) {
      if (huge)
        return cg_err_set(CG_ERR_FORMAT, "%s: %s is %" PRIu64 ", out of range (expected a value in [%lld, %lld])",
                          a->name, elem_str(a, first + i, where, sizeof where), u, (long long)lo, (long long)hi);
      return cg_err_set(CG_ERR_FORMAT, "%s: %s is %lld, out of range (expected a value in [%lld, %lld])",
                        a->name, elem_str(a, first + i, where, sizeof where), (long long)v, (long long)lo,
                        (long long)hi);
    }
    if (t == IMPORT_NPY_TO_I64) ((int64_t *)dst)[i] = v;
    else if (t == IMPORT_NPY_TO_I32) ((int32_t *)dst)[i] = (int32_t)v;
    else ((uint8_t *)dst)[i] = (uint8_t)v;
  }
  return CG_OK;
}

static size_t target_size(enum import_npy_target t) {
  return t == IMPORT_NPY_TO_I64 ? 8 : t == IMPORT_NPY_TO_U8 ? 1 : 4;
}

int import_npy_read(struct import_npy *a, enum import_npy_target t, void *dst, int64_t count) {
  if (a->kind == IMPORT_NPY_BYTES || a->kind == IMPORT_NPY_UNICODE)
    return cg_err_set(CG_ERR_FORMAT, "%s: wrong dtype '%s': expected a numeric array", a->name, a->descr);
  if (t != IMPORT_NPY_TO_F32 && a->kind == IMPORT_NPY_FLOAT)
    return cg_err_set(CG_ERR_FORMAT, "%s: wrong dtype '%s': expected an integer array", a->name, a->descr);
  if (count < 0 || count > a->count - a->pos)
    return cg_err_set(CG_ERR_INTERNAL, "%s: read of %lld elements past the end (%lld of %lld read)", a->name,
                      (long long)count, (long long)a->pos, (long long)a->count);
  const int64_t per = NPY_SCRATCH / a->itemsize;
  unsigned char *out = dst;
  const size_t tsz = target_size(t);
  while (count > 0) {
    int64_t k = count < per ? count : per;
    size_t bytes = (size_t)k * (size_t)a->itemsize;
    int64_t got = src_read(a, a->scratch, bytes);
    if (got < 0) return cg_err_status();
    if ((size_t)got != bytes) {
      char sh[96];
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: truncated: the data of shape %s ('%s') end after %lld of %lld bytes "
                        "(download or write the file again)",
                        a->name, import_npy_shape_str(a, sh, sizeof sh), a->descr,
                        (long long)(a->pos * a->itemsize + got), (long long)a->data_bytes);
    }
    TRY(convert(a, t, a->scratch, out, k, a->pos));
    a->pos += k;
    out += (size_t)k * tsz;
    count -= k;
  }
  return CG_OK;
}

int import_npy_read_string(struct import_npy *a, char *out, size_t outlen) {
  if (a->kind != IMPORT_NPY_BYTES && a->kind != IMPORT_NPY_UNICODE)
    return cg_err_set(CG_ERR_FORMAT, "%s: wrong dtype '%s': expected a string", a->name, a->descr);
  if (a->count != 1)
    return cg_err_set(CG_ERR_FORMAT, "%s: expected a single string, found %lld elements", a->name,
                      (long long)a->count);
  size_t n = (size_t)a->itemsize;
  if (n > NPY_SCRATCH) return cg_err_set(CG_ERR_FORMAT, "%s: string too long", a->name);
  TRY(src_read_exact(a, a->scratch, n, "string value"));
  a->pos = 1;
  size_t k = 0;
  size_t step = a->kind == IMPORT_NPY_UNICODE ? 4 : 1;
  for (size_t i = 0; i < n; i += step) {
    uint32_t c = a->scratch[i];
    if (step == 4) memcpy(&c, a->scratch + i, 4);
    if (c == 0) break;
    if (c >= 128 || k + 1 >= outlen)
      return cg_err_set(CG_ERR_FORMAT, "%s: unexpected string value (not short ASCII)", a->name);
    out[k++] = (char)c;
  }
  out[k] = '\0';
  return CG_OK;
}
