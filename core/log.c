/* core/log.c — "[host:rank subsys] message" lines on stderr, filtered by env. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static int log_rank;
static int log_level = -1; /* -1: not read from the environment yet */
static int log_all_ranks;
static char log_subsys[256];
static char log_host[64];

static void log_init(void) {
  if (log_level >= 0) return;
  log_level = CG_LOG_INFO;
  const char *lv = getenv("CAPGNN_LOG_LEVEL");
  if (lv) {
    if (!strcasecmp(lv, "error")) log_level = CG_LOG_ERROR;
    else if (!strcasecmp(lv, "warn")) log_level = CG_LOG_WARN;
    else if (!strcasecmp(lv, "info")) log_level = CG_LOG_INFO;
    else if (!strcasecmp(lv, "debug")) log_level = CG_LOG_DEBUG;
    else if (*lv) {
      char shown[256]; /* (escaped: a control byte in the value reaches no terminal raw) */
      fprintf(stderr, "[%s] WARN CAPGNN_LOG_LEVEL='%s' is not error, warn, info or debug; using info\n",
              cg_hostname(), cg_text_escape(shown, sizeof shown, lv));
    }
  }
  const char *ss = getenv("CAPGNN_LOG_SUBSYS");
  if (ss) snprintf(log_subsys, sizeof log_subsys, ",%s,", ss);
  const char *ar = getenv("CAPGNN_LOG_ALL_RANKS");
  log_all_ranks = ar && ar[0] == '1';
}

const char *cg_hostname(void) {
  if (!log_host[0]) {
    if (gethostname(log_host, sizeof log_host - 1) != 0) strcpy(log_host, "?");
    char *dot = strchr(log_host, '.');
    if (dot) *dot = '\0';
  }
  return log_host;
}

void cg_log_set_rank(int rank) { log_rank = rank; }

int cg_log_prints_common(void) {
  log_init();
  return log_rank == 0 || log_all_ranks;
}

void cg_log_set_level(enum cg_log_level level) {
  log_init();
  log_level = (int)level;
}

int cg_log_enabled(enum cg_log_level level, const char *subsys) {
  log_init();
  if ((int)level > log_level) return 0;
  if (level >= CG_LOG_INFO && log_rank != 0 && !log_all_ranks) return 0;
  if (log_subsys[0] && level >= CG_LOG_INFO) {
    char key[64];
    snprintf(key, sizeof key, ",%s,", subsys);
    if (!strstr(log_subsys, key)) return 0;
  }
  return 1;
}

/* The length of the well-formed UTF-8 sequence at p (2 to 4 bytes, as RFC 3629 has
 * them: no overlong form, no surrogate, nothing past U+10FFFF); 0 where p starts none.
 * Reads no further than a byte that ends it (the NUL included). */
static size_t utf8_len(const unsigned char *p) {
  const unsigned char c = p[0];
  const size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  /* the second byte's range (E0: no overlong; ED: no surrogate; F0: no overlong; F4: <= U+10FFFF) */
  const unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
  const unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
  if (!n || p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xbf) return 0;
  return n;
}

char *cg_text_escape(char *out, size_t cap, const char *text) {
  static const char hex[] = "0123456789abcdef";
  size_t k = 0;
  if (!cap) return out;
  for (const unsigned char *p = (const unsigned char *)text; p && *p;) {
    /* a unit: one ASCII byte, one well-formed UTF-8 sequence, or one byte of invalid
     * UTF-8. Escaped: the C0 controls and 0x7f; the C1 controls U+0080..U+009F (C2 80
     * to C2 9F; U+009B is CSI); a lone byte 0x80..0x9F (a C1 control to a terminal that
     * reads 8-bit bytes). Kept: all else, the other bytes of invalid UTF-8 too (0xa0..0xff:
     * a printable Latin-1 letter to an 8-bit terminal, a replacement mark to a UTF-8 one) */
    const size_t seq = *p < 0x80 ? 1 : utf8_len(p), n = seq ? seq : 1;
    const int esc = *p < 0x20 || *p == 0x7f || (seq == 2 && p[0] == 0xc2 && p[1] < 0xa0) || (!seq && *p < 0xa0);
    if (k + (esc ? 4 * n : n) >= cap) break;
    for (size_t i = 0; i < n; i++, p++) {
      if (esc) {
        out[k++] = '\\';
        out[k++] = 'x';
        out[k++] = hex[*p >> 4];
        out[k++] = hex[*p & 15];
      } else {
        out[k++] = (char)*p;
      }
    }
  }
  out[k] = '\0';
  return out;
}

void cg_log_write(enum cg_log_level level, const char *subsys, const char *fmt, ...) {
  static const char *tag[] = {"ERROR ", "WARN ", "", "DEBUG "};
  char line[2048], shown[2048];
  int k = snprintf(line, sizeof line, "[%s:%d %s] %s", cg_hostname(), log_rank, subsys, tag[level]);
  va_list ap;
  va_start(ap, fmt);
  if (k > 0 && (size_t)k < sizeof line) vsnprintf(line + k, sizeof line - (size_t)k, fmt, ap);
  va_end(ap);
  /* one write per line so ranks do not interleave mid-line; no raw control byte of a
   * user's string reaches the terminal */
  fprintf(stderr, "%s\n", cg_text_escape(shown, sizeof shown, line));
}
