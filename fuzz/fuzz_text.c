/* fuzz/fuzz_text.c — the text reader of the importers (import/import_text.c: edge
 * lists and OGB's CSV, plain or gzip) on untrusted bytes: every line, and every
 * number on it through import_parse_i64 and import_parse_f32. The number parsers are
 * checked against libc (a differential oracle): where they accept, the value and the
 * end must be strtoll's and strtof's (the f32 fast path promises correct rounding). */
#include "fuzz_util.h"

#include <errno.h>
#include <math.h>

#include "import/import_internal.h"

static void check_numbers(const char *line) {
  for (const char *s = line; *s;) {
    s = import_skip_blank(s);
    const char *p = s;
    int64_t i;
    if (import_parse_i64(&p, &i) == 0) {
      char *end;
      errno = 0;
      long long want = strtoll(s, &end, 10);
      if (errno || want != i || end != p) {
        fprintf(stderr, "fuzz: import_parse_i64(\"%.40s\") = %lld (%td chars), strtoll %lld (%td)\n", s,
                (long long)i, p - s, want, end - s);
        abort();
      }
    }
    p = s;
    float f;
    if (import_parse_f32(&p, &f) == 0) {
      char *end;
      float want = strtof(s, &end);
      if (end != p || (memcmp(&want, &f, sizeof f) != 0 && !(isnan(want) && isnan(f)))) {
        fprintf(stderr, "fuzz: import_parse_f32(\"%.40s\") = %a (%td chars), strtof %a (%td)\n", s, (double)f,
                p - s, (double)want, end - s);
        abort();
      }
    }
    s = p > s ? p : s + 1; /* the next token (or character) */
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_quiet();
  struct import_text t;
  memset(&t, 0, sizeof t);
  if (FUZZ(import_text_open(&t, fuzz_file(data, size))) == 0) {
    char *line;
    int64_t lines = 0;
    while (FUZZ(import_text_next(&t, &line)) == 1 && lines++ < 100000) {
      check_numbers(line);
      (void)import_text_offset(&t);
    }
  }
  import_text_close(&t);
  return 0;
}
