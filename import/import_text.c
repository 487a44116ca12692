/* import/import_text.c — line reader over zlib's gzread (gzip or plain text alike)
 * with large buffers, and number parsers fast enough for ogbn-products' 245 M
 * feature values. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "core/status.h"
#include "import/import_internal.h"

#define TEXT_CHUNK ((size_t)4 << 20)

int import_text_open(struct import_text *t, const char *path) {
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", path);
  struct stat sb;
  if (stat(path, &sb) != 0)
    return cg_err_set(errno == ENOENT ? CG_ERR_NOT_FOUND : CG_ERR_IO, "%s: cannot open: %s", path,
                      strerror(errno));
  if (!S_ISREG(sb.st_mode)) return cg_err_set(CG_ERR_IO, "%s: not a regular file", path);
  t->file_bytes = (int64_t)sb.st_size;
  gzFile gz = gzopen(path, "rb");
  if (!gz) return cg_err_set(CG_ERR_IO, "%s: cannot open: %s", path, strerror(errno ? errno : ENOMEM));
  gzbuffer(gz, 1 << 20);
  t->gz = gz;
  t->cap = TEXT_CHUNK;
  t->buf = malloc(t->cap + 1);
  if (!t->buf) {
    import_text_close(t);
    return cg_err_set(CG_ERR_NOMEM, "out of memory for a read buffer");
  }
  t->buf[0] = '\0';
  return CG_OK;
}

void import_text_close(struct import_text *t) {
  if (!t) return;
  if (t->gz) gzclose_r((gzFile)t->gz);
  free(t->buf);
  t->gz = NULL;
  t->buf = NULL;
}

int64_t import_text_offset(struct import_text *t) {
  if (!t->gz) return 0;
  z_off_t off = gzoffset((gzFile)t->gz);
  return off < 0 ? 0 : (int64_t)off;
}

/* Appends more data after the unread part; grows the buffer for a line longer
 * than it. Sets eof at the end of the stream and reports a truncated gzip. */
static int text_fill(struct import_text *t) {
  if (t->pos > 0) {
    memmove(t->buf, t->buf + t->pos, t->len - t->pos);
    t->len -= t->pos;
    t->pos = 0;
  }
  if (t->len == t->cap) {
    if (t->cap >= ((size_t)1 << 30))
      return cg_err_set(CG_ERR_FORMAT, "%s: line %lld is longer than 1 GB (not a text file?)", t->name,
                        (long long)t->line + 1);
    char *nb = realloc(t->buf, 2 * t->cap + 1);
    if (!nb) return cg_err_set(CG_ERR_NOMEM, "out of memory for a long line in %s", t->name);
    t->buf = nb;
    t->cap *= 2;
  }
  size_t want = t->cap - t->len;
  if (want > (size_t)INT32_MAX) want = (size_t)INT32_MAX;
  int got = gzread((gzFile)t->gz, t->buf + t->len, (unsigned)want);
  int errnum = Z_OK;
  const char *msg = gzerror((gzFile)t->gz, &errnum);
  if (got < 0 || (errnum != Z_OK && errnum != Z_BUF_ERROR)) {
    /* zlib prefixes its message with the path; we print the path once. */
    size_t nl = strlen(t->name);
    if (msg && strncmp(msg, t->name, nl) == 0 && msg[nl] == ':' && msg[nl + 1] == ' ') msg += nl + 2;
    return cg_err_set(CG_ERR_FORMAT, "%s: cannot decompress: %s (the file is corrupt; download it again)",
                      t->name, errnum == Z_ERRNO ? strerror(errno) : msg);
  }
  if (got == 0) {
    /* zlib reports a stream that ends mid-way as Z_BUF_ERROR with a zero read. */
    if (errnum == Z_BUF_ERROR)
      return cg_err_set(CG_ERR_FORMAT,
                        "%s: truncated: the gzip stream ends unexpectedly after line %lld (download it "
                        "again)",
                        t->name, (long long)t->line);
    t->eof = 1;
  }
  t->len += (size_t)got;
  t->buf[t->len] = '\0';
  return CG_OK;
}

int import_text_next(struct import_text *t, char **line) {
  for (;;) {
    char *start = t->buf + t->pos;
    char *nl = memchr(start, '\n', t->len - t->pos);
    if (nl) {
      *nl = '\0';
      if (nl > start && nl[-1] == '\r') nl[-1] = '\0';
      t->pos = (size_t)(nl - t->buf) + 1;
      t->line++;
      *line = start;
      return 1;
    }
    if (t->eof) {
      if (t->pos == t->len) return 0;
      /* The last line has no newline. */
      char *end = t->buf + t->len;
      if (end > start && end[-1] == '\r') end[-1] = '\0';
      t->pos = t->len;
      t->line++;
      *line = start;
      return 1;
    }
    TRY(text_fill(t));
  }
}

/* ---- numbers ------------------------------------------------------------------------ */

int import_parse_i64(const char **p, int64_t *out) {
  const char *s = *p;
  int neg = 0;
  if (*s == '-' || *s == '+') neg = *s++ == '-';
  if (*s < '0' || *s > '9') return -1;
  uint64_t v = 0;
  while (*s >= '0' && *s <= '9') {
    unsigned d = (unsigned)(*s++ - '0');
    if (v > (UINT64_C(9223372036854775807) - d) / 10) return -1;
    v = v * 10 + d;
  }
  *out = neg ? -(int64_t)v : (int64_t)v;
  *p = s;
  return 0;
}

/* Exact powers of ten in binary32: 10^k for k <= 10 is an integer below 2^24
 * times a power of two. */
static const float pow10f_exact[] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f};

int import_parse_f32(const char **p, float *out) {
  const char *s = *p, *start = s;
  int neg = 0;
  if (*s == '-' || *s == '+') neg = *s++ == '-';
  uint64_t mant = 0;
  int sig = 0, frac = 0, any = 0, exp10 = 0, fast = 1;
  while (*s >= '0' && *s <= '9') {
    any = 1;
    if (mant || *s != '0') sig++;
    if (sig <= 18) mant = mant * 10 + (uint64_t)(*s - '0');
    else fast = 0;
    s++;
  }
  if (*s == '.') {
    s++;
    while (*s >= '0' && *s <= '9') {
      any = 1;
      if (mant || *s != '0') sig++;
      if (sig <= 18) {
        mant = mant * 10 + (uint64_t)(*s - '0');
        frac++;
      } else {
        fast = 0;
      }
      s++;
    }
  }
  if (!any || *s == 'x' || *s == 'X') {
    fast = 0; /* "nan", "inf", hex "0x1p3" ...: let strtof decide */
  } else if (*s == 'e' || *s == 'E') {
    const char *q = s + 1;
    int eneg = 0, e = 0;
    if (*q == '-' || *q == '+') eneg = *q++ == '-';
    if (*q >= '0' && *q <= '9') {
      while (*q >= '0' && *q <= '9') {
        if (e < 10000) e = e * 10 + (*q - '0');
        q++;
      }
      exp10 = eneg ? -e : e;
      s = q;
    }
  }
  exp10 -= frac;
  /* Clinger's fast path for binary32: an integer mantissa below 2^24 and a power
   * of ten up to 10^10 are both exact, so one multiplication or division rounds
   * correctly. Anything else goes to strtof, which is correctly rounded. */
  if (fast && mant <= (UINT64_C(1) << 24) && exp10 >= -10 && exp10 <= 10) {
    float f = (float)mant;
    f = exp10 < 0 ? f / pow10f_exact[-exp10] : f * pow10f_exact[exp10];
    *out = neg ? -f : f;
    *p = s;
    return 0;
  }
  char *end = NULL;
  errno = 0;
  float f = strtof(start, &end);
  if (end == start) return -1;
  *out = f;
  *p = end;
  return 0;
}
